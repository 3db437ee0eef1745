// The operator role of a loopback-only session (issue 40, finding 1): a real platoon-server and node, a
// local process without the operator token (this test, on a plain DEALER), and platoon ctl, which finds the
// token the server wrote. Every wait is a reply or a log line with a deadline.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <zmq.hpp>

#include <filesystem>
#include <thread>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

using OpTokClock = std::chrono::steady_clock;

// `argv` run with XDG_RUNTIME_DIR = `xdg` (the token folder private to this test) and `env` set too.
std::vector<std::string> OpTokEnv(const std::string& xdg, std::vector<std::string> argv,
                                  const std::vector<std::string>& env = {}) {
  std::vector<std::string> full = {"/usr/bin/env", "-u", "PLATOON_OPERATOR_TOKEN_FILE", "XDG_RUNTIME_DIR=" + xdg};
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

struct OpTokCtl {
  int code = -1;
  std::vector<std::string> lines;
  bool Says(const std::string& text) const { return AnyLineContains(lines, text); }
  std::string All() const {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }
};

OpTokCtl OpTokRunCtl(const std::string& xdg, uint16_t port, std::vector<std::string> args,
                     const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), {BinDir() + "/platoon", "ctl", "--server", "127.0.0.1:" + std::to_string(port)});
  auto child = process::Child::Spawn(OpTokEnv(xdg, args, env));
  const auto st = RunToExit(child, 30s);
  REQUIRE_MESSAGE(st.has_value(), "platoon ctl did not exit within 30 s");
  return OpTokCtl{*st, child.Lines()};
}

// The first reply of type T to `bytes` sent on `dealer` (others skipped); nullopt after 5 s.
template <class T>
std::optional<T> OpTokAsk(zmq::socket_t& dealer, const std::string& bytes) {
  dealer.send(zmq::buffer(bytes), zmq::send_flags::none);
  for (const auto deadline = OpTokClock::now() + 5s; OpTokClock::now() < deadline;) {
    zmq::message_t reply;
    if (!dealer.recv(reply)) continue;
    const auto d = protocol::Decode(reply.to_string());
    if (const T* t = d.message ? std::get_if<T>(&*d.message) : nullptr) return *t;
  }
  return std::nullopt;
}

std::string OpTokParam(zmq::socket_t& tool, const std::string& path) {
  const auto r = OpTokAsk<protocol::ParamReply>(tool, protocol::Encode(protocol::ParamGet{path, 0}));
  REQUIRE_MESSAGE(r.has_value(), "no answer for " << path);
  REQUIRE_MESSAGE(r->ok, path << ": " << r->error);
  return r->param.value;
}

}  // namespace

