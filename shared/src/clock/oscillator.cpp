#include "platoon/clock/oscillator.hpp"

#include <cassert>
#include <cmath>
#include <ctime>

namespace platoon::clock {

int64_t MonotonicOscillator::NowNs() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

DriftingOscillator::DriftingOscillator(const Oscillator& base, double drift_ppm, int64_t offset_ns)
    : base_(base), drift_ppm_(drift_ppm), offset_ns_(offset_ns), origin_ns_(base.NowNs()) {}

int64_t DriftingOscillator::FromBase(int64_t base_ns) const {
  const double elapsed = static_cast<double>(base_ns - origin_ns_);
  return offset_ns_ + origin_ns_ + std::llround(elapsed * (1.0 + drift_ppm_ * 1e-6));
}

int64_t DriftingOscillator::NowNs() const { return FromBase(base_.NowNs()); }

void ManualOscillator::Set(int64_t ns) {
  assert(ns >= now_ns_.load() && "ManualOscillator must not go backwards");
  now_ns_.store(ns, std::memory_order_release);
}

}  // namespace platoon::clock
