#pragma once
/// Route traffic and pedestrians (traffic_model = "route" and "pedestrians"; docs/VEHICLES.md, "Route
/// traffic" and "Pedestrians"), and the controller layer as a session configures it.
///
/// Route traffic: single-track vehicles (platoon::vehicle) that follow one path, a polyline of waypoints
/// or a lane of the session road, steered by pure pursuit on the rear axle, with the Intelligent Driver
/// Model along the path for speed (the vehicle ahead on the route, and a stop at an open route's end),
/// through the controller layer ([node.controller]). Deterministic: a function of the session file and
/// the module's steps. With vehicle_model = "fmu" each vehicle is its own instance of the node's FMU
/// (vehicle::FmuVehicle), stepped at the module's step with the same commands; a vehicle whose FMU step
/// fails is held where it stands (speed 0) and the others go on.
///
/// Pedestrians: people walking polylines at a constant speed, a pure function of sim time (like the
/// stadium traffic), published as EntityKind::kPedestrian.

#include "platoon/config/session.hpp"
#include "platoon/geometry.hpp"
#include "platoon/node/module.hpp"
#include "platoon/vehicle/controller.hpp"
#include "platoon/vehicle/driver_models.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace platoon::vehicle {
class FmuVehicle;
}

namespace platoon::node {

/// The controller layer a [node.controller] table asks for: the speed limiter first (when
/// speed_limit_mps > 0), then the ABS (when abs). Empty (the identity) when neither is on.
vehicle::VehicleController MakeController(const config::ControllerDef& def);

/// The vehicle definition of a driver or route vehicle: the default car with the node's tyre_mu.
vehicle::VehicleDef NodeVehicleDef(const config::NodeDef& node);

/// A path on the ground: a polyline parametrised by arc length s, open or closed; heights are
/// interpolated, distances and projections use x, y only.
class Polyline {
 public:
  /// At least two points, consecutive ones distinct; `loop` joins the last to the first.
  Polyline(std::vector<Vec3> points_m, bool loop);
  /// Total length, in m (with the closing segment when closed).
  double Length() const { return cumulative_.back(); }
  bool Loop() const { return loop_; }
  /// Point at arc length `s_m`: wrapped when closed, clamped to [0, Length()] when open.
  Vec3 PointAt(double s_m) const;
  /// Direction of travel (unit vector) at `s_m`.
  Vec3 DirectionAt(double s_m) const;
  /// The nearest point of the path to `p_m` (x, y only): its arc length and the signed distance of `p_m`
  /// from it, left of the direction of travel positive, in m.
  struct Projection {
    double s_m = 0;
    double lateral_m = 0;
  };
  Projection Project(const Vec3& p_m) const;
  /// The same, searching only the segments within `window_m` of arc length around `hint_s_m` (wrapped on
  /// a closed path): cheap on long paths, and never jumps to another part of a path that comes back near
  /// itself.
  Projection ProjectNear(const Vec3& p_m, double hint_s_m, double window_m) const;
  /// `s_m` mapped into [0, Length()) when closed; clamped when open.
  double Wrap(double s_m) const;

