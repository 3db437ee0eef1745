// The session client core without sockets: handed bytes and time, it answers with what to send.
#include "platoon/session/session_client.hpp"

#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>

namespace platoon::session {
namespace {

using protocol::SessionPhase;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

struct Rig {
  clock::ManualOscillator local{10 * kS};
  SessionClient client;
  explicit Rig(ClientDef def = Def()) : client(def, local, nullptr) {}
  static ClientDef Def() {
    ClientDef d;
    d.name = "alpha";
    d.role = protocol::Role::kTraffic;
    d.lockstep_member = true;
    return d;
  }
  // Polls at the current time and decodes what the client queued, by socket.
  std::vector<std::pair<Socket, protocol::Message>> Poll() {
    client.Poll(local.NowNs());
    std::vector<std::pair<Socket, protocol::Message>> out;
    for (auto& o : client.TakeOutgoing()) {
      auto d = protocol::Decode(o.bytes);
      REQUIRE(d.message);
      out.emplace_back(o.socket, *d.message);
    }
    return out;
  }
  template <class T>
  static int Count(const std::vector<std::pair<Socket, protocol::Message>>& out) {
    int n = 0;
    for (const auto& [s, m] : out) n += std::holds_alternative<T>(m);
    return n;
  }
  void Give(Socket s, const protocol::Message& m) { client.OnMessage(s, protocol::Encode(m), local.NowNs()); }
  // Sets the client's clock by time exchanges with a server whose clock equals ours (2 s of local time).
  void SetClock() {
    for (int i = 0; i < 40; ++i) {
      for (auto& [s, m] : Poll())
        if (auto* q = std::get_if<protocol::TimeRequest>(&m))
          Give(Socket::kTime, protocol::TimeReply{q->sequence, q->t1_ns, local.NowNs(), local.NowNs()});
      local.Advance(50 * kMs);
    }
    REQUIRE(client.Clock().IsSet());
  }
  void Welcome(int64_t step_ns = 0) {
    protocol::Welcome w;
    w.node_id = 7;
    w.session_name = "test";
    w.heartbeat_interval_ns = 250 * kMs;
    w.lost_timeout_ns = 1 * kS;
    w.time_port = 7401;
    w.world_port = 7402;
    w.state_port = 7403;
    w.step_ns = step_ns;
    Give(Socket::kControl, w);
  }
  void World(uint64_t seq, SessionPhase phase, int64_t sim_ns, int64_t ref_ns, uint64_t step = 0) {
    protocol::WorldState w;
    w.sequence = seq;
    w.phase = phase;
    w.sim_time_ns = sim_ns;
    w.server_time_ns = ref_ns;
    w.keyframe = true;
    w.step = step;
    Give(Socket::kWorld, w);
  }
};

TEST_CASE("session client: joins, retries until welcomed, then follows the announced ports and asks for a snapshot") {
  Rig r;
  auto out = r.Poll();
  CHECK(Rig::Count<protocol::Join>(out) == 1);
  CHECK(std::get<protocol::Join>(out[0].second).lockstep_member);
  CHECK(Rig::Count<protocol::Join>(r.Poll()) == 0);  // not again before the retry period
  r.local.Advance(260 * kMs);
  CHECK(Rig::Count<protocol::Join>(r.Poll()) == 1);
  r.Welcome();
  CHECK(r.client.Joined());
  CHECK(r.client.NodeId() == 7);
  CHECK(r.client.Ports() == ServerPorts{7401, 7402, 7403});
  CHECK(r.client.TakeRejoined());
  CHECK_FALSE(r.client.TakeRejoined());
  out = r.Poll();
  CHECK(Rig::Count<protocol::StatusRequest>(out) == 1);
  CHECK(Rig::Count<protocol::TimeRequest>(out) == 1);
  CHECK(Rig::Count<protocol::Heartbeat>(out) == 1);
  CHECK(Rig::Count<protocol::Join>(out) == 0);
}

// A client started beside its server (platoon run) may look for the token before the server has written it.
TEST_CASE("session client: a token not there at construction is looked for again before each set, and kept once found") {
  ClientDef def = Rig::Def();
  std::string file;  // the token file's text as the finder reads it; empty: not written yet
  int looks = 0;
  def.find_operator_token = [&] {
    ++looks;
    return file;
  };
  Rig r(def);
  auto set = [&](const std::string& value) {
    r.client.RequestParams(protocol::ParamSet{"server.broadcast_hz", value, 1});
    return r.Poll();
  };
  auto out = set("30");
  CHECK(Rig::Count<protocol::OperatorHello>(out) == 0);
  CHECK(Rig::Count<protocol::ParamSet>(out) == 1);
  CHECK_FALSE(r.client.HasOperatorToken());
  CHECK(looks == 1);
  file = "c0ffee";
  out = set("40");
  REQUIRE(Rig::Count<protocol::OperatorHello>(out) == 1);
  for (const auto& [s, m] : out)
    if (const auto* h = std::get_if<protocol::OperatorHello>(&m)) CHECK(h->token == "c0ffee");
  CHECK(r.client.HasOperatorToken());
  file = "changed";
  out = set("50");
  CHECK(Rig::Count<protocol::OperatorHello>(out) == 1);
  CHECK(looks == 2);  // found once, not read again
}

TEST_CASE("session client: sim time follows the newest world state, and a restarted server cannot move a running session") {
  Rig r;
  r.Poll();
  r.Welcome();
  r.SetClock();
  const int64_t ref = r.local.NowNs();
  r.World(1, SessionPhase::kRunning, 5 * kS, ref);
  CHECK(r.client.Advancing());
  r.local.Advance(100 * kMs);
  CHECK(std::abs(r.client.SimNowNs() - (5 * kS + 100 * kMs)) < kMs);
  // A restarted server that reports "waiting" does not stop our running clock; a pause does.
  r.World(1, SessionPhase::kWaiting, 0, r.local.NowNs());
  CHECK(r.client.Phase() == SessionPhase::kRunning);
  CHECK(r.client.Stats().server_restarts == 0);
  r.World(2, SessionPhase::kPaused, 6 * kS, r.local.NowNs());
  CHECK_FALSE(r.client.Advancing());
  r.local.Advance(kS);
  CHECK(r.client.SimNowNs() == 6 * kS);
}

TEST_CASE("session client: a gap in the world sequence asks for a snapshot, garbage is counted and dropped") {
  Rig r;
  r.Poll();
  r.Welcome();
  r.Poll();  // the snapshot request after the welcome
  r.World(1, SessionPhase::kWaiting, 0, 0);
  r.World(5, SessionPhase::kWaiting, 0, 0);
  CHECK(r.client.Stats().world_gaps == 1);
  CHECK(Rig::Count<protocol::StatusRequest>(r.Poll()) == 1);
  r.client.OnMessage(Socket::kWorld, "not a message at all", r.local.NowNs());
  r.client.OnMessage(Socket::kTime, protocol::Encode(protocol::Leave{1, "x"}), r.local.NowNs());
  CHECK(r.client.Stats().bad_input == 2);
}

TEST_CASE("session client: a node gives up on a refusal, a viewer retries it every second") {
  Rig node;
  node.Poll();
  node.Give(Socket::kControl, protocol::Refuse{"name taken", protocol::kProtocolVersion});
  REQUIRE(node.client.Refused());
  CHECK(*node.client.Refused() == "name taken");
  node.local.Advance(5 * kS);
  CHECK(Rig::Count<protocol::Join>(node.Poll()) == 0);

  ClientDef vd = Rig::Def();
  vd.retry_refused = true;
  Rig viewer(vd);
  viewer.Poll();
  viewer.Give(Socket::kControl, protocol::Refuse{"name taken", protocol::kProtocolVersion});
  CHECK_FALSE(viewer.client.Refused());
  CHECK(viewer.client.LastRefusal() == "name taken");
  viewer.local.Advance(500 * kMs);
  CHECK(Rig::Count<protocol::Join>(viewer.Poll()) == 0);
  viewer.local.Advance(600 * kMs);
  CHECK(Rig::Count<protocol::Join>(viewer.Poll()) == 1);
}

TEST_CASE("session client: a silent server is joined again after three lost timeouts, 'unknown node' rejoins at once") {
  Rig r;
  r.Poll();
  r.Welcome();
  r.Poll();
  r.local.Advance(2 * kS);
  r.Poll();
  CHECK(r.client.Joined());
  r.local.Advance(1500 * kMs);
  r.Poll();
  CHECK_FALSE(r.client.Joined());
  CHECK(Rig::Count<protocol::Join>(r.Poll()) == 1);
  r.Welcome();
  r.Give(Socket::kControl, protocol::Refuse{"unknown node: join first", protocol::kProtocolVersion});
  CHECK_FALSE(r.client.Joined());
  CHECK_FALSE(r.client.Refused());
  CHECK(Rig::Count<protocol::Join>(r.Poll()) == 1);
}

TEST_CASE("session client: a stall of the node's own is not the server's silence, silence after it still counts") {
  Rig r;
  r.Poll();
  r.Welcome();
  r.Poll();
  // The process did not run for 10 s (a suspended laptop): the shell says so before polling.
  r.local.Advance(10 * kS);
  r.client.ForgiveStall(10 * kS, r.local.NowNs());
  CHECK(Rig::Count<protocol::Join>(r.Poll()) == 0);
  CHECK(r.client.Joined());
  CHECK(r.client.Stats().stalls_forgiven == 1);
  // Three lost timeouts (3 s) of silence after it: joined again, as without a stall.
  r.local.Advance(2 * kS);
  r.Poll();
  CHECK(r.client.Joined());
  r.local.Advance(1500 * kMs);
  r.Poll();
  CHECK_FALSE(r.client.Joined());
}

TEST_CASE("session client: lock-step grants set sim time, a done step stops advancing, a repeated grant is re-acknowledged") {
  Rig r;
  r.Poll();
  r.Welcome(10 * kMs);
  r.Poll();
  CHECK(r.client.StepNs() == 10 * kMs);
  CHECK_FALSE(r.client.Advancing());  // no grant yet (and no synced clock needed in lock-step)
  r.World(1, SessionPhase::kRunning, 0, r.local.NowNs(), 1);
  CHECK(r.client.Advancing());
  CHECK(r.client.GrantedStep() == 1);
  CHECK(r.client.SimNowNs() == 0);
  r.local.Advance(kS);  // wall time does not move lock-step sim time
  CHECK(r.client.SimNowNs() == 0);
  r.client.MarkStepDone(1);
  CHECK_FALSE(r.client.Advancing());
  r.World(2, SessionPhase::kRunning, 0, r.local.NowNs(), 1);  // the same grant again
  auto out = r.Poll();
  REQUIRE(Rig::Count<protocol::NodeState>(out) == 1);
  for (auto& [s, m] : out)
    if (auto* ns = std::get_if<protocol::NodeState>(&m)) {
      CHECK(s == Socket::kState);
      CHECK(ns->step_done == 1);
      CHECK(ns->node_id == 7);
    }
  r.World(3, SessionPhase::kRunning, 10 * kMs, r.local.NowNs(), 2);
  CHECK(r.client.Advancing());
  CHECK(r.client.SimNowNs() == 10 * kMs);
}

TEST_CASE("session client: a silent world stream holds the remote world at the instant it fell due, the next world state ends it") {
  Rig r;
  r.Poll();
  r.Welcome();
  r.SetClock();
  // One remote car at x = 0, 10 m/s, stamped at sim 5 s, in a world state at sim 5 s.
  protocol::WorldState w;
  w.sequence = 1;
  w.keyframe = true;
  w.phase = SessionPhase::kRunning;
  w.sim_time_ns = 5 * kS;
  w.server_time_ns = r.local.NowNs();
  protocol::EntityState car;
  car.id = 42;
  car.owner_node = 3;
  car.kind = protocol::EntityKind::kCar;
  car.kinematics.stamp_ns = 5 * kS;
  car.kinematics.velocity_mps = Vec3(10, 0, 0);
  w.entities = {car};
  r.Give(Socket::kWorld, w);
  const auto x_shown = [&] {
    const auto shown = r.client.World().Displayed(r.client.SimNowNs());
    REQUIRE(shown.size() == 1);
    return std::pair{shown[0].kinematics.pose.position_m.x(), shown[0].stale};
  };
  // Within the hold time (3 s, the default) the car is dead-reckoned.
  r.local.Advance(2900 * kMs);
  r.Poll();
  CHECK_FALSE(r.client.World().HeldAt());
  CHECK(x_shown().first == doctest::Approx(29.0).epsilon(1e-3));
  CHECK_FALSE(x_shown().second);
  // Polled late, at 3.5 s: held at the instant the silence reached 3 s (sim 8 s, x = 30), shown stale.
  r.local.Advance(600 * kMs);
  r.Poll();
  REQUIRE(r.client.World().HeldAt());
  CHECK(std::abs(*r.client.World().HeldAt() - 8 * kS) < kMs);
  CHECK(r.client.Stats().world_holds == 1);
  r.local.Advance(5 * kS);
  r.Poll();
  CHECK(r.client.Stats().world_holds == 1);
  CHECK(x_shown().first == doctest::Approx(30.0).epsilon(1e-3));
  CHECK(x_shown().second);
  // The next world state ends the hold: the car is dead-reckoned from its newest state again (x = 85 at 13.5 s).
  w.sequence = 2;
  w.keyframe = false;
  w.entities.clear();
  w.sim_time_ns = 13500 * kMs;
  w.server_time_ns = r.local.NowNs();
  r.Give(Socket::kWorld, w);
  CHECK_FALSE(r.client.World().HeldAt());
  CHECK(x_shown().first == doctest::Approx(85.0).epsilon(1e-3));
  CHECK_FALSE(x_shown().second);
  // A stall of this process's own is not the stream's silence: 10 s not running, then polled, no hold...
  r.local.Advance(10 * kS);
  r.client.ForgiveStall(10 * kS, r.local.NowNs());
  r.Poll();
  CHECK_FALSE(r.client.World().HeldAt());
  // ... but 3 s of silence after it still hold.
  r.local.Advance(3100 * kMs);
  r.Poll();
  CHECK(r.client.World().HeldAt());
  CHECK(r.client.Stats().world_holds == 2);
}

TEST_CASE("session client: in lock-step the remote world never holds (sim time moves with the grants alone)") {
  Rig r;
  r.Poll();
  r.Welcome(10 * kMs);
  r.World(1, SessionPhase::kRunning, 0, r.local.NowNs(), 1);
  r.local.Advance(60 * kS);
  r.Poll();
  CHECK_FALSE(r.client.World().HeldAt());
  CHECK(r.client.Stats().world_holds == 0);
  // A real-time client with world_hold_s = 0 never holds either.
  ClientDef def = Rig::Def();
  def.world_hold_s = 0;
  Rig q(def);
  q.Poll();
  q.Welcome();
  q.World(1, SessionPhase::kRunning, 0, q.local.NowNs());
  q.local.Advance(60 * kS);
  q.Poll();
  CHECK_FALSE(q.client.World().HeldAt());
}

TEST_CASE("session client: the world tap gets each broadcast's bytes as received, not snapshots nor garbage, and nothing unset") {
  Rig r;
  r.Welcome();
  std::vector<std::string> tapped;
  std::vector<uint64_t> sequences;
  r.client.on_world_broadcast = [&](std::string_view bytes, const protocol::WorldState& w, int64_t local_ns) {
    tapped.emplace_back(bytes);
    sequences.push_back(w.sequence);
    CHECK(local_ns == r.local.NowNs());
  };
  protocol::WorldState w;
  w.sequence = 1;
  w.phase = SessionPhase::kRunning;
  const std::string first = protocol::Encode(w);
  r.client.OnMessage(Socket::kWorld, first, r.local.NowNs());
  w.sequence = 2;
  w.keyframe = false;
  const std::string second = protocol::Encode(w);
  r.client.OnMessage(Socket::kWorld, second, r.local.NowNs());
  // A snapshot reply (control socket) is the client's own request, not a broadcast; garbage is no state.
  r.client.OnMessage(Socket::kControl, first, r.local.NowNs());
  r.client.OnMessage(Socket::kWorld, "garbage!", r.local.NowNs());
  CHECK(tapped == std::vector<std::string>{first, second});
  CHECK(sequences == std::vector<uint64_t>{1, 2});
  CHECK(r.client.Stats().world_received == 2);  // the client applied them as before
  r.client.on_world_broadcast = nullptr;
  w.sequence = 3;
  r.client.OnMessage(Socket::kWorld, protocol::Encode(w), r.local.NowNs());
  CHECK(tapped.size() == 2);
  CHECK(r.client.Stats().world_received == 3);
}

TEST_CASE("session client: a tool keeps the answers to its commands and parameter requests, in order and bounded") {
  ClientDef def = Rig::Def();
  def.keep_replies = true;
  Rig r(def);
  // Parameter requests go out on the control socket at once, joined or not.
  r.client.RequestParams(protocol::ParamGet{"server.broadcast_hz"});
  r.client.RequestParams(protocol::ParamSet{"server.broadcast_hz", "30"});
  r.client.RequestParams(protocol::ParamListRequest{"server."});
  CHECK(r.client.NextDueNs() <= r.local.NowNs());
  auto out = r.Poll();
  CHECK(Rig::Count<protocol::ParamGet>(out) == 1);
  CHECK(Rig::Count<protocol::ParamSet>(out) == 1);
  CHECK(Rig::Count<protocol::ParamListRequest>(out) == 1);
  for (const auto& [socket, m] : out) CHECK(socket == Socket::kControl);

  r.Welcome();
  const protocol::SessionStatus status{SessionPhase::kPaused, 3 * kS, 10 * kS, 0, {}};
  const protocol::ParamList list{{{"server.broadcast_hz", "60", true, "World-state broadcast rate, Hz"}}, 0, {}};
  const protocol::ParamReply refused{false, {"server.broadcast_hz", "60", true, ""},
                                     "server.broadcast_hz must be in [1, 1000]"};
  r.Give(Socket::kControl, status);
  r.Give(Socket::kControl, list);
  r.Give(Socket::kControl, refused);
  const auto replies = r.client.TakeReplies();
  REQUIRE(replies.size() == 3);
  CHECK(std::get<protocol::SessionStatus>(replies[0]) == status);
  CHECK(std::get<protocol::ParamList>(replies[1]) == list);
  CHECK(std::get<protocol::ParamReply>(replies[2]) == refused);
  CHECK(r.client.TakeReplies().empty());
  CHECK(r.client.Stats().bad_input == 0);

  // A tool that stops taking them holds the newest kMaxKeptReplies.
  for (int i = 0; i < static_cast<int>(kMaxKeptReplies) + 6; ++i)
    r.Give(Socket::kControl, protocol::ParamReply{true, {"p" + std::to_string(i), "1", false, ""}, ""});
  const auto kept = r.client.TakeReplies();
  REQUIRE(kept.size() == kMaxKeptReplies);
  CHECK(std::get<protocol::ParamReply>(kept.front()).param.path == "p6");
}

TEST_CASE("session client: without keep_replies a node keeps no replies, parameter replies count as bad input") {
  Rig r;
  r.Welcome();
  r.Give(Socket::kControl, protocol::SessionStatus{SessionPhase::kRunning, 0, 0, 0, {}});
  CHECK(r.client.Stats().bad_input == 0);
  r.Give(Socket::kControl, protocol::ParamReply{true, {"server.nodes", "1", false, ""}, "", 0});
  r.Give(Socket::kControl, protocol::ParamList{{}, 0, {}});
  CHECK(r.client.Stats().bad_input == 2);
  CHECK(r.client.TakeReplies().empty());
}

TEST_CASE("session client: the world counts as received once a snapshot or a whole keyframe came after the Welcome") {
  Rig r;
  r.Poll();
  CHECK_FALSE(r.client.WorldReceived());
  r.Welcome();
  CHECK_FALSE(r.client.WorldReceived());  // joined, but the world is not here yet
  // A delta is only part of the world.
  protocol::WorldState delta;
  delta.sequence = 1;
  delta.keyframe = false;
  r.Give(Socket::kWorld, delta);
  CHECK_FALSE(r.client.WorldReceived());
  SUBCASE("a snapshot reply") {
    protocol::WorldState snapshot;
    snapshot.sequence = 1;
    r.Give(Socket::kControl, snapshot);
    CHECK(r.client.WorldReceived());
  }
  SUBCASE("a whole keyframe on the world stream") {
    r.World(2, SessionPhase::kWaiting, 0, 0);
    CHECK(r.client.WorldReceived());
  }
}

TEST_CASE("session client: the Welcome's session file is kept, and replaced by the next Welcome's") {
  Rig r;
  r.Poll();
  CHECK(r.client.SessionFile().empty());
  protocol::Welcome w;
  w.node_id = 7;
  w.session_name = "test";
  w.lost_timeout_ns = kS;
  w.session_file = "[session]\nname = \"test\"\n\n[road]\nlanes = 3\n";
  w.session_file_path = "/lab/test.toml";
  r.Give(Socket::kControl, w);
  CHECK(r.client.SessionFile() == w.session_file);
  CHECK(r.client.SessionFilePath() == "/lab/test.toml");
  w.session_file.clear();  // a restarted server without a file
  w.session_file_path.clear();
  r.Give(Socket::kControl, w);
  CHECK(r.client.SessionFile().empty());
  CHECK(r.client.SessionFilePath().empty());
}

TEST_CASE("session client: a forwarded parameter set left unanswered is answered later through AnswerParamRequest") {
  Rig r;
  r.Welcome();
  r.Poll();
  std::vector<protocol::Message> asked;
  r.client.on_param_request = [&](const protocol::Message& m) -> std::optional<protocol::Message> {
    asked.push_back(m);
    if (std::holds_alternative<protocol::ParamSet>(m)) return std::nullopt;  // once in force
    return protocol::ParamReply{true, {"node.alpha.x", "1", true, ""}, "", 4};
  };
  r.Give(Socket::kControl, protocol::ParamSet{"node.alpha.x", "2", 3});
  r.Give(Socket::kControl, protocol::ParamGet{"node.alpha.x", 4});
  CHECK(asked.size() == 2);
  // Only the get is answered now.
  auto out = r.Poll();
  std::vector<uint64_t> answered;
  for (const auto& [s, m] : out)
    if (const auto* p = std::get_if<protocol::ParamReply>(&m); p && s == Socket::kControl) answered.push_back(p->request_id);
  CHECK(answered == std::vector<uint64_t>{4});
  r.client.AnswerParamRequest(protocol::ParamReply{true, {"node.alpha.x", "2", true, ""}, "", 3});
  answered.clear();
  for (const auto& [s, m] : r.Poll())
    if (const auto* p = std::get_if<protocol::ParamReply>(&m); p && s == Socket::kControl) {
      answered.push_back(p->request_id);
      CHECK(p->param.value == "2");
    }
  CHECK(answered == std::vector<uint64_t>{3});
}

}  // namespace
}  // namespace platoon::session
