// The data-write CSV (shared/src/data/columns.cpp, csv_writer.cpp, spsc_queue.hpp): header and row
// format, the bounded queue (full: dropped and counted, never blocks), and write errors (reported once
// with the path and the OS reason, rows already written stay whole, no crash).
#include "../support/session_fixture.hpp"
#include "platoon/data/csv_writer.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

using namespace platoon;
using namespace platoon::data;
using platoon::testing::TempDir;

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, char c) { return static_cast<size_t>(std::count(text.begin(), text.end(), c)); }

// A logger whose lines land in `out`.
std::shared_ptr<spdlog::logger> LogTo(std::ostringstream& out) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%l %v");
  return std::make_shared<spdlog::logger>("data-write-test", sink);
}

MetricsRow RowAt(double t) {
  MetricsRow r;
  r[Column::kSimTime] = t;
  r[Column::kX] = 1.23456;
  r[Column::kLane] = -2;
  return r;
}

}  // namespace

TEST_CASE("data columns: every column has a unique name and a header with its unit, in enum order") {
  CHECK(Columns().size() == kColumnCount);
  for (size_t i = 0; i < Columns().size(); ++i) {
    const ColumnInfo& c = Columns()[i];
    CHECK(static_cast<size_t>(c.column) == i);
    CHECK(FindColumn(c.name) == c.column);
    CHECK(FindColumn(c.header) == c.column);
    CHECK_FALSE(c.description.empty());
  }
  CHECK_FALSE(FindColumn("speed_kmh").has_value());
  CHECK(ColumnNameList().rfind("sim_time, x, y, z, yaw, speed, ", 0) == 0);
  const std::vector<Column> all = [] {
    std::vector<Column> v;
    for (const auto& c : Columns()) v.push_back(c.column);
    return v;
  }();
  CHECK(CsvHeader(all) ==
        "sim_time_s,x_m,y_m,z_m,yaw_rad,speed_mps,accel_long_mps2,accel_lat_mps2,yaw_rate_radps,steer_norm,"
        "throttle_norm,brake_norm,road_id,s_m,lane,lane_offset_m,headway_m,time_headway_s,ttc_s,next_sign_type,"
        "next_sign_value,next_sign_distance_m,last_sign_type,last_sign_value,last_sign_distance_m");
}

TEST_CASE("data columns: a row keeps its decimals, integers stay integers, NaN is an empty field") {
  std::string out;
  const std::vector<Column> cols = {Column::kSimTime, Column::kX, Column::kLane, Column::kHeadway};
  AppendCsvRow(RowAt(0.01), cols, out);
  CHECK(out == "0.010000,1.2346,-2,\n");
  MetricsRow r = RowAt(1.5);
  r[Column::kHeadway] = 12.3456;
  AppendCsvRow(r, cols, out);
  CHECK(out == "0.010000,1.2346,-2,\n1.500000,1.2346,-2,12.346\n");
}

TEST_CASE("spsc queue: FIFO order, full and empty, and one producer against one consumer thread") {
  SpscQueue<int> q(3);
  int v = 0;
  CHECK_FALSE(q.TryPop(v));
  CHECK(q.TryPush(1));
  CHECK(q.TryPush(2));
  CHECK(q.TryPush(3));
  CHECK_FALSE(q.TryPush(4));
  CHECK(q.Size() == 3);
  CHECK(q.TryPop(v));
  CHECK(v == 1);
  CHECK(q.TryPush(4));
  for (int want : {2, 3, 4}) {
    REQUIRE(q.TryPop(v));
    CHECK(v == want);
  }
  // Two threads: every value arrives once and in order.
  SpscQueue<int> big(64);
  constexpr int kN = 200'000;
  std::thread producer([&] {
    for (int i = 0; i < kN;)
      if (big.TryPush(i)) ++i;
  });
  int next = 0;
  bool ordered = true;
  while (next < kN)
    if (big.TryPop(v)) ordered = ordered && v == next++;
  producer.join();
  CHECK(ordered);
  CHECK(big.Size() == 0);
}

TEST_CASE("csv writer: writes the header and every row, creating the missing folders") {
  TempDir dir;
  std::ostringstream log;
  const std::string path = dir.Path() + "/new/sub/robot.csv";
  CsvWriter w(DefaultCsvWriterDef(path, {Column::kSimTime, Column::kX, Column::kLane}), LogTo(log));
  REQUIRE(w.Ok());
  for (int k = 0; k < 250; ++k) CHECK(w.Push(RowAt(k * 0.01)));
  w.Close();
  const CsvWriterStats s = w.Stats();
  CHECK(s.rows_written == 250);
  CHECK(s.rows_dropped == 0);
  CHECK(s.rows_failed == 0);
  CHECK(s.path == path);
  CHECK(s.error.empty());
  const std::string text = ReadAll(path);
  CHECK(text.rfind("sim_time_s,x_m,lane\n0.000000,1.2346,-2\n0.010000,", 0) == 0);
  CHECK(Count(text, '\n') == 251);
  CHECK(log.str().empty());
  CHECK_FALSE(w.Push(RowAt(9)));  // after Close nothing is queued
}

