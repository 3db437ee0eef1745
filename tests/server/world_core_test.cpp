// The server's world rules, without sockets: messages in, fake reference times (plain int64 ns), what to
// send out.
#include "platoon/server/world_core.hpp"

#include "platoon/protocol/codec.hpp"
#include "platoon/remote_world.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace {

using namespace platoon;
using protocol::SessionPhase;
using server::WorldCore;

constexpr int64_t kCoreMs = 1'000'000;
constexpr int64_t kCoreS = 1'000'000'000;
// Reference times start well above 0, as CLOCK_MONOTONIC does.
constexpr int64_t kCoreT0 = 1000 * kCoreS;

protocol::Decoded Ok(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

protocol::EntityState Entity(uint64_t id, int64_t stamp_ns, double x_m, double vx_mps = 0) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(x_m, 0, 0);
  e.kinematics.velocity_mps = Vec3(vx_mps, 0, 0);
  return e;
}

config::SessionDef RealTimeDef() {
  config::SessionDef s;
  s.name = "core-test";
  s.server.broadcast_hz = 10;          // 100 ms period
  s.server.keyframe_interval_s = 1.0;
  s.server.lost_timeout_s = 1.0;
  s.server.stale_grace_s = 2.0;
  s.server.max_forward_delay_ms = 0;
  return s;
}

config::SessionDef LockstepDef() {
  config::SessionDef s = RealTimeDef();
  s.step.lockstep = true;
  s.step.step_hz = 100;                // 10 ms steps
  s.step.deadline_s = 1.0;
  s.server.lost_timeout_s = 30.0;      // deadlines, not loss, in the lock-step tests
  return s;
}

/// A core with a log captured as text.
struct Harness {
  std::ostringstream log_text;
  std::shared_ptr<spdlog::logger> log;
  WorldCore core;

  explicit Harness(const config::SessionDef& def)
      : log(std::make_shared<spdlog::logger>("core-test", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text))),
        core(def, log) {
    log->set_level(spdlog::level::info);
  }

  /// Joins `name` from peer "peer-<name>"; returns the node id of the Welcome.
  uint32_t Join(const std::string& name, int64_t now, bool lockstep_member = false) {
    protocol::Join j;
    j.name = name;
    j.role = protocol::Role::kTraffic;
    j.host = "test";
    j.lockstep_member = lockstep_member;
    core.OnControl("peer-" + name, "127.0.0.1", Ok(j), now);
    for (auto& out : core.TakeOutgoing())
      if (const auto* w = std::get_if<protocol::Welcome>(&out.message)) return w->node_id;
    FAIL("no welcome for " << name);
    return 0;
  }

  void State(uint32_t node, std::vector<protocol::EntityState> entities, int64_t now, uint64_t step_done = 0,
             uint64_t next_step = 0) {
    protocol::NodeState ns;
    ns.node_id = node;
    ns.sequence = ++sequence;
    ns.entities = std::move(entities);
    ns.step_done = step_done;
    ns.next_step = next_step;
    core.Merge(ns, now);
  }

  void Start(int64_t at, int64_t now, int64_t sim_t0 = 0) {
    core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, at, sim_t0}, now);
  }

  /// The world states queued for broadcast since the last call.
  std::vector<protocol::WorldState> Broadcasts() {
    std::vector<protocol::WorldState> out;
    for (auto& o : core.TakeOutgoing())
      if (o.target == server::Outgoing::Target::kBroadcast) out.push_back(std::get<protocol::WorldState>(o.message));
    return out;
  }

  /// Grants (world states with a step) queued since the last call.
  std::vector<protocol::WorldState> Grants() {
    auto all = Broadcasts();
    std::erase_if(all, [](const auto& w) { return w.step == 0; });
    return all;
  }

  uint64_t sequence = 0;
};

std::vector<uint64_t> Ids(const std::vector<protocol::EntityState>& es) {
  std::vector<uint64_t> ids;
  for (const auto& e : es) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TEST_CASE("world core: a node cannot update another node's entity, the refusal is counted") {
  Harness h(RealTimeDef());
  const uint32_t a = h.Join("a", kCoreT0);
  const uint32_t b = h.Join("b", kCoreT0);
  h.State(a, {Entity(1, 10, 5.0)}, kCoreT0);
  h.State(b, {Entity(1, 20, 99.0)}, kCoreT0 + kCoreMs);

  CHECK(h.core.Counters().foreign_entity == 1);
  const auto& merged = h.core.Entities().at(1).state;
  CHECK(merged.owner_node == a);
  CHECK(merged.kinematics.pose.position_m.x() == 5.0);
  CHECK(merged.kinematics.stamp_ns == 10);
}

TEST_CASE("world core: the newest stamp wins, older and duplicate stamps are refused and counted") {
  Harness h(RealTimeDef());
  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 100, 1.0)}, kCoreT0);
  h.State(a, {Entity(1, 50, 2.0)}, kCoreT0 + 1);   // older
  h.State(a, {Entity(1, 100, 3.0)}, kCoreT0 + 2);  // duplicate stamp
  CHECK(h.core.Counters().stale_update == 2);
  CHECK(h.core.Entities().at(1).state.kinematics.pose.position_m.x() == 1.0);

  h.State(a, {Entity(1, 150, 4.0)}, kCoreT0 + 3);
  CHECK(h.core.Counters().stale_update == 2);
  CHECK(h.core.Entities().at(1).state.kinematics.pose.position_m.x() == 4.0);
}

