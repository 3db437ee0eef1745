// Session and node events derived from the world-state stream, and their flat JSON.
#include "platoon/log/session_events.hpp"

#include <doctest/doctest.h>

#include <optional>

namespace {

using namespace platoon;
using protocol::SessionPhase;

protocol::NodeInfo Node(uint32_t id, const std::string& name, protocol::Role role, uint32_t pid, bool lost = false) {
  protocol::NodeInfo n;
  n.node_id = id;
  n.name = name;
  n.role = role;
  n.host = "pc" + std::to_string(id);
  n.pid = pid;
  n.lost = lost;
  return n;
}

struct Stream {
  session_log::EventDeriver deriver;
  uint64_t seq = 0;
  // One world state; a keyframe when `nodes` is given. Returns "type/event/name" per event.
  std::vector<std::string> Next(SessionPhase phase, std::optional<std::vector<protocol::NodeInfo>> nodes = std::nullopt) {
    protocol::WorldState w;
    w.sequence = ++seq;
    w.sim_time_ns = static_cast<int64_t>(seq) * 1'000'000;
    w.server_time_ns = 5'000'000'000 + w.sim_time_ns;
    w.phase = phase;
    w.keyframe = nodes.has_value();
    if (nodes) w.nodes = *nodes;
    std::vector<std::string> out;
    for (const auto& e : deriver.OnWorld(w)) {
      std::string name;
      for (const auto& [k, v] : e.fields)
        if (k == "name") name = "/" + v.substr(1, v.size() - 2);
      out.push_back(e.type + "/" + e.event + name);
      CHECK(e.world_seq == w.sequence);
      CHECK(e.sim_time_ns == w.sim_time_ns);
      CHECK(e.server_time_ns == w.server_time_ns);
    }
    return out;
  }
};

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("session events: the phase at the first state, then start, running, pause, resume, stop") {
  Stream s;
  CHECK(s.Next(SessionPhase::kWaiting) == V{"session/recording"});
  CHECK(s.Next(SessionPhase::kWaiting).empty());
  CHECK(s.Next(SessionPhase::kStarting) == V{"session/start"});
  CHECK(s.Next(SessionPhase::kRunning) == V{"session/running"});
  CHECK(s.Next(SessionPhase::kRunning).empty());
  CHECK(s.Next(SessionPhase::kPaused) == V{"session/pause"});
  CHECK(s.Next(SessionPhase::kRunning) == V{"session/resume"});
  CHECK(s.Next(SessionPhase::kStopped) == V{"session/stop"});
  // A recorder that joins a running session says so once.
  Stream late;
  CHECK(late.Next(SessionPhase::kRunning) == V{"session/recording"});
  CHECK(late.Next(SessionPhase::kRunning).empty());
}

TEST_CASE("session events: nodes present in the first table, then joined, lost, back, restarted and left from the keyframes' tables") {
  using protocol::Role;
  Stream s;
  const auto traffic = Node(1, "traffic", Role::kTraffic, 100);
  const auto seat = Node(2, "seat", Role::kDriver, 200);
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, seat}) == V{"session/recording", "node/present/traffic", "node/present/seat"});
  // Deltas carry no table: they say nothing about nodes.
  CHECK(s.Next(SessionPhase::kRunning).empty());
  const auto lidar = Node(3, "lidar", Role::kSensor, 300);
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, seat, lidar}) == V{"node/joined/lidar"});
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, Node(2, "seat", Role::kDriver, 200, true), lidar}) == V{"node/lost/seat"});
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, Node(2, "seat", Role::kDriver, 200, true), lidar}).empty());
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, seat, lidar}) == V{"node/back/seat"});
  CHECK(s.Next(SessionPhase::kRunning, std::vector{traffic, seat, Node(3, "lidar", Role::kSensor, 301)}) == V{"node/restarted/lidar"});
  CHECK(s.Next(SessionPhase::kPaused, std::vector{seat, Node(3, "lidar", Role::kSensor, 301)}) == V{"session/pause", "node/left/traffic"});
}

TEST_CASE("session events: one flat JSON object, common fields first, strings escaped, param and marker events in the same layout") {
  session_log::Event e;
  e.type = "node";
  e.event = "joined";
  e.sim_time_ns = -250'000'000;
  e.server_time_ns = 7;
  e.world_seq = 42;
  e.Add("name", "seat \"1\"").Add("node_id", int64_t{3}).Add("lost", false).Add("rate", 0.5);
  CHECK(e.Json() == R"({"type":"node","event":"joined","sim_time_ns":-250000000,"server_time_ns":7,"world_seq":42,)"
                    R"("name":"seat \"1\"","node_id":3,"lost":false,"rate":0.5})");
  session_log::Event marker;
  marker.type = "marker";
  marker.event = "marker";
  marker.Add("label", "lane change");
  CHECK(marker.Json() ==
        R"({"type":"marker","event":"marker","sim_time_ns":0,"server_time_ns":0,"world_seq":0,"label":"lane change"})");
  CHECK(session_log::EventSchema().find("\"required\": [\"type\", \"event\", \"sim_time_ns\"") != std::string_view::npos);
}

TEST_CASE("session events: logged markers and parameter changes are written once each, with their own sim time") {
  session_log::EventDeriver deriver;
  protocol::LoggedEvent mark{1, 2'500'000'000, protocol::LoggedEvent::Kind::kMarker, "ctl", "brake now", "", 0, 0};
  protocol::LoggedEvent set{2, 2'600'000'000, protocol::LoggedEvent::Kind::kParam, "ctl",
                            "node.city.desired_speed_mps = 25", "", 0, 0};
  protocol::WorldState w;
  w.sequence = 10;
  w.sim_time_ns = 2'700'000'000;
  w.phase = SessionPhase::kRunning;
  w.keyframe = false;
  w.events = {mark};
  deriver.OnWorld(w);  // the first state: "recording" and the marker
  // The next states repeat the marker (a second of repeats) and bring the set.
  w.sequence = 11;
  w.events = {mark, set};
  const auto second = deriver.OnWorld(w);
  REQUIRE(second.size() == 1);
  CHECK(second[0].type == "param");
  CHECK(second[0].event == "set");
  CHECK(second[0].sim_time_ns == set.sim_time_ns);
  CHECK(second[0].world_seq == 11);
  const std::string json = second[0].Json();
  CHECK(json.find("\"text\":\"node.city.desired_speed_mps = 25\"") != std::string::npos);
  CHECK(json.find("\"sequence\":2") != std::string::npos);
  w.sequence = 12;
  CHECK(deriver.OnWorld(w).empty());
}
