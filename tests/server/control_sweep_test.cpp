// Every one-byte variant of each control request a client sends (StatusRequest, Join, Heartbeat, ParamGet,
// ParamSet, Mark), fed to the world core of a running session: the session's state (phase, sim time, the
// writable parameters, the event log) changes only for a variant that decodes to an operator command and
// comes from the operator; a start never rewinds sim time. Loopback mode: the operator is the connection
// that presented the server's token (OperatorHello), every other local process is not.
#include "platoon/protocol/codec.hpp"
#include "platoon/server/world_core.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <typeinfo>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace platoon;

constexpr int64_t kSweepS = 1'000'000'000;
constexpr int64_t kSweepT0 = 500 * kSweepS;
const std::string kSweepToken = "0123456789abcdef0123456789abcdef";

// What a session's participants would notice changing.
struct SweepState {
  protocol::SessionPhase phase = protocol::SessionPhase::kWaiting;
  int64_t sim_ns = 0;
  std::map<std::string, std::string> params;  // writable ones only: counters move with every refusal
  size_t events = 0;
  bool operator==(const SweepState&) const = default;
};

SweepState SweepSnapshot(const server::WorldCore& core, int64_t now) {
  SweepState s{core.Phase(), core.SimTimeAt(now), {}, core.EventsAfter(0).size()};
  for (const auto& p : core.ListParams(""))
    if (p.writable) s.params[p.path] = p.value;
  return s;
}

protocol::Decoded SweepOk(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

// A session running since kSweepT0 with node "seat" joined on connection "peer-seat" and the operator's
// connection "peer-op" holding the token.
struct SweepSession {
  std::unique_ptr<server::WorldCore> core;
  uint32_t seat = 0;

  SweepSession() {
    config::SessionDef def;
    def.name = "sweep";
    def.server.lost_timeout_s = 1000;  // the sweep takes no reference time; nobody must expire meanwhile
    core = std::make_unique<server::WorldCore>(
        def, std::make_shared<spdlog::logger>("sweep", std::make_shared<spdlog::sinks::null_sink_st>()));
    core->SetOperatorToken(kSweepToken, "");
    protocol::Join j;
    j.name = "seat";
    j.role = protocol::Role::kDriver;
    j.host = "pc1";
    core->OnControl("peer-seat", "127.0.0.1", SweepOk(j), kSweepT0);
    for (const auto& o : core->TakeOutgoing())
      if (const auto* w = std::get_if<protocol::Welcome>(&o.message)) seat = w->node_id;
    REQUIRE(seat != 0);
    core->OnControl("peer-op", "127.0.0.1", SweepOk(protocol::OperatorHello{kSweepToken}), kSweepT0);
    core->OnControl("peer-op", "127.0.0.1",
                    SweepOk(protocol::SessionControl{protocol::SessionControl::Command::kStart, kSweepT0, 0}), kSweepT0);
    core->Poll(kSweepT0 + 10 * kSweepS);
    (void)core->TakeOutgoing();
    REQUIRE(core->Phase() == protocol::SessionPhase::kRunning);
  }
};

bool IsOperatorCommand(const protocol::Decoded& d) {
  if (!d.message) return false;
  return std::holds_alternative<protocol::SessionControl>(*d.message) ||
         std::holds_alternative<protocol::ParamSet>(*d.message) || std::holds_alternative<protocol::Mark>(*d.message);
}

struct SweepTally {
  size_t variants = 0, decoded = 0, changed = 0;
  std::map<std::string, size_t> changed_by;  // kind of the decoded variant -> changes
};

// Sends every one-byte variant of `original` from `peer` at a fixed instant; checks the oracle; rebuilds
// the session after each change so that every variant meets the same running session.
enum class SweepPeer { kOther, kSeat, kOperator };

// What `peer` may change: the operator its commands; a driver seat its own markers (key presses); others nothing.
bool SweepAllowed(SweepPeer peer, const protocol::Decoded& d) {
  switch (peer) {
    case SweepPeer::kOperator: return IsOperatorCommand(d);
    case SweepPeer::kSeat: return d.message && std::holds_alternative<protocol::Mark>(*d.message);
    case SweepPeer::kOther: return false;
  }
  return false;
}

SweepTally SweepVariants(const std::string& kind, const protocol::Message& original, SweepPeer who) {
  const std::string peer = who == SweepPeer::kOperator ? "peer-op" : who == SweepPeer::kSeat ? "peer-seat" : "peer-other";
  SweepTally tally;
  auto session = std::make_unique<SweepSession>();
  const int64_t now = kSweepT0 + 20 * kSweepS;
  const std::string bytes = protocol::Encode(original);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int v = 0; v < 256; ++v) {
      if (static_cast<unsigned char>(bytes[i]) == v) continue;
      std::string variant = bytes;
      variant[i] = static_cast<char>(v);
      ++tally.variants;
      const protocol::Decoded d = protocol::Decode(variant);
      tally.decoded += d.message.has_value();
      const SweepState before = SweepSnapshot(*session->core, now);
      session->core->OnControl(peer, "127.0.0.1", d, now);
      (void)session->core->TakeOutgoing();
      const SweepState after = SweepSnapshot(*session->core, now);
      // A variant may have been an OperatorHello with a wrong token, which ends the connection's operator
      // role: the operator presents its token again, so that every variant meets an operator.
      if (who == SweepPeer::kOperator) {
        session->core->OnControl(peer, "127.0.0.1", SweepOk(protocol::OperatorHello{kSweepToken}), now);
        (void)session->core->TakeOutgoing();
      }
      if (after == before) continue;
      ++tally.changed;
      const std::string what = d.message ? std::visit([](const auto& m) { return std::string(typeid(m).name()); }, *d.message)
                                         : std::string("undecodable");
      ++tally.changed_by[what];
      INFO(kind << " byte " << i << " = " << v << " from " << peer << " changed the session (decoded as " << what << ")");
      CHECK(SweepAllowed(who, d));
      // Only an operator's command may touch phase, sim time or parameters; a seat's marker only the log.
      if (who != SweepPeer::kOperator)
        CHECK((after.phase == before.phase && after.sim_ns == before.sim_ns && after.params == before.params));
      // Only a deliberate restart moves sim time back; a start of the running session is refused.
      if (after.sim_ns < before.sim_ns) {
        const auto* c = std::get_if<protocol::SessionControl>(&*d.message);
        CHECK((c && c->command == protocol::SessionControl::Command::kRestart));
      }
      session = std::make_unique<SweepSession>();
    }
  }
  return tally;
}

