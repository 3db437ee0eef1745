#pragma once
/// Gap-free clock synchronisation after seed 004 §3.5: a node's clock follows the server's
/// reference clock by changing its *rate* within a bound, never by stepping (except once, at join,
/// before the node's simulation starts). See docs/ARCHITECTURE.md "Clock".

#include "platoon/clock/oscillator.hpp"

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace platoon::clock {

/// Clock-discipline settings.
struct ClockDef {
  double max_slew_ppm = 10000.0;   ///< Bound of the rate correction, in ppm. Default 10000 (= 1 %).
  double sync_rate_hz = 20.0;      ///< Time exchanges per second. Typical 10-20.
  /// Time exchanges per second until the clock is set (the join burst), in Hz; never below sync_rate_hz.
  /// Typical 100: the fit span below fills with samples sooner, and the clock is set sooner at join.
  double join_sync_rate_hz = 100.0;
  double window_s = 30.0;          ///< Sliding window of samples for the offset/drift fit, in s.
  double best_fraction = 0.5;      ///< Fraction of the window's samples (lowest delay) used in the fit.
  double correction_time_s = 3.0;  ///< Time constant of the offset correction, in s.
  int min_samples_to_set = 4;      ///< Samples needed before the one initial step at join.
  double min_fit_span_s = 0.5;     ///< Below this sample span the drift is not fitted; the initial step waits for it, in s.
  double delay_weight_floor_us = 20.0;  ///< Sample weight is 1/(delay excess + this)^2, in us. Typical 5-50.
};

/// The default clock settings.
inline ClockDef DefaultClockDef() { return ClockDef{}; }

/// Checks a ClockDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateClockDef(const ClockDef& def);

/// One four-timestamp exchange. t1 and t4 are the node's *local oscillator* times; t2 and t3 the
/// server's reference times.
struct TimeSample {
  int64_t t1_ns = 0;  ///< Node local time when the request was sent.
  int64_t t2_ns = 0;  ///< Server reference time when the request was received.
  int64_t t3_ns = 0;  ///< Server reference time when the reply was sent.
  int64_t t4_ns = 0;  ///< Node local time when the reply was received.

  /// Round-trip network delay, excluding server processing: (t4 - t1) - (t3 - t2).
  int64_t DelayNs() const { return (t4_ns - t1_ns) - (t3_ns - t2_ns); }
  /// Reference minus local at the exchange's midpoint: ((t2 - t1) + (t3 - t4)) / 2.
  double OffsetNs() const { return 0.5 * (static_cast<double>(t2_ns - t1_ns) + static_cast<double>(t3_ns - t4_ns)); }
  /// Local time at the exchange's midpoint.
  int64_t LocalMidNs() const { return t1_ns + (t4_ns - t1_ns) / 2; }
};

/// Snapshot of a SlewedClock's state, for status lines and heartbeats.
struct ClockStatus {
  bool set = false;               ///< The initial step at join has happened.
  int64_t now_ns = 0;             ///< Synced time at the snapshot.
  double offset_ns = 0;           ///< Estimated reference minus synced time now (what is left to slew).
  double rate = 1.0;              ///< Synced ns per local ns in the current segment.
  double drift_ppm = 0;           ///< Estimated local oscillator drift against the reference, in ppm.
  int64_t min_delay_ns = 0;       ///< Smallest round-trip delay in the window.
  int samples = 0;                ///< Samples in the window.
  uint64_t samples_total = 0;     ///< Samples accepted since construction.
  uint64_t samples_rejected = 0;  ///< Samples rejected as impossible (negative delay, non-monotonic).
  bool saturated = false;         ///< The rate correction is at its bound.
};

/// One reading of a SlewedClock: the local oscillator time and the synced time it maps to, taken together.
struct ClockReading {
  int64_t local_ns = 0;   ///< Local oscillator time.
  int64_t synced_ns = 0;  ///< Synced time at that local time.
};

/// A node's synced clock: a piecewise-linear, continuous, strictly increasing map from the local
/// oscillator to an estimate of the server's reference time. Thread-safe.
class SlewedClock {
 public:
  /// `oscillator` must outlive the clock.
  SlewedClock(const Oscillator& oscillator, const ClockDef& def = DefaultClockDef());

  /// Feeds one exchange. The first `min_samples_to_set` samples set the clock once (the only step);
  /// afterwards each sample re-fits the offset and drift and re-sets the rate at the current instant.
  void AddSample(const TimeSample& sample);

  /// True once the initial step has happened.
  bool IsSet() const;

  /// Synced time, in ns. Before the clock is set this is the local oscillator time.
  int64_t NowNs() const;

  /// Local and synced time read atomically (no re-anchoring can fall between the two).
  ClockReading Read() const;

  /// Synced time when the local oscillator reads `local_ns` (>= the last re-anchor; for tests).
  int64_t AtLocalNs(int64_t local_ns) const;

  /// Current state, for status and heartbeats.
  ClockStatus Status() const;

  /// The definition in use.
  const ClockDef& Def() const { return def_; }

  /// The local oscillator.
  const Oscillator& LocalOscillator() const { return oscillator_; }

 private:
  struct Fit {
    double offset_ns;  // reference - local at `at_local_ns`
    double slope;      // d(reference - local)/d(local), i.e. -drift
  };

  int64_t MapLocked(int64_t local_ns) const;
  Fit FitLocked(int64_t at_local_ns) const;

  const Oscillator& oscillator_;
  ClockDef def_;
  mutable std::mutex mutex_;
  std::deque<TimeSample> window_;
  bool set_ = false;
  // Current segment: synced = anchor_synced + floor(rate * (local - anchor_local)).
  int64_t anchor_local_ns_ = 0;
  int64_t anchor_synced_ns_ = 0;
  double rate_ = 1.0;
  double last_slope_ = 0.0;
  double last_error_ns_ = 0.0;
  uint64_t samples_total_ = 0;
  uint64_t samples_rejected_ = 0;
};

}  // namespace platoon::clock
