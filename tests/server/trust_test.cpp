// Trust rules of the world core: a node id on the state socket is never trusted on its own,
// and a stamp far ahead of the session clock cannot lock an owner out. No sockets: decoded messages in.
#include "platoon/server/world_core.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

namespace {

using namespace platoon;

constexpr int64_t kTrustMs = 1'000'000;
constexpr int64_t kTrustS = 1'000'000'000;
constexpr int64_t kTrustT0 = 1000 * kTrustS;

protocol::Decoded TrustOk(protocol::Message m) {
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
    core.OnControl(peer, "127.0.0.1", TrustOk(j), now);
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
    core.OnState(TrustOk(ns), now);
  }
  uint64_t sequence = 0;
};

}  // namespace

TEST_CASE("trust: node states must carry the state token of the node they name") {
  Core c;
  const auto alpha = c.Join("alpha", "peer-a", kTrustT0);
  const auto mallory = c.Join("mallory", "peer-m", kTrustT0);
  REQUIRE(alpha.state_token != 0);
  CHECK(alpha.state_token != mallory.state_token);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  c.core.Poll(kTrustT0);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 10 * kTrustMs, 5.0)}, kTrustT0 + 10 * kTrustMs);
  REQUIRE(c.core.Entities().count(1) == 1);
  // Another peer names alpha's id: with no token, with its own token, with a guessed one. All refused.
  for (uint64_t token : {uint64_t{0}, mallory.state_token, alpha.state_token ^ 1}) {
    c.Send(alpha.node_id, token, {Car(1, 20 * kTrustMs, 1000.0), Car(2, 20 * kTrustMs, 1000.0)}, kTrustT0 + 20 * kTrustMs);
  }
  CHECK(c.core.Counters().forged_state == 3);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 5.0);  // alpha's car did not move
  CHECK(c.core.Entities().count(2) == 0);                                      // nothing created in alpha's name
  // The forgeries did not count as alpha being alive, nor did they disturb its next real update.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 30 * kTrustMs, 6.0)}, kTrustT0 + 30 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 6.0);
  CHECK(c.core.GetParam("server.refused.forged_state").param.value == "3");

  // A join again on alpha's own live connection (its joins sent while this server stood still) keeps the
  // token: it is the same process.
  CHECK(c.Join("alpha", "peer-a", kTrustT0 + 35 * kTrustMs).state_token == alpha.state_token);
  // A rejoin on a new connection (alpha was lost: a restarted process) gets a new token: the old one no
  // longer speaks for the node.
  c.core.Poll(kTrustT0 + 3 * kTrustS);
  REQUIRE(c.core.Nodes().at(alpha.node_id).info.lost);
  const auto again = c.Join("alpha", "peer-a2", kTrustT0 + 3 * kTrustS + 40 * kTrustMs);
  CHECK(again.node_id == alpha.node_id);
  CHECK(again.state_token != alpha.state_token);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 50 * kTrustMs, 99.0)}, kTrustT0 + 3 * kTrustS + 50 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 6.0);
  c.Send(alpha.node_id, again.state_token, {Car(1, 60 * kTrustMs, 7.0)}, kTrustT0 + 3 * kTrustS + 60 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 7.0);
}

TEST_CASE("trust: a stamp an hour ahead of the session clock is refused and cannot lock the owner out") {
  Core c;
  const auto alpha = c.Join("alpha", "peer-a", kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  c.core.Poll(kTrustT0);
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 100 * kTrustMs, 1.0)}, kTrustT0 + 100 * kTrustMs);
  // The owner's own (buggy or tampered) state an hour ahead: refused.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 3600 * kTrustS, 500.0)}, kTrustT0 + 110 * kTrustMs);
  CHECK(c.core.Counters().future_stamp == 1);
  // Half a second ahead is clock noise and lock-step slack: accepted.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 620 * kTrustMs, 2.0)}, kTrustT0 + 120 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 2.0);
  // And the owner's real updates go on.
  c.Send(alpha.node_id, alpha.state_token, {Car(1, 700 * kTrustMs, 3.0)}, kTrustT0 + 700 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 3.0);
  CHECK(c.core.Counters().future_stamp == 1);
}

TEST_CASE("world core: a pause before the start instant holds the session at T0 until resumed") {
  Core c;
  c.Join("alpha", "peer-a", kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0 + kTrustS, 5 * kTrustS}, kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kPause, 0, 0}, kTrustT0 + 100 * kTrustMs);
  c.core.Poll(kTrustT0 + 2 * kTrustS);  // past the start instant: still paused at T0
  CHECK(c.core.Phase() == protocol::SessionPhase::kPaused);
  CHECK(c.core.SimTimeAt(kTrustT0 + 2 * kTrustS) == 5 * kTrustS);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kResume, 0, 0}, kTrustT0 + 3 * kTrustS);
  c.core.Poll(kTrustT0 + 3 * kTrustS);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(kTrustT0 + 3500 * kTrustMs) == 5500 * kTrustMs);
}

