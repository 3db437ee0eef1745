#include "platoon/vehicle/single_track.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>

namespace platoon::vehicle {

namespace {

constexpr double kGravityMps2 = 9.80665;

/// Forces of one axle in its tyre frame (x along the wheel, y left of it), in N.
struct TyreForce {
  double fx_n = 0;
  double fy_n = 0;
};

std::string FieldError(const char* field, const char* rule, double value) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s must be %s, got %g", field, rule, value);
  return buf;
}

// (V5) Combined forces of one axle: Magic Formula lateral force, longitudinal drive/brake demand, the
// friction circle with the longitudinal force taking priority, and a locked axle sliding along its
// contact-patch velocity when the brake demand exceeds the peak force.
TyreForce AxleForce(const PacejkaDef& tyre, double mu, double load_n, double locked_ratio, double v_long_mps,
                    double v_lat_mps, double drive_n, double brake_n) {
  const double peak_n = mu * tyre.d * load_n;
  // A locked wheel does not roll: its whole contact-patch velocity is sliding velocity.
  if (brake_n - drive_n > peak_n) {
    const double slide_mps = std::hypot(v_long_mps, v_lat_mps);
    if (slide_mps < 1e-9) return {};
    const double f_n = locked_ratio * peak_n;
    return {-f_n * v_long_mps / slide_mps, -f_n * v_lat_mps / slide_mps};
  }
  // The brake opposes the wheel's rolling direction.
  const double rolling_dir = v_long_mps >= 0 ? 1.0 : -1.0;
  const double fx_n = std::clamp(drive_n - rolling_dir * brake_n, -peak_n, peak_n);
  // (V2) Slip angle; the lateral force opposes lateral sliding whichever way the wheel rolls.
  const double slip_rad = std::atan(v_lat_mps / std::max(std::abs(v_long_mps), 0.1));
  const double fy_pure_n = -mu * load_n * MagicFormula(tyre, slip_rad);
  const double fy_max_n = std::sqrt(std::max(0.0, peak_n * peak_n - fx_n * fx_n));
  return {fx_n, std::clamp(fy_pure_n, -fy_max_n, fy_max_n)};
}

// (V11) Longitudinal speed under Coulomb-like forces (brakes, rolling resistance) that oppose motion
// and can hold the vehicle at rest: never reverses the direction of travel within one step.
double CoulombStep(double v_mps, double active_n, double hold_n, double mass_kg, double h_s) {
  if (v_mps == 0.0) {
    if (std::abs(active_n) <= hold_n) return 0.0;
    return h_s * (active_n - std::copysign(hold_n, active_n)) / mass_kg;
  }
  const double v_new_mps = v_mps + h_s * (active_n - std::copysign(hold_n, v_mps)) / mass_kg;
  // Crossing zero means the vehicle stopped inside the step; the next step restarts from rest.
  if ((v_mps > 0) != (v_new_mps > 0)) return 0.0;
  return v_new_mps;
}

VehicleState Substep(const VehicleDef& def, const VehicleState& s, const VehicleInput& in, double h_s,
                     double grade_rad) {
  VehicleState n = s;
  const double m = def.mass_kg;
  const double lf = def.cg_to_front_m;
  const double lr = def.cg_to_rear_m;
  const double wheelbase_m = def.WheelbaseM();

  // (V1) Steering actuator: the road-wheel angle follows the command at a limited rate.
  const double steer_cmd_rad = std::clamp(in.steer, -1.0, 1.0) * def.max_steer_rad;
  const double max_change_rad = def.max_steer_rate_radps * h_s;
  n.steer_rad = s.steer_rad + std::clamp(steer_cmd_rad - s.steer_rad, -max_change_rad, max_change_rad);
  const double delta = n.steer_rad;
  const double cos_d = std::cos(delta);
  const double sin_d = std::sin(delta);

  // (V3) Axle loads, (V6) drive and (V7) brake demands per axle.
  const AxleLoads loads = ComputeAxleLoads(def, s, grade_rad);
  const double peak_front_n = def.mu * def.tyre_front.d * loads.front_n;
  const double peak_rear_n = def.mu * def.tyre_rear.d * loads.rear_n;
  const double drive_n = std::clamp(in.throttle, 0.0, 1.0) * MaxDriveForceN(def, s.vx_mps);
  const double drive_front_n = drive_n * def.drive_front_share;
  const double drive_rear_n = drive_n - drive_front_n;
  const double brake_n = std::clamp(in.brake, 0.0, 1.0) * def.max_brake_torque_nm / def.wheel_radius_m;
  const double brake_front_n = brake_n * def.brake_front_share;
  const double brake_rear_n = brake_n - brake_front_n;

  // (V8) Resistances along body x: rolling (magnitude, opposes motion), air (signed), grade (signed).
  const double roll_n = def.rolling_resistance * m * kGravityMps2 * std::cos(grade_rad);
  const double air_n = 0.5 * def.air_density_kgm3 * def.drag_area_m2 * s.vx_mps * std::abs(s.vx_mps);
  const double grade_n = m * kGravityMps2 * std::sin(grade_rad);

  // (V12) Blend weight: 0 kinematic below blend start, 1 dynamic above blend end.
  const double w = std::clamp((std::abs(s.vx_mps) - def.low_speed_blend_start_mps) /
                                  (def.low_speed_blend_end_mps - def.low_speed_blend_start_mps),
                              0.0, 1.0);

  double vx_mps = 0, vy_mps = 0, r_radps = 0;
  if (w > 0.0) {
    // (V2) Contact-patch velocities in each tyre frame.
    const double vy_front_mps = s.vy_mps + lf * s.yaw_rate_radps;
    const double v_long_f = s.vx_mps * cos_d + vy_front_mps * sin_d;
    const double v_lat_f = -s.vx_mps * sin_d + vy_front_mps * cos_d;
    const double v_lat_r = s.vy_mps - lr * s.yaw_rate_radps;
    const TyreForce front = AxleForce(def.tyre_front, def.mu, loads.front_n, def.locked_friction_ratio, v_long_f,
                                      v_lat_f, drive_front_n, brake_front_n);
    const TyreForce rear = AxleForce(def.tyre_rear, def.mu, loads.rear_n, def.locked_friction_ratio, s.vx_mps,
                                     v_lat_r, drive_rear_n, brake_rear_n);
    // Front forces into the body frame.
    const double fx_front_n = front.fx_n * cos_d - front.fy_n * sin_d;
    const double fy_front_n = front.fx_n * sin_d + front.fy_n * cos_d;
    // (V9) Newton-Euler in the body frame, semi-implicit Euler.
    const double sign_vx = s.vx_mps > 0 ? 1.0 : -1.0;
    const double dvx = (fx_front_n + rear.fx_n - air_n - sign_vx * roll_n - grade_n) / m + s.yaw_rate_radps * s.vy_mps;
    const double dvy = (fy_front_n + rear.fy_n) / m - s.yaw_rate_radps * s.vx_mps;
    const double dr = (lf * fy_front_n - lr * rear.fy_n) / def.yaw_inertia_kgm2;
    vx_mps = s.vx_mps + h_s * dvx;
    vy_mps = s.vy_mps + h_s * dvy;
    r_radps = s.yaw_rate_radps + h_s * dr;
  }
  if (w < 1.0) {
    // (V10) Kinematic bicycle: no tyre slip, the rear axle moves along the body x axis.
    const double active_n = std::min(drive_front_n, peak_front_n) + std::min(drive_rear_n, peak_rear_n) - grade_n - air_n;
    const double hold_n = std::min(brake_front_n, peak_front_n) + std::min(brake_rear_n, peak_rear_n) + roll_n;
    const double vx_kin = CoulombStep(s.vx_mps, active_n, hold_n, m, h_s);
    const double r_kin = vx_kin * std::tan(delta) / wheelbase_m;
    vx_mps = w * vx_mps + (1.0 - w) * vx_kin;
    vy_mps = w * vy_mps + (1.0 - w) * lr * r_kin;
    r_radps = w * r_radps + (1.0 - w) * r_kin;
  }

  // Body-frame CG acceleration and yaw acceleration of this step (outputs, and the next load transfer).
  n.ax_mps2 = (vx_mps - s.vx_mps) / h_s - r_radps * vy_mps;
  n.ay_mps2 = (vy_mps - s.vy_mps) / h_s + r_radps * vx_mps;
  n.yaw_accel_radps2 = (r_radps - s.yaw_rate_radps) / h_s;
  n.vx_mps = vx_mps;
  n.vy_mps = vy_mps;
  n.yaw_rate_radps = r_radps;

  // (V13) Pose with the new velocities, heading taken at the middle of the step.
  const double yaw_mid = s.yaw_rad + 0.5 * h_s * r_radps;
  n.x_m = s.x_m + h_s * (vx_mps * std::cos(yaw_mid) - vy_mps * std::sin(yaw_mid));
  n.y_m = s.y_m + h_s * (vx_mps * std::sin(yaw_mid) + vy_mps * std::cos(yaw_mid));
  n.yaw_rad = s.yaw_rad + h_s * r_radps;
  if (std::abs(n.yaw_rad) > std::numbers::pi) n.yaw_rad = std::remainder(n.yaw_rad, 2.0 * std::numbers::pi);
  n.distance_m = s.distance_m + h_s * std::hypot(vx_mps, vy_mps);
  return n;
}

}  // namespace

