#include "platoon/config/session.hpp"

#include <doctest/doctest.h>

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
  CHECK(s.server.time_port == 7401);
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