TEST_CASE("trust: the node table is bounded and forgets lost nodes that own nothing") {
  config::SessionDef def;
  def.server.max_nodes = 3;
  def.server.forget_lost_s = 5;
  Core c(def);
  const auto a = c.Join("a", "peer-a", kTrustT0);
  c.Join("b", "peer-b", kTrustT0);
  c.Join("c", "peer-c", kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  c.Send(a.node_id, a.state_token, {Car(1, 0, 1.0)}, kTrustT0);
  // A fourth is refused with the reason; the table does not grow.
  protocol::Join j;
  j.name = "d";
  c.core.OnControl("peer-d", "127.0.0.1", TrustOk(j), kTrustT0);
  bool refused = false;
  for (auto& o : c.core.TakeOutgoing())
    if (const auto* r = std::get_if<protocol::Refuse>(&o.message)) refused = r->reason.find("max_nodes = 3") != std::string::npos;
  CHECK(refused);
  CHECK(c.core.Nodes().size() == 3);
  // All go silent. b and c never owned anything: they are forgotten after 2 x lost_timeout (1 s each),
  // well before forget_lost_s; a, which owns a car, stays so that it can come back for it.
  c.core.Poll(kTrustT0 + 1500 * kTrustMs);
  CHECK(c.core.Nodes().size() == 3);
  c.core.Poll(kTrustT0 + 2500 * kTrustMs);
  REQUIRE(c.core.Nodes().size() == 1);
  CHECK(c.core.Nodes().begin()->second.info.name == "a");
  CHECK(c.core.Counters().nodes_forgotten == 2);
  // Room again.
  CHECK(c.Join("d", "peer-d", kTrustT0 + 8 * kTrustS).node_id != 0);
}

TEST_CASE("trust: new entities beyond max_entities_per_node and max_entities are refused and counted") {
  config::SessionDef def;
  def.server.max_entities_per_node = 5;
  def.server.max_entities = 8;
  Core c(def);
  const auto a = c.Join("a", "peer-a", kTrustT0);
  const auto b = c.Join("b", "peer-b", kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  std::vector<protocol::EntityState> many;
  for (uint64_t id = 1; id <= 10; ++id) many.push_back(Car(id, kTrustMs, 1.0));
  c.Send(a.node_id, a.state_token, many, kTrustT0 + kTrustMs);
  CHECK(c.core.Entities().size() == 5);
  CHECK(c.core.Counters().entity_limit == 5);
  // a's five still update.
  c.Send(a.node_id, a.state_token, {Car(1, 2 * kTrustMs, 2.0)}, kTrustT0 + 2 * kTrustMs);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 2.0);
  // b may add only up to the session's 8.
  std::vector<protocol::EntityState> more;
  for (uint64_t id = 101; id <= 105; ++id) more.push_back(Car(id, 3 * kTrustMs, 1.0));
  c.Send(b.node_id, b.state_token, more, kTrustT0 + 3 * kTrustMs);
  CHECK(c.core.Entities().size() == 8);
  CHECK(c.core.Counters().entity_limit == 7);
  CHECK(c.core.GetParam("server.refused.entity_limit").param.value == "7");
}

namespace {

// Joins `name` from `peer` with key `user_id`; returns the refusal's reason ("" when welcomed).
std::string JoinAs(server::WorldCore& core, const std::string& name, const std::string& peer, const std::string& user_id,
                   int64_t now, protocol::Role role = protocol::Role::kTraffic) {
  protocol::Join j;
  j.name = name;
  j.role = role;
  core.OnControl(peer, "127.0.0.1", user_id, TrustOk(j), now);
  std::string reason = "no answer";
  for (auto& o : core.TakeOutgoing()) {
    if (std::holds_alternative<protocol::Welcome>(o.message)) reason.clear();
    if (const auto* r = std::get_if<protocol::Refuse>(&o.message)) reason = r->reason;
  }
  return reason;
}

// What `peer` was sent back, in order.
std::vector<protocol::Message> Replies(server::WorldCore& core, const std::string& peer) {
  std::vector<protocol::Message> out;
  for (auto& o : core.TakeOutgoing())
    if (o.target == server::Outgoing::Target::kPeer && o.peer == peer) out.push_back(std::move(o.message));
  return out;
}

config::SessionDef WithOperators(std::vector<std::string> operators, bool open_status = true) {
  config::SessionDef def;
  def.name = "lab";
  def.security.operators = std::move(operators);
  def.security.open_status = open_status;
  return def;
}

}  // namespace

TEST_CASE("trust: heartbeats and leaves count only for the node their connection joined as") {
  Core c;
  const auto alpha = c.Join("alpha", "peer-a", kTrustT0);
  const auto mallory = c.Join("mallory", "peer-m", kTrustT0);
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  // mallory's connection names alpha's id: neither keeps alpha alive nor makes it leave.
  c.core.OnControl("peer-m", "127.0.0.1", TrustOk(protocol::Heartbeat{alpha.node_id}), kTrustT0 + 100 * kTrustMs);
  c.core.OnControl("peer-m", "127.0.0.1", TrustOk(protocol::Leave{alpha.node_id, "forged"}), kTrustT0 + 100 * kTrustMs);
  CHECK(c.core.Counters().wrong_connection == 2);
  CHECK(c.core.Nodes().count(alpha.node_id) == 1);
  CHECK(c.core.Nodes().count(mallory.node_id) == 1);  // nor did mallory leave by naming another id
  CHECK(c.core.GetParam("server.refused.wrong_connection").param.value == "2");
  // A peer that never joined is told to join, and counted.
  c.core.OnControl("peer-x", "127.0.0.1", TrustOk(protocol::Heartbeat{alpha.node_id}), kTrustT0 + 100 * kTrustMs);
  CHECK(c.core.Counters().unknown_sender == 1);
  // alpha's own heartbeat keeps it alive past the lost timeout; forged ones do not keep mallory's claim.
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(protocol::Heartbeat{alpha.node_id}), kTrustT0 + 800 * kTrustMs);
  for (int i = 0; i < 5; ++i)
    c.core.OnControl("peer-m", "127.0.0.1", TrustOk(protocol::Heartbeat{alpha.node_id}), kTrustT0 + (900 + 100 * i) * kTrustMs);
  c.core.Poll(kTrustT0 + 1700 * kTrustMs);
  CHECK_FALSE(c.core.Nodes().at(alpha.node_id).info.lost);
  c.core.Poll(kTrustT0 + 2500 * kTrustMs);
  CHECK(c.core.Nodes().at(alpha.node_id).info.lost);  // only its own connection speaks for it
  // alpha's own leave (its id, or none) removes it.
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(protocol::Leave{alpha.node_id, "done"}), kTrustT0 + 2600 * kTrustMs);
  CHECK(c.core.Nodes().count(alpha.node_id) == 0);
}

