// Trust rules of the world core (issue 14): a node id on the state socket is never trusted on its own,
// and a stamp far ahead of the session clock cannot lock an owner out. No sockets: decoded messages in.
#include "platoon/server/world_core.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

namespace {

using namespace platoon;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1000 * kS;

protocol::Decoded Ok(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

protocol::EntityState Car(uint64_t id, int64_t stamp_ns, double x_m) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(x_m, 0, 0);
  return e;
}

struct Core {
  explicit Core(config::SessionDef def = {})
      : core(def, std::make_shared<spdlog::logger>("trust", std::make_shared<spdlog::sinks::null_sink_st>())) {}
  server::WorldCore core;
  // Joins `name` from `peer`; returns the Welcome.
  protocol::Welcome Join(const std::string& name, const std::string& peer, int64_t now) {
    protocol::Join j;
    j.name = name;
    j.role = protocol::Role::kTraffic;
    core.OnControl(peer, "127.0.0.1", Ok(j), now);
    for (auto& o : core.TakeOutgoing())
      if (const auto* w = std::get_if<protocol::Welcome>(&o.message)) return *w;
    FAIL("no welcome for " << name);
    return {};
  }
  void Send(uint32_t node, uint64_t token, std::vector<protocol::EntityState> entities, int64_t now) {
    protocol::NodeState ns;
    ns.node_id = node;
    ns.sequence = ++sequence;
    ns.entities = std::move(entities);
    ns.token = token;
    core.OnState(Ok(ns), now);
  }
  uint64_t sequence = 0;
};

}  // namespace

TEST_CASE("trust: node states must carry the state token of the node they name") {
  Core c;
  const auto alpha = c.Join("alpha", "peer-a", kT0);
  const auto mallory = c.Join("mallory", "peer-m", kT0);
  REQUIRE(alpha.state_token != 0);
  CHECK(alpha.state_token != mallory.state_token);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0, 0}, kT0);
  c.core.Poll(kT0);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 10 * kMs, 5.0)}, kT0 + 10 * kMs);
  REQUIRE(c.core.Entities().count(1) == 1);
  // Another peer names alpha's id: with no token, with its own token, with a guessed one. All refused.
  for (uint64_t token : {uint64_t{0}, mallory.state_token, alpha.state_token ^ 1}) {
    c.Send(alpha.node_id, token, {Car(1, 20 * kMs, 1000.0), Car(2, 20 * kMs, 1000.0)}, kT0 + 20 * kMs);
  }
  CHECK(c.core.Counters().forged_state == 3);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 5.0);  // alpha's car did not move
  CHECK(c.core.Entities().count(2) == 0);                                      // nothing created in alpha's name
  // The forgeries did not count as alpha being alive, nor did they disturb its next real update.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 30 * kMs, 6.0)}, kT0 + 30 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 6.0);
  CHECK(c.core.GetParam("server.refused.forged_state").param.value == "3");

  // A rejoin (a new connection) gets a new token: the old one no longer speaks for the node.
  const auto again = c.Join("alpha", "peer-a", kT0 + 40 * kMs);
  CHECK(again.node_id == alpha.node_id);
  CHECK(again.state_token != alpha.state_token);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 50 * kMs, 99.0)}, kT0 + 50 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 6.0);
  c.Send(alpha.node_id, again.state_token, {Car(1, 60 * kMs, 7.0)}, kT0 + 60 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 7.0);
}

TEST_CASE("trust: a stamp an hour ahead of the session clock is refused and cannot lock the owner out") {
  Core c;
  const auto alpha = c.Join("alpha", "peer-a", kT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0, 0}, kT0);
  c.core.Poll(kT0);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 100 * kMs, 1.0)}, kT0 + 100 * kMs);
  // The owner's own (buggy or tampered) state an hour ahead: refused.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 3600 * kS, 500.0)}, kT0 + 110 * kMs);
  CHECK(c.core.Counters().future_stamp == 1);
  // Half a second ahead is clock noise and lock-step slack: accepted.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 620 * kMs, 2.0)}, kT0 + 120 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 2.0);
  // And the owner's real updates go on.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 700 * kMs, 3.0)}, kT0 + 700 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 3.0);
  CHECK(c.core.Counters().future_stamp == 1);
}