TEST_CASE("world core: a lost node's entities go stale, then freeze at the extrapolated pose with zero velocity") {
  Harness h(RealTimeDef());
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  REQUIRE(h.core.Phase() == SessionPhase::kRunning);
  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 0, 0.0, 10.0)}, kCoreT0);  // 10 m/s along x at sim 0

  // Silent for just under the timeout: alive. Just over: lost, stale, still moving.
  h.core.Expire(kCoreT0 + kCoreS);
  CHECK_FALSE(h.core.Nodes().at(a).info.lost);
  h.core.Expire(kCoreT0 + kCoreS + 1);
  CHECK(h.core.Nodes().at(a).info.lost);
  CHECK(h.core.Entities().at(1).state.stale);
  CHECK_FALSE(h.core.Entities().at(1).frozen);
  CHECK(h.core.Entities().at(1).state.kinematics.velocity_mps.x() == 10.0);

  // The grace (2 s) runs out: held at the pose it had dead-reckoned to (sim 3 s: x = 30 m), standing still.
  h.core.Expire(kCoreT0 + 3 * kCoreS);
  CHECK_FALSE(h.core.Entities().at(1).frozen);
  h.core.Expire(kCoreT0 + 3 * kCoreS + 1);
  const auto& e = h.core.Entities().at(1);
  CHECK(e.frozen);
  CHECK(e.state.kinematics.velocity_mps.norm() == 0.0);
  CHECK(e.state.kinematics.pose.position_m.x() == doctest::Approx(30.0).epsilon(0.01));
  CHECK(e.state.kinematics.stamp_ns == 3 * kCoreS + 1);
  CHECK(e.state.stale);
}

TEST_CASE("world core: a stall of the server's own is not the nodes' silence, silence after it still counts") {
  Harness h(RealTimeDef());
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 0, 0.0, 10.0)}, kCoreT0);
  h.core.Poll(kCoreT0 + kCoreS / 2);

  // The server did not run from 0.5 s to 6.5 s (a suspended VM): nobody could be heard. The shell says so
  // before its next poll; node a is not lost, its car not stale.
  h.core.ForgiveStall(6 * kCoreS, kCoreT0 + 6 * kCoreS + kCoreS / 2);
  h.core.Poll(kCoreT0 + 6 * kCoreS + kCoreS / 2);
  CHECK_FALSE(h.core.Nodes().at(a).info.lost);
  CHECK_FALSE(h.core.Entities().at(1).state.stale);
  CHECK(h.core.Counters().stalls_forgiven == 1);
  CHECK(h.core.GetParam("server.stalls_forgiven").param.value == "1");

  // Without it the same poll marks it lost (the control case).
  Harness u(RealTimeDef());
  u.Start(kCoreT0, kCoreT0);
  u.core.Poll(kCoreT0);
  const uint32_t ua = u.Join("a", kCoreT0);
  u.State(ua, {Entity(1, 0, 0.0, 10.0)}, kCoreT0);
  u.core.Poll(kCoreT0 + 6 * kCoreS + kCoreS / 2);
  CHECK(u.core.Nodes().at(ua).info.lost);

  // Silence after the stall counts: last heard at 0 s, forgiven 6 s, so lost just after 7 s.
  h.core.Poll(kCoreT0 + 7 * kCoreS - 1);
  CHECK_FALSE(h.core.Nodes().at(a).info.lost);
  h.core.Poll(kCoreT0 + 7 * kCoreS + 1);
  CHECK(h.core.Nodes().at(a).info.lost);
  CHECK(h.core.Entities().at(1).state.stale);
}

TEST_CASE("world core: a stall leaves no false trail: repeated joins on a live connection keep id and token, a backlog gap is no loss") {
  Harness h(RealTimeDef());
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 0, 0.0, 10.0)}, kCoreT0);
  const uint64_t token = h.core.Nodes().at(a).state_token;
  h.log_text.str("");
  // The node heard nothing while the server stood still and sent three joins on its connection: each is
  // answered with the same id and token, none is a rejoin in the log.
  h.core.ForgiveStall(5 * kCoreS, kCoreT0 + 5 * kCoreS);
  for (int i = 0; i < 3; ++i) CHECK(h.Join("a", kCoreT0 + 5 * kCoreS) == a);
  CHECK(h.core.Nodes().at(a).state_token == token);
  CHECK(h.log_text.str().find("rejoined") == std::string::npos);
  // The sender dropped 200 states while nobody read: the gap right after the stall is no loss.
  h.sequence += 200;
  h.State(a, {Entity(1, 5 * kCoreS, 50.0, 10.0)}, kCoreT0 + 5 * kCoreS + kCoreS / 2);
  CHECK(h.core.Nodes().at(a).states_missed == 0);
  CHECK(h.core.Nodes().at(a).states_stall_dropped == 200);
  CHECK(h.core.Nodes().at(a).info.loss_fraction == 0.f);
  CHECK(h.core.GetParam("server.states_stall_dropped").param.value == "200");
  // Later gaps are loss again (the control case).
  h.sequence += 3;
  h.State(a, {Entity(1, 7 * kCoreS, 70.0, 10.0)}, kCoreT0 + 7 * kCoreS);
  CHECK(h.core.Nodes().at(a).states_missed == 3);
  CHECK(h.core.Nodes().at(a).info.loss_fraction > 0.f);
  // The same name from another connection after the node was lost is a real rejoin: a new token, logged.
  h.core.Poll(kCoreT0 + 20 * kCoreS);
  REQUIRE(h.core.Nodes().at(a).info.lost);
  protocol::Join j;
  j.name = "a";
  j.role = protocol::Role::kTraffic;
  h.core.OnControl("peer-a-again", "127.0.0.1", Ok(j), kCoreT0 + 20 * kCoreS);
  (void)h.core.TakeOutgoing();
  CHECK(h.core.Nodes().at(a).state_token != token);
  CHECK(h.log_text.str().find("rejoined") != std::string::npos);
}

