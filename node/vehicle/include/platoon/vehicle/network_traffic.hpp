#pragma once
/// AI traffic on a road network with junctions (an OpenDRIVE map): vehicles drive along the lane graph
/// (road::LaneGraph), choose their way at every fork with a seeded draw, follow the vehicle ahead with IDM
/// (along their own route, and any vehicle still leaving the lane they are on), slow down for curves to a
/// lateral acceleration limit, and enter a junction only when admitted:
///
/// - a vehicle asks to enter when it is within reach of the junction's stop line (its comfortable braking
///   distance plus approach_m); requests are served in the order they were first made (then by index);
/// - it is admitted when no vehicle is on, or admitted to, a connecting lane that crosses or merges with its
///   own (LaneGraph::Crosses with the vehicle width plus a margin), no earlier request waits for such a lane,
///   and the lane it leaves the junction on has room for it behind the vehicles already heading there;
/// - where its approach gives way (road::Yield: the junction's <priority> names its road low, or a give-way
///   sign), also no vehicle with priority asks for a crossing lane; at a stop sign it must first have stood at
///   the line. Requests that give way hold up nobody;
/// - until then it treats the stop line as a standing obstacle; a vehicle keeps its admission until it has
///   left the junction (its rear included).
///
/// Right-hand traffic only. Pure and deterministic: the caller owns time. docs/ROADS.md "Traffic through junctions".

#include "platoon/geometry.hpp"
#include "platoon/road/lane_graph.hpp"
#include "platoon/vehicle/driver_models.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace platoon::vehicle {

/// Network traffic settings.
struct NetworkTrafficDef {
  int vehicles = 30;                  ///< Number of AI vehicles.
  IdmDef idm = DefaultIdmDef();       ///< Car following; desired_speed_mps is the mean desired speed.
  double desired_speed_spread = 0.15; ///< Desired speeds spread uniformly by +- this fraction.
  double max_lateral_accel_mps2 = 2.0;  ///< Curve speed: v <= sqrt(this / |curvature|), in m/s^2.
  double max_decel_mps2 = 8.0;        ///< Hardest braking a vehicle is capable of, in m/s^2.
  double approach_m = 5.0;            ///< A vehicle asks to enter a junction this far beyond its braking distance, in m.
  double stop_line_gap_m = 1.0;       ///< Vehicles not admitted stop this far before the stop line, in m.
  double conflict_margin_m = 0.7;     ///< Connecting lanes whose centres come within width + this conflict, in m.
  double lookahead_m = 150.0;         ///< How far ahead along its route a vehicle looks (leaders, curves), in m.
  double vehicle_length_m = 4.5;      ///< Length of every vehicle, in m.
  double vehicle_width_m = 1.8;       ///< Width of every vehicle, in m.
  uint64_t seed = 1;                  ///< Random seed (desired speeds, route choices).
  double start_offset_m = 0.0;        ///< Shifts the initial placement along the lanes, in m.
};
inline NetworkTrafficDef DefaultNetworkTrafficDef() { return NetworkTrafficDef{}; }

/// One AI vehicle on the network.
struct NetworkCar {
  uint32_t index = 0;            ///< Index in the traffic, stable for the session.
  uint32_t piece = 0;            ///< Lane piece its front is on.
  double d_m = 0.0;              ///< Distance of its front from the piece's entry, in m.
  double speed_mps = 0.0;        ///< Speed along the lane, in m/s.
  double accel_mps2 = 0.0;       ///< Last commanded acceleration, in m/s^2.
  double desired_speed_mps = 0.0;  ///< Own free-road speed, in m/s.
  std::deque<uint32_t> route;    ///< Pieces it will drive after `piece`, chosen so far.
  int64_t behind = -1;           ///< The piece before `piece` while its rear is still on it, else -1.
  uint64_t choices = 0;          ///< Route choices drawn so far (the seed of the next).
  uint64_t junctions_crossed = 0;  ///< Connecting lanes driven to their end.
  double distance_m = 0.0;       ///< Distance driven, in m.
};

