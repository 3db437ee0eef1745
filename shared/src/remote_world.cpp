#include "platoon/remote_world.hpp"

#include "platoon/dead_reckoning_kinds.hpp"

#include <algorithm>
#include <vector>

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

  for (const auto& e : w.entities) {
    if (own_node != 0 && e.owner_node == own_node) continue;
    auto it = entries_.find(e.id);
    if (it == entries_.end()) {
      dr::TrackDef def = track_def_;
      def.model = dr::ModelForKind(e.kind);
      it = entries_.emplace(e.id, Entry{e, dr::RemoteTrack(def)}).first;
      if (slice_parts_ > 1) slice_ids_[e.id % slice_parts_].push_back(e.id);
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
    // The ids listed (states and a slice's kept ids), sorted once: the sweep looks each held id up there.
    if (protocol::HasKeyframe(w)) Sweep(w, protocol::KeyframeListed(w));
    for (uint64_t id : w.removed_entities)
      if (auto it = entries_.find(id); it != entries_.end()) Erase(it);
    last_sequence_ = std::max(last_sequence_, w.sequence);
  }
  return r;
}

void RemoteWorld::Erase(Entries::iterator it) {
  if (slice_parts_ > 1) {
    auto& ids = slice_ids_[it->first % slice_parts_];
    if (auto at = std::find(ids.begin(), ids.end(), it->first); at != ids.end()) {
      *at = ids.back();
      ids.pop_back();
    }
  }
  entries_.erase(it);
}

void RemoteWorld::Sweep(const protocol::WorldState& w, const std::vector<uint64_t>& listed) {
  auto unlisted = [&](uint64_t id) { return !protocol::Listed(listed, id); };
  if (w.keyframe) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      const auto next = std::next(it);
      if (unlisted(it->first)) Erase(it);
      it = next;
    }
    return;
  }
  // A slice covers the ids with id % P == k: only those are looked at (a part beyond P covers none).
  if (w.keyframe_part >= w.keyframe_parts) return;
  if (slice_parts_ != w.keyframe_parts) {
    slice_parts_ = w.keyframe_parts;
    slice_ids_.assign(slice_parts_, {});
    for (const auto& [id, e] : entries_) slice_ids_[id % slice_parts_].push_back(id);
  }
  auto& ids = slice_ids_[w.keyframe_part];
  std::vector<uint64_t> kept;
  kept.reserve(ids.size());
  for (uint64_t id : ids) {
    if (unlisted(id)) entries_.erase(id);
    else kept.push_back(id);
  }
  ids = std::move(kept);
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