TEST_CASE("trust: one connection is one node: a second name on a joined connection is refused") {
  Core c;
  c.Join("alpha", "peer-a", kTrustT0);
  for (int i = 0; i < 3000; ++i)
    CHECK(JoinAs(c.core, "n" + std::to_string(i), "peer-a", "", kTrustT0 + kTrustMs).find("already joined as 'alpha'") !=
          std::string::npos);
  CHECK(c.core.Nodes().size() == 1);
  CHECK(c.core.Counters().join_refused == 3000);
  // The same name again on the same connection is a rejoin.
  CHECK(JoinAs(c.core, "alpha", "peer-a", "", kTrustT0 + 2 * kTrustMs).empty());
}

TEST_CASE("trust: with CURVE on, a state needs its node's key and a lost name is reclaimed only with the same key") {
  Core c;
  protocol::Join j;
  j.name = "alpha";
  c.core.OnControl("peer-a", "127.0.0.1", "pc1", TrustOk(j), kTrustT0);
  protocol::Welcome w;
  for (auto& o : c.core.TakeOutgoing())
    if (const auto* x = std::get_if<protocol::Welcome>(&o.message)) w = *x;
  REQUIRE(w.node_id != 0);
  CHECK(c.core.Nodes().at(w.node_id).user_id == "pc1");
  c.core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, kTrustT0, 0}, kTrustT0);
  c.core.Poll(kTrustT0);
  protocol::NodeState ns{w.node_id, 1, {Car(1, 10 * kTrustMs, 1.0)}, 0, 0, w.state_token};
  c.core.OnState("pc1", TrustOk(ns), kTrustT0 + 10 * kTrustMs);
  REQUIRE(c.core.Entities().count(1) == 1);
  // The right token under another key (a leaked token): refused.
  ns = protocol::NodeState{w.node_id, 2, {Car(1, 20 * kTrustMs, 500.0)}, 0, 0, w.state_token};
  c.core.OnState("pc2", TrustOk(ns), kTrustT0 + 20 * kTrustMs);
  CHECK(c.core.Counters().wrong_connection == 1);
  CHECK(c.core.Entities().at(1).state.kinematics.pose.position_m.x() == 1.0);
  // A second live alpha is refused whatever its key.
  CHECK(JoinAs(c.core, "alpha", "peer-b", "pc1", kTrustT0 + 30 * kTrustMs).find("in use by a live node") != std::string::npos);
  // alpha goes silent and is lost: another key cannot take its name (nor its car); its own key can.
  c.core.Poll(kTrustT0 + 2 * kTrustS);
  REQUIRE(c.core.Nodes().at(w.node_id).info.lost);
  const std::string refused = JoinAs(c.core, "alpha", "peer-c", "pc2", kTrustT0 + 2 * kTrustS);
  CHECK(refused.find("belongs to key 'pc1'") != std::string::npos);
  CHECK(JoinAs(c.core, "alpha", "peer-d", "pc1", kTrustT0 + 2100 * kTrustMs).empty());
  CHECK(c.core.Nodes().at(w.node_id).peer == "peer-d");
}

