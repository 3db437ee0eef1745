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
};

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
};

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
