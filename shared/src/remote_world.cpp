#include "platoon/remote_world.hpp"

#include "platoon/dead_reckoning_kinds.hpp"

#include <algorithm>
#include <set>

namespace platoon {
namespace {

// What a held display shows: the estimate at the hold instant, standing still.
KinematicState Held(const dr::RemoteTrack& track, int64_t at_ns) {
  KinematicState k = track.DisplayedState(at_ns);
  k.velocity_mps.setZero();
  k.acceleration_mps2.setZero();
  k.angular_velocity_radps.setZero();
  return k;
}

}  // namespace

void RemoteWorld::Hold(int64_t sim_ns) {
  if (!held_at_ns_) held_at_ns_ = sim_ns;
}

WorldApplyResult RemoteWorld::Apply(const protocol::WorldState& w, int64_t now_sim_ns, bool snapshot, uint32_t own_node) {
  WorldApplyResult r;
  // Any world state from the server ends a hold: the newest states are news again.
  held_at_ns_.reset();
  if (last_sequence_ != 0 && w.sequence < last_sequence_) {
    if (snapshot) {
      // A snapshot overtaken by broadcasts: its states may still be new, but it cannot remove anything.
      r.applied = false;
    } else {
      // Sequence numbers only grow while a server lives: this is a restarted server.
      r.reset = true;
      last_sequence_ = 0;
    }
  }
  if (!snapshot && last_sequence_ != 0 && w.sequence > last_sequence_ + 1) r.gap = true;

  std::set<uint64_t> listed;
  for (const auto& e : w.entities) {
    if (own_node != 0 && e.owner_node == own_node) continue;
    listed.insert(e.id);
    auto it = entries_.find(e.id);
    if (it == entries_.end()) {
      dr::TrackDef def = track_def_;
      def.model = dr::ModelForKind(e.kind);
      it = entries_.emplace(e.id, Entry{e, dr::RemoteTrack(def)}).first;
    }
    Entry& entry = it->second;
    // The track takes only newer kinematics; flags (stale, lights) follow the newest broadcast either way.
    if (entry.track.OnUpdate(e.kinematics, now_sim_ns)) {
      entry.state = e;
    } else if (r.applied) {
      entry.state.stale = e.stale;
    }
  }
  if (r.applied) {
    // A keyframe, or a rolling keyframe's slice, lists every live entity it covers: drop the others.
    if (protocol::HasKeyframe(w)) {
      for (auto it = entries_.begin(); it != entries_.end();)
        it = listed.count(it->first) || !protocol::KeyframeCovers(w, it->first) ? std::next(it) : entries_.erase(it);
    }
    for (uint64_t id : w.removed_entities) entries_.erase(id);
    last_sequence_ = std::max(last_sequence_, w.sequence);
  }
  return r;
}

std::vector<std::pair<protocol::EntityState, Pose>> RemoteWorld::WithDisplayedPose(int64_t sim_ns) const {
  std::vector<std::pair<protocol::EntityState, Pose>> out;
  out.reserve(entries_.size());
  const bool held = held_at_ns_ && sim_ns > *held_at_ns_;
  for (const auto& [id, e] : entries_) {
    if (!e.track.HasState()) continue;
    if (!held) {
      out.emplace_back(e.state, e.track.At(sim_ns));
      continue;
    }
    protocol::EntityState s = e.state;
    s.kinematics = Held(e.track, *held_at_ns_);
    s.stale = true;
    const Pose pose = s.kinematics.pose;
    out.emplace_back(std::move(s), pose);
  }
  return out;
}

std::vector<protocol::EntityState> RemoteWorld::Displayed(int64_t sim_ns) const {
  std::vector<protocol::EntityState> out;
  out.reserve(entries_.size());
  const bool held = held_at_ns_ && sim_ns > *held_at_ns_;
  for (const auto& [id, e] : entries_) {
    if (!e.track.HasState()) continue;
    out.push_back(e.state);
    out.back().kinematics = held ? Held(e.track, *held_at_ns_) : e.track.DisplayedState(sim_ns);
    out.back().stale = out.back().stale || held;
  }
  return out;
}

std::vector<protocol::EntityState> RemoteWorld::Received() const {
  std::vector<protocol::EntityState> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e.state);
  return out;
}

}  // namespace platoon
