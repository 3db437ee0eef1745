// platoon export end to end: a session log written with session_log::Writer (a session file with a
// generated road, a drive of two cars in one lane, one behind the other, and a static object, as a
// live server broadcasts it) is exported by `platoon export` as a process; the CSVs are read back and
// checked against the road and a hand computation of the headway. Exit codes and messages for what a
// user gets wrong.
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/road/session_road.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kExportMs = 1'000'000;
constexpr int64_t kExportS = 1'000'000'000;

const std::string kSession = R"(
[session]
name = "export-drive"

[road]
generate_length_m = 1500
seed = 3
lanes = 2

[[node]]
name = "follow"
role = "traffic"

[[node]]
name = "lead"
role = "traffic"
)";

// The drive: both cars on the centre of lane -1, the follower from s = 100 m at 15 m/s of s, the
// leader from s = 140 m at 12 m/s; owners publish every 50 ms (the leader 25 ms later), the server
// forwards a delta every 20 ms and a keyframe with the node table every second; 8 s.
constexpr double kFollowS0 = 100, kFollowV = 15, kLeadS0 = 140, kLeadV = 12, kDriveS = 8;
constexpr uint64_t kStaticId = 0xabcdef;

struct Drive {
  road::Road road;
  double lane_t = 0;  // t of the lane centre
  double FollowS(double t) const { return kFollowS0 + kFollowV * t; }
  double LeadS(double t) const { return kLeadS0 + kLeadV * t; }
};

Drive MakeDrive() {
  const config::SessionDef s = config::LoadSessionText(kSession, "export-drive.toml");
  Drive d{road::SessionRoad(s.road)};
  d.lane_t = d.road.LaneCenterOffset(-1);
  return d;
}

// A car on the lane centre at s(t) = s0 + v t: its velocity is the derivative of C(s) + t_c N(s).
protocol::EntityState CarOnLane(const Drive& d, uint64_t id, uint32_t owner, double s0, double v, int64_t stamp_ns) {
  const double s = s0 + v * NsToS(stamp_ns);
  const double heading = d.road.Heading(s);
  protocol::EntityState e;
  e.id = id;
  e.owner_node = owner;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = d.road.PointAt(s, d.lane_t);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
  const double speed = v * (1 - d.road.Curvature(s) * d.lane_t);
  e.kinematics.velocity_mps = Vec3(std::cos(heading), std::sin(heading), 0) * speed;
  e.kinematics.angular_velocity_radps = Vec3(0, 0, v * d.road.Curvature(s));
  e.controls.throttle = 0.2;
  return e;
}

