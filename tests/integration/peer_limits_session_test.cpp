// Limits per source over loopback, against a real platoon-server: join churn of new names from one
// address, Joins whose names break the name rule, and 50 connections of status requests. The hostile
// peer is this test process on plain ZeroMQ sockets; the real nodes are platoon-node processes.
// Waits are handshakes on log lines and replies with deadlines.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/text/name_rule.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <zmq.hpp>

#include <fstream>
#include <thread>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;
using PlsClock = std::chrono::steady_clock;

namespace {

struct PlsPorts {
  uint16_t control, time, world, state;
};

PlsPorts PlsFreePorts() {
  const auto p = FreePorts(4);
  return PlsPorts{p[0], p[1], p[2], p[3]};
}

// A session on free loopback ports with `nodes` (name, role) of 2 vehicles each.
std::string PlsSession(const TempDir& dir, const PlsPorts& p, const std::string& server_extra,
                       const std::vector<std::pair<std::string, std::string>>& nodes) {
  std::string text = "[session]\nname = \"limits-test\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                     std::to_string(p.control) + "\ntime_port = " + std::to_string(p.time) + "\nworld_port = " +
                     std::to_string(p.world) + "\nstate_port = " + std::to_string(p.state) + "\n" + server_extra;
  for (const auto& [name, role] : nodes)
    text += "[[node]]\nname = \"" + name + "\"\nrole = \"" + role + "\"\nvehicles = 2\nstatus_interval_s = 0\n";
  return dir.Write("session.toml", text);
}

zmq::socket_t PlsDealer(zmq::context_t& ctx, uint16_t port, int linger_ms = 0) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, linger_ms);
  s.set(zmq::sockopt::rcvtimeo, 2000);
  s.set(zmq::sockopt::sndtimeo, 10000);
  s.connect("tcp://127.0.0.1:" + std::to_string(port));
  return s;
}

template <class T>
std::optional<T> PlsAsk(zmq::socket_t& dealer, const protocol::Message& request, std::chrono::milliseconds timeout = 10s) {
  dealer.send(zmq::buffer(protocol::Encode(request)), zmq::send_flags::none);
  for (const auto deadline = PlsClock::now() + timeout; PlsClock::now() < deadline;) {
    zmq::message_t reply;
    if (!dealer.recv(reply)) {
      // No answer in 2 s: the request was dropped unread (this address beyond its rate, as right after a
      // flood from it); ask again, as ctl and a person do.
      dealer.send(zmq::buffer(protocol::Encode(request)), zmq::send_flags::none);
      continue;
    }
    const auto d = protocol::Decode(reply.to_string());
    if (const T* t = d.message ? std::get_if<T>(&*d.message) : nullptr) return *t;
  }
  return std::nullopt;
}

// A server counter or figure, asked on `tool` (a connection that never joined), paced like a person.
double PlsParam(zmq::socket_t& tool, const std::string& path) {
  std::this_thread::sleep_for(20ms);
  const auto r = PlsAsk<protocol::ParamReply>(tool, protocol::ParamGet{path, 0});
  REQUIRE_MESSAGE(r.has_value(), "no answer for " << path);
  REQUIRE_MESSAGE(r->ok, path << ": " << r->error);
  return std::stod(r->param.value);
}

long PlsRssKb(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

}  // namespace

