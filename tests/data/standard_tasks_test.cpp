// Scoring of the standard tasks (issue 43, "Standard tasks"): lane change test mean deviation against a hand
// computation, detection response task hits and response times at the 100 ms and 2500 ms window edges, car
// following gain, delay and coherence of a synthetic follower with a known response.
#include "platoon/data/standard_tasks.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

namespace standard_tasks_test_detail {

using platoon::data::LateralPoint;
using platoon::data::LctDef;
using platoon::data::LctSign;

constexpr double StkTwoPi = 2.0 * std::numbers::pi;

// Lane centre from first principles: lane -k spans [-k w, -(k-1) w] right of the reference line.
double StCentre(int lane, double w) { return -(std::abs(lane) - 0.5) * w; }

// A driver who jumps to the sign's lane exactly at the sign (a step 1 mm long), sampled every `ds` m.
std::vector<LateralPoint> StStepDriver(const LctDef& def, const std::vector<LctSign>& signs, double to_s, double ds) {
  std::vector<LateralPoint> trace;
  int lane = def.start_lane;
  size_t next = 0;
  for (double s = 0; s <= to_s + 1e-9; s += ds) {
    while (next < signs.size() && signs[next].s_m <= s) {
      // The old lane up to the sign, the new one 1 mm after it.
      trace.push_back({signs[next].s_m, StCentre(lane, def.lane_width_m)});
      lane = signs[next].lane;
      trace.push_back({signs[next].s_m + 0.001, StCentre(lane, def.lane_width_m)});
      ++next;
    }
    if (trace.empty() || s > trace.back().s_m) trace.push_back({s, StCentre(lane, def.lane_width_m)});
  }
  return trace;
}

}  // namespace standard_tasks_test_detail

using namespace standard_tasks_test_detail;
namespace data = platoon::data;

TEST_CASE("lane change test: the normative path changes lanes from the onset over the change length") {
  LctDef def = data::DefaultLctDef();
  def.lane_width_m = 3.6;
  def.onset_before_sign_m = 12;
  def.change_length_m = 25;
  def.start_lane = -2;
  const std::vector<LctSign> signs{{150, -1}, {300, -1}, {450, -3}};
  const auto path = data::LctNormativePath(def, signs);
  // The sign at 300 m points to the lane already driven: two changes, two points each.
  REQUIRE(path.size() == 4);
  CHECK(path[0].s_m == doctest::Approx(150 - 12));
  CHECK(path[0].lateral_m == doctest::Approx(-1.5 * 3.6));
  CHECK(path[1].s_m == doctest::Approx(150 - 12 + 25));
  CHECK(path[1].lateral_m == doctest::Approx(-0.5 * 3.6));
  CHECK(path[3].lateral_m == doctest::Approx(-2.5 * 3.6));
  // Half-way through the first change the path is between the lanes; before and after it holds them.
  CHECK(data::PathLateralAt(path, 150 - 12 + 12.5) == doctest::Approx(-3.6));
  CHECK(data::PathLateralAt(path, 0) == doctest::Approx(-1.5 * 3.6));
  CHECK(data::PathLateralAt(path, 3000) == doctest::Approx(-2.5 * 3.6));
}