TEST_CASE("world core: a pause before the start instant holds the session at T0 until resumed") {
  Core c;
  c.Join("alpha", "peer-a", kT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0 + kS, 5 * kS}, kT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kPause, 0, 0}, kT0 + 100 * kMs);
  c.core.Poll(kT0 + 2 * kS);  // past the start instant: still paused at T0
  CHECK(c.core.Phase() == protocol::SessionPhase::kPaused);
  CHECK(c.core.SimTimeAt(kT0 + 2 * kS) == 5 * kS);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kResume, 0, 0}, kT0 + 3 * kS);
  c.core.Poll(kT0 + 3 * kS);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(kT0 + 3500 * kMs) == 5500 * kMs);
}

TEST_CASE("trust: the node table is bounded and forgets lost nodes that own nothing") {
  config::SessionDef def;
  def.server.max_nodes = 3;
  def.server.forget_lost_s = 5;
  Core c(def);
  const auto a = c.Join("a", "peer-a", kT0);
  c.Join("b", "peer-b", kT0);
  c.Join("c", "peer-c", kT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0, 0}, kT0);
  c.Send(a.node_id, a.state_token, {Car(1, 0, 1.0)}, kT0);
  // A fourth is refused with the reason; the table does not grow.
  protocol::Join j;
  j.name = "d";
  c.core.OnControl("peer-d", "127.0.0.1", Ok(j), kT0);
  bool refused = false;
  for (auto& o : c.core.TakeOutgoing())
    if (const auto* r = std::get_if<protocol::Refuse>(&o.message)) refused = r->reason.find("max_nodes = 3") != std::string::npos;
  CHECK(refused);
  CHECK(c.core.Nodes().size() == 3);
  // All go silent. After lost_timeout + forget_lost_s, b and c (owning nothing) are forgotten; a, which
  // owns a car, stays so that it can come back for it.
  c.core.Poll(kT0 + 3 * kS);
  CHECK(c.core.Nodes().size() == 3);
  c.core.Poll(kT0 + 7 * kS);
  REQUIRE(c.core.Nodes().size() == 1);
  CHECK(c.core.Nodes().begin()->second.info.name == "a");
  CHECK(c.core.Counters().nodes_forgotten == 2);
  // Room again.
  CHECK(c.Join("d", "peer-d", kT0 + 8 * kS).node_id != 0);
}

TEST_CASE("trust: new entities beyond max_entities_per_node and max_entities are refused and counted") {
  config::SessionDef def;
  def.server.max_entities_per_node = 5;
  def.server.max_entities = 8;
  Core c(def);
  const auto a = c.Join("a", "peer-a", kT0);
  const auto b = c.Join("b", "peer-b", kT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kT0, 0}, kT0);
  std::vector<protocol::EntityState> many;
  for (uint64_t id = 1; id <= 10; ++id) many.push_back(Car(id, kMs, 1.0));
  c.Send(a.node_id, a.state_token, many, kT0 + kMs);
  CHECK(c.core.Entities().size() == 5);
  CHECK(c.core.Counters().entity_limit == 5);
  // a's five still update.
  c.Send(a.node_id, a.state_token, {Car(1, 2 * kMs, 2.0)}, kT0 + 2 * kMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 2.0);
  // b may add only up to the session's 8.
  std::vector<protocol::EntityState> more;
  for (uint64_t id = 101; id <= 105; ++id) more.push_back(Car(id, 3 * kMs, 1.0));
  c.Send(b.node_id, b.state_token, more, kT0 + 3 * kMs);
  CHECK(c.core.Entities().size() == 8);
  CHECK(c.core.Counters().entity_limit == 7);
  CHECK(c.core.GetParam("server.refused.entity_limit").param.value == "7");
}
