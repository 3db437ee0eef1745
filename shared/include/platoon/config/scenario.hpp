#pragma once
/// Scenario events and triggers ([[event]] in a session file; docs/EXPERIMENTS.md, "Scenario events").
/// An event has one condition (`when`: a sim time, a marker, a key on a seat, or a quantity of a vehicle
/// or of a pair of vehicles crossing a threshold) and a list of actions (`do`: set a parameter, make a
/// traffic vehicle brake, stop, change lane, follow a speed profile or resume, spawn or remove a vehicle,
/// show a message in seat windows, log a marker). It fires once, or again at every rising edge of its
/// condition (repeat = true), after an optional delay. The server's ScenarioSystem evaluates it.

#include "platoon/config/table.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace platoon::config {

struct SessionDef;

/// Most [[event]] tables in one session.
inline constexpr size_t kMaxEvents = 256;
/// Most actions of one event.
inline constexpr size_t kMaxActionsPerEvent = 32;
/// Most points of one speed profile.
inline constexpr size_t kMaxProfilePoints = 1000;

/// Key names a seat window sends (one marker "key:<name>" per press) and a `key` condition accepts: SDL's
/// key names in lower case, "space", "return", "a".."z", "0".."9", "f1".."f12" (docs/EXPERIMENTS.md,
/// "Scenario events").
const std::vector<std::string>& SeatKeyNames();
/// True when `name` is one of SeatKeyNames() ("space", "b", "f5").
bool IsSeatKeyName(std::string_view name);
/// The marker text a seat logs for a press of key `name`: "key:<name>".
std::string SeatKeyMarker(std::string_view name);

/// What a quantity condition measures of its entity (data::ComputeMetrics, so the numbers are the
/// ones a data write records).
enum class Quantity : uint8_t {
  kSpeed,        ///< Horizontal speed, m/s.
  kRegion,       ///< Inside a box or circle of the ground plane (1 inside, 0 outside).
  kGap,          ///< Bumper-to-bumper distance to the vehicle ahead in the same lane, m.
  kTimeHeadway,  ///< Gap / own speed, s.
  kTtc,          ///< Time to collision with the vehicle ahead while closing, s.
  kLane,         ///< Signed lane index (-1 first right of the reference line).
  kLaneOffset,   ///< Offset from the lane centre, left positive, m.
  kDistance,     ///< Distance to `other` (cartesian, longitudinal or lateral; centres or freespace), m.
  kRelativeSpeed,  ///< Own speed minus the speed of `other`, m/s.
  kTraveled,     ///< Distance driven since the session started, m.
  kStandstill,   ///< Time it has stood still (speed < 0.01 m/s) without a break, s.
  kAcceleration, ///< Longitudinal acceleration, m/s^2.
  kSignAheadDistance,  ///< Along-road distance to the next sign ahead for its direction (of `sign` type when set), m.
  kSignAheadValue,     ///< That sign's value (a speed limit in the country's unit, km of a direction sign).
  kSignPassedDistance, ///< Along-road distance back to the last sign passed (of `sign` type when set), m.
  kSignPassedValue,    ///< That sign's value.
};
/// Config name of a quantity ("time_headway").
const char* QuantityName(Quantity q);

/// When an event fires (`when = { ... }`).
struct ConditionDef {
  enum class Kind : uint8_t {
    kSimTime,   ///< Sim time reaches sim_time_s.
    kMarker,    ///< A marker with this exact text is logged (platoon ctl mark, an action, a seat key).
    kKey,       ///< A key is pressed on a seat (the seat logs the marker "key:<name>").
    kQuantity,  ///< A quantity of `entity` (and `other`) crosses a threshold.
    kEventState,  ///< Another event (text) is in `state`: "started" (fired), "running" or "done".
    kParameter,   ///< A scenario parameter (text) compares with below/above/equals (or equals_text).
  };
  /// How the condition's own value becomes the value the event sees (OpenSCENARIO conditionEdge).
  enum class Edge : uint8_t {
    kNone,             ///< The value itself (the default).
    kRising,           ///< True only at the evaluation where the value turns true.
    kFalling,          ///< True only at the evaluation where the value turns false.
    kRisingOrFalling,  ///< True at either change.
  };
  Kind kind = Kind::kSimTime;
  double sim_time_s = 0;          ///< kSimTime: sim time, in s.
  std::string text;               ///< kMarker: the marker text; kKey: the key name ("space", "b").
  std::string seat;               ///< kKey: only this seat node ("" any).
  std::string entity;             ///< kQuantity: "<node>" (its first vehicle), "<node>:<index>", or "id:<n>".
  std::string other;              ///< kQuantity, pair quantities: only this vehicle counts as the one ahead ("" any).
  Quantity quantity = Quantity::kSpeed;
  std::optional<double> below;    ///< True while the value is < below (units of the quantity).
  std::optional<double> above;    ///< True while the value is > above.
  std::optional<int> lane;        ///< kLane: true while the lane equals this.
  // kRegion: a box [x_min, y_min, x_max, y_max] or a circle (centre, radius), in m (world frame).
  bool circle = false;
  double box_m[4] = {0, 0, 0, 0};
  double center_m[2] = {0, 0};
  double radius_m = 0;
  std::optional<double> equals;   ///< kQuantity (not lane), kParameter: true while |value - equals| <= 1e-9.
  std::string equals_text;        ///< kParameter: true while the parameter's text equals this ("" unused).
  std::string state;              ///< kEventState: "started", "running" or "done".
  std::string measure = "cartesian";  ///< kDistance: "cartesian", "longitudinal" (along the road) or "lateral".
  bool freespace = false;         ///< kDistance: between bounding boxes (true) or reference points (false).
  std::string sign;               ///< kSign*: only a sign of this type counts ("" any; road::SignTypeName's names).
  Edge edge = Edge::kNone;        ///< Value, rising, falling or either edge of it.
  bool negate = false;            ///< The opposite of the value (after the edge).
};
/// Config name of an edge ("rising").
const char* EdgeName(ConditionDef::Edge e);

