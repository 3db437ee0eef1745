#include "platoon/clock/slewed_clock.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace platoon::clock {

std::string ValidateClockDef(const ClockDef& d) {
  if (!(d.max_slew_ppm > 0 && d.max_slew_ppm <= 100000))
    return "max_slew_ppm must be in (0, 100000], got " + std::to_string(d.max_slew_ppm);
  if (!(d.sync_rate_hz > 0 && d.sync_rate_hz <= 1000))
    return "sync_rate_hz must be in (0, 1000], got " + std::to_string(d.sync_rate_hz);
  if (!(d.join_sync_rate_hz > 0 && d.join_sync_rate_hz <= 1000))
    return "join_sync_rate_hz must be in (0, 1000], got " + std::to_string(d.join_sync_rate_hz);
  if (!(d.window_s > 0 && d.window_s <= 3600)) return "window_s must be in (0, 3600], got " + std::to_string(d.window_s);
  if (!(d.best_fraction > 0 && d.best_fraction <= 1))
    return "best_fraction must be in (0, 1], got " + std::to_string(d.best_fraction);
  if (!(d.correction_time_s > 0)) return "correction_time_s must be > 0, got " + std::to_string(d.correction_time_s);
  if (d.min_samples_to_set < 1) return "min_samples_to_set must be >= 1, got " + std::to_string(d.min_samples_to_set);
  if (!(d.delay_weight_floor_us > 0))
    return "delay_weight_floor_us must be > 0, got " + std::to_string(d.delay_weight_floor_us);
  if (!(d.min_fit_span_s >= 0)) return "min_fit_span_s must be >= 0, got " + std::to_string(d.min_fit_span_s);
  return {};
}

SlewedClock::SlewedClock(const Oscillator& oscillator, const ClockDef& def) : oscillator_(oscillator), def_(def) {
  assert(ValidateClockDef(def).empty());
  anchor_local_ns_ = oscillator_.NowNs();
  anchor_synced_ns_ = anchor_local_ns_;
}

int64_t SlewedClock::MapLocked(int64_t local_ns) const {
  // The oscillator is read under the lock, so local_ns never precedes the anchor.
  const int64_t dl = std::max<int64_t>(0, local_ns - anchor_local_ns_);
  return anchor_synced_ns_ + static_cast<int64_t>(std::floor(rate_ * static_cast<double>(dl)));
}

SlewedClock::Fit SlewedClock::FitLocked(int64_t at_local_ns) const {
  // Keep the lowest-delay fraction of the window: their offsets carry the least queueing asymmetry.
  std::vector<int64_t> delays;
  delays.reserve(window_.size());
  for (const auto& s : window_) delays.push_back(s.DelayNs());
  const size_t keep = std::clamp<size_t>(static_cast<size_t>(std::ceil(def_.best_fraction * window_.size())),
                                         std::min<size_t>(3, window_.size()), window_.size());
  std::nth_element(delays.begin(), delays.begin() + (keep - 1), delays.end());
  const int64_t max_delay = delays[keep - 1];

  // Weighted least-squares line offset(x) = a + b x, with x = local midpoint - at_local_ns.
  // A sample's offset error is at most half its delay excess over the window's minimum delay,
  // so samples are weighted by 1 / (excess + floor)^2.
  const int64_t min_delay = *std::min_element(delays.begin(), delays.begin() + keep);
  const double floor_ns = def_.delay_weight_floor_us * 1e3;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, xmin = 1e300, xmax = -1e300;
  for (const auto& s : window_) {
    if (s.DelayNs() > max_delay) continue;
    const double excess = static_cast<double>(s.DelayNs() - min_delay) + floor_ns;
    const double w = 1.0 / (excess * excess);
    const double x = static_cast<double>(s.LocalMidNs() - at_local_ns);
    const double y = s.OffsetNs();
    n += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
  }
  const double var = sxx - sx * sx / n;
  if (xmax - xmin < def_.min_fit_span_s * 1e9 || var <= 0) {
    // Too short a span for a trustworthy drift: keep the last slope, fit the offset only.
    return Fit{(sy - last_slope_ * sx) / n, last_slope_};
  }
  const double b = (sxy - sx * sy / n) / var;
  return Fit{(sy - b * sx) / n, b};
}

