// The driver role (node/src/driver_seat.cpp): the module stepped with a fake context, its config keys,
// and two headless drivers with input scripts over a real server on loopback, each seeing the other.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/entity_id.hpp"

#define MSGPACK_NO_BOOST
#include <msgpack.hpp>
#include <zmq.hpp>

#include <doctest/doctest.h>
#include <signal.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using namespace platoon;
using namespace platoon::node;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

// Records what the module publishes; serves a fixed list of remote entities.
class FakeContext final : public ModuleContext {
 public:
  std::vector<RemoteEntity> remote;
  std::vector<protocol::EntityState> published;
  std::vector<RemoteEntity> RemoteEntities(int64_t) const override { return remote; }
  void Publish(const protocol::EntityState& truth) override { published.push_back(truth); }
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
};

std::shared_ptr<spdlog::logger> QuietLog() {
  return std::make_shared<spdlog::logger>("driver-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// A headless driver node with this input script, in a session that `extra` completes.
config::SessionDef DriverSession(const TempDir& dir, const std::string& script, const std::string& extra = "") {
  dir.Write("drive.csv", script);
  return config::LoadSession(dir.Write("s.toml", extra + "[[node]]\nname = \"seat\"\nrole = \"driver\"\n"
                                                         "input = \"scripted:drive.csv\"\nheadless = true\n"));
}

const char* kAccelerateThenSteerLeft =
    "time_s, steer, throttle, brake\n"
    "0.0, 0.0, 0.6, 0.0\n"
    "2.0, 0.0, 0.6, 0.0\n"
    "2.1, 0.3, 0.2, 0.0\n";

std::string ConfigErrorOf(const std::string& node_keys, const std::string& extra = "") {
  try {
    config::LoadSessionText(extra + "[[node]]\nname = \"seat\"\n" + node_keys, "seat.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("driver seat: scripted throttle drives forward, left steer turns left, dynamics step every 1 ms") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, kAccelerateThenSteerLeft);
  DriverSeatModule seat(session, session.nodes[0], QuietLog());
  FakeContext context;
  // Without a [road] the car starts at the stadium track's s = start_s_m around the origin, heading +x.
  const Pose start = DriverStartPose(session, session.nodes[0]);
  CHECK(start.position_m.y() == doctest::Approx(-30.0));

  const int64_t t0 = 5'000'000'000;  // the session's sim time when the module first steps
  double yaw_at_2s = 0;
  for (int64_t k = 0; k <= 4000; ++k) {
    seat.Step(StepInfo{t0 + k * kDriverStepNs, k ? kDriverStepNs : 0}, context);
    if (k == 2000) yaw_at_2s = seat.State().yaw_rad;
  }
  CHECK(seat.DynamicsSteps() == 4000);
  CHECK(seat.StateTimeNs() == t0 + 4000 * kDriverStepNs);
  REQUIRE(context.published.size() == 4001);
  const protocol::EntityState& last = context.published.back();
  CHECK(last.id == VehicleId("seat", 0));
  CHECK(last.kind == protocol::EntityKind::kCar);
  CHECK(last.kinematics.stamp_ns == t0 + 4000 * kDriverStepNs);
  // Two seconds at 60 % throttle from rest: well under way, straight ahead.
  const protocol::EntityState& at_2s = context.published[2000];
  CHECK(at_2s.kinematics.velocity_mps.x() > 5.0);
  CHECK(std::abs(at_2s.kinematics.pose.position_m.y() - start.position_m.y()) < 0.01);
  CHECK(std::abs(yaw_at_2s) < 1e-6);
  // Then steer left (positive): the heading turns counter-clockwise and the car leaves to the left.
  CHECK(seat.State().yaw_rad > 0.2);
  CHECK(last.kinematics.pose.position_m.y() > start.position_m.y() + 1.0);
  CHECK(last.controls.steer == doctest::Approx(0.3));
  CHECK(seat.LastInput().throttle == doctest::Approx(0.2));
}

TEST_CASE("driver seat: a scripted run does not depend on when the module thread wakes up") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, kAccelerateThenSteerLeft);
  DriverSeatModule regular(session, session.nodes[0], QuietLog()), jittery(session, session.nodes[0], QuietLog());
  FakeContext a, b;
  for (int64_t k = 0; k <= 3000; ++k) regular.Step(StepInfo{k * kDriverStepNs, 0}, a);
  // Late and irregular wake-ups (0.3 .. 7 ms apart): the dynamics catch up in the same 1 ms steps.
  int64_t t = 0;
  for (int i = 0; t < 3000 * kDriverStepNs; ++i) {
    jittery.Step(StepInfo{t, 0}, b);
    t = std::min<int64_t>(3000 * kDriverStepNs, t + 300'000 + (int64_t{i} * 7'919'000) % 6'700'000);
  }
  jittery.Step(StepInfo{t, 0}, b);
  CHECK(jittery.DynamicsSteps() == 3000);
  CHECK(jittery.State() == regular.State());
  CHECK(jittery.State().Hash() == regular.State().Hash());
  CHECK(jittery.State().distance_m > 10.0);
}

TEST_CASE("driver seat: a stall of up to 1 s is caught up, a longer one is skipped and counted with its missed data-write rows") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, kAccelerateThenSteerLeft);
  config::NodeDef node = session.nodes[0];
  node.data_write = config::DataWriteDef{};
  node.data_write->rate_hz = 100;
  node.data_write->columns = {data::Column::kSimTime, data::Column::kSpeed};
  node.data_write->path = dir.Path() + "/stall.csv";
  DriverSeatModule seat(session, node, QuietLog());
  FakeContext context;
  seat.Step(StepInfo{0, 0}, context);
  seat.Step(StepInfo{600'000'000, 0}, context);  // 0.6 s later (a loaded machine): every step computed
  CHECK(seat.DynamicsSteps() == 600);
  CHECK(seat.StateTimeNs() == 600'000'000);
  CHECK(seat.SamplesTaken() == 61);  // 0.00, 0.01, ..., 0.60 s
  seat.Step(StepInfo{3'600'000'000, 0}, context);  // 3 s later (a suspended process): the last 1 s is computed
  CHECK(seat.DynamicsSteps() == 1600);
  CHECK(seat.StateTimeNs() == 3'600'000'000);
  CHECK(seat.SamplesTaken() == 161);  // 0.61 .. 2.60 s passed over: 200 rows missed
  std::vector<std::string> fields;
  seat.Summarize(fields);
  REQUIRE(fields.size() == 2);
  CHECK(fields[0].find("\"driver_skipped_steps\":2000") != std::string::npos);
  CHECK(fields[1].find("\"data_write_samples\":161,\"data_write_missed\":200,") != std::string::npos);
}

TEST_CASE("driver seat: the summary lists every remote vehicle with how far it moved where this node displayed it") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, "0, 0, 0, 1\n");
  DriverSeatModule seat(session, session.nodes[0], QuietLog());
  FakeContext context;
  RemoteEntity other;
  other.state.id = VehicleId("other", 0);
  other.displayed.position_m = Vec3(100, 0, 0);
  context.remote = {other};
  seat.Step(StepInfo{0, 0}, context);
  context.remote[0].displayed.position_m = Vec3(103, 4, 0);
  seat.Step(StepInfo{20'000'000, 0}, context);  // the remote list is read every 10 ms
  std::vector<std::string> fields;
  seat.Summarize(fields);
  REQUIRE(fields.size() == 1);
  INFO(fields[0]);
  CHECK(fields[0].find("{\"id\":" + std::to_string(VehicleId("other", 0)) + ",\"moved_m\":5.000,\"x_m\":103.000") !=
        std::string::npos);
  CHECK(fields[0].find("\"driver_remote_max\":1") != std::string::npos);
  CHECK(fields[0].find("\"driver_window\":false") != std::string::npos);
}

TEST_CASE("driver seat: starts on the session road's lane, facing its direction of travel") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, "0, 0, 0, 0\n", "[road]\ngenerate_length_m = 500\nseed = 3\nlanes = 2\n");
  config::NodeDef node = session.nodes[0];
  node.start_s_m = 120;
  node.start_lane = -2;
  const road::Road road = road::SessionRoad(session.road);
  const Pose p = DriverStartPose(session, node);
  CHECK((p.position_m - road.LaneCenter(120, -2)).norm() < 1e-9);
  const Vec3 forward = p.orientation * Vec3::UnitX();
  CHECK(std::atan2(forward.y(), forward.x()) == doctest::Approx(std::remainder(road.Heading(120), 2 * M_PI)));
  // The module's published pose is that start (rear-axle origin).
  DriverSeatModule seat(session, node, QuietLog());
  FakeContext context;
  seat.Step(StepInfo{0, 0}, context);
  REQUIRE(context.published.size() == 1);
  CHECK((context.published[0].kinematics.pose.position_m - p.position_m).norm() < 1e-6);

  node.start_lane = -3;
  CHECK_THROWS_WITH_AS(DriverStartPose(session, node), doctest::Contains("start_lane -3 is not on the road"), config::ConfigError);
  node.start_lane = -1;
  node.start_s_m = 900;
  CHECK_THROWS_WITH_AS(DriverStartPose(session, node), doctest::Contains("beyond the end of the road"), config::ConfigError);
}

