// platoon replay: a recorded world served through the live world core (no sockets), and end to end
// through the real server with an observer joined to it.
#include "platoon/clock/oscillator.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/server/replay.hpp"
#include "platoon/server/sync_server.hpp"
#include "platoon/session/client_link.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <map>
#include <thread>

namespace {

using namespace platoon;
using protocol::SessionControl;
using protocol::SessionPhase;

constexpr int64_t kReplayMs = 1'000'000;
constexpr int64_t kReplayS = 1'000'000'000;
constexpr int64_t kReplayT0 = 1000 * kReplayS;  // reference times start well above 0

std::shared_ptr<spdlog::logger> Quiet() {
  return std::make_shared<spdlog::logger>("replay-test", std::make_shared<spdlog::sinks::null_sink_st>());
}

// A recorded drive of four cars as a live server broadcasts it: owners send at 20 Hz with staggered
// stamps, a delta at 50 Hz carries what changed, a keyframe every second repeats everything. The cars
// brake, pull away and weave (S-bends); car 3 is removed at 3 s. 6 s in all.
struct Recording {
  std::vector<protocol::WorldState> worlds;
  std::map<uint64_t, std::vector<protocol::EntityState>> truth;  // per car, every state sent
};

protocol::EntityState CarAt(uint64_t id, int64_t stamp_ns) {
  const double t = static_cast<double>(stamp_ns) / 1e9;
  const double speed = 12 + 6 * std::sin(0.7 * t + static_cast<double>(id));  // braking and pulling away
  const double yaw = 0.3 * std::sin(1.3 * t + 0.5 * static_cast<double>(id));  // S-bends
  protocol::EntityState e;
  e.id = id;
  e.owner_node = static_cast<uint32_t>(1 + id % 2);
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(20.0 * static_cast<double>(id) + 14 * t, 3 * std::sin(0.9 * t), 0);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
  e.kinematics.velocity_mps = Vec3(speed * std::cos(yaw), speed * std::sin(yaw), 0);
  return e;
}

Recording MakeRecording() {
  Recording r;
  std::map<uint64_t, protocol::EntityState> latest;
  std::vector<protocol::EntityState> pending;
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= 6000; ++ms) {
    const int64_t t = ms * kReplayMs;
    for (uint64_t id = 1; id <= 4; ++id) {
      if (id == 3 && ms >= 3000) continue;
      if ((ms + static_cast<int64_t>(id) * 13) % 50 != 0) continue;  // 20 Hz, staggered
      auto e = CarAt(id, t);
      latest[id] = e;
      pending.push_back(e);
      r.truth[id].push_back(e);
    }
    if (ms % 20 != 0) continue;  // 50 Hz broadcasts
    protocol::WorldState w;
    w.sequence = ++sequence;
    w.server_time_ns = kReplayT0 + t;
    w.sim_time_ns = t;
    w.phase = SessionPhase::kRunning;
    w.keyframe = ms % 1000 == 0;
    if (ms == 3000) {
      latest.erase(3);
      w.removed_entities = {3};
    }
    if (w.keyframe)
      for (const auto& [id, e] : latest) w.entities.push_back(e);
    else
      w.entities = pending;
    pending.clear();
    r.worlds.push_back(w);
  }
  return r;
}

server::ReplayLog BuildLog(const Recording& r) {
  server::ReplayLogBuilder b;
  for (const auto& w : r.worlds) b.Add(w);
  return b.Finish();
}

// The newest recorded state of `id` not after `sim_ns`; nullptr when none (or removed).
const protocol::EntityState* Expected(const Recording& r, uint64_t id, int64_t sim_ns) {
  if (id == 3 && sim_ns >= 3000 * kReplayMs) return nullptr;
  const protocol::EntityState* best = nullptr;
  for (const auto& e : r.truth.at(id))
    if (e.kinematics.stamp_ns <= sim_ns) best = &e;
  return best;
}