TEST_CASE("trust: with CURVE on, session control, parameter sets and markers come only from operators") {
  Core c(WithOperators({"teacher"}));
  c.Join("alpha", "peer-a", kTrustT0);
  using Command = protocol::SessionControl::Command;
  // A student's start, parameter set and marker: refused with the reason, nothing changed.
  c.core.OnControl("student", "127.0.0.1", "pc3", TrustOk(protocol::SessionControl{Command::kStart, kTrustT0, 0}), kTrustT0);
  c.core.OnControl("student", "127.0.0.1", "pc3", TrustOk(protocol::ParamSet{"server.broadcast_hz", "10", 7}), kTrustT0);
  c.core.OnControl("student", "127.0.0.1", "pc3", TrustOk(protocol::Mark{"hello", 0, 8}), kTrustT0);
  const auto refused = Replies(c.core, "student");
  REQUIRE(refused.size() == 3);
  // The session as it stands, with the reason: the asker stays joined.
  REQUIRE(std::holds_alternative<protocol::SessionStatus>(refused[0]));
  CHECK(std::get<protocol::SessionStatus>(refused[0]).phase == protocol::SessionPhase::kWaiting);
  CHECK(std::get<protocol::SessionStatus>(refused[0]).error.find("key 'pc3' is not an operator of session 'lab'") !=
        std::string::npos);
  REQUIRE(std::holds_alternative<protocol::ParamReply>(refused[1]));
  CHECK_FALSE(std::get<protocol::ParamReply>(refused[1]).ok);
  CHECK(std::get<protocol::ParamReply>(refused[1]).request_id == 7);
  CHECK(std::get<protocol::ParamReply>(refused[1]).error.find("not an operator") != std::string::npos);
  REQUIRE(std::holds_alternative<protocol::EventList>(refused[2]));
  CHECK(std::get<protocol::EventList>(refused[2]).error.find("marker refused") != std::string::npos);
  CHECK(c.core.Phase() == protocol::SessionPhase::kWaiting);
  CHECK(c.core.Session().server.broadcast_hz == 60.0);
  CHECK(c.core.EventsAfter(0).empty());
  CHECK(c.core.Counters().not_operator == 3);
  // Reads stay open (open_status defaults to true).
  c.core.OnControl("student", "127.0.0.1", "pc3", TrustOk(protocol::ParamGet{"server.broadcast_hz", 9}), kTrustT0);
  const auto read = Replies(c.core, "student");
  REQUIRE(read.size() == 1);
  CHECK(std::get<protocol::ParamReply>(read[0]).ok);
  // The teacher's key may do all of it.
  c.core.OnControl("teacher", "127.0.0.1", "teacher", TrustOk(protocol::SessionControl{Command::kStart, kTrustT0, 0}), kTrustT0);
  c.core.OnControl("teacher", "127.0.0.1", "teacher", TrustOk(protocol::ParamSet{"server.broadcast_hz", "30", 10}), kTrustT0);
  c.core.OnControl("teacher", "127.0.0.1", "teacher", TrustOk(protocol::Mark{"start of run 1", 0, 11}), kTrustT0);
  const auto done = Replies(c.core, "teacher");
  REQUIRE(done.size() == 3);
  CHECK(std::holds_alternative<protocol::SessionStatus>(done[0]));
  CHECK(std::get<protocol::ParamReply>(done[1]).ok);
  CHECK(std::get<protocol::EventList>(done[2]).error.empty());
  CHECK(c.core.Phase() == protocol::SessionPhase::kStarting);
  CHECK(c.core.Session().server.broadcast_hz == 30.0);
  CHECK(c.core.Counters().not_operator == 3);
  CHECK(c.core.GetParam("server.refused.not_operator").param.value == "3");
  // Without a key (CURVE off: one PC), everyone is an operator.
  c.core.OnControl("local", "127.0.0.1", "", TrustOk(protocol::SessionControl{Command::kPause, 0, 0}), kTrustT0 + kTrustS);
  CHECK(std::holds_alternative<protocol::SessionStatus>(Replies(c.core, "local").at(0)));
}