std::string ValidateVehicleDef(const VehicleDef& d) {
  const struct {
    const char* name;
    double value;
  } positive[] = {
      {"mass_kg", d.mass_kg},
      {"yaw_inertia_kgm2", d.yaw_inertia_kgm2},
      {"cg_to_front_m", d.cg_to_front_m},
      {"cg_to_rear_m", d.cg_to_rear_m},
      {"cg_height_m", d.cg_height_m},
      {"wheel_radius_m", d.wheel_radius_m},
      {"tyre_front.b", d.tyre_front.b},
      {"tyre_front.d", d.tyre_front.d},
      {"tyre_rear.b", d.tyre_rear.b},
      {"tyre_rear.d", d.tyre_rear.d},
      {"mu", d.mu},
      {"max_steer_rad", d.max_steer_rad},
      {"max_steer_rate_radps", d.max_steer_rate_radps},
      {"engine_max_torque_nm", d.engine_max_torque_nm},
      {"engine_max_power_w", d.engine_max_power_w},
      {"final_drive_ratio", d.final_drive_ratio},
      {"driveline_efficiency", d.driveline_efficiency},
      {"max_brake_torque_nm", d.max_brake_torque_nm},
      {"max_substep_s", d.max_substep_s},
  };
  for (const auto& p : positive) {
    if (!(p.value > 0) || !std::isfinite(p.value)) return FieldError(p.name, "> 0 and finite", p.value);
  }
  const struct {
    const char* name;
    double value;
  } unit_interval[] = {
      {"locked_friction_ratio", d.locked_friction_ratio}, {"driveline_efficiency", d.driveline_efficiency},
      {"drive_front_share", d.drive_front_share},         {"brake_front_share", d.brake_front_share},
  };
  for (const auto& p : unit_interval) {
    if (!(p.value >= 0 && p.value <= 1)) return FieldError(p.name, "in [0, 1]", p.value);
  }
  if (!(d.tyre_front.c > 0 && d.tyre_front.c <= 2)) return FieldError("tyre_front.c", "in (0, 2]", d.tyre_front.c);
  if (!(d.tyre_rear.c > 0 && d.tyre_rear.c <= 2)) return FieldError("tyre_rear.c", "in (0, 2]", d.tyre_rear.c);
  if (!(d.tyre_front.e <= 1)) return FieldError("tyre_front.e", "<= 1", d.tyre_front.e);
  if (!(d.tyre_rear.e <= 1)) return FieldError("tyre_rear.e", "<= 1", d.tyre_rear.e);
  if (!(d.max_steer_rad < 1.5)) return FieldError("max_steer_rad", "< 1.5 (below 90 deg)", d.max_steer_rad);
  if (!(d.cg_height_m < d.WheelbaseM())) return FieldError("cg_height_m", "< the wheelbase", d.cg_height_m);
  if (!(d.rolling_resistance >= 0 && d.rolling_resistance < 1)) {
    return FieldError("rolling_resistance", "in [0, 1)", d.rolling_resistance);
  }
  if (!(d.pneumatic_trail_m >= 0 && d.pneumatic_trail_m < 0.5)) {
    return FieldError("pneumatic_trail_m", "in [0, 0.5)", d.pneumatic_trail_m);
  }
  if (!(d.mechanical_trail_m > -0.2 && d.mechanical_trail_m < 0.2)) {
    return FieldError("mechanical_trail_m", "in (-0.2, 0.2)", d.mechanical_trail_m);
  }
  if (!(d.drag_area_m2 >= 0)) return FieldError("drag_area_m2", ">= 0", d.drag_area_m2);
  if (!(d.air_density_kgm3 >= 0)) return FieldError("air_density_kgm3", ">= 0", d.air_density_kgm3);
  if (!(d.low_speed_blend_start_mps > 0)) {
    return FieldError("low_speed_blend_start_mps", "> 0", d.low_speed_blend_start_mps);
  }
  if (!(d.low_speed_blend_end_mps > d.low_speed_blend_start_mps)) {
    return FieldError("low_speed_blend_end_mps", "> low_speed_blend_start_mps", d.low_speed_blend_end_mps);
  }
  if (!(d.max_substep_s <= 0.01)) return FieldError("max_substep_s", "<= 0.01 (stability)", d.max_substep_s);
  return {};
}