void CheckCoreMatches(const Recording& rec, const server::WorldCore& core, int64_t sim_ns) {
  for (uint64_t id = 1; id <= 4; ++id) {
    const auto* want = Expected(rec, id, sim_ns);
    auto it = core.Entities().find(id);
    INFO("car " << id << " at sim " << sim_ns / kReplayMs << " ms");
    if (!want) {
      CHECK(it == core.Entities().end());
      continue;
    }
    REQUIRE(it != core.Entities().end());
    CHECK(it->second.state == *want);
  }
}

}  // namespace

TEST_CASE("replay: a log's world states become one state per entity and stamp, in stamp order") {
  const Recording rec = MakeRecording();
  const server::ReplayLog log = BuildLog(rec);
  size_t sent = 0;
  for (const auto& [id, states] : rec.truth) sent += states.size();
  CHECK(log.states.size() == sent);  // keyframe repeats dropped, nothing lost
  CHECK(log.entity_count == 4);
  CHECK(log.max_owner == 2);
  CHECK(std::is_sorted(log.states.begin(), log.states.end(), [](const auto& a, const auto& b) {
    return a.kinematics.stamp_ns < b.kinematics.stamp_ns;
  }));
  REQUIRE(log.removals.size() == 1);
  CHECK(log.removals[0].id == 3);
  CHECK(log.removals[0].sim_ns == 3000 * kReplayMs);
  int64_t first = INT64_MAX;
  for (const auto& [id, states] : rec.truth) first = std::min(first, states.front().kinematics.stamp_ns);
  CHECK(log.first_ns == first);
}

TEST_CASE("replay: a variable sign's contents are kept each time the world states' conditions changed them") {
  server::ReplayLogBuilder b;
  auto world = [](int64_t ms, std::optional<std::vector<world::VariableSignContent>> signs) {
    protocol::WorldState w;
    w.sim_time_ns = ms * kReplayMs;
    if (signs) {
      w.conditions = world::WorldConditions{};
      w.conditions->variable_signs = *signs;
    }
    return w;
  };
  const std::vector<world::VariableSignContent> a = {{7, 0, 100.0}}, c = {{7, 0, 60.0}};
  b.Add(world(0, std::nullopt));
  b.Add(world(100, a));           // the first carried
  b.Add(world(200, std::nullopt));  // no conditions: nothing changed
  b.Add(world(300, a));           // a keyframe repeating it
  b.Add(world(400, c));           // a change
  b.Add(world(500, c));
  const server::ReplayLog log = b.Finish();
  REQUIRE(log.sign_changes.size() == 2);
  CHECK(log.sign_changes[0].sim_ns == 100 * kReplayMs);
  CHECK(log.sign_changes[0].contents == a);
  CHECK(log.sign_changes[1].sim_ns == 400 * kReplayMs);
  CHECK(log.sign_changes[1].contents == c);
}

