#pragma once
/// The scenario system: evaluates the session's [[event]] conditions on the merged world and carries
/// out their actions (docs/EXPERIMENTS.md, "Scenario events"). A WorldSystem at priority kStepper that
/// decides in OnAdvance(sim_ns): in lock-step just before step k is granted at t_k, so a firing and its
/// actions ride in grant k and happen at the same sim time in every run; in real time at every Poll, so a
/// firing follows the state that made its condition true within one step.
///
/// Every firing is logged (WorldCore::LogEvent) as kFired with the event's name and, in `detail`, the
/// values that fired it; then each action: kAction for a node to carry out (target_node, entity_id,
/// arguments in `detail`), kMessage for seats, kMarker, or a parameter set (WorldCore::RequestParamSet).

#include "platoon/config/scenario.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/server/world_core.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

namespace platoon::server {

/// One firing, as the system keeps it (the last kMaxFirings).
struct ScenarioFiring {
  std::string name;        ///< Event name.
  int64_t sim_time_ns = 0; ///< Sim time the condition became true, in ns.
  std::string detail;      ///< JSON object of the values that fired it.
};

/// Evaluates [[event]]s on the world core it is added to.
class ScenarioSystem final : public WorldSystem {
 public:
  /// Firings kept for Firings().
  static constexpr size_t kMaxFirings = 10000;
  /// Delayed firings waiting for their time at most; further ones are dropped with a warning.
  static constexpr size_t kMaxPending = 1024;
  /// Markers remembered between two evaluations at most.
  static constexpr size_t kMaxMarkers = 1024;
  /// A merged state older than this is not extrapolated further, in ns.
  static constexpr int64_t kMaxExtrapolationNs = 1'000'000'000;

  /// `core` must outlive the system; `roads` is the session road network (empty without [road]: road
  /// quantities are then never true).
  ScenarioSystem(WorldCore& core, std::vector<config::EventDef> events, road::RoadNetwork roads,
                 std::shared_ptr<spdlog::logger> log);
  /// The same, with the scenario parameters' starting values (name, value text).
  ScenarioSystem(WorldCore& core, std::vector<config::EventDef> events, road::RoadNetwork roads,
                 std::shared_ptr<spdlog::logger> log, const std::vector<std::pair<std::string, std::string>>& params);

  /// The session's traffic signs along `road` (road::SessionSigns on road::SessionRoad): what the sign
  /// quantities (sign_ahead_distance, ...) measure; without them those quantities are never true.
  void SetSigns(road::Road road, std::vector<road::Sign> signs);

  void OnAdvance(int64_t sim_ns, int64_t now_ns) override;
  void OnLoggedEvent(const protocol::LoggedEvent& event, int64_t now_ns) override;

  /// Firings so far, oldest first.
  const std::deque<ScenarioFiring>& Firings() const { return firings_; }

 private:
  struct Pending {
    size_t event = 0;
    int64_t due_sim_ns = 0;
    uint64_t subject = 0;  // the condition's entity (0: none)
    uint64_t ahead = 0;    // the vehicle ahead of it at firing (0: none)
  };
  struct State {
    bool was_true = false;
    bool fired = false;
    int64_t last_fired_ns = INT64_MIN;
    int count = 0;                          // firings so far
    int64_t start_ns = INT64_MAX;           // when its actions start (the last firing plus the delay)
    int64_t running_until_ns = INT64_MIN;   // its actions run until this sim time (after the firing and delay)
    bool started_pulse = false;             // fired at the last evaluation (the "started" state)
    std::vector<std::vector<uint8_t>> prev; // per condition of `any` (or [0][0] for `when`): last raw value
  };
  // What the system follows of each vehicle for traveled and standstill conditions.
  struct Track {
    Vec3 last_m = Vec3::Zero();
    double traveled_m = 0;
    int64_t still_since_ns = -1;            // -1: moving
    bool seen = false;
  };
  // One condition's raw value at `sim_ns` (the quantity, marker, state...), before its edge.
  bool EvaluateOne(const config::ConditionDef& c, size_t event, int64_t sim_ns, std::string& detail,
                   uint64_t& subject, uint64_t& ahead);
  // Follows every vehicle's traveled distance and standstill time up to `sim_ns`.
  void TrackVehicles(int64_t sim_ns);
  // The quantities data::ComputeMetrics does not give: distance, relative speed, traveled, standstill, acceleration.
  double ExtraQuantity(const config::ConditionDef& c, uint64_t subject, const protocol::EntityState& own, int64_t sim_ns);
  // Whether event `i`'s condition holds at `sim_ns`; fills the values that make it so.
  bool Evaluate(size_t i, int64_t sim_ns, std::string& detail, uint64_t& subject, uint64_t& ahead);
  void RunActions(const Pending& p, int64_t sim_ns, int64_t now_ns);
  // The merged state of `id` moved on to `sim_ns`; false when it is not in the world.
  bool StateAt(uint64_t id, int64_t sim_ns, protocol::EntityState& out) const;
  // The vehicle ahead of `id` in its lane at `sim_ns` (data::ComputeMetrics' leader), 0 when none.
  uint64_t LeaderOf(uint64_t id, int64_t sim_ns) const;
  uint32_t OwnerOf(uint64_t id, const std::string& ref) const;
  // The distance along the road from `from_m` to `to_m` in the direction of travel of from's lane, in m.
  double AlongRoad(const Vec3& from_m, const Vec3& to_m) const;
  uint32_t NodeIdByName(const std::string& name) const;
  // The readable name of entity `id` (EntityDisplayName over the session's and the joined nodes).
  std::string NameOf(uint64_t id) const;

  WorldCore& core_;
  std::vector<config::EventDef> events_;
  road::RoadNetwork roads_;
  std::optional<road::Road> sign_road_;
  std::vector<road::Sign> all_signs_;                      // every sign, variable ones as last set
  std::map<std::string, std::vector<road::Sign>> signs_;  // of all_signs_ by the types conditions ask ("" every sign)
  void FilterSigns();
  std::vector<world::VariableSignContent> sign_contents_;   // the variable signs' contents last applied
  std::shared_ptr<spdlog::logger> log_;
  std::vector<State> state_;
  std::vector<Pending> pending_;
  std::vector<protocol::LoggedEvent> markers_;  // markers logged since the last evaluation
  std::deque<ScenarioFiring> firings_;
  bool dropped_logged_ = false;
  std::unordered_map<uint64_t, Track> tracks_;
  std::map<std::string, std::string> params_;   // scenario parameters (scenario_param actions, kParameter conditions)
  int64_t tracked_ns_ = INT64_MIN;
 public:
  /// Sets a scenario parameter's starting value (an OpenSCENARIO ParameterDeclaration), as text.
  void SetScenarioParam(const std::string& name, const std::string& value) { params_[name] = value; }
  /// A scenario parameter's value as text ("" when unset).
  std::string ScenarioParam(const std::string& name) const {
    const auto it = params_.find(name);
    return it == params_.end() ? std::string() : it->second;
  }
};

/// Adds a ScenarioSystem (priority kStepper) to `core` when its session has [[event]]s, with the
/// session's road; returns it, or nullptr when there are no events. Throws config::ConfigError for a
/// bad [road] (ValidateSession has already checked it).
std::shared_ptr<ScenarioSystem> InstallScenario(WorldCore& core, std::shared_ptr<spdlog::logger> log);

}  // namespace platoon::server