TEST_CASE("peer limits over loopback: 2,000 join-and-disconnect cycles of new names, then a real node joins within 2 s") {
  TempDir dir;
  const PlsPorts ports = PlsFreePorts();
  const std::string session = PlsSession(dir, ports, "", {{"newcomer", "observer"}});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  zmq::context_t ctx(1);
  auto tool = PlsDealer(ctx, ports.control);
  REQUIRE(PlsParam(tool, "server.nodes") == 0);

  // 2,000 cycles as fast as this process can: connect, join under a new name, disconnect (the join is
  // still delivered: infinite linger). A context per 250 cycles, whose end waits for its joins to leave, keeps the
  // sockets and files open at a time within ZeroMQ's and the system's limits (1023, 1024).
  constexpr int kCycles = 2000, kPerContext = 250;
  protocol::Join join;
  join.role = protocol::Role::kTraffic;
  join.host = "churn";
  const auto t0 = PlsClock::now();
  for (int batch = 0; batch < kCycles / kPerContext; ++batch) {
    zmq::context_t churn(1);
    for (int i = batch * kPerContext; i < (batch + 1) * kPerContext; ++i) {
      auto s = PlsDealer(churn, ports.control, -1);
      join.name = "churn-" + std::to_string(i);
      REQUIRE(s.send(zmq::buffer(protocol::Encode(join)), zmq::send_flags::none));
    }
  }
  const double churn_s = std::chrono::duration<double>(PlsClock::now() - t0).count();
  // Every join has arrived once the counts stand still. Beyond the address's message rate (500/s after
  // a burst of 1,000) a join is dropped unread (rate_limited); beyond its join rate of new names it is
  // read and left unanswered (join_rate); else it is welcomed.
  double limited = -1, dropped = -1;
  for (double last = -1; limited + dropped != last;) {
    last = limited < 0 ? -2 : limited + dropped;
    std::this_thread::sleep_for(200ms);
    limited = PlsParam(tool, "server.refused.join_rate");
    dropped = PlsParam(tool, "server.refused.rate_limited");
  }
  const double churn_end_s = std::chrono::duration<double>(PlsClock::now() - t0).count();
  MESSAGE(kCycles << " join cycles in " << churn_s << " s (" << kCycles / churn_s << "/s), all in after " << churn_end_s
                  << " s: " << limited << " left unanswered (join_rate), " << dropped << " dropped unread (rate_limited), "
                  << PlsParam(tool, "server.nodes") << " nodes in the table");
  CHECK(PlsParam(tool, "server.refused.join") == 0);

  // A real node on the same address joins within 2 s of the churn's end.
  const auto spawned = PlsClock::now();
  auto node = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "newcomer"});
  const auto line = node.WaitForLine("joined session 'limits-test' as node", 10s);
  const double join_s = std::chrono::duration<double>(PlsClock::now() - spawned).count();
  REQUIRE(line.has_value());
  MESSAGE("the real node joined " << join_s << " s after its start: " << *line);
  CHECK(join_s <= 2.0);
  // Counted exactly: every cycle either got a node id (ids count up from 1; the newcomer's is next) or
  // was left unanswered.
  const auto at = line->rfind("as node ");
  const int newcomer_id = std::stoi(line->substr(at + 8));
  const int welcomed = newcomer_id - 1;
  MESSAGE(welcomed << " churn joins welcomed");
  CHECK(welcomed + limited + dropped == kCycles);
  // Throttled: join_burst (64) and join_rate_hz (20) per second of new names got in, no more.
  CHECK(welcomed >= 64);
  CHECK(welcomed <= 64 + 20 * churn_end_s + 1);
  CHECK(PlsParam(tool, "server.nodes") <= welcomed + 1);

  node.Signal(SIGTERM);
  WaitForStopped(node, "newcomer");
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  Collect(server);
  CHECK(AnyLineContains(server.Lines(), "join(s) of new names beyond an address's or key's join rate"));
  CheckNoErrorLines(server, "server");
}

