#include "platoon/data/drive_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <stdexcept>

namespace platoon::data {

namespace drive_metrics_detail {

constexpr double kSqrt2 = std::numbers::sqrt2;

// 2nd-order Butterworth low-pass by the bilinear transform (pre-warped): b0..b2, a1, a2 of
// y[n] = b0 x[n] + b1 x[n-1] + b2 x[n-2] - a1 y[n-1] - a2 y[n-2]. `pass` when the cut-off is too close to
// Nyquist to filter (then y = x).
struct Biquad {
  double b0 = 1, b1 = 0, b2 = 0, a1 = 0, a2 = 0;
};

Biquad LowPass(double cutoff_hz, double dt_s) {
  Biquad q;
  if (!(dt_s > 0) || cutoff_hz >= 0.45 / dt_s) return q;
  const double k = std::tan(std::numbers::pi * cutoff_hz * dt_s);
  const double norm = 1.0 / (1.0 + kSqrt2 * k + k * k);
  q.b0 = k * k * norm;
  q.b1 = 2.0 * q.b0;
  q.b2 = q.b0;
  q.a1 = 2.0 * (k * k - 1.0) * norm;
  q.a2 = (1.0 - kSqrt2 * k + k * k) * norm;
  return q;
}

// Upward and downward reversals over stationary points (Markkula & Engström 2006): an upward one when a point
// lies at least `gap` above the reference point, which then moves there; a point below the reference becomes
// the reference. Downward the same mirrored.
struct ReversalCounter {
  bool started = false;
  double up_k = 0, down_k = 0;
  uint64_t count = 0;
  void Take(double theta, double gap) {
    if (!started) {
      started = true;
      up_k = down_k = theta;
      return;
    }
    if (theta - up_k >= gap) {
      ++count;
      up_k = theta;
    } else if (theta < up_k) {
      up_k = theta;
    }
    if (down_k - theta >= gap) {
      ++count;
      down_k = theta;
    } else if (theta > down_k) {
      down_k = theta;
    }
  }
};

std::string Field(double v, int decimals) { return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : std::string(); }

}  // namespace drive_metrics_detail

std::string ValidateDriveMetricsDef(const DriveMetricsDef& d) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(d.steering_wheel_lock_deg) || d.steering_wheel_lock_deg > 3600)
    return fmt::format("steering_wheel_lock_deg: expected a steering wheel angle in (0, 3600] deg, got {}", d.steering_wheel_lock_deg);
  if (!positive(d.reversal_cutoff_hz)) return fmt::format("reversal_cutoff_hz: expected a positive frequency, got {}", d.reversal_cutoff_hz);
  if (!positive(d.reversal_gap_deg)) return fmt::format("reversal_gap_deg: expected a positive angle, got {}", d.reversal_gap_deg);
  if (!positive(d.lane_width_m) || d.lane_width_m > 20) return fmt::format("lane_width_m: expected (0, 20] m, got {}", d.lane_width_m);
  if (!std::isfinite(d.vehicle_width_m) || d.vehicle_width_m < 0 || d.vehicle_width_m >= d.lane_width_m)
    return fmt::format("vehicle_width_m: expected [0, lane_width_m) m, got {}", d.vehicle_width_m);
  if (!(d.brake_threshold > 0 && d.brake_threshold <= 1)) return fmt::format("brake_threshold: expected (0, 1], got {}", d.brake_threshold);
  if (!positive(d.thw_short_s)) return fmt::format("thw_short_s: expected a positive time, got {}", d.thw_short_s);
  if (std::isinf(d.event_s)) return "event_s: expected a sim time or NaN, got an infinity";
  if (!positive(d.reaction_window_s)) return fmt::format("reaction_window_s: expected a positive time, got {}", d.reaction_window_s);
  return "";
}

