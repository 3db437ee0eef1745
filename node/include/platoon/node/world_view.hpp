#pragma once
/// A node's view of every remote entity: the last state the server merged, and a dead-reckoning
/// track that bridges lost or late broadcasts and blends corrections in. Thread-safe: the network
/// thread applies world states, modules read displayed poses.

#include "platoon/dead_reckoning.hpp"
#include "platoon/node/module.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace platoon::node {

/// What applying one world state found out about the broadcast stream.
struct ApplyResult {
  bool gap = false;    ///< Broadcasts were missed (sequence jumped): ask for a snapshot.
  bool reset = false;  ///< The sequence went back: the server restarted.
  bool applied = true; ///< False when the message was older than what is already applied.
};

/// The remote world as one node sees it.
class WorldView {
 public:
  /// `track_def` is the receiver's blending definition; the model is chosen per entity kind.
  explicit WorldView(const dr::TrackDef& track_def = dr::DefaultTrackDef()) : track_def_(track_def) {}

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
  struct Entry {
    protocol::EntityState state;
    dr::RemoteTrack track;
  };
  dr::TrackDef track_def_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Entry> entries_;
  uint64_t last_sequence_ = 0;
};

}  // namespace platoon::node