// Writes the drive's log; returns its path.
std::string WriteLog(const TempDir& dir, const Drive& d, const std::string& session_text = kSession,
                     const std::string& session_path = "/nowhere/export-drive.toml", bool with_entities = true,
                     const std::function<void(protocol::WorldState&)>& decorate = {}) {
  const std::string path = dir.Path() + "/drive.mcap";
  std::string error;
  auto writer = session_log::Writer::Open(path, &error);
  REQUIRE_MESSAGE(writer, error);
  REQUIRE(writer->WriteJson(session_log::kSessionTopic, "", "",
                            session_log::SessionInfoJson({"export-drive", session_text, session_path, "test"}), 0, 0)
              .Ok());
  const uint64_t follow = VehicleId("follow", 0), lead = VehicleId("lead", 0);
  std::map<uint64_t, protocol::EntityState> latest;
  std::vector<protocol::EntityState> pending;
  protocol::EntityState cone;
  cone.id = kStaticId;
  cone.kind = protocol::EntityKind::kStaticObject;
  cone.kinematics.pose.position_m = Vec3(0, -500, 0);
  cone.box_size_m = Vec3(0.4, 0.4, 0.7);
  if (with_entities) {
    latest[kStaticId] = cone;
    pending.push_back(cone);
  }
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= static_cast<int64_t>(kDriveS * 1000); ++ms) {
    const int64_t t = ms * kExportMs;
    if (with_entities && ms % 50 == 0) pending.push_back(latest[follow] = CarOnLane(d, follow, 1, kFollowS0, kFollowV, t));
    if (with_entities && ms % 50 == 25) pending.push_back(latest[lead] = CarOnLane(d, lead, 2, kLeadS0, kLeadV, t));
    if (ms % 20 != 0) continue;
    protocol::WorldState w;
    w.sequence = ++sequence;
    w.server_time_ns = 1000 * kExportS + t;
    w.sim_time_ns = t;
    w.phase = protocol::SessionPhase::kRunning;
    w.keyframe = ms % 1000 == 0;
    if (w.keyframe) {
      for (const auto& [id, e] : latest) w.entities.push_back(e);
      w.nodes.assign(2, protocol::NodeInfo{});
      w.nodes[0].node_id = 1;
      w.nodes[0].name = "follow";
      w.nodes[0].role = protocol::Role::kTraffic;
      w.nodes[1].node_id = 2;
      w.nodes[1].name = "lead";
      w.nodes[1].role = protocol::Role::kTraffic;
    } else {
      w.entities = pending;
    }
    pending.clear();
    // A marker "go, now" at 2 s, carried by that world state and repeated by the next one (as a server repeats
    // events for a second).
    if (ms == 2000 || ms == 2020) {
      protocol::LoggedEvent mark;
      mark.sequence = 7;
      mark.sim_time_ns = 2000 * kExportMs;
      mark.kind = protocol::LoggedEvent::Kind::kMarker;
      mark.source = "ctl";
      mark.text = "go, now";
      w.events.push_back(mark);
    }
    if (decorate) decorate(w);
    const std::string bytes = protocol::Encode(w);
    REQUIRE(writer->WriteEnvelope(session_log::kWorldTopic, std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                                  w.sim_time_ns, w.server_time_ns)
                .Ok());
  }
  REQUIRE(writer->Close().Ok());
  return path;
}

struct ExportRun {
  int status = -1;
  std::string output;
};

ExportRun Export(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/platoon", "export"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = process::Child::Spawn(argv);
  const auto status = RunToExit(child, 60s);
  REQUIRE_MESSAGE(status.has_value(), "platoon export did not exit within 60 s");
  ExportRun r{*status, ""};
  for (const auto& l : child.Lines()) r.output += l + "\n";
  return r;
}

