#pragma once
/// AI traffic on a road: lane-based vehicles with IDM car following and MOBIL lane changes, driving
/// on the right-hand lanes of a road that is treated as periodic in s (a vehicle leaving the end
/// re-enters at the start), or of an endless road, where vehicles are removed and spawned in zones
/// around the drivers instead (Recycle) and never wrap. Pure and deterministic: the caller owns time.

#include "platoon/geometry.hpp"
#include "platoon/road/endless_road.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/vehicle/driver_models.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
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
  bool lane_changes = true;          ///< Vehicles change lanes on their own (MOBIL); false: each keeps its lane (commanded changes still happen).
  /// The first vehicle (index 0) stays lead_gap_m ahead of the external vehicle with this id (a study's
  /// participant): a spring-damper on the gap error, within max_accel and comfort_decel, never closer to its
  /// own leader than IDM allows; scenario commands override it. 0: none.
  uint64_t lead_of_id = 0;
  double lead_gap_m = 40.0;          ///< Bumper-to-bumper distance it keeps ahead of that vehicle, in m. Typical 20..80.
  /// With lead_of_id: the first vehicle moves into that vehicle's lane once it has driven there for
  /// lead_lane_delay_s (one lane at a time, when the target lane has room), so it stays the vehicle ahead of it;
  /// false, or a fixed vehicle_lanes[0]: it keeps its own lane.
  bool lead_follows_lane = true;
  double lead_lane_delay_s = 2.0;    ///< How long the followed vehicle must be in another lane before the lead moves, in s.
  /// With lead_of_id and first_s_m < 0: at the first Step that sees that vehicle, the first vehicle is put
  /// lead_gap_m ahead of it in its lane at its speed (when that place is free), instead of closing in from
  /// wherever it was placed.
  bool lead_places_itself = true;
  /// Per vehicle index: a lane it starts in and never leaves on its own (MOBIL never moves it; a scenario's
  /// change_lane still does); 0 or beyond the list: placed as usual and free. Lanes are driving lanes.
  std::vector<int> vehicle_lanes;
  double vehicle_length_m = 4.5;     ///< Length of every vehicle, in m.
  double vehicle_width_m = 1.8;      ///< Width of every vehicle, in m.
  uint64_t seed = 1;                 ///< Random seed (desired speeds, initial placement).
  double start_offset_m = 0.0;       ///< Shifts the initial placement along the road, in m (several traffic nodes on one road).
  /// The first vehicle starts at first_s_m (the others keep their spacing behind and around it), in m;
  /// < 0: placed like the others. A lead car for a scenario.
  double first_s_m = -1.0;
  int first_lane = -1;               ///< The first vehicle's lane, when first_s_m >= 0 (a driving lane).
  double first_speed_mps = -1.0;     ///< The first vehicle's start and desired speed, in m/s; < 0: as the others.
  // Endless roads only (Recycle):
  double keep_behind_m = 400.0;      ///< A vehicle further than this behind the last driver is removed, in m of s.
  double keep_ahead_m = 1500.0;      ///< A vehicle further than this ahead of the foremost driver is removed, in m of s.
  double spawn_clear_m = 200.0;      ///< Spawns and removals happen at least this far (straight line) from every driver, in m.
  double spawn_gap_m = 50.0;         ///< A spawned vehicle has at least this much road to its neighbours in its lane, in m.
  /// Leaders and followers from an index of each lane sorted by s (O(log n) a query); false: a scan of
  /// every vehicle (O(n) a query), the same answers, kept as the baseline of tests and benchmarks.
  bool spatial_index = true;
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

/// A scenario command that overrides a vehicle's own driving (docs/EXPERIMENTS.md, "Scenario events").
struct CarCommand {
  enum class Kind : uint8_t {
    kBrake,    ///< Brake at decel_mps2 until until_s (infinity: until it stands), then drive on.
    kStop,     ///< Brake at decel_mps2 to a stop and stay there until Resume.
    kProfile,  ///< Follow `profile` (time since start_s -> speed), then drive on.
  };
  Kind kind = Kind::kBrake;
  double decel_mps2 = 0;          ///< Deceleration, in m/s^2 (positive).
  double start_s = 0;             ///< Traffic time the command began, in s.
  double until_s = 0;             ///< kBrake: traffic time it ends, in s.
  std::vector<std::pair<double, double>> profile;  ///< kProfile: (s since start, m/s), time ascending.
};