/// One action of an event (`do = [ { action = "...", ... } ]`).
struct ActionDef {
  enum class Kind : uint8_t {
    kSetParam,      ///< Set a parameter (path, value).
    kBrake,         ///< A traffic vehicle brakes at decel_mps2 for duration_s (0: to a stop), then drives on.
    kStop,          ///< A traffic vehicle brakes at decel_mps2 to a stop and stays there (until "resume").
    kChangeLane,    ///< A traffic vehicle changes to `lane` (or one lane "left"/"right").
    kSpeedProfile,  ///< A traffic vehicle follows profile (time since firing -> speed), then drives on.
    kResume,        ///< A traffic vehicle drops its scenario command and drives on (IDM, MOBIL).
    kSpawn,         ///< A traffic node adds a vehicle at (s_m, lane) with speed_mps.
    kRemove,        ///< A traffic vehicle leaves the session.
    kMessage,       ///< Seat windows show `text` for duration_s.
    kMark,          ///< Logs the marker `text`.
    kSpeed,         ///< A traffic vehicle changes speed to a target with a shape (step, linear, sinusoidal, cubic).
    kLaneOffset,    ///< A traffic vehicle moves to offset_m from its lane centre with a shape over duration_s.
    kScenarioParam, ///< Sets (op "set"), adds to ("add") or multiplies ("multiply") a scenario parameter.
    /// A traffic vehicle reaches `point` when `master` reaches `master_point` (at `speed_mps` when final_speed):
    /// the server turns it into a speed profile at the firing, from both vehicles' distances along the road and
    /// the master's speed then (an OpenSCENARIO SynchronizeAction).
    kSynchronize,
    /// A traffic vehicle drives through the world points `path` (x0, y0, x1, y1, ...) as offsets across the
    /// road; with `times_s`, it passes point k at times_s[k] after the firing (an OpenSCENARIO
    /// FollowTrajectoryAction on a polyline).
    kFollowPath,
  };
  Kind kind = Kind::kMark;
  std::string name;               ///< Config name ("brake").
  /// Vehicle the action acts on: "ahead" (the vehicle ahead of the condition's entity at firing), "self"
  /// (the condition's entity), "<node>", "<node>:<index>" or "id:<n>".
  std::string target;
  std::string node;               ///< kSpawn: the traffic node that drives the new vehicle; kMessage: the seat ("" every seat).
  double decel_mps2 = 6.0;        ///< kBrake, kStop: deceleration, in m/s^2 (positive).
  double duration_s = 0;          ///< kBrake: braking time, in s (0: until stopped); kMessage: display time (default 4 s).
  int lane = 0;                   ///< kChangeLane: the target lane (0: by direction); kSpawn: the lane.
  int direction = 0;              ///< kChangeLane: +1 one lane left, -1 one lane right.
  std::vector<std::pair<double, double>> profile;  ///< kSpeedProfile: (t_s since firing, speed_mps), t ascending.
  double s_m = 0;                 ///< kSpawn: position along the road, in m.
  double speed_mps = 0;           ///< kSpawn: initial and desired speed, in m/s.
  std::string path;               ///< kSetParam: parameter path ("server.broadcast_hz", "node.<name>.<key>").
  std::string value;              ///< kSetParam: the value as TOML literal text ("30", "true", "\"x\"").
  std::string text;               ///< kMessage, kMark: the text.
  /// kSpeed, kChangeLane, kLaneOffset: the transition's shape: "step", "linear", "sinusoidal" or "cubic".
  std::string shape = "cubic";
  /// kSpeed: what `value` is: "time" (s), "rate" (m/s^2) or "distance" (m) of the transition.
  std::string dimension = "time";
  double amount = 0;              ///< kSpeed: duration (s), rate (m/s^2) or distance (m), 0 with "step"; kScenarioParam add/multiply: the operand.
  /// kSpeed: speed_mps is absolute (""), or relative to this vehicle's speed at the firing ("self", an entity):
  /// target = its speed + delta_mps (or * factor when `factor`).
  std::string relative_to;
  double delta_mps = 0;           ///< kSpeed relative: added to (or, with factor, multiplying) the reference speed.
  bool factor = false;            ///< kSpeed relative: delta_mps is a factor.
  double offset_m = 0;            ///< kLaneOffset: target offset from the lane centre, left positive, in m; kChangeLane: in the target lane.
  std::string op = "set";         ///< kScenarioParam: "set", "add" or "multiply".
  std::string master;             ///< kSynchronize: the vehicle the target keeps pace with.
  std::vector<double> point;      ///< kSynchronize: the target's point (x, y), in m.
  std::vector<double> master_point;  ///< kSynchronize: the master's point (x, y), in m.
  bool final_speed = false;       ///< kSynchronize: speed_mps is the target's speed on arrival.
  std::vector<double> path_xy;    ///< kFollowPath: world points x0, y0, x1, y1, ... in m.
  std::vector<double> times_s;    ///< kFollowPath: the time of each point since the firing, in s (empty: none).
  bool absolute_times = false;    ///< kFollowPath: times_s are sim times, not times since the firing.
  std::string where;              ///< "file:line: event[i].do[j]", for later messages.
};

