// A fair, bounded server over loopback: one peer floods each socket in turn while real nodes run, and
// one peer tries to grow the tables (joins, entities) and to speak for another node. Real platoon-server
// and platoon-node processes; the hostile peer is this test process on plain ZeroMQ sockets.
// Waits are handshakes on log lines and replies with deadlines; nothing sleeps.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <zmq.hpp>

#include <cstdlib>
#include <map>
#include <regex>
#include <thread>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// The flood session's broadcast rate: its period (50 ms) is what a node's longest world-state gap is
// held to (two periods), whatever a peer sends.
constexpr double kBroadcastHz = 20;
constexpr int kFloodMessages = 50'000;

struct Ports {
  uint16_t control, time, world, state;
};

// A session on free loopback ports: traffic nodes n1, n2 (4 vehicles each) and an observer obs.
std::string WriteSession(const TempDir& dir, const Ports& p, const std::string& server_extra,
                         const std::vector<std::pair<std::string, std::string>>& nodes) {
  std::string text = "[session]\nname = \"flood-test\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                     std::to_string(p.control) + "\ntime_port = " + std::to_string(p.time) + "\nworld_port = " +
                     std::to_string(p.world) + "\nstate_port = " + std::to_string(p.state) + "\n" + server_extra;
  for (const auto& [name, role] : nodes)
    text += "[[node]]\nname = \"" + name + "\"\nrole = \"" + role +
            "\"\nvehicles = 4\nmonitor_rate_hz = 50\nstatus_interval_s = 0\n";
  return dir.Write("session.toml", text);
}

Ports FreeSessionPorts() {
  const auto p = FreePorts(4);
  return Ports{p[0], p[1], p[2], p[3]};
}

std::string Endpoint(uint16_t port) { return "tcp://127.0.0.1:" + std::to_string(port); }

// Parses "view: L/E live, S stale | ...".
bool AllLiveView(const std::string& line) {
  static const std::regex re(R"(view: (\d+)/(\d+) live, (\d+) stale)");
  std::smatch m;
  return std::regex_search(line, m, re) && std::stoi(m[2]) > 0 && m[1] == m[2] && m[3] == "0";
}

bool WaitAllLive(process::Child& c, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline)
    if (auto line = c.ReadLine(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
        line && AllLiveView(*line))
      return true;
  return false;
}

zmq::socket_t Socket(zmq::context_t& ctx, zmq::socket_type type, uint16_t port) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 2000);
  s.set(zmq::sockopt::sndtimeo, 10000);
  if (type == zmq::socket_type::sub) s.set(zmq::sockopt::subscribe, "");
  s.connect(Endpoint(port));
  return s;
}

// Sends `request` on a DEALER and returns the first reply of type T, skipping others; nullopt at the deadline.
template <class T>
std::optional<T> Ask(zmq::socket_t& dealer, const protocol::Message& request, std::chrono::milliseconds timeout = 10s) {
  dealer.send(zmq::buffer(protocol::Encode(request)), zmq::send_flags::none);
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    zmq::message_t reply;
    if (!dealer.recv(reply)) continue;
    const auto d = protocol::Decode(reply.to_string());
    if (const T* t = d.message ? std::get_if<T>(&*d.message) : nullptr) return *t;
  }
  return std::nullopt;
}

// A server parameter's value as text, asked on `tool` (a peer that never joined).
std::string Param(zmq::socket_t& tool, const std::string& path) {
  const auto r = Ask<protocol::ParamReply>(tool, protocol::ParamGet{path, 0});
  REQUIRE_MESSAGE(r.has_value(), "no answer for " << path);
  REQUIRE_MESSAGE(r->ok, path << ": " << r->error);
  return r->param.value;
}

double ParamNumber(zmq::socket_t& tool, const std::string& path) { return std::stod(Param(tool, path)); }

// Between two questions of a polling loop: a tool that asks without pause is rate-limited like any peer.
void Pace() { std::this_thread::sleep_for(20ms); }

// Sends `payload` `count` times as fast as the socket takes it; returns the seconds it took.
double Flood(zmq::socket_t& s, const std::string& payload, int count) {
  const auto t0 = Clock::now();
  for (int i = 0; i < count; ++i)
    REQUIRE_MESSAGE(s.send(zmq::buffer(payload), zmq::send_flags::none).has_value(), "send " << i << " timed out");
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// SIGTERM, then the lines up to the SUMMARY (after the exit: WaitForStopped).
const std::vector<std::string>& Stop(process::Child& c) {
  c.Signal(SIGTERM);
  REQUIRE_MESSAGE(c.WaitForLine("SUMMARY", 10s).has_value(), "no SUMMARY after SIGTERM");
  WaitForStopped(c, "pid " + std::to_string(c.Pid()));
  return c.Lines();
}

}  // namespace