TEST_CASE("world core: with stale_remove a lost node's entities are removed after the grace and listed as removed") {
  auto def = RealTimeDef();
  def.server.stale_remove = true;
  Harness h(def);
  h.core.Poll(kCoreT0);
  h.Broadcasts();
  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 0, 0.0), Entity(2, 0, 1.0)}, kCoreT0);
  h.core.Expire(kCoreT0 + 2 * kCoreS);   // lost
  CHECK(h.core.Entities().size() == 2);
  h.core.Expire(kCoreT0 + 4 * kCoreS);   // grace over
  CHECK(h.core.Entities().empty());
  h.core.Poll(kCoreT0 + 4 * kCoreS);
  const auto sent = h.Broadcasts();
  REQUIRE(sent.size() == 1);
  // A keyframe here (1 s since the last): it lists no entities, so receivers drop them.
  CHECK(sent[0].entities.empty());
}

TEST_CASE("world core: a delta carries only changed and removed entities, a keyframe the full set and the node table") {
  Harness h(RealTimeDef());
  h.core.Poll(kCoreT0);  // first broadcast: keyframe
  const auto first = h.Broadcasts();
  REQUIRE(first.size() == 1);
  CHECK(first[0].keyframe);

  const uint32_t a = h.Join("a", kCoreT0);
  const uint32_t b = h.Join("b", kCoreT0);
  h.State(a, {Entity(1, 10, 0.0), Entity(2, 10, 0.0)}, kCoreT0 + 1);
  h.State(b, {Entity(3, 10, 0.0)}, kCoreT0 + 1);
  h.core.Poll(kCoreT0 + 2);  // forward delay 0: a delta of what arrived
  auto sent = h.Broadcasts();
  REQUIRE(sent.size() == 1);
  CHECK_FALSE(sent[0].keyframe);
  CHECK(Ids(sent[0].entities) == std::vector<uint64_t>{1, 2, 3});
  CHECK(sent[0].nodes.empty());

  // One update and one departure: the delta names exactly those.
  h.State(a, {Entity(2, 20, 1.0)}, kCoreT0 + 10 * kCoreMs);
  h.core.OnControl("peer-b", "127.0.0.1", Ok(protocol::Leave{b, "done"}), kCoreT0 + 10 * kCoreMs);
  h.core.TakeOutgoing();
  h.core.Poll(kCoreT0 + 11 * kCoreMs);
  sent = h.Broadcasts();
  REQUIRE(sent.size() == 1);
  CHECK_FALSE(sent[0].keyframe);
  CHECK(Ids(sent[0].entities) == std::vector<uint64_t>{2});
  CHECK(sent[0].removed_entities == std::vector<uint64_t>{3});

  // Nothing changed: no forwarding; the next periodic slot after 1 s is a keyframe with everything.
  h.core.Poll(kCoreT0 + 50 * kCoreMs);
  CHECK(h.Broadcasts().empty());
  h.core.Poll(kCoreT0 + kCoreS);
  sent = h.Broadcasts();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].keyframe);
  CHECK(Ids(sent[0].entities) == std::vector<uint64_t>{1, 2});
  REQUIRE(sent[0].nodes.size() == 1);
  CHECK(sent[0].nodes[0].name == "a");
  CHECK(sent[0].sequence > first[0].sequence);
}

TEST_CASE("world core: sim time stands while paused, advances after resume and stands after stop") {
  using Command = protocol::SessionControl::Command;
  Harness h(RealTimeDef());
  h.Start(kCoreT0 + kCoreS, kCoreT0, 5 * kCoreS);  // sim 5 s begins 1 s from now
  CHECK(h.core.Phase() == SessionPhase::kStarting);
  CHECK(h.core.SimTimeAt(kCoreT0) == 4 * kCoreS);  // counts up to T0
  h.core.Poll(kCoreT0 + kCoreS);
  CHECK(h.core.Phase() == SessionPhase::kRunning);
  CHECK(h.core.SimTimeAt(kCoreT0 + 3 * kCoreS) == 7 * kCoreS);

  h.core.Control({Command::kPause, 0, 0}, kCoreT0 + 3 * kCoreS);
  CHECK(h.core.Phase() == SessionPhase::kPaused);
  CHECK(h.core.SimTimeAt(kCoreT0 + 10 * kCoreS) == 7 * kCoreS);

  h.core.Control({Command::kResume, 0, 0}, kCoreT0 + 10 * kCoreS);
  CHECK(h.core.SimTimeAt(kCoreT0 + 12 * kCoreS) == 9 * kCoreS);

  h.core.Control({Command::kStop, 0, 0}, kCoreT0 + 12 * kCoreS);
  CHECK(h.core.Phase() == SessionPhase::kStopped);
  CHECK(h.core.SimTimeAt(kCoreT0 + 20 * kCoreS) == 9 * kCoreS);
  CHECK_FALSE(h.core.Finished());  // a stop command does not end the server
}

