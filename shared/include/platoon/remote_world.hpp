#pragma once
/// A process's copy of the merged world: the newest state of every remote entity the server broadcasts,
/// each with a dead-reckoning track (dr::RemoteTrack, model by entity kind) so the display moves
/// smoothly between broadcasts and hides corrections. Clone-pattern rules (docs/ARCHITECTURE.md "World
/// view"): sequence gaps and a restarted server ask for a snapshot; a keyframe removes what it does not
/// list. Used by the node runtime (node::WorldView adds a mutex) and the viewer (WorldClient guards it).
/// Plain data, not thread-safe.

#include "platoon/dead_reckoning.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace platoon {

/// What applying one world state found out about the broadcast stream.
struct WorldApplyResult {
  bool gap = false;      ///< Broadcasts were missed (sequence jumped): ask for a snapshot.
  bool reset = false;    ///< The sequence went back: the server restarted.
  bool applied = true;   ///< False when a snapshot was older than what is already applied.
};

/// Every entity of the session, as the viewer displays it.
class RemoteWorld {
 public:
  /// `track_def` is the blending definition; the model is chosen per entity kind (dr::ModelForKind).
  explicit RemoteWorld(const dr::TrackDef& track_def = dr::DefaultTrackDef()) : track_def_(track_def) {}

  /// Applies a broadcast (delta or keyframe) or a snapshot reply at local sim time `now_sim_ns`, where
  /// corrections start blending. Entities owned by `own_node` are skipped (0: keep every entity).
  WorldApplyResult Apply(const protocol::WorldState& world, int64_t now_sim_ns, bool snapshot, uint32_t own_node = 0);

  /// The world stream fell silent: from sim time `sim_ns` on, Displayed and WithDisplayedPose show every
  /// entity where its estimate was at `sim_ns`, standing still (no velocity, acceleration or turn rate)
  /// and flagged stale, instead of dead-reckoning it further without news. The next Apply ends the hold,
  /// and the estimates run on from the newest states as if there had been none. A second call while
  /// holding keeps the first instant. (session::SessionClient holds after ClientDef::world_hold_s.)
  void Hold(int64_t sim_ns);
  /// The sim time the display holds at, while it holds.
  std::optional<int64_t> HeldAt() const { return held_at_ns_; }

  /// Every entity with its kinematics replaced by the displayed (dead-reckoned, blended) state at
  /// `sim_ns`; other fields as last received. While holding, past the hold instant: the held state. Sorted by id.
  std::vector<protocol::EntityState> Displayed(int64_t sim_ns) const;

  /// Every entity as received, with its displayed (dead-reckoned, blended) pose at `sim_ns`. While holding,
  /// past the hold instant: the held pose, and the state's kinematics are the held ones (standing still,
  /// stamped at the hold instant) and its stale flag set.
  std::vector<std::pair<protocol::EntityState, Pose>> WithDisplayedPose(int64_t sim_ns) const;

  /// Every entity as last received (not dead-reckoned), sorted by id.
  std::vector<protocol::EntityState> Received() const;

  /// Sequence number of the newest world state applied.
  uint64_t LastSequence() const { return last_sequence_; }
  /// Number of entities held.
  size_t Size() const { return entries_.size(); }
  /// Dead-reckoning track of entity `id`, or nullptr.
  const dr::RemoteTrack* Track(uint64_t id) const {
    const auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second.track;
  }

 private:
  struct Entry {
    protocol::EntityState state;
    dr::RemoteTrack track;
  };
  using Entries = std::map<uint64_t, Entry>;
  /// Erases an entry, and its id from the slice index.
  void Erase(Entries::iterator it);
  /// Drops the entries a keyframe or a rolling keyframe's slice covers but does not list (`listed`, sorted).
  void Sweep(const protocol::WorldState& w, const std::vector<uint64_t>& listed);

  dr::TrackDef track_def_;
  Entries entries_;
  // The held ids by rolling-keyframe slice (id % slice_parts_), so that a slice sweeps its own ids, not the
  // whole world; built at the first slice, again when the server's slice count changes. 0: no index.
  uint16_t slice_parts_ = 0;
  std::vector<std::vector<uint64_t>> slice_ids_;
  uint64_t last_sequence_ = 0;
  std::optional<int64_t> held_at_ns_;
};

}  // namespace platoon
