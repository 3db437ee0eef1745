// Dead reckoning on real courses: every model over the driven course set in one run,
// against hold-last (the static model) as the baseline. Per course and model: the receiver's
// position error at the 60 Hz display under 10 % loss, and through 500 ms outages placed every 2 s
// at four phases (so every instant of the course is inside one); packets sent by threshold against
// fixed 60 Hz at the same error bound. Deterministic: the figures do not depend on the machine.
#include "../tests/support/dr_courses.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace platoon;
using platoon::testing::Course;
using platoon::testing::CourseRunDef;
using platoon::testing::CourseRunResult;

namespace {

/// Largest |value| of a per-state quantity over a course.
template <class F>
double MaxAbs(const Course& c, F f) {
  double m = 0;
  for (const KinematicState& s : c.states) m = std::max(m, std::abs(f(s)));
  return m;
}

void PrintCourse(const Course& c) {
  const auto speed = [](const KinematicState& s) { return s.velocity_mps.norm(); };
  const auto along = [](const KinematicState& s) {
    const Vec3 fwd = s.pose.orientation * Vec3::UnitX();
    return s.acceleration_mps2.dot(fwd);
  };
  const auto lateral = [](const KinematicState& s) {
    const Vec3 left = s.pose.orientation * Vec3::UnitY();
    return s.acceleration_mps2.dot(left);
  };
  const auto yaw_rate = [](const KinematicState& s) { return s.angular_velocity_radps.z(); };
  double min_speed = 1e9;
  for (const KinematicState& s : c.states) min_speed = std::min(min_speed, speed(s));
  std::printf("%-12s %5.1f s  speed %5.2f..%5.2f m/s  |a_long| <= %4.2f  |a_lat| <= %4.2f m/s^2  |yaw rate| <= %4.2f rad/s\n",
              c.name.c_str(), c.DurationS(), min_speed, MaxAbs(c, speed), MaxAbs(c, along), MaxAbs(c, lateral),
              MaxAbs(c, yaw_rate));
}

double NsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

// What a sender pays for the send policy, on the courses' states at 60 Hz: ShouldSend each step, MarkSent
// when due. And the part this work changed, in the same run: the extrapolations of sent states (nine a
// step: now and lead_time_s ahead for the last four sends, horizon_s ahead for the newest), through
// PreparedState::At and, as the baseline, dr::Extrapolate from the raw state (the code before).
void PrintCost(const std::vector<Course>& courses, const dr::SendPolicyDef& def) {
  const int64_t step_ns = 16'666'667, lead_ns = SToNs(def.lead_time_s), horizon_ns = SToNs(def.horizon_s);
  double policy_ns = 0, sum = 0;
  uint64_t steps = 0, sends = 0;
  std::vector<std::pair<KinematicState, int64_t>> queries;  // (sent state, time) as Evaluate asks them
  for (int rep = 0; rep < 5; ++rep) {
    for (const Course& c : courses) {
      dr::SendPolicy policy(def);
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t t = 0; t < static_cast<int64_t>(c.DurationS() * 1e9); t += step_ns) {
        const KinematicState& truth = c.At(t);
        ++steps;
        if (policy.ShouldSend(truth, truth.stamp_ns)) {
          policy.MarkSent(truth);
          ++sends;
        }
      }
      policy_ns += NsSince(t0);
      if (rep > 0) continue;
      // The queries of one pass: each state sent so far (the last four), at the times Evaluate asks.
      std::vector<KinematicState> sent;
      dr::SendPolicy replay(def);
      for (int64_t t = 0; t < static_cast<int64_t>(c.DurationS() * 1e9); t += step_ns) {
        const KinematicState& truth = c.At(t);
        for (size_t i = 0; i < std::min<size_t>(4, sent.size()); ++i) {
          const KinematicState& ref = sent[sent.size() - 1 - i];
          queries.emplace_back(ref, truth.stamp_ns);
          queries.emplace_back(ref, truth.stamp_ns + lead_ns);
          if (i == 0) queries.emplace_back(ref, truth.stamp_ns + horizon_ns);
        }
        if (replay.ShouldSend(truth, truth.stamp_ns)) {
          replay.MarkSent(truth);
          sent.push_back(truth);
        }
      }
    }
  }
  // The same queries both ways; a prepared state is made once per sent state, as the policy does.
  std::vector<dr::PreparedState> prepared;
  prepared.reserve(queries.size());
  const KinematicState* last = nullptr;
  for (const auto& [ref, t] : queries) {
    if (last == nullptr || last->stamp_ns != ref.stamp_ns || prepared.empty()) prepared.emplace_back(def.model, ref);
    else prepared.push_back(prepared.back());
    last = &ref;
  }
  double raw_ns = 1e300, prep_ns = 1e300, raw_sum = 0, prep_sum = 0;
  for (int rep = 0; rep < 5; ++rep) {
    raw_sum = prep_sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& [ref, t] : queries) raw_sum += dr::Extrapolate(def.model, ref, t).position_m.x();
    raw_ns = std::min(raw_ns, NsSince(t0));
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < queries.size(); ++i) prep_sum += prepared[i].At(queries[i].second).position_m.x();
    prep_ns = std::min(prep_ns, NsSince(t0));
  }
  size_t differ = 0;  // poses that differ in any bit (must be none)
  for (size_t i = 0; i < queries.size(); ++i) {
    const Pose a = dr::Extrapolate(def.model, queries[i].first, queries[i].second), b = prepared[i].At(queries[i].second);
    differ += a.position_m != b.position_m || a.orientation.coeffs() != b.orientation.coeffs();
  }
  sum = raw_sum - prep_sum;
  std::printf("\nsend policy cost (this machine; %s, courses at 60 Hz, 5 passes): %.0f ns per vehicle step (ShouldSend, "
              "MarkSent when due), %llu steps, %llu sends\n",
              std::string(dr::ModelName(def.model)).c_str(), policy_ns / static_cast<double>(steps),
              static_cast<unsigned long long>(steps), static_cast<unsigned long long>(sends));
  std::printf("extrapolations of sent states, %zu as the policy asks them (best of 5): dr::Extrapolate %.1f ns each "
              "(baseline), PreparedState::At %.1f ns each, %.2fx; %zu poses differ (sums differ by %.3g)\n",
              queries.size(), raw_ns / static_cast<double>(queries.size()), prep_ns / static_cast<double>(queries.size()),
              raw_ns / prep_ns, differ, sum);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Dead reckoning on the driven course set: error under loss and outages, packets"};
  dr::TrackDef track = dr::DefaultTrackDef();
  std::vector<std::string> model_names = {"static", "rvw", "rvb", "cca"};
  app.add_option("--models", model_names, "Models to compare (names as dr::ModelFromName accepts them)");
  dr::SendPolicyDef policy = dr::DefaultSendPolicyDef();
  app.add_option("--horizon-s", policy.horizon_s, "Send policy outage horizon, in s (0: off)");
  app.add_option("--horizon-m", policy.horizon_threshold_m, "Send policy gap allowed at the horizon, in m");
  app.add_option("--max-correction-mps", track.max_correction_mps, "Receiver blend speed cap, in m/s");
  bool no_horizon_off = false;
  app.add_flag("--only-default-policy", no_horizon_off, "Skip the runs without the outage-horizon check");
  bool cost = false;
  app.add_flag("--cost", cost,
               "Also time the send policy on the courses (machine-dependent): the sender's cost per vehicle and "
               "step, and its extrapolations of the states it sent, prepared (dr::PreparedState) against "
               "dr::Extrapolate on the same states and times");
  CLI11_PARSE(app, argc, argv);
  std::vector<dr::Model> models;
  for (const std::string& n : model_names) models.push_back(dr::ModelFromName(n));

  const std::vector<Course> courses = testing::DrivenCourses();
  std::printf("courses (single-track model driven at 1 kHz; rear-axle states):\n");
  for (const Course& c : courses) PrintCourse(c);
  std::printf("\nsender at 1 kHz with the default send policy (5 cm, 2 deg, 20 ms lead, loss cover 3); 2 +- 1 ms delay;\n"
              "error |displayed - truth| at 60 Hz. loss: 10 %% random, seed 42. outage: 500 ms every 2 s at phases\n"
              "0/0.5/1/1.5 s, frames inside an outage and 0.5 s after it. 60 Hz: fixed-rate sending, 10 %% loss.\n"
              "hz: the policy's outage-horizon check (%.2f s, %.3f m) on or off. x hold: hold-last p99 / p99 on the\n"
              "same packets. ratio: 60 Hz packets / threshold packets.\n\n",
              policy.horizon_s, policy.horizon_threshold_m);
  std::printf("%-12s %-6s %-3s | %8s %8s %8s %9s %6s %6s | %8s %8s %8s | %6s %8s %6s\n", "course", "model", "hz", "loss p50",
              "p99", "max", "hold p99", "x hold", "pkts", "out p50", "p99", "max", "60Hz", "60Hz p99", "ratio");
  // The send policy with its outage-horizon check, and without it (horizon_s = 0): what the check buys.
  dr::SendPolicyDef no_horizon = policy;
  no_horizon.horizon_s = 0.0;
  for (const Course& c : courses) {
    for (dr::Model model : models) {
      for (const dr::SendPolicyDef* pol : {&no_horizon, &policy}) {
        if (pol == &no_horizon && no_horizon_off) continue;
        CourseRunDef loss;
        loss.policy = *pol;
        loss.policy.model = model;
        loss.track = track;
        loss.faults = testing::TenPercentLoss();
        const CourseRunResult rl = testing::RunCourse(c, loss);
        CourseRunDef fixed = loss;
        fixed.fixed_rate_hz = 60.0;
        const CourseRunResult rf = testing::RunCourse(c, fixed);
        std::vector<double> outage_errors;
        for (double phase : testing::OutagePhasesS()) {
          CourseRunDef out = loss;
          out.faults = testing::LanDelay();
          out.outages = testing::PeriodicOutages(c.DurationS(), phase);
          const CourseRunResult ro = testing::RunCourse(c, out);
          outage_errors.insert(outage_errors.end(), ro.outage_errors_m.begin(), ro.outage_errors_m.end());
        }
        const double p99 = testing::Percentile(rl.errors_m, 0.99);
        const double hold_p99 = testing::Percentile(rl.hold_errors_m, 0.99);
        std::printf("%-12s %-6s %-3s | %8.4f %8.4f %8.4f %9.3f %6.1f %6llu | %8.4f %8.4f %8.4f | %6llu %8.4f %6.2f\n",
                    c.name.c_str(), std::string(dr::ModelName(model)).c_str(), pol->horizon_s > 0 ? "on" : "off",
                    testing::Percentile(rl.errors_m, 0.5), p99,
                    testing::MaxOf(rl.errors_m), hold_p99, p99 > 0 ? hold_p99 / p99 : 0.0,
                    static_cast<unsigned long long>(rl.packets_sent), testing::Percentile(outage_errors, 0.5),
                    testing::Percentile(outage_errors, 0.99), testing::MaxOf(outage_errors),
                    static_cast<unsigned long long>(rf.packets_sent), testing::Percentile(rf.errors_m, 0.99),
                    static_cast<double>(rf.packets_sent) / static_cast<double>(rl.packets_sent));
      }
    }
  }
  if (cost) PrintCost(courses, policy);
  return 0;
}