TEST_CASE("trust: with open_status = false, reads need an operator key, but a node still gets its own snapshot") {
  Core c(WithOperators({"teacher"}, false));
  JoinAs(c.core, "seat", "peer-seat", "pc3", kTrustT0, protocol::Role::kDriver);
  c.core.OnControl("tool", "127.0.0.1", "pc4", TrustOk(protocol::ParamListRequest{"server.", 1}), kTrustT0);
  c.core.OnControl("tool", "127.0.0.1", "pc4", TrustOk(protocol::EventsRequest{0, 2}), kTrustT0);
  c.core.OnControl("tool", "127.0.0.1", "pc4", TrustOk(protocol::StatusRequest{}), kTrustT0);
  const auto tool = Replies(c.core, "tool");
  REQUIRE(tool.size() == 3);
  CHECK(std::get<protocol::ParamList>(tool[0]).params.empty());
  CHECK(std::get<protocol::ParamList>(tool[0]).errors.at(0).find("open_status = false") != std::string::npos);
  CHECK_FALSE(std::get<protocol::EventList>(tool[1]).error.empty());
  CHECK(std::holds_alternative<protocol::Refuse>(tool[2]));
  // The joined seat gets its snapshot, and its key presses are markers in its own name.
  c.core.OnControl("peer-seat", "127.0.0.1", "pc3", TrustOk(protocol::StatusRequest{}), kTrustT0);
  c.core.OnControl("peer-seat", "127.0.0.1", "pc3", TrustOk(protocol::Mark{"key:space", 0, 3}), kTrustT0);
  const auto seat = Replies(c.core, "peer-seat");
  REQUIRE(seat.size() == 2);
  CHECK(std::get<protocol::WorldState>(seat[0]).keyframe);
  CHECK(std::get<protocol::EventList>(seat[1]).error.empty());
  REQUIRE(c.core.EventsAfter(0).size() == 1);
  CHECK(c.core.EventsAfter(0)[0].source == "seat");
  // The operator reads everything.
  c.core.OnControl("teacher", "127.0.0.1", "teacher", TrustOk(protocol::ParamListRequest{"server.", 4}), kTrustT0);
  CHECK_FALSE(std::get<protocol::ParamList>(Replies(c.core, "teacher").at(0)).params.empty());
  CHECK(c.core.Counters().not_operator == 3);
}

TEST_CASE("trust: a peer beyond its rate is dropped, others are not, and idle peers leave the table") {
  config::SessionDef def;
  def.server.peer_rate_hz = 100;
  def.server.peer_burst = 50;
  Core c(def);
  using Socket = server::WorldCore::RouterSocket;
  // A burst of 50 passes, the 51st at the same instant does not.
  int admitted = 0;
  for (int i = 0; i < 1000; ++i) admitted += c.core.Admit(Socket::kControl, "flood", kTrustT0) ? 1 : 0;
  CHECK(admitted == 50);
  CHECK(c.core.Counters().rate_limited == 950);
  // Another peer, and the same peer on the time socket, have buckets of their own.
  CHECK(c.core.Admit(Socket::kControl, "node", kTrustT0));
  CHECK(c.core.Admit(Socket::kTime, "flood", kTrustT0));
  // Refilled at 100 per second: 10 more after 100 ms.
  admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += c.core.Admit(Socket::kControl, "flood", kTrustT0 + 100 * kTrustMs) ? 1 : 0;
  CHECK(admitted == 10);
  CHECK(c.core.RateBuckets() == 3);
  // Idle for a full refill (0.5 s): forgotten at the next Poll.
  c.core.Poll(kTrustT0 + 2 * kTrustS);
  CHECK(c.core.RateBuckets() == 0);
  CHECK(c.core.GetParam("server.refused.rate_limited").param.value == "1040");
}

namespace {

// A traffic node's Join named `name`, every other field at its default.
protocol::Join TrustTrafficJoin(const std::string& name) {
  protocol::Join j;
  j.name = name;
  j.role = protocol::Role::kTraffic;
  return j;
}

// Joins `name` from `peer` and returns the answer to it (a Welcome or a Refuse), whichever came.
protocol::Message TrustChurnJoin(Core& c, const std::string& name, const std::string& peer, int64_t now) {
  protocol::Join j;
  j.name = name;
  j.role = protocol::Role::kTraffic;
  c.core.OnControl(peer, "127.0.0.1", TrustOk(j), now);
  protocol::Message answer = protocol::Refuse{"no answer", 0};
  for (auto& o : c.core.TakeOutgoing())
    if (o.peer == peer) answer = o.message;
  return answer;
}

}  // namespace

