#pragma once
/// Receive-path fault injector: reproduces a bad LAN (loss, burst outages, delay with jitter,
/// duplication, reordering) on loopback, where `tc netem` is not available.
///
/// Pure and deterministic: time is passed in by the caller and randomness comes from the seed,
/// so a test can replay exactly the same faults.

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <utility>

namespace platoon::transport {

/// Fault settings. All zero means "deliver everything at once, in order".
struct FaultDef {
  double drop_probability = 0.0;       ///< Independent loss per message, in [0, 1]. Typical 0.01-0.1.
  double duplicate_probability = 0.0;  ///< Chance a delivered message is delivered twice, in [0, 1].
  double reorder_probability = 0.0;    ///< Fraction of messages delivered after their successor, in [0, 0.5].
  double delay_ms = 0.0;               ///< Added one-way delay, in ms. Typical 0-50.
  double jitter_ms = 0.0;              ///< Delay varies uniformly in delay_ms +- jitter_ms (clamped at 0).
  double burst_every_s = 0.0;          ///< Mean time between burst outages, in s (exponential); 0 = none.
  double burst_length_ms = 0.0;        ///< Length of each burst outage, in ms. Typical 100-1000.
  uint64_t seed = 1;                   ///< Random seed; the same seed gives the same faults.

  /// True when any fault is configured.
  bool Enabled() const {
    return drop_probability > 0 || duplicate_probability > 0 || reorder_probability > 0 ||
           delay_ms > 0 || jitter_ms > 0 || (burst_every_s > 0 && burst_length_ms > 0);
  }
};

/// The default fault settings: no faults.
inline FaultDef DefaultFaultDef() { return FaultDef{}; }

/// Checks a FaultDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateFaultDef(const FaultDef& def);

/// Parses "drop=0.1,dup=0.01,reorder=0.05,delay_ms=5,jitter_ms=1,burst_every_s=10,burst_ms=500,seed=7"
/// on top of `base`. Throws std::invalid_argument naming the bad item.
FaultDef ParseFaultSpec(const std::string& spec, FaultDef base = DefaultFaultDef());

/// Counters of what the injector did; offered = delivered - duplicated + dropped + pending.
struct FaultStats {
  uint64_t offered = 0;        ///< Messages handed to Offer().
  uint64_t delivered = 0;      ///< Messages returned by Poll(), duplicates included.
  uint64_t dropped = 0;        ///< Lost to random drop.
  uint64_t burst_dropped = 0;  ///< Lost inside a burst outage.
  uint64_t duplicated = 0;     ///< Extra copies made.
  uint64_t reordered = 0;      ///< Messages held back behind a later one.
};

/// Fault injector over any copyable message type `T`.
template <class T>
class FaultInjector {
 public:
  explicit FaultInjector(const FaultDef& def = DefaultFaultDef()) : def_(def), rng_(def.seed) {}

  /// Hands a received message to the injector at local time `now_ns`.
  void Offer(T item, int64_t now_ns) {
    ++stats_.offered;
    if (!def_.Enabled()) {
      Enqueue(std::move(item), now_ns);
      return;
    }
    // Burst outages: a renewal process with exponential gaps, each outage of fixed length.
    if (def_.burst_every_s > 0 && def_.burst_length_ms > 0) {
      if (next_burst_ns_ < 0) next_burst_ns_ = now_ns + DrawBurstGapNs();
      while (now_ns >= next_burst_ns_ + BurstLenNs()) next_burst_ns_ += BurstLenNs() + DrawBurstGapNs();
      if (now_ns >= next_burst_ns_) {
        ++stats_.burst_dropped;
        return;
      }
    }
    if (Chance(def_.drop_probability)) {
      ++stats_.dropped;
      return;
    }
    const bool duplicate = Chance(def_.duplicate_probability);
    // A message can be held only while none is held, and its successor never is: drawing with
    // q = p / (1 - p) makes the held fraction q / (1 + q) = p.
    const double p = def_.reorder_probability;
    const bool hold_back = !held_ && p > 0 && Chance(p / (1.0 - p));
    if (duplicate) {
      ++stats_.duplicated;
      Enqueue(item, now_ns + DrawDelayNs());
    }
    if (hold_back) {
      // Held messages are released right after the next message that passes.
      ++stats_.reordered;
      held_.emplace(std::move(item));
      held_since_ns_ = now_ns;
      return;
    }
    const int64_t due_ns = now_ns + DrawDelayNs();
    Enqueue(std::move(item), due_ns);
    if (held_) ReleaseHeld(due_ns);
  }

  /// Returns the next message due at or before `now_ns`, if any.
  std::optional<T> Poll(int64_t now_ns) {
    // A held-back message with no successor is released after kMaxHoldNs, never lost.
    if (held_ && now_ns - held_since_ns_ >= kMaxHoldNs) ReleaseHeld(now_ns);
    // The queue is kept sorted by due time, stable for equal times.
    if (queue_.empty() || queue_.front().due_ns > now_ns) return std::nullopt;
    T item = std::move(queue_.front().item);
    queue_.pop_front();
    ++stats_.delivered;
    return item;
  }

  /// Local time at which the next queued message becomes due; nullopt when none is queued.
  std::optional<int64_t> NextDueNs() const {
    std::optional<int64_t> due;
    if (!queue_.empty()) due = queue_.front().due_ns;
    if (held_ && (!due || held_since_ns_ + kMaxHoldNs < *due)) due = held_since_ns_ + kMaxHoldNs;
    return due;
  }

  /// Number of messages queued or held back.
  size_t Pending() const { return queue_.size() + (held_ ? 1 : 0); }

  const FaultStats& Stats() const { return stats_; }
  const FaultDef& Def() const { return def_; }

 private:
  /// Longest a held-back message waits for a successor, in ns.
  static constexpr int64_t kMaxHoldNs = 50'000'000;

  struct Entry {
    int64_t due_ns;
    T item;
  };

  bool Chance(double p) { return p > 0 && unit_(rng_) < p; }

  int64_t DrawDelayNs() {
    double ms = def_.delay_ms;
    if (def_.jitter_ms > 0) ms += (2.0 * unit_(rng_) - 1.0) * def_.jitter_ms;
    if (ms < 0) ms = 0;
    return static_cast<int64_t>(ms * 1e6);
  }

  int64_t DrawBurstGapNs() {
    std::exponential_distribution<double> gap(1.0 / def_.burst_every_s);
    return static_cast<int64_t>(gap(rng_) * 1e9);
  }

  int64_t BurstLenNs() const { return static_cast<int64_t>(def_.burst_length_ms * 1e6); }

  void ReleaseHeld(int64_t due_ns) {
    Enqueue(std::move(*held_), due_ns);
    held_.reset();
  }

  void Enqueue(T item, int64_t due_ns) {
    // Insert keeping due-time order; equal times keep arrival order.
    auto it = queue_.end();
    while (it != queue_.begin() && std::prev(it)->due_ns > due_ns) --it;
    queue_.insert(it, Entry{due_ns, std::move(item)});
  }

  FaultDef def_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::deque<Entry> queue_;
  std::optional<T> held_;
  int64_t held_since_ns_ = 0;
  int64_t next_burst_ns_ = -1;
  FaultStats stats_;
};

}  // namespace platoon::transport