void SlewedClock::AddSample(const TimeSample& s) {
  std::lock_guard lock(mutex_);
  if (s.DelayNs() < 0 || s.t4_ns < s.t1_ns || (!window_.empty() && s.t1_ns < window_.back().t1_ns)) {
    ++samples_rejected_;
    return;
  }
  window_.push_back(s);
  ++samples_total_;

  const int64_t now_local = std::max(oscillator_.NowNs(), s.t4_ns);
  const auto window_ns = static_cast<int64_t>(def_.window_s * 1e9);
  while (window_.size() > 1 && window_.front().t4_ns < now_local - window_ns) window_.pop_front();

  const Fit fit = FitLocked(now_local);
  last_slope_ = fit.slope;
  const double target = static_cast<double>(now_local) + fit.offset_ns;
  const double bound = def_.max_slew_ppm * 1e-6;

  if (!set_) {
    // Wait for enough samples *and* a span long enough to fit the drift, so the first rate is right.
    const double span_ns = static_cast<double>(window_.back().LocalMidNs() - window_.front().LocalMidNs());
    if (static_cast<int>(window_.size()) < def_.min_samples_to_set || span_ns < def_.min_fit_span_s * 1e9) return;
    // The one step allowed: at join, before the node's simulation starts.
    anchor_local_ns_ = now_local;
    anchor_synced_ns_ = static_cast<int64_t>(std::llround(target));
    rate_ = std::clamp(1.0 + fit.slope, 1.0 - bound, 1.0 + bound);
    last_error_ns_ = 0;
    set_ = true;
    return;
  }

  // Slew: follow the fitted drift plus a first-order pull on the remaining error; re-anchor here,
  // so the map stays continuous.
  const int64_t current = MapLocked(now_local);
  last_error_ns_ = target - static_cast<double>(current);
  const double desired = (1.0 + fit.slope) + last_error_ns_ / (def_.correction_time_s * 1e9);
  anchor_synced_ns_ = current;
  anchor_local_ns_ = now_local;
  rate_ = std::clamp(desired, 1.0 - bound, 1.0 + bound);
}

bool SlewedClock::IsSet() const {
  std::lock_guard lock(mutex_);
  return set_;
}

int64_t SlewedClock::NowNs() const {
  std::lock_guard lock(mutex_);
  return MapLocked(oscillator_.NowNs());
}

ClockReading SlewedClock::Read() const {
  std::lock_guard lock(mutex_);
  const int64_t local = oscillator_.NowNs();
  return ClockReading{local, MapLocked(local)};
}

int64_t SlewedClock::AtLocalNs(int64_t local_ns) const {
  std::lock_guard lock(mutex_);
  return MapLocked(local_ns);
}

ClockStatus SlewedClock::Status() const {
  std::lock_guard lock(mutex_);
  ClockStatus st;
  st.set = set_;
  const int64_t local = oscillator_.NowNs();
  st.now_ns = MapLocked(local);
  st.rate = rate_;
  st.samples = static_cast<int>(window_.size());
  st.samples_total = samples_total_;
  st.samples_rejected = samples_rejected_;
  if (!window_.empty()) {
    const Fit fit = FitLocked(local);
    st.offset_ns = static_cast<double>(local) + fit.offset_ns - static_cast<double>(st.now_ns);
    // reference = local * (1 + slope)  =>  local runs fast by -slope.
    st.drift_ppm = -fit.slope / (1.0 + fit.slope) * 1e6;
    st.min_delay_ns = window_.front().DelayNs();
    for (const auto& s : window_) st.min_delay_ns = std::min(st.min_delay_ns, s.DelayNs());
  }
  const double bound = def_.max_slew_ppm * 1e-6;
  st.saturated = set_ && (rate_ <= 1.0 - bound + 1e-12 || rate_ >= 1.0 + bound - 1e-12);
  return st;
}

}  // namespace platoon::clock