// A CSV read back: the header and the rows as text fields.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t Col(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    REQUIRE_MESSAGE(it != header.end(), "no column " << name);
    return static_cast<size_t>(it - header.begin());
  }
  double Num(size_t row, const std::string& name) const {
    const std::string& f = rows.at(row).at(Col(name));
    return f.empty() ? std::nan("") : std::stod(f);
  }
};

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::stringstream ss(line);
  while (std::getline(ss, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Csv ReadCsv(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  Csv c;
  std::string line;
  std::getline(f, line);
  c.header = Split(line);
  while (std::getline(f, line)) {
    c.rows.push_back(Split(line));
    REQUIRE(c.rows.back().size() == c.header.size());
  }
  return c;
}

// The column table of docs/RECORDING.md, stated here independently of the code.
const std::vector<std::string> kHeader = {"sim_time_s", "x_m", "y_m", "z_m", "yaw_rad", "speed_mps", "accel_long_mps2",
                                          "accel_lat_mps2", "yaw_rate_radps", "steer_norm", "throttle_norm", "brake_norm",
                                          "road_id", "s_m", "lane", "lane_offset_m", "headway_m", "time_headway_s", "ttc_s",
                                          "next_sign_type", "next_sign_value", "next_sign_distance_m", "last_sign_type",
                                          "last_sign_value", "last_sign_distance_m"};

}  // namespace

TEST_CASE("platoon export: two recorded cars in one lane, one CSV each at the rate, columns with units, headway by hand") {
  TempDir dir;
  const Drive d = MakeDrive();
  const std::string log = WriteLog(dir, d);
  const std::string out = dir.Path() + "/out";
  const ExportRun r = Export({log, "--csv", out, "--rate", "20"});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK_MESSAGE(r.output.find("3 entities") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("wrote 3 CSV files") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("generated, 1500 m") != std::string::npos, r.output);

  // entities.csv: the cars by node name and index, the static object by its hex id.
  const Csv entities = ReadCsv(out + "/entities.csv");
  CHECK(entities.header == std::vector<std::string>{"id", "name", "file", "kind", "owner", "states", "first_state_s",
                                                    "last_state_s", "end_s", "rows", "first_row_s", "last_row_s"});
  REQUIRE(entities.rows.size() == 3);
  std::map<std::string, std::vector<std::string>> by_file;
  for (const auto& row : entities.rows) by_file[row[2]] = row;
  REQUIRE(by_file.count("follow_0.csv"));
  REQUIRE(by_file.count("lead_0.csv"));
  REQUIRE(by_file.count("0000000000abcdef.csv"));
  const auto& fe = by_file["follow_0.csv"];
  CHECK(fe[0] == std::to_string(VehicleId("follow", 0)));
  CHECK(fe[1] == "follow:0");
  CHECK(fe[3] == "car");
  CHECK(fe[4] == "follow");
  CHECK(fe[5] == "161");
  CHECK(fe[9] == "161");
  CHECK(fe[10] == "0.000000");
  CHECK(fe[11] == "8.000000");
  CHECK(by_file["lead_0.csv"][9] == "160");  // its first state is at 0.025 s: rows from 0.05 s
  CHECK(by_file["0000000000abcdef.csv"][3] == "static_object");

  const Csv follow = ReadCsv(out + "/follow_0.csv");
  const Csv lead = ReadCsv(out + "/lead_0.csv");
  // Every column, in order, each with its unit.
  CHECK(follow.header == kHeader);
  CHECK(lead.header == kHeader);
  // Rows on k / 20 Hz, strictly increasing, the rate within 0.1 %.
  REQUIRE(follow.rows.size() == 161);
  for (size_t k = 0; k < follow.rows.size(); ++k) CHECK(follow.rows[k][0] == fmt::format("{:.6f}", 0.05 * static_cast<double>(k)));
  const double rate = static_cast<double>(follow.rows.size() - 1) / (follow.Num(follow.rows.size() - 1, "sim_time_s") - follow.Num(0, "sim_time_s"));
  CHECK(std::abs(rate / 20 - 1) < 1e-3);
  REQUIRE(lead.rows.size() == 160);
  CHECK(lead.rows[0][0] == "0.050000");

  // The follower on the lane centre: lane -1, s as driven, lane offset 0; its headway to the leader
  // along the lane centre (M5, M6): (s_L - s_F) - t_c (theta(s_L) - theta(s_F)) - 0.8 L - 0.2 L.
  CHECK(follow.rows[0][follow.Col("headway_m")].empty());  // the leader's first state is at 0.025 s
  double worst_headway = 0, worst_offset = 0;
  for (size_t k = 1; k < follow.rows.size(); ++k) {
    const double t = 0.05 * static_cast<double>(k);
    INFO("t = " << t << " s");
    CHECK(follow.Num(k, "lane") == -1);
    CHECK(follow.Num(k, "road_id") == d.road.Id());
    CHECK(follow.Num(k, "s_m") == doctest::Approx(d.FollowS(t)).epsilon(1e-5));
    const double sf = d.FollowS(t), sl = d.LeadS(t);
    const double gap = (sl - sf) - d.lane_t * (d.road.Heading(sl) - d.road.Heading(sf)) - 4.5;
    worst_headway = std::max(worst_headway, std::abs(follow.Num(k, "headway_m") - gap));
    worst_offset = std::max(worst_offset, std::abs(follow.Num(k, "lane_offset_m")));
    const double speed = follow.Num(k, "speed_mps");
    CHECK(follow.Num(k, "time_headway_s") == doctest::Approx(follow.Num(k, "headway_m") / speed).epsilon(2e-3));
    CHECK(follow.Num(k, "throttle_norm") == doctest::Approx(0.2));
    CHECK(!follow.rows[k][follow.Col("ttc_s")].empty());
    CHECK(lead.rows[k - 1][lead.Col("headway_m")].empty());  // nobody ahead of the leader
  }
  MESSAGE("follower: headway within " << worst_headway * 1e3 << " mm of the hand computation, lane offset within "
                                      << worst_offset * 1e3 << " mm of 0");
  CHECK(worst_headway < 0.005);   // 3 decimals written; interpolation and projection well below
  CHECK(worst_offset < 0.001);
}

TEST_CASE("platoon export: --entities, --variables, --from and --to choose files, columns and rows") {
  TempDir dir;
  const std::string log = WriteLog(dir, MakeDrive());
  const std::string out = dir.Path() + "/out";
  const ExportRun r = Export({log, "--csv", out, "--rate", "10", "--entities", "lead", "--variables", "speed,lane_offset_m,headway",
                        "--from", "2", "--to", "3.05", "--method", "dead_reckon"});
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_FALSE(std::filesystem::exists(out + "/follow_0.csv"));
  const Csv lead = ReadCsv(out + "/lead_0.csv");
  CHECK(lead.header == std::vector<std::string>{"sim_time_s", "speed_mps", "lane_offset_m", "headway_m"});
  REQUIRE(lead.rows.size() == 11);  // 2.0 .. 3.0 s
  CHECK(lead.rows.front()[0] == "2.000000");
  CHECK(lead.rows.back()[0] == "3.000000");
  // Every entity is still listed; those not exported have no file and no rows.
  const Csv entities = ReadCsv(out + "/entities.csv");
  CHECK(entities.rows.size() == 3);
  for (const auto& row : entities.rows) CHECK(row[9] == (row[1] == "lead:0" ? "11" : "0"));
  // By id and by file stem.
  const ExportRun by_id = Export({log, "--csv", dir.Path() + "/by_id", "--entities", "0xabcdef,follow_0"});
  INFO(by_id.output);
  CHECK(by_id.status == 0);
  CHECK(std::filesystem::exists(dir.Path() + "/by_id/0000000000abcdef.csv"));
  CHECK(std::filesystem::exists(dir.Path() + "/by_id/follow_0.csv"));
  CHECK_FALSE(std::filesystem::exists(dir.Path() + "/by_id/lead_0.csv"));
}

TEST_CASE("platoon export: usage errors exit 2, nothing to export exits 1, with messages that say what to do") {
  TempDir dir;
  const Drive d = MakeDrive();
  const std::string log = WriteLog(dir, d);
  const std::string out = dir.Path() + "/out";
  auto says = [](const ExportRun& r, int status, const std::string& text) {
    INFO(r.output);
    CHECK(r.status == status);
    CHECK(r.output.find(text) != std::string::npos);
  };
  says(Export({"--help"}), 0, "Exit codes: 0 written, 1 nothing to export");
  says(Export({dir.Path() + "/missing.mcap", "--csv", out}), 2, "File does not exist");
  says(Export({dir.Write("not.mcap", "hello"), "--csv", out}), 2, "is not a platoon session log");
  says(Export({log, "--csv", out, "--rate", "0"}), 2, "--rate: expected rows per second of sim time in (0, 1000], got 0");
  says(Export({log, "--csv", out, "--rate", "nan"}), 2, "expected a finite number");
  says(Export({log, "--csv", out, "--variables", "speed,gear"}), 2, "--variables: unknown variable \"gear\" (known: sim_time, x,");
  says(Export({log, "--csv", out, "--entities", "nobody"}), 2, "has no entity \"nobody\" (its entities: ");
  says(Export({log, "--csv", out, "--from", "5", "--to", "4"}), 2, "--to (4.000 s) is before --from (5.000 s)");
  says(Export({log, "--csv", out, "--from", "20"}), 1, "nothing to export");
  says(Export({log, "--csv", dir.Write("file", "x") + "/sub"}), 2, "--csv: cannot create directory");
  CHECK_FALSE(std::filesystem::exists(out));

  // A log whose world states carry no entity.
  TempDir empty_dir;
  const std::string empty = WriteLog(empty_dir, d, kSession, "/nowhere/s.toml", false);
  says(Export({empty, "--csv", out}), 1, "no entity state: nothing to export");

  // A recorded session whose road file is not on this PC: exit 2 naming it and --config; with --config
  // the session and its road come from that file.
  TempDir road_dir;
  std::string with_file = kSession;
  with_file.replace(with_file.find("generate_length_m = 1500"), std::string("generate_length_m = 1500").size(),
                    "file = \"roads/lab.toml\"");
  const std::string moved = WriteLog(road_dir, d, with_file, "/nowhere/lab/session.toml");
  const ExportRun no_road = Export({moved, "--csv", out});
  says(no_road, 2, "the road of the session does not load here");
  says(no_road, 2, "road file \"/nowhere/lab/roads/lab.toml\"");
  says(no_road, 2, "--config FILE");
  const std::string config = road_dir.Write("session.toml", kSession);
  const ExportRun fixed = Export({moved, "--csv", out, "--config", config});
  says(fixed, 0, "wrote 3 CSV files");
  says(fixed, 0, "road: generated, 1500 m (from " + config + ")");
}

TEST_CASE("platoon export: a recorded drive agrees with the driver seat's own data write within a few cm of lane offset") {
  // configs/drivers.toml's robot seat (configs/inputs/lane_change.csv) with its road traffic and a
  // recorder, 14 s of sim time in lock-step through `platoon run` on free ports (a loaded machine then
  // still drives the whole stretch); the seat's data write and the log go into dir.
  TempDir dir;
  std::string text;
  {
    std::ifstream f(ConfigOnFreePorts(dir, "drivers.toml", 7400));
    std::stringstream s;
    s << f.rdbuf();
    text = s.str();
  }
  // Its own recorder (a recorder node in the file is replaced), its data write path inside dir.
  const size_t rec = text.find("[[node]]\nname = \"recorder\"");
  if (rec != std::string::npos) {
    const size_t next = text.find("[[node]]", rec + 1);
    text.erase(rec, next == std::string::npos ? std::string::npos : next - rec);
  }
  const std::string data_path = "path = \"data/{node}.csv\"";
  REQUIRE_MESSAGE(text.find(data_path) != std::string::npos, "configs/drivers.toml no longer writes data/{node}.csv");
  text.replace(text.find(data_path), data_path.size(), "path = \"" + dir.Path() + "/data/{node}.csv\"");
  text += "\n[[node]]\nname = \"recorder\"\nrole = \"recorder\"\npath = \"" + dir.Path() + "/drive.mcap\"\nfoxglove = false\n";
  const std::string session = dir.Write("drivers.toml", text);
  std::filesystem::create_directories(dir.Path() + "/inputs");
  std::filesystem::copy_file(std::string(PLATOON_SOURCE_DIR) + "/configs/inputs/lane_change.csv", dir.Path() + "/inputs/lane_change.csv");
  auto run = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--only", "server,traffic,robot,recorder", "--lockstep", "--duration", "14"});
  const auto status = RunToExit(run, 90s);
  std::string run_log;
  for (const auto& l : run.Lines()) run_log += l + "\n";
  REQUIRE_MESSAGE(status == std::optional<int>(0), run_log.substr(run_log.size() > 6000 ? run_log.size() - 6000 : 0));
  CheckNoErrorLines(run.Lines());

  // --markers: the data write's last column is the marker column, in the same convention.
  const ExportRun r = Export({dir.Path() + "/drive.mcap", "--csv", dir.Path() + "/out", "--rate", "100", "--entities", "robot", "--markers"});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  Csv seat = ReadCsv(dir.Path() + "/data/robot.csv");
  // The seat writes its car's name first (the node "robot"); the export names the file by it instead.
  REQUIRE(!seat.header.empty());
  CHECK(seat.header.front() == "name");
  for (const auto& row : seat.rows) CHECK(row.front() == "robot");
  seat.header.erase(seat.header.begin());
  for (auto& row : seat.rows) row.erase(row.begin());
  const Csv exported = ReadCsv(dir.Path() + "/out/robot.csv");
  CHECK(seat.header == exported.header);
  // Rows at common sim times (the same k / 100 Hz grid).
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < exported.rows.size(); ++i) at[exported.rows[i][0]] = i;
  size_t common = 0, lane_changes = 0;
  double worst_offset = 0, worst_xy = 0, worst_headway = 0, offset_min = 1e9, offset_max = -1e9;
  for (size_t i = 0; i < seat.rows.size(); ++i) {
    const auto it = at.find(seat.rows[i][0]);
    if (it == at.end()) continue;
    const size_t j = it->second;
    ++common;
    CHECK(seat.rows[i].back() == exported.rows[j].back());  // the same markers in the row
    const double a = seat.Num(i, "lane_offset_m"), b = exported.Num(j, "lane_offset_m");
    INFO("sim time " << seat.rows[i][0] << " s");
    REQUIRE(std::isfinite(a));
    REQUIRE(std::isfinite(b));
    offset_min = std::min(offset_min, a);
    offset_max = std::max(offset_max, a);
    // Lanes agree except right at a lane boundary (the two offsets then lie on either side of it).
    if (seat.Num(i, "lane") != exported.Num(j, "lane")) {
      ++lane_changes;
      CHECK(std::abs(a) > 1.7);
      continue;
    }
    worst_offset = std::max(worst_offset, std::abs(a - b));
    worst_xy = std::max(worst_xy, std::hypot(seat.Num(i, "x_m") - exported.Num(j, "x_m"), seat.Num(i, "y_m") - exported.Num(j, "y_m")));
    const double ha = seat.Num(i, "headway_m"), hb = exported.Num(j, "headway_m");
    if (std::isfinite(ha) && std::isfinite(hb)) worst_headway = std::max(worst_headway, std::abs(ha - hb));
  }
  MESSAGE("data write " << seat.rows.size() << " rows, export " << exported.rows.size() << " rows, " << common
                        << " at common times; lane offset " << offset_min << " .. " << offset_max << " m; export minus data write: lane offset within "
                        << worst_offset * 1e3 << " mm, position within " << worst_xy * 1e3 << " mm, headway within "
                        << worst_headway * 1e3 << " mm; " << lane_changes << " rows with the lane on either side of a boundary");
  CHECK(common >= seat.rows.size() * 95 / 100);
  CHECK(offset_max - offset_min > 1.0);  // the drive does change lanes
  CHECK(worst_offset < 0.03);
  CHECK(worst_xy < 0.05);
}