TEST_CASE("driver seat: bad driver keys and scripts are refused naming file, line and key") {
  CHECK(ConfigErrorOf("role = \"driver\"\ninput = \"joystick\"\n").find("seat.toml:4: node[0].input: expected \"sdl\", \"scripted:<input script file>\", \"model:follow\", \"stream\" or \"can\", got \"joystick\"") == 0);
  CHECK(ConfigErrorOf("role = \"driver\"\ninput = \"scripted:\"\n").find("node[0].input") != std::string::npos);
  CHECK(ConfigErrorOf("role = \"driver\"\nstart_lane = 0\n").find("node[0].start_lane: expected a lane") != std::string::npos);
  CHECK(ConfigErrorOf("role = \"driver\"\neye = [1, 2]\n").find("node[0].eye") != std::string::npos);
  CHECK(ConfigErrorOf("role = \"driver\"\nview_fps = 0\n").find("node[0].view_fps") != std::string::npos);
  CHECK(ConfigErrorOf("role = \"traffic\"\nheadless = true\n").find("node[0].headless: is a driver key") != std::string::npos);
  CHECK(ConfigErrorOf("role = \"driver\"\neye = [1.3, 0.4, 1.1]\nheadless = true\n").empty());

  // A relative script is found next to the session file; a broken one names its own file and line.
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, "0, 0, 0.5, 0\n1, 2, 0.5, 0\n");
  CHECK(session.nodes[0].input == "scripted:" + dir.Path() + "/drive.csv");
  CHECK_THROWS_WITH_AS(DriverSeatModule(session, session.nodes[0], QuietLog()), doctest::Contains("drive.csv:2: steer"),
                       config::ConfigError);
  // An [node.input_mapping] with a bad key fails before anything opens.
  dir.Write("m.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n[node.input_mapping]\nsteer_axes = 1\n");
  const config::SessionDef mapped = config::LoadSession(dir.Path() + "/m.toml");
  CHECK_THROWS_WITH_AS(DriverSeatModule(mapped, mapped.nodes[0], QuietLog()), doctest::Contains("steer_axes"), config::ConfigError);
}

