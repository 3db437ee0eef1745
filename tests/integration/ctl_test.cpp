// platoon ctl as a process against real servers: platoon-server with nodes, and platoon replay. Every
// wait is a handshake (a ready file, an answer, an exit) with a deadline; nothing sleeps.
#include "../support/session_fixture.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

/// One run of `platoon ctl`: its exit status, output lines (stdout and stderr) and wall time.
struct CtlRun {
  int code = -1;
  std::vector<std::string> lines;
  double took_s = 0;
  /// The JSON object it printed (the line starting with '{'), "" when none.
  std::string Json() const {
    for (const auto& l : lines)
      if (!l.empty() && l[0] == '{') return l;
    return {};
  }
  bool Says(const std::string& text) const { return AnyLineContains(lines, text); }
};

CtlRun Ctl(uint16_t port, std::vector<std::string> args) {
  args.insert(args.begin(), {BinDir() + "/platoon", "ctl", "--server", "127.0.0.1:" + std::to_string(port)});
  const auto started = std::chrono::steady_clock::now();
  auto child = process::Child::Spawn(args);
  const auto st = RunToExit(child, 30s);
  REQUIRE_MESSAGE(st.has_value(), "platoon ctl did not exit within 30 s");
  CtlRun r{*st, child.Lines(), std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()};
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  INFO("platoon ctl output:\n" << all);
  CheckNoErrorLines(r.lines);
  return r;
}

// True when python3's json module reads `text` as one object.
bool ValidJson(const std::string& text) {
  auto py = process::Child::Spawn(
      {"/usr/bin/python3", "-c", "import json,sys; assert isinstance(json.loads(sys.argv[1]), dict)", text});
  return RunToExit(py, 10s) == 0;
}

std::string JsonValue(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\":(\"[^\"]*\"|[^,}\\]]*)"))) return {};
  return m[1].str();
}

process::Child StartNode(uint16_t port, const std::string& name, const std::string& role) {
  return process::Child::Spawn({BinDir() + "/platoon-node", "--name", name, "--role", role, "--server", "127.0.0.1",
                                "--port", std::to_string(port), "--exit-after", "120", "--log-level", "info"});
}

// Waits (deadline 10 s) for `ready` written by a server started with --ready-file; returns the control port.
uint16_t ReadyControlPort(process::Child& server, const std::string& ready) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!std::filesystem::exists(ready)) {
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "server did not become ready within 10 s");
    REQUIRE_MESSAGE(!server.TryWait(), "server exited before becoming ready");
    server.ReadLine(20ms);
  }
  std::ifstream f(ready);
  const std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::smatch m;
  REQUIRE(std::regex_search(json, m, std::regex("\"control\":(\\d+)")));
  return static_cast<uint16_t>(std::stoi(m[1]));
}

void StopAndCheck(process::Child& c, const std::string& who) {
  c.Signal(SIGTERM);
  CHECK(RunToExit(c, 10s).has_value());
  CheckNoErrorLines(c, who);
}

}  // namespace