TEST_CASE("csv writer: a full queue drops and counts the row at once, never blocks") {
  TempDir dir;
  std::ostringstream log;
  CsvWriterDef def = DefaultCsvWriterDef(dir.Path() + "/q.csv", {Column::kSimTime});
  def.queue_rows = 4;
  def.drain_interval_s = 600;  // the writer thread does not drain before Close
  CsvWriter w(def, LogTo(log));
  int accepted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 10; ++k) accepted += w.Push(RowAt(k)) ? 1 : 0;
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(100));
  CHECK(accepted == 4);
  w.Close();
  const CsvWriterStats s = w.Stats();
  CHECK(s.rows_written == 4);
  CHECK(s.rows_dropped == 6);
  CHECK(s.error.empty());
  // The four that fitted are the first four, in order.
  CHECK(ReadAll(def.path) == "sim_time_s\n0.000000\n1.000000\n2.000000\n3.000000\n");
}

TEST_CASE("csv writer: a full disk (/dev/full) is one error naming the path and the OS reason, and no crash") {
  std::ostringstream log;
  CsvWriter w(DefaultCsvWriterDef("/dev/full", {Column::kSimTime, Column::kX}), LogTo(log));
  CHECK_FALSE(w.Ok());
  for (int k = 0; k < 100; ++k) CHECK_FALSE(w.Push(RowAt(k)));
  w.Close();
  const CsvWriterStats s = w.Stats();
  CHECK(s.rows_written == 0);
  CHECK(s.rows_failed == 100);
  CHECK(s.error.find("/dev/full: No space left on device") != std::string::npos);
  // Logged once, at error level.
  CHECK(Count(log.str(), '\n') == 1);
  CHECK(log.str().rfind("error data write: writing the header of /dev/full: No space left on device", 0) == 0);
}