TEST_CASE("driver seat over loopback: two headless drivers see each other move, dynamics at >= 990 Hz") {
  TempDir dir;
  const auto p = FreePorts(4);
  dir.Write("alice.csv",
            "time_s, steer, throttle, brake\n0, 0, 0.5, 0\n3, 0, 0.5, 0\n3.5, 0.1, 0.3, 0\n4.5, 0, 0, 0\n5, 0, 0, 0.6\n");
  dir.Write("bob.csv", "0, 0, 0, 1\n");
  std::string text = "[session]\nname = \"seats\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                     std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                     std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                     "\n[road]\ngenerate_length_m = 1000\nseed = 4\nlanes = 2\n";
  for (const auto& [name, lane, s] : {std::tuple{"alice", -1, 20}, std::tuple{"bob", -2, 60}})
    text += std::string("[[node]]\nname = \"") + name + "\"\nrole = \"driver\"\ninput = \"scripted:" + name +
            ".csv\"\nstart_lane = " + std::to_string(lane) + "\nstart_s_m = " + std::to_string(s) +
            "\nmonitor_rate_hz = 50\nstatus_interval_s = 0.5\n";
  const std::string session = dir.Write("seats.toml", text);
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  auto node = [&](const char* name) {
    return process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", name, "--headless"});
  };
  auto alice = node("alice");
  auto bob = node("bob");
  // Handshakes: alice's script ends with her car at rest; then two more of bob's status lines (0.5 s
  // apart), by which time her last state has reached him.
  REQUIRE_MESSAGE(alice.WaitForLine("input script done", 40s), "alice never finished her script");
  while (bob.ReadLine(0ms)) {
  }
  for (int i = 0; i < 3; ++i) REQUIRE(bob.WaitForLine("] clock synced", 5s));
  auto stop = [](process::Child& c, const char* who) -> const std::vector<std::string>& {
    c.Signal(SIGTERM);
    REQUIRE_MESSAGE(c.WaitForLine("SUMMARY", 10s).has_value(), "no SUMMARY after SIGTERM");
    WaitForStopped(c, who);
    return c.Lines();
  };
  const auto& a = stop(alice, "alice");
  const auto& b = stop(bob, "bob");
  INFO("alice: " << a.back());
  INFO("bob: " << b.back());
  CHECK(alice.Status() == 0);
  CHECK(bob.Status() == 0);
  MESSAGE("alice: dynamics " << SummaryValue(a, "driver_dynamics_hz").value_or(-1) << " Hz, module woken at "
                             << SummaryValue(a, "driver_module_hz").value_or(-1) << " Hz, largest gap "
                             << SummaryValue(a, "driver_max_step_gap_ms").value_or(-1) << " ms");
  for (const auto* lines : {&a, &b}) {
    CHECK(SummaryValue(*lines, "driver_dynamics_hz").value_or(0) >= 990);
    // The scheduler really steps the module at about 1 kHz (not the 100 Hz default module rate).
    CHECK(SummaryValue(*lines, "driver_module_hz").value_or(0) >= 500);
    CHECK(SummaryValue(*lines, "driver_window") == 0.0);
    CHECK(SummaryValue(*lines, "driver_remote_max") == 1.0);
  }
  // Alice drove about 29 m and stopped; bob saw her move that far and shows her where she stopped.
  const double ax = SummaryValue(a, "driver_x_m").value_or(1e9), ay = SummaryValue(a, "driver_y_m").value_or(1e9);
  CHECK(SummaryValue(a, "driver_distance_m").value_or(0) > 20);
  CHECK(SummaryValue(a, "driver_speed_mps").value_or(1) < 0.05);
  std::smatch m;
  const std::string alice_id = std::to_string(VehicleId("alice", 0));
  REQUIRE(std::regex_search(b.back(), m, std::regex("\\{\"id\":" + alice_id +
                                                    ",\"moved_m\":([0-9.]+),\"x_m\":(-?[0-9.]+),\"y_m\":(-?[0-9.]+)\\}")));
  CHECK(std::stod(m[1]) > 20);
  CHECK(std::hypot(std::stod(m[2]) - ax, std::stod(m[3]) - ay) < 0.1);
  // And alice saw bob, standing still where he started.
  REQUIRE(std::regex_search(a.back(), m, std::regex("\\{\"id\":" + std::to_string(VehicleId("bob", 0)) +
                                                    ",\"moved_m\":([0-9.]+),\"x_m\":(-?[0-9.]+),\"y_m\":(-?[0-9.]+)\\}")));
  CHECK(std::stod(m[1]) < 0.05);
  CHECK(std::hypot(std::stod(m[2]) - SummaryValue(b, "driver_x_m").value_or(1e9),
                   std::stod(m[3]) - SummaryValue(b, "driver_y_m").value_or(1e9)) < 0.05);
}

