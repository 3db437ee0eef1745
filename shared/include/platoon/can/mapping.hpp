#pragma once
/// The CAN mapping (docs/CAN.md, "Mapping file"): which DBC signals carry which simulator variables or
/// live parameters of a driver seat, and the pure core that turns the vehicle's values into the frames
/// due at a sim time (tx) and received frames into the seat's commanded inputs and parameter updates
/// (rx). The core reads no clock, opens no socket and holds no parameter registry: the seat hands it the
/// sim time, its values, its parameters' values and the frames a can::Bus received, and sets the
/// parameters the core reports changed through the node's registry.
///
/// Every signal maps linearly: simulator value = DBC physical value * factor + offset (km/h -> m/s is
/// factor 1/3.6; a sign change is factor -1). A tx message goes every period_ms of sim time (on the sim
/// time grid: at whole multiples of the period) or on_change (when its payload changes).

#include "platoon/can/dbc.hpp"
#include "platoon/can/frame.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::can {

/// A simulator variable a signal can carry.
enum class Variable {
  kSpeedMps,       ///< tx: speed along the vehicle's x axis, in m/s.
  kYawRateRadps,   ///< tx: yaw rate, in rad/s, counter-clockwise positive.
  kAxMps2,         ///< tx: longitudinal acceleration (vehicle frame), in m/s^2.
  kAyMps2,         ///< tx: lateral acceleration (vehicle frame, left positive), in m/s^2.
  kXM,             ///< tx: world x of the vehicle's reference point (rear-axle centre), in m.
  kYM,             ///< tx: world y of the vehicle's reference point (rear-axle centre), in m.
  kYawRad,         ///< tx: heading, in rad, from world x counter-clockwise, -pi..pi.
  kSteer,          ///< tx: the applied steering command; rx: the commanded one. -1..1 of full lock, left positive.
  kThrottle,       ///< tx: applied / rx: commanded throttle, 0..1.
  kBrake,          ///< tx: applied / rx: commanded brake, 0..1.
  kIndicator,      ///< tx / rx: turn indicator, 0 off, 1 left, 2 right.
  kGear,           ///< tx: gear, 1 forward, -1 reverse (the single-track model has one forward gear).
  kWheelSpeedFlMps,  ///< tx: front-left wheel speed, in m/s: the wheel centre's velocity along the wheel's heading (WheelSpeeds).
  kWheelSpeedFrMps,  ///< tx: front-right wheel speed, in m/s.
  kWheelSpeedRlMps,  ///< tx: rear-left wheel speed, in m/s.
  kWheelSpeedRrMps,  ///< tx: rear-right wheel speed, in m/s.
};
/// Number of Variable values.
inline constexpr size_t kVariableCount = 16;
/// The variable's name in mapping files ("speed_mps", "steer", ...).
std::string_view VariableName(Variable v);
/// The variable named `name`, or nullopt.
std::optional<Variable> VariableByName(std::string_view name);
/// Whether a variable can be received (rx): steer, throttle, brake, indicator.
bool Receivable(Variable v);

/// The seat's values, indexed by Variable.
using VariableValues = std::array<double, kVariableCount>;

/// Track width the wheel speeds are computed with when the mapping file gives no track_m, in m. 1.6 (mid-size car).
inline constexpr double kDefaultTrackM = 1.6;

/// The four wheel speeds of a rigid body in plane motion, in m/s, in the order fl, fr, rl, rr (docs/CAN.md,
/// "Wheel speeds"): each wheel centre's velocity (v_cg + yaw_rate x r_wheel, the wheel at (+cg_to_front_m or
/// -cg_to_rear_m, +-track_m / 2) from the CG) projected on the wheel's heading (the front wheels turned by
/// `steer_rad`, the rear ones straight): a free-rolling wheel's angular speed times its radius, no slip.
/// `vx_mps`, `vy_mps`: CG velocity in the body frame (left positive), in m/s; `yaw_rate_radps` counter-clockwise.
std::array<double, 4> WheelSpeeds(double vx_mps, double vy_mps, double yaw_rate_radps, double steer_rad, double cg_to_front_m,
                                  double cg_to_rear_m, double track_m);

/// Which way a message goes.
enum class Direction {
  kTx,  ///< seat -> bus
  kRx,  ///< bus -> seat
};