TEST_CASE("operator over loopback: a one-byte-changed status request from a process without the token cannot rewind the session, ctl with it restarts with a reason") {
  TempDir dir;
  const std::string xdg = dir.Path() + "/xdg";
  const auto ports = FreePorts(4);
  const std::string session = dir.Write(
      "session.toml", "[session]\nname = \"optok\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                          std::to_string(ports[0]) + "\ntime_port = " + std::to_string(ports[1]) +
                          "\nworld_port = " + std::to_string(ports[2]) + "\nstate_port = " + std::to_string(ports[3]) +
                          "\n[[node]]\nname = \"n1\"\nrole = \"traffic\"\nvehicles = 2\nstatus_interval_s = 0\n");
  auto server = process::Child::Spawn(
      OpTokEnv(xdg, {BinDir() + "/platoon-server", "--config", session, "--autostart", "0"}));
  REQUIRE(server.WaitForLine("listening on", 10s));
  REQUIRE(server.WaitForLine("operator token in", 10s));
  // The token: a file only this user reads, in a folder only this user enters.
  const std::string token_file = xdg + "/platoon/operator." + std::to_string(ports[0]);
  struct stat st {};
  REQUIRE_MESSAGE(stat(token_file.c_str(), &st) == 0, token_file << " is missing");
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 65);  // 64 hex digits and a newline: 256 bits
  REQUIRE(stat((xdg + "/platoon").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto node = process::Child::Spawn(OpTokEnv(xdg, {BinDir() + "/platoon-node", "--config", session, "--name", "n1"}));

  // A plain local client that never joined and holds no token: status reads are open to it.
  zmq::context_t ctx(1);
  zmq::socket_t tool(ctx, zmq::socket_type::dealer);
  tool.set(zmq::sockopt::linger, 0);
  tool.set(zmq::sockopt::rcvtimeo, 500);
  tool.connect("tcp://127.0.0.1:" + std::to_string(ports[0]));
  const std::string status_request = protocol::Encode(protocol::StatusRequest{});
  auto snapshot = [&] {
    const auto w = OpTokAsk<protocol::WorldState>(tool, status_request);
    REQUIRE_MESSAGE(w.has_value(), "no snapshot for a StatusRequest within 5 s");
    return *w;
  };
  protocol::WorldState w;
  for (const auto deadline = OpTokClock::now() + 20s; OpTokClock::now() < deadline;) {
    w = snapshot();
    if (w.phase == protocol::SessionPhase::kRunning && w.sim_time_ns >= 1'500'000'000) break;
    std::this_thread::sleep_for(50ms);  // a poll's pace: a tool asking without pause is rate-limited
  }
  REQUIRE_MESSAGE(w.sim_time_ns >= 1'500'000'000, "the session did not run 1.5 s within 20 s");
  const std::string refused_before = OpTokParam(tool, "server.refused.not_operator");
  CHECK(refused_before == "0");

  // The frame: the 32-byte StatusRequest with byte 22 changed from 0x10 to 0x09, which decodes as
  // a SessionControl start at sim time 0.
  std::string flipped = status_request;
  REQUIRE(flipped.size() == 32);
  REQUIRE(static_cast<unsigned char>(flipped[22]) == 0x10);
  flipped[22] = 0x09;
  const auto decoded = protocol::Decode(flipped);
  REQUIRE(decoded.error == protocol::DecodeError::kNone);
  REQUIRE(decoded.message.has_value());
  REQUIRE(std::holds_alternative<protocol::SessionControl>(*decoded.message));
  const auto& control = std::get<protocol::SessionControl>(*decoded.message);
  CHECK(control.command == protocol::SessionControl::Command::kStart);
  CHECK(control.at_server_time_ns == 0);
  CHECK(control.sim_t0_ns == 0);
  const auto answer = OpTokAsk<protocol::SessionStatus>(tool, flipped);
  REQUIRE_MESSAGE(answer.has_value(), "no answer to the changed frame");
  CHECK(answer->phase == protocol::SessionPhase::kRunning);
  CHECK(answer->error.find("has not presented the operator token") != std::string::npos);
  CHECK(answer->error.find(token_file) != std::string::npos);
  // Sim time never moves back, and the refusal is counted once, exactly.
  int64_t last_sim = w.sim_time_ns;
  bool backwards = false;
  for (const auto until = OpTokClock::now() + 1500ms; OpTokClock::now() < until;) {
    const auto now = snapshot();
    if (now.sim_time_ns < last_sim) {
      MESSAGE("sim time went back from " << last_sim << " to " << now.sim_time_ns << " ns");
      backwards = true;
    }
    CHECK(now.phase == protocol::SessionPhase::kRunning);
    last_sim = now.sim_time_ns;
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(backwards);
  CHECK(last_sim > w.sim_time_ns + 1'000'000'000);
  CHECK(OpTokParam(tool, "server.refused.not_operator") == "1");

  // ctl finds the token by itself: a start of the running session is refused as already running...
  const auto start = OpTokRunCtl(xdg, ports[0], {"start"});
  INFO("ctl start:\n" << start.All());
  CHECK(start.code == 1);
  CHECK(start.Says("already running"));
  // ...a restart needs a reason (usage, exit 2)...
  const auto bare = OpTokRunCtl(xdg, ports[0], {"restart"});
  INFO("ctl restart:\n" << bare.All());
  CHECK(bare.code == 2);
  CHECK(bare.Says("--reason TEXT is required"));
  // ...and with one it begins the session again, logged with who and why.
  const int64_t sim_before_restart = snapshot().sim_time_ns;
  const auto restart = OpTokRunCtl(xdg, ports[0], {"restart", "--reason", "operator test: run 2"});
  INFO("ctl restart --reason:\n" << restart.All());
  CHECK(restart.code == 0);
  CHECK(restart.Says("session restarted at sim time 0.000 s"));
  REQUIRE(server.WaitForLine("session restarted by 'ctl-", 5s));
  CHECK(AnyLineContains(server.Lines(), ": operator test: run 2 (was running at sim time"));
  CHECK(snapshot().sim_time_ns < sim_before_restart);
  CHECK(OpTokParam(tool, "server.refused.not_operator") == "1");
  // A token file that is not there: refused, and ctl says where it looked.
  const auto lost = OpTokRunCtl(xdg, ports[0], {"pause"}, {"PLATOON_OPERATOR_TOKEN_FILE=" + dir.Path() + "/no-token"});
  INFO("ctl pause without a token:\n" << lost.All());
  CHECK(lost.code == 1);
  CHECK(lost.Says("ctl found no operator token: looked in " + dir.Path() + "/no-token (not there), named by "
                  "PLATOON_OPERATOR_TOKEN_FILE"));
  CHECK(OpTokParam(tool, "server.refused.not_operator") == "2");
  CHECK(snapshot().phase == protocol::SessionPhase::kRunning);

  node.Signal(SIGTERM);
  WaitForStopped(node, "node");
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  CHECK_FALSE(std::filesystem::exists(token_file));
  CheckNoErrorLines(server, "server");
}