/// One scenario event ([[event]]).
struct EventDef {
  std::string name;               ///< Unique name; logged with every firing ("event:<name>").
  ConditionDef when;
  double delay_s = 0;             ///< Actions run this long after the condition became true, in s.
  bool repeat = false;            ///< Fire again at every rising edge of the condition.
  double min_interval_s = 0;      ///< repeat: at least this long between two firings, in s.
  std::vector<ActionDef> actions;
  std::string where;              ///< "file:line: event[i]".
  /// OR of AND groups of conditions (`any = [ { all = [ {...}, {...} ] }, ... ]`); when not empty it replaces
  /// `when`: the event's condition holds while every condition of one group holds.
  std::vector<std::vector<ConditionDef>> any;
  /// With repeat: fire at most this many times (0: no limit).
  int max_count = 0;
  /// Events of one group (an OpenSCENARIO maneuver) and what a firing does to the others of its group that
  /// are running: "parallel" (nothing), "overwrite" (they end now), "skip" (this one does not fire).
  std::string group;
  std::string priority = "parallel";
};

/// How long an action runs after it starts, in s: a speed change's or lane change's duration, 0 for
/// instantaneous ones; `from_speed_mps` is the vehicle's speed at the start (for rate and distance dimensions).
double ActionDuration(const ActionDef& a, double from_speed_mps, double target_speed_mps);

/// The speed profile a kSpeed action makes from `from_speed_mps` to `target_speed_mps`: (s since the
/// start, m/s) points, linear between them (sinusoidal and cubic shapes sampled at 20 Hz), ending with a
/// point far in the future so the target is held. Linear with rate a reaches the target at |dv| / a.
std::vector<std::pair<double, double>> SpeedProfilePoints(const ActionDef& a, double from_speed_mps,
                                                          double target_speed_mps);

/// The speed profile that takes a vehicle at `from_speed_mps` through the distances `s_m[k]` (along the road
/// from where it is at time 0) at the times `t_s[k]` (s, increasing, > 0): within each piece the speed ramps
/// linearly from the last piece's over min(0.5 s, a half of the piece), then holds, with the piece's speed chosen
/// so the distance is exact at every time. Speeds that would be negative are 0 (then `*exact` is false).
std::vector<std::pair<double, double>> TimedPathProfile(const std::vector<double>& t_s, const std::vector<double>& s_m,
                                                        double from_speed_mps, bool* exact = nullptr);

/// The speed profile that makes a vehicle at `from_speed_mps` cover `distance_m` in `time_s` (ending at
/// `final_speed_mps` when given: a linear ramp to a middle speed over the first half, back over the second; else one
/// linear ramp over the whole time), then hold its last speed. Empty when it would need a negative speed.
std::vector<std::pair<double, double>> SynchronizeProfile(double distance_m, double time_s, double from_speed_mps,
                                                          std::optional<double> final_speed_mps);

/// The fraction 0..1 of a transition of `shape` ("step", "linear", "sinusoidal", "cubic") at progress u in [0, 1].
double TransitionShape(const std::string& shape, double u);

/// Reads every [[event]] of a session file's root table. Throws ConfigError with file:line, the key and
/// what was expected.
std::vector<EventDef> ReadEvents(const Table& root);

/// Checks what the events name against the session: entities and targets name traffic or driver nodes,
/// vehicle commands target road traffic, spawn names a road traffic node, seats are driver nodes.
/// ValidateSession calls it (so `platoon check` and `platoon run` agree). Throws ConfigError.
void ValidateEvents(const SessionDef& session);

/// Vehicle id of an entity reference "<node>", "<node>:<index>" or "id:<n>"; 0 when `ref` is none of them.
uint64_t EntityRefId(const std::string& ref);

}  // namespace platoon::config