/// One signal of a mapped message.
struct SignalMapDef {
  const Signal* signal = nullptr;  ///< The DBC signal (points into MappingDef::dbc).
  Variable variable = Variable::kSpeedMps;  ///< The simulator variable it carries (when `param` < 0).
  int param = -1;                  ///< Index into MappingDef::params when it carries a live parameter; -1: `variable`.
  double factor = 1.0;             ///< simulator = physical * factor + offset. Non-zero.
  double offset = 0.0;             ///< simulator = physical * factor + offset.
};

/// One mapped message.
struct MessageMapDef {
  const Message* message = nullptr;  ///< The DBC message (points into MappingDef::dbc).
  Direction direction = Direction::kTx;  ///< Sent or received.
  int64_t period_ns = 0;             ///< tx: period in ns (from period_ms or the DBC's GenMsgCycleTime); 0 with on_change.
  bool on_change = false;            ///< tx: sent when its payload changes (and once at the start) instead of periodically.
  std::vector<SignalMapDef> signals; ///< Its mapped signals; the message's other signals go as raw 0 (tx) or are ignored (rx).
};

/// A live parameter one signal carries (mapping key param = "PATH"; docs/CAN.md, "Live parameters").
struct ParamMapDef {
  std::string path;   ///< As written: "tyre_mu" (relative to the seat's node) or "node.<name>.tyre_mu".
  std::string where;  ///< The param key's place, "FILE:LINE: message[i].signal[j].param", for the seat's refusals.
  Direction direction = Direction::kTx;  ///< tx: its value is sent; rx: received values set it.
  std::string message;  ///< The DBC message's name.
  std::string signal;   ///< The DBC signal's name.
};

/// A mapping file read: the DBC and the mapped messages. Move-only in effect: signals point into `dbc`.
struct MappingDef {
  std::string source;                 ///< The mapping file's path.
  std::string dbc_path;               ///< The DBC's path (relative ones are taken next to the mapping file).
  double track_m = kDefaultTrackM;    ///< Track width for the wheel speeds, in m (mapping key track_m). Typical 1.5..1.7.
  Database dbc;                       ///< The DBC.
  std::vector<MessageMapDef> messages;  ///< Mapped messages, in file order.
  std::vector<ParamMapDef> params;      ///< Live parameters, one per signal that carries one, in file order.
  MappingDef() = default;
  MappingDef(const MappingDef&) = delete;
  MappingDef& operator=(const MappingDef&) = delete;
  MappingDef(MappingDef&&) = default;
  MappingDef& operator=(MappingDef&&) = default;
};

/// Reads a mapping file (TOML; docs/CAN.md) and its DBC. Throws config::ConfigError "FILE:LINE: ..." for
/// a missing file, an unknown message, signal or variable, a signal with both or neither of variable and
/// param, a parameter path that is not one, a rx variable the seat cannot take or a parameter received
/// twice, a zero factor, and can::DbcError for the DBC. Whether a parameter exists is the seat's to check.
MappingDef LoadMapping(const std::string& path);
/// The same from text; `source` names it and relative DBC paths are taken next to it.
MappingDef ParseMapping(const std::string& text, const std::string& source);

/// A frame with the sim time it is stamped with.
struct StampedFrame {
  int64_t sim_ns = 0;  ///< Sim time, in ns.
  Frame frame;         ///< The frame.
};

/// The seat's commands received over CAN.
struct CanCommand {
  double steer = 0.0;     ///< -1..1 of full lock, left positive.
  double throttle = 0.0;  ///< 0..1.
  double brake = 1.0;     ///< 0..1; full brake until the first command and after a timeout.
  double indicator = 0;   ///< 0 off, 1 left, 2 right.
  int64_t received_sim_ns = -1;  ///< Sim time the newest command frame was taken, -1 before the first.
  bool active = false;    ///< Commands are live: one came and the timeout has not passed since.
};

/// A received value for a live parameter that differs from the one the core reported last.
struct ParamUpdate {
  size_t param = 0;    ///< Index into MappingDef::params.
  double value = 0.0;  ///< physical * factor + offset, finite.
  int64_t sim_ns = 0;  ///< Sim time the frame carrying it was taken, in ns.
};