TEST_CASE("flood: 50,000 messages to each socket in turn: no node lost, world-state gaps within two broadcast periods, observer error in bound") {
  TempDir dir;
  const Ports ports = FreeSessionPorts();
  // PLATOON_FLOOD_LIMITS_OFF=1 lifts the per-turn and per-peer limits, to measure what they buy.
  const bool limits_off = std::getenv("PLATOON_FLOOD_LIMITS_OFF") != nullptr;
  const std::string server_extra =
      "broadcast_hz = " + std::to_string(kBroadcastHz) + "\nstatus_interval_s = 2\n" +
      (limits_off ? "max_messages_per_turn = 100000\npeer_rate_hz = 1000000\npeer_burst = 1000000\n" : "");
  const std::string session =
      WriteSession(dir, ports, server_extra, {{"n1", "traffic"}, {"n2", "traffic"}, {"obs", "observer"}});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  auto n1 = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "n1"});
  auto n2 = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "n2"});
  auto obs = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "obs", "--truth-check",
                                    "--truth-warmup", "4"});
  REQUIRE_MESSAGE(WaitAllLive(obs, 30s), "the observer never saw all 8 vehicles live");
  REQUIRE(WaitAllLive(n1, 15s));
  REQUIRE(WaitAllLive(n2, 15s));
  // Past the observer's truth warm-up: ten more full views (5 s of sim time).
  for (int i = 0; i < 10; ++i) REQUIRE(WaitAllLive(obs, 10s));

  zmq::context_t ctx(1);
  // The payloads cost the server what they can: a snapshot request (a keyframe back), a time request
  // (a reply), a node state naming n1's id without its token (a lookup). None of them joined.
  const std::string status_request = protocol::Encode(protocol::StatusRequest{});
  const std::string time_request = protocol::Encode(protocol::TimeRequest{0, 1, 1});
  protocol::EntityState forged;
  forged.id = node::VehicleId("n1", 0);
  forged.kind = protocol::EntityKind::kCar;
  forged.kinematics.stamp_ns = 1;
  forged.kinematics.pose.position_m = Vec3(1e5, 0, 0);
  const std::string node_state = protocol::Encode(protocol::NodeState{1, 1, {forged}});
  struct Target {
    const char* socket;
    zmq::socket_type type;
    uint16_t port;
    const std::string* payload;
  };
  const Target targets[] = {{"control", zmq::socket_type::dealer, ports.control, &status_request},
                            {"time", zmq::socket_type::dealer, ports.time, &time_request},
                            {"state", zmq::socket_type::push, ports.state, &node_state}};
  std::map<std::string, double> took_s;
  for (const auto& t : targets) {
    auto s = Socket(ctx, t.type, t.port);
    took_s[t.socket] = Flood(s, *t.payload, kFloodMessages);
    MESSAGE(kFloodMessages << " messages to the " << std::string(t.socket) << " socket in " << took_s[t.socket] << " s ("
                           << kFloodMessages / took_s[t.socket] << " msg/s)");
    // The nodes' output is read between floods, so that no pipe fills.
    for (auto* c : {&server, &n1, &n2, &obs}) Collect(*c);
  }
  // Handshake after the floods: the server answers, and the observer still sees every vehicle live.
  auto tool = Socket(ctx, zmq::socket_type::dealer, ports.control);
  const double rate_limited = ParamNumber(tool, "server.refused.rate_limited");
  const double forged_states = ParamNumber(tool, "server.refused.forged_state");
  MESSAGE("server: " << rate_limited << " messages rate-limited, " << forged_states << " forged node states refused");
  REQUIRE(WaitAllLive(obs, 10s));
  REQUIRE(WaitAllLive(obs, 10s));

  const double bound_ms = 2 * 1000 / kBroadcastHz;
  for (auto* c : {&n1, &n2, &obs}) {
    const auto& lines = Stop(*c);
    INFO("summary: " << lines.back());
    const double gap = SummaryValue(lines, "world_max_gap_ms").value_or(1e9);
    MESSAGE(SummaryString(lines, "node").value_or("?") << ": longest world-state gap " << gap << " ms (bound "
                                                       << bound_ms << " ms), view error p99 "
                                                       << SummaryValue(lines, "view_error_p99_m").value_or(-1)
                                                       << " m, max " << SummaryValue(lines, "view_error_max_m").value_or(-1)
                                                       << " m");
    CHECK(gap <= bound_ms);
    // No vehicle of a live node ever went stale on this node.
    CHECK_FALSE(AnyLineContains(lines, "entities stale"));
    CHECK(SummaryValue(lines, "view_error_max_m").value_or(1) <= 0.10);
    CheckNoErrorLines(*c, SummaryString(lines, "node").value_or("node"));
  }
  // The observer's clock: its true error within the bound of the clock test (0.5 ms p99) under the flood.
  const auto& obs_lines = obs.Lines();
  MESSAGE("observer clock: true error p50 " << SummaryValue(obs_lines, "error_p50_ns").value_or(-1) << " ns, p99 "
                                            << SummaryValue(obs_lines, "error_p99_ns").value_or(-1) << " ns, max "
                                            << SummaryValue(obs_lines, "error_max_ns").value_or(-1) << " ns");
  CHECK(SummaryValue(obs_lines, "truth_samples").value_or(0) > 100);
  CHECK(SummaryValue(obs_lines, "error_p99_ns").value_or(1e18) <= 500'000);
  CHECK(SummaryValue(obs_lines, "backwards") == 0.0);

  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  Collect(server);
  // No node was ever marked lost, and the flood was dropped or refused rather than served in full.
  CHECK_FALSE(AnyLineContains(server.Lines(), " lost: silent"));
  CHECK(forged_states >= 1);
  if (!limits_off) {
    CHECK(rate_limited >= 1);
    CHECK(AnyLineContains(server.Lines(), "beyond a peer's rate"));
  }
  CheckNoErrorLines(server, "server");
}

