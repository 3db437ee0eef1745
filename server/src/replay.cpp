#include "platoon/server/replay.hpp"

#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace platoon::server {

void ReplayLogBuilder::Add(const protocol::WorldState& w) {
  ++log_.world_states;
  log_.last_world_ns = log_.world_states == 1 ? w.sim_time_ns : std::max(log_.last_world_ns, w.sim_time_ns);
  for (const auto& n : w.nodes) log_.node_names[n.node_id] = n.name;
  for (const auto& e : w.entities) {
    log_.states.push_back(e);  // keyframes repeat states sent in deltas: Finish() keeps one of each
  }
  for (uint64_t id : w.removed_entities) log_.removals.push_back({w.sim_time_ns, id});
  for (const auto& e : w.events) {
    if (e.kind != protocol::LoggedEvent::Kind::kMarker) continue;
    if (!markers_seen_.emplace(e.sequence, e.sim_time_ns, e.text).second) continue;
    if (log_.markers.size() >= ReplayLog::kMaxMarkers) {
      ++markers_over_;
      continue;
    }
    log_.markers.push_back({e.sim_time_ns, e.text, e.source});
  }
  // Conditions come on keyframes and after a change: a sign change is a content that differs from the last.
  if (w.conditions && !w.conditions->variable_signs.empty() && w.conditions->variable_signs != last_signs_) {
    last_signs_ = w.conditions->variable_signs;
    if (log_.sign_changes.size() < ReplayLog::kMaxSignChanges) log_.sign_changes.push_back({w.sim_time_ns, last_signs_});
    else ++sign_changes_over_;
  }
}

ReplayLog ReplayLogBuilder::Finish() {
  if (sign_changes_over_ > 0)
    log_.problems.push_back(std::to_string(sign_changes_over_) + " variable sign changes beyond the first " +
                            std::to_string(ReplayLog::kMaxSignChanges) + " not read");
  if (markers_over_ > 0)
    log_.problems.push_back(std::to_string(markers_over_) + " markers beyond the first " + std::to_string(ReplayLog::kMaxMarkers) +
                            " not read");
  ReplayLog out = std::move(log_);
  // Order by (stamp, entity), keeping recorded order among copies, then keep the first copy of each.
  std::vector<size_t> order(out.states.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = out.states[a];
    const auto& y = out.states[b];
    if (x.kinematics.stamp_ns != y.kinematics.stamp_ns) return x.kinematics.stamp_ns < y.kinematics.stamp_ns;
    return x.id < y.id;
  });
  std::vector<protocol::EntityState> states;
  states.reserve(order.size());
  std::set<uint64_t> ids;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& e = out.states[order[k]];
    if (!states.empty() && states.back().id == e.id && states.back().kinematics.stamp_ns == e.kinematics.stamp_ns)
      continue;
    states.push_back(e);
    ids.insert(e.id);
    out.max_owner = std::max(out.max_owner, e.owner_node);
  }
  out.states = std::move(states);
  std::stable_sort(out.removals.begin(), out.removals.end(),
                   [](const ReplayLog::Removal& a, const ReplayLog::Removal& b) { return a.sim_ns < b.sim_ns; });
  out.entity_count = ids.size();
  if (!out.states.empty()) {
    out.first_ns = out.states.front().kinematics.stamp_ns;
    out.last_ns = out.states.back().kinematics.stamp_ns;
  }
  return out;
}

ReplayLog LoadReplayLog(const std::string& path) { return LoadReplayLog(path, nullptr); }

