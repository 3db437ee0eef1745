#include "platoon/validation/recorded_world.hpp"

#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/state_interpolation.hpp"

#include <algorithm>
#include <set>

namespace platoon::validation {

std::string_view TruthMethodName(TruthMethod m) {
  return m == TruthMethod::kInterpolate ? "interpolate" : "dead_reckon";
}

std::optional<TruthMethod> TruthMethodFromName(std::string_view name) {
  if (name == "interpolate") return TruthMethod::kInterpolate;
  if (name == "dead_reckon") return TruthMethod::kDeadReckon;
  return std::nullopt;
}

KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns) {
  return platoon::InterpolateKinematics(a, b, t_ns);
}

void RecordedWorld::Record(const protocol::EntityState& e) {
  History& h = entities_[e.id];
  h.present = true;
  auto& v = h.states;
  // Owners stamp their states in increasing sim time; a repeat (a keyframe re-listing an unchanged
  // entity) or an older state adds nothing.
  if (v.empty() || e.kinematics.stamp_ns > v.back().kinematics.stamp_ns) {
    v.push_back(e);
  } else if (e.kinematics.stamp_ns < v.front().kinematics.stamp_ns) {
    v.insert(v.begin(), e);
  }
}

void RecordedWorld::Add(const protocol::WorldState& world) {
  if (broadcasts_++ == 0) first_ns_ = world.sim_time_ns;
  last_ns_ = std::max(last_ns_, world.sim_time_ns);
  for (const auto& e : world.entities) Record(e);
  auto remove = [&](History& h) {
    if (!h.present) return;
    h.present = false;
    h.removed_ns.push_back(world.sim_time_ns);
  };
  for (uint64_t id : world.removed_entities)
    if (auto it = entities_.find(id); it != entities_.end()) remove(it->second);
  // A keyframe is the full set (a rolling keyframe's slice, the full set of its ids, some by id only):
  // whoever it leaves out is gone.
  if (protocol::HasKeyframe(world)) {
    const auto listed = protocol::KeyframeListed(world);
    for (auto& [id, h] : entities_)
      if (protocol::KeyframeCovers(world, id) && !protocol::Listed(listed, id)) remove(h);  // a slice covers 1/P: that test first
  }
}

std::optional<protocol::EntityState> RecordedWorld::StateAt(uint64_t id, int64_t t_ns, TruthMethod method) const {
  const auto it = entities_.find(id);
  if (it == entities_.end() || broadcasts_ == 0 || t_ns > last_ns_ + kHorizonNs) return std::nullopt;
  const History& h = it->second;
  // The latest state at or before t.
  const auto after = std::upper_bound(h.states.begin(), h.states.end(), t_ns, [](int64_t t, const protocol::EntityState& e) {
    return t < e.kinematics.stamp_ns;
  });
  if (after == h.states.begin()) return std::nullopt;
  const protocol::EntityState& a = *(after - 1);
  // Removed after that state and not back by t: not there.
  const auto removal = std::upper_bound(h.removed_ns.begin(), h.removed_ns.end(), a.kinematics.stamp_ns);
  if (removal != h.removed_ns.end() && *removal <= t_ns) return std::nullopt;
  protocol::EntityState out = a;
  if (method == TruthMethod::kInterpolate && after != h.states.end() &&
      (removal == h.removed_ns.end() || *removal > after->kinematics.stamp_ns) && !IsJump(a.kinematics, after->kinematics)) {
    out.kinematics = platoon::InterpolateKinematics(a.kinematics, after->kinematics, t_ns, dr::ModelForKind(a.kind));
  } else {
    out.kinematics = dr::ExtrapolateState(dr::ModelForKind(a.kind), a.kinematics, t_ns);
  }
  return out;
}

std::vector<protocol::EntityState> RecordedWorld::EntitiesAt(int64_t t_ns, TruthMethod method, uint64_t exclude_id) const {
  std::vector<protocol::EntityState> out;
  for (const auto& [id, h] : entities_) {
    if (id == exclude_id) continue;
    if (auto s = StateAt(id, t_ns, method)) out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace platoon::validation
