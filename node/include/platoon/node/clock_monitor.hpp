#pragma once
/// Watches the synced clock on its own fixed-rate thread: counts ticks where it failed to advance
/// or advanced faster than the slew bound allows, and (with truth checking, server on this host)
/// records its true error against CLOCK_MONOTONIC.

#include "platoon/clock/slewed_clock.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace platoon::node {

/// Clock properties measured on each tick (and, with truth checking, the true error).
struct ClockReport {
  uint64_t ticks = 0;
  uint64_t backwards = 0;          ///< Ticks where synced time did not strictly increase.
  uint64_t over_bound = 0;         ///< Ticks that advanced more than (1 + bound) x local tick (+1 ns).
  std::vector<int64_t> errors_ns;  ///< True errors after warm-up (truth checking only).
  uint64_t preempted = 0;          ///< Ticks left out of the truth statistics: preempted mid-measurement.
  std::vector<int64_t> naive_ns;   ///< Errors of a clock stepped to each single exchange (baseline).
};

/// The clock monitor; Run() is the body of its thread.
class ClockMonitor {
 public:
  ClockMonitor(const clock::SlewedClock& clock, double rate_hz, bool truth, double warmup_s);
  /// Ticks at rate_hz until `stop`.
  void Run(const std::atomic<bool>& stop);
  /// Records the error a clock stepped to one exchange would have (counted after warm-up).
  void AddNaive(int64_t error_ns);
  ClockReport Report() const;
  int64_t LastErrorNs() const;

 private:
  const clock::SlewedClock& clock_;
  double rate_hz_;
  bool truth_;
  int64_t warmup_ns_;
  mutable std::mutex mutex_;
  ClockReport report_;
  int64_t last_error_ns_ = 0;
  bool warm_ = false;
};

/// Percentile (0..100) of |values|, nearest rank; 0 for an empty list.
int64_t AbsPercentile(std::vector<int64_t> values, double percentile);

}  // namespace platoon::node