TEST_CASE("platoon export: --metrics writes each entity's driving metrics as its rows give them, whatever --variables writes") {
  TempDir dir;
  const std::string log = WriteLog(dir, MakeDrive());
  const std::string full = dir.Path() + "/full", out = dir.Path() + "/out";
  // The rows with every column, for the figures computed here.
  const ExportRun all_columns = Export({log, "--csv", full, "--rate", "20", "--entities", "follow,lead"});
  INFO(all_columns.output);
  REQUIRE(all_columns.status == 0);
  const ExportRun r = Export({log, "--csv", out, "--rate", "20", "--entities", "follow,lead", "--variables", "speed", "--metrics",
                        "--event", "2"});
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("metrics.csv") != std::string::npos);
  const Csv metrics = ReadCsv(out + "/metrics.csv");
  REQUIRE(metrics.rows.size() == 2);
  for (size_t i = 0; i < metrics.rows.size(); ++i) {
    const std::string name = metrics.rows[i][metrics.Col("name")];
    CAPTURE(name);
    const Csv rows = ReadCsv(full + "/" + (name == "follow:0" ? "follow_0.csv" : "lead_0.csv"));
    REQUIRE(!rows.rows.empty());
    CHECK(metrics.Num(i, "rows") == static_cast<double>(rows.rows.size()));
    double speed_sum = 0, thw_min = INFINITY, ttc_min = INFINITY;
    for (size_t k = 0; k < rows.rows.size(); ++k) {
      speed_sum += rows.Num(k, "speed_mps");
      if (std::isfinite(rows.Num(k, "time_headway_s"))) thw_min = std::min(thw_min, rows.Num(k, "time_headway_s"));
      if (std::isfinite(rows.Num(k, "ttc_s"))) ttc_min = std::min(ttc_min, rows.Num(k, "ttc_s"));
    }
    CHECK(metrics.Num(i, "speed_mean_mps") == doctest::Approx(speed_sum / static_cast<double>(rows.rows.size())).epsilon(1e-3));
    CHECK(metrics.Num(i, "event_s") == doctest::Approx(2.0));
    if (name == "follow:0") {
      // Closing on the leader at 3 m/s: both headway figures exist and agree with the rows (3 decimals there).
      CHECK(metrics.Num(i, "thw_min_s") == doctest::Approx(thw_min).epsilon(2e-3));
      CHECK(metrics.Num(i, "ttc_min_s") == doctest::Approx(ttc_min).epsilon(2e-3));
      CHECK(metrics.Num(i, "lane_changes") == 0);
    } else {
      CHECK(name == "lead:0");
      CHECK(std::isnan(metrics.Num(i, "thw_min_s")));  // nobody ahead of the leader
    }
    CHECK(std::isnan(metrics.Num(i, "brake_reaction_s")));  // nobody brakes
  }
  // --event needs --metrics.
  const ExportRun no_metrics = Export({log, "--csv", dir.Path() + "/x", "--event", "2"});
  CHECK(no_metrics.status == 2);
  CHECK(no_metrics.output.find("--metrics") != std::string::npos);

  // --window: a row per entity for the 1.5 s after the marker (once, although two world states carry it).
  const ExportRun windowed = Export({log, "--csv", dir.Path() + "/w", "--rate", "20", "--entities", "follow", "--metrics", "--window",
                               "go, now:1.5"});
  INFO(windowed.output);
  REQUIRE(windowed.status == 0);
  std::ifstream wf(dir.Path() + "/w/metrics.csv");
  std::string header_line, whole_line, window_line, extra;
  std::getline(wf, header_line);
  std::getline(wf, whole_line);
  std::getline(wf, window_line);
  CHECK_FALSE(std::getline(wf, extra));
  CHECK(header_line.rfind("id,name,marker,marker_s,first_row_s,last_row_s,event_s,rows,", 0) == 0);
  CHECK(window_line.find(",\"go, now\",2.000000,2.000000,3.500000,2.000000,31,") != std::string::npos);
  // Its mean speed is that of the follower's rows from 2.0 to 3.5 s.
  const Csv rows = ReadCsv(full + "/follow_0.csv");
  double sum = 0;
  int n = 0;
  for (size_t k = 0; k < rows.rows.size(); ++k)
    if (rows.Num(k, "sim_time_s") >= 2.0 - 1e-9 && rows.Num(k, "sim_time_s") <= 3.5 + 1e-9) sum += rows.Num(k, "speed_mps"), ++n;
  REQUIRE(n == 31);
  const std::string after = window_line.substr(window_line.find(",31,") + 4);
  CHECK(std::stod(after.substr(after.find(',') + 1)) == doctest::Approx(sum / n).epsilon(1e-3));
  // A marker the log does not hold: exit 2 naming the ones it holds.
  const ExportRun missing = Export({log, "--csv", dir.Path() + "/m", "--metrics", "--window", "stop:2"});
  CHECK(missing.status == 2);
  CHECK(missing.output.find("has no marker \"stop\" (its markers: \"go, now\")") != std::string::npos);
  CHECK(Export({log, "--csv", dir.Path() + "/m", "--metrics", "--window", "go:0"}).status == 2);
}

