#pragma once
/// Force feedback at a driver seat (docs/INPUTS.md, "Force feedback"): the wheel torque commanded from the
/// front axle's self-aligning torque (vehicle::FrontAligningTorqueNm), a centring spring and damping, with
/// a torque limit, and zero whenever the seat must not push: the session paused or stopped (the seat's
/// dynamics no longer step), the server lost (no world state for longer than the loss timeout), and exit.
///
/// Pure: every function is given the time; no clock, no device. The seat feeds it and drives an
/// input::HapticDevice with the result.

#include <cstdint>
#include <string>

namespace platoon::node {

/// Zero torque when no world state came for this long, in ns: 50 ms (3 periods of the 60 Hz broadcast),
/// so a killed server's wheel is at zero within 100 ms with room for the device's own update period.
constexpr int64_t kForceFeedbackLossNs = 50'000'000;
/// Zero torque when the seat's dynamics did not step for this long (paused, stopped, stalled), in ns: 50 ms.
constexpr int64_t kForceFeedbackStaleNs = 50'000'000;

/// Force-feedback settings ([[node]] ffb_* keys); read-only once loaded.
struct ForceFeedbackDef {
  /// Fraction of full scale per kN m of front aligning torque, dimensionless per kN m. Typical 2
  /// (500 N m, a hard corner of a mid-size car, is full scale).
  double gain_per_knm = 2.0;
  /// Centring spring: fraction of full scale at full steering lock (steer = +-1). Typical 0.1.
  double spring = 0.1;
  /// Damping: fraction of full scale per unit of steer per second (full lock in 1 s). Typical 0.05.
  double damping = 0.05;
  /// Torque limit, fraction of the device's full scale, in (0, 1]. Typical 0.8.
  double max_torque = 0.8;
};

/// Default force-feedback settings.
inline ForceFeedbackDef DefaultForceFeedbackDef() { return ForceFeedbackDef{}; }

/// What the seat's dynamics hand to force feedback at one step.
struct ForceFeedbackFeed {
  double aligning_nm = 0;    ///< Front self-aligning torque, steering left positive, in N m.
  double steer = 0;          ///< Steering wheel position, -1 (full right) .. 1 (full left).
  double steer_rate_ps = 0;  ///< Its rate of change, in 1/s (full lock per second = 1).
};

/// The torque an update commands and why.
struct ForceFeedbackOutput {
  double torque = 0;  ///< Wheel torque, fraction of full scale in -1..1; positive turns the wheel left.
  /// "" when live; else why it is zero: "no dynamics" (paused, stopped or not started) or "no world"
  /// (the server lost).
  std::string zero_reason;
};

/// The live torque: gain_per_knm * aligning_nm / 1000 - spring * steer - damping * steer_rate_ps,
/// clamped to +-max_torque. Positive turns the wheel left (the sign of vehicle::FrontAligningTorqueNm).
double ForceFeedbackTorque(const ForceFeedbackDef& def, const ForceFeedbackFeed& feed);

/// One update at time `now_ns` (any clock the other two times share): ForceFeedbackTorque of `feed`,
/// or zero when `feed_ns` (the last dynamics step) is older than kForceFeedbackStaleNs or -1, or
/// `world_ns` (the last world state received) older than kForceFeedbackLossNs or -1.
ForceFeedbackOutput ForceFeedbackUpdate(const ForceFeedbackDef& def, const ForceFeedbackFeed& feed, int64_t feed_ns,
                                        int64_t world_ns, int64_t now_ns);

/// Checks the settings; "" when valid, else "ffb_<key> must be ..., got ...".
std::string ValidateForceFeedbackDef(const ForceFeedbackDef& def);

}  // namespace platoon::node
