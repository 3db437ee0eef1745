#pragma once
/// A diagnostic record of what a node knows and what it shows: the truth of every entity it owns, as its
/// modules publish it, and every remote entity as it displays it. Two nodes' logs of one session give
/// the error of one node's view against the owner's truth for any traffic model, where ViewMonitor can
/// only compute truth for models every node can evaluate (traffic_bench --session uses it for road
/// traffic). platoon-node --pose-log.
///
/// CSV, one row per sample: `source,sim_ns,id,x_m,y_m,z_m,yaw_rad`, where source is `own` (a truth, stamped
/// at the step that computed it), `view` (a remote entity's displayed pose at this node's sim time: dead
/// reckoned and blended, what it draws and what its sensors see) or `estimate` (the same instant, the newest
/// state received dead-reckoned without the blend that hides corrections). Stale entities are left out. Only entities whose index (id & 0xffff) is a multiple of `every` are
/// written. A write error is logged once, naming the path, and ends the log, never the node.

#include "platoon/node/module.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace platoon::node {

/// The log file. Not thread-safe: own and view rows both come from the module thread.
class PoseLog {
 public:
  /// Opens (truncates) `path`; throws std::runtime_error naming it when it cannot.
  PoseLog(const std::string& path, uint32_t every, std::shared_ptr<spdlog::logger> logger);
  ~PoseLog();
  PoseLog(const PoseLog&) = delete;
  PoseLog& operator=(const PoseLog&) = delete;

  /// The truth of an owned entity, as published.
  void Own(const protocol::EntityState& truth);
  /// A remote entity as displayed at `sim_ns` (a `view` row and an `estimate` row).
  void View(int64_t sim_ns, const RemoteEntity& entity);
  /// Rows written so far.
  uint64_t Rows() const { return rows_; }

 private:
  bool Sampled(uint64_t id) const { return (id & 0xffffu) % every_ == 0; }
  void Row(const char* source, int64_t sim_ns, uint64_t id, const Pose& pose);

  std::string path_;
  uint32_t every_;
  std::shared_ptr<spdlog::logger> log_;
  std::FILE* file_ = nullptr;
  uint64_t rows_ = 0;
};

/// Writes the remote entities' displayed poses to a PoseLog at `rate_hz`.
class PoseLogModule final : public Module {
 public:
  PoseLogModule(std::shared_ptr<PoseLog> log, double rate_hz) : log_(std::move(log)), rate_hz_(rate_hz) {}
  std::string Name() const override { return "pose-log"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;

 private:
  std::shared_ptr<PoseLog> log_;
  double rate_hz_;
};

/// One row of a pose log.
struct PoseRow {
  enum class Source { kOwn, kView, kEstimate };
  Source source = Source::kOwn;
  int64_t sim_ns = 0;
  uint64_t id = 0;
  Vec3 position_m = Vec3::Zero();
  double yaw_rad = 0;
};

/// Reads a pose log; throws std::runtime_error naming `path:line` and what was expected at the first bad row.
std::vector<PoseRow> ReadPoseLog(const std::string& path);

/// One viewer's errors against the owners' truth.
struct ViewErrors {
  std::vector<double> errors_m;  ///< |displayed - truth| per view row judged, in m.
  std::vector<size_t> rows;      ///< The index in `viewer` of each judged row (errors_m's order).
  size_t unmatched = 0;          ///< View rows without owner truth on both sides within `max_gap_ns`.
  size_t after_jump = 0;         ///< View rows within `jump_window_ns` after the owner moved an entity faster
                                 ///< than kJumpSpeedMps (a teleport: a finite road's end to its start).
  /// How rough the display is: for every three consecutive judged rows of an entity, each at most
  /// `max_spacing_ns` after the one before, |acceleration shown - the truth's| over those instants (second
  /// divided differences), in m/s^2. A correction shown at once is a spike; a blend spreads it.
  std::vector<double> roughness_mps2;
};

/// Faster than this between two of an owner's rows is a teleport, not motion, in m/s.
inline constexpr double kJumpSpeedMps = 200.0;

/// Judges every row of `viewer` from `source` (view or estimate) at or after `from_sim_ns` against the
/// `own` rows of `owners`: the truth at the row's sim time is interpolated linearly between the owner's two
/// rows around it, which must be at most `max_gap_ns` apart (a step or two of the owner). Rows from a
/// teleport of the entity to `jump_window_ns` after it are counted apart (`after_jump`), not judged: every
/// viewer shows the old place until the news arrives, which is latency, not dead reckoning.
ViewErrors CompareViews(const std::vector<PoseRow>& owners, const std::vector<PoseRow>& viewer, int64_t from_sim_ns,
                        int64_t max_gap_ns, PoseRow::Source source = PoseRow::Source::kView,
                        int64_t jump_window_ns = 500'000'000, int64_t max_spacing_ns = 100'000'000);

}  // namespace platoon::node