TEST_CASE("ctl: status lists the nodes, pause and resume change the phase that the next status shows") {
  TempDir dir;
  auto server = StartServer(dir);
  const uint16_t port = server.control_port;
  auto alpha = StartNode(port, "alpha", "traffic");
  auto beta = StartNode(port, "beta", "observer");

  // Handshake: status until both nodes are listed (they join within a second or two).
  CtlRun status;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  do {
    status = Ctl(port, {"status"});
  } while (!(status.Says("alpha") && status.Says("beta")) && std::chrono::steady_clock::now() < deadline);
  CHECK(status.code == 0);
  CHECK(status.Says("alpha"));
  CHECK(status.Says("traffic"));
  CHECK(status.Says("beta"));
  CHECK(status.Says("session 'platoon'"));
  CHECK_FALSE(status.Says("ctl-"));  // the asking ctl leaves itself out

  auto json = Ctl(port, {"status", "--json"});
  CHECK(json.code == 0);
  CHECK(ValidJson(json.Json()));
  CHECK(JsonValue(json.Json(), "ok") == "true");
  CHECK(JsonValue(json.Json(), "phase") == "\"running\"");  // --autostart 0: running since the first join
  CHECK(JsonValue(json.Json(), "replay") == "false");
  CHECK(json.Json().find("\"name\":\"alpha\",\"role\":\"traffic\"") != std::string::npos);
  CHECK(json.Json().find("\"name\":\"beta\",\"role\":\"observer\"") != std::string::npos);

  // Pause, then another status sees it; a second pause finds it paused and says so too.
  auto pause = Ctl(port, {"pause"});
  CHECK(pause.code == 0);
  CHECK(pause.Says("session paused"));
  CHECK_FALSE(pause.Says("already"));
  CHECK(JsonValue(Ctl(port, {"--json", "status"}).Json(), "phase") == "\"paused\"");
  auto twice = Ctl(port, {"pause"});
  CHECK(twice.code == 0);
  CHECK(twice.Says("(it was already paused)"));

  auto resume = Ctl(port, {"resume", "--json"});
  CHECK(resume.code == 0);
  CHECK(JsonValue(resume.Json(), "phase") == "\"running\"");
  CHECK(JsonValue(resume.Json(), "phase_before") == "\"paused\"");
  CHECK(JsonValue(Ctl(port, {"status", "--json"}).Json(), "phase") == "\"running\"");

  // Stop; a stopped session cannot be paused: the server answers, and does nothing.
  CHECK(Ctl(port, {"stop"}).code == 0);
  CHECK(JsonValue(Ctl(port, {"status", "--json"}).Json(), "phase") == "\"stopped\"");
  auto refused = Ctl(port, {"pause", "--json"});
  CHECK(refused.code == 1);
  CHECK(refused.Says("the session is stopped: only a running session can be paused"));
  CHECK(JsonValue(refused.Json(), "failure") == "\"refused\"");
  CHECK(Ctl(port, {"resume"}).Says("only a paused session can be resumed"));

  // Start again from sim time 100 s.
  auto start = Ctl(port, {"start", "--at-sim", "100"});
  CHECK(start.code == 0);
  const auto restarted = Ctl(port, {"status", "--json"}).Json();
  CHECK(JsonValue(restarted, "phase") == "\"running\"");
  CHECK(std::stod(JsonValue(restarted, "sim_time_s")) >= 100.0);

  // Seek and speed need a replay.
  auto seek = Ctl(port, {"seek", "5"});
  CHECK(seek.code == 1);
  CHECK(seek.Says("is live, not a replay"));
  CHECK(Ctl(port, {"speed", "2"}).code == 1);

  StopAndCheck(alpha, "alpha");
  StopAndCheck(beta, "beta");
  StopAndCheck(server.child, "server");
  // Every ctl left: the server saw as many leaves as ctl joins.
  int joins = 0, leaves = 0;
  for (const auto& l : server.child.Lines()) {
    joins += l.find("'ctl-") != std::string::npos && l.find("joined") != std::string::npos;
    leaves += l.find("'ctl-") != std::string::npos && l.find("left: platoon ctl done") != std::string::npos;
  }
  CHECK(joins >= 12);
  CHECK(leaves == joins);
}

TEST_CASE("ctl: status of a lock-step session shows the step granted last, and it stands while paused") {
  TempDir dir;
  auto server = StartServer(dir, {"--lockstep"});
  const uint16_t port = server.control_port;
  auto alpha = StartNode(port, "alpha", "traffic");
  // Handshake: steps are granted once the member joined.
  auto granted = [](const std::string& j) { return !JsonValue(j, "step").empty() && JsonValue(j, "step") != "0"; };
  std::string json;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  do {
    json = Ctl(port, {"status", "--json"}).Json();
  } while (!granted(json) && std::chrono::steady_clock::now() < deadline);
  CHECK(JsonValue(json, "lockstep") == "true");
  CHECK(JsonValue(json, "step_s") == "0.010000");
  REQUIRE(std::stoull(JsonValue(json, "step")) > 0);

  REQUIRE(Ctl(port, {"pause"}).code == 0);
  const std::string paused = Ctl(port, {"status", "--json"}).Json();
  const uint64_t step = std::stoull(JsonValue(paused, "step"));
  CHECK(step >= std::stoull(JsonValue(json, "step")));
  CHECK(JsonValue(Ctl(port, {"status", "--json"}).Json(), "step") == std::to_string(step));  // no grants while paused
  CHECK(Ctl(port, {"status"}).Says("lock-step step " + std::to_string(step) + " (10.0 ms steps)"));
  CHECK(Ctl(port, {"resume"}).code == 0);
  StopAndCheck(alpha, "alpha");
  StopAndCheck(server.child, "server");
}

