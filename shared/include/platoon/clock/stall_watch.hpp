#pragma once
/// Tells a loop's own stalls from the silence of others. A loop marks the time at checkpoints, each with
/// the wait it asked for since the previous one; far more time between two checkpoints than asked for
/// means this process was not running (a suspended VM or laptop, SIGSTOP, a starved core), and whatever
/// the loop judges by silence (heartbeats, lost peers, deadlines) must be moved on by that gap. The watch
/// also keeps the largest lateness seen, so that a process can say in its summary how far its loop fell
/// behind. Pure: given local times, no clock of its own.

#include <cstdint>

namespace platoon::clock {

class StallWatch {
 public:
  /// Gaps of more than `threshold_ns` beyond the asked wait count as stalls.
  explicit StallWatch(int64_t threshold_ns) : threshold_ns_(threshold_ns) {}

  /// A checkpoint at `now_ns`, `asked_ns` after the previous one was meant to be reached. Returns the
  /// stall to forgive (the time beyond the asked wait) when it exceeds the threshold, else 0. The first
  /// mark returns 0.
  int64_t Mark(int64_t now_ns, int64_t asked_ns) {
    int64_t stall = 0;
    if (last_ns_ >= 0) {
      const int64_t late = now_ns - last_ns_ - (asked_ns > 0 ? asked_ns : 0);
      if (late > late_max_ns_) late_max_ns_ = late;
      if (late > threshold_ns_) {
        stall = late;
        ++stalls_;
      }
    }
    last_ns_ = now_ns;
    return stall;
  }

  /// The largest time beyond the asked wait between two checkpoints so far (0 before two marks).
  int64_t LateMaxNs() const { return late_max_ns_; }
  /// How many gaps exceeded the threshold.
  uint64_t Stalls() const { return stalls_; }

 private:
  int64_t threshold_ns_;
  int64_t last_ns_ = -1;
  int64_t late_max_ns_ = 0;
  uint64_t stalls_ = 0;
};

}  // namespace platoon::clock
