#pragma once
/// Lane keeping of the model driver (issue 43 item 6): a path-preview steering controller and a curve
/// speed. Steering is curvature feed-forward from the lane a short preview ahead, scaled by the vehicle's
/// steady-state steering gain (wheelbase plus understeer gradient times v^2), plus feedback on the lateral
/// and course errors that places the error dynamics at a chosen natural frequency. Unlike pure pursuit,
/// which aims the rear axle at a point on the lane and so cuts every curve by about l_d^2 kappa / 2, it has
/// no steady offset in a curve of constant curvature. Pure functions; equations in docs/VEHICLES.md
/// ("Lane keeping", (L1)-(L6)).

#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <string>

namespace platoon::vehicle {

/// Lane keeping settings.
struct LaneKeepingDef {
  /// The curvature feed-forward is read this far ahead of the foot point, in s of travel: the steering
  /// rate limit and the yaw response lag behind the command. Typical 0.1..0.4.
  double preview_time_s = 0.25;
  /// Natural frequency of the lateral error dynamics the feedback places, in rad/s. Typical 0.8..2.
  double natural_frequency_radps = 1.5;
  /// Damping ratio of the lateral error dynamics, dimensionless. Typical 0.7..1.2.
  double damping_ratio = 1.0;
  /// Below this speed the feedback acts as at this speed (it divides by v^2), in m/s. Typical 3..5.
  double min_feedback_speed_mps = 4.0;
  /// Lateral acceleration the driver accepts in a curve, in m/s^2: the curve speed is sqrt(a / |kappa|).
  /// Typical 2..4 (drivers' comfort; well inside the tyres' mu g).
  double max_lateral_accel_mps2 = 3.0;
  /// Deceleration planned to reach a curve at its curve speed, in m/s^2. Typical 1..2.5.
  double curve_decel_mps2 = 1.5;
  /// Gain from the speed excess over the allowed speed to the commanded deceleration, in 1/s. Typical 0.5..2.
  double curve_speed_gain_per_s = 1.0;
};
/// Default lane keeping settings.
inline LaneKeepingDef DefaultLaneKeepingDef() { return LaneKeepingDef{}; }

/// Understeer gradient of the single-track model, in rad/(m/s^2): K = m_f / C_f - m_r / C_r with the static
/// axle masses m_f = m l_r / L, m_r = m l_f / L and the Magic Formula's cornering stiffnesses
/// C = mu B C D F_z at zero slip (L2). 0.0018 for the default car (understeering).
double UndersteerGradientRadPerMps2(const VehicleDef& def);

/// Steady-state front-wheel angle that drives the vehicle on a circle of curvature `kappa_1pm` at `speed_mps`,
/// in rad: (L + K v^2) kappa (L1), the linear single-track gain.
double SteadyStateSteerRad(const VehicleDef& def, double speed_mps, double kappa_1pm);

/// Where the vehicle is relative to the lane it keeps.
struct LaneErrors {
  double lateral_m = 0;       ///< CG left of the lane centre, seen in the lane's direction of travel, in m.
  double course_rad = 0;      ///< Course (yaw + body slip) minus the lane's heading, in rad, in (-pi, pi].
  double kappa_1pm = 0;       ///< Curvature of the lane centre at the preview point, + turning left, in 1/m.
};

/// The errors of a vehicle on lane `lane` of `road` (right lanes < 0 run along s, left lanes > 0 against it),
/// given the projection `at` of its CG on the road (Road::Project). The lane centre's curvature at offset t
/// is kappa / (1 - kappa t) of the reference line's (L3).
LaneErrors LaneErrorsOf(const LaneKeepingDef& def, const road::Road& road, int lane, const road::RoadCoord& at,
                        const VehicleState& state);

/// Front-wheel steering angle that keeps the lane, in rad (L4): the steady-state angle of the curvature
/// kappa + kappa_fb, kappa_fb = -(w^2 e / v^2 + 2 zeta w e_psi / v), so that e'' + 2 zeta w e' + w^2 e = 0.
/// Not clamped: the caller scales by max_steer_rad and clamps.
double LaneKeepingSteerRad(const LaneKeepingDef& def, const VehicleDef& vehicle, const VehicleState& state,
                           const LaneErrors& errors);

/// Highest speed at which the vehicle may be at the foot point `at` so that it can slow to every curve's
/// speed sqrt(a_lat / |kappa|) within the lane ahead at curve_decel_mps2 (L5), in m/s; +infinity on a
/// straight road. Looks ahead as far as braking from `speed_mps` takes, at least 50 m.
double CurveSpeedLimitMps(const LaneKeepingDef& def, const road::Road& road, int lane, const road::RoadCoord& at,
                          double speed_mps);

/// The acceleration the curve speed limit allows, in m/s^2 (L6): gain * (limit - v) when the vehicle is
/// faster than `limit_mps`, else +infinity (no constraint). The caller takes the minimum with its own.
double CurveAccelMps2(const LaneKeepingDef& def, double speed_mps, double limit_mps);

/// Checks the definition; "" when valid, else a message naming the field.
std::string ValidateLaneKeepingDef(const LaneKeepingDef& def);

}  // namespace platoon::vehicle