TEST_CASE("ctl: param get and set of server.broadcast_hz, and a value out of range is refused with the range") {
  TempDir dir;
  auto server = StartServer(dir);
  const uint16_t port = server.control_port;
  auto get = Ctl(port, {"param", "get", "server.broadcast_hz"});
  CHECK(get.code == 0);
  CHECK(get.Says("server.broadcast_hz = 60"));

  CHECK(Ctl(port, {"param", "set", "server.broadcast_hz", "30"}).code == 0);
  auto json = Ctl(port, {"param", "get", "server.broadcast_hz", "--json"});
  CHECK(json.code == 0);
  CHECK(ValidJson(json.Json()));
  CHECK(json.Json().find("\"path\":\"server.broadcast_hz\",\"value\":\"30\",\"writable\":true") != std::string::npos);

  auto zero = Ctl(port, {"--json", "param", "set", "server.broadcast_hz", "0"});
  CHECK(zero.code == 1);
  CHECK(zero.Says("server.broadcast_hz: expected a number in [1, 1000] Hz, got 0"));
  CHECK(JsonValue(zero.Json(), "failure") == "\"refused\"");
  CHECK(Ctl(port, {"param", "get", "server.broadcast_hz"}).Says("server.broadcast_hz = 30"));  // unchanged

  auto unknown = Ctl(port, {"param", "get", "server.no_such"});
  CHECK(unknown.code == 1);
  CHECK(unknown.Says("server.no_such: no such parameter"));
  auto read_only = Ctl(port, {"param", "set", "server.nodes", "3"});
  CHECK(read_only.code == 1);
  CHECK(read_only.Says("read-only"));

  auto list = Ctl(port, {"param", "list", "server.", "--json"});
  CHECK(list.code == 0);
  CHECK(ValidJson(list.Json()));
  CHECK(list.Json().find("\"path\":\"server.stale_grace_s\"") != std::string::npos);
  CHECK(list.Json().find("\"path\":\"session.name\"") == std::string::npos);  // outside the prefix
  auto table = Ctl(port, {"param", "list"});
  CHECK(table.code == 0);
  CHECK(table.Says("session.name"));
  CHECK(table.Says("rw"));
  StopAndCheck(server.child, "server");
}

