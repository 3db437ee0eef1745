#include "platoon/node/world_view.hpp"

namespace platoon::node {

ApplyResult WorldView::Apply(const protocol::WorldState& w, uint32_t own_node, int64_t now_sim_ns, bool snapshot) {
  std::lock_guard lock(mutex_);
  return world_.Apply(w, now_sim_ns, snapshot, own_node);
}

std::vector<RemoteEntity> WorldView::Entities(int64_t sim_ns) const {
  std::lock_guard lock(mutex_);
  std::vector<RemoteEntity> out;
  for (auto& [state, pose] : world_.WithDisplayedPose(sim_ns)) out.push_back(RemoteEntity{std::move(state), pose});
  return out;
}

uint64_t WorldView::LastSequence() const {
  std::lock_guard lock(mutex_);
  return world_.LastSequence();
}

size_t WorldView::Size() const {
  std::lock_guard lock(mutex_);
  return world_.Size();
}

}  // namespace platoon::node
