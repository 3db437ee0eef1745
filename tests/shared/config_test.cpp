#include "platoon/config/session.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace platoon;
using platoon::config::ConfigError;
using platoon::config::LoadSessionText;

namespace {
std::string ErrorOf(const std::string& text) {
  try {
    LoadSessionText(text, "lab.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("session config: a full file loads with its values") {
  const auto s = LoadSessionText(R"(
[session]
name = "lab"
server_host = "10.0.0.1"

[server]
broadcast_hz = 30
control_port = 8000

[clock]
max_slew_ppm = 5000

[faults]
drop = 0.1

[[node]]
name = "alpha"
role = "traffic"
drift_ppm = 250

[[node]]
name = "beta"
)",
                                 "lab.toml");
  CHECK(s.name == "lab");
  CHECK(s.server_host == "10.0.0.1");
  CHECK(s.server.broadcast_hz == 30);
  CHECK(s.server.control_port == 8000);
  CHECK(s.server.time_port == 8001);  // follows control_port (a fixed 7401 would collide with a second session's ports)
  CHECK(s.clock.max_slew_ppm == 5000);
  CHECK(s.faults.drop_probability == 0.1);
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].role == protocol::Role::kTraffic);
  CHECK(s.nodes[0].drift_ppm == 250);
  CHECK(s.nodes[1].role == protocol::Role::kObserver);
  CHECK(s.FindNode("beta") == &s.nodes[1]);
  CHECK(s.FindNode("gamma") == nullptr);
}

TEST_CASE("session config: an out-of-range value names file, line, key and expectation") {
  const std::string err = ErrorOf("[server]\n\nbroadcast_hz = -5\n");
  CHECK(err.find("lab.toml:3") != std::string::npos);
  CHECK(err.find("server.broadcast_hz") != std::string::npos);
  CHECK(err.find("expected a number in [1, 1000]") != std::string::npos);
  CHECK(err.find("-5") != std::string::npos);
}

TEST_CASE("session config: a wrong type names the key and what was given") {
  const std::string err = ErrorOf("[clock]\nmax_slew_ppm = \"fast\"\n");
  CHECK(err.find("lab.toml:2") != std::string::npos);
  CHECK(err.find("clock.max_slew_ppm: expected a number, got \"fast\"") != std::string::npos);
}

TEST_CASE("session config: an unknown key is an error, not a silent default") {
  const std::string err = ErrorOf("[server]\nbroadcast_hzz = 30\n");
  CHECK(err.find("lab.toml:2") != std::string::npos);
  CHECK(err.find("server.broadcast_hzz: unknown key") != std::string::npos);
}

TEST_CASE("session config: syntax errors give line and column") {
  const std::string err = ErrorOf("[server\n");
  CHECK(err.find("lab.toml:1:") != std::string::npos);
  CHECK(err.find("TOML syntax error") != std::string::npos);
}

TEST_CASE("session config: nodes need a unique name and a known role") {
  CHECK(ErrorOf("[[node]]\nrole = \"traffic\"\n").find("node[0].name: is required") != std::string::npos);
  CHECK(ErrorOf("[[node]]\nname = \"a\"\n[[node]]\nname = \"a\"\n").find("duplicate node name") != std::string::npos);
  CHECK(ErrorOf("[[node]]\nname = \"a\"\nrole = \"pilot\"\n").find("expected one of") != std::string::npos);
}

TEST_CASE("session config: a missing file is a clear error") {
  try {
    config::LoadSession("/nonexistent/session.toml");
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/session.toml") != std::string::npos);
  }
}

TEST_CASE("session config: lost timeout must exceed the heartbeat interval") {
  const std::string err = ErrorOf("[server]\nheartbeat_interval_s = 1.0\nlost_timeout_s = 0.5\n");
  CHECK(err.find("server.lost_timeout_s") != std::string::npos);
}