TEST_CASE("trust: a start of a running session is refused and leaves sim time alone, and a stopped one starts again") {
  using Command = protocol::SessionControl::Command;
  Core c;
  c.Join("alpha", "peer-a", kTrustT0);
  c.core.Control(protocol::SessionControl{Command::kStart, kTrustT0, 0}, kTrustT0);
  c.core.Poll(kTrustT0);
  const int64_t at = kTrustT0 + 15800 * kTrustMs;
  c.core.Poll(at);
  c.core.TakeOutgoing();
  REQUIRE(c.core.Phase() == protocol::SessionPhase::kRunning);
  REQUIRE(c.core.SimTimeAt(at) == 15800 * kTrustMs);
  // One changed byte of a control message: start at sim 0, from an operator (no key).
  c.core.OnControl("peer-ctl", "127.0.0.1", TrustOk(protocol::SessionControl{Command::kStart, 0, 0}), at);
  c.core.Poll(at + kTrustMs);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(at + kTrustMs) == 15801 * kTrustMs);
  // Answered with the session as it runs and the reason (the asker stays joined), never a Refuse.
  bool refused = false, refuse = false;
  for (auto& o : c.core.TakeOutgoing()) {
    if (o.peer != "peer-ctl") continue;
    if (const auto* st = std::get_if<protocol::SessionStatus>(&o.message))
      refused = st->phase == protocol::SessionPhase::kRunning && st->error.find("already running") != std::string::npos;
    refuse = refuse || std::holds_alternative<protocol::Refuse>(o.message);
  }
  CHECK(refused);
  CHECK_FALSE(refuse);
  // Internal callers are refused the same way, paused or while a start is scheduled.
  CHECK_FALSE(c.core.Control(protocol::SessionControl{Command::kStart, at, 0}, at + 2 * kTrustMs));
  c.core.Control(protocol::SessionControl{Command::kPause, 0, 0}, at + 3 * kTrustMs);
  CHECK_FALSE(c.core.Control(protocol::SessionControl{Command::kStart, at, 0}, at + 4 * kTrustMs));
  CHECK(c.core.Phase() == protocol::SessionPhase::kPaused);
  CHECK(c.core.SimTimeAt(at + 4 * kTrustMs) == 15803 * kTrustMs);
  // Stopped: a start is a new run from its T0.
  c.core.Control(protocol::SessionControl{Command::kStop, 0, 0}, at + 5 * kTrustMs);
  c.core.OnControl("peer-ctl", "127.0.0.1", TrustOk(protocol::SessionControl{Command::kStart, at + kTrustS, 0}),
                   at + 6 * kTrustMs);
  CHECK(c.core.Phase() == protocol::SessionPhase::kStarting);
  bool answered = false;
  for (auto& o : c.core.TakeOutgoing())
    if (const auto* st = std::get_if<protocol::SessionStatus>(&o.message); st && o.peer == "peer-ctl")
      answered = st->phase == protocol::SessionPhase::kStarting;
  CHECK(answered);
  CHECK_FALSE(c.core.Control(protocol::SessionControl{Command::kStart, at + 2 * kTrustS, 0}, at + 7 * kTrustMs));
  c.core.Poll(at + kTrustS);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(at + 1500 * kTrustMs) == 500 * kTrustMs);
}

TEST_CASE("trust: 2,000 join/leave-or-silent cycles with new names do not lock a newcomer out") {
  using Command = protocol::SessionControl::Command;
  config::SessionDef def;
  def.server.max_nodes = 160;  // forget_lost_s stays 60 s, lost_timeout_s 1 s
  // The table's own rules under churn, with the join rate lifted (peer_limits_test.cpp tests the rate).
  def.server.join_rate_hz = 1e6;
  def.server.join_burst = 1'000'000;
  Core c(def);
  const auto owner = c.Join("owner", "peer-owner", kTrustT0);
  c.core.Control(protocol::SessionControl{Command::kStart, kTrustT0, 0}, kTrustT0);
  c.core.Poll(kTrustT0);
  c.Send(owner.node_id, owner.state_token, {Car(1, 0, 1.0)}, kTrustT0);
  // The owner dies at once: its car must wait for it until forget_lost_s, whatever the churn.
  int64_t now = kTrustT0;
  int refused = 0;
  for (int i = 0; i < 2000; ++i) {
    now += 5 * kTrustMs;  // 200 cycles a second
    const std::string peer = "churn-peer-" + std::to_string(i);
    const auto answer = TrustChurnJoin(c, "churn-" + std::to_string(i), peer, now);
    if (!std::holds_alternative<protocol::Welcome>(answer)) {
      ++refused;
    } else if (i % 2 == 0) {
      c.core.OnControl(peer, "127.0.0.1", TrustOk(protocol::Leave{std::get<protocol::Welcome>(answer).node_id, "bye"}),
                       now + kTrustMs);
    }  // odd ones go silent
    c.core.Poll(now + 2 * kTrustMs);
    c.core.TakeOutgoing();
  }
  CHECK(refused == 0);
  CHECK(c.core.Nodes().size() <= 160);
  CHECK(c.core.Counters().nodes_evicted > 0);
  // A real newcomer 10 s (of sim and reference time) into the session joins within 2 s.
  const int64_t sim_before = c.core.SimTimeAt(now);
  bool welcomed = false;
  for (int64_t t = now; t <= now + 2 * kTrustS && !welcomed; t += 100 * kTrustMs) {
    welcomed = std::holds_alternative<protocol::Welcome>(TrustChurnJoin(c, "newcomer", "peer-new", t));
    c.core.Poll(t);
  }
  CHECK(welcomed);
  CHECK(c.core.SimTimeAt(now) == sim_before);
  // The silent owner of a car was kept through the churn, and is still kept past 2 x lost_timeout.
  REQUIRE(c.core.Nodes().count(owner.node_id) == 1);
  CHECK(c.core.Nodes().at(owner.node_id).info.lost);
  CHECK(c.core.Entities().count(1) == 1);
  c.core.Poll(kTrustT0 + 50 * kTrustS);
  CHECK(c.core.Nodes().count(owner.node_id) == 1);
  CHECK(c.core.Entities().count(1) == 1);
}