TEST_CASE("csv writer: rows written before a write error stay in the file, whole, the rest are counted") {
  TempDir dir;
  std::ostringstream log;
  CsvWriterDef def = DefaultCsvWriterDef(dir.Path() + "/cut.csv", {Column::kSimTime, Column::kX, Column::kLane});
  def.drain_interval_s = 0.001;
  def.flush_interval_s = 0;  // every drain writes: rows reach the file in several writes
  // The file may not grow beyond 1000 bytes (as on a full disk): write(2) then writes part and fails
  // with EFBIG. SIGXFSZ would end the process; it is ignored for the test.
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  {
    CsvWriter w(def, LogTo(log));
    REQUIRE(w.Ok());
    for (int k = 0; k < 200; ++k) {
      w.Push(RowAt(k * 0.01));
      if (k % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    w.Close();
    REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
    std::signal(SIGXFSZ, old_handler);
    const CsvWriterStats s = w.Stats();
    INFO(s.error);
    CHECK(s.rows_written > 10);
    CHECK(s.rows_written < 200);
    CHECK(s.rows_written + s.rows_failed + s.rows_dropped == 200);
    CHECK(s.error.find(def.path + ": File too large") != std::string::npos);
    // The file holds the header and exactly the rows counted as written, the last one whole.
    const std::string text = ReadAll(def.path);
    CHECK(text.size() <= 1000);
    CHECK(text.back() == '\n');
    CHECK(Count(text, '\n') == s.rows_written + 1);
    CHECK(Count(log.str(), '\n') == 1);
  }
  setrlimit(RLIMIT_FSIZE, &old);
}

TEST_CASE("csv writer: a folder that cannot be made names the folder, the file and the reason") {
  TempDir dir;
  std::ostringstream log;
  dir.Write("plain", "not a folder\n");
  CsvWriter w(DefaultCsvWriterDef(dir.Path() + "/plain/robot.csv", {Column::kSimTime}), LogTo(log));
  CHECK_FALSE(w.Ok());
  CHECK_FALSE(w.Push(RowAt(0)));
  w.Close();
  CHECK(w.Stats().error.find("cannot create the folder " + dir.Path() + "/plain for " + dir.Path() + "/plain/robot.csv: Not a directory") !=
        std::string::npos);
  CHECK(w.Stats().rows_failed == 1);
}

namespace csv_writer_marker_detail {

// The fields of one CSV line, quotes undone ("" inside a quoted field is one quote): the test's own
// reader, independent of data::SplitCsvLine.
std::vector<std::string> FieldsOf(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// The lines of a file without their newlines.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace csv_writer_marker_detail

TEST_CASE("csv writer: a marker at a known sim time appears in exactly one row, the first at or after it") {
  using namespace csv_writer_marker_detail;
  TempDir dir;
  std::ostringstream log;
  const std::string path = dir.Path() + "/markers.csv";
  CsvWriterDef def = DefaultCsvWriterDef(path, {Column::kSimTime, Column::kX});
  def.name = "ego";
  def.markers = true;
  CsvWriter w(def, LogTo(log));
  REQUIRE(w.Ok());
  // Markers (ns) on, between and before the 10 ms rows; two at one instant with CSV's special characters.
  const int64_t period_ns = 10'000'000;
  const int rows = 500;
  const std::vector<std::pair<int64_t, std::string>> markers = {
      {2'000'000'000, "brake"}, {2'004'100'000, "key:space"}, {3'333'000'000, "a, b"}, {3'333'000'000, "say \"go\""},
      {-1'000'000'000, "before"}, {4'990'000'000, "last row"}};
  for (const auto& [ns, text] : markers) w.AddMarker(ns, text);
  for (int k = 0; k < rows; ++k) REQUIRE(w.Push(RowAt(static_cast<double>(k * period_ns) * 1e-9)));
  w.Close();
  CHECK(w.Stats().markers_written == markers.size());
  CHECK(w.Stats().markers_late == 0);

  const std::vector<std::string> lines = Lines(ReadAll(path));
  REQUIRE(lines.size() == rows + 1);
  CHECK(lines[0] == "name,sim_time_s,x_m,marker");
  // Each marker is in the row k = ceil(t / period) (the first row for one before the data), once in the file.
  for (const auto& [ns, text] : markers) {
    const int64_t expected_row = ns <= 0 ? 0 : (ns + period_ns - 1) / period_ns;
    int found = 0;
    for (int k = 0; k < rows; ++k) {
      const std::vector<std::string> f = FieldsOf(lines[static_cast<size_t>(k) + 1]);
      REQUIRE(f.size() == 4);
      std::vector<std::string> in_row;
      for (size_t at = 0, next; at <= f[3].size() && !f[3].empty(); at = next + 3) {
        next = f[3].find(" | ", at);
        if (next == std::string::npos) next = f[3].size();
        in_row.push_back(f[3].substr(at, next - at));
      }
      if (std::count(in_row.begin(), in_row.end(), text) > 0) {
        ++found;
        CHECK_MESSAGE(k == expected_row, text << " in row " << k << ", expected " << expected_row);
      }
    }
    CHECK_MESSAGE(found == 1, text << " found in " << found << " rows");
  }
  // Same-time markers keep their order, joined by " | ", the field quoted with its quotes doubled.
  CHECK(lines[335] == "ego,3.340000,1.2346,\"a, b | say \"\"go\"\"\"");
  CHECK(FieldsOf(lines[2]).back().empty());
  CHECK(log.str().empty());
}

TEST_CASE("csv writer: a marker that comes after its row was written is counted late and warned once") {
  TempDir dir;
  std::ostringstream log;
  const std::string path = dir.Path() + "/late.csv";
  CsvWriterDef def = DefaultCsvWriterDef(path, {Column::kSimTime});
  def.markers = true;
  def.marker_hold_s = 0.05;
  def.flush_interval_s = 0;
  def.drain_interval_s = 0.001;
  CsvWriter w(def, LogTo(log));
  REQUIRE(w.Ok());
  for (int k = 0; k < 100; ++k) REQUIRE(w.Push(RowAt(k * 0.01)));
  // The rows older than the hold (0.00 .. 0.94 s) reach the file; then markers at 0.5 s are late.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (w.Stats().rows_written < 95 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(w.Stats().rows_written >= 95);
  w.AddMarker(500'000'000, "late one");
  w.AddMarker(500'000'000, "late two");
  w.AddMarker(985'000'000, "in time");  // row 0.99 s is still held
  w.Close();
  CHECK(w.Stats().markers_late == 2);
  CHECK(w.Stats().markers_written == 1);
  const std::string text = ReadAll(path);
  CHECK(text.find("late one") == std::string::npos);
  CHECK(text.find("0.990000,in time\n") != std::string::npos);
  CHECK(Count(log.str(), '\n') == 1);
  CHECK(log.str().find("warning data write: the marker \"late one\" at sim 0.500 s") == 0);
}

TEST_CASE("csv split: quoted commas doubled quotes empty fields and carriage returns come apart as written") {
  using V = std::vector<std::string>;
  CHECK(platoon::data::SplitCsvLine("") == V{""});
  CHECK(platoon::data::SplitCsvLine("a,b") == V{"a", "b"});
  CHECK(platoon::data::SplitCsvLine("a,\"b,c\",\"d\"\"e\",") == V{"a", "b,c", "d\"e", ""});
  CHECK(platoon::data::SplitCsvLine(",,") == V{"", "", ""});
  CHECK(platoon::data::SplitCsvLine("x,1.5\r") == V{"x", "1.5"});
  CHECK(platoon::data::SplitCsvLine("\"line\nbreak\",\"\"") == V{"line\nbreak", ""});
  // What CsvField writes reads back as it was.
  for (const std::string& field : {std::string("plain"), std::string("a,b"), std::string("say \"hi\""), std::string("")}) {
    const auto back = platoon::data::SplitCsvLine(platoon::data::CsvField(field) + "," + platoon::data::CsvField(field));
    REQUIRE(back.size() == 2);
    CHECK(back[0] == field);
    CHECK(back[1] == field);
  }
}