TEST_CASE("replay: logs recorded by protocol version 1 and 2 builds give the replay what their twin of this version gives") {
  // The same three world states (two cars, one removed at the third), written by fuzz_seeds in a version 1
  // and a version 2 build (kept in the corpus) and in this one: every state, removal and name read alike.
  const std::string dir = std::string(PLATOON_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_replay_log/";
  const server::ReplayLog v1 = server::LoadReplayLog(dir + "session_closed_v1.mcap");
  const server::ReplayLog v2 = server::LoadReplayLog(dir + "session_closed_v2.mcap");
  const server::ReplayLog now = server::LoadReplayLog(dir + "session_closed.mcap");
  CHECK(now.problems.empty());
  REQUIRE(now.states.size() == v2.states.size());
  for (size_t i = 0; i < now.states.size(); ++i) CHECK(now.states[i] == v2.states[i]);  // the same layout
  CHECK(now.world_states == v2.world_states);
  CHECK(now.node_names == v2.node_names);
  CHECK(v1.problems.empty());
  CHECK(v2.problems.empty());
  CHECK(v1.world_states == 3);
  CHECK(v1.entity_count == 2);
  REQUIRE(v1.states.size() == v2.states.size());
  REQUIRE(v1.states.size() >= 4);
  // Version 2 carries all but the position as Float32: the cars' default box width of 1.8 m is 1.7999999523 m.
  for (size_t i = 0; i < v1.states.size(); ++i) {
    const protocol::EntityState &a = v1.states[i], &b = v2.states[i];
    CHECK(a.id == b.id);
    CHECK(a.kinematics.stamp_ns == b.kinematics.stamp_ns);
    CHECK(a.kinematics.pose.position_m == b.kinematics.pose.position_m);
    CHECK(a.kinematics.velocity_mps == b.kinematics.velocity_mps);
    CHECK(a.box_size_m.isApprox(b.box_size_m, 1e-7));
    CHECK(a.box_size_m != b.box_size_m);
    protocol::EntityState same_box = a;
    same_box.box_size_m = b.box_size_m;
    CHECK(same_box == b);
  }
  CHECK(v1.states.front().kinematics.velocity_mps == Vec3(15, 0, 0));
  REQUIRE(v1.removals.size() == 1);
  CHECK(v1.removals[0].id == v2.removals[0].id);
  CHECK(v1.removals[0].sim_ns == v2.removals[0].sim_ns);
  CHECK(v1.node_names == v2.node_names);
  CHECK(v1.node_names.at(2) == "traffic");
}

TEST_CASE("replay: the core holds every recorded state once sim time reaches its stamp, seeks back and ends") {
  const Recording rec = MakeRecording();
  const server::ReplayLog log = BuildLog(rec);
  config::SessionDef def;
  def.server.broadcast_hz = 50;
  server::WorldCore core(def, Quiet());
  auto replay = std::make_shared<server::ReplaySystem>(log, core, 0, 5000 * kReplayMs);
  core.AddSystem(replay, server::system_priority::kStepper);
  core.EnableTimeControl();
  core.Control(SessionControl{SessionControl::Command::kStart, kReplayT0, 0}, kReplayT0);
  for (int64_t now = kReplayT0; now <= kReplayT0 + 4000 * kReplayMs; now += 7 * kReplayMs) {
    core.Poll(now);
    CheckCoreMatches(rec, core, core.SimTimeAt(now));
  }
  // Joined nodes get ids above the recorded owners'.
  {
    protocol::Join j;
    j.name = "observer";
    j.role = protocol::Role::kObserver;
    protocol::Decoded d;
    d.message = j;
    d.peer_version = protocol::kProtocolVersion;
    core.OnControl("peer", "127.0.0.1", d, kReplayT0 + 4000 * kReplayMs);
    CHECK(core.Nodes().begin()->first > log.max_owner);
  }
  core.TakeOutgoing();

  // Seek back to 1.5 s: everything removed in a world state of its own, then the world of 1.5 s.
  int64_t now = kReplayT0 + 4100 * kReplayMs;
  core.Control(SessionControl{SessionControl::Command::kSeek, now, 1500 * kReplayMs}, now);
  core.Poll(now);
  auto out = core.TakeOutgoing();
  REQUIRE_FALSE(out.empty());
  const auto& clear = std::get<protocol::WorldState>(out.front().message);
  CHECK(clear.entities.empty());
  CHECK(clear.removed_entities.size() == 3);  // cars 1, 2 and 4 were alive at 4 s
  CheckCoreMatches(rec, core, 1500 * kReplayMs);
  CHECK(core.Entities().count(3) == 1);  // car 3 is back: it lived at 1.5 s
  bool resent = false;
  for (size_t i = 1; i < out.size(); ++i)
    resent |= std::get<protocol::WorldState>(out[i].message).entities.size() == 4;
  CHECK(resent);

  // Double speed: sim time runs twice as fast and the world states say so.
  core.Control(SessionControl{SessionControl::Command::kSpeed, now, 0, 2.0}, now);
  const int64_t sim_before = core.SimTimeAt(now);
  core.Poll(now + 100 * kReplayMs);
  CHECK(core.SimTimeAt(now + 100 * kReplayMs) - sim_before == 200 * kReplayMs);
  out = core.TakeOutgoing();
  REQUIRE_FALSE(out.empty());
  CHECK(std::get<protocol::WorldState>(out.back().message).sim_rate == 2.0);

  // The end (5 s): the session stops there.
  for (int64_t t = now + 100 * kReplayMs; t < now + 3000 * kReplayMs && !replay->Ended(); t += 10 * kReplayMs) core.Poll(t);
  CHECK(replay->Ended());
  CHECK(core.Phase() == SessionPhase::kStopped);
}

TEST_CASE("replay: in lock-step every grant carries the recorded world at its step time") {
  const Recording rec = MakeRecording();
  const server::ReplayLog log = BuildLog(rec);
  config::SessionDef def;
  def.step.lockstep = true;
  def.step.step_hz = 100;
  def.step.end_s = 2.0;
  def.server.lost_timeout_s = 30;
  server::WorldCore core(def, Quiet());
  auto replay = std::make_shared<server::ReplaySystem>(log, core, 500 * kReplayMs, 2000 * kReplayMs);
  core.AddSystem(replay, server::system_priority::kStepper);
  core.EnableTimeControl();
  protocol::Join j;
  j.name = "lidar";
  j.role = protocol::Role::kSensor;
  j.lockstep_member = true;
  protocol::Decoded d;
  d.message = j;
  d.peer_version = protocol::kProtocolVersion;
  core.OnControl("peer-lidar", "127.0.0.1", d, kReplayT0);
  const uint32_t member = core.Nodes().begin()->first;
  core.Control(SessionControl{SessionControl::Command::kStart, kReplayT0, 500 * kReplayMs}, kReplayT0);
  core.TakeOutgoing();
  uint64_t grants = 0;
  int64_t now = kReplayT0;
  std::map<uint64_t, protocol::EntityState> seen;  // what a member following the grants holds
  while (!core.Finished() && now < kReplayT0 + 60 * kReplayS) {
    now += kReplayMs;
    core.Poll(now);
    for (auto& o : core.TakeOutgoing()) {
      const auto* w = std::get_if<protocol::WorldState>(&o.message);
      if (!w || w->step == 0) continue;
      ++grants;
      if (w->keyframe) seen.clear();
      for (const auto& e : w->entities) seen[e.id] = e;
      for (uint64_t id : w->removed_entities) seen.erase(id);
      // What the member computes step k from is the recording at t_k.
      for (uint64_t id = 1; id <= 4; ++id) {
        const auto* want = Expected(rec, id, w->sim_time_ns);
        INFO("car " << id << " step " << w->step);
        if (!want) {
          CHECK(seen.count(id) == 0);
        } else {
          REQUIRE(seen.count(id) == 1);
          CHECK(seen[id] == *want);
        }
      }
      protocol::NodeState ack;
      ack.node_id = member;
      ack.sequence = w->step;
      ack.step_done = w->step;
      core.Merge(ack, now);
    }
  }
  CHECK(core.Finished());
  CHECK(grants == 151);  // steps at 0.50, 0.51, ..., 2.00 s
}

namespace {

// A session log of the recording: the session file as the recorder stores it, then every world state.
void WriteReplayLog(const std::string& path, const Recording& rec, const std::string& session_text,
                    const std::string& session_path) {
  std::string error;
  auto w = session_log::Writer::Open(path, &error);
  REQUIRE_MESSAGE(w, error);
  CHECK(w->WriteJson(session_log::kSessionTopic, "", "",
                     session_log::SessionInfoJson({"recorded", session_text, session_path, "rec"}), 0, 0)
            .Ok());
  for (const auto& world : rec.worlds) CHECK(w->WriteWorld(world).Ok());
  CHECK(w->Close().Ok());
}

}  // namespace

TEST_CASE("replay: an observer joined to a replay server receives every recorded state at its recorded pose") {
  const Recording rec = MakeRecording();
  testing::TempDir dir;
  const std::string path = dir.Path() + "/drive.mcap";
  WriteReplayLog(path, rec, "[session]\nname = \"recorded\"\n", "x.toml");
  const server::ReplayLog log = server::LoadReplayLog(path);
  CHECK(log.problems.empty());
  CHECK(log.session_name == "recorded");
  REQUIRE(log.states.size() > 400);

  config::SessionDef def;
  def.server.bind_address = "127.0.0.1";
  config::SetControlPort(def.server, 0);
  def.server.broadcast_hz = 50;
  clock::MonotonicOscillator reference;
  server::SyncServer server(def, Quiet(), reference);
  const auto ports = server.Bind();
  auto replay = std::make_shared<server::ReplaySystem>(log, server.Core(), 0, log.last_ns);
  server.Core().AddSystem(replay, server::system_priority::kStepper);
  server.Core().EnableTimeControl();
  // Start half a second ahead so that the observer is in before sim time runs.
  server.Control(SessionControl{SessionControl::Command::kStart, reference.NowNs() + 500 * kReplayMs, 0});
  std::atomic<bool> stop{false};
  std::thread server_thread([&] { server.Run(stop); });

  zmq::context_t context(1);
  session::ClientDef cdef = session::DefaultClientDef("observer", protocol::Role::kObserver);
  session::SessionClient client(cdef, reference, Quiet());
  session::ClientLink link(context, "127.0.0.1", ports.control, transport::FaultDef{});
  std::mutex lock;
  std::map<std::pair<uint64_t, int64_t>, protocol::EntityState> received;  // (id, stamp) -> state
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!replay->Ended() && std::chrono::steady_clock::now() < deadline) {
    link.Turn(client, lock, {}, 5 * kReplayMs);
    std::lock_guard guard(lock);
    for (const auto& e : client.World().Received()) received.emplace(std::make_pair(e.id, e.kinematics.stamp_ns), e);
  }
  stop.store(true);
  server_thread.join();
  CHECK(replay->Ended());
  CHECK(client.Joined());
  CHECK(client.NodeId() > log.max_owner);
  CHECK(client.TimeControl());  // the Welcome says: a replay, seek and speed accepted

  // Every car seen; every state the observer holds is the recorded one at its stamp (within 1 cm:
  // exactly, in fact); and it saw most recorded states (a 50 Hz server merges some 20 Hz states away
  // only when two of one car fall into one period, which the staggering here never does).
  size_t matched = 0, recorded = 0;
  double worst_m = 0;
  for (const auto& [id, states] : rec.truth) {
    bool any = false;
    for (const auto& e : states) {
      ++recorded;
      auto it = received.find({id, e.kinematics.stamp_ns});
      if (it == received.end()) continue;
      any = true;
      ++matched;
      worst_m = std::max(worst_m, (it->second.kinematics.pose.position_m - e.kinematics.pose.position_m).norm());
    }
    CHECK_MESSAGE(any, "car " << id << " never seen");
  }
  MESSAGE("observer received " << matched << " of " << recorded << " recorded states; worst position error "
                               << worst_m << " m");
  CHECK(worst_m < 0.01);
  CHECK(matched >= recorded * 95 / 100);
  for (const auto& [key, e] : received) CHECK(rec.truth.count(key.first) == 1);  // nothing invented
}