TEST_CASE("peer limits over loopback: a Join named with a newline and an ANSI escape is refused, counted, and logged escaped, session files get the same rule") {
  TempDir dir;
  const PlsPorts ports = PlsFreePorts();
  const std::string session = PlsSession(dir, ports, "", {});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  zmq::context_t ctx(1);
  auto peer = PlsDealer(ctx, ports.control);
  protocol::Join join;
  join.role = protocol::Role::kTraffic;
  join.name = "evil\n00:00:00.000 info [server] FORGED-LINE node 'admin' joined\x1b[2J\x1b[31m";
  join.host = "host\x1b]0;title\x07";
  const auto refused = PlsAsk<protocol::Refuse>(peer, join);
  REQUIRE(refused.has_value());
  MESSAGE("refusal: " << refused->reason);
  CHECK(refused->reason == "node name: " + text::CheckName(join.name));
  CHECK(refused->reason.find("got a newline at byte 4") != std::string::npos);
  auto tool = PlsDealer(ctx, ports.control);
  CHECK(PlsParam(tool, "server.refused.join") == 1);
  CHECK(PlsParam(tool, "server.nodes") == 0);
  // A 100,000-byte name too.
  join.name = std::string(100'000, 'n');
  const auto long_refused = PlsAsk<protocol::Refuse>(peer, join);
  REQUIRE(long_refused.has_value());
  CHECK(long_refused->reason.find("got 100000 bytes") != std::string::npos);
  CHECK(PlsParam(tool, "server.refused.join") == 2);

  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  WaitForStopped(server, "server");
  const auto& lines = Collect(server);
  // The refusal was logged, escaped: no raw ESC or BEL, and the forged text never starts a line.
  CHECK(AnyLineContains(lines, "join(s) with a name against the name rule"));
  CHECK(AnyLineContains(lines, "evil\\n00:00:00.000 info [server] FORGED-LINE"));
  for (const auto& l : lines) {
    CHECK_MESSAGE(l.find('\x1b') == std::string::npos, l);
    CHECK_MESSAGE(l.find('\x07') == std::string::npos, l);
    if (l.find("FORGED-LINE") != std::string::npos) CHECK_MESSAGE(l.find("evil\\n") != std::string::npos, l);
    CHECK(l.size() < 2000);
  }

  // Session files: a NUL in a node name, a newline in the session name, a 10 MB name: exit 2 naming the
  // file, line and key with the same rule.
  const std::string cases[][2] = {
      {"nul.toml", "[[node]]\nname = \"car\\u0000x\"\nrole = \"traffic\"\n"},
      {"newline.toml", "[session]\nname = \"lab\\nINFO forged\"\n"},
      {"huge.toml", "[session]\nname = \"" + std::string(10'000'000, 'q') + "\"\n"}};
  const std::string expected[] = {"nul.toml:2", "newline.toml:2", "huge.toml:2"};
  for (int i = 0; i < 3; ++i) {
    const std::string path = dir.Write(cases[i][0], cases[i][1]);
    const auto t = PlsClock::now();
    auto check = process::Child::Spawn({BinDir() + "/platoon", "check", path});
    const auto status = RunToExit(check, 30s);
    const double took_s = std::chrono::duration<double>(PlsClock::now() - t).count();
    std::string out;
    for (const auto& l : check.Lines()) out += l + "\n";
    MESSAGE(cases[i][0] << ": exit " << status.value_or(-1) << " in " << took_s << " s, " << out.size()
                        << " bytes of output: " << out.substr(0, 300));
    CHECK(status == std::optional<int>(2));
    CHECK(out.find(expected[i]) != std::string::npos);
    CHECK(out.find("name: a name is 1 to 128 bytes of printable UTF-8") != std::string::npos);
    CHECK(out.size() < 2000);
    CHECK(took_s < 10);
  }
}

TEST_CASE("peer limits over loopback: 50 connections x 1,000 status requests are held to the address's budget, RSS and the broadcast unharmed") {
  TempDir dir;
  const PlsPorts ports = PlsFreePorts();
  constexpr double kBroadcastHz = 20;
  const std::string session = PlsSession(dir, ports, "broadcast_hz = 20\nstatus_interval_s = 0\n",
                                         {{"car", "traffic"}, {"obs", "observer"}});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  auto car = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "car"});
  auto obs = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "obs"});
  zmq::context_t ctx(1);
  auto tool = PlsDealer(ctx, ports.control);
  for (const auto deadline = PlsClock::now() + 20s;
       (PlsParam(tool, "server.nodes") < 2 || PlsParam(tool, "server.entities") < 2) && PlsClock::now() < deadline;)
    for (auto* c : {&server, &car, &obs}) Collect(*c);
  REQUIRE(PlsParam(tool, "server.entities") == 2);
  const double limited0 = PlsParam(tool, "server.refused.rate_limited");
  std::this_thread::sleep_for(1s);
  const long rss0 = PlsRssKb(server.Pid());
  REQUIRE(rss0 > 0);

  constexpr int kConnections = 50, kRequests = 1000;
  std::vector<zmq::socket_t> peers;
  for (int k = 0; k < kConnections; ++k) peers.push_back(PlsDealer(ctx, ports.control));
  const std::string request = protocol::Encode(protocol::StatusRequest{});
  const auto t0 = PlsClock::now();
  for (int i = 0; i < kRequests; ++i)
    for (auto& p : peers) REQUIRE(p.send(zmq::buffer(request), zmq::send_flags::none));
  const double send_s = std::chrono::duration<double>(PlsClock::now() - t0).count();
  // Read every reply until all connections are quiet for 1 s.
  int answered = 0;
  for (bool any = true; any;) {
    any = false;
    for (auto& p : peers) {
      zmq::message_t reply;
      while (p.recv(reply, zmq::recv_flags::dontwait)) {
        ++answered;
        any = true;
      }
    }
    if (!any) {
      std::this_thread::sleep_for(1s);
      for (auto& p : peers) {
        zmq::message_t reply;
        if (p.recv(reply, zmq::recv_flags::dontwait)) {
          ++answered;
          any = true;
        }
      }
    }
    for (auto* c : {&server, &car, &obs}) Collect(*c);
  }
  const double all_s = std::chrono::duration<double>(PlsClock::now() - t0).count();
  const double limited = PlsParam(tool, "server.refused.rate_limited") - limited0;
  const long rss = PlsRssKb(server.Pid());
  MESSAGE((kConnections * kRequests) << " status requests sent in " << send_s << " s: " << answered << " answered, "
                                   << limited << " rate-limited; server VmRSS " << rss0 / 1024.0 << " -> " << rss / 1024.0
                                   << " MB (+" << (rss - rss0) / 1024.0 << ")");
  CHECK(answered + limited == kConnections * kRequests);
  // The address's bucket: 1,000 x (1 + 2 nodes joined from 127.0.0.1) at once, 500/s x 3 after.
  CHECK(answered <= 3000 + 1500 * all_s);
  CHECK(rss - rss0 <= 20 * 1024);
  peers.clear();

  const double bound_ms = 2 * 1000 / kBroadcastHz;
  for (auto* c : {&obs, &car}) {
    c->Signal(SIGTERM);
    REQUIRE(c->WaitForLine("SUMMARY", 10s));
    WaitForStopped(*c, "node");
    const auto& lines = Collect(*c);
    const double gap = SummaryValue(lines, "world_max_gap_ms").value_or(1e9);
    MESSAGE(SummaryString(lines, "node").value_or("?") << ": longest world-state gap " << gap << " ms (bound "
                                                       << bound_ms << " ms)");
    CHECK(gap <= bound_ms);
    CheckNoErrorLines(*c, SummaryString(lines, "node").value_or("node"));
  }
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  Collect(server);
  CHECK_FALSE(AnyLineContains(server.Lines(), " lost: silent"));
  CHECK(AnyLineContains(server.Lines(), "beyond an address's or key's rate"));
  CheckNoErrorLines(server, "server");
}
