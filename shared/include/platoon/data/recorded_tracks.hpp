#pragma once
/// Per-vehicle data of a recording (`platoon export LOG.mcap --csv DIR`): every recorded entity's track
/// (its states as the world broadcasts carried them, and its removals), its state at any sim time, and
/// the rows of the data write (data::ComputeMetrics, the driver seat's columns) at sim times k / rate_hz.
/// Pure: handed the states, it reads no file and no clock. The reader of a log is
/// server::LoadReplayLog; docs/RECORDING.md, "Export to CSV", has the rules and equations.

#include "platoon/data/columns.hpp"
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/road/road_network.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace platoon::data {

/// How an entity's state at a row time is found from its recorded states.
enum class TrackMethod : uint8_t {
  /// Between the recorded states a (t_a <= t) and b (t_b > t): cubic Hermite position from both
  /// positions and velocities, slerped orientation, linearly blended velocity, acceleration and yaw rate
  /// (platoon::InterpolateKinematics), the controls of b. After the newest state, across a removal and
  /// across a jump (platoon::IsJump: a respawn), dead reckoning from a.
  kInterpolate,
  /// Dead reckoning from a with the kind's model (dr::ModelForKind: RVB for vehicles): the world as
  /// every receiver of the broadcasts extrapolated it, before display blending.
  kDeadReckon,
};

/// "interpolate" or "dead_reckon".
std::string_view TrackMethodName(TrackMethod m);
/// Parses a method name; nullopt for anything else.
std::optional<TrackMethod> TrackMethodFromName(std::string_view name);

/// The server removed an entity (a world state's removed_entities) at that world state's sim time.
struct TrackRemoval {
  uint64_t id = 0;     ///< Entity id.
  int64_t sim_ns = 0;  ///< Sim time of the world state that removed it, in ns.
};

/// One recorded entity.
struct Track {
  uint64_t id = 0;                             ///< Entity id.
  protocol::EntityKind kind = protocol::EntityKind::kUnknown;  ///< Kind of its newest state.
  uint32_t owner_node = 0;                     ///< Owner node id of its newest state.
  std::vector<protocol::EntityState> states;   ///< Recorded states, stamps strictly increasing.
  std::vector<int64_t> removed_ns;             ///< Sim times of its removals, increasing, in ns.
  /// Sim time it exists until, in ns: a removal after its newest state, else the end of the recording
  /// (the last world state; never before the newest stamp).
  int64_t end_ns = 0;
  /// Stamp of the first recorded state, in ns.
  int64_t FirstNs() const { return states.front().kinematics.stamp_ns; }
  /// Stamp of the newest recorded state, in ns.
  int64_t LastStateNs() const { return states.back().kinematics.stamp_ns; }
};

/// Every recorded entity's track, by id.
class RecordedTracks {
 public:
  /// Groups `states` (any order; e.g. server::ReplayLog::states, one per entity and stamp) by entity;
  /// a repeated (entity, stamp) keeps its first copy. `end_ns` is the sim time of the recording's last
  /// world state: an entity not removed after its newest state exists until then.
  RecordedTracks(std::vector<protocol::EntityState> states, std::span<const TrackRemoval> removals, int64_t end_ns);

  /// Every track, by id.
  const std::vector<Track>& Tracks() const { return tracks_; }
  /// Index of the track of entity `id`; nullopt when it was never recorded.
  std::optional<size_t> Find(uint64_t id) const;
  /// True when track `i` exists at `t_ns`: at or after its first state, not after its end, and not
  /// removed since its newest state at or before t_ns.
  bool ExistsAt(size_t i, int64_t t_ns) const;
  /// State of track `i` at `t_ns` by `method` (kinematics.stamp_ns = t_ns; exactly the recorded state
  /// at a recorded stamp), or nullopt when it does not exist then (ExistsAt).
  std::optional<protocol::EntityState> StateAt(size_t i, int64_t t_ns, TrackMethod method) const;

 private:
  std::vector<Track> tracks_;
};

/// Sim time of row k at `rate_hz` rows per second: k / rate_hz, in ns (exact when 1e9 / rate_hz is a
/// whole number of ns, else rounded to the nearest ns).
int64_t RowTimeNs(int64_t k, double rate_hz);
/// The first row index whose time is at or after `t_ns`.
int64_t FirstRowAtOrAfter(int64_t t_ns, double rate_hz);

/// Settings of an export.
struct ExportDef {
  double rate_hz = 100.0;                     ///< Rows per second of sim time, > 0. Typical 10-100.
  int64_t from_ns = INT64_MIN;                ///< No rows before this sim time, in ns.
  int64_t to_ns = INT64_MAX;                  ///< No rows after this sim time, in ns.
  TrackMethod method = TrackMethod::kInterpolate;  ///< How states between recorded ones are found.
  /// Leader range, standstill and closing thresholds; `leader = false` skips the leader search (no
  /// headway, time headway or TTC column wanted), as the driver seat does.
  MetricsDef metrics = DefaultMetricsDef();
  /// Threads that compute the rows of one row time (many entities); 0: one per hardware thread. The
  /// rows and their order do not depend on it.
  int threads = 0;
};

/// Default export: 100 Hz, the whole recording, interpolation, the data write's metric settings.
ExportDef DefaultExportDef();

/// Row-time span of a track under `def`: the first and last row index, from its first state (or
/// from_ns) to its end (or to_ns); nullopt when no row time falls in it.
std::optional<std::pair<int64_t, int64_t>> RowSpan(const Track& track, const ExportDef& def);

/// Computes the rows of the tracks `selected` (indices into tracks.Tracks()) at every row time
/// k / rate_hz in their spans where they exist: at each row time the state of every existing entity is
/// found once (`def.method`), and each selected one's row is data::ComputeMetrics(t, SampleOf(own),
/// every other existing vehicle, roads), exactly as the driver seat computes its rows. Calls
/// `on_row(track index, row)` on the calling thread, in time order, then selection order;
/// `progress(done, total)` after each row time (row times done and in all). Returns the number of rows.
uint64_t ExportRows(const RecordedTracks& tracks, std::span<const size_t> selected, const road::RoadNetwork& roads,
                    const ExportDef& def, const std::function<void(size_t, const MetricsRow&)>& on_row,
                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace platoon::data
