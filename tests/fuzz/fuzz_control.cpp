// libFuzzer target: the server's control path (WorldCore::OnControl, OnState, Poll) of a running loopback
// session, with a session-state oracle. Each input is a stream of records, each one message from one of four
// connections at a later instant:
//   byte 0: sender (bits 0-1: another local process, the joined driver seat, a joined traffic node, the
//           operator's connection, which presented the token) and socket (bit 2: the state socket); a
//           sender that presents the right token (a template does) is an operator from then on
//   byte 1: reference time advance in ms (0-255)
//   byte 2: < 0xC0: a template message (byte 2 % kTemplates) with up to three byte changes, each a pair
//           (offset byte, value byte), the count in byte 3 % 4; >= 0xC0: raw bytes, their count in byte 3.
// The oracle, after every record: the node table within max_nodes, entities within max_entities, the rate
// buckets and the event log within their bounds, every queued message encodes; the phase, sim time and the
// writable parameters change only by an operator's session command (or Starting -> Running when the start
// instant passes); sim time never moves back except by the operator's restart or a start of a stopped
// session. A violation aborts with the record that caused it.
#include "platoon/protocol/codec.hpp"
#include "platoon/server/world_core.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

using namespace platoon;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000'000 * kMs;
const std::string kToken = "fuzz-operator-token-0123456789abcdef";
const char* const kPeers[] = {"peer-other", "peer-seat", "peer-node", "peer-op"};