TEST_CASE("trust over loopback: forged node ids from an unjoined and a joined peer are refused and counted, the owner's vehicles never move") {
  TempDir dir;
  const Ports ports = FreeSessionPorts();
  const std::string session = WriteSession(dir, ports, "", {{"owner", "traffic"}});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  auto owner = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "owner"});
  const uint64_t victim = node::VehicleId("owner", 0);

  zmq::context_t ctx(1);
  auto world = Socket(ctx, zmq::socket_type::sub, ports.world);
  world.set(zmq::sockopt::rcvtimeo, 100);
  // Every world state read so far: the victim's positions, and whether it ever changed hands.
  uint32_t owner_id = 0;
  bool moved_by_forgery = false, seen = false;
  auto read_world = [&] {
    zmq::message_t msg;
    while (world.recv(msg, seen ? zmq::recv_flags::dontwait : zmq::recv_flags::none)) {
      const auto d = protocol::Decode(msg.to_string());
      const auto* ws = d.message ? std::get_if<protocol::WorldState>(&*d.message) : nullptr;
      if (!ws) continue;
      for (const auto& e : ws->entities) {
        if (e.id != victim) continue;
        if (!seen) owner_id = e.owner_node;
        seen = true;
        // Stadium tracks lie at z = 0; the forgery puts the car 500 m up.
        if (e.kinematics.pose.position_m.z() > 100 || e.owner_node != owner_id) {
          MESSAGE("victim at z " << e.kinematics.pose.position_m.z() << " m, owner " << e.owner_node << " (was "
                                 << owner_id << ")");
          moved_by_forgery = true;
        }
      }
      if (!seen) return;
    }
  };
  for (const auto deadline = Clock::now() + 20s; !seen && Clock::now() < deadline;) read_world();
  REQUIRE_MESSAGE(seen, "the owner's vehicle never appeared in the world");

  protocol::EntityState forged;
  forged.id = victim;
  forged.kind = protocol::EntityKind::kCar;
  forged.kinematics.stamp_ns = 1'000'000'000'000;  // far newer than anything: only identity can refuse it
  forged.kinematics.pose.position_m = Vec3(0, 0, 500);
  auto push = Socket(ctx, zmq::socket_type::push, ports.state);
  // Without joining: the owner's id, no token, and guessed tokens.
  for (uint64_t i = 1; i <= 100; ++i)
    push.send(zmq::buffer(protocol::Encode(protocol::NodeState{owner_id, i, {forged}, 0, 0, i % 2 ? 0 : i})),
              zmq::send_flags::none);
  // From another joined connection, with its own token.
  auto mallory = Socket(ctx, zmq::socket_type::dealer, ports.control);
  protocol::Join join;
  join.name = "mallory";
  join.role = protocol::Role::kTraffic;
  const auto w = Ask<protocol::Welcome>(mallory, join);
  REQUIRE(w.has_value());
  for (uint64_t i = 101; i <= 200; ++i)
    push.send(zmq::buffer(protocol::Encode(protocol::NodeState{owner_id, i, {forged}, 0, 0, w->state_token})),
              zmq::send_flags::none);
  // Its connection names the owner in a heartbeat and a leave: neither counts for the owner.
  mallory.send(zmq::buffer(protocol::Encode(protocol::Heartbeat{owner_id})), zmq::send_flags::none);
  mallory.send(zmq::buffer(protocol::Encode(protocol::Leave{owner_id, "forged"})), zmq::send_flags::none);

  auto tool = Socket(ctx, zmq::socket_type::dealer, ports.control);
  std::string forged_count, wrong_count;
  for (const auto deadline = Clock::now() + 10s;
       (forged_count != "200" || wrong_count != "2") && Clock::now() < deadline;) {
    forged_count = Param(tool, "server.refused.forged_state");
    wrong_count = Param(tool, "server.refused.wrong_connection");
    read_world();
    Pace();
  }
  CHECK(forged_count == "200");
  CHECK(wrong_count == "2");
  // A second live owner is refused; the owner is still in the table and its vehicle where it drives it.
  auto second = Socket(ctx, zmq::socket_type::dealer, ports.control);
  protocol::Join again;
  again.name = "owner";
  const auto refused = Ask<protocol::Refuse>(second, again);
  REQUIRE(refused.has_value());
  CHECK(refused->reason.find("node name 'owner' is in use by a live node") != std::string::npos);
  const auto snapshot = Ask<protocol::WorldState>(tool, protocol::StatusRequest{});
  REQUIRE(snapshot.has_value());
  bool owner_listed = false;
  for (const auto& n : snapshot->nodes) owner_listed = owner_listed || (n.name == "owner" && n.node_id == owner_id && !n.lost);
  CHECK(owner_listed);
  for (const auto deadline = Clock::now() + 1s; Clock::now() < deadline; Pace()) read_world();
  CHECK_FALSE(moved_by_forgery);
  Stop(owner);
  CHECK_FALSE(AnyLineContains(owner.Lines(), "refused"));
  CheckNoErrorLines(owner, "owner");
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  CheckNoErrorLines(server, "server");
}