uint64_t VehicleState::Hash() const {
  const double fields[] = {x_m,       y_m,       distance_m, yaw_rad, vx_mps, vy_mps, yaw_rate_radps, steer_rad,
                           ax_mps2, ay_mps2, yaw_accel_radps2};
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64 offset basis
  for (double f : fields) {
    if (f == 0.0) f = 0.0;  // fold -0.0 so that equal states hash equal
    unsigned char bytes[sizeof f];
    std::memcpy(bytes, &f, sizeof f);
    for (unsigned char b : bytes) {
      h ^= b;
      h *= 1099511628211ull;  // FNV-1a 64 prime
    }
  }
  return h;
}

AxleLoads ComputeAxleLoads(const VehicleDef& def, const VehicleState& state, double grade_rad) {
  // Static share plus the pitch moment of the longitudinal inertial and grade forces at CG height.
  const double m = def.mass_kg;
  const double weight_n = m * kGravityMps2 * std::cos(grade_rad);
  const double pitch_n = def.cg_height_m * (m * state.ax_mps2 + m * kGravityMps2 * std::sin(grade_rad));
  const double wheelbase_m = def.WheelbaseM();
  AxleLoads loads;
  loads.front_n = std::clamp((weight_n * def.cg_to_rear_m - pitch_n) / wheelbase_m, 0.0, weight_n);
  loads.rear_n = weight_n - loads.front_n;
  return loads;
}