protocol::Decoded Ok(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

[[noreturn]] void Violation(const char* what, size_t record) {
  std::fprintf(stderr, "fuzz_control: %s (record %zu)\n", what, record);
  std::abort();
}

std::vector<std::string> Templates(uint32_t seat, uint32_t node) {
  using C = protocol::SessionControl;
  protocol::Join join;
  join.name = "newcomer";
  join.role = protocol::Role::kTraffic;
  join.host = "pc9";
  join.pid = 99;
  protocol::EntityState car;
  car.id = 77;
  car.kind = protocol::EntityKind::kCar;
  car.kinematics.stamp_ns = 5'000 * kMs;
  const std::vector<protocol::Message> m = {
      protocol::StatusRequest{},
      join,
      protocol::Heartbeat{seat, 5'000 * kMs, 1500, 80'000, 12},
      protocol::ParamGet{"server.broadcast_hz", 1},
      protocol::ParamSet{"server.broadcast_hz", "30", 2},
      protocol::ParamSet{"server.lost_timeout_s", "0.5", 3},
      protocol::Mark{"lane change", 0, 4},
      C{C::Command::kStart, 0, 0},
      C{C::Command::kPause, 0, 0},
      C{C::Command::kResume, 0, 0},
      C{C::Command::kStop, 0, 0},
      C{C::Command::kRestart, 0, 0, 1.0, "fuzz"},
      C{C::Command::kSeek, 0, 1'000 * kMs},
      protocol::OperatorHello{kToken},
      protocol::OperatorHello{"wrong"},
      protocol::Leave{node, "bye"},
      protocol::EventsRequest{0, 5},
      protocol::ParamListRequest{"server.", 6},
      protocol::TimeRequest{node, 1, 0},
      protocol::NodeState{node, 1, {car}, 0, 0, 0},
  };
  std::vector<std::string> out;
  for (const auto& x : m) out.push_back(protocol::Encode(x));
  return out;
}

struct Snapshot {
  protocol::SessionPhase phase;
  int64_t sim_ns;
  std::map<std::string, std::string> params;
};

Snapshot Take(const server::WorldCore& core, int64_t now) {
  Snapshot s{core.Phase(), core.SimTimeAt(now), {}};
  for (const auto& p : core.ListParams(""))
    if (p.writable) s.params[p.path] = p.value;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  config::SessionDef def;
  def.name = "fuzz";
  def.server.max_nodes = 6;
  def.server.max_entities = 32;
  def.server.max_entities_per_node = 16;
  def.server.lost_timeout_s = 1.0;
  server::WorldCore core(def, std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_st>()));
  core.SetOperatorToken(kToken, "");
  auto join = [&](const char* peer, const char* name, protocol::Role role) {
    protocol::Join j;
    j.name = name;
    j.role = role;
    j.host = "pc1";
    core.OnControl(peer, "127.0.0.1", Ok(j), kT0);
    uint32_t id = 0;
    for (const auto& o : core.TakeOutgoing())
      if (const auto* w = std::get_if<protocol::Welcome>(&o.message)) id = w->node_id;
    return id;
  };
  const uint32_t seat = join("peer-seat", "seat", protocol::Role::kDriver);
  const uint32_t node = join("peer-node", "traffic", protocol::Role::kTraffic);
  core.OnControl("peer-op", "127.0.0.1", Ok(protocol::OperatorHello{kToken}), kT0);
  core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0, 0}, kT0);
  core.Poll(kT0 + kMs);
  (void)core.TakeOutgoing();
  if (core.Phase() != protocol::SessionPhase::kRunning) Violation("the set-up session does not run", 0);
  static const std::vector<std::string> templates = Templates(seat, node);

  int64_t now = kT0 + kMs;
  size_t pos = 0, record = 0;
  Snapshot before = Take(core, now);
  bool token_holders[4] = {false, false, false, true};
  while (pos + 4 <= size) {
    ++record;
    const uint8_t who = data[pos] & 3u;
    const bool state_socket = (data[pos] & 4u) != 0;
    now += static_cast<int64_t>(data[pos + 1]) * kMs;
    std::string bytes;
    if (data[pos + 2] < 0xC0) {
      bytes = templates[data[pos + 2] % templates.size()];
      const size_t changes = data[pos + 3] % 4u;
      pos += 4;
      for (size_t c = 0; c < changes && pos + 2 <= size; ++c, pos += 2)
        bytes[data[pos] % bytes.size()] = static_cast<char>(data[pos + 1]);
    } else {
      const size_t n = std::min<size_t>(data[pos + 3], size - pos - 4);
      bytes.assign(reinterpret_cast<const char*>(data + pos + 4), n);
      pos += 4 + n;
    }
    const protocol::Decoded d = protocol::Decode(bytes);
    // FUZZ_CONTROL_TRACE=1 build-fuzz/fuzz/fuzz_control <crash file>: each record as the core got it.
    if (std::getenv("FUZZ_CONTROL_TRACE"))
      std::fprintf(stderr, "record %zu: %s %s, %s, phase %s sim %.3f s\n", record, kPeers[who],
                   state_socket ? "state socket" : "control socket",
                   d.message ? std::visit([](const auto& m) { return typeid(m).name(); }, *d.message) : d.detail.c_str(),
                   std::string(protocol::PhaseName(core.Phase())).c_str(), static_cast<double>(core.SimTimeAt(now)) / 1e9);
    if (state_socket) core.OnState(d, now);
    else core.OnControl(kPeers[who], "127.0.0.1", d, now);
    // What the record did, before time-driven work: the phase and parameters as it left them.
    const Snapshot mid = Take(core, now);
    core.Poll(now);
    for (const auto& o : core.TakeOutgoing()) (void)protocol::Encode(o.message);

    // Whoever presented the token is an operator from then on (the token is the credential); the others
    // must never change the session.
    if (!state_socket && d.message)
      if (const auto* hello = std::get_if<protocol::OperatorHello>(&*d.message); hello && hello->token == kToken)
        token_holders[who] = true;
    const bool holder = token_holders[who];
    const bool operator_command = !state_socket && holder && d.message &&
                                  std::holds_alternative<protocol::SessionControl>(*d.message);
    const auto* command = operator_command ? &std::get<protocol::SessionControl>(*d.message) : nullptr;
    if (core.Nodes().size() > static_cast<size_t>(def.server.max_nodes)) Violation("node table beyond max_nodes", record);
    if (core.Entities().size() > static_cast<size_t>(def.server.max_entities)) Violation("entities beyond max_entities", record);
    if (core.RateBuckets() > server::WorldCore::kMaxRateBuckets) Violation("rate buckets beyond their bound", record);
    if (core.EventsAfter(0).size() > server::WorldCore::kMaxLoggedEvents) Violation("event log beyond its bound", record);
    if (mid.phase != before.phase && !operator_command) Violation("the phase changed without an operator's command", record);
    const bool param_set_by_operator = !state_socket && holder && d.message &&
                                       std::holds_alternative<protocol::ParamSet>(*d.message);
    if (mid.params != before.params && !param_set_by_operator)
      Violation("a writable parameter changed without an operator's set", record);
    if (mid.sim_ns < before.sim_ns) {
      using C = protocol::SessionControl::Command;
      const bool rewind_allowed =
          command && (command->command == C::kRestart ||
                      (command->command == C::kStart && before.phase == protocol::SessionPhase::kStopped) ||
                      (command->command == C::kStart && before.phase == protocol::SessionPhase::kWaiting));
      if (!rewind_allowed) Violation("sim time moved back without an operator's restart", record);
    }
    const Snapshot after = Take(core, now);
    // Poll alone: Starting -> Running when the start instant passes, nothing else.
    if (after.phase != mid.phase &&
        !(mid.phase == protocol::SessionPhase::kStarting && after.phase == protocol::SessionPhase::kRunning))
      Violation("the phase changed in Poll", record);
    if (after.params != mid.params) Violation("a writable parameter changed in Poll", record);
    if (after.sim_ns < mid.sim_ns) Violation("sim time moved back in Poll", record);
    before = after;
  }
  return 0;
}