TEST_CASE("world core: a node that rejoins under its name keeps its id and its entities") {
  Harness h(RealTimeDef());
  const uint32_t a = h.Join("a", kCoreT0);
  h.Join("b", kCoreT0);
  h.State(a, {Entity(7, 10, 1.0)}, kCoreT0);
  h.core.Expire(kCoreT0 + 2 * kCoreS);
  REQUIRE(h.core.Entities().at(7).state.stale);

  const uint32_t again = h.Join("a", kCoreT0 + 2 * kCoreS + 1);
  CHECK(again == a);
  CHECK(h.core.Nodes().size() == 2);
  CHECK_FALSE(h.core.Nodes().at(a).info.lost);
  // Its entity stays stale until it sends it again: the pose held is the one from before the loss.
  CHECK(h.core.Entities().at(7).state.stale);
  h.core.OnControl("peer-a", "127.0.0.1", Ok(protocol::Heartbeat{a}), kCoreT0 + 2 * kCoreS + 2);
  CHECK(h.core.Entities().at(7).state.stale);
  // And it may update them again, which makes them live.
  h.State(a, {Entity(7, 20, 2.0)}, kCoreT0 + 3 * kCoreS);
  CHECK(h.core.Entities().at(7).state.kinematics.pose.position_m.x() == 2.0);
  CHECK_FALSE(h.core.Entities().at(7).state.stale);
  CHECK(h.core.Counters().foreign_entity == 0);
}

TEST_CASE("world core: systems run in priority order and see joins, accepted updates and broadcasts") {
  struct Probe : server::WorldSystem {
    Probe(std::vector<std::string>& trace, std::string name) : trace_(trace), name_(std::move(name)) {}
    void OnNodeEvent(const server::NodeEvent& e) override {
      trace_.push_back(name_ + ":" + server::NodeEventName(e.kind) + ":" + e.name);
    }
    void OnUpdateAccepted(const protocol::EntityState& e, const server::NodeRecord& owner, int64_t) override {
      trace_.push_back(name_ + ":update:" + std::to_string(e.id) + ":" + owner.info.name);
    }
    void PostBroadcast(const protocol::WorldState&, int64_t) override { ++broadcasts; }
    std::vector<std::string>& trace_;
    std::string name_;
    int broadcasts = 0;
  };
  struct Bouncer : server::WorldSystem {
    std::string PreJoin(const protocol::Join& j, const std::string&) override {
      return j.name == "intruder" ? "not on the list" : "";
    }
  };
  std::vector<std::string> trace;
  Harness h(RealTimeDef());
  auto recorder = std::make_shared<Probe>(trace, "recorder");
  h.core.AddSystem(recorder, server::system_priority::kRecorder);
  h.core.AddSystem(std::make_shared<Probe>(trace, "policy"), server::system_priority::kPolicy);
  h.core.AddSystem(std::make_shared<Bouncer>(), server::system_priority::kPolicy);

  const uint32_t a = h.Join("a", kCoreT0);
  h.State(a, {Entity(1, 10, 0.0)}, kCoreT0);
  h.State(a, {Entity(1, 5, 0.0)}, kCoreT0);  // refused: no hook call
  protocol::Join intruder;
  intruder.name = "intruder";
  h.core.OnControl("peer-x", "10.0.0.9", Ok(intruder), kCoreT0);
  const auto out = h.core.TakeOutgoing();
  REQUIRE(out.size() == 1);
  CHECK(std::holds_alternative<protocol::Refuse>(out[0].message));
  CHECK(h.core.Counters().join_refused == 1);
  CHECK(h.core.Nodes().size() == 1);
  h.core.Poll(kCoreT0);

  CHECK(trace == std::vector<std::string>{"policy:joined:a", "recorder:joined:a", "policy:update:1:a",
                                          "recorder:update:1:a"});
  CHECK(recorder->broadcasts == 1);
}

// ---- lock-step ------------------------------------------------------------------------------------

