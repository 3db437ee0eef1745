#include "dr_courses.hpp"

#include "platoon/vehicle/single_track.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace platoon::testing {
namespace {

constexpr double kGravityMps2 = 9.80665;
constexpr double kFrameHz = 60.0;
constexpr double kTwoPi = 2.0 * std::numbers::pi;

/// Smoothstep change of `delta` over [start, start + length] of its argument (time in s or distance in m).
struct Ramp {
  double start = 0;
  double length = 1;
  double delta = 0;
  double At(double x) const {
    const double u = std::clamp((x - start) / length, 0.0, 1.0);
    return delta * u * u * (3.0 - 2.0 * u);
  }
};

double Sum(const std::vector<Ramp>& ramps, double x) {
  double sum = 0;
  for (const Ramp& r : ramps) sum += r.At(x);
  return sum;
}

/// What the driver means to do on one course: a curvature profile along the road and a speed
/// profile in time and along the road, followed by steering and pedals.
struct CourseScript {
  std::string name;
  double duration_s = 30;
  double start_speed_mps = 0;
  std::vector<Ramp> curvature_by_distance;  ///< Target path curvature, 1/m, left positive.
  std::vector<Ramp> speed_by_time;          ///< Target speed changes, m/s.
  std::vector<Ramp> speed_by_distance;      ///< Target speed changes, m/s.
  double max_accel_mps2 = 2.5;              ///< Most the driver asks of the throttle.
  double max_decel_mps2 = 5.0;              ///< Most the driver asks of the brake.
};

/// Curvature ramps of a lane change starting at `s_m` over `length_m`, `offset_m` to the left
/// (negative: right): curvature eases to +k, swings to -k and back to 0; the lateral offset is k L^2 / 8.
void AddLaneChange(std::vector<Ramp>& ramps, double s_m, double length_m, double offset_m) {
  const double k = 8.0 * offset_m / (length_m * length_m);
  ramps.push_back({s_m, length_m / 4, k});
  ramps.push_back({s_m + length_m / 4, length_m / 2, -2 * k});
  ramps.push_back({s_m + 3 * length_m / 4, length_m / 4, k});
}

CourseScript Script(std::string name, double duration_s, double start_speed_mps) {
  CourseScript c;
  c.name = std::move(name);
  c.duration_s = duration_s;
  c.start_speed_mps = start_speed_mps;
  return c;
}

std::vector<CourseScript> Scripts() {
  std::vector<CourseScript> out;
  {
    // Two lane changes at 25 m/s (3.5 m over 110 m, then back over 130 m), speeding up to overtake.
    CourseScript c = Script("lane_change", 30, 25);
    AddLaneChange(c.curvature_by_distance, 100, 110, 3.5);
    AddLaneChange(c.curvature_by_distance, 480, 130, -3.5);
    c.speed_by_time = {{6, 3, 2.5}, {20, 4, -3.0}};
    out.push_back(c);
  }
  {
    // Urban 14 m/s: brake to a stop (peak ~4.5 m/s^2), wait 2.5 s, pull away to 12 m/s through bends.
    CourseScript c = Script("stop_and_go", 25, 14);
    c.curvature_by_distance = {{40, 20, 1.0 / 150}, {80, 20, -1.0 / 150}, {100, 20, -1.0 / 120}, {150, 20, 1.0 / 120}};
    c.speed_by_time = {{3, 4.5, -14}, {10, 7, 12}};
    out.push_back(c);
  }
  {
    // S-bends at 13-17 m/s: left R 60, right R 45, left R 60, right R 80, slowing for the tight one.
    CourseScript c = Script("s_bends", 28, 17);
    c.curvature_by_distance = {{60, 25, 1.0 / 60},  {130, 40, -1.0 / 60 - 1.0 / 45}, {210, 40, 1.0 / 45 + 1.0 / 60},
                               {290, 30, -1.0 / 60 - 1.0 / 80}, {360, 30, 1.0 / 80}};
    c.speed_by_distance = {{90, 40, -4.0}, {220, 50, 3.0}, {300, 40, -1.5}};
    out.push_back(c);
  }
  {
    // Roundabout: brake from 14 to 6.5 m/s, deflect right into it, circle left on R 16 m for ~330 deg,
    // deflect right out of it and accelerate away.
    CourseScript c = Script("roundabout", 32, 14);
    const double r_in = 1.0 / 15, r_ring = 1.0 / 16;
    const double ring_start = 78, ring_length = 5.76 / r_ring * 0.98;
    c.curvature_by_distance = {{68, 6, -r_in},
                               {ring_start - 4, 8, r_in + r_ring},
                               {ring_start + ring_length, 8, -r_ring - r_in},
                               {ring_start + ring_length + 12, 6, r_in}};
    c.speed_by_distance = {{15, 45, -7.5}, {ring_start + ring_length + 10, 60, 7.5}};
    out.push_back(c);
  }
  {
    // Urban right turn: approach at 8 m/s, stop at the line, wait, pull away turning right on R 9 m.
    CourseScript c = Script("right_turn", 20, 8);
    c.speed_by_time = {{1, 3.5, -8}, {6.5, 6, 11}};
    c.curvature_by_distance = {{19, 5, -1.0 / 9}, {19 + 5 + 9.5, 5, 1.0 / 9}};
    c.max_accel_mps2 = 2.0;
    out.push_back(c);
  }
  return out;
}

/// Drives the single-track model through `script` at 1 kHz and records the published states.
Course Drive(const CourseScript& script) {
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  const double m = def.mass_kg, wheelbase = def.WheelbaseM();
  // Steady-state understeer gradient from the tyres' cornering stiffness (B C D mu Fz per axle):
  // delta = curvature (L + K v^2), so the driver steers more as speed grows.
  const double fz_front = m * kGravityMps2 * def.cg_to_rear_m / wheelbase;
  const double fz_rear = m * kGravityMps2 * def.cg_to_front_m / wheelbase;
  const double c_front = def.tyre_front.b * def.tyre_front.c * def.tyre_front.d * def.mu * fz_front;
  const double c_rear = def.tyre_rear.b * def.tyre_rear.c * def.tyre_rear.d * def.mu * fz_rear;
  const double understeer = m / wheelbase * (def.cg_to_rear_m / c_front - def.cg_to_front_m / c_rear);

  Course course;
  course.name = script.name;
  const int64_t steps = static_cast<int64_t>(std::llround(script.duration_s * 1e9)) / kCourseStepNs;
  course.states.reserve(static_cast<size_t>(steps) + 1);
  vehicle::VehicleState s;
  s.vx_mps = script.start_speed_mps;
  double pedal_accel = 0;  // the driver's foot: lags what they mean to do
  const double h = NsToS(kCourseStepNs);
  double prev_target = script.start_speed_mps;
  for (int64_t i = 0; i <= steps; ++i) {
    course.states.push_back(vehicle::ToKinematic(def, s, i * kCourseStepNs));
    const double t = NsToS(i * kCourseStepNs);
    const double v = std::max(s.vx_mps, 0.0);

    // Steering: the road's curvature plus the small corrections a driver keeps making (about
    // 0.1 m/s^2 of lateral acceleration at 0.2-0.6 Hz, none at a standstill).
    const double weave = 0.1 / std::max(v * v, 16.0) * (std::sin(kTwoPi * 0.23 * t) + 0.5 * std::sin(kTwoPi * 0.61 * t + 1.3));
    const double curvature = Sum(script.curvature_by_distance, s.distance_m) + (v > 1.0 ? weave : 0.0);
    vehicle::VehicleInput in;
    in.steer = std::atan(curvature * (wheelbase + understeer * v * v)) / def.max_steer_rad;

    // Speed: the target profile with a slow +-0.2 m/s wander while moving; the pedal asks for a
    // feed-forward plus proportional acceleration, through a 0.3 s lag.
    double target = script.start_speed_mps + Sum(script.speed_by_time, t) + Sum(script.speed_by_distance, s.distance_m);
    target = std::max(target, 0.0);
    if (target > 3.0) target += 0.2 * std::sin(kTwoPi * 0.11 * t + 0.4);
    const double target_rate = (target - prev_target) / h;
    prev_target = target;
    const double wanted = std::clamp(target_rate + 0.8 * (target - v), -script.max_decel_mps2, script.max_accel_mps2);
    pedal_accel += (wanted - pedal_accel) * h / 0.3;
    const double resist_n = def.rolling_resistance * m * kGravityMps2 + 0.5 * def.air_density_kgm3 * def.drag_area_m2 * v * v;
    if (target < 0.05 && v < 0.5) {
      in.brake = 0.3;  // holding at the line
      pedal_accel = 0;
    } else if (pedal_accel >= 0) {
      in.throttle = std::clamp((m * pedal_accel + resist_n) / vehicle::MaxDriveForceN(def, v), 0.0, 1.0);
    } else {
      in.brake = std::clamp((-m * pedal_accel - resist_n) * def.wheel_radius_m / def.max_brake_torque_nm, 0.0, 1.0);
    }
    s = vehicle::Step(def, s, in, h);
  }
  return course;
}

bool InOutage(const std::vector<std::pair<int64_t, int64_t>>& outages, int64_t t_ns, int64_t tail_ns) {
  return std::any_of(outages.begin(), outages.end(),
                     [&](const auto& o) { return t_ns >= o.first && t_ns < o.second + tail_ns; });
}

}  // namespace