/// A vehicle this traffic does not drive (a human driver, another node's traffic), as last seen.
struct NetworkExternal {
  Vec3 position_m = Vec3::Zero();  ///< Centre of its box, in m.
  double heading_rad = 0.0;        ///< Heading, in rad.
  double speed_mps = 0.0;          ///< Speed, in m/s.
  double length_m = 4.5;           ///< Box length, in m.
  uint64_t id = 0;                 ///< Its entity id (0: not known).
};

/// What Check found since the start.
struct NetworkTrafficCheck {
  int overlaps = 0;                ///< Pairs of vehicles whose footprints overlapped (checked at each Check).
  double min_gap_m = 1e9;          ///< Smallest bumper-to-bumper gap to the leader seen by a vehicle, in m.
  double min_accel_mps2 = 0.0;     ///< Hardest braking commanded, in m/s^2.
  uint64_t forced_stops = 0;       ///< Vehicles that reached a stop line unadmitted and were held there.
  double max_wait_s = 0.0;         ///< Longest time a request waited for admission, in s.
  uint64_t stops = 0;              ///< Admissions at a stop sign, each after standing at its line.
  /// Admissions at an uncontrolled junction (no sign, no priority on any of its approaches) of a vehicle that
  /// first let one from its right go before it (right before left).
  uint64_t right_before_left = 0;
  /// Admissions at an uncontrolled junction of a vehicle that had one from its right asking for a crossing lane,
  /// after the junction stood empty for a second with every request held so (all arms waiting): the one that
  /// asked first went.
  uint64_t right_deadlocks = 0;
};

/// The traffic on a lane graph.
class NetworkTraffic {
 public:
  /// Places `def.vehicles` evenly on the pieces outside junctions; `graph` must outlive the traffic. Fewer fit
  /// when the lanes are short (Cars().size() tells).
  NetworkTraffic(const road::LaneGraph& graph, const NetworkTrafficDef& def);

  /// Advances every vehicle by `dt_s` (typical 0.01-0.1 s).
  void Step(double dt_s);
  /// The vehicles.
  const std::vector<NetworkCar>& Cars() const { return cars_; }
  /// World state of a vehicle's centre at `stamp_ns`.
  KinematicState State(const NetworkCar& car, int64_t stamp_ns) const;
  /// Looks for overlapping footprints now; returns the totals since the start.
  NetworkTrafficCheck Check();
  /// Traffic time: the sum of Step's dt, in s.
  double Time() const { return time_s_; }
  /// How often each connecting piece (junction movement) was driven to its end, by piece index.
  const std::map<uint32_t, uint64_t>& Movements() const { return movements_; }
  /// Whether vehicle `car` (an index into Cars()) is admitted to the junction ahead of it.
  bool Admitted(size_t car) const { return admitted_[car] >= 0; }
  /// Vehicles the traffic must react to, as of now; replaces the previous set. Each is put on the driving lane
  /// whose centre is nearest (within half a lane) among those running its way; there the vehicles behind it follow
  /// it, and no vehicle enters a connecting lane crossing one it is on, or one it may take within its braking
  /// distance + 15 m (the traffic yields to it).
  void SetExternal(std::vector<NetworkExternal> vehicles) { external_ = std::move(vehicles); }
  /// How many of the external vehicles were on a driving lane at the last Step.
  size_t ExternalOnLanes() const { return external_on_lanes_; }
  // --- Scenario commands (take effect at the next Step; false when no vehicle has `index`) ---
  /// Brakes vehicle `index` at `decel_mps2` for `duration_s` (0: until it stands), then it drives on.
  bool Brake(uint32_t index, double decel_mps2, double duration_s);
  /// Brakes vehicle `index` at `decel_mps2` to a stop; it stays there until Resume.
  bool Stop(uint32_t index, double decel_mps2);
  /// Vehicle `index` drops its command and drives on.
  bool Resume(uint32_t index);
  /// Removes vehicle `index` (its admission with it).
  bool Remove(uint32_t index);
  /// Adds a vehicle with its front `d_m` into piece `piece` (outside a junction) at `speed_mps`, driving `route`
  /// first (pieces that follow each other from `piece`; more are chosen after them). Returns its index, or
  /// nullopt when the piece or the route is not one.
  std::optional<uint32_t> AddCar(uint32_t piece, double d_m, double speed_mps, std::deque<uint32_t> route);
  /// Mean desired speed, in m/s (live).
  void SetDesiredSpeed(double mps);
  double DesiredSpeed() const { return def_.idm.desired_speed_mps; }