ReplayLog LoadReplayLog(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) {
  ReplayLogBuilder builder;
  std::string session_json;
  uint64_t undecodable = 0;
  // Streamed: the lidar and camera chunks of a long recording are never read.
  session_log::ReadOptions options;
  options.topics = {std::string(session_log::kSessionTopic), std::string(session_log::kWorldTopic)};
  options.progress = progress;
  auto result = session_log::ReadStream(path, options, [&](const session_log::Entry& e) {
    if (e.topic == session_log::kSessionTopic) {
      session_json.assign(reinterpret_cast<const char*>(e.data.data()), e.data.size());
      return;
    }
    if (e.topic != session_log::kWorldTopic) return;
    auto decoded = protocol::Decode(std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
    const auto* w = decoded.message ? std::get_if<protocol::WorldState>(&*decoded.message) : nullptr;
    if (decoded.error != protocol::DecodeError::kNone || !w) {
      ++undecodable;
      return;
    }
    builder.Add(*w);
  });
  ReplayLog log = builder.Finish();
  for (const auto& p : result.problems) log.problems.push_back(p.message);
  if (undecodable > 0)
    log.problems.push_back(path + ": " + std::to_string(undecodable) + " world states could not be decoded and were skipped");
  if (log.world_states == 0 && result.problems.empty())
    log.problems.push_back(path + ": no world states on " + std::string(session_log::kWorldTopic) +
                           " (is it a platoon session log?)");
  if (auto info = session_log::ParseSessionInfo(session_json)) {
    log.session_name = info->name;
    log.session_text = info->config;
    log.session_path = info->config_path;
  }
  return log;
}

ReplaySystem::ReplaySystem(const ReplayLog& log, WorldCore& core, int64_t from_ns, int64_t to_ns)
    : log_(log), core_(core), from_ns_(from_ns), to_ns_(to_ns), reset_to_ns_(from_ns) {
  core_.ReserveNodeIds(log.max_owner + 1);
  // Clients joining the replay get the recorded session file, as a live server's get the one it loaded:
  // a viewer given only --server draws the recorded road and scene.
  if (!log.session_text.empty()) core_.SetSessionFile(log.session_text, log.session_path);
}

void ReplaySystem::Reset(int64_t sim_ns, int64_t now_ns) {
  core_.ClearEntities(now_ns);
  // The newest state of every entity not after sim_ns, unless it was removed after that state.
  std::map<uint64_t, const protocol::EntityState*> alive;
  next_state_ = 0;
  while (next_state_ < log_.states.size() && log_.states[next_state_].kinematics.stamp_ns <= sim_ns) {
    alive[log_.states[next_state_].id] = &log_.states[next_state_];
    ++next_state_;
  }
  next_removal_ = 0;
  while (next_removal_ < log_.removals.size() && log_.removals[next_removal_].sim_ns <= sim_ns) {
    const auto& r = log_.removals[next_removal_++];
    auto it = alive.find(r.id);
    if (it != alive.end() && it->second->kinematics.stamp_ns <= r.sim_ns) alive.erase(it);
  }
  for (const auto& [id, state] : alive) {
    core_.Inject(*state, now_ns);
    ++injected_;
  }
  reached_ns_ = sim_ns;
}

void ReplaySystem::OnAdvance(int64_t sim_ns, int64_t now_ns) {
  if (ended_.load()) return;
  // A seek, or sim time moved back (a restarted session): the world as it was then.
  if (pending_reset_ || sim_ns < reached_ns_) {
    pending_reset_ = false;
    Reset(sim_ns, now_ns);
    return;
  }
  const int64_t until = std::min(sim_ns, to_ns_);
  // Removals and states in sim-time order; a state after its removal brings the entity back.
  while (true) {
    const bool state_due = next_state_ < log_.states.size() && log_.states[next_state_].kinematics.stamp_ns <= until;
    const bool removal_due = next_removal_ < log_.removals.size() && log_.removals[next_removal_].sim_ns <= until;
    if (!state_due && !removal_due) break;
    if (removal_due &&
        (!state_due || log_.removals[next_removal_].sim_ns < log_.states[next_state_].kinematics.stamp_ns)) {
      core_.RemoveEntity(log_.removals[next_removal_++].id);
    } else {
      core_.Inject(log_.states[next_state_++], now_ns);
      ++injected_;
    }
  }
  reached_ns_ = sim_ns;
  if (sim_ns >= to_ns_) {
    ended_.store(true);
    // Lock-step replays end through the session's end_s (set by the shell); real time stops here.
    if (core_.StepNs() == 0) core_.Control(protocol::SessionControl{protocol::SessionControl::Command::kStop}, now_ns);
  }
}

void ReplaySystem::OnSessionEvent(const SessionEvent& event) {
  if (event.kind == SessionEvent::Kind::kSeek) {
    pending_reset_ = true;
    reset_to_ns_ = event.sim_time_ns;
    ended_.store(false);
  }
}

}  // namespace platoon::server