TEST_CASE("world core: a lock-step member with nothing due before step n is not waited for before it") {
  Harness h(LockstepDef());
  const uint32_t fast = h.Join("fast", kCoreT0, true);
  const uint32_t slow = h.Join("slow", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  REQUIRE(h.Grants().size() == 1);
  // slow (a 20 Hz module at 100 Hz steps) did step 1 and computes nothing before step 6.
  h.State(slow, {}, kCoreT0 + kCoreMs, 1, 6);
  int64_t now = kCoreT0 + kCoreMs;
  for (uint64_t k = 1; k <= 4; ++k) {
    h.State(fast, {}, now, k);
    h.core.Poll(now);
    const auto g = h.Grants();
    REQUIRE(g.size() == 1);
    CHECK(g[0].step == k + 1);  // granted on fast's acknowledgement alone
    now += kCoreMs;
  }
  // Step 5 done by fast: step 6 is granted; slow computes step 6, so step 7 waits for it again.
  h.State(fast, {}, now, 5);
  h.core.Poll(now);
  REQUIRE(h.Grants().size() == 1);
  h.State(fast, {}, now, 6);
  h.core.Poll(now);
  CHECK(h.Grants().empty());
  h.State(slow, {}, now, 6, 11);
  h.core.Poll(now);
  const auto g = h.Grants();
  REQUIRE(g.size() == 1);
  CHECK(g[0].step == 7);
}

TEST_CASE("world core: lock-step grants step k+1 only after every member acknowledged step k") {
  Harness h(LockstepDef());
  const uint32_t a = h.Join("a", kCoreT0, true);
  const uint32_t b = h.Join("b", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);

  // Running: the first grant is step 1 at sim T0 = 0, a keyframe, phase running.
  auto grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 1);
  CHECK(grants[0].sim_time_ns == 0);
  CHECK(grants[0].keyframe);
  CHECK(grants[0].phase == SessionPhase::kRunning);
  CHECK(h.core.StepsGranted() == 1);

  // a finishes step 1 (entities and ack in one state); b has not: no grant, sim time stands at t_1.
  h.State(a, {Entity(1, 0, 0.0)}, kCoreT0 + kCoreMs, 1);
  h.core.Poll(kCoreT0 + kCoreMs);
  CHECK(h.Grants().empty());
  CHECK(h.core.SimTimeAt(kCoreT0 + 100 * kCoreMs) == 0);
  CHECK(h.core.NextDueNs() > kCoreT0 + kCoreMs);

  // b finishes: grant 2 at t_2 = 10 ms, a delta carrying both nodes' step-1 results.
  h.State(b, {Entity(2, 0, 5.0)}, kCoreT0 + 2 * kCoreMs);
  h.State(b, {}, kCoreT0 + 2 * kCoreMs, 1);
  CHECK(h.core.NextDueNs() <= kCoreT0 + 2 * kCoreMs);
  h.core.Poll(kCoreT0 + 2 * kCoreMs);
  grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 2);
  CHECK(grants[0].sim_time_ns == 10 * kCoreMs);
  CHECK_FALSE(grants[0].keyframe);
  CHECK(Ids(grants[0].entities) == std::vector<uint64_t>{1, 2});
  CHECK(h.core.SimTimeAt(kCoreT0 + 3 * kCoreS) == 10 * kCoreMs);
  CHECK(h.core.Phase() == SessionPhase::kRunning);

  // An acknowledgement beyond the granted step does not pre-approve the next one.
  h.State(a, {}, kCoreT0 + 3 * kCoreMs, 5);
  h.State(b, {}, kCoreT0 + 3 * kCoreMs, 2);
  h.core.Poll(kCoreT0 + 3 * kCoreMs);
  grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 3);
  h.core.Poll(kCoreT0 + 4 * kCoreMs);
  CHECK(h.Grants().empty());
  CHECK(h.core.StepsGranted() == 3);
}

TEST_CASE("world core: lock-step never waits for a non-member, and re-sends the grant every 200 ms while waiting") {
  Harness h(LockstepDef());
  const uint32_t a = h.Join("a", kCoreT0, true);
  h.Join("viewer", kCoreT0, false);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  REQUIRE(h.Grants().size() == 1);
  h.State(a, {}, kCoreT0 + kCoreMs, 1);
  h.core.Poll(kCoreT0 + kCoreMs);
  auto grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 2);

  // a is slow with step 2: the same grant goes out again, as a keyframe, not as a new step.
  h.core.Poll(kCoreT0 + 150 * kCoreMs);
  CHECK(h.Grants().empty());
  h.core.Poll(kCoreT0 + 201 * kCoreMs);
  grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 2);
  CHECK(grants[0].keyframe);
  CHECK(grants[0].sim_time_ns == 10 * kCoreMs);
  REQUIRE(grants[0].nodes.size() == 2);
  CHECK(h.core.StepsGranted() == 2);
}

TEST_CASE("world core: lock-step names a late member after the deadline and, with drop policy, drops it") {
  auto def = LockstepDef();
  def.step.drop_late = true;
  Harness h(def);
  std::vector<server::NodeEvent> events;
  struct Events : server::WorldSystem {
    explicit Events(std::vector<server::NodeEvent>& e) : out(e) {}
    void OnNodeEvent(const server::NodeEvent& e) override { out.push_back(e); }
    std::vector<server::NodeEvent>& out;
  };
  h.core.AddSystem(std::make_shared<Events>(events));
  const uint32_t a = h.Join("a", kCoreT0, true);
  const uint32_t slow = h.Join("slow", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  h.State(a, {}, kCoreT0 + kCoreMs, 1);
  h.Grants();
  h.core.Poll(kCoreT0 + 999 * kCoreMs);
  for (const auto& g : h.Grants()) CHECK(g.step == 1);  // re-sent grants only
  CHECK(h.log_text.str().find("has not finished") == std::string::npos);

  h.core.Poll(kCoreT0 + kCoreS);
  CHECK(h.log_text.str().find("lock-step: node 'slow' has not finished step 1 after 1.0 s") != std::string::npos);
  CHECK(h.core.Nodes().at(slow).dropped);
  REQUIRE(!events.empty());
  CHECK(events.back().kind == server::NodeEvent::Kind::kDropped);
  CHECK(events.back().name == "slow");
  // The session goes on without it.
  auto grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 2);
}

