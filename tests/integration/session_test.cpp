// Multi-process tests over loopback: real platoon-server, platoon-node and platoon processes.
// Every wait is a handshake (a ready file, a log line, an exit) with a deadline; nothing sleeps.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <zmq.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

process::Child StartNode(uint16_t port, const std::string& name, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {BinDir() + "/platoon-node", "--name", name, "--server", "127.0.0.1",
                                   "--port", std::to_string(port)};
  args.insert(args.end(), extra.begin(), extra.end());
  return process::Child::Spawn(args);
}

}  // namespace

TEST_CASE("clock over loopback: nodes at +1000 and -1000 ppm keep p99 error within 0.5 ms, never backwards") {
  TempDir dir;
  auto server = StartServer(dir);
  // The nodes measure their true error against CLOCK_MONOTONIC, which is the server's reference on this host.
  const std::vector<std::string> common = {"--truth-check", "--truth-warmup", "15", "--exit-after", "30",
                                           "--log-level", "info"};
  auto fast_args = common, slow_args = common;
  fast_args.insert(fast_args.end(), {"--drift-ppm", "1000"});
  slow_args.insert(slow_args.end(), {"--drift-ppm", "-1000"});
  auto fast = StartNode(server.control_port, "fast", fast_args);
  auto slow = StartNode(server.control_port, "slow", slow_args);
  for (auto* node : {&fast, &slow}) {
    const auto st = RunToExit(*node, 60s);
    REQUIRE_MESSAGE(st.has_value(), "node did not finish within 60 s");
    CHECK(*st == 0);
    const auto& lines = node->Lines();
    INFO("summary: " << (lines.empty() ? "" : lines.back()));
    MESSAGE("true error p50 " << SummaryValue(lines, "error_p50_ns").value_or(-1) << " ns, p99 "
                              << SummaryValue(lines, "error_p99_ns").value_or(-1) << " ns over "
                              << SummaryValue(lines, "truth_samples").value_or(0) << " ticks");
    CHECK(SummaryValue(lines, "clock_set") == 1.0);
    CHECK(SummaryValue(lines, "backwards") == 0.0);
    CHECK(SummaryValue(lines, "over_bound") == 0.0);
    CHECK(SummaryValue(lines, "truth_samples").value_or(0) > 5000);
    CHECK(SummaryValue(lines, "error_p99_ns").value_or(1e18) <= 500'000);
    CHECK(std::abs(std::abs(SummaryValue(lines, "drift_ppm").value_or(0)) - 1000) < 50);
    CheckNoErrorLines(*node, "node");
  }
  CheckNoErrorLines(server.child, "server");
}

TEST_CASE("protocol: a node speaking another version is refused clearly at both ends") {
  TempDir dir;
  auto server = StartServer(dir);
  auto node = StartNode(server.control_port, "old", {"--protocol-version", "99"});
  const auto st = RunToExit(node, 15s);
  REQUIRE(st.has_value());
  CHECK(*st == 3);
  CHECK(AnyLineContains(node.Lines(), "protocol version mismatch"));
  CHECK(AnyLineContains(node.Lines(), "server refused"));
  CHECK(server.child.WaitForLine("refused join", 5s).has_value());
  // The refusal is the one error each end may log.
  CheckNoErrorLines(node, "node", {"server refused"});
  CheckNoErrorLines(server.child, "server", {"refused join from old"});
}

TEST_CASE("server: garbage, truncated and wrong-version bytes are counted and the server keeps serving") {
  TempDir dir;
  auto server = StartServer(dir);
  const std::string host = "tcp://127.0.0.1:";
  {
    zmq::context_t ctx(1);
    zmq::socket_t control(ctx, zmq::socket_type::dealer), time(ctx, zmq::socket_type::dealer),
        state(ctx, zmq::socket_type::push);
    for (auto* s : {&control, &time, &state}) s->set(zmq::sockopt::linger, 2000);
    control.connect(host + std::to_string(server.control_port));
    time.connect(host + std::to_string(server.control_port + 0));  // replaced below once ports are known
    std::mt19937 rng(3);
    // Learn the other ports from a real join.
    control.send(zmq::buffer(protocol::Encode(ObserverJoin("probe"))));
    zmq::message_t reply;
    control.set(zmq::sockopt::rcvtimeo, 5000);
    REQUIRE(control.recv(reply));
    auto welcome = protocol::Decode(reply.to_string());
    REQUIRE(welcome.message.has_value());
    const auto w = std::get<protocol::Welcome>(*welcome.message);
    time.disconnect(host + std::to_string(server.control_port));
    time.connect(host + std::to_string(w.time_port));
    state.connect(host + std::to_string(w.state_port));
    const std::string valid = protocol::Encode(protocol::NodeState{w.node_id, 1, {protocol::EntityState{}}});
    int sent = 0;
    for (int i = 0; i < 300; ++i) {
      std::string garbage(8 * (1 + rng() % 40), '\0');
      for (auto& c : garbage) c = static_cast<char>(rng());
      for (auto* s : {&control, &time, &state}) {
        s->send(zmq::buffer(garbage));
        ++sent;
      }
      // Truncated valid messages.
      state.send(zmq::buffer(valid.substr(0, 8 * (rng() % (valid.size() / 8)))));
      ++sent;
    }
    // Wrong-version messages that are not joins.
    control.send(zmq::buffer(protocol::EncodeWithVersion(protocol::Heartbeat{w.node_id, 0, 0, 0, 0}, 42)));
    MESSAGE("sent " << sent << " bad messages");
  }
  // The server still serves: a node joins, syncs and receives world states.
  auto node = StartNode(server.control_port, "after", {"--exit-after", "3"});
  const auto st = RunToExit(node, 20s);
  REQUIRE(st.has_value());
  CHECK(*st == 0);
  CHECK(SummaryValue(node.Lines(), "clock_set") == 1.0);
  CHECK(SummaryValue(node.Lines(), "world_received").value_or(0) > 50);
  CheckNoErrorLines(node, "node");
  server.child.Signal(SIGTERM);
  const auto line = server.child.WaitForLine("refused:", 10s);
  REQUIRE(line.has_value());
  std::smatch m;
  REQUIRE(std::regex_search(*line, m, std::regex(R"(server\.refused\.undecodable (\d+), server\.refused\.version (\d+))")));
  CHECK(std::stoi(m[1]) >= 900);  // 3 x 300 random, plus the truncations that fail
  CHECK(std::stoi(m[2]) >= 1);
  REQUIRE(server.child.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server.child, "server") == std::optional<int>(0));
  // Bad bytes are counted and logged below error level: they are the network's fault, not the server's.
  CheckNoErrorLines(server.child, "server");
}