std::vector<std::pair<std::string, protocol::Message>> SweepRequests(uint32_t seat) {
  protocol::Join join;
  join.name = "late-node";
  join.role = protocol::Role::kTraffic;
  join.host = "pc2";
  join.pid = 4242;
  return {
      {"StatusRequest", protocol::StatusRequest{}},
      {"Join", join},
      {"Heartbeat", protocol::Heartbeat{seat, 21 * kSweepS, 1500, 80'000, 12}},
      {"ParamGet", protocol::ParamGet{"server.broadcast_hz", 7}},
      {"ParamSet", protocol::ParamSet{"server.broadcast_hz", "30", 8}},
      {"Mark", protocol::Mark{"lane change", 0, 9}},
  };
}

}  // namespace

TEST_CASE("control sweep: the one-byte StatusRequest variant that decodes as a start cannot rewind a running session") {
  // The frame: a 32-byte StatusRequest whose union tag (byte 22) is changed from 0x10 to 0x09.
  std::string bytes = protocol::Encode(protocol::StatusRequest{});
  REQUIRE(bytes.size() == 32);
  REQUIRE(static_cast<unsigned char>(bytes[22]) == 0x10);
  bytes[22] = 0x09;
  const protocol::Decoded d = protocol::Decode(bytes);
  REQUIRE(d.message);
  const auto* c = std::get_if<protocol::SessionControl>(&*d.message);
  REQUIRE(c);
  CHECK(c->command == protocol::SessionControl::Command::kStart);
  CHECK(c->at_server_time_ns == 0);
  // From another local process (no token), and from the operator itself: nothing changes, both counted.
  SweepSession s;
  const int64_t now = kSweepT0 + 20 * kSweepS;
  const SweepState before = SweepSnapshot(*s.core, now);
  s.core->OnControl("peer-other", "127.0.0.1", d, now);
  s.core->OnControl("peer-op", "127.0.0.1", d, now);
  CHECK(SweepSnapshot(*s.core, now) == before);
  CHECK(s.core->Counters().not_operator == 1);
  size_t refusals = 0;
  for (const auto& o : s.core->TakeOutgoing())
    if (o.peer == "peer-op") {
      // A Refuse, or the session as it stands with the reason (the asker stays joined).
      const auto* r = std::get_if<protocol::Refuse>(&o.message);
      const auto* st = std::get_if<protocol::SessionStatus>(&o.message);
      const std::string why = r ? r->reason : st ? st->error : "";
      refusals += why.find("already running") != std::string::npos;
    }
  CHECK(refusals == 1);
}

TEST_CASE("control sweep: every one-byte variant of six control requests changes a running session only as an operator command from the operator") {
  uint32_t seat = 0;
  {
    SweepSession probe;
    seat = probe.seat;
  }
  size_t variants = 0, decoded = 0, operator_changes = 0, seat_markers = 0;
  std::map<std::string, size_t> changed_by;
  for (const auto& [kind, message] : SweepRequests(seat)) {
    // Another local process: never a change. The seat's own connection: its markers only.
    const SweepTally other = SweepVariants(kind, message, SweepPeer::kOther);
    CHECK(other.changed == 0);
    const SweepTally seat_t = SweepVariants(kind, message, SweepPeer::kSeat);
    seat_markers += seat_t.changed;
    for (const SweepTally* t : {&other, &seat_t}) {
      variants += t->variants;
      decoded += t->decoded;
    }
    // The operator: only what decodes as an operator command.
    const SweepTally t = SweepVariants(kind, message, SweepPeer::kOperator);
    variants += t.variants;
    decoded += t.decoded;
    operator_changes += t.changed;
    MESSAGE(kind << ": " << t.variants << " variants from the operator, " << t.decoded << " decodable, " << t.changed
                 << " changed the session");
    for (const auto& [k, n] : t.changed_by) changed_by[k] += n;
  }
  MESSAGE(variants << " one-byte variants, " << decoded << " decodable, " << operator_changes
                   << " changed the session (all operator commands from the operator), " << seat_markers
                   << " were markers of the seat's own connection");
  // The operator's own ParamSet and Mark variants do change it (the oracle can see a change).
  CHECK(operator_changes > 0);
  CHECK(variants > 10'000);
}