TEST_CASE("world core: lock-step without drop policy keeps waiting and warns once per deadline period") {
  Harness h(LockstepDef());
  h.Join("slow", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  h.Grants();
  for (int64_t t = kCoreT0; t <= kCoreT0 + 2500 * kCoreMs; t += 10 * kCoreMs) h.core.Poll(t);
  std::string text = h.log_text.str();
  size_t warnings = 0;
  for (size_t at = text.find("has not finished step 1"); at != std::string::npos;
       at = text.find("has not finished step 1", at + 1))
    ++warnings;
  CHECK(warnings == 2);  // at 1.0 s and 2.0 s
  CHECK(h.core.StepsGranted() == 1);
  CHECK(h.core.CurrentStep() == 1);
}

TEST_CASE("world core: a lock-step member joining mid-session is required from the next grant, one that leaves is not") {
  Harness h(LockstepDef());
  const uint32_t a = h.Join("a", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  REQUIRE(h.Grants().size() == 1);

  // b joins while step 1 is out: not waited for on step 1.
  const uint32_t b = h.Join("b", kCoreT0 + kCoreMs, true);
  h.State(a, {}, kCoreT0 + 2 * kCoreMs, 1);
  h.core.Poll(kCoreT0 + 2 * kCoreMs);
  REQUIRE(h.Grants().size() == 1);
  // ... but on step 2.
  h.State(a, {}, kCoreT0 + 3 * kCoreMs, 2);
  h.core.Poll(kCoreT0 + 3 * kCoreMs);
  CHECK(h.Grants().empty());
  // b leaves: no longer waited for.
  h.core.OnControl("peer-b", "127.0.0.1", Ok(protocol::Leave{b, "bye"}), kCoreT0 + 4 * kCoreMs);
  h.core.Poll(kCoreT0 + 4 * kCoreMs);
  auto grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 3);
}

TEST_CASE("world core: lock-step pause stops granting, resume goes on") {
  using Command = protocol::SessionControl::Command;
  Harness h(LockstepDef());
  const uint32_t a = h.Join("a", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  REQUIRE(h.Grants().size() == 1);
  h.core.Control({Command::kPause, 0, 0}, kCoreT0 + kCoreMs);
  h.State(a, {}, kCoreT0 + 2 * kCoreMs, 1);
  h.core.Poll(kCoreT0 + 3 * kCoreMs);
  CHECK(h.Grants().empty());
  CHECK(h.core.Phase() == SessionPhase::kPaused);
  CHECK(h.core.SimTimeAt(kCoreT0 + 5 * kCoreS) == 0);
  h.core.Control({Command::kResume, 0, 0}, kCoreT0 + 5 * kCoreS);
  h.core.Poll(kCoreT0 + 5 * kCoreS);
  auto grants = h.Grants();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].step == 2);
  CHECK(h.core.SimTimeAt(kCoreT0 + 6 * kCoreS) == 10 * kCoreMs);
}

TEST_CASE("world core: parameter session.step is the lock-step step granted last, also while paused") {
  using Command = protocol::SessionControl::Command;
  Harness h(LockstepDef());
  CHECK(h.core.GetParam("session.step").param.value == "0");
  const uint32_t a = h.Join("a", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0);
  h.core.Poll(kCoreT0);
  h.State(a, {}, kCoreT0 + kCoreMs, 1);
  h.core.Poll(kCoreT0 + 2 * kCoreMs);
  REQUIRE(h.Grants().size() == 2);
  h.core.Control({Command::kPause, 0, 0}, kCoreT0 + 3 * kCoreMs);
  const auto step = h.core.GetParam("session.step");
  CHECK(step.ok);
  CHECK_FALSE(step.param.writable);
  CHECK(step.param.value == "2");
  CHECK(h.core.ListParams("session.step").size() == 2);  // session.step and session.steps_granted
}

TEST_CASE("world core: a lock-step session stops at end_s, broadcasts the stop and reports finished") {
  auto def = LockstepDef();
  def.step.end_s = 0.05;  // steps at 0, 10, ..., 50 ms: six grants
  Harness h(def);
  const uint32_t a = h.Join("a", kCoreT0, true);
  h.Start(kCoreT0, kCoreT0, 0);
  int64_t now = kCoreT0;
  h.core.Poll(now);
  uint64_t last_step = 0;
  for (int i = 0; i < 20 && !h.core.Finished(); ++i) {
    for (const auto& g : h.Grants()) last_step = g.step;
    now += kCoreMs;
    h.State(a, {Entity(1, h.core.SimTimeAt(now), 0.0)}, now, last_step);
    h.core.Poll(now);
  }
  CHECK(h.core.Finished());
  CHECK(h.core.StepsGranted() == 6);
  CHECK(last_step == 6);
  CHECK(h.core.Phase() == SessionPhase::kStopped);
  CHECK(h.core.SimTimeAt(now + kCoreS) == 50 * kCoreMs);
  const auto sent = h.Broadcasts();
  REQUIRE(!sent.empty());
  CHECK(sent.back().phase == SessionPhase::kStopped);
  CHECK(sent.back().keyframe);
  CHECK(sent.back().step == 0);
}

TEST_CASE("world core: Welcome carries the step period in lock-step and 0 in real time") {
  for (bool lockstep : {false, true}) {
    Harness h(lockstep ? LockstepDef() : RealTimeDef());
    protocol::Join member;
    member.name = "a";
    member.lockstep_member = true;
    h.core.OnControl("p", "127.0.0.1", Ok(member), kCoreT0);
    const auto out = h.core.TakeOutgoing();
    REQUIRE(out.size() == 1);
    const auto* w = std::get_if<protocol::Welcome>(&out[0].message);
    REQUIRE(w);
    CHECK(w->step_ns == (lockstep ? 10 * kCoreMs : 0));
  }
}