const KinematicState& Course::At(int64_t t_ns) const {
  assert(!states.empty());
  const int64_t i = std::clamp<int64_t>(t_ns / kCourseStepNs, 0, static_cast<int64_t>(states.size()) - 1);
  return states[static_cast<size_t>(i)];
}

double Course::DurationS() const { return NsToS(static_cast<int64_t>(states.size() - 1) * kCourseStepNs); }

std::vector<Course> DrivenCourses() {
  std::vector<Course> out;
  for (const CourseScript& script : Scripts()) out.push_back(Drive(script));
  return out;
}

CourseRunResult RunCourse(const Course& course, const CourseRunDef& def) {
  CourseRunResult out;
  dr::SendPolicy policy(def.policy);
  dr::TrackDef track_def = def.track;
  track_def.model = def.policy.model;
  dr::RemoteTrack track(track_def);
  transport::FaultInjector<KinematicState> net(def.faults);
  bool hold_valid = false;
  KinematicState hold;
  double next_fixed_s = 0.0, next_frame_s = 0.0;
  const int64_t tail_ns = SToNs(def.recovery_s);

  const int64_t steps = static_cast<int64_t>(course.states.size()) - 1;
  for (int64_t i = 0; i <= steps; ++i) {
    const int64_t now = i * kCourseStepNs;
    const KinematicState& truth = course.states[static_cast<size_t>(i)];

    // Sender; a state sent inside an outage never reaches the network.
    bool send = false;
    if (def.fixed_rate_hz > 0) {
      send = NsToS(now) >= next_fixed_s;
      if (send) next_fixed_s += 1.0 / def.fixed_rate_hz;
    } else {
      send = policy.ShouldSend(truth, now);
    }
    if (send) {
      policy.MarkSent(truth);
      ++out.packets_sent;
      if (!InOutage(def.outages, now, 0)) net.Offer(truth, now);
    }

    // Receivers.
    while (auto msg = net.Poll(now)) {
      track.OnUpdate(*msg, now);
      if (!hold_valid || msg->stamp_ns > hold.stamp_ns) hold = *msg;
      hold_valid = true;
    }

    // 60 Hz display frame.
    if (NsToS(now) < next_frame_s) continue;
    next_frame_s += 1.0 / kFrameHz;
    if (!track.HasState()) continue;
    const double err = (track.At(now).position_m - truth.pose.position_m).norm();
    out.errors_m.push_back(err);
    out.hold_errors_m.push_back((hold.pose.position_m - truth.pose.position_m).norm());
    if (InOutage(def.outages, now, tail_ns)) out.outage_errors_m.push_back(err);
  }
  out.send = policy.Stats();
  out.track = track.Stats();
  return out;
}

std::vector<std::pair<int64_t, int64_t>> PeriodicOutages(double duration_s, double phase_s) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (double t = phase_s + 1.0; t + 0.5 <= duration_s; t += 2.0) out.emplace_back(SToNs(t), SToNs(t + 0.5));
  return out;
}

std::vector<double> OutagePhasesS() { return {0.0, 0.5, 1.0, 1.5}; }

transport::FaultDef TenPercentLoss() {
  transport::FaultDef f;
  f.drop_probability = 0.1;
  f.delay_ms = 2.0;
  f.jitter_ms = 1.0;
  f.seed = 42;
  return f;
}

transport::FaultDef LanDelay() {
  transport::FaultDef f;
  f.delay_ms = 2.0;
  f.jitter_ms = 1.0;
  f.seed = 7;
  return f;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

double MaxOf(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

}  // namespace platoon::testing