TEST_CASE("config: a bad session file exits 2 naming file, line and key") {
  TempDir dir;
  const std::string path = dir.Write("bad.toml", "[session]\nname = \"x\"\n[server]\nbroadcast_hz = -5\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{BinDir() + "/platoon-server", "--config", path},
        std::vector<std::string>{BinDir() + "/platoon-node", "--config", path, "--name", "a"}}) {
    auto c = process::Child::Spawn(args);
    const auto st = RunToExit(c, 10s);
    REQUIRE(st.has_value());
    CHECK(*st == 2);
    CHECK(AnyLineContains(c.Lines(), path + ":4: server.broadcast_hz: expected a number in [1, 1000], got -5"));
    CheckNoErrorLines(c, args[0], {path + ":4: server.broadcast_hz"});
  }
  auto c = process::Child::Spawn({BinDir() + "/platoon", "check", path});
  CHECK(RunToExit(c, 10s) == std::optional<int>(2));
  CheckNoErrorLines(c, "platoon check", {path + ":4: server.broadcast_hz"});
}

namespace {
std::string LauncherSession(const TempDir& dir) {
  const auto p = FreePorts(4);
  return dir.Write("session.toml", "[session]\nname = \"t\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                                       std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                                       "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " +
                                       std::to_string(p[3]) + "\n[[node]]\nname = \"n1\"\n[[node]]\nname = \"n2\"\n");
}
}  // namespace

TEST_CASE("launcher: SIGTERM stops every process cleanly and exits 0") {
  TempDir dir;
  const std::string session = LauncherSession(dir);
  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session});
  REQUIRE(launcher.WaitForLine("n1 ", 15s).has_value());
  REQUIRE(launcher.WaitForLine("joined session", 15s).has_value());
  launcher.Signal(SIGTERM);
  const auto st = RunToExit(launcher, 15s);
  REQUIRE(st.has_value());
  CHECK(*st == 0);
  CHECK(AnyLineContains(launcher.Lines(), "server stopping"));
  CHECK(FindPid({session, "platoon-node"}) == 0);
  CHECK(FindPid({session, "platoon-server"}) == 0);
  CheckNoErrorLines(launcher, "platoon run");
}

TEST_CASE("launcher: a required process that dies stops the session with a clear non-zero exit") {
  TempDir dir;
  const std::string session = LauncherSession(dir);
  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session});
  REQUIRE(launcher.WaitForLine("joined session", 15s).has_value());
  const int pid = FindPid({session, "platoon-node", "--name n2"});
  REQUIRE(pid > 0);
  kill(pid, SIGKILL);
  const auto st = RunToExit(launcher, 15s);
  REQUIRE(st.has_value());
  CHECK(*st != 0);
  CHECK(AnyLineContains(launcher.Lines(), "required process 'n2' exited with status 137"));
  CHECK(FindPid({session, "platoon-server"}) == 0);
  CheckNoErrorLines(launcher, "platoon run");
}

TEST_CASE("launcher: a process that ignores SIGTERM is described thread by thread, killed after 5 s, and the run fails") {
  // Stand-ins for the two binaries (--bin-dir): a server that says it listens and stops on SIGTERM, and a
  // node that ignores SIGTERM.
  TempDir dir;
  const std::string session = LauncherSession(dir);
  const std::string bin = dir.Path() + "/bin";
  std::filesystem::create_directories(bin);
  const auto script = [&](const std::string& name, const std::string& body) {
    const std::string path = bin + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  };
  script("platoon-server", "echo 'listening on 127.0.0.1'\ntrap 'exit 0' TERM\nwhile :; do sleep 0.1; done\n");
  script("platoon-node", "trap '' TERM\necho ready\nwhile :; do sleep 0.1; done\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--bin-dir", bin, "--duration", "1"});
  const auto st = RunToExit(launcher, 30s);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(st.has_value());
  CHECK(*st == 1);
  CHECK(took_s >= 5.5);  // 1 s of session, then the 5 s grace
  CHECK(took_s < 20);
  const auto& lines = launcher.Lines();
  CHECK(AnyLineContains(lines, "platoon: 'n1' did not stop within 5 s; killing it. Its threads:"));
  CHECK(AnyLineContains(lines, "platoon: 'n2' did not stop within 5 s; killing it. Its threads:"));
  CHECK_FALSE(AnyLineContains(lines, "'server' did not stop"));
  // One line per thread of the shell: its tid, its name, the scheduler's state and where it waits.
  const std::regex thread_line(R"(^[0-9]+ platoon-node: state [A-Z], wchan [a-z_0-9]*, cpu [0-9.]+ ms)");
  CHECK(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return std::regex_search(l, thread_line); }) >= 2);
}