/// A vehicle this traffic does not drive (a human driver, another node's traffic) on one of its lanes.
struct ExternalCar {
  int lane = -1;            ///< Lane it occupies.
  double s_m = 0;           ///< Position along the road, in m.
  double speed_mps = 0;     ///< Speed along the lane, in m/s.
  uint64_t id = 0;          ///< Its entity id (0: not known).
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
  /// Places `def.vehicles` evenly over the window of an endless road (start_offset_m and first_s_m count
  /// from the window's start). Positions are never wrapped; Recycle keeps the traffic around the drivers.
  /// `road` must outlive the traffic.
  RoadTraffic(const road::EndlessRoad& road, const RoadTrafficDef& def);

  /// What one Recycle did.
  struct Recycled {
    std::vector<uint32_t> removed;  ///< Indices of the vehicles removed.
    std::vector<uint32_t> spawned;  ///< Indices of the vehicles spawned (new indices, never reused).
  };
  /// Endless roads only (nothing otherwise): removes vehicles more than keep_behind_m behind the last
  /// driver, more than keep_ahead_m ahead of the foremost one, or within 100 m of the window's end, and
  /// spawns vehicles (at most two a call) in the zones [front + spawn_clear_m, front + keep_ahead_m] and
  /// [rear - keep_behind_m, rear - spawn_clear_m] until there are def.vehicles; no removal or spawn within
  /// spawn_clear_m (straight line) of any driver. `drivers_m`: the drivers' world positions;
  /// `drivers_s_m`: their road s (same order). Without drivers only vehicles within 100 m of the window's
  /// end are removed, and spawns fill [start + spawn_clear_m, start + keep_ahead_m] of the window.
  Recycled Recycle(const std::vector<Vec3>& drivers_m, const std::vector<double>& drivers_s_m);
  /// Whether this traffic drives an endless road.
  bool Endless() const { return endless_ != nullptr; }

  /// Advances every vehicle by `dt_s` (typical 0.02-0.1 s).
  void Step(double dt_s);

  /// Vehicles the traffic must react to (followed, not cut off), as of now; replaces the previous set.
  void SetExternal(std::vector<ExternalCar> cars) {
    external_ = std::move(cars);
    index_dirty_ = true;
  }

  /// Where a world position lies on the driving lanes: (lane, s) when it is on one of them.
  std::optional<std::pair<int, double>> OnLane(const Vec3& position_m) const;
  /// The same for a position known to have been near road s `near_s_m` (a vehicle followed from step to
  /// step): Newton iterations on the foot point from `near_s_m` (a few evaluations of the road); where they
  /// do not converge on the carriageway, the sampled search of [near_s_m - window_m, near_s_m + window_m];
  /// the whole road when that window reaches an end of a periodic road or the foot point lies in the
  /// window's outer quarter. The foot point agrees with OnLane's to its precision (about 1e-6 m) wherever
  /// the road does not pass within the carriageway of itself. The foot point (s, |t|), for the next call,
  /// goes to `s_out`, `distance_out`.
  std::optional<std::pair<int, double>> OnLaneNear(const Vec3& position_m, double near_s_m, double window_m,
                                                   double* s_out, double* distance_out) const;
  /// OnLane with the foot point's s and distance (for a later OnLaneNear).
  std::optional<std::pair<int, double>> OnLane(const Vec3& position_m, double* s_out, double* distance_out) const;

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