/// The registry text a received parameter value is set with, for a parameter of `type` ("float", "int",
/// "bool", as protocol::Parameter::type; "" is taken as "float"): the shortest text that reads back as
/// `value`; an int rounded to the nearest integer; a bool 1 "true", 0 "false". nullopt with `error`
/// ("expected 1 or 0 for a boolean, got 0.5") for another bool value, a string parameter or a value that
/// is not finite.
std::optional<std::string> ParamText(double value, std::string_view type, std::string& error);
/// The number a parameter's value text (a TOML literal: "0.5", "1500", "true") is sent as: true 1, false 0;
/// nullopt for a string or text that is not a number.
std::optional<double> ParamNumber(std::string_view text);

/// What the mapping has done.
struct MappingCounters {
  uint64_t tx_frames = 0;      ///< Frames made due.
  uint64_t rx_frames = 0;      ///< Frames of a mapped rx message taken.
  uint64_t rx_ignored = 0;     ///< Frames of no mapped rx message.
  uint64_t rx_clamped = 0;     ///< Received values outside the variable's range, clamped into it.
  uint64_t rx_refused = 0;     ///< Received values not finite, or frames shorter than a mapped signal.
  uint64_t timeouts = 0;       ///< Times the commands fell silent for longer than the timeout.
  uint64_t param_updates = 0;  ///< Received parameter values the seat applied (CountParam(true)).
  uint64_t param_refused = 0;  ///< Received parameter values refused: not finite, or by the registry (CountParam(false)).
};

/// The pure mapping core.
class CanMapping {
 public:
  /// `timeout_s`: commands silent for longer than this (in s of sim time) brake the seat to a stop.
  CanMapping(MappingDef def, double timeout_s);
  /// The tx frames due at `sim_ns` given the seat's values, each stamped with `sim_ns`, in file order.
  /// `params` holds the live parameters' values, indexed like Def().params (only the tx ones are read); a
  /// parameter with no value there (a shorter vector, a NaN) goes as raw 0, like an unmapped signal.
  /// Periodic messages are due at whole multiples of their period (each instant once; a jump in time
  /// sends each message once, not the missed ones); on_change messages when their payload differs from
  /// the last sent. Deterministic: the same calls give the same frames.
  std::vector<StampedFrame> Due(int64_t sim_ns, const VariableValues& values, const std::vector<double>& params = {});
  /// Whether any tx message may be due at `sim_ns` (false lets the caller skip computing its values).
  bool AnyDue(int64_t sim_ns) const;
  /// Takes a received frame at `sim_ns`: true when it belonged to a mapped rx message. A parameter
  /// signal's value becomes a ParamUpdate when it differs from the value last reported for it (a frame
  /// repeated every 10 ms reports once); one not finite is refused and counted.
  bool Take(const Frame& frame, int64_t sim_ns);
  /// The parameter updates taken since the last call, oldest first, at most one per parameter (the newest).
  std::vector<ParamUpdate> TakeParamUpdates();
  /// Counts what became of an update: applied (param_updates) or refused by the registry (param_refused).
  void CountParam(bool applied) { ++(applied ? counters_.param_updates : counters_.param_refused); }
  /// The commands at `sim_ns`: the newest values received, or throttle 0 and full brake (steer held) once
  /// the commands have been silent for longer than the timeout (counted once per silence).
  const CanCommand& Command(int64_t sim_ns);
  /// Whether some rx message maps a command variable (the seat can be driven over CAN).
  bool HasRx() const { return has_rx_; }
  /// Whether some rx message maps a live parameter.
  bool HasParamRx() const { return has_param_rx_; }
  /// Whether some tx message is mapped.
  bool HasTx() const { return has_tx_; }
  /// What it has done.
  const MappingCounters& Counters() const { return counters_; }
  /// The mapping.
  const MappingDef& Def() const { return def_; }

 private:
  MappingDef def_;
  int64_t timeout_ns_;
  bool has_rx_ = false, has_tx_ = false, has_param_rx_ = false;
  std::vector<int64_t> last_slot_;          // per message: the period slot last sent (sim_ns / period), or INT64_MIN
  std::vector<std::optional<Frame>> last_;  // per message: the payload last sent (on_change)
  CanCommand command_;
  std::vector<double> param_reported_;  // per parameter: the value last reported (NaN: none yet)
  std::vector<ParamUpdate> param_updates_;
  MappingCounters counters_;
};

}  // namespace platoon::can
