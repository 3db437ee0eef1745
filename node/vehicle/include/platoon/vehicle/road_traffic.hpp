#pragma once
/// AI traffic on a road: lane-based vehicles with IDM car following and MOBIL lane changes, driving
/// on the right-hand lanes of a road that is treated as periodic in s (a vehicle leaving the end
/// re-enters at the start). Pure and deterministic: the caller owns time.

#include "platoon/geometry.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/driver_models.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace platoon::vehicle {

/// Road traffic settings.
struct RoadTrafficDef {
  int vehicles = 50;                 ///< Number of AI vehicles.
  IdmDef idm = DefaultIdmDef();      ///< Car following; desired_speed_mps is the mean desired speed.
  MobilDef mobil = DefaultMobilDef();  ///< Lane changes.
  double desired_speed_spread = 0.15;  ///< Desired speeds spread uniformly by +- this fraction.
  double lane_change_time_s = 3.0;   ///< Duration of a lane change, in s.
  double lane_change_cooldown_s = 5.0;  ///< Minimum time between two lane changes of one vehicle, in s.
  double vehicle_length_m = 4.5;     ///< Length of every vehicle, in m.
  double vehicle_width_m = 1.8;      ///< Width of every vehicle, in m.
  uint64_t seed = 1;                 ///< Random seed (desired speeds, initial placement).
  double start_offset_m = 0.0;       ///< Shifts the initial placement along the road, in m (several traffic nodes on one road).
};
/// Default road traffic settings.
inline RoadTrafficDef DefaultRoadTrafficDef() { return RoadTrafficDef{}; }

/// One AI vehicle.
struct TrafficCar {
  uint32_t index = 0;            ///< Index in the traffic, stable for the session.
  int lane = -1;                 ///< Lane it is in (or leaving), road lane numbering (right lanes < 0).
  int target_lane = -1;          ///< Lane it is changing to (== lane when not changing).
  double lane_change_progress = 0;  ///< 0..1 through the current lane change.
  double s_m = 0;                ///< Position along the road, in m, in [0, length).
  double speed_mps = 0;          ///< Speed along the lane, in m/s.
  double accel_mps2 = 0;         ///< Last commanded acceleration, in m/s^2.
  double desired_speed_mps = 0;  ///< Own free-road speed, in m/s.
  double cooldown_s = 0;         ///< Time left before another lane change may start, in s.
  uint64_t lane_changes = 0;     ///< Lane changes completed.
};

/// A vehicle this traffic does not drive (a human driver, another node's traffic) on one of its lanes.
struct ExternalCar {
  int lane = -1;            ///< Lane it occupies.
  double s_m = 0;           ///< Position along the road, in m.
  double speed_mps = 0;     ///< Speed along the lane, in m/s.
};

/// What the collision check found.
struct TrafficCheck {
  int overlaps = 0;            ///< Pairs of vehicles whose footprints overlap in a lane.
  double min_gap_m = 1e9;      ///< Smallest bumper-to-bumper gap between neighbours in a lane, in m.
  double min_accel_mps2 = 0;   ///< Hardest braking commanded so far, in m/s^2.
};

/// The traffic on one road.
class RoadTraffic {
 public:
  /// Places `def.vehicles` evenly on the road's right-hand lanes. `road` must outlive the traffic.
  RoadTraffic(const road::Road& road, const RoadTrafficDef& def);

  /// Advances every vehicle by `dt_s` (typical 0.02-0.1 s).
  void Step(double dt_s);

  /// Vehicles the traffic must react to (followed, not cut off), as of now; replaces the previous set.
  void SetExternal(std::vector<ExternalCar> cars) { external_ = std::move(cars); }

  /// Where a world position lies on the driving lanes: (lane, s) when it is on one of them.
  std::optional<std::pair<int, double>> OnLane(const Vec3& position_m) const;

  /// The vehicles.
  const std::vector<TrafficCar>& Cars() const { return cars_; }
  /// World state of a vehicle (rear-axle origin approximated by the vehicle centre) at `stamp_ns`.
  KinematicState State(const TrafficCar& car, int64_t stamp_ns) const;
  /// Lateral offset of a vehicle from the reference line, in m, including lane-change progress.
  double LateralOffsetM(const TrafficCar& car) const;

  /// Looks for overlapping vehicles and records the smallest gap.
  TrafficCheck Check();

  /// Lane changes completed by all vehicles.
  uint64_t LaneChanges() const;

  // --- Live settings (parameters): take effect at the next Step ---
  /// Mean desired speed, in m/s; each vehicle keeps its own spread around it (capped by the limit).
  void SetDesiredSpeed(double mps);
  double DesiredSpeed() const { return def_.idm.desired_speed_mps; }
  /// Speed limit that caps every desired speed, in m/s (0: none). Starts at the road's.
  void SetSpeedLimit(double mps);
  double SpeedLimit() const { return speed_limit_mps_; }
  /// IDM safe time headway T, in s.
  void SetTimeHeadway(double s) { def_.idm.time_headway_s = s; }
  double TimeHeadway() const { return def_.idm.time_headway_s; }

 private:
  struct Neighbour {
    int car = -1;        // index into cars_ (>= 0), an external car (<= -2: -2 - index), -1 none
    double gap_m = 0;    // bumper-to-bumper gap
  };
  // The neighbour as a vehicle (an external one gets its own speed as desired speed).
  TrafficCar AsCar(int car) const;
  Neighbour Leader(int lane, double s_m, int self) const;
  Neighbour Follower(int lane, double s_m, int self) const;
  bool Occupies(const TrafficCar& car, int lane) const;
  double Wrap(double ds) const;
  double Accel(const TrafficCar& car, const Neighbour& leader) const;
  void ConsiderLaneChange(size_t i);
  void UpdateDesiredSpeeds();

  const road::Road& road_;
  RoadTrafficDef def_;
  double length_m_;
  std::vector<int> lanes_;  // driving lanes, right-hand traffic: -1 (inner) .. -n (outer)
  std::vector<TrafficCar> cars_;
  std::vector<ExternalCar> external_;
  double min_accel_ = 0;
  double speed_limit_mps_ = 0;
  std::vector<double> spread_;  // per vehicle: its desired speed / the mean desired speed
};

}  // namespace platoon::vehicle