TEST_CASE("driver seat: platoon check shows each driver's input and start, and refuses a missing input script") {
  TempDir dir;
  dir.Write("drive.csv", "0, 0, 0.3, 0\n");
  const std::string node = "[[node]]\nname = \"seat\"\nrole = \"driver\"\nstart_s_m = 35\nheadless = true\ninput = \"scripted:";
  auto run_check = [&](const std::string& file) {
    auto c = process::Child::Spawn({BinDir() + "/platoon", "check", file});
    const auto st = c.WaitFor(20s);
    while (c.ReadLine(0ms)) {
    }
    REQUIRE(st.has_value());
    return std::pair{*st, c.Lines()};
  };
  const auto [ok, ok_lines] = run_check(dir.Write("good.toml", node + "drive.csv\"\n"));
  CHECK(ok == 0);
  CHECK(AnyLineContains(ok_lines, "driver input scripted:" + dir.Path() + "/drive.csv, starts at s 35.0 m lane -1, headless"));
  const auto [ko, ko_lines] = run_check(dir.Write("bad.toml", node + "missing.csv\"\n"));
  CHECK(ko == 2);
  CHECK(AnyLineContains(ko_lines, "bad.toml: node \"seat\": input script " + dir.Path() + "/missing.csv cannot be read"));
}

