#pragma once
/// Replay of a session log: the recorded world served exactly as a live sync server serves one. A
/// ReplaySystem plugs into the WorldCore like any system; at each advance of sim time it injects every
/// recorded entity state whose stamp has been reached, and removes what the recording removed. Joins,
/// time sync, keyframes, snapshots, pause, lock-step and the node table are the live core's, so viewers,
/// observers, sensor hosts and the fusion node join a replay unchanged. Pure: no clock, no socket.

#include "platoon/protocol/messages.hpp"
#include "platoon/server/world_core.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace platoon::server {

/// What a replay serves, built from a log's world states.
struct ReplayLog {
  std::string session_name;                 ///< From /platoon/session ("" when absent).
  std::string session_text;                 ///< The recorded session file's text ("" when absent).
  std::string session_path;                 ///< Where that file was when recorded ("" when absent).
  std::vector<protocol::EntityState> states;  ///< Every distinct recorded entity state, by stamp.
  struct Removal {
    int64_t sim_ns = 0;
    uint64_t id = 0;
  };
  std::vector<Removal> removals;            ///< Entities the server removed, by sim time.
  int64_t first_ns = 0;                     ///< Sim time of the first recorded state, in ns.
  int64_t last_ns = 0;                      ///< Sim time of the last recorded state, in ns.
  uint32_t max_owner = 0;                   ///< Highest recorded owner node id.
  uint64_t world_states = 0;                ///< World states read.
  int64_t last_world_ns = 0;                ///< Sim time of the last world state, in ns (0 before any).
  std::map<uint32_t, std::string> node_names;  ///< Node id -> name, from the node tables of keyframes.
  size_t entity_count = 0;                  ///< Distinct entities.
  std::vector<std::string> problems;        ///< What the reader found wrong (a cut file: its cut).
  /// A marker of the session's event log (platoon ctl mark, a seat key, a scenario's mark action).
  struct Marker {
    int64_t sim_ns = 0;   ///< Sim time of the marker, in ns.
    std::string text;     ///< Its text.
    std::string source;   ///< Who set it ("ctl", a node name, "event:<name>").
  };
  std::vector<Marker> markers;              ///< The markers the world states carried, each once, in log order (at most kMaxMarkers).
  static constexpr size_t kMaxMarkers = 100000;  ///< Markers kept; more are counted in problems.
  /// What the variable message signs showed: every variable sign's content from a world state's conditions,
  /// each time it differed from the one before (the first carried is the first), in log order.
  struct SignChange {
    int64_t sim_ns = 0;
    std::vector<world::VariableSignContent> contents;
  };
  std::vector<SignChange> sign_changes;      ///< At most kMaxSignChanges; more are counted in problems.
  static constexpr size_t kMaxSignChanges = 100000;
};

/// Collects world states (in recorded order) into a ReplayLog: states deduplicated by (entity, stamp)
/// and sorted by stamp, removals with the sim time of their world state.
class ReplayLogBuilder {
 public:
  void Add(const protocol::WorldState& world);
  ReplayLog Finish();

 private:
  ReplayLog log_;
  // Markers already taken: world states repeat an event for a second; a restarted server restarts sequences.
  std::set<std::tuple<uint64_t, int64_t, std::string>> markers_seen_;
  uint64_t markers_over_ = 0, sign_changes_over_ = 0;
  std::vector<world::VariableSignContent> last_signs_;  // the newest contents carried
};

/// Reads a session log's /platoon/session and /platoon/world channels. A file that cannot be read, or
/// that has no world states, gives a log with problems and no states.
ReplayLog LoadReplayLog(const std::string& path);
/// As above, calling `progress(bytes read, file bytes)` as it goes (a long log: a progress bar). Only the
/// chunks holding /platoon/session or /platoon/world are read (session_log::ReadStream), one at a time.
ReplayLog LoadReplayLog(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress);

/// The replay as a world system. Serves recorded states from `from_ns` to `to_ns` (sim time), and the
/// recorded session file in every Welcome (WorldCore::SetSessionFile), so that clients draw its road.
class ReplaySystem final : public WorldSystem {
 public:
  ReplaySystem(const ReplayLog& log, WorldCore& core, int64_t from_ns, int64_t to_ns);

  void OnAdvance(int64_t sim_ns, int64_t now_ns) override;
  void OnSessionEvent(const SessionEvent& event) override;

  /// Puts the world as recorded at `sim_ns` into the core: every entity alive then, at its newest
  /// state not after it (used at the start and after a seek).
  void Reset(int64_t sim_ns, int64_t now_ns);
  /// True once sim time reached the end (the session was stopped): the shell may exit.
  bool Ended() const { return ended_.load(); }
  /// States injected so far.
  uint64_t Injected() const { return injected_; }
  /// Sim time the replay has reached, in ns.
  int64_t ReachedNs() const { return reached_ns_; }

 private:
  const ReplayLog& log_;
  WorldCore& core_;
  int64_t from_ns_, to_ns_;
  size_t next_state_ = 0, next_removal_ = 0;
  int64_t reached_ns_ = INT64_MIN;
  bool pending_reset_ = true;
  int64_t reset_to_ns_ = 0;
  uint64_t injected_ = 0;
  std::atomic<bool> ended_{false};
};

}  // namespace platoon::server
