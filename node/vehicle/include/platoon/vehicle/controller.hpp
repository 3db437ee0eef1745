#pragma once
/// Vehicle controller (seed 004 §4.2): the mediation layer between the driver model and the vehicle
/// model. An ordered list of interventions may correct the driver's command given the vehicle state,
/// e.g. a speed limiter or an ABS-like brake modulation. With no interventions the driver's command
/// passes through unchanged. Pure: no clock, no I/O.

#include "platoon/vehicle/single_track.hpp"

#include <functional>
#include <string>
#include <vector>

namespace platoon::vehicle {

/// One intervention: maps (definition, state, command so far) to a corrected command.
struct Intervention {
  std::string name;  ///< Short name for summaries, e.g. "speed_limiter".
  /// The correction; receives the command as corrected by the interventions before it.
  std::function<VehicleInput(const VehicleDef&, const VehicleState&, const VehicleInput&)> correct;
};

/// Ordered list of interventions between driver and vehicle model.
class VehicleController {
 public:
  /// Appends an intervention; it runs after those added before it.
  void Add(Intervention intervention);
  /// Removes every intervention (the controller becomes the identity).
  void Clear() { interventions_.clear(); }
  /// Number of interventions.
  size_t Size() const { return interventions_.size(); }
  /// Names of the interventions, in order.
  std::vector<std::string> Names() const;
  /// Driver command corrected by every intervention in order; `driver` unchanged when empty.
  VehicleInput Apply(const VehicleDef& def, const VehicleState& state, const VehicleInput& driver) const;

 private:
  std::vector<Intervention> interventions_;
};

/// Speed limiter settings.
struct SpeedLimiterDef {
  double max_speed_mps = 36.1;     ///< Speed limit, in m/s. Typical 13.9 (50 km/h) .. 36.1 (130 km/h).
  double gain_per_mps = 0.5;       ///< Throttle cap falls by this per m/s of approach, in 1/(m/s). Typical 0.3..1.
};
/// Default speed limiter settings (130 km/h).
inline SpeedLimiterDef DefaultSpeedLimiterDef() { return SpeedLimiterDef{}; }

/// Speed limiter: caps the throttle at clamp(gain * (limit - vx), 0, 1); brake and steering pass through.
Intervention SpeedLimiter(const SpeedLimiterDef& def);

/// ABS-like brake modulation settings.
struct AbsDef {
  double utilization = 0.995;   ///< Brake force of the more critical axle as a share of its peak friction. Typical 0.95..1.
  double min_speed_mps = 2.0;   ///< Below this speed the ABS is inactive (brakes may hold at rest), in m/s.
};
/// Default ABS settings.
inline AbsDef DefaultAbsDef() { return AbsDef{}; }

/// ABS-like modulation: caps the brake command so that neither axle's brake force exceeds `utilization`
/// times its peak friction mu D Fz (axle loads with the current load transfer), so no axle locks.
Intervention Abs(const AbsDef& def);

}  // namespace platoon::vehicle
