#pragma once
/// Names where a loop stood still while it stands still. A loop beats at its checkpoints, each time with
/// the phase it enters ("wait", "poll", ...); a thread of the watchdog's own looks every quarter threshold
/// and, once the loop has not beaten for `threshold`, reports the phase and what every thread of this
/// process is doing (process::ThreadStates: state, kernel wait channel, CPU time), again at 2, 4 and 8
/// thresholds, then once more when the loop moves on, with how long it stood. A loop that is held in a
/// system call shows state D or S and the kernel function it waits in; one that was not scheduled shows
/// state R; a stopped or starved process shows the report only afterwards (the watchdog stood too).
/// The StallWatch's figures say after the fact how far a loop fell behind; this says why.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace platoon::process {

class LoopWatchdog {
 public:
  using Report = std::function<void(const std::string& text)>;

  /// Starts the watching thread. `report` is called on that thread (it must be thread-safe, as spdlog's
  /// loggers are). The first Beat arms it; before that nothing is reported.
  LoopWatchdog(std::chrono::milliseconds threshold, Report report);
  ~LoopWatchdog();
  LoopWatchdog(const LoopWatchdog&) = delete;
  LoopWatchdog& operator=(const LoopWatchdog&) = delete;

  /// The loop reached a checkpoint and enters `phase` (a string literal: only its address is kept).
  void Beat(const char* phase) noexcept;

  /// Stalls reported so far (each counted once, however many reports it had).
  uint64_t Stalls() const { return stalls_.load(std::memory_order_relaxed); }
  /// The longest time between two beats beyond the threshold, in ms (0: none).
  double LongestMs() const { return longest_ms_.load(std::memory_order_relaxed); }

 private:
  void Watch();

  const int64_t threshold_ns_;
  Report report_;
  std::atomic<int64_t> beat_ns_{-1};
  std::atomic<int64_t> last_gap_ns_{0};
  std::atomic<uint64_t> beats_{0};
  std::atomic<const char*> phase_{""};
  std::atomic<uint64_t> stalls_{0};
  std::atomic<double> longest_ms_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace platoon::process