TEST_CASE("ctl: a replay server accepts seek and speed, and status shows the new speed and sim time") {
  TempDir dir;
  // A 60 s recording of one car at 10 Hz.
  const std::string log = dir.Path() + "/drive.mcap";
  {
    std::string error;
    auto w = session_log::Writer::Open(log, &error);
    REQUIRE_MESSAGE(w, error);
    for (int i = 0; i <= 600; ++i) {
      protocol::WorldState world;
      world.sequence = static_cast<uint64_t>(i + 1);
      world.sim_time_ns = i * 100'000'000LL;
      world.server_time_ns = 1'000'000'000'000LL + world.sim_time_ns;
      world.phase = protocol::SessionPhase::kRunning;
      protocol::EntityState car;
      car.id = 1;
      car.owner_node = 1;
      car.kind = protocol::EntityKind::kCar;
      car.kinematics.stamp_ns = world.sim_time_ns;
      car.kinematics.pose.position_m = Vec3(0.1 * i, 0, 0);
      car.kinematics.velocity_mps = Vec3(1, 0, 0);
      world.entities = {car};
      REQUIRE(w->WriteWorld(world).Ok());
    }
    REQUIRE(w->Close().Ok());
  }
  const std::string ready = dir.Path() + "/ready.json";
  auto replay = process::Child::Spawn(
      {BinDir() + "/platoon", "replay", log, "--port", "0", "--bind", "127.0.0.1", "--ready-file", ready});
  const uint16_t port = ReadyControlPort(replay, ready);

  auto before = Ctl(port, {"status", "--json"});
  CHECK(before.code == 0);
  CHECK(JsonValue(before.Json(), "replay") == "true");
  CHECK(JsonValue(before.Json(), "speed") == "1");
  CHECK(Ctl(port, {"pause"}).code == 0);  // so that sim time stands where the seek puts it

  auto speed = Ctl(port, {"speed", "2.5"});
  CHECK(speed.code == 0);
  CHECK(speed.Says("replay speed 2.5x"));
  auto seek = Ctl(port, {"seek", "12"});
  CHECK(seek.code == 0);
  CHECK(seek.Says("replay at sim time 12.000 s"));

  auto after = Ctl(port, {"status", "--json"});
  CHECK(after.code == 0);
  CHECK(JsonValue(after.Json(), "speed") == "2.5");
  CHECK(JsonValue(after.Json(), "phase") == "\"paused\"");  // a seek keeps the phase
  CHECK(std::abs(std::stod(JsonValue(after.Json(), "sim_time_s")) - 12.0) < 1e-6);
  CHECK(Ctl(port, {"status"}).Says("replay at 2.5x"));
  auto resume = Ctl(port, {"resume", "--json"});
  CHECK(resume.code == 0);
  CHECK(std::stod(JsonValue(resume.Json(), "sim_time_s")) >= 12.0);
  StopAndCheck(replay, "replay");
}

TEST_CASE("ctl: a bad --server or command exits 2, no server exits 1 within the timeout, --help shows examples") {
  const std::string ctl = BinDir() + "/platoon";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--server", "127.0.0.1", "status"}, {"--server", "127.0.0.1:99999", "status"},
        {"--server", "host:port", "status"}, {"--server", ":7400", "status"}, {"status", "--timeout", "nan"},
        {"speed", "0"}, {"speed", "-1"}, {"seek"}, {"param", "set", "server.broadcast_hz"}, {"frobnicate"}, {}}) {
    std::vector<std::string> argv = {ctl, "ctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto c = process::Child::Spawn(argv);
    const auto st = RunToExit(c, 10s);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO("platoon ctl " << joined);
    CHECK(st == 2);
  }
  auto bad = process::Child::Spawn({ctl, "ctl", "--server", "127.0.0.1:99999", "status"});
  RunToExit(bad, 10s);
  CHECK(AnyLineContains(bad.Lines(), "--server: port 99999 is out of range 1..65535"));

  // Nothing listens on a port just freed: exit 1 once the timeout passed, saying so.
  const uint16_t nobody = FreePorts(1)[0];
  auto none = Ctl(nobody, {"--timeout", "1", "--json", "status"});
  CHECK(none.code == 1);
  CHECK(none.took_s < 4.0);
  CHECK(none.Says("no answer from the server at 127.0.0.1:" + std::to_string(nobody) + " within 1 s"));
  CHECK(JsonValue(none.Json(), "failure") == "\"timeout\"");

  auto help = process::Child::Spawn({ctl, "ctl", "--help"});
  CHECK(RunToExit(help, 10s) == 0);
  for (const char* example : {"platoon ctl status", "platoon ctl pause", "platoon ctl resume", "platoon ctl stop",
                              "platoon ctl start --at-sim", "platoon ctl seek", "platoon ctl speed",
                              "platoon ctl param list", "platoon ctl param get", "platoon ctl param set", "Exit codes"})
    CHECK_MESSAGE(AnyLineContains(help.Lines(), example), "--help lacks " << example);
}
