// Dead reckoning on real courses: the default model and send policy over the driven course
// set (tests/support/dr_courses.hpp) meet the acceptance figures on every course. The benchmark
// bench/dr_bench.cpp prints the same figures for every model; docs/BENCHMARKS.md holds the table.
#include "platoon/dead_reckoning.hpp"
#include "platoon/dead_reckoning_kinds.hpp"

#include "../support/dr_courses.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace {

using platoon::KinematicState;
using platoon::SToNs;
using platoon::Vec3;
using platoon::testing::Course;
using platoon::testing::CourseRunDef;
using platoon::testing::CourseRunResult;
namespace dr = platoon::dr;
namespace pt = platoon::testing;

/// The course set, driven once for every test in this file.
const std::vector<Course>& Courses() {
  static const std::vector<Course> courses = pt::DrivenCourses();
  return courses;
}

/// Receiver errors through 500 ms outages at every phase, the default policy and model.
std::vector<double> OutageErrors(const Course& c) {
  std::vector<double> errors;
  for (double phase : pt::OutagePhasesS()) {
    CourseRunDef def;
    def.faults = pt::LanDelay();
    def.outages = pt::PeriodicOutages(c.DurationS(), phase);
    const CourseRunResult r = pt::RunCourse(c, def);
    REQUIRE(!def.outages.empty());
    errors.insert(errors.end(), r.outage_errors_m.begin(), r.outage_errors_m.end());
  }
  return errors;
}

}  // namespace

TEST_CASE("dead reckoning courses: the set holds five driven courses with stops, bends and lane changes") {
  const std::vector<Course>& courses = Courses();
  REQUIRE(courses.size() == 5);
  for (const Course& c : courses) {
    CAPTURE(c.name);
    CHECK(c.DurationS() >= 20.0);
    // Physically consistent: the recorded velocity is the derivative of the recorded position.
    double worst_mps = 0;
    for (size_t i = 1; i + 1 < c.states.size(); i += 97) {
      const Vec3 fd = (c.states[i + 1].pose.position_m - c.states[i - 1].pose.position_m) / 0.002;
      worst_mps = std::max(worst_mps, (fd - c.states[i].velocity_mps).norm());
    }
    CHECK(worst_mps < 0.05);
  }
  // Two courses stop dead and pull away; every course turns.
  int stops = 0;
  for (const Course& c : courses) {
    bool stopped = false;
    double max_yaw_rate = 0;
    for (const KinematicState& s : c.states) {
      stopped = stopped || s.velocity_mps.norm() < 1e-6;
      max_yaw_rate = std::max(max_yaw_rate, std::abs(s.angular_velocity_radps.z()));
    }
    stops += stopped ? 1 : 0;
    CHECK(max_yaw_rate > 0.05);
    CHECK(c.states.back().velocity_mps.norm() > 5.0);
  }
  CHECK(stops == 2);
}

TEST_CASE("dead reckoning courses: vehicles use the model the policy defaults to") {
  CHECK(dr::ModelForKind(platoon::protocol::EntityKind::kCar) == dr::DefaultSendPolicyDef().model);
  CHECK(dr::DefaultTrackDef().model == dr::DefaultSendPolicyDef().model);
}

TEST_CASE("dead reckoning courses: p99 error under 10% loss is within 5 cm and 10x better than hold-last") {
  for (const Course& c : Courses()) {
    CourseRunDef def;
    def.faults = pt::TenPercentLoss();
    const CourseRunResult r = pt::RunCourse(c, def);
    const double p99 = pt::Percentile(r.errors_m, 0.99);
    const double hold_p99 = pt::Percentile(r.hold_errors_m, 0.99);
    CAPTURE(c.name);
    MESSAGE(c.name << ", 10% loss: p99 " << p99 << " m, max " << pt::MaxOf(r.errors_m) << " m, hold-last p99 "
                   << hold_p99 << " m, packets " << r.packets_sent);
    CHECK(r.track.accepted < r.packets_sent);  // some were lost
    CHECK(p99 <= 0.05);
    CHECK(hold_p99 >= 10.0 * p99);
  }
}

TEST_CASE("dead reckoning courses: through 500 ms outages p99 stays within 0.3 m") {
  for (const Course& c : Courses()) {
    const std::vector<double> errors = OutageErrors(c);
    const double p99 = pt::Percentile(errors, 0.99);
    CAPTURE(c.name);
    MESSAGE(c.name << ", 500 ms outages: p99 " << p99 << " m, max " << pt::MaxOf(errors) << " m over "
                   << errors.size() << " frames");
    CHECK(errors.size() > 100);
    CHECK(p99 <= 0.3);
  }
}

TEST_CASE("dead reckoning courses: threshold sending needs 5x fewer packets than fixed 60 Hz at the same bound") {
  for (const Course& c : Courses()) {
    CourseRunDef threshold;
    threshold.faults = pt::TenPercentLoss();
    CourseRunDef fixed = threshold;
    fixed.fixed_rate_hz = 60.0;
    const CourseRunResult rt = pt::RunCourse(c, threshold);
    const CourseRunResult rf = pt::RunCourse(c, fixed);
    const double ratio = static_cast<double>(rf.packets_sent) / static_cast<double>(rt.packets_sent);
    CAPTURE(c.name);
    MESSAGE(c.name << ": threshold " << rt.packets_sent << " packets (" << rt.send.horizon << " for the horizon), 60 Hz "
                   << rf.packets_sent << "; ratio " << ratio);
    CHECK(pt::Percentile(rt.errors_m, 0.99) <= 0.05);
    CHECK(pt::Percentile(rf.errors_m, 0.99) <= 0.05);
    CHECK(ratio >= 5.0);
  }
}

TEST_CASE("dead reckoning courses: a run over a course is deterministic") {
  const Course& c = Courses().at(1);
  CourseRunDef def;
  def.faults = pt::TenPercentLoss();
  def.outages = pt::PeriodicOutages(c.DurationS(), 0.5);
  const CourseRunResult a = pt::RunCourse(c, def);
  const CourseRunResult b = pt::RunCourse(c, def);
  CHECK(a.errors_m == b.errors_m);
  CHECK(a.packets_sent == b.packets_sent);
  CHECK(pt::DrivenCourses().at(1).states == c.states);
}
