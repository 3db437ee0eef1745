#include "platoon/vehicle/lane_keeping.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace platoon::vehicle {

namespace {

constexpr double kLaneKeepingGravityMps2 = 9.80665;

// The lane's direction of travel along s: right lanes (< 0) with s, left lanes against it.
double LaneDirection(int lane) { return lane > 0 ? -1.0 : 1.0; }

// Curvature of lane `lane`'s centre at road s, seen in its direction of travel (L3).
double LaneCurvature(const road::Road& road, int lane, double s_m) {
  const double kappa = road.Curvature(std::clamp(s_m, 0.0, road.Length()));
  const double t = road.LaneCenterOffsetAt(std::clamp(s_m, 0.0, road.Length()), lane);
  const double denom = 1.0 - kappa * t;
  // A lane centre at or beyond the centre of curvature has no meaningful curvature; keep the reference's.
  const double lane_kappa = denom > 0.05 ? kappa / denom : kappa;
  return LaneDirection(lane) * lane_kappa;
}

}  // namespace

double UndersteerGradientRadPerMps2(const VehicleDef& def) {
  // Cornering stiffness per unit load: d/da [D sin(C atan(B a ...))] at a = 0 is B C D; times mu and the axle
  // load m g l / L, divided into the axle's mass m l / L: the masses cancel (L2).
  const double front = def.mu * def.tyre_front.b * def.tyre_front.c * def.tyre_front.d;
  const double rear = def.mu * def.tyre_rear.b * def.tyre_rear.c * def.tyre_rear.d;
  if (!(front > 0) || !(rear > 0)) return 0.0;
  return (1.0 / front - 1.0 / rear) / kLaneKeepingGravityMps2;
}

double SteadyStateSteerRad(const VehicleDef& def, double speed_mps, double kappa_1pm) {
  return (def.WheelbaseM() + UndersteerGradientRadPerMps2(def) * speed_mps * speed_mps) * kappa_1pm;
}

LaneErrors LaneErrorsOf(const LaneKeepingDef& def, const road::Road& road, int lane, const road::RoadCoord& at,
                        const VehicleState& state) {
  const double dir = LaneDirection(lane);
  LaneErrors e;
  e.lateral_m = dir * (at.t_m - road.LaneCenterOffsetAt(at.s_m, lane));
  // Course: the direction the CG moves (the body's heading when it stands).
  const double slip = std::abs(state.vx_mps) > 0.1 ? std::atan2(state.vy_mps, state.vx_mps) : 0.0;
  const double lane_heading = road.Heading(at.s_m) + (dir < 0 ? std::numbers::pi : 0.0);
  e.course_rad = std::remainder(state.yaw_rad + slip - lane_heading, 2.0 * std::numbers::pi);
  const double preview_m = std::max(0.0, state.vx_mps) * def.preview_time_s;
  e.kappa_1pm = LaneCurvature(road, lane, at.s_m + dir * preview_m);
  return e;
}

double LaneKeepingSteerRad(const LaneKeepingDef& def, const VehicleDef& vehicle, const VehicleState& state,
                           const LaneErrors& errors) {
  const double v = std::max(0.0, state.vx_mps);
  const double v_fb = std::max(v, def.min_feedback_speed_mps);
  const double w = def.natural_frequency_radps;
  // e' = v sin(e_psi), e'' ~ v^2 (kappa_vehicle - kappa_lane): choose the curvature that makes the error a
  // damped oscillator (L4).
  const double kappa_fb = -(w * w * errors.lateral_m / (v_fb * v_fb) +
                            2.0 * def.damping_ratio * w * std::sin(errors.course_rad) / v_fb);
  return SteadyStateSteerRad(vehicle, v, errors.kappa_1pm + kappa_fb);
}

double CurveSpeedLimitMps(const LaneKeepingDef& def, const road::Road& road, int lane, const road::RoadCoord& at,
                          double speed_mps) {
  const double dir = LaneDirection(lane);
  const double b = def.curve_decel_mps2;
  const double v = std::max(0.0, speed_mps);
  const double horizon_m = std::max(50.0, v * v / (2.0 * b) + v);
  double limit = std::numeric_limits<double>::infinity();
  // Every 2 m ahead: the speed now from which braking at b reaches that point's curve speed (L5).
  for (double d = 0.0; d <= horizon_m; d += 2.0) {
    const double s = at.s_m + dir * d;
    if (s < 0.0 || s > road.Length()) break;
    const double kappa = std::abs(LaneCurvature(road, lane, s));
    if (kappa < 1e-9) continue;
    const double v_curve2 = def.max_lateral_accel_mps2 / kappa;
    limit = std::min(limit, std::sqrt(v_curve2 + 2.0 * b * d));
  }
  return limit;
}

double CurveAccelMps2(const LaneKeepingDef& def, double speed_mps, double limit_mps) {
  if (!(speed_mps > limit_mps)) return std::numeric_limits<double>::infinity();
  return def.curve_speed_gain_per_s * (limit_mps - speed_mps);
}

std::string ValidateLaneKeepingDef(const LaneKeepingDef& d) {
  if (!(d.preview_time_s >= 0)) return "preview_time_s must be >= 0";
  if (!(d.natural_frequency_radps > 0)) return "natural_frequency_radps must be > 0";
  if (!(d.damping_ratio > 0)) return "damping_ratio must be > 0";
  if (!(d.min_feedback_speed_mps > 0)) return "min_feedback_speed_mps must be > 0";
  if (!(d.max_lateral_accel_mps2 > 0)) return "max_lateral_accel_mps2 must be > 0";
  if (!(d.curve_decel_mps2 > 0)) return "curve_decel_mps2 must be > 0";
  if (!(d.curve_speed_gain_per_s > 0)) return "curve_speed_gain_per_s must be > 0";
  return {};
}

}  // namespace platoon::vehicle