namespace {

constexpr const char* kOpTokToken = "5f1c0a4e9b7d2c3a8e6f4b1d0c9a7e5f3b2d1c0a9e8f7b6d5c4a3e2f1b0d9c8a";
constexpr const char* kOpTokFile = "/run/user/1000/platoon/operator.7400";

// A core of session "lab" without CURVE whose operator token is kOpTokToken, logging into `lines`.
struct OpTokCore {
  OpTokCore()
      : sink(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)),
        core(WithOperators({}), std::make_shared<spdlog::logger>("optok", sink)) {
    sink->set_pattern("%v");
    core.SetOperatorToken(kOpTokToken, kOpTokFile);
  }
  // Sends `m` from connection `peer` (no key) at `now`; returns what came back to it.
  std::vector<protocol::Message> From(const std::string& peer, protocol::Message m, int64_t now) {
    core.OnControl(peer, "127.0.0.1", "", TrustOk(std::move(m)), now);
    return Replies(core, peer);
  }
  // The error of the one SessionStatus that came back ("" accepted); FAILs on anything else.
  std::string ControlError(const std::string& peer, const protocol::SessionControl& c, int64_t now) {
    const auto r = From(peer, c, now);
    REQUIRE(r.size() == 1);
    REQUIRE(std::holds_alternative<protocol::SessionStatus>(r[0]));
    return std::get<protocol::SessionStatus>(r[0]).error;
  }
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink;
  server::WorldCore core;
};

}  // namespace

TEST_CASE("trust: without CURVE only a connection that presented the operator token steers, one connection at a time") {
  using Command = protocol::SessionControl::Command;
  OpTokCore c;
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(TrustTrafficJoin("alpha")), kTrustT0);
  c.core.TakeOutgoing();
  // A local process without the token: start, parameter set and marker refused with where the token is.
  const std::string why = c.ControlError("peer-x", {Command::kStart, kTrustT0, 0}, kTrustT0);
  CHECK(why.find("has not presented the operator token of session 'lab'") != std::string::npos);
  CHECK(why.find(kOpTokFile) != std::string::npos);
  const auto set = c.From("peer-x", protocol::ParamSet{"server.broadcast_hz", "10", 7}, kTrustT0);
  REQUIRE(set.size() == 1);
  CHECK_FALSE(std::get<protocol::ParamReply>(set[0]).ok);
  const auto mark = c.From("peer-x", protocol::Mark{"hello", 0, 8}, kTrustT0);
  REQUIRE(mark.size() == 1);
  CHECK(std::get<protocol::EventList>(mark[0]).error.find("operator token") != std::string::npos);
  CHECK(c.core.Phase() == protocol::SessionPhase::kWaiting);
  CHECK(c.core.Session().server.broadcast_hz == 60.0);
  CHECK(c.core.Counters().not_operator == 3);
  // Reads stay open: a parameter, the status snapshot.
  const auto get = c.From("peer-x", protocol::ParamGet{"server.broadcast_hz", 9}, kTrustT0);
  REQUIRE(get.size() == 1);
  CHECK(std::get<protocol::ParamReply>(get[0]).ok);
  const auto snapshot = c.From("peer-x", protocol::StatusRequest{}, kTrustT0);
  REQUIRE(snapshot.size() == 1);
  CHECK(std::holds_alternative<protocol::WorldState>(snapshot[0]));
  // A wrong token (one character off, a prefix, empty): counted, never answered, and no operator made.
  std::string off = kOpTokToken;
  off.back() = 'b';
  for (const std::string& token : {off, std::string(kOpTokToken).substr(0, 63), std::string()})
    CHECK(c.From("peer-x", protocol::OperatorHello{token}, kTrustT0).empty());
  CHECK(c.core.Counters().not_operator == 6);
  CHECK(c.core.OperatorPeers() == 0);
  CHECK_FALSE(c.ControlError("peer-x", {Command::kStart, kTrustT0, 0}, kTrustT0).empty());
  CHECK(c.core.Counters().not_operator == 7);
  // The right token makes that connection an operator (nothing is answered), and only it.
  CHECK(c.From("peer-op", protocol::OperatorHello{kOpTokToken}, kTrustT0).empty());
  CHECK(c.core.OperatorPeers() == 1);
  CHECK(c.ControlError("peer-op", {Command::kStart, kTrustT0, 0}, kTrustT0).empty());
  CHECK(c.core.Phase() == protocol::SessionPhase::kStarting);
  CHECK(std::get<protocol::ParamReply>(c.From("peer-op", protocol::ParamSet{"server.broadcast_hz", "30", 10}, kTrustT0)[0]).ok);
  CHECK(c.core.Session().server.broadcast_hz == 30.0);
  CHECK_FALSE(c.ControlError("peer-x", {Command::kStop, 0, 0}, kTrustT0 + kTrustMs).empty());
  CHECK(c.core.Phase() == protocol::SessionPhase::kStarting);
  CHECK(c.core.Counters().not_operator == 8);
  CHECK(c.core.GetParam("server.refused.not_operator").param.value == "8");
  // Silent longer than kOperatorIdleNs: the connection presents the token again before it steers.
  const int64_t idle = kTrustT0 + server::WorldCore::kOperatorIdleNs + kTrustS;
  CHECK_FALSE(c.ControlError("peer-op", {Command::kStop, 0, 0}, idle).empty());
  CHECK(c.From("peer-op", protocol::OperatorHello{kOpTokToken}, idle).empty());
  CHECK(c.ControlError("peer-op", {Command::kStop, 0, 0}, idle).empty());
  CHECK(c.core.Phase() == protocol::SessionPhase::kStopped);
  // A node's connection that leaves is forgotten with the node.
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(protocol::OperatorHello{kOpTokToken}), idle);
  CHECK(c.core.OperatorPeers() == 2);
  const uint32_t alpha = c.core.Nodes().begin()->first;
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(protocol::Leave{alpha, "done"}), idle);
  CHECK(c.core.OperatorPeers() == 1);
  // Bounded: many connections with the token keep at most kMaxOperatorPeers, the longest silent going first.
  for (int i = 0; i < 100; ++i)
    c.From("peer-many-" + std::to_string(i), protocol::OperatorHello{kOpTokToken}, idle + (i + 1) * kTrustMs);
  CHECK(c.core.OperatorPeers() == server::WorldCore::kMaxOperatorPeers);
  CHECK_FALSE(c.ControlError("peer-many-0", {Command::kPause, 0, 0}, idle + kTrustS).empty());
  CHECK(c.ControlError("peer-many-99", {Command::kPause, 0, 0}, idle + kTrustS).empty());
}