TEST_CASE("world core: a second live node under a used name is refused, a lost node reclaims its name") {
  Harness h(RealTimeDef());
  auto join_from = [&](const std::string& peer, uint32_t pid, int64_t now) -> protocol::Message {
    protocol::Join j;
    j.name = "alpha";
    j.role = protocol::Role::kTraffic;
    j.host = "pc" + std::to_string(pid);
    j.pid = pid;
    h.core.OnControl(peer, "127.0.0.1", Ok(j), now);
    auto out = h.core.TakeOutgoing();
    REQUIRE(!out.empty());
    REQUIRE(out.front().peer == peer);
    return out.front().message;
  };
  const auto first = join_from("peer-1", 101, kCoreT0);
  REQUIRE(std::holds_alternative<protocol::Welcome>(first));
  const uint32_t id = std::get<protocol::Welcome>(first).node_id;
  h.State(id, {Entity(5, 10, 1.0)}, kCoreT0);

  // Another connection while the first lives: refused, counted, and the first keeps its name and connection.
  const auto second = join_from("peer-2", 202, kCoreT0 + 100 * kCoreMs);
  REQUIRE(std::holds_alternative<protocol::Refuse>(second));
  CHECK(std::get<protocol::Refuse>(second).reason == "node name 'alpha' is in use by a live node (host pc101, pid 101)");
  CHECK(h.core.Counters().join_refused == 1);
  CHECK(h.core.Nodes().size() == 1);
  CHECK(h.core.Nodes().at(id).peer == "peer-1");
  CHECK(h.core.Nodes().at(id).info.pid == 101);
  CHECK(h.log_text.str().find("is in use by a live node") != std::string::npos);

  // The same connection may join again (a client that re-sends its join): welcomed, same id.
  const auto again = join_from("peer-1", 101, kCoreT0 + 200 * kCoreMs);
  REQUIRE(std::holds_alternative<protocol::Welcome>(again));
  CHECK(std::get<protocol::Welcome>(again).node_id == id);

  // Once the first is lost, a new connection reclaims the name, its id and its entities.
  h.core.Expire(kCoreT0 + 2 * kCoreS);
  REQUIRE(h.core.Nodes().at(id).info.lost);
  const auto reclaimed = join_from("peer-2", 202, kCoreT0 + 2 * kCoreS + 1);
  REQUIRE(std::holds_alternative<protocol::Welcome>(reclaimed));
  CHECK(std::get<protocol::Welcome>(reclaimed).node_id == id);
  CHECK(h.core.Nodes().at(id).peer == "peer-2");
  CHECK_FALSE(h.core.Nodes().at(id).info.lost);
  CHECK(h.core.Counters().join_refused == 1);
  // And now the old connection is the stranger.
  const auto old = join_from("peer-1", 101, kCoreT0 + 2 * kCoreS + 2);
  CHECK(std::holds_alternative<protocol::Refuse>(old));
  CHECK(h.core.Counters().join_refused == 2);
}

TEST_CASE("world core: a large world's keyframe rolls over the interval's periodic broadcasts, a slice each") {
  auto def = RealTimeDef();  // 10 Hz, keyframe every 1 s: 10 slices
  def.server.lost_timeout_s = 30;  // node a stays alive without heartbeats (else its entities change to stale)
  Harness h(def);
  h.core.Poll(kCoreT0);
  h.Broadcasts();
  const uint32_t a = h.Join("a", kCoreT0);
  std::vector<protocol::EntityState> many;
  const size_t n = WorldCore::kWholeKeyframeEntities + 88;  // 600: past the auto threshold
  for (uint64_t id = 1; id <= n; ++id) many.push_back(Entity(id, 10, 0.0));
  h.State(a, many, kCoreT0 + 1);
  h.core.Poll(kCoreT0 + 2);  // the delta of all 600
  REQUIRE(h.Broadcasts().size() == 1);

  // One keyframe interval of periodic broadcasts: slices 0..9, nothing else, each id in exactly one slice
  // (by state, or by id while its state went out within the last interval: slice 0 only, 1 s - 2 ns after
  // the delta; slices 1..9 come later than 1 s after it).
  std::map<uint64_t, int> listed;
  size_t largest = 0, by_id = 0;
  for (int k = 0; k < 10; ++k) {
    h.core.Poll(kCoreT0 + kCoreS + k * 100 * kCoreMs);
    const auto sent = h.Broadcasts();
    REQUIRE(sent.size() == 1);
    const auto& w = sent[0];
    CHECK_FALSE(w.keyframe);
    CHECK(w.keyframe_parts == 10);
    CHECK(w.keyframe_part == k);
    CHECK(w.nodes.size() == (k == 0 ? 1u : 0u));  // the node table rides on the first slice
    for (const auto& e : w.entities) {
      CHECK(e.id % 10 == static_cast<uint64_t>(k));
      ++listed[e.id];
    }
    for (uint64_t id : w.kept_entities) {
      CHECK(id % 10 == static_cast<uint64_t>(k));
      ++listed[id];
    }
    CHECK(w.kept_entities.size() == (k == 0 ? n / 10 : 0u));
    by_id += w.kept_entities.size();
    largest = std::max(largest, w.entities.size() + w.kept_entities.size());
  }
  CHECK(by_id == n / 10);
  CHECK(listed.size() == n);
  CHECK(std::all_of(listed.begin(), listed.end(), [](const auto& kv) { return kv.second == 1; }));
  CHECK(largest == n / 10);  // no broadcast carries more than its slice

  // A change rides on the next broadcast whatever its slice; the next cycle starts at the next interval.
  h.State(a, {Entity(5, 20, 1.0)}, kCoreT0 + 2 * kCoreS - 1);
  h.core.Poll(kCoreT0 + 2 * kCoreS);
  const auto next = h.Broadcasts();
  REQUIRE(next.size() == 1);
  CHECK(next[0].keyframe_part == 0);
  CHECK(std::count_if(next[0].entities.begin(), next[0].entities.end(), [](const auto& e) { return e.id == 5; }) == 1);

  // keyframe_parts = 1 keeps whole keyframes at any size.
  auto whole_def = def;
  whole_def.server.keyframe_parts = 1;
  Harness w(whole_def);
  w.core.Poll(kCoreT0);
  w.Broadcasts();
  const uint32_t b = w.Join("b", kCoreT0);
  w.State(b, many, kCoreT0 + 1);
  w.core.Poll(kCoreT0 + 2);
  w.Broadcasts();
  w.core.Poll(kCoreT0 + kCoreS);
  const auto kf = w.Broadcasts();
  REQUIRE(kf.size() == 1);
  CHECK(kf[0].keyframe);
  CHECK(kf[0].keyframe_parts == 0);
  CHECK(kf[0].entities.size() == n);
}