double MagicFormula(const PacejkaDef& t, double slip_rad) {
  const double ba = t.b * slip_rad;
  return t.d * std::sin(t.c * std::atan(ba - t.e * (ba - std::atan(ba))));
}

double PeakSlipRad(const PacejkaDef& t) {
  // The sine peaks where C atan(y) = pi/2, y = x - E (x - atan x), x = B a; y grows monotonically in x
  // for E <= 1, so bisection finds x. For C <= 1 there is no peak: the slip where C atan(y) is 90 % of pi/2.
  const double y_peak = t.c > 1.0 ? std::tan(std::numbers::pi / (2.0 * t.c)) : std::tan(0.9 * std::numbers::pi / 2.0);
  double lo = 0, hi = 1;
  while (hi - t.e * (hi - std::atan(hi)) < y_peak && hi < 1e6) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid - t.e * (mid - std::atan(mid)) < y_peak) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi) / t.b;
}

double FrontLateralForceN(const VehicleDef& def, const VehicleState& s, double grade_rad) {
  // (V2) The front contact patch's velocity in the tyre frame, as Substep computes it.
  const double cos_d = std::cos(s.steer_rad);
  const double sin_d = std::sin(s.steer_rad);
  const double vy_front_mps = s.vy_mps + def.cg_to_front_m * s.yaw_rate_radps;
  const double v_long_f = s.vx_mps * cos_d + vy_front_mps * sin_d;
  const double v_lat_f = -s.vx_mps * sin_d + vy_front_mps * cos_d;
  const double slip_rad = std::atan(v_lat_f / std::max(std::abs(v_long_f), 0.1));
  const AxleLoads loads = ComputeAxleLoads(def, s, grade_rad);
  return -def.mu * loads.front_n * MagicFormula(def.tyre_front, slip_rad);
}