namespace {

// A CSV file as columns of numbers by header name (empty fields: NaN), and the header in file order.
struct Csv {
  std::vector<std::string> header;
  std::map<std::string, std::vector<double>> column;
  std::vector<std::string> names;  // the "name" column, as text
  std::vector<std::string> markers;  // the "marker" column, as text (no commas in these tests)
  size_t rows = 0;
};

Csv ReadCsv(const std::string& path) {
  Csv csv;
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return csv;
  std::stringstream h(line);
  for (std::string name; std::getline(h, name, ',');) csv.header.push_back(name);
  while (std::getline(f, line)) {
    std::vector<std::string> fields;
    size_t from = 0;
    for (size_t at; (at = line.find(',', from)) != std::string::npos; from = at + 1) fields.push_back(line.substr(from, at - from));
    fields.push_back(line.substr(from));
    REQUIRE(fields.size() == csv.header.size());
    for (size_t i = 0; i < fields.size(); ++i) {
      if (csv.header[i] == "name") csv.names.push_back(fields[i]);
      else if (csv.header[i] == "marker") csv.markers.push_back(fields[i]);
      else csv.column[csv.header[i]].push_back(fields[i].empty() ? std::nan("") : std::stod(fields[i]));
    }
    ++csv.rows;
  }
  return csv;
}

}  // namespace