TEST_CASE("lane change test: unsorted signs and overlapping changes are refused with the sign named") {
  const LctDef def = data::DefaultLctDef();
  CHECK_THROWS_WITH_AS(data::LctNormativePath(def, {{300, -1}, {150, -3}}),
                       doctest::Contains("sign 2: expected signs sorted by s"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(data::LctNormativePath(def, {{150, -1}, {160, -3}}), doctest::Contains("sign 2 at 160 m"),
                       std::invalid_argument);
  LctDef bad = def;
  bad.lane_width_m = 0;
  CHECK(data::ValidateLctDef(bad).find("lane_width_m") != std::string::npos);
}

TEST_CASE("lane change test: a driver on the normative path 0.3 m to the left scores 0.3 m") {
  const LctDef def = data::DefaultLctDef();
  const std::vector<LctSign> signs{{150, -1}, {300, -3}, {450, -2}, {600, -1}};
  const auto path = data::LctNormativePath(def, signs);
  std::vector<LateralPoint> trace;
  // Sampled every 0.7 m and at the path's corners, so the trace is the path shifted exactly.
  std::vector<double> at;
  for (double s = 0; s <= 750; s += 0.7) at.push_back(s);
  for (const auto& p : path) at.push_back(p.s_m);
  std::sort(at.begin(), at.end());
  for (double s : at) trace.push_back({s, data::PathLateralAt(path, s) + 0.3});
  const auto score = data::ScoreLct(trace, path, 0, 750);
  CHECK(score.mean_deviation_m == doctest::Approx(0.3).epsilon(1e-9));
  CHECK(score.length_m == doctest::Approx(trace.back().s_m));
}

TEST_CASE("lane change test: a driver who jumps lanes at each sign scores the hand-computed triangles") {
  LctDef def = data::DefaultLctDef();
  def.onset_before_sign_m = 10;
  def.change_length_m = 20;
  const std::vector<LctSign> signs{{150, -1}, {300, -3}, {450, -3}, {600, -2}};
  const auto path = data::LctNormativePath(def, signs);
  const auto trace = StStepDriver(def, signs, 750, 0.5);
  // By hand: a change of dy starting 10 m before the sign over 20 m, against a jump at the sign, deviates by two
  // triangles of base 10 m and height dy/2: 10 * dy / 2 in all, for each change.
  double area = 0;
  int lane = def.start_lane;
  for (const auto& sign : signs) {
    const double dy = std::fabs(StCentre(sign.lane, def.lane_width_m) - StCentre(lane, def.lane_width_m));
    area += 2 * 0.5 * 10.0 * (dy / 2);
    lane = sign.lane;
  }
  const double hand = area / 750.0;
  const auto score = data::ScoreLct(trace, path, 0, 750);
  CHECK(score.mean_deviation_m == doctest::Approx(hand).epsilon(0.01));
  CHECK(score.samples == trace.size());
}

TEST_CASE("lane change test: a sine weave about the lane centre scores 2 a over pi") {
  const LctDef def = data::DefaultLctDef();
  const auto path = data::LctNormativePath(def, {});
  const double a = 0.4, wavelength = 120;
  std::vector<LateralPoint> trace;
  for (double s = 0; s <= 10 * wavelength + 1e-9; s += 0.5)
    trace.push_back({s, StCentre(def.start_lane, def.lane_width_m) + a * std::sin(StkTwoPi * s / wavelength)});
  const auto score = data::ScoreLct(trace, path, 0, 10 * wavelength);
  CHECK(score.mean_deviation_m == doctest::Approx(2 * a / std::numbers::pi).epsilon(0.01));
  // A scored stretch the trace does not cover gives NaN.
  CHECK(std::isnan(data::ScoreLct(trace, path, 5000, 6000).mean_deviation_m));
}

TEST_CASE("detection response task: schedules draw onsets 3 to 5 s apart and repeat with the seed") {
  const auto def = data::DefaultDrtDef();
  const auto onsets = data::DrtSchedule(def, 7, 10, 610);
  REQUIRE(onsets.size() > 100);
  CHECK(onsets.front() == 10);
  CHECK(onsets.back() < 610);
  double sum = 0;
  for (size_t i = 1; i < onsets.size(); ++i) {
    const double gap = onsets[i] - onsets[i - 1];
    CHECK(gap >= 3.0);
    CHECK(gap <= 5.0);
    sum += gap;
  }
  // Uniform on [3, 5]: mean 4, standard error 0.58 / sqrt(n) (about 0.05 here).
  CHECK(sum / static_cast<double>(onsets.size() - 1) == doctest::Approx(4.0).epsilon(0.05));
  CHECK(data::DrtSchedule(def, 7, 10, 610) == onsets);
  CHECK(data::DrtSchedule(def, 8, 10, 610) != onsets);
}

TEST_CASE("detection response task: responses at the 100 ms and 2500 ms edges and one step either side") {
  const auto def = data::DefaultDrtDef();
  const double step = 0.001;  // the seat's dynamics step stamps key presses
  // One response per stimulus at these delays; NaN: no response.
  const std::vector<double> delays{0.1 - step, 0.1, 0.1 + step, 0.45, 2.5 - step, 2.5, 2.5 + step,
                                   std::nan("")};
  const auto onsets = data::DrtSchedule(def, 3, 5, 5 + 4.1 * static_cast<double>(delays.size()));
  REQUIRE(onsets.size() >= delays.size());
  std::vector<double> responses, expected_rts;
  std::vector<bool> expected_hit;
  for (size_t i = 0; i < onsets.size(); ++i) {
    const double d = i < delays.size() ? delays[i] : std::nan("");
    if (!std::isnan(d)) responses.push_back(onsets[i] + d);
    const bool hit = !std::isnan(d) && d >= def.min_response_s && d <= def.max_response_s;
    expected_hit.push_back(hit);
    if (hit) expected_rts.push_back(d);
  }
  const auto score = data::ScoreDrt(def, onsets, responses);
  REQUIRE(score.trials.size() == onsets.size());
  for (size_t i = 0; i < onsets.size(); ++i) {
    CAPTURE(i);
    CHECK(score.trials[i].hit == expected_hit[i]);
    if (expected_hit[i]) CHECK(std::fabs(score.trials[i].response_time_s - delays[i]) <= step);
  }
  CHECK(score.hits == expected_rts.size());
  CHECK(score.misses == onsets.size() - expected_rts.size());
  CHECK(score.hit_rate == doctest::Approx(static_cast<double>(expected_rts.size()) / static_cast<double>(onsets.size())));
  CHECK(score.premature == 1);  // 99 ms
  CHECK(score.extra == 1);      // 2501 ms
  double sum = 0;
  for (double v : expected_rts) sum += v;
  CHECK(score.mean_rt_s == doctest::Approx(sum / static_cast<double>(expected_rts.size())));
  std::sort(expected_rts.begin(), expected_rts.end());
  const size_t n = expected_rts.size();
  const double median = n % 2 ? expected_rts[n / 2] : 0.5 * (expected_rts[n / 2 - 1] + expected_rts[n / 2]);
  CHECK(score.median_rt_s == doctest::Approx(median));
}

TEST_CASE("detection response task: a premature press does not end the trial and a second press is extra") {
  const auto def = data::DefaultDrtDef();
  const std::vector<double> onsets{10.0, 14.0};
  const auto score = data::ScoreDrt(def, onsets, {9.0, 10.05, 10.4, 14.3, 14.6});
  CHECK(score.trials[0].hit);
  CHECK(score.trials[0].response_time_s == doctest::Approx(0.4));
  CHECK(score.trials[0].premature == 1);
  CHECK(score.trials[1].response_time_s == doctest::Approx(0.3));
  CHECK(score.extra == 2);  // before the first onset, and the second press at 14.6
  CHECK(score.hit_rate == doctest::Approx(1.0));
  CHECK_THROWS_AS(data::ScoreDrt(def, {14.0, 10.0}, {}), std::invalid_argument);
}

TEST_CASE("car following: a synthetic follower with known gain and delay gives them back within 1 percent") {
  data::CarFollowingDef def;
  def.frequency_hz = 0.05;
  def.periods_per_segment = 2;
  const double gain = 0.8, delay = 1.7, amp = 2.0, v0 = 22.0;
  // A disturbance at a frequency that is no harmonic of f, and uniform noise from a seeded generator.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> noise(-0.3, 0.3);
  std::vector<data::SpeedPair> samples;
  for (int i = 0; i <= 40000; ++i) {  // 400 s at 100 Hz: ten 40 s segments
    const double t = 100.0 + i * 0.01;
    const double lead = v0 + amp * std::sin(StkTwoPi * def.frequency_hz * t);
    const double follower = v0 - 1 + gain * amp * std::sin(StkTwoPi * def.frequency_hz * (t - delay)) +
                            0.2 * std::sin(StkTwoPi * 0.173 * t) + noise(rng);
    samples.push_back({t, lead, follower});
  }
  const auto score = data::ScoreCarFollowing(def, samples);
  CHECK(score.segments == 10);
  CHECK(score.gain == doctest::Approx(gain).epsilon(0.01));
  CHECK(score.delay_s == doctest::Approx(delay).epsilon(0.01));
  CHECK(score.lead_amplitude_mps == doctest::Approx(amp).epsilon(0.01));
  CHECK(score.coherence > 0.95);
  CHECK(score.coherence <= 1.0);
}

TEST_CASE("car following: a follower that ignores the lead has low coherence") {
  data::CarFollowingDef def;
  def.frequency_hz = 0.05;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> noise(-1.0, 1.0);
  std::vector<data::SpeedPair> samples;
  // Follower: a random walk smoothed over 2 s, independent of the lead; 20 segments.
  double v = 20;
  for (int i = 0; i <= 80000; ++i) {
    const double t = i * 0.01;
    v += 0.005 * (20 - v) + 0.05 * noise(rng);
    samples.push_back({t, 20 + 2 * std::sin(StkTwoPi * def.frequency_hz * t), v});
  }
  const auto score = data::ScoreCarFollowing(def, samples);
  CHECK(score.segments == 20);
  // Expected about 1 / segments for independent signals.
  CHECK(score.coherence < 0.5);
  // Too short for one segment: nothing to score.
  samples.resize(3000);
  CHECK(data::ScoreCarFollowing(def, samples).segments == 0);
  CHECK(std::isnan(data::ScoreCarFollowing(def, samples).gain));
}
