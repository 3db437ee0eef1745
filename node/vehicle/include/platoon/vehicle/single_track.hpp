#pragma once
/// Dynamic single-track (bicycle) vehicle model (seed 004 §4.2 "vehicle model", seed 000 §2.c
/// "vehicle dynamics ... semi-empirical tyre model ... rolling, air and gradient resistances").
///
/// Pure and deterministic: Step() is a function of (definition, state, input, dt, grade). No clock,
/// no I/O. Body frame at the centre of gravity (CG): x forward, y left, z up. Equations, numbered as
/// in docs/VEHICLES.md, are cited in the source as (V1)...(V14).

#include "platoon/geometry.hpp"

#include <cstdint>
#include <string>

namespace platoon::vehicle {

/// Pacejka Magic Formula coefficients for the lateral force of one axle,
/// F = mu Fz D sin(C atan(B a - E (B a - atan(B a)))).
struct PacejkaDef {
  double b = 10.0;   ///< B: stiffness factor, in 1/rad. Typical 5..15.
  double c = 1.9;    ///< C: shape factor, dimensionless. Typical 1.3..2.0 (must be in (0, 2]).
  double d = 1.0;    ///< D: peak force per unit load and unit mu, dimensionless. Typical 0.8..1.2.
  double e = 0.97;   ///< E: curvature factor, dimensionless. Typical -1..1 (must be <= 1).
};

/// Read-only description of one vehicle; validated once, passed as const&.
struct VehicleDef {
  double mass_kg = 1500.0;                ///< Total mass, in kg. Typical 1500 (mid-size car).
  double yaw_inertia_kgm2 = 2600.0;       ///< Yaw moment of inertia about the CG, in kg m^2. Typical 2000..3500.
  double cg_to_front_m = 1.20;            ///< CG to front axle, in m. Typical 1.0..1.4.
  double cg_to_rear_m = 1.55;             ///< CG to rear axle, in m. Typical 1.3..1.7.
  double cg_height_m = 0.50;              ///< CG height above ground, in m. Typical 0.45..0.6.
  double wheel_radius_m = 0.31;           ///< Loaded (rolling) wheel radius, in m. Typical 0.30..0.34.
  PacejkaDef tyre_front{7.5, 1.9, 1.0, 0.97};  ///< Front axle lateral Magic Formula.
  PacejkaDef tyre_rear{10.0, 1.9, 1.0, 0.97};  ///< Rear axle lateral Magic Formula.
  double mu = 1.0;                        ///< Road friction scale, dimensionless. 1.0 dry asphalt, ~0.5 wet, ~0.1 ice.
  double locked_friction_ratio = 0.8;     ///< Sliding / peak friction of a locked axle, dimensionless. Typical 0.7..0.85.
  double max_steer_rad = 0.55;            ///< Road-wheel angle at full steer input, in rad. Typical 0.5..0.6.
  double max_steer_rate_radps = 0.8;      ///< Road-wheel steering rate limit, in rad/s. Typical 0.5..1.
  double engine_max_torque_nm = 250.0;    ///< Engine peak torque, in N m. Typical 200..350.
  double engine_max_power_w = 110000.0;   ///< Engine peak power, in W. Typical 80..150 kW.
  double final_drive_ratio = 10.0;        ///< Overall engine-to-wheel ratio (one fixed gear), dimensionless. Typical 8..14.
  double driveline_efficiency = 0.9;      ///< Engine-to-wheel efficiency, dimensionless. Typical 0.85..0.95.
  double drive_front_share = 1.0;         ///< Share of drive force on the front axle; 1 FWD, 0 RWD.
  double max_brake_torque_nm = 6000.0;    ///< Brake torque of all four wheels at full pedal, in N m. Typical 4000..8000.
  double brake_front_share = 0.75;        ///< Share of brake torque on the front axle. Typical 0.65..0.8.
  double rolling_resistance = 0.012;      ///< c_rr, rolling resistance coefficient, dimensionless. Typical 0.008..0.015.
  double drag_area_m2 = 0.667;            ///< Cd * A, in m^2. Typical 0.29 * 2.3 = 0.667.
  double air_density_kgm3 = 1.204;        ///< Air density, in kg/m^3. 1.204 at 20 degC, sea level.
  double low_speed_blend_start_mps = 1.0; ///< Below this speed the model is purely kinematic, in m/s.
  double low_speed_blend_end_mps = 2.0;   ///< Above this speed the model is purely dynamic, in m/s.
  double max_substep_s = 0.001;           ///< Step() splits longer dt into substeps of at most this, in s.
  /// Front tyres' pneumatic trail at zero slip, in m (it falls linearly to 0 at the slip of peak side
  /// force). Typical 0.02..0.05: about 1/6 of a 0.15..0.25 m contact patch (Pacejka, "Tyre and Vehicle
  /// Dynamics", 3rd ed. 2012, §3.2 brush model: t = a/3 at zero slip for half-length a).
  double pneumatic_trail_m = 0.035;
  /// Front suspension's mechanical (caster) trail, in m. Typical 0.01..0.03 for a passenger car
  /// (Milliken & Milliken, "Race Car Vehicle Dynamics" 1995, ch. 19 "Steering systems").
  double mechanical_trail_m = 0.02;
  /// Wheelbase lf + lr, in m. Typical 2.75.
  double WheelbaseM() const { return cg_to_front_m + cg_to_rear_m; }
};

/// Default definition: a front-wheel-drive mid-size car (~1500 kg) on dry asphalt.
inline VehicleDef DefaultVehicleDef() { return VehicleDef{}; }

/// Checks a definition; "" when valid, else a message naming the field and its value.
std::string ValidateVehicleDef(const VehicleDef& def);

/// Plain, copyable vehicle state; what is synced, recorded, replayed and hashed.
struct VehicleState {
  double x_m = 0;               ///< CG position east (world x), in m.
  double y_m = 0;               ///< CG position north (world y), in m.
  double yaw_rad = 0;           ///< Heading of the body x axis from world x, counter-clockwise, in rad.
  double vx_mps = 0;            ///< Body-frame longitudinal velocity of the CG, in m/s.
  double vy_mps = 0;            ///< Body-frame lateral velocity of the CG (left positive), in m/s.
  double yaw_rate_radps = 0;    ///< Yaw rate, counter-clockwise positive, in rad/s.
  double steer_rad = 0;         ///< Current front road-wheel angle (after the rate limit), left positive, in rad.
  double distance_m = 0;        ///< Path length travelled by the CG, in m.
  double ax_mps2 = 0;           ///< Output of the last step: body-frame x acceleration of the CG, in m/s^2.
  double ay_mps2 = 0;           ///< Output of the last step: body-frame y acceleration of the CG, in m/s^2.
  double yaw_accel_radps2 = 0;  ///< Output of the last step: yaw acceleration, in rad/s^2.
  /// Exact equality of every field (for determinism tests).
  bool operator==(const VehicleState&) const = default;
  /// FNV-1a 64 over the bytes of every double (-0.0 folded into +0.0), for determinism tests.
  uint64_t Hash() const;
};

/// Driver (or controller) command to the vehicle model. Step() clamps it to the ranges.
struct VehicleInput {
  double steer = 0;     ///< Steering, -1 (full right) .. 1 (full left); scaled by max_steer_rad.
  double throttle = 0;  ///< Accelerator pedal, 0..1.
  double brake = 0;     ///< Brake pedal, 0..1; scaled by max_brake_torque_nm.
  /// Exact equality of every field.
  bool operator==(const VehicleInput&) const = default;
};

/// Normal loads of the two axles, in N.
struct AxleLoads {
  double front_n = 0;  ///< Front axle normal load, in N.
  double rear_n = 0;   ///< Rear axle normal load, in N.
};

/// Axle loads with longitudinal load transfer from the last step's ax_mps2 and the grade (V3).
AxleLoads ComputeAxleLoads(const VehicleDef& def, const VehicleState& state, double grade_rad);

/// Magic Formula (V4) for slip angle `slip_rad`, per unit of peak force: sin(C atan(B a - E (B a - atan(B a)))) * D.
double MagicFormula(const PacejkaDef& tyre, double slip_rad);

/// Slip angle at which the Magic Formula `tyre` peaks (C atan(x - E (x - atan x)) = pi/2, x = B a), in rad
/// (> 0; for C <= 1 the curve never peaks and the slip of 90 % of its asymptote is returned). 0.24 for the
/// default front tyre.
double PeakSlipRad(const PacejkaDef& tyre);

/// Front axle's lateral tyre force from the state alone (free rolling: no drive, no brake), in the tyre
/// frame, left positive, in N: -mu Fz_front MF(alpha_front) (V2, V4), with the loads of (V3).
double FrontLateralForceN(const VehicleDef& def, const VehicleState& state, double grade_rad = 0);

/// Self-aligning torque of the front axle about the steering axis, z up (counter-clockwise seen from
/// above, i.e. steering left, positive), in N m: Mz = -(t_p(alpha) + t_m) Fy_front, with
/// t_p(alpha) = pneumatic_trail_m max(0, 1 - |alpha| / PeakSlipRad(tyre_front)) and t_m = mechanical_trail_m.
/// It turns the wheels back towards straight: in a left turn Fy_front > 0 and Mz < 0. Pure. Typical
/// |Mz| 0..300 N m for a mid-size car. docs/INPUTS.md, "Force feedback".
double FrontAligningTorqueNm(const VehicleDef& def, const VehicleState& state, double grade_rad = 0);

/// Longitudinal force at the wheels from the engine at full throttle and body speed `vx_mps`, in N (V6).
double MaxDriveForceN(const VehicleDef& def, double vx_mps);

/// Advances the state by `dt_s` seconds (split into substeps of at most max_substep_s) on a road of
/// grade `grade_rad` (positive uphill along the body x axis). Pure and deterministic.
VehicleState Step(const VehicleDef& def, const VehicleState& state, const VehicleInput& input, double dt_s,
                  double grade_rad = 0);

/// World-frame kinematic state for publishing, with its origin at the rear-axle centre (the CG shifted
/// back by cg_to_rear_m), stamped `stamp_ns`. The road is taken as flat for the pose (z = 0).
KinematicState ToKinematic(const VehicleDef& def, const VehicleState& state, int64_t stamp_ns);

}  // namespace platoon::vehicle