TEST_CASE("world core: a slice lists by id what went out within the interval, and a receiver following the stream holds the server world") {
  auto def = RealTimeDef();  // 10 Hz, keyframe every 1 s: 10 slices
  def.server.lost_timeout_s = 30;
  Harness h(def);
  h.core.Poll(kCoreT0);
  h.Broadcasts();
  const uint32_t a = h.Join("a", kCoreT0), b = h.Join("b", kCoreT0);
  RemoteWorld receiver;
  // Node a: 600 vehicles, each sending once a second at a phase of its own (as heartbeats do), but
  // vehicle 77, which falls silent after 1.5 s (its owner stays). Node b: 3 vehicles, leaving at 2.5 s; the
  // receiver misses that broadcast (the removal), so only the slices' sweep can remove them.
  const uint64_t n = WorldCore::kWholeKeyframeEntities + 88, silent = 77;
  h.State(b, {Entity(1001, 1, 0.0), Entity(1002, 1, 0.0), Entity(1003, 1, 0.0)}, kCoreT0 + 1);
  size_t by_state = 0, by_id = 0, bytes = 0, bytes_all_states = 0;
  int64_t silent_last_broadcast = -1, silent_listed_again = -1;
  bool missed_removal = false;
  for (int64_t t = kCoreT0 + 10 * kCoreMs; t <= kCoreT0 + 5 * kCoreS; t += 10 * kCoreMs) {
    std::vector<protocol::EntityState> due;
    for (uint64_t id = 1; id <= n; ++id) {
      if (id == silent && t > kCoreT0 + 1500 * kCoreMs) continue;
      const int64_t phase = static_cast<int64_t>(id % 100) * 10 * kCoreMs;  // 0..990 ms
      if ((t - kCoreT0) % kCoreS == phase) due.push_back(Entity(id, t, static_cast<double>(t - kCoreT0) / kCoreS));
    }
    if (!due.empty()) h.State(a, due, t);
    if (t == kCoreT0 + 2500 * kCoreMs) h.core.OnControl("peer-b", "127.0.0.1", Ok(protocol::Leave{b, "done"}), t);
    h.core.Poll(t);
    for (const auto& w : h.Broadcasts()) {
      if (!w.removed_entities.empty()) {
        missed_removal = true;
        continue;
      }
      receiver.Apply(w, t, false);
      const bool has_silent = std::any_of(w.entities.begin(), w.entities.end(), [&](const auto& e) { return e.id == silent; });
      if (has_silent && t > kCoreT0 + 1500 * kCoreMs) {
        if (silent_last_broadcast < 0) silent_last_broadcast = t;
        else if (silent_listed_again < 0) silent_listed_again = t;
      }
      if (w.keyframe_parts > 1 && t >= kCoreT0 + 3 * kCoreS) {  // steady state: every vehicle sent within the last second
        // A slice's own states: its ids not updated in this very tick (those ride as changes).
        by_state += static_cast<size_t>(std::count_if(w.entities.begin(), w.entities.end(), [&](const auto& e) {
          return e.id % w.keyframe_parts == w.keyframe_part && e.kinematics.stamp_ns < t;
        }));
        by_id += w.kept_entities.size();
        protocol::WorldState all_states = w;
        for (uint64_t id : w.kept_entities) all_states.entities.push_back(h.core.Entities().at(id).state);
        all_states.kept_entities.clear();
        bytes += protocol::Encode(w).size();
        bytes_all_states += protocol::Encode(all_states).size();
      }
    }
  }
  CHECK(missed_removal);
  // The receiver holds exactly the server's entities, with the newest states (b's swept by the slices).
  const auto held = receiver.Received();
  REQUIRE(held.size() == h.core.Entities().size());
  CHECK(held.size() == n);
  for (const auto& e : held) {
    const auto it = h.core.Entities().find(e.id);
    REQUIRE(it != h.core.Entities().end());
    CHECK(e.kinematics.stamp_ns == it->second.state.kinematics.stamp_ns);
  }
  // Steady state: slices carry ids, not states (each vehicle's state went out within the last second);
  // the silent vehicle's unchanged state is listed again once its last broadcast is a keyframe interval old.
  CHECK(by_id > 0);
  CHECK(by_state * 20 <= by_id);  // the silent vehicle's
  CHECK(bytes * 4 < bytes_all_states);
  REQUIRE(silent_last_broadcast > 0);
  REQUIRE(silent_listed_again > 0);
  CHECK(silent_listed_again - silent_last_broadcast >= kCoreS);
  CHECK(silent_listed_again - silent_last_broadcast <= kCoreS + 100 * kCoreMs);
  MESSAGE("slices in steady state: " << by_id << " ids, " << by_state << " states; " << bytes << " bytes against "
                                     << bytes_all_states << " with every state");
}