TEST_CASE("session config: [road] resolves its file next to the session file and checks its keys") {
  const auto s = LoadSessionText("[road]\nfile = \"roads/ring.toml\"\nroad_id = 1\n", "/labs/a/lab.toml");
  CHECK(s.road.file == "/labs/a/roads/ring.toml");
  CHECK(s.road.road_id == 1);
  CHECK(ErrorOf("[road]\nlanes = 0\n").find("road.lanes") != std::string::npos);
  CHECK(ErrorOf("[road]\nlenght = 5\n").find("road.lenght: unknown key") != std::string::npos);
  CHECK(ErrorOf("[[node]]\nname = \"t\"\ntraffic_model = \"highway\"\n").find("node[0].traffic_model") != std::string::npos);
}

// --- Operations: ports, files that are not config files, checks made before a run ---

namespace {
std::string ValidateErrorOf(const config::SessionDef& s) {
  try {
    config::ValidateSession(s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A fresh directory under /tmp, removed with the object.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/platoon_config_test_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

const char* kRoad = "[[road]]\nid = 1\nlanes_right = 2\n[[road.section]]\nlength_m = 200.0\n";
}  // namespace

TEST_CASE("session config: the time, world and state ports follow control_port unless given") {
  const auto moved = LoadSessionText("[server]\ncontrol_port = 7500\n", "lab.toml");
  CHECK(moved.server.control_port == 7500);
  CHECK(moved.server.time_port == 7501);
  CHECK(moved.server.world_port == 7502);
  CHECK(moved.server.state_port == 7503);
  // A port given explicitly stays; the others still follow.
  const auto mixed = LoadSessionText("[server]\ncontrol_port = 7500\nworld_port = 9000\n", "lab.toml");
  CHECK(mixed.server.time_port == 7501);
  CHECK(mixed.server.world_port == 9000);
  CHECK(mixed.server.state_port == 7503);
  // Port 0 (any free port) is followed by 0, never by ports 1..3.
  const auto any = LoadSessionText("[server]\ncontrol_port = 0\n", "lab.toml");
  CHECK(any.server.time_port == 0);
  CHECK(any.server.world_port == 0);
  CHECK(any.server.state_port == 0);
  // Defaults unchanged.
  const auto plain = LoadSessionText("", "lab.toml");
  CHECK(plain.server.control_port == 7400);
  CHECK(plain.server.state_port == 7403);
}

TEST_CASE("session config: a control_port without room for its three followers is refused") {
  const std::string err = ErrorOf("[server]\ncontrol_port = 65535\n");
  CHECK(err.find("lab.toml:2: server.control_port") != std::string::npos);
  CHECK(err.find("at most 65532") != std::string::npos);
  CHECK(ErrorOf("[server]\ncontrol_port = 65533\ntime_port = 7401\n").find("at most 65532") != std::string::npos);
  CHECK(ErrorOf("[server]\ncontrol_port = 65532\n").empty());
  // All three given: nothing follows, so the control port may be any port.
  CHECK(ErrorOf("[server]\ncontrol_port = 65535\ntime_port = 7401\nworld_port = 7402\nstate_port = 7403\n").empty());
}

TEST_CASE("session config: a FIFO, a device or a huge file is refused at once, not read") {
  ScratchDir dir;
  const std::string fifo = dir.path + "/session.toml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens the FIFO: a loader that reads it would block here forever.
  try {
    config::LoadSession(fifo);
    FAIL("a FIFO was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == fifo + ": not a regular file");
  }
  try {
    config::LoadSession("/dev/zero");
    FAIL("/dev/zero was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/dev/zero: not a regular file");
  }
  try {
    config::LoadSession(dir.path);
    FAIL("a directory was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("not a regular file") != std::string::npos);
  }
  // A sparse file of 17 MiB: refused by its size before a byte is parsed.
  const std::string big = dir.Write("big.toml", "");
  std::filesystem::resize_file(big, 17u << 20);
  try {
    config::LoadSession(big);
    FAIL("a 17 MiB file was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("too large for a config file (at most 16 MiB)") != std::string::npos);
  }
  // A road file is read by the same loader.
  config::RoadSessionDef road;
  road.file = fifo;
  config::SessionDef s;
  s.file = "lab.toml";
  s.has_road = true;
  s.road = road;
  CHECK(ValidateErrorOf(s).find("not a regular file") != std::string::npos);
}

TEST_CASE("session config: ValidateSession refuses what a run would refuse at start, naming file, line and key") {
  ScratchDir dir;
  dir.Write("ring.toml", kRoad);
  dir.Write("nan.toml", "[[road]]\nid = 1\nlanes_right = 2\nstart_x_m = nan\n[[road.section]]\nlength_m = 200.0\n");
  auto load = [&](const std::string& text) { return config::LoadSession(dir.Write("lab.toml", text)); };

  // A good session passes.
  const std::string nodes = "[[node]]\nname = \"ego\"\nrole = \"traffic\"\nvehicles = 2\n";
  const std::string sensor = "[[node]]\nname = \"lidar\"\nrole = \"sensor\"\nattach_to = \"ego:1\"\n"
                             "[[node.sensor]]\nid = \"imu\"\ntype = \"imu\"\n";
  CHECK(ValidateErrorOf(load("[road]\nfile = \"ring.toml\"\n" + nodes + sensor)) == "");

  // attach_to naming no node of the session: the line of the key.
  const std::string nobody = ValidateErrorOf(load(nodes + "[[node]]\nname = \"lidar\"\nrole = \"sensor\"\n"
                                                          "attach_to = \"nobody\"\n[[node.sensor]]\nid = \"i\"\ntype = \"imu\"\n"));
  CHECK(nobody.find(dir.path + "/lab.toml:8: node[1].attach_to") != std::string::npos);
  CHECK(nobody.find("no node named \"nobody\"") != std::string::npos);
  CHECK(nobody.find("nodes with vehicles: ego") != std::string::npos);
  // A vehicle index the node does not have, and a node without vehicles.
  CHECK(ValidateErrorOf(load(nodes + "[[node]]\nname = \"lidar\"\nrole = \"sensor\"\nattach_to = \"ego:2\"\n"
                                     "[[node.sensor]]\nid = \"i\"\ntype = \"imu\"\n"))
            .find("drives 2 vehicle(s), so index 2 does not exist") != std::string::npos);
  CHECK(ValidateErrorOf(load("[[node]]\nname = \"obs\"\n[[node]]\nname = \"lidar\"\nrole = \"sensor\"\n"
                             "attach_to = \"obs\"\n[[node.sensor]]\nid = \"i\"\ntype = \"imu\"\n"))
            .find("drives no vehicle") != std::string::npos);
  // Sensor and fusion nodes without their tables.
  CHECK(ValidateErrorOf(load(nodes + "[[node]]\nname = \"lidar\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"))
            .find("lab.toml:5: node[1]: a sensor node needs at least one [[node.sensor]]") != std::string::npos);
  CHECK(ValidateErrorOf(load(nodes + "[[node]]\nname = \"fuse\"\nrole = \"fusion\"\nattach_to = \"ego\"\n"))
            .find("a fusion node needs a [node.fusion] table") != std::string::npos);

  // The road: a missing file, a NaN value in it (with the road file's line and key), a road_id it lacks.
  const std::string missing = ValidateErrorOf(load("[road]\nfile = \"gone.toml\"\n" + nodes));
  CHECK(missing.find("lab.toml:2: road.file: " + dir.path + "/gone.toml: cannot read config file") != std::string::npos);
  const std::string nan = ValidateErrorOf(load("[road]\nfile = \"nan.toml\"\n" + nodes));
  CHECK(nan.find("nan.toml:4: road[0].start_x_m") != std::string::npos);
  CHECK(ValidateErrorOf(load("[road]\nfile = \"ring.toml\"\nroad_id = 7\n" + nodes)).find("no road with id 7") !=
        std::string::npos);
}

TEST_CASE("session config: [node.data_write] reads rate, variables and path, and refuses bad ones naming file, line and key") {
  const std::string driver = "[[node]]\nname = \"robot\"\nrole = \"driver\"\n";
  // Defaults: 100 Hz, every column with sim_time first, data/<node>.csv from the working directory.
  const auto d = LoadSessionText(driver + "[node.data_write]\n", "lab.toml");
  REQUIRE(d.nodes[0].data_write.has_value());
  CHECK(d.nodes[0].data_write->rate_hz == 100);
  CHECK(d.nodes[0].data_write->PeriodNs() == 10'000'000);
  CHECK(d.nodes[0].data_write->columns.size() == data::kColumnCount);
  CHECK(d.nodes[0].data_write->columns.front() == data::Column::kSimTime);
  CHECK(d.nodes[0].data_write->path == "data/robot.csv");
  CHECK_FALSE(LoadSessionText(driver, "lab.toml").nodes[0].data_write.has_value());
  // Given: sim_time is first whether listed or not; names with their unit are accepted too.
  const auto g = LoadSessionText(driver + "[node.data_write]\nrate_hz = 250\nvariables = [\"ttc\", \"speed_mps\", \"sim_time\"]\n"
                                          "path = \"/tmp/{node}/{node}.csv\"\n", "lab.toml");
  CHECK(g.nodes[0].data_write->PeriodNs() == 4'000'000);
  CHECK(g.nodes[0].data_write->columns == std::vector<data::Column>{data::Column::kSimTime, data::Column::kTtc, data::Column::kSpeed});
  CHECK(g.nodes[0].data_write->path == "/tmp/robot/robot.csv");
  CHECK(LoadSessionText(driver + "[node.data_write]\nrate_hz = 0.5\n", "lab.toml").nodes[0].data_write->PeriodNs() == 2'000'000'000);

  // Refused, each with file, line, key and what was expected.
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = 0\n").find("lab.toml:5: node[0].data_write.rate_hz: expected a rate whose period is a whole number of 1 ms") == 0);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = -5\n").find("node[0].data_write.rate_hz: expected a number in [0, 1000], got -5") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = 2000\n").find("data_write.rate_hz: expected a number in [0, 1000]") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = nan\n").find("data_write.rate_hz") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = inf\n").find("data_write.rate_hz") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = 300\n").find("1000 / rate_hz an integer") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate_hz = \"fast\"\n").find("data_write.rate_hz: expected a number") != std::string::npos);
  const std::string unknown = ErrorOf(driver + "[node.data_write]\nvariables = [\"speed\", \"gear\"]\n");
  CHECK(unknown.find("lab.toml:5: node[0].data_write.variables: unknown variable \"gear\" (known: sim_time, x, y, z, yaw, speed,") == 0);
  CHECK(unknown.find("headway, time_headway, ttc, next_sign_type, next_sign_value, next_sign_distance, last_sign_type, "
                     "last_sign_value, last_sign_distance)") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nvariables = []\n").find("data_write.variables: expected at least one variable") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nvariables = [\"x\", \"x_m\"]\n").find("\"x_m\" is listed twice") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nvariables = [1]\n").find("data_write.variables: element 0: expected a string") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\npath = \"\"\n").find("data_write.path: expected a CSV file path") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\npath = \"out/\"\n").find("data_write.path: expected a CSV file path") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\npath = \"{name}.csv\"\n").find("data_write.path: the only placeholder is {node}") != std::string::npos);
  CHECK(ErrorOf(driver + "[node.data_write]\nrate = 100\n").find("lab.toml:5: node[0].data_write.rate: unknown key") == 0);
  CHECK(ErrorOf("[[node]]\nname = \"t\"\nrole = \"traffic\"\n[node.data_write]\n").find("node[0].data_write: is a driver key") != std::string::npos);
}
