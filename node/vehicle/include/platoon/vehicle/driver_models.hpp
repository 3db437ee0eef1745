#pragma once
/// Driver models (seed 004 §4.2 "driver model", seed 000 §2.c): pure pursuit path tracking with a
/// speed-dependent look-ahead, the Intelligent Driver Model for car following, and MOBIL for lane
/// changes. Pure functions of their inputs; equations in docs/VEHICLES.md.

#include <string>

namespace platoon::vehicle {

/// Pure pursuit settings.
struct PurePursuitDef {
  double lookahead_min_m = 4.0;     ///< Look-ahead at standstill, in m.
  double lookahead_gain_s = 0.6;    ///< Look-ahead grows by this many metres per m/s of speed, in s.
  double lookahead_max_m = 40.0;    ///< Upper bound of the look-ahead, in m.
};
/// Default pure pursuit settings.
inline PurePursuitDef DefaultPurePursuitDef() { return PurePursuitDef{}; }

/// Look-ahead distance at `speed_mps`, in m: clamp(min + gain * v, min, max).
double LookaheadM(const PurePursuitDef& def, double speed_mps);

/// Front-wheel steering angle, in rad, that puts the rear axle on a circle through the goal point.
/// The goal is given in the vehicle frame (x forward, y left, origin at the rear axle);
/// `wheelbase_m` is the axle distance. Seed 000 §2.c: delta = atan(2 L sin(alpha) / l_d).
double PurePursuitSteerRad(double goal_x_m, double goal_y_m, double wheelbase_m);

/// Intelligent Driver Model settings (Treiber, Hennecke, Helbing 2000).
struct IdmDef {
  double desired_speed_mps = 15.0;  ///< v0: free-road speed, in m/s (the lane's limit if lower).
  double time_headway_s = 1.5;      ///< T: safe time headway, in s.
  double min_gap_m = 2.0;           ///< s0: jam distance, in m.
  double max_accel_mps2 = 1.5;      ///< a: maximum acceleration, in m/s^2.
  double comfort_decel_mps2 = 2.0;  ///< b: comfortable deceleration, in m/s^2.
  double exponent = 4.0;            ///< delta: acceleration exponent.
};
/// Default IDM settings (urban car).
inline IdmDef DefaultIdmDef() { return IdmDef{}; }

/// IDM acceleration, in m/s^2, for speed `v`, bumper-to-bumper `gap_m` to the leader and approach rate
/// `dv_mps` = v - v_leader. A gap of +infinity means a free road.
double IdmAccel(const IdmDef& def, double v_mps, double gap_m, double dv_mps);

/// MOBIL lane-change settings (Kesting, Treiber, Helbing 2007).
struct MobilDef {
  double politeness = 0.3;           ///< p: weight of the other drivers' advantage.
  double threshold_mps2 = 0.2;       ///< Delta a_th: minimum own advantage to change, in m/s^2.
  double safe_decel_mps2 = 4.0;      ///< b_safe: the new follower may be made to brake at most this hard.
  double keep_right_bias_mps2 = 0.1; ///< Bias toward the right lane (European rule), in m/s^2.
};
/// Default MOBIL settings.
inline MobilDef DefaultMobilDef() { return MobilDef{}; }

/// IDM accelerations around one possible lane change, each computed with IdmAccel.
struct LaneChangeAccels {
  double self_now = 0;        ///< a_c: own acceleration in the current lane.
  double self_after = 0;      ///< a~_c: own acceleration in the target lane.
  double new_follower_now = 0;    ///< a_n: target-lane follower, before.
  double new_follower_after = 0;  ///< a~_n: target-lane follower, after (behind us).
  double old_follower_now = 0;    ///< a_o: current-lane follower, before (behind us).
  double old_follower_after = 0;  ///< a~_o: current-lane follower, after.
};

/// MOBIL decision: safe (new follower brakes no harder than b_safe) and worth it
/// (a~_c - a_c + p (a~_n - a_n + a~_o - a_o) > threshold - bias, bias > 0 toward the right).
bool MobilAllows(const MobilDef& def, const LaneChangeAccels& a, bool toward_right);

/// Checks the definitions; "" when valid, else a message naming the field.
std::string ValidateIdmDef(const IdmDef& def);

}  // namespace platoon::vehicle