  // --- Scenario commands (take effect at the next Step; false when no vehicle has `index`) ---
  /// Brakes vehicle `index` at `decel_mps2` for `duration_s` (0: until it stands), then it drives on.
  bool Brake(uint32_t index, double decel_mps2, double duration_s);
  /// Brakes vehicle `index` at `decel_mps2` to a stop; it stays there until Resume.
  bool Stop(uint32_t index, double decel_mps2);
  /// Vehicle `index` follows the speed profile (s since now, m/s; time ascending), then drives on.
  bool FollowProfile(uint32_t index, std::vector<std::pair<double, double>> points);
  /// Vehicle `index` drops its command and drives on (IDM, MOBIL).
  bool Resume(uint32_t index);
  /// Vehicle `index` changes to `lane` (a driving lane other than its own); false otherwise.
  bool ChangeLane(uint32_t index, int lane);
  /// How a commanded lateral motion moves between its ends (OpenSCENARIO's dynamics shapes).
  enum class Shape : uint8_t { kStep, kLinear, kSinusoidal, kCubic };
  /// Vehicle `index` changes to `lane` over `duration_s` (0: at the next step) along `shape`, ending
  /// `offset_m` (left positive) from that lane's centre; false when `lane` is no driving lane or its own.
  bool ChangeLane(uint32_t index, int lane, double duration_s, Shape shape, double offset_m);
  /// Vehicle `index` moves to `offset_m` (left positive) from its lane's centre over `duration_s` along `shape`.
  bool SetLaneOffset(uint32_t index, double offset_m, double duration_s, Shape shape);
  /// Vehicle `index` drives through the points (s, t) of the road (s increasing, t left positive from the
  /// reference line), linear between them in s, from where it is now; past the last point it keeps that point's
  /// offset in the lane the point lies in (an OpenSCENARIO polyline trajectory). Its speed is left as it is
  /// (FollowProfile times it). False when the points are not ahead of it in increasing s.
  bool FollowPath(uint32_t index, std::vector<std::pair<double, double>> points);
  /// Adds a vehicle at (s_m, lane) with `speed_mps` (also its desired speed; 0: the traffic's). Returns
  /// its index, or nullopt when the lane is no driving lane or the traffic has kMaxVehicles.
  std::optional<uint32_t> Spawn(double s_m, int lane, double speed_mps);
  /// Removes vehicle `index`.
  bool Remove(uint32_t index);
  /// The vehicle with `index`, or nullptr.
  const TrafficCar* Find(uint32_t index) const;
  /// The command vehicle `index` follows, or nullptr.
  const CarCommand* CommandOf(uint32_t index) const;
  /// The driving lanes, inner first.
  const std::vector<int>& Lanes() const { return lanes_; }
  /// Most vehicles of one traffic (spawns beyond it are refused).
  static constexpr size_t kMaxVehicles = 65535;

  // --- Live settings (parameters): take effect at the next Step ---
  /// Mean desired speed, in m/s; each vehicle keeps its own spread around it (capped by the limit).
  void SetDesiredSpeed(double mps);
  double DesiredSpeed() const { return def_.idm.desired_speed_mps; }
  /// Speed limit that caps every desired speed, in m/s (0: none). Starts at the road's.
  void SetSpeedLimit(double mps);
  double SpeedLimit() const { return speed_limit_mps_; }
  /// Traffic signs the vehicles obey (docs/WORLD.md "Signs"): from a speed-limit sign on (after passing it,
  /// as the limit holds from the sign) a vehicle faster than the limit brakes at no more than its comfortable
  /// deceleration (idm.comfort_decel_mps2) down to it, and after an end of limit it speeds up again to its own
  /// desired speed (capped by SetSpeedLimit's). The vehicles drive towards +s: only direction +1 signs count;
  /// on a periodic road the signs near the end hold on past the start. Replaces the previous signs.
  void SetSigns(std::vector<road::Sign> signs);
  /// The speed limit in force at `s_m` from the signs (SpeedLimitAt, with SetSpeedLimit's limit where no sign
  /// holds), in m/s; 0 none.
  double SignLimitAt(double s_m) const;
  /// The lead car's gap ahead of the vehicle it leads (lead_of_id), in m.
  void SetLeadGap(double m) { def_.lead_gap_m = m; }
  double LeadGap() const { return def_.lead_gap_m; }
  /// Whether the lead car holds its gap (true at start); false releases it to drive like the others.
  void SetLeadHold(bool hold) { lead_hold_ = hold; }
  bool LeadHold() const { return lead_hold_; }
  /// Whether the lead car has been put in front of the vehicle it leads (lead_places_itself).
  bool LeadPlaced() const { return lead_placed_; }
  /// IDM safe time headway T, in s.
  void SetTimeHeadway(double s) { def_.idm.time_headway_s = s; }
  double TimeHeadway() const { return def_.idm.time_headway_s; }

