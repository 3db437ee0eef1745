// Driving metrics on synthetic traces whose answers are known in closed form (issue 43: "SDLP, THW and
// steering reversal rate on synthetic traces with known answers within 1 %").
#include "platoon/data/drive_metrics.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

namespace drive_metrics_test_detail {

using platoon::data::Column;
using platoon::data::DriveMetrics;
using platoon::data::DriveMetricsDef;
using platoon::data::MetricsRow;

constexpr double kTwoPi = 2.0 * std::numbers::pi;

// Rows every `dt` s over [0, duration] (both ends), each filled by `fill(t, row)`.
template <typename Fill>
std::vector<MetricsRow> Trace(double duration_s, double dt_s, Fill fill) {
  std::vector<MetricsRow> rows;
  const int n = static_cast<int>(std::lround(duration_s / dt_s));
  for (int i = 0; i <= n; ++i) {
    MetricsRow r;
    const double t = i * dt_s;
    r[Column::kSimTime] = t;
    fill(t, r);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace drive_metrics_test_detail

using namespace drive_metrics_test_detail;

TEST_CASE("drive metrics: SDLP of a sinusoidal weave is amplitude over sqrt 2 and a lane change adds nothing") {
  // 0.3 m weave at 0.1 Hz for 60 s (six periods), 100 rows/s; after 30 s the car is one lane further left, its
  // offset measured from that lane's centre: the pooled SD is that of the weave alone.
  const double amplitude = 0.3;
  const auto rows = Trace(60.0, 0.01, [&](double t, MetricsRow& r) {
    r[Column::kLane] = t < 30.0 ? -2 : -1;
    r[Column::kLaneOffset] = amplitude * std::sin(kTwoPi * 0.1 * t);
  });
  const DriveMetrics m = platoon::data::ComputeDriveMetrics(rows);
  const double expected = amplitude / std::sqrt(2.0);
  CAPTURE(m.sdlp_m);
  CHECK(m.sdlp_m == doctest::Approx(expected).epsilon(0.01));
  CHECK(m.lane_changes == 1);
  // The same trace with the offset measured from one lane's centre throughout would show the 3.5 m jump: the
  // pooling is what keeps the lane change out (and the metric could fail).
  auto jumped = rows;
  for (auto& r : jumped) {
    if (r[Column::kSimTime] >= 30.0) r[Column::kLaneOffset] += 3.5;
    r[Column::kLane] = -2;
  }
  CHECK(platoon::data::ComputeDriveMetrics(jumped).sdlp_m > 1.5);
}

TEST_CASE("drive metrics: time headway mean minimum and short share of a linear ramp") {
  // Time headway from 0.5 s to 2.5 s, linear over 100 s: mean 1.5 s, minimum 0.5 s, a quarter below 1 s.
  const auto rows = Trace(100.0, 0.01, [&](double t, MetricsRow& r) {
    r[Column::kTimeHeadway] = 0.5 + 2.0 * t / 100.0;
    r[Column::kTtc] = t < 50 ? std::nan("") : 40.0 - 0.5 * (t - 50.0);  // closing from 50 s: 40 s down to 15 s
  });
  const DriveMetrics m = platoon::data::ComputeDriveMetrics(rows);
  CHECK(m.thw_mean_s == doctest::Approx(1.5).epsilon(0.01));
  CHECK(m.thw_min_s == doctest::Approx(0.5).epsilon(0.01));
  CHECK(m.thw_below_share == doctest::Approx(0.25).epsilon(0.01));
  CHECK(m.ttc_min_s == doctest::Approx(15.0).epsilon(0.01));
  // No leader at all: no headway figures, not zeros.
  const auto alone = Trace(10.0, 0.01, [](double, MetricsRow& r) { r[Column::kSpeed] = 10; });
  const DriveMetrics a = platoon::data::ComputeDriveMetrics(alone);
  CHECK(std::isnan(a.thw_mean_s));
  CHECK(std::isnan(a.ttc_min_s));
}

TEST_CASE("drive metrics: steering reversals of a 0.2 Hz sine are two per period and the low-pass removes a 3 Hz ripple") {
  // Steering wheel angle -5 deg * cos(2 pi 0.2 t) (a minimum at t = 0 and at the end) for 60 s: 12 periods,
  // 12 turns up and 12 down of 10 deg each: 24 reversals, 24 per minute at a 2 deg gap, none at 12 deg. A
  // 3 Hz ripple of +-1.5 deg (3 deg peak to peak) on top: filtered at 0.6 Hz it stays below the gap; not
  // filtered (cut-off above Nyquist) every ripple counts.
  const double lock_deg = 450.0;
  for (const double rate_hz : {100.0, 1000.0}) {
    CAPTURE(rate_hz);
    const auto rows = Trace(60.0, 1.0 / rate_hz, [&](double t, MetricsRow& r) {
      const double angle = -5.0 * std::cos(kTwoPi * 0.2 * t) + 1.5 * std::sin(kTwoPi * 3.0 * t);
      r[Column::kSteer] = angle / lock_deg;
    });
    DriveMetricsDef def;
    def.steering_wheel_lock_deg = lock_deg;
    const DriveMetrics m = platoon::data::ComputeDriveMetrics(rows, def);
    CHECK(m.reversals == 24);
    CHECK(m.reversal_rate_per_min == doctest::Approx(24.0).epsilon(0.01));
    def.reversal_gap_deg = 12.0;
    CHECK(platoon::data::ComputeDriveMetrics(rows, def).reversals == 0);
    def.reversal_gap_deg = 2.0;
    def.reversal_cutoff_hz = 1e6;  // no filtering: 180 ripple periods, each a reversal up and down
    CHECK(platoon::data::ComputeDriveMetrics(rows, def).reversals > 300);
  }
  // The helper on plain angles agrees with the accumulator.
  std::vector<double> angles;
  for (int i = 0; i <= 6000; ++i) angles.push_back(-5.0 * std::cos(kTwoPi * 0.2 * i * 0.01));
  CHECK(platoon::data::CountSteeringReversals(angles, 0.01, 0.6, 2.0) == 24);
}

TEST_CASE("drive metrics: speed mean and SD time to line crossing and brake reaction time") {
  // Speed 20 + 2 sin(2 pi 0.05 t) m/s over 200 s (ten periods): mean 20, SD 2 / sqrt 2. The car drifts left at
  // 0.1 m/s from the lane centre for 5 s: with a 3.5 m lane and a 1.8 m car the wheel is 0.85 m from the line at
  // the start, 0.35 m at 5 s: smallest TLC 3.5 s. An event at 100 s, braking from 100.73 s on: 0.73 s.
  const auto rows = Trace(200.0, 0.01, [&](double t, MetricsRow& r) {
    r[Column::kSpeed] = 20.0 + 2.0 * std::sin(kTwoPi * 0.05 * t);
    r[Column::kLane] = -1;
    r[Column::kLaneOffset] = std::min(t, 5.0) * 0.1;
    r[Column::kBrake] = t >= 100.73 - 1e-9 ? 0.5 : 0.0;
  });
  DriveMetricsDef def;
  def.event_s = 100.0;
  const DriveMetrics m = platoon::data::ComputeDriveMetrics(rows, def);
  CHECK(m.speed_mean_mps == doctest::Approx(20.0).epsilon(0.001));
  CHECK(m.speed_sd_mps == doctest::Approx(2.0 / std::sqrt(2.0)).epsilon(0.01));
  CHECK(m.tlc_min_s == doctest::Approx(3.5).epsilon(0.01));
  CHECK(m.brake_reaction_s == doctest::Approx(0.73).epsilon(0.01));
  // Braking already at the event: no reaction time. No braking within the window: none either.
  def.event_s = 150.0;
  CHECK(std::isnan(platoon::data::ComputeDriveMetrics(rows, def).brake_reaction_s));
  def.event_s = 90.0;
  def.reaction_window_s = 5.0;
  CHECK(std::isnan(platoon::data::ComputeDriveMetrics(rows, def).brake_reaction_s));
  def.reaction_window_s = 11.0;
  CHECK(platoon::data::ComputeDriveMetrics(rows, def).brake_reaction_s == doctest::Approx(10.73).epsilon(0.001));
}

TEST_CASE("drive metrics: bad settings are named and rows out of order are ignored") {
  DriveMetricsDef def;
  def.vehicle_width_m = 4.0;
  CHECK(platoon::data::ValidateDriveMetricsDef(def).find("vehicle_width_m") == 0);
  CHECK_THROWS_AS(platoon::data::DriveMetricsAccumulator{def}, std::invalid_argument);
  def = DriveMetricsDef{};
  def.reversal_gap_deg = 0;
  CHECK(platoon::data::ValidateDriveMetricsDef(def).find("reversal_gap_deg") == 0);
  def = DriveMetricsDef{};
  CHECK(platoon::data::ValidateDriveMetricsDef(def).empty());

  platoon::data::DriveMetricsAccumulator a(def);
  MetricsRow r;
  r[Column::kSimTime] = 1.0;
  r[Column::kSpeed] = 10;
  a.Add(r);
  r[Column::kSimTime] = 0.5;  // earlier: ignored
  r[Column::kSpeed] = 1000;
  a.Add(r);
  r[Column::kSimTime] = 2.0;
  r[Column::kSpeed] = 12;
  a.Add(r);
  const DriveMetrics m = a.Result();
  CHECK(m.rows == 2);
  CHECK(m.duration_s == doctest::Approx(1.0));
  CHECK(m.speed_mean_mps == doctest::Approx(11.0));
  // The CSV row has a field for every header name.
  const std::string header = platoon::data::DriveMetricsCsvHeader(), row = platoon::data::DriveMetricsCsvRow(m);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
}
