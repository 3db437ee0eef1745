#pragma once
// Dead reckoning on real courses: truth trajectories made by driving the single-track
// vehicle model with a driver's steering and pedal inputs, and the closed loop a remote vehicle goes
// through (send policy -> lossy network -> RemoteTrack), with the receiver's error measured at the
// 60 Hz display rate. Shared by tests/shared/dead_reckoning_courses_test.cpp and bench/dr_bench.cpp.
// Deterministic: fixed seeds, no clock.

#include "platoon/dead_reckoning.hpp"
#include "platoon/transport/fault_injector.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace platoon::testing {

/// Truth of one course on a 1 kHz grid: the rear-axle state the vehicle publishes (ToKinematic).
struct Course {
  std::string name;                    ///< Short name, e.g. "lane_change".
  std::vector<KinematicState> states;  ///< states[i] is valid at i * kCourseStepNs.
  /// Truth at a time on the grid, clamped to the course.
  const KinematicState& At(int64_t t_ns) const;
  /// Length of the course, in s.
  double DurationS() const;
};

/// Step of the course grid and of the closed loop, in ns (1 kHz).
inline constexpr int64_t kCourseStepNs = 1'000'000;

/// The course set: lane changes at 25 m/s, braking to a stop and pulling away, S-bends, a roundabout
/// (enter, circle 3/4, exit) and an urban right turn from a stop; each 20-32 s, driven through the
/// single-track model with smoothly varying steering and pedals plus a driver's small corrections.
std::vector<Course> DrivenCourses();

/// One run of sender -> network -> receiver over a course.
struct CourseRunDef {
  dr::SendPolicyDef policy = dr::DefaultSendPolicyDef();  ///< Sender; its model is also the receiver's.
  dr::TrackDef track = dr::DefaultTrackDef();             ///< Receiver; model overridden by policy.model.
  transport::FaultDef faults;                             ///< Loss, delay and jitter (bursts: use outages).
  /// Outage windows [begin, end) in sim time, ns: every state sent inside one is lost.
  std::vector<std::pair<int64_t, int64_t>> outages;
  /// Frames this long after an outage ends still count as "through the outage", in s.
  double recovery_s = 0.5;
  double fixed_rate_hz = 0.0;  ///< > 0: send at this fixed rate instead of through the policy.
};

/// What the receiver displayed, per 60 Hz frame after its first update.
struct CourseRunResult {
  std::vector<double> errors_m;         ///< |displayed - truth| of the dead-reckoning receiver.
  std::vector<double> hold_errors_m;    ///< Same for a receiver that holds the last state received.
  std::vector<double> outage_errors_m;  ///< errors_m of the frames inside an outage or its recovery.
  uint64_t packets_sent = 0;            ///< States the sender put on the wire.
  dr::SendStats send;                   ///< Sender counters.
  dr::TrackStats track;                 ///< Receiver counters.
};

/// Runs `def` over `course`: the sender is evaluated at every 1 kHz step, the display sampled at 60 Hz.
CourseRunResult RunCourse(const Course& course, const CourseRunDef& def);

/// 500 ms outages every 2 s, starting at `phase_s`, over `duration_s`.
std::vector<std::pair<int64_t, int64_t>> PeriodicOutages(double duration_s, double phase_s);

/// Phases of PeriodicOutages that together put an outage over every instant of a course: 0, 0.5, 1, 1.5 s.
std::vector<double> OutagePhasesS();

/// 10 % independent loss with 2 +- 1 ms delay, fixed seed.
transport::FaultDef TenPercentLoss();

/// 2 +- 1 ms delay, no random loss (outage runs).
transport::FaultDef LanDelay();

/// Nearest-rank percentile of `values`, p in (0, 1]; 0 for an empty list.
double Percentile(std::vector<double> values, double p);

/// Largest value; 0 for an empty list.
double MaxOf(const std::vector<double>& values);

}  // namespace platoon::testing
