#include "platoon/process/loop_watchdog.hpp"

#include "platoon/process/child.hpp"

#include <unistd.h>

#include <cstdio>

namespace platoon::process {
namespace {
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
std::string Seconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(ns) / 1e9);
  return text;
}
}  // namespace

LoopWatchdog::LoopWatchdog(std::chrono::milliseconds threshold, Report report)
    : threshold_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(threshold).count()),
      report_(std::move(report)),
      thread_([this] { Watch(); }) {}

LoopWatchdog::~LoopWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LoopWatchdog::Beat(const char* phase) noexcept {
  phase_.store(phase, std::memory_order_relaxed);
  const int64_t now = SteadyNs();
  const int64_t previous = beat_ns_.exchange(now, std::memory_order_relaxed);
  if (previous >= 0 && now - previous > threshold_ns_) {
    // Only this (the loop's) thread writes these two.
    last_gap_ns_.store(now - previous, std::memory_order_relaxed);
    const double ms = static_cast<double>(now - previous) / 1e6;
    if (ms > longest_ms_.load(std::memory_order_relaxed)) longest_ms_.store(ms, std::memory_order_relaxed);
  }
  beats_.fetch_add(1, std::memory_order_release);
}

void LoopWatchdog::Watch() {
  const auto period = std::chrono::nanoseconds(std::max<int64_t>(threshold_ns_ / 4, 1'000'000));
  uint64_t stalled_at_beat = 0;  // the beat count when the current stall was first reported (0: none)
  int reports = 0;               // reports of the current stall
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    const uint64_t beats = beats_.load(std::memory_order_acquire);
    if (beats == 0) continue;
    const int64_t now = SteadyNs();
    if (stalled_at_beat != 0 && beats != stalled_at_beat) {
      // The loop moved on: the gap its first beat after the stall measured (the acquire above orders it).
      lock.unlock();
      report_("loop moved on after standing still for " + Seconds(last_gap_ns_.load(std::memory_order_relaxed)));
      lock.lock();
      stalled_at_beat = 0;
      reports = 0;
    }
    const int64_t since = beat_ns_.load(std::memory_order_relaxed);
    const int64_t age = now - since;
    // Reports at 1, 2, 4 and 8 thresholds into one stall.
    if (reports < 4 && age > threshold_ns_ << reports) {
      if (reports == 0) {
        stalled_at_beat = beats;
        stalls_.fetch_add(1, std::memory_order_relaxed);
      }
      ++reports;
      const std::string text = std::string("loop has not moved for ") + Seconds(age) + " (in phase '" +
                               phase_.load(std::memory_order_relaxed) + "'); this process's threads:\n" +
                               ThreadStates(getpid());
      lock.unlock();
      report_(text);
      lock.lock();
    }
  }
}

}  // namespace platoon::process
