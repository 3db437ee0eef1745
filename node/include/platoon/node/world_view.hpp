#pragma once
/// A node's view of every remote entity: the last state the server merged, and a dead-reckoning
/// track that bridges lost or late broadcasts and blends corrections in. Thread-safe: the network
/// thread applies world states, modules read displayed poses.

#include "platoon/dead_reckoning.hpp"
#include "platoon/node/module.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/remote_world.hpp"

#include <cstdint>
#include <mutex>
#include <vector>

namespace platoon::node {

/// What applying one world state found out about the broadcast stream.
using ApplyResult = WorldApplyResult;

/// The remote world as one node sees it.
class WorldView {
 public:
  /// `track_def` is the receiver's blending definition; the model is chosen per entity kind.
  explicit WorldView(const dr::TrackDef& track_def = dr::DefaultTrackDef()) : world_(track_def) {}

  /// Applies a broadcast (delta or keyframe) or a snapshot reply. Entities owned by `own_node` are
  /// skipped. `now_sim_ns` is the node's sim time, where corrections start blending.
  ApplyResult Apply(const protocol::WorldState& world, uint32_t own_node, int64_t now_sim_ns, bool snapshot);

  /// Every remote entity, displayed at `sim_ns`.
  std::vector<RemoteEntity> Entities(int64_t sim_ns) const;

  /// Sequence number of the newest world state applied.
  uint64_t LastSequence() const;

  /// Number of remote entities held.
  size_t Size() const;

 private:
  mutable std::mutex mutex_;
  RemoteWorld world_;
};

}  // namespace platoon::node