TEST_CASE("replay: a client joined to a replay gets the recorded session file in its Welcome, and the recorded road from it") {
  // The session file the recorder stored: a generated three-lane road with its scenery.
  const std::string recorded_text =
      "[session]\nname = \"recorded\"\n\n[road]\ngenerate_length_m = 800\nseed = 7\nlanes = 3\n\n"
      "[scene]\nroad_environment = true\n";
  const Recording rec = MakeRecording();
  testing::TempDir dir;
  const std::string path = dir.Path() + "/drive.mcap";
  WriteReplayLog(path, rec, recorded_text, "/lab/recorded.toml");
  const server::ReplayLog log = server::LoadReplayLog(path);
  REQUIRE(log.session_text == recorded_text);

  // The replay's server runs on its own settings (no [road] of its own), as platoon replay --config does.
  config::SessionDef def;
  server::WorldCore core(def, Quiet());
  auto replay = std::make_shared<server::ReplaySystem>(log, core, 0, log.last_ns);
  core.AddSystem(replay, server::system_priority::kStepper);
  core.EnableTimeControl();

  // A session client joins through the codec, as over the sockets.
  clock::ManualOscillator local(kReplayT0);
  session::SessionClient client(session::DefaultClientDef("viewer", protocol::Role::kObserver), local, nullptr);
  for (int turn = 0; turn < 3 && !client.Joined(); ++turn) {
    client.Poll(local.NowNs());
    for (auto& o : client.TakeOutgoing())
      if (o.socket == session::Socket::kControl) core.OnControl("peer-viewer", "127.0.0.1", protocol::Decode(o.bytes), local.NowNs());
    for (auto& o : core.TakeOutgoing())
      if (o.target == server::Outgoing::Target::kPeer && o.peer == "peer-viewer")
        client.OnMessage(session::Socket::kControl, protocol::Encode(o.message), local.NowNs());
    local.Advance(300 * kReplayMs);
  }
  REQUIRE(client.Joined());
  CHECK(client.TimeControl());
  CHECK(client.SessionFile() == recorded_text);
  CHECK(client.SessionFilePath() == "/lab/recorded.toml");

  // What a viewer builds from it is the recorded road, not the replay server's settings.
  const config::SessionDef served = config::LoadSessionText(client.SessionFile(), client.SessionFilePath());
  const config::SessionDef recorded = config::LoadSessionText(recorded_text, "recorded.toml");
  CHECK(served.has_road);
  CHECK(served.road.lanes == 3);
  const road::RoadNetwork roads = road::SessionRoadNetwork(served.road);
  const road::RoadNetwork want = road::SessionRoadNetwork(recorded.road);
  REQUIRE(roads.Roads().size() == want.Roads().size());
  REQUIRE_FALSE(roads.Roads().empty());
  CHECK(roads.Roads().front().Length() == doctest::Approx(want.Roads().front().Length()));
  CHECK((roads.Roads().front().PointAt(500, 0) - want.Roads().front().PointAt(500, 0)).norm() < 1e-9);
  CHECK(road::SessionEnvironment(served).size() == road::SessionEnvironment(recorded).size());
  CHECK_FALSE(road::SessionEnvironment(served).empty());
}