double FrontAligningTorqueNm(const VehicleDef& def, const VehicleState& s, double grade_rad) {
  // Slip angle again (FrontLateralForceN's), for the pneumatic trail's fall-off towards the peak.
  const double vy_front_mps = s.vy_mps + def.cg_to_front_m * s.yaw_rate_radps;
  const double v_long_f = s.vx_mps * std::cos(s.steer_rad) + vy_front_mps * std::sin(s.steer_rad);
  const double v_lat_f = -s.vx_mps * std::sin(s.steer_rad) + vy_front_mps * std::cos(s.steer_rad);
  const double slip_rad = std::atan(v_lat_f / std::max(std::abs(v_long_f), 0.1));
  const double trail_m = def.pneumatic_trail_m * std::max(0.0, 1.0 - std::abs(slip_rad) / PeakSlipRad(def.tyre_front)) +
                         def.mechanical_trail_m;
  return -trail_m * FrontLateralForceN(def, s, grade_rad);
}

double MaxDriveForceN(const VehicleDef& def, double vx_mps) {
  // Engine torque is capped by the torque limit and by power / engine speed (one fixed ratio).
  const double torque_limited_n =
      def.driveline_efficiency * def.engine_max_torque_nm * def.final_drive_ratio / def.wheel_radius_m;
  const double speed_mps = std::abs(vx_mps);
  if (speed_mps * torque_limited_n <= def.driveline_efficiency * def.engine_max_power_w) return torque_limited_n;
  return def.driveline_efficiency * def.engine_max_power_w / speed_mps;
}

VehicleState Step(const VehicleDef& def, const VehicleState& state, const VehicleInput& input, double dt_s,
                  double grade_rad) {
  assert(dt_s >= 0 && std::isfinite(dt_s));
  if (!(dt_s > 0)) return state;
  const int substeps = std::max(1, static_cast<int>(std::ceil(dt_s / def.max_substep_s - 1e-9)));
  const double h_s = dt_s / substeps;
  VehicleState s = state;
  for (int i = 0; i < substeps; ++i) s = Substep(def, s, input, h_s, grade_rad);
  return s;
}

KinematicState ToKinematic(const VehicleDef& def, const VehicleState& s, int64_t stamp_ns) {
  // (V14) Rigid-body transfer from the CG to the rear-axle centre, r_rel = (-lr, 0, 0) in the body frame.
  const double lr = def.cg_to_rear_m;
  const double r = s.yaw_rate_radps;
  const Quat q(Eigen::AngleAxisd(s.yaw_rad, Vec3::UnitZ()));
  KinematicState k;
  k.stamp_ns = stamp_ns;
  k.pose.orientation = q;
  k.pose.position_m = Vec3(s.x_m, s.y_m, 0.0) + q * Vec3(-lr, 0.0, 0.0);
  k.velocity_mps = q * Vec3(s.vx_mps, s.vy_mps - r * lr, 0.0);
  k.acceleration_mps2 = q * Vec3(s.ax_mps2 + r * r * lr, s.ay_mps2 - s.yaw_accel_radps2 * lr, 0.0);
  k.angular_velocity_radps = Vec3(0.0, 0.0, r);
  return k;
}

}  // namespace platoon::vehicle