 private:
  struct Leader {
    double gap_m = 1e9;
    double speed_mps = 0.0;
    bool vehicle = false;  // a vehicle (else a stop line or a lane's end)
  };
  void ExtendRoute(NetworkCar& car);
  uint32_t Choose(NetworkCar& car, const std::vector<uint32_t>& options) const;
  Leader FindLeader(size_t i) const;
  double CurveLimit(uint32_t piece, double desired_mps) const;
  double Accel(size_t i);
  void Admit();
  bool RoomOnExit(size_t i, uint32_t junction_piece) const;
  double Rand01(uint64_t a, uint64_t b) const;
  // Speed of the vehicle behind a key of on_piece_: a car index, or cars_.size() + external index.
  double SpeedOf(uint32_t key) const;
  // Puts the external vehicles on the lanes (external_at_) and into on_piece_.
  void LocateExternal();

  const road::LaneGraph& graph_;
  NetworkTrafficDef def_;
  std::vector<NetworkCar> cars_;
  std::vector<double> spread_;  // per vehicle: desired speed / mean
  double time_s_ = 0.0;
  // Per piece: (d, car index) of the vehicles whose front is on it, sorted by d; rebuilt every step.
  std::vector<std::vector<std::pair<double, uint32_t>>> on_piece_;
  // Per piece: whether it lies inside a junction, and the junction pieces it crosses (conflicts).
  std::vector<std::vector<uint32_t>> conflicts_;
  // Per vehicle: the junction piece it is admitted to (-1: none), and when it first asked (< 0: not asking).
  std::vector<int64_t> admitted_;
  std::vector<double> asked_at_;
  std::vector<int64_t> wants_;  // the junction piece it asks for this step, -1 none
  std::vector<double> stop_at_;  // distance along its route to the stop line it must hold at, or infinity
  std::vector<char> stood_;      // it has stood at the stop line of a stop sign since it asked
  std::vector<char> yielded_right_;  // it let a vehicle from its right go at an uncontrolled junction since it asked
  std::vector<char> released_;       // it goes although one from its right asks: their junction stood empty
  std::map<int, double> stalled_since_;  // junction -> since when it stood empty with requests held for the right
  static constexpr double kRightStallS = 1.0;
  std::vector<double> end_heading_;  // per piece: direction of travel at its end, in rad
  // Per junction id: no approach into it has a sign or a lower priority (right before left holds there).
  std::map<int, bool> uncontrolled_;
  std::map<uint32_t, uint64_t> movements_;
  struct Command {
    bool stop = false;            // stop and stay (else brake)
    double decel_mps2 = 0.0;
    double until_s = 0.0;         // brake: traffic time it ends (infinity: when it stands)
  };
  std::map<uint32_t, Command> commands_;  // by vehicle index
  int64_t Position(uint32_t index) const;  // position of vehicle `index` in cars_, or -1
  std::vector<NetworkExternal> external_;
  struct ExternalAt {
    int64_t piece = -1;  // -1: on no driving lane
    double d_m = 0.0;    // its front's distance from the piece's entry
  };
  std::vector<ExternalAt> external_at_;
  size_t external_on_lanes_ = 0;
  NetworkTrafficCheck check_;
};

}  // namespace platoon::vehicle