void DriveMetricsAccumulator::Welford::Add(double x) {
  ++n;
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

DriveMetricsAccumulator::DriveMetricsAccumulator(const DriveMetricsDef& def) : def_(def) {
  if (const std::string e = ValidateDriveMetricsDef(def); !e.empty()) throw std::invalid_argument(e);
}

void DriveMetricsAccumulator::Add(const MetricsRow& row) {
  const double t = row[Column::kSimTime];
  if (!std::isfinite(t) || (rows_ > 0 && t <= last_s_)) return;
  if (rows_ == 0) first_s_ = t;
  const double dt = rows_ > 0 ? t - last_s_ : 0.0;
  ++rows_;
  last_s_ = t;

  if (const double v = row[Column::kSpeed]; std::isfinite(v)) speed_.Add(v);

  // Lane offset: stretches in one lane; the lateral speed for the TLC from consecutive offsets in it.
  const double lane_value = row[Column::kLane], offset = row[Column::kLaneOffset];
  if (std::isfinite(lane_value) && lane_value != 0 && std::isfinite(offset)) {
    const int lane = static_cast<int>(lane_value);
    if (lane != lane_) {
      if (stretch_.n > 0) {
        pooled_m2_ += stretch_.m2;
        pooled_n_ += stretch_.n;
        ++stretches_;
      }
      if (lane_ != 0) ++lane_changes_;
      stretch_ = Welford{};
      lane_ = lane;
      last_offset_ = kNanValue;
    }
    stretch_.Add(offset);
    if (std::isfinite(last_offset_) && t > last_offset_s_) {
      const double v_lat = (offset - last_offset_) / (t - last_offset_s_);
      const double room = 0.5 * (def_.lane_width_m - def_.vehicle_width_m);
      double tlc = kNanValue;
      if (v_lat > 0) tlc = std::max(0.0, room - offset) / v_lat;
      else if (v_lat < 0) tlc = std::max(0.0, room + offset) / -v_lat;
      if (std::isfinite(tlc) && !(tlc >= tlc_min_)) tlc_min_ = tlc;
    }
    last_offset_ = offset;
    last_offset_s_ = t;
  }

  if (const double thw = row[Column::kTimeHeadway]; std::isfinite(thw)) {
    ++thw_n_;
    thw_sum_ += thw;
    if (!(thw >= thw_min_)) thw_min_ = thw;
    if (thw < def_.thw_short_s) ++thw_short_;
  }
  if (const double ttc = row[Column::kTtc]; std::isfinite(ttc) && !(ttc >= ttc_min_)) ttc_min_ = ttc;

  if (const double steer = row[Column::kSteer]; std::isfinite(steer)) AddSteer(dt, steer * def_.steering_wheel_lock_deg);

  if (std::isfinite(def_.event_s) && t >= def_.event_s) {
    const double brake = row[Column::kBrake];
    const bool braking = std::isfinite(brake) && brake >= def_.brake_threshold;
    if (!event_seen_) {
      event_seen_ = true;
      braking_at_event_ = braking;
    } else if (!braking_at_event_ && std::isnan(reaction_s_) && braking && t - def_.event_s <= def_.reaction_window_s) {
      reaction_s_ = t - def_.event_s;
    }
  }
}

void DriveMetricsAccumulator::AddSteer(double dt, double x) {
  using drive_metrics_detail::LowPass;
  // A new sampling interval (the first one, or a change of more than 0.1 %): the filter is designed for it and
  // starts at rest on the current angle.
  if (steer_n_ == 0 || (dt > 0 && std::abs(dt - filter_dt_s_) > 1e-3 * filter_dt_s_)) {
    if (dt > 0) {
      const auto q = LowPass(def_.reversal_cutoff_hz, dt);
      b0_ = q.b0, b1_ = q.b1, b2_ = q.b2, a1_ = q.a1, a2_ = q.a2;
      filter_dt_s_ = dt;
    }
    if (steer_n_ == 0) {
      x1_ = x2_ = y1_ = y2_ = x;
      prev_y_ = x;
      ++steer_n_;
      CountStationary(x);  // the first point is a stationary point
      return;
    }
  }
  const double y = filter_dt_s_ > 0 ? b0_ * x + b1_ * x1_ + b2_ * x2_ - a1_ * y1_ - a2_ * y2_ : x;
  x2_ = x1_, x1_ = x, y2_ = y1_, y1_ = y;
  ++steer_n_;
  const double slope = y - prev_y_;
  const int sign = slope > 0 ? 1 : (slope < 0 ? -1 : 0);
  if (sign != 0) {
    // The slope turned: the previous filtered angle was a local extremum.
    if (prev_slope_ != 0 && sign != prev_slope_) CountStationary(prev_y_);
    prev_slope_ = sign;
  }
  prev_y_ = y;
}

void DriveMetricsAccumulator::CountStationary(double angle_deg) {
  drive_metrics_detail::ReversalCounter c{have_stationary_, up_k_, down_k_, reversals_};
  c.Take(angle_deg, def_.reversal_gap_deg);
  have_stationary_ = c.started, up_k_ = c.up_k, down_k_ = c.down_k, reversals_ = c.count;
}

DriveMetrics DriveMetricsAccumulator::Result() const {
  DriveMetrics m;
  m.rows = rows_;
  m.duration_s = rows_ > 0 ? last_s_ - first_s_ : 0.0;
  if (speed_.n > 0) {
    m.speed_mean_mps = speed_.mean;
    m.speed_sd_mps = speed_.n > 1 ? std::sqrt(speed_.m2 / static_cast<double>(speed_.n - 1)) : 0.0;
  }
  const uint64_t n = pooled_n_ + stretch_.n, stretches = stretches_ + (stretch_.n > 0 ? 1 : 0);
  if (n > stretches) m.sdlp_m = std::sqrt((pooled_m2_ + stretch_.m2) / static_cast<double>(n - stretches));
  m.lane_changes = lane_changes_;
  if (thw_n_ > 0) {
    m.thw_mean_s = thw_sum_ / static_cast<double>(thw_n_);
    m.thw_min_s = thw_min_;
    m.thw_below_share = static_cast<double>(thw_short_) / static_cast<double>(thw_n_);
  }
  m.ttc_min_s = ttc_min_;
  m.tlc_min_s = tlc_min_;
  // The last filtered angle is a stationary point too (the end of the trace).
  drive_metrics_detail::ReversalCounter c{have_stationary_, up_k_, down_k_, reversals_};
  if (steer_n_ > 1) c.Take(prev_y_, def_.reversal_gap_deg);
  m.reversals = c.count;
  if (m.duration_s > 0 && steer_n_ > 1) m.reversal_rate_per_min = static_cast<double>(c.count) * 60.0 / m.duration_s;
  m.brake_reaction_s = reaction_s_;
  return m;
}

DriveMetrics ComputeDriveMetrics(const std::vector<MetricsRow>& rows, const DriveMetricsDef& def) {
  DriveMetricsAccumulator a(def);
  for (const auto& r : rows) a.Add(r);
  return a.Result();
}

uint64_t CountSteeringReversals(const std::vector<double>& angle_deg, double dt_s, double cutoff_hz, double gap_deg) {
  DriveMetricsDef def;
  def.steering_wheel_lock_deg = 1.0;  // steer column = the angle itself
  def.reversal_cutoff_hz = cutoff_hz;
  def.reversal_gap_deg = gap_deg;
  DriveMetricsAccumulator a(def);
  MetricsRow row;
  for (size_t i = 0; i < angle_deg.size(); ++i) {
    row[Column::kSimTime] = static_cast<double>(i) * dt_s;
    row[Column::kSteer] = angle_deg[i];
    a.Add(row);
  }
  return a.Result().reversals;
}

std::string DriveMetricsCsvHeader() {
  return "rows,duration_s,speed_mean_mps,speed_sd_mps,sdlp_m,lane_changes,thw_mean_s,thw_min_s,thw_below_share,"
         "ttc_min_s,tlc_min_s,reversals,reversal_rate_per_min,brake_reaction_s";
}

std::string DriveMetricsCsvRow(const DriveMetrics& m) {
  using drive_metrics_detail::Field;
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}", m.rows, Field(m.duration_s, 3), Field(m.speed_mean_mps, 4),
                     Field(m.speed_sd_mps, 4), Field(m.sdlp_m, 4), m.lane_changes, Field(m.thw_mean_s, 3), Field(m.thw_min_s, 3),
                     Field(m.thw_below_share, 4), Field(m.ttc_min_s, 3), Field(m.tlc_min_s, 3), m.reversals,
                     Field(m.reversal_rate_per_min, 3), Field(m.brake_reaction_s, 3));
}

}  // namespace platoon::data