TEST_CASE("trust: a restart is an operator's, in any phase, with a reason that is logged escaped") {
  using Command = protocol::SessionControl::Command;
  OpTokCore c;
  c.core.OnControl("peer-a", "127.0.0.1", TrustOk(TrustTrafficJoin("alpha")), kTrustT0);
  c.From("peer-op", protocol::OperatorHello{kOpTokToken}, kTrustT0);
  REQUIRE(c.ControlError("peer-op", {Command::kStart, kTrustT0, 0}, kTrustT0).empty());
  c.core.Poll(kTrustT0);
  const int64_t at = kTrustT0 + 15800 * kTrustMs;
  c.core.Poll(at);
  c.core.TakeOutgoing();
  REQUIRE(c.core.SimTimeAt(at) == 15800 * kTrustMs);
  // Not an operator: refused, counted, nothing moves.
  const uint64_t before = c.core.Counters().not_operator;
  CHECK_FALSE(c.ControlError("peer-x", {Command::kRestart, at, 0, 1.0, "mine now"}, at).empty());
  CHECK(c.core.Counters().not_operator == before + 1);
  // The operator's start of a running session: refused as "already running", nothing moves.
  CHECK(c.ControlError("peer-op", {Command::kStart, at, 0}, at).find("already running") != std::string::npos);
  // The operator's restart without a reason: refused.
  CHECK(c.ControlError("peer-op", {Command::kRestart, at, 0}, at).find("needs a reason") != std::string::npos);
  c.core.Poll(at + kTrustMs);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(at + kTrustMs) == 15801 * kTrustMs);
  // With a reason: sim time T0 = 2 s at the given instant, logged with who and why, the newline escaped.
  CHECK(c.ControlError("peer-op", {Command::kRestart, at + 100 * kTrustMs, 2 * kTrustS, 1.0, "scenario B\n[forged] x"},
                       at + 2 * kTrustMs)
            .empty());
  CHECK(c.core.Phase() == protocol::SessionPhase::kStarting);
  c.core.Poll(at + 100 * kTrustMs);
  CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
  CHECK(c.core.SimTimeAt(at + 600 * kTrustMs) == 2500 * kTrustMs);
  bool logged = false;
  for (const auto& line : c.sink->last_formatted()) {
    CHECK(line.find('\n') + 1 == line.size());  // one line each: no peer text breaks it
    if (line.find("session restarted by connection peer-op: scenario B\\n[forged] x (was running at sim time 15.802 s)") !=
        std::string::npos)
      logged = true;
  }
  CHECK(logged);
  // Paused and stopped sessions restart too.
  for (const Command phase : {Command::kPause, Command::kStop}) {
    const int64_t t = at + kTrustS;
    REQUIRE(c.ControlError("peer-op", {phase, 0, 0}, t).empty());
    CHECK(c.ControlError("peer-op", {Command::kRestart, t, 0, 1.0, "again"}, t).empty());
    c.core.Poll(t);
    CHECK(c.core.Phase() == protocol::SessionPhase::kRunning);
    CHECK(c.core.SimTimeAt(t + 10 * kTrustMs) == 10 * kTrustMs);
  }
}
