// `platoon task` (tools/src/task_cmd.cpp, docs/TASKS.md): scores of CSVs written here against hand
// computations (issue 43: "lane change test: on a scripted drive the score equals a hand computation within
// 1 %; detection response task with scripted responses at known delays reports those response times within one
// step and the right hit/miss classification at the window edges"), usage errors, and the templates
// examples/tasks/*.toml run through `platoon run`, export and score.
#include "platoon/data/standard_tasks.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace task_cmd_test_detail {

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

struct TcRan {
  int status = -1;
  std::string output;
};

TcRan TcPlatoon(const std::vector<std::string>& args, std::chrono::seconds timeout = 60s) {
  std::vector<std::string> argv = {BinDir() + "/platoon"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = process::Child::Spawn(argv);
  const auto status = RunToExit(child, timeout);
  REQUIRE_MESSAGE(status.has_value(), "platoon did not exit within the deadline");
  TcRan r{*status, ""};
  for (const auto& l : child.Lines()) r.output += l + "\n";
  return r;
}

std::string TcReadText(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A small CSV (no quoted fields) as columns by header name.
struct TcTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t Col(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    FAIL("no column " << name);
    return 0;
  }
  double Num(size_t r, const std::string& name) const {
    const auto& f = rows.at(r).at(Col(name));
    return f.empty() ? std::nan("") : std::stod(f);
  }
  std::string Text(size_t r, const std::string& name) const { return rows.at(r).at(Col(name)); }
};

std::vector<std::string> TcFields(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

TcTable TcParseTable(const std::string& text) {
  TcTable t;
  std::stringstream s(text);
  std::string line;
  std::getline(s, line);
  t.header = TcFields(line);
  while (std::getline(s, line))
    if (!line.empty()) t.rows.push_back(TcFields(line));
  return t;
}

// The lane centre of lane -k (k = 1, 2, 3), from first principles: lane -k spans [-k w, -(k-1) w].
double TcCentre(int lane, double w) { return -(std::abs(lane) - 0.5) * w; }

// A template copied into `dir` on free ports, its data write and recorder writing into `dir`.
std::string TcTemplateInDir(const TempDir& dir, const std::string& name) {
  std::string s = TcReadText(std::string(PLATOON_SOURCE_DIR) + "/examples/tasks/" + name);
  const auto p = FreePorts(4);
  const std::regex control("control_port *= *7400[^\n]*");
  REQUIRE(std::regex_search(s, control));
  s = std::regex_replace(s, control,
                         "control_port = " + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                             "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]));
  const std::string data = "path = \"data/{node}.csv\"", rec = "path = \"recordings/{session}-{time}.mcap\"";
  REQUIRE(s.find(data) != std::string::npos);
  REQUIRE(s.find(rec) != std::string::npos);
  s.replace(s.find(data), data.size(), "path = \"" + dir.Path() + "/data/{node}.csv\"");
  s.replace(s.find(rec), rec.size(), "path = \"" + dir.Path() + "/drive.mcap\"\nfoxglove = false");
  return dir.Write(name, s);
}

}  // namespace task_cmd_test_detail

using namespace task_cmd_test_detail;

TEST_CASE("task: lane change test score of a scripted drive equals the hand computation within 1 percent") {
  TempDir dir;
  const double w = 3.5, v = 60 / 3.6, dt = 0.01;
  // Signs and the driver: at 60 km/h from s = 20 m, 100 rows a second; the driver jumps to the sign's lane as
  // it passes the sign, 0.25 m right of the lane centre all the way; each sign's marker 40 m before it.
  const std::vector<std::pair<double, int>> signs{{200, -1}, {350, -3}, {500, -2}, {650, -2}, {800, -3}};
  std::string csv = "name,sim_time_s,speed_mps,s_m,lane,lane_offset_m,marker\n";
  int lane = -2;
  size_t next = 0, next_marker = 0;
  double last_s = 0;
  for (int k = 0;; ++k) {
    const double t = k * dt, s = 20 + v * t;
    if (s > 900) break;
    while (next < signs.size() && signs[next].first <= s) lane = signs[next++].second;
    std::string marker;
    if (next_marker < signs.size() && signs[next_marker].first - 40 <= s) {
      marker = "lct:" + std::to_string(signs[next_marker].second) + "@" + std::to_string(static_cast<int>(signs[next_marker].first));
      ++next_marker;
    }
    csv += "participant," + std::to_string(t) + ",16.67," + std::to_string(s) + "," + std::to_string(lane) + ",-0.25," +
           marker + "\n";
    last_s = s;
  }
  const std::string path = dir.Write("drive.csv", csv);
  // By hand: away from a change the driver is 0.25 m off the path. A change of dy runs from 10 m before the
  // sign to 10 m after it, and the driver jumps at the sign. Over the half where the driver has not yet moved,
  // the 0.25 m adds to the path's triangle (10 m by dy / 2): 10 * 0.25 + 10 dy / 4. Over the other half they
  // subtract: |dy / 2 falling to 0, minus 0.25|, which is 10 dy / 4 - 10 * 0.25 plus twice the small triangle
  // where the path's one is below 0.25 m (L = 10 * 0.25 / (dy / 2) long, 0.25 m high). So a change adds
  // 5 dy + 0.25 L - 0.25 * 20 to the 0.25 m of every metre.
  double area = 0.25 * (last_s - 20);
  lane = -2;
  for (const auto& [s, l] : signs) {
    const double dy = std::fabs(TcCentre(l, w) - TcCentre(lane, w));
    if (dy > 0) area += 5 * dy + 0.25 * (10 * 0.25 / (dy / 2)) - 0.25 * 20;
    lane = l;
  }
  const double hand = area / (last_s - 20);
  const TcRan r = TcPlatoon({"task", "score", "lct", path});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const TcTable score = TcParseTable(r.output);
  CHECK(score.Text(0, "task") == "lct");
  CHECK(score.Num(0, "signs") == signs.size());
  CHECK(score.Num(0, "mean_deviation_m") == doctest::Approx(hand).epsilon(0.01));
  // The same signs given on the command line score the same.
  const TcRan given = TcPlatoon({"task", "score", "lct", path, "--signs", "200:-1,350:-3,500:-2,650:-2,800:-3", "--out",
                             dir.Path() + "/lct.csv"});
  REQUIRE_MESSAGE(given.status == 0, given.output);
  CHECK(TcParseTable(TcReadText(dir.Path() + "/lct.csv")).Num(0, "mean_deviation_m") == doctest::Approx(hand).epsilon(0.01));
}

TEST_CASE("task: detection response task from a 100 Hz CSV classifies responses one step either side of the window edges") {
  TempDir dir;
  const double step = 0.01;
  const std::vector<double> delays{0.1 - step, 0.1, 0.1 + step, 0.62, 2.5 - step, 2.5, 2.5 + step, -1};
  // Onsets on the row grid: the schedule's draws rounded to whole rows.
  auto onsets = data::DrtSchedule(data::DefaultDrtDef(), 4, 2, 2 + 4.2 * static_cast<double>(delays.size()));
  REQUIRE(onsets.size() >= delays.size());
  onsets.resize(delays.size());
  std::map<long, std::string> marker_at;  // row index -> marker
  for (size_t i = 0; i < onsets.size(); ++i) {
    const long row = std::lround(onsets[i] / step);
    onsets[i] = row * step;
    marker_at[row] = "drt:stimulus";
    if (delays[i] > 0) marker_at[row + std::lround(delays[i] / step)] = "key:space";
  }
  std::string csv = "name,sim_time_s,speed_mps,marker\n";
  const long rows = std::lround((onsets.back() + 4) / step);
  for (long k = 0; k <= rows; ++k)
    csv += "participant," + std::to_string(k * step) + ",20," + (marker_at.count(k) ? marker_at[k] : "") + "\n";
  const std::string path = dir.Write("drive.csv", csv);
  const std::string trials_path = dir.Path() + "/trials.csv";
  const TcRan r = TcPlatoon({"task", "score", "drt", path, "--trials", trials_path});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const TcTable score = TcParseTable(r.output);
  const TcTable trials = TcParseTable(TcReadText(trials_path));
  REQUIRE(trials.rows.size() == delays.size());
  size_t hits = 0;
  double rt_sum = 0;
  for (size_t i = 0; i < delays.size(); ++i) {
    CAPTURE(delays[i]);
    const bool hit = delays[i] >= 0.1 - 1e-9 && delays[i] <= 2.5 + 1e-9;
    CHECK(trials.Num(i, "hit") == (hit ? 1 : 0));
    CHECK(trials.Num(i, "onset_s") == doctest::Approx(onsets[i]));
    if (hit) {
      CHECK(std::fabs(trials.Num(i, "response_time_s") - delays[i]) <= step);
      ++hits;
      rt_sum += delays[i];
    }
  }
  CHECK(score.Num(0, "stimuli") == delays.size());
  CHECK(score.Num(0, "hits") == hits);
  CHECK(score.Num(0, "hit_rate") == doctest::Approx(static_cast<double>(hits) / static_cast<double>(delays.size())).epsilon(1e-5));
  CHECK(score.Num(0, "mean_rt_s") == doctest::Approx(rt_sum / static_cast<double>(hits)).epsilon(1e-4));
  CHECK(score.Num(0, "premature") == 1);
  CHECK(score.Num(0, "extra") == 1);
}

TEST_CASE("task: car following of exported lead and follower CSVs gives back gain and delay within 1 percent") {
  TempDir dir;
  const double f = 0.04, gain = 0.7, delay = 2.0, pi2 = 2 * std::numbers::pi;
  std::string lead = "sim_time_s,speed_mps\n", follower = "name,sim_time_s,speed_mps\n";
  for (int k = 0; k <= 40000; ++k) {  // 400 s at 100 Hz
    const double t = 5 + k * 0.01;
    lead += std::to_string(t) + "," + std::to_string(20 + 3 * std::sin(pi2 * f * t)) + "\n";
    follower += "participant," + std::to_string(t) + "," +
                std::to_string(19 + gain * 3 * std::sin(pi2 * f * (t - delay)) + 0.3 * std::sin(pi2 * 0.31 * t)) + "\n";
  }
  const std::string lp = dir.Write("lead.csv", lead), fp = dir.Write("follower.csv", follower);
  const TcRan r = TcPlatoon({"task", "score", "car-following", fp, "--lead", lp, "--frequency", "0.04"});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const TcTable score = TcParseTable(r.output);
  CHECK(score.Num(0, "gain") == doctest::Approx(gain).epsilon(0.01));
  CHECK(score.Num(0, "delay_s") == doctest::Approx(delay).epsilon(0.01));
  CHECK(score.Num(0, "segments") == 8);  // 400 s / (2 periods of 25 s)
  CHECK(score.Num(0, "coherence") > 0.99);
}

TEST_CASE("task: bad input names the file and what was expected with exit code 2") {
  TempDir dir;
  const std::string no_s = dir.Write("no_s.csv", "sim_time_s,lane,lane_offset_m\n0,-2,0\n");
  const TcRan missing = TcPlatoon({"task", "score", "lct", no_s, "--signs", "100:-1"});
  CHECK(missing.status == 2);
  CHECK(missing.output.find(no_s + ":1: expected a column s_m") != std::string::npos);
  const std::string bad_number = dir.Write("bad.csv", "sim_time_s,s_m,lane,lane_offset_m\n0,x,-2,0\n");
  const TcRan bad = TcPlatoon({"task", "score", "lct", bad_number, "--signs", "100:-1"});
  CHECK(bad.status == 2);
  CHECK(bad.output.find(bad_number + ":2: expected a number in column 2, got \"x\"") != std::string::npos);
  const TcRan sign = TcPlatoon({"task", "score", "lct", bad_number, "--signs", "100"});
  CHECK(sign.status == 2);
  CHECK(sign.output.find("--signs: expected S:LANE") != std::string::npos);
  const TcRan no_markers = TcPlatoon({"task", "score", "drt", no_s});
  CHECK(no_markers.status == 2);
  CHECK(no_markers.output.find("expected a column marker") != std::string::npos);
  const TcRan no_lead = TcPlatoon({"task", "score", "car-following", no_s, "--frequency", "0.05"});
  CHECK(no_lead.status == 2);
  CHECK(no_lead.output.find("--lead") != std::string::npos);
  const TcRan which = TcPlatoon({"task", "score", "nback", no_s});
  CHECK(which.status == 2);
}

TEST_CASE("task: the lane change and detection response templates run export and score in lock-step") {
  TempDir dir;
  std::filesystem::copy_file(std::string(PLATOON_SOURCE_DIR) + "/examples/tasks/lct_road.toml", dir.Path() + "/lct_road.toml");
  const std::string lct = TcTemplateInDir(dir, "lct.toml");
  const TcRan run = TcPlatoon({"run", lct, "--lockstep", "--duration", "30"}, 120s);
  REQUIRE_MESSAGE(run.status == 0, run.output.substr(run.output.size() > 6000 ? run.output.size() - 6000 : 0));
  const TcRan exported = TcPlatoon({"export", dir.Path() + "/drive.mcap", "--csv", dir.Path() + "/out", "--markers", "--entities",
                                "participant", "--variables", "s,lane,lane_offset"});
  REQUIRE_MESSAGE(exported.status == 0, exported.output);
  const TcRan scored = TcPlatoon({"task", "score", "lct", dir.Path() + "/out/participant.csv"});
  REQUIRE_MESSAGE(scored.status == 0, scored.output);
  // By hand from the exported rows: the signs from their markers, the normative path from first principles
  // (middle lane, each change from 10 m before its sign over 20 m), trapezoids over the rows.
  const TcTable rows = TcParseTable(TcReadText(dir.Path() + "/out/participant.csv"));
  std::vector<std::pair<double, int>> signs;
  for (size_t r = 0; r < rows.rows.size(); ++r) {
    std::smatch m;
    const std::string text = rows.Text(r, "marker");
    if (std::regex_search(text, m, std::regex("lct:(-?[0-9]+)@([0-9.]+)"))) signs.emplace_back(std::stod(m[2]), std::stoi(m[1]));
  }
  REQUIRE(signs.size() >= 2);  // 30 s at 60 km/h pass the signs at 200 and 350 m
  auto normative = [&](double s) {
    double y = TcCentre(-2, 3.5);
    int lane = -2;
    for (const auto& [at, l] : signs) {
      const double a = at - 10, b = at + 10, from = TcCentre(lane, 3.5), to = TcCentre(l, 3.5);
      if (s >= b) y = to;
      else if (s > a) y = from + (to - from) * (s - a) / 20;
      else break;
      lane = l;
    }
    return y;
  };
  double area = 0, length = 0;
  for (size_t r = 1; r < rows.rows.size(); ++r) {
    const double s0 = rows.Num(r - 1, "s_m"), s1 = rows.Num(r, "s_m");
    const double d0 = std::fabs(TcCentre(static_cast<int>(rows.Num(r - 1, "lane")), 3.5) + rows.Num(r - 1, "lane_offset_m") - normative(s0));
    const double d1 = std::fabs(TcCentre(static_cast<int>(rows.Num(r, "lane")), 3.5) + rows.Num(r, "lane_offset_m") - normative(s1));
    if (!(s1 > s0)) continue;
    area += 0.5 * (d0 + d1) * (s1 - s0);
    length += s1 - s0;
  }
  REQUIRE(length > 400);
  CHECK(TcParseTable(scored.output).Num(0, "mean_deviation_m") == doctest::Approx(area / length).epsilon(0.01));

  // The detection response template: every stimulus up to the run's end is in the log, and nobody answered.
  TempDir drt_dir;
  const std::string drt = TcTemplateInDir(drt_dir, "drt.toml");
  const TcRan drt_run = TcPlatoon({"run", drt, "--lockstep", "--duration", "30"}, 120s);
  REQUIRE_MESSAGE(drt_run.status == 0, drt_run.output.substr(drt_run.output.size() > 6000 ? drt_run.output.size() - 6000 : 0));
  const std::string text = TcReadText(drt);
  size_t onsets = 0;
  const std::regex onset_re("sim_time = ([0-9.]+)");
  for (std::sregex_iterator it(text.begin(), text.end(), onset_re), end; it != end; ++it)
    if (std::stod((*it)[1]) < 29.9) ++onsets;
  REQUIRE(onsets >= 5);
  const TcRan drt_scored = TcPlatoon({"task", "score", "drt", drt_dir.Path() + "/drive.mcap"});
  REQUIRE_MESSAGE(drt_scored.status == 0, drt_scored.output);
  const TcTable drt_score = TcParseTable(drt_scored.output);
  CHECK(drt_score.Num(0, "stimuli") == onsets);
  CHECK(drt_score.Num(0, "hits") == 0);
  CHECK(drt_score.Num(0, "hit_rate") == 0);
}