TEST_CASE("platoon export: --markers puts each marker's text in the row of its period and nowhere else") {
  TempDir dir;
  const std::string log = WriteLog(dir, MakeDrive());
  const ExportRun r = Export({log, "--csv", dir.Path() + "/out", "--rate", "20", "--entities", "follow", "--variables", "speed", "--markers"});
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::ifstream f(dir.Path() + "/out/follow_0.csv");
  std::string line;
  std::getline(f, line);
  CHECK(line == "sim_time_s,speed_mps,marker");
  int rows = 0, marked = 0;
  while (std::getline(f, line)) {
    ++rows;
    if (line.rfind("2.000000,", 0) == 0) {
      CHECK(line.size() > 10);
      CHECK(line.substr(line.size() - 10) == ",\"go, now\"");  // the marker at 2 s, quoted (it holds a comma)
      ++marked;
    } else {
      CHECK(line.back() == ',');  // an empty marker field
    }
  }
  CHECK(rows > 100);
  CHECK(marked == 1);
}

TEST_CASE("platoon export: the sign columns follow a variable message sign as the recording's conditions changed it") {
  // A gantry at s = 200 m: a 100 limit, shown as 60 from 4 s on (keyframes carry the contents, as a server
  // sends them). The follower (s = 100 + 15 t) passes it at 6.67 s.
  const std::string session = kSession + R"(
[[sign]]
s_m = 200
type = "speed_limit"
value = 100
mount = "gantry"
variable = true
)";
  TempDir dir;
  const std::string log = WriteLog(dir, MakeDrive(), session, "/nowhere/export-drive.toml", true, [](protocol::WorldState& w) {
    if (!w.keyframe && w.sim_time_ns != 4000 * kExportMs) return;
    w.conditions = world::WorldConditions{};
    w.conditions->variable_signs = {{1, static_cast<uint8_t>(road::SignType::kSpeedLimit), w.sim_time_ns < 4 * kExportS ? 100.0 : 60.0}};
  });
  const ExportRun r = Export({log, "--csv", dir.Path() + "/out", "--rate", "10", "--entities", "follow"});
  INFO(r.output);
  REQUIRE(r.status == 0);
  const Csv c = ReadCsv(dir.Path() + "/out/follow_0.csv");
  int before = 0, shown = 0, passed = 0;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const double t = c.Num(i, "sim_time_s");
    if (t < 3.95) {
      CHECK(c.Num(i, "next_sign_value") == 100);
      ++before;
    } else if (t >= 4.0 && t < 6.6) {
      CHECK(c.Num(i, "next_sign_value") == 60);
      ++shown;
    } else if (t > 6.75) {
      CHECK(c.Num(i, "last_sign_value") == 60);
      CHECK(std::isnan(c.Num(i, "next_sign_value")));
      ++passed;
    }
  }
  MESSAGE(before, " rows before the change, ", shown, " while it showed 60 ahead, ", passed, " after passing it");
  CHECK(before >= 39);
  CHECK(shown >= 25);
  CHECK(passed >= 10);
}
