#pragma once
/// Local oscillators: the raw time source a SlewedClock disciplines. Injected, so that tests
/// and the CLI can make a node's oscillator drift by a given number of ppm on one machine.

#include <atomic>
#include <cstdint>

namespace platoon::clock {

/// A monotonic local time source, in ns.
class Oscillator {
 public:
  virtual ~Oscillator() = default;
  /// Current local time, in ns; never decreases.
  virtual int64_t NowNs() const = 0;
};

/// The host's CLOCK_MONOTONIC. The server's reference clock is this oscillator on the server host.
class MonotonicOscillator final : public Oscillator {
 public:
  int64_t NowNs() const override;
};

/// An oscillator running `drift_ppm` fast (negative: slow) against `base`, offset by `offset_ns`.
/// local = offset_ns + origin + (base - origin) * (1 + drift_ppm * 1e-6), origin = base at construction.
class DriftingOscillator final : public Oscillator {
 public:
  /// `base` must outlive this oscillator. Typical drift: +-1000 ppm in tests, +-50 ppm for real quartz.
  DriftingOscillator(const Oscillator& base, double drift_ppm, int64_t offset_ns = 0);
  int64_t NowNs() const override;
  /// Configured drift, in ppm.
  double DriftPpm() const { return drift_ppm_; }
  /// Local time this oscillator shows when `base` shows `base_ns`.
  int64_t FromBase(int64_t base_ns) const;

 private:
  const Oscillator& base_;
  double drift_ppm_;
  int64_t offset_ns_;
  int64_t origin_ns_;
};

/// A hand-driven oscillator for deterministic tests.
class ManualOscillator final : public Oscillator {
 public:
  explicit ManualOscillator(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  /// Sets the time; must not go backwards (asserted).
  void Set(int64_t ns);
  /// Advances the time by `dt_ns` >= 0.
  void Advance(int64_t dt_ns) { Set(NowNs() + dt_ns); }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace platoon::clock