TEST_CASE("replay: platoon replay refuses what is no session log and runs a log to its end") {
  testing::TempDir dir;
  const std::string junk = dir.Write("junk.mcap", "not an mcap file at all");
  auto bad = process::Child::Spawn({testing::BinDir() + "/platoon", "replay", junk, "--port", "0"});
  CHECK(testing::RunToExit(bad, std::chrono::seconds(10)) == 2);
  CHECK(testing::AnyLineContains(bad.Lines(), "not an MCAP file"));
  auto usage = process::Child::Spawn({testing::BinDir() + "/platoon", "replay", junk, "--speed", "nan"});
  CHECK(testing::RunToExit(usage, std::chrono::seconds(10)) == 2);

  const Recording rec = MakeRecording();
  const std::string path = dir.Path() + "/drive.mcap";
  {
    std::string error;
    auto w = session_log::Writer::Open(path, &error);
    REQUIRE(w);
    for (const auto& world : rec.worlds) {
      CHECK(w->WriteWorld(world).Ok());
    }
    // No Close(): no summary or footer, as a recorder killed mid-session leaves it; it still replays.
    CHECK(w->Flush().Ok());
  }
  auto run = process::Child::Spawn(
      {testing::BinDir() + "/platoon", "replay", path, "--port", "0", "--from", "1", "--to", "2", "--speed", "4"});
  const auto started = std::chrono::steady_clock::now();
  CHECK(testing::RunToExit(run, std::chrono::seconds(20)) == 0);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(took_s < 5.0);  // 1 s of sim time at 4x: a quarter second plus start and linger
  CHECK(testing::AnyLineContains(run.Lines(), "\"completed\":true"));
  CHECK(testing::SummaryValue(run.Lines(), "states_served").value_or(0) > 50);
}