TEST_CASE("driver seat: data write rows fall on whole multiples of the period, once each, through jitter, pauses and a clock going back") {
  TempDir dir;
  const std::string csv_path = dir.Path() + "/out/seat.csv";
  const config::SessionDef session =
      DriverSession(dir, kAccelerateThenSteerLeft, "[road]\ngenerate_length_m = 800\nseed = 3\nlanes = 2\n");
  config::NodeDef node = session.nodes[0];
  node.start_s_m = 100;
  node.start_lane = -1;
  config::DataWriteDef write;
  write.rate_hz = 50;
  for (const auto& c : data::Columns()) write.columns.push_back(c.column);
  write.path = csv_path;
  node.data_write = write;
  DriverSeatModule seat(session, node, QuietLog());
  FakeContext context;
  // A car standing 40 m ahead in the same lane: the leader columns have a value.
  const road::Road road = road::SessionRoad(session.road);
  protocol::EntityState other;
  other.id = VehicleId("other", 0);
  other.kind = protocol::EntityKind::kCar;
  other.kinematics.pose = Pose{road.LaneCenter(160, -1), Quat(Eigen::AngleAxisd(road.Heading(160), Vec3::UnitZ()))};
  context.remote.push_back(RemoteEntity{other, other.kinematics.pose});

  // Wakes at irregular times off the 1 ms grid, from sim 5.000123 s; a paused stretch (the same sim time
  // stepped again), then a clock that went back 30 ms, then on to 7 s.
  int64_t t = 5'000'123'000;
  for (int i = 0; t < 6'000'000'000; ++i) {
    seat.Step(StepInfo{t, 0}, context);
    t += 300'000 + (int64_t{i} * 7'919'000) % 6'700'000;
  }
  for (int i = 0; i < 20; ++i) seat.Step(StepInfo{t, 0}, context);
  t -= 30'000'000;
  // A session marker at sim 6.51 s arrives with the world 40 ms later: the data write holds its row for it.
  protocol::LoggedEvent marker;
  marker.kind = protocol::LoggedEvent::Kind::kMarker;
  marker.sim_time_ns = 6'510'000'000;
  marker.text = "lead brakes";
  marker.sequence = 1;
  for (bool sent = false; t < 7'000'000'000; t += 1'000'000) {
    if (t >= 6'550'000'000 && !sent) seat.OnEvent(marker, context);
    sent = t >= 6'550'000'000;
    seat.Step(StepInfo{t, 0}, context);
  }
  seat.Step(StepInfo{7'000'000'000, 0}, context);

  std::vector<std::string> fields;
  seat.Summarize(fields);
  REQUIRE(fields.size() == 2);
  INFO(fields[1]);
  const Csv csv = ReadCsv(csv_path);
  // The seat's own car by its readable name in every row: the node "seat" drives it.
  REQUIRE(csv.header.size() == data::kColumnCount + 2);
  CHECK(csv.header.front() == "name");
  CHECK(csv.header[1] == "sim_time_s");
  REQUIRE(csv.names.size() == csv.rows);
  CHECK(std::all_of(csv.names.begin(), csv.names.end(), [](const std::string& n) { return n == "seat"; }));
  CHECK(csv.header[1 + static_cast<size_t>(data::Column::kTtc)] == "ttc_s");
  CHECK(csv.header[data::kColumnCount] == "last_sign_distance_m");  // the sign columns close the table
  // The last column: the marker in the one row whose period (6.50, 6.52] s holds its sim time.
  CHECK(csv.header.back() == "marker");
  REQUIRE(csv.markers.size() == csv.rows);
  for (size_t k = 0; k < csv.rows; ++k) {
    const bool holds = csv.column.at("sim_time_s")[k] == doctest::Approx(6.52).epsilon(1e-12);
    CHECK_MESSAGE(csv.markers[k] == (holds ? "lead brakes" : ""), "row " << k);
  }
  // Rows at 5.00, 5.02, ..., 7.00: the first at the dynamics start (5.000 s on the grid), 101 in all.
  const auto& time = csv.column.at("sim_time_s");
  REQUIRE(csv.rows == 101);
  for (size_t k = 0; k < time.size(); ++k) CHECK(time[k] == doctest::Approx(5.0 + 0.02 * static_cast<double>(k)).epsilon(1e-12));
  CHECK(seat.SamplesTaken() == 101);
  CHECK(fields[1].find("\"data_write_rows\":101,\"data_write_dropped\":0,\"data_write_failed\":0,\"data_write_samples\":101,"
                       "\"data_write_missed\":0,\"data_write_rate_hz\":50,") == 0);
  CHECK(fields[1].find("\"data_write_markers\":1,\"data_write_markers_late\":0,") != std::string::npos);
  CHECK(fields[1].find("\"data_write_path\":\"" + csv_path + "\",\"data_write_error\":\"\"") != std::string::npos);
  CHECK(fields[0].find("\"driver_step_mean_us\":") != std::string::npos);

  // The last row is the state at 7 s, as published; on the road in lane -1, near its centre.
  const protocol::EntityState& last = context.published.back();
  REQUIRE(last.kinematics.stamp_ns == 7'000'000'000);
  CHECK(csv.column.at("x_m").back() == doctest::Approx(last.kinematics.pose.position_m.x()).epsilon(1e-6));
  CHECK(csv.column.at("speed_mps").back() == doctest::Approx(last.kinematics.velocity_mps.norm()).epsilon(1e-4));
  CHECK(csv.column.at("throttle_norm").back() == doctest::Approx(0.6));  // the command of the step that ended at 7 s
  const road::RoadCoord at = road.Project(last.kinematics.pose.position_m);
  CHECK(csv.column.at("lane").back() == -1);
  CHECK(csv.column.at("s_m").back() == doctest::Approx(at.s_m).epsilon(1e-6));
  CHECK(csv.column.at("lane_offset_m").back() == doctest::Approx(at.t_m - road.LaneCenterOffset(-1)).epsilon(1e-4));
  // At the start the car stands 60 m of s behind the other one: along lane -1 that is 60 m less the
  // lane's offset times the change of heading, less 0.8 x 4.5 and 0.2 x 4.5 of overhangs, bumper to bumper.
  const double lane_arc = 60 + 1.75 * (road.Heading(160) - road.Heading(100));
  CHECK(csv.column.at("headway_m").front() == doctest::Approx(lane_arc - 4.5).epsilon(1e-4));
  CHECK(std::isnan(csv.column.at("time_headway_s").front()));  // standing still
  CHECK(csv.column.at("ttc_s").back() > 0);                   // closing on it by then
}

TEST_CASE("driver seat: a data write path that cannot be written is one error, the seat drives on") {
  TempDir dir;
  const config::SessionDef session = DriverSession(dir, kAccelerateThenSteerLeft);
  config::NodeDef node = session.nodes[0];
  node.data_write = config::DataWriteDef{};
  node.data_write->columns = {data::Column::kSimTime, data::Column::kSpeed};
  node.data_write->path = "/dev/full";
  DriverSeatModule seat(session, node, QuietLog());
  FakeContext context;
  for (int64_t k = 0; k <= 500; ++k) seat.Step(StepInfo{k * kDriverStepNs, 0}, context);
  CHECK(seat.DynamicsSteps() == 500);
  std::vector<std::string> fields;
  seat.Summarize(fields);
  REQUIRE(fields.size() == 2);
  CHECK(fields[1].find("\"data_write_rows\":0,\"data_write_dropped\":0,\"data_write_failed\":51,") == 0);
  CHECK(fields[1].find("/dev/full: No space left on device") != std::string::npos);
}

TEST_CASE("driver seat: platoon check and platoon run refuse a bad [node.data_write] with the same message, exit 2") {
  TempDir dir;
  dir.Write("drive.csv", "0, 0, 0.3, 0\n");
  const auto p = FreePorts(4);
  const std::string session = dir.Write(
      "bad.toml", "[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " + std::to_string(p[0]) + "\ntime_port = " +
                      std::to_string(p[1]) + "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                      "\n[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"scripted:drive.csv\"\n"
                      "[node.data_write]\nvariables = [\"speed\", \"gear\"]\n");
  const std::string says = "bad.toml:13: node[0].data_write.variables: unknown variable \"gear\" (known: sim_time, x, y,";
  const std::vector<std::vector<std::string>> commands = {{BinDir() + "/platoon", "check", session},
                                                          {BinDir() + "/platoon", "run", session, "--duration", "5"}};
  for (const auto& argv : commands) {
    INFO(argv[1]);
    auto c = process::Child::Spawn(argv);
    CHECK(RunToExit(c, 10s) == std::optional<int>(2));
    CHECK(AnyLineContains(c.Lines(), says));
    CHECK_FALSE(AnyLineContains(c.Lines(), "listening on"));
  }
}

namespace driver_seat_gaze_detail {

// One Pupil gaze datum, packed as Pupil Capture sends it.
std::string PackPupilGaze(double x, double y, double confidence, double timestamp_s) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p(buffer);
  p.pack_map(3);
  p.pack(std::string("norm_pos"));
  p.pack_array(2);
  p.pack(x);
  p.pack(y);
  p.pack(std::string("confidence"));
  p.pack(confidence);
  p.pack(std::string("timestamp"));
  p.pack(timestamp_s);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace driver_seat_gaze_detail

TEST_CASE("driver seat: gaze from a synthetic Pupil Capture is written on the sim clock and mapped to the car looked at") {
  using namespace driver_seat_gaze_detail;
  TempDir dir;
  // A braking seat (it stays where it starts) with the eye tracker on; a car stands 25 m ahead, 1 m right.
  config::SessionDef session = DriverSession(dir, "time_s, steer, throttle, brake\n0.0, 0.0, 0.0, 1.0\n");
  config::NodeDef node = session.nodes[0];

  // The synthetic Pupil Capture: Pupil Remote (REP) and the backbone (XPUB, it sees the subscription).
  zmq::context_t zctx;
  zmq::socket_t remote(zctx, zmq::socket_type::rep), backbone(zctx, zmq::socket_type::xpub);
  remote.set(zmq::sockopt::linger, 0);
  backbone.set(zmq::sockopt::linger, 0);
  remote.bind("tcp://127.0.0.1:*");
  backbone.bind("tcp://127.0.0.1:*");
  const std::string backbone_endpoint = backbone.get(zmq::sockopt::last_endpoint);
  const std::string backbone_port = backbone_endpoint.substr(backbone_endpoint.rfind(':') + 1);
  node.gaze = remote.get(zmq::sockopt::last_endpoint);
  node.gaze_path = dir.Path() + "/gaze/seat_gaze.csv";
  DriverSeatModule seat(session, node, QuietLog());
  FakeContext context;
  seat.Step(StepInfo{0, 0}, context);
  REQUIRE(!context.published.empty());
  const Pose own = context.published.back().kinematics.pose;
  RemoteEntity car;
  car.state.id = VehicleId("other", 0);
  car.state.kind = protocol::EntityKind::kCar;
  car.displayed = Pose{own.position_m + own.orientation * Vec3(25, -1, 0), own.orientation};
  car.state.kinematics.pose = car.displayed;
  context.remote.push_back(car);

  // Where the car's box centre is in the seat window's symmetric 70 deg, 1280 x 720 view from the eye
  // (a pinhole projection written out here): x right, y up, 0..1.
  const Vec3 centre = Vec3(25, -1, 0) + BoxCentreInBody(car.state.box_size_m) - node.eye_m;
  const double half_w = std::tan(0.5 * node.view_hfov_deg * M_PI / 180.0);
  const double half_h = half_w * node.view_height_px / node.view_width_px;
  const double gx = 0.5 + 0.5 * (-centre.y() / centre.x()) / half_w, gy = 0.5 + 0.5 * (centre.z() / centre.x()) / half_h;
  // 200 samples at the car, 10 at the interior mirror's inset (top centre), 10 with low confidence.
  const int kCar = 200, kMirror = 10, kLow = 10;
  std::atomic<bool> streamed{false};
  std::thread pupil([&] {
    zmq::message_t request;
    remote.set(zmq::sockopt::rcvtimeo, 10000);
    if (!remote.recv(request) || request.to_string() != "SUB_PORT") return;
    remote.send(zmq::buffer(backbone_port), zmq::send_flags::none);
    backbone.set(zmq::sockopt::rcvtimeo, 10000);
    zmq::message_t sub;
    if (!backbone.recv(sub)) return;
    std::mt19937_64 rng(7);
    std::normal_distribution<double> jitter(0.0, 0.005);
    for (int k = 0; k < kCar + kMirror + kLow; ++k) {
      const bool mirror = k >= kCar && k < kCar + kMirror, low = k >= kCar + kMirror;
      const std::string payload = mirror ? PackPupilGaze(0.5, 0.92, 0.9, k * 0.005)
                                         : PackPupilGaze(gx + jitter(rng), gy + jitter(rng), low ? 0.3 : 0.9, k * 0.005);
      backbone.send(zmq::str_buffer("gaze.3d.01."), zmq::send_flags::sndmore);
      backbone.send(zmq::buffer(payload), zmq::send_flags::none);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    streamed = true;
  });
  // The seat steps on 1 ms of sim time per ms of wall time until every sample was taken (deadline 20 s).
  int64_t t = 1'000'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::vector<std::string> fields;
  // The last messages may still be on their way through the socket when the sender is done, so the seat
  // steps on for 500 ms of wall time after that before an empty queue ends the drive.
  std::optional<std::chrono::steady_clock::time_point> streamed_at;
  while (std::chrono::steady_clock::now() < deadline) {
    seat.Step(StepInfo{t, 1'000'000}, context);
    t += 1'000'000;
    if (streamed && !streamed_at) streamed_at = std::chrono::steady_clock::now();
    if (streamed_at && std::chrono::steady_clock::now() - *streamed_at > std::chrono::milliseconds(500) &&
        !seat.GazePending())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pupil.join();
  const int64_t last_ns = t - 1'000'000;
  seat.Summarize(fields);
  REQUIRE(streamed.load());

  std::ifstream f(node.gaze_path);
  std::string line;
  REQUIRE(std::getline(f, line));
  CHECK(line == GazeRecorder::Header());
  int rows = 0, on_car = 0, on_mirror = 0, low = 0;
  double last_sim = -1;
  const std::string car_name = EntityDisplayName(car.state.id, config::SessionNaming(session));
  while (std::getline(f, line)) {
    ++rows;
    std::vector<std::string> c;
    std::stringstream s(line);
    for (std::string v; std::getline(s, v, ',');) c.push_back(v);
    if (line.back() == ',') c.emplace_back();
    REQUIRE(c.size() == 9);
    // Sim times on the seat's 1 ms steps, never going back, within the drive.
    const double sim = std::stod(c[0]);
    CHECK(sim >= last_sim);
    CHECK(sim <= NsToS(last_ns) + 1e-9);
    last_sim = sim;
    on_car += c[5] == "entity" && c[6] == car_name && c[7] == std::to_string(car.state.id);
    on_mirror += c[5] == "mirror" && c[6] == "interior";
    low += c[5] == "low_confidence";
  }
  MESSAGE("gaze rows " << rows << ": on the car " << on_car << " of " << kCar << ", on the interior mirror " << on_mirror
                       << ", low confidence " << low << "; car at norm_pos (" << gx << ", " << gy << ")");
  CHECK(rows == kCar + kMirror + kLow);
  CHECK(on_car >= 0.95 * kCar);
  CHECK(on_mirror == kMirror);
  CHECK(low == kLow);
  REQUIRE(fields.size() >= 2);
  CHECK(fields.back().find("\"gaze_samples\":" + std::to_string(kCar + kMirror + kLow) + ",") != std::string::npos);
}