  /// The nearest vehicle ahead or behind in a lane.
  struct Neighbour {
    int car = -1;        ///< Index into Cars() (>= 0), an external car (<= -2: -2 - index), -1 none.
    double gap_m = 0;    ///< Bumper-to-bumper gap, in m.
  };
  /// The nearest vehicle at or ahead of `s_m` occupying `lane` (a vehicle changing lanes occupies both),
  /// other than `self` (a Neighbour::car value; -1: none); ties go to the lower car, cars before externals.
  Neighbour Leader(int lane, double s_m, int self) const;
  /// The nearest vehicle strictly behind `s_m` occupying `lane`, other than `self`; ties as Leader.
  Neighbour Follower(int lane, double s_m, int self) const;

 private:
  // The neighbour as a vehicle (an external one gets its own speed as desired speed).
  TrafficCar AsCar(int car) const;
  Neighbour LeaderScan(int lane, double s_m, int self) const;
  Neighbour FollowerScan(int lane, double s_m, int self) const;
  // The lane index: per driving lane (lanes_ order), the vehicles occupying it as (s, key) sorted, key = car
  // index, or cars_.size() + external index. Rebuilt lazily after any change (index_dirty_).
  struct Slot {
    double s_m;
    int key;
    bool operator<(const Slot& o) const { return s_m < o.s_m || (s_m == o.s_m && key < o.key); }
  };
  void BuildIndex() const;
  const std::vector<Slot>* LaneSlots(int lane) const;
  mutable std::vector<std::vector<Slot>> by_lane_;
  mutable bool index_dirty_ = true;
  bool Occupies(const TrafficCar& car, int lane) const;
  double Wrap(double ds) const;
  // The first vehicle's acceleration that keeps it lead_gap_m ahead of external vehicle lead_of_id; nullopt when
  // that vehicle is not on the road.
  std::optional<double> LeadKeepingAccel(const TrafficCar& car) const;
  double Ahead(double ds) const;  // distance ahead: wrapped on a periodic road, infinity when behind on an endless one
  void Place();
  // Lead car (lead_of_id): its placement in front of the led vehicle, and its move into that vehicle's lane.
  const ExternalCar* LedCar() const;
  void PlaceLead();
  void FollowLedLane(double dt_s);
  bool FixedLane(const TrafficCar& car) const;
  double Uniform(double lo, double hi);
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
  double time_s_ = 0;                        // traffic time: the sum of Step's dt, in s
  uint32_t next_index_ = 0;                  // index of the next spawned vehicle
  std::map<uint32_t, CarCommand> commands_;  // by vehicle index
  // A commanded lateral motion of one vehicle: a lane change with its own duration and shape, and an offset
  // from the lane centre that moves from one value to another.
  struct Lateral {
    double change_start_s = 0, change_duration_s = -1;  // < 0: the traffic's own lane change
    Shape change_shape = Shape::kCubic;
    double offset_from_m = 0, offset_to_m = 0, offset_start_s = 0, offset_duration_s = 0;
    Shape offset_shape = Shape::kCubic;
    std::vector<std::pair<double, double>> path;  // (s, t) points it follows now (FollowPath); empty: none
  };
  std::map<uint32_t, Lateral> lateral_;  // by vehicle index
  double OffsetNow(const Lateral& l) const;
  bool OnPath(uint32_t index) const;
  static double ShapeAt(Shape shape, double u);
  double CommandedAccel(TrafficCar& car, double idm_accel, double dt_s);
  double speed_limit_mps_ = 0;
  std::vector<road::Sign> signs_;  // direction +1 signs; on a periodic road also shifted by -length
  std::vector<double> spread_;  // per vehicle: its desired speed / the mean desired speed
  const road::EndlessRoad* endless_ = nullptr;  // set on an endless road (road_ is then its layout)
  std::mt19937_64 spawn_rng_;                   // endless spawns: position, lane, speed spread
  bool lead_hold_ = true;                       // the lead car holds its gap (live parameter)
  bool lead_placed_ = false;                    // PlaceLead has put it in front of the led vehicle
  double led_elsewhere_s_ = 0;                  // how long the led vehicle has been in another lane, in s
};

}  // namespace platoon::vehicle