 private:
  size_t Segment(double s_m) const;
  // The nearest point over segments [first, last] (indices into points_, last < points_.size() - 1).
  void Nearest(const Vec3& p_m, size_t first, size_t last, Projection& best, double& best_d2) const;
  std::vector<Vec3> points_;       // with the first repeated at the end when closed
  std::vector<double> cumulative_;  // arc length at each point
  bool loop_;
};

/// The path a route node's vehicles follow: its waypoints, or the centre line of its lane on the session
/// road from from_s_m to to_s_m (sampled every 2 m). Throws config::ConfigError as ValidateSession does.
Polyline RoutePath(const config::SessionDef& session, const config::NodeDef& node);

/// traffic_model = "route": the node's vehicles on their path.
class RouteTrafficModule final : public Module {
 public:
  /// Places the vehicles; with vehicle_model = "fmu" opens one FMU instance per vehicle (instance name
  /// "<node>[i]"), its log and a failed step's message going to `log` (may be null). Throws
  /// config::ConfigError "FILE:LINE: node[i].fmu: <what the FMU lacks>" as platoon check reports it.
  RouteTrafficModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log = nullptr);
  ~RouteTrafficModule() override;
  std::string Name() const override { return "route"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// speed_mps (live: the IDM's desired speed) and vehicles (fixed).
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  /// route_vehicles, route_steps, the largest lateral error after the first 5 s, the controller's names;
  /// with vehicle_model = "fmu" also route_fmu_failed_vehicles, route_fmu_held_steps and route_fmu_error.
  void Summarize(std::vector<std::string>& fields) const override;

  /// The path.
  const Polyline& Path() const { return path_; }
  /// Vehicle `i`'s single-track state (CG).
  const vehicle::VehicleState& State(size_t i) const { return cars_.at(i).state; }
  size_t Vehicles() const { return cars_.size(); }
  /// Largest |lateral offset| of a rear axle from the path seen after the first 5 s of steps, in m.
  double MaxLateralErrorM() const { return max_lateral_m_; }
  /// Whether the vehicles run FMU instances (vehicle_model = "fmu").
  bool UsesFmu() const { return !cars_.empty() && cars_.front().fmu != nullptr; }
  /// Whether vehicle `i`'s FMU has failed a step (it is then held); false without an FMU.
  bool FmuFailed(size_t i) const;
  /// Module steps in which some vehicle was held by a failed FMU, summed over the vehicles.
  uint64_t FmuHeldSteps() const { return fmu_held_steps_; }

 private:
  struct Car {
    vehicle::VehicleState state;
    vehicle::VehicleInput input;  // the command applied last (after the controller)
    double s_m = 0;               // rear axle's arc length along the path (unwrapped on a closed route)
    std::unique_ptr<vehicle::FmuVehicle> fmu;  // vehicle_model = "fmu": this vehicle's instance
  };
  vehicle::VehicleState StepFmu(size_t i, double dt_s);
  protocol::EntityState Truth(size_t i, int64_t sim_ns) const;

  std::string name_;
  double rate_hz_;
  double speed_mps_;
  Polyline path_;
  config::RouteDef route_;
  vehicle::VehicleDef def_;
  vehicle::VehicleController controller_;
  vehicle::IdmDef idm_ = vehicle::DefaultIdmDef();
  std::vector<Car> cars_;
  uint64_t steps_ = 0;
  int64_t first_ns_ = -1;
  double max_lateral_m_ = 0;
  std::shared_ptr<spdlog::logger> log_;
  double fmu_step_s_ = 0;         // the FMU's communication step: the module's step, in s
  uint64_t fmu_held_steps_ = 0;
};

/// Pedestrian `index` of a pedestrians node at `sim_ns`: on its path at start_offset_m + speed t
/// (wrapped when closed; to the end and back when open, or standing at the end when it does not turn
/// back), facing where it walks.
protocol::EntityState PedestrianTruth(const config::NodeDef& node, uint32_t index, int64_t sim_ns);

/// A speed profile as the scenario actions send it: (time since its start in s, speed in m/s) pairs,
/// times increasing, linear between them, the last speed held after the last point (and the first before
/// the first). Speed and distance covered `tau_s` after its start.
double ProfileSpeed(const std::vector<std::pair<double, double>>& points, double tau_s);
double ProfileDistance(const std::vector<std::pair<double, double>>& points, double tau_s);

/// traffic_model = "pedestrians": every [[node.pedestrian]] of the node. Scenario actions take a walker
/// over from its constant speed: speed_profile (its distance along the path from then on is the
/// profile's integral, exact at any step), stop (to a standstill at decel_mps2), resume (its own speed
/// again at once) and remove (no longer published).
class PedestrianModule final : public Module {
 public:
  explicit PedestrianModule(const config::NodeDef& node);
  std::string Name() const override { return "pedestrians"; }
  double RateHz() const override { return node_.module_rate_hz; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  void OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) override;
  void Summarize(std::vector<std::string>& fields) const override;
  /// Walker `index` at `sim_ns` as the actions so far have it (PedestrianTruth until the first); nullopt
  /// once removed.
  std::optional<protocol::EntityState> Truth(uint32_t index, int64_t sim_ns) const;

 private:
  struct Walk {
    bool driven = false;   // an action took it over at anchor_ns
    bool removed = false;
    int64_t anchor_ns = 0;
    double anchor_m = 0;   // distance along the path (before folding) at anchor_ns
    std::vector<std::pair<double, double>> profile;
  };
  // Distance along the path (unfolded) and speed of walker `index` at `sim_ns`.
  std::pair<double, double> Along(uint32_t index, int64_t sim_ns) const;
  config::NodeDef node_;
  std::vector<Polyline> paths_;
  std::vector<Walk> walks_;
  uint64_t steps_ = 0, actions_done_ = 0, actions_refused_ = 0;
};

}  // namespace platoon::node
