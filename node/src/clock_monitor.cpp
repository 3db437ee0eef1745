#include "platoon/node/clock_monitor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace platoon::node {
namespace {
// Longest host-clock bracket around a local read that still counts as one instant, in ns.
constexpr int64_t kMaxBracketNs = 20'000;
}  // namespace

int64_t AbsPercentile(std::vector<int64_t> values, double percentile) {
  if (values.empty()) return 0;
  for (auto& v : values) v = std::abs(v);
  const double rank = std::ceil(percentile / 100.0 * static_cast<double>(values.size()));
  const size_t k = std::min(values.size() - 1, static_cast<size_t>(std::max(1.0, rank)) - 1);
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return values[k];
}

ClockMonitor::ClockMonitor(const clock::SlewedClock& clock, double rate_hz, bool truth, double warmup_s)
    : clock_(clock), rate_hz_(rate_hz), truth_(truth), warmup_ns_(static_cast<int64_t>(warmup_s * 1e9)) {}

void ClockMonitor::Run(const std::atomic<bool>& stop) {
  clock::MonotonicOscillator host;
  const double bound = clock_.Def().max_slew_ppm * 1e-6;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / rate_hz_));
  int64_t prev_synced = 0, prev_local = 0, set_at = -1;
  auto next = std::chrono::steady_clock::now();
  while (!stop.load(std::memory_order_relaxed)) {
    next += period;
    std::this_thread::sleep_until(next);
    if (!clock_.IsSet()) continue;
    // Bracket the local read with two host reads; a sample the scheduler preempted in between
    // measures the preemption, not the clock, and is left out of the truth statistics.
    const int64_t h1 = host.NowNs();
    const clock::ClockReading reading = clock_.Read();
    const int64_t h2 = host.NowNs();
    const int64_t l = reading.local_ns, synced = reading.synced_ns;
    std::lock_guard lock(mutex_);
    if (set_at >= 0) {
      ++report_.ticks;
      if (synced <= prev_synced) ++report_.backwards;
      if (static_cast<double>(synced - prev_synced) > (1 + bound) * static_cast<double>(l - prev_local) + 1)
        ++report_.over_bound;
    } else {
      set_at = l;
    }
    prev_synced = synced;
    prev_local = l;
    warm_ = l - set_at >= warmup_ns_;
    if (h2 - h1 > kMaxBracketNs) {
      ++report_.preempted;
      continue;
    }
    last_error_ns_ = synced - (h1 + (h2 - h1) / 2);
    if (truth_ && warm_) report_.errors_ns.push_back(last_error_ns_);
  }
}

void ClockMonitor::AddNaive(int64_t error_ns) {
  std::lock_guard lock(mutex_);
  if (truth_ && warm_) report_.naive_ns.push_back(error_ns);
}

ClockReport ClockMonitor::Report() const {
  std::lock_guard lock(mutex_);
  return report_;
}

int64_t ClockMonitor::LastErrorNs() const {
  std::lock_guard lock(mutex_);
  return last_error_ns_;
}

}  // namespace platoon::node