TEST_CASE("limits over loopback: 3,000 join attempts and 20,000 entities from one peer stay within max_nodes and max_entities_per_node, keyframes stay bounded") {
  TempDir dir;
  const Ports ports = FreeSessionPorts();
  const std::string session = WriteSession(
      dir, ports, "max_nodes = 16\nmax_entities_per_node = 1000\nmax_entities = 1500\nforget_lost_s = 1\n",
      {{"owner", "traffic"}});
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  auto owner = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "owner"});
  zmq::context_t ctx(1);
  auto tool = Socket(ctx, zmq::socket_type::dealer, ports.control);
  for (const auto deadline = Clock::now() + 20s; ParamNumber(tool, "server.entities") < 4 && Clock::now() < deadline;
       Pace())
    Collect(owner);
  REQUIRE(ParamNumber(tool, "server.entities") == 4);

  // One connection joins and sends states of 20,000 entities under its own id and token.
  auto mallory = Socket(ctx, zmq::socket_type::dealer, ports.control);
  protocol::Join join;
  join.name = "mallory";
  join.role = protocol::Role::kTraffic;
  const auto w = Ask<protocol::Welcome>(mallory, join);
  REQUIRE(w.has_value());
  // 20,000 entities under mallory's own id and token, 500 a state.
  auto push = Socket(ctx, zmq::socket_type::push, ports.state);
  for (uint64_t k = 0; k < 40; ++k) {
    protocol::NodeState ns{w->node_id, k + 1, {}, 0, 0, w->state_token};
    for (uint64_t i = 0; i < 500; ++i) {
      protocol::EntityState e;
      e.id = (uint64_t{1} << 40) + k * 500 + i;
      e.kind = protocol::EntityKind::kCar;
      e.kinematics.stamp_ns = 1;
      ns.entities.push_back(e);
    }
    push.send(zmq::buffer(protocol::Encode(ns)), zmq::send_flags::none);
  }
  double limited = 0;
  for (const auto deadline = Clock::now() + 10s; limited < 19'000 && Clock::now() < deadline; Pace())
    limited = ParamNumber(tool, "server.refused.entity_limit");
  CHECK(limited == 19'000);
  CHECK(ParamNumber(tool, "server.entities") == 1004);
  // Then 2,999 more names on the same connection, as fast as it can.
  for (int i = 1; i < 3000; ++i) {
    join.name = "j" + std::to_string(i);
    mallory.send(zmq::buffer(protocol::Encode(join)), zmq::send_flags::none);
  }
  // And 100 connections join once each.
  std::vector<zmq::socket_t> crowd;
  int welcomed = 0, full = 0;
  for (int i = 0; i < 100; ++i) {
    crowd.push_back(Socket(ctx, zmq::socket_type::dealer, ports.control));
    join.name = "c" + std::to_string(i);
    crowd.back().send(zmq::buffer(protocol::Encode(join)), zmq::send_flags::none);
  }
  for (auto& s : crowd) {
    zmq::message_t reply;
    REQUIRE(s.recv(reply));
    const auto d = protocol::Decode(reply.to_string());
    REQUIRE(d.message.has_value());
    if (std::holds_alternative<protocol::Welcome>(*d.message)) ++welcomed;
    if (const auto* r = std::get_if<protocol::Refuse>(&*d.message))
      full += r->reason.find("max_nodes = 16") != std::string::npos ? 1 : 0;
  }
  MESSAGE(welcomed << " of 100 connections joined, " << full << " refused as the session is full");
  CHECK(welcomed == 14);  // owner and mallory hold the other two places
  CHECK(full == 86);
  CHECK(ParamNumber(tool, "server.nodes") <= 16);
  // mallory's 2,999 second names: every one refused or dropped at its rate, none in the table.
  double refused_or_dropped = 0;
  for (const auto deadline = Clock::now() + 10s; refused_or_dropped < 2999 + 86 && Clock::now() < deadline; Pace())
    refused_or_dropped = ParamNumber(tool, "server.refused.join") + ParamNumber(tool, "server.refused.rate_limited");
  CHECK(refused_or_dropped == 2999 + 86);
  CHECK(ParamNumber(tool, "server.nodes") <= 16);

  // The keyframe (a snapshot) holds what the limits allow, no more.
  tool.send(zmq::buffer(protocol::Encode(protocol::StatusRequest{})), zmq::send_flags::none);
  std::optional<protocol::WorldState> snapshot;
  size_t snapshot_bytes = 0;
  for (const auto deadline = Clock::now() + 10s; !snapshot && Clock::now() < deadline;) {
    zmq::message_t reply;
    if (!tool.recv(reply)) continue;
    const auto d = protocol::Decode(reply.to_string());
    if (const auto* ws = d.message ? std::get_if<protocol::WorldState>(&*d.message) : nullptr) {
      snapshot = *ws;
      snapshot_bytes = reply.size();
    }
  }
  REQUIRE(snapshot.has_value());
  MESSAGE("snapshot: " << snapshot->entities.size() << " entities, " << snapshot->nodes.size() << " nodes, "
                       << snapshot_bytes << " bytes");
  CHECK(snapshot->entities.size() == 1004);
  CHECK(snapshot->nodes.size() <= 16);
  CHECK(snapshot_bytes < 1004 * 400 + 16 * 1000);

  // The crowd goes away: after lost_timeout_s + forget_lost_s the nodes that own nothing leave the table.
  crowd.clear();
  double nodes = 16;
  for (const auto deadline = Clock::now() + 15s; nodes > 2 && Clock::now() < deadline;) {
    nodes = ParamNumber(tool, "server.nodes");
    Collect(owner);
    Pace();
  }
  CHECK(nodes == 2);  // owner, and mallory (lost, but it owns entities it may come back for)
  Stop(owner);
  CheckNoErrorLines(owner, "owner");
  server.Signal(SIGTERM);
  {
    MachineStallProbe probe;
    std::string report;
    const auto status = WaitForExitOrDescribe(server, 10s, 30s, &report);
    CHECK_MESSAGE(status == std::optional<int>(0), "the server after SIGTERM: " << report << " (exit status "
                                                      << (status ? std::to_string(*status) : "none") << "); "
                                                      << probe.Describe());
  }
  Collect(server);
  CHECK(AnyLineContains(server.Lines(), "join(s) under a second name on one connection"));
  CheckNoErrorLines(server, "server");
}
