#pragma once
/// A bounded single-producer single-consumer queue of fixed-size values: a ring of `capacity` slots
/// with one atomic index per side, so neither side ever blocks, locks or allocates after construction.
/// One thread may call TryPush, one (other) thread TryPop; Size may be read from either.

#include <atomic>
#include <cassert>
#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

namespace platoon::data {

template <typename T>
class SpscQueue {
  static_assert(std::is_trivially_copyable_v<T>, "SpscQueue holds plain values");

 public:
  /// A queue of `capacity` (> 0) values.
  explicit SpscQueue(size_t capacity) : slots_(capacity + 1) { assert(capacity > 0); }
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  /// Producer: appends a copy of `v`; false (nothing changes) when the queue is full.
  bool TryPush(const T& v) {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    const size_t next = Next(tail);
    if (next == head_.load(std::memory_order_acquire)) return false;
    slots_[tail] = v;
    tail_.store(next, std::memory_order_release);
    return true;
  }

  /// Consumer: moves the oldest value into `out`; false when the queue is empty.
  bool TryPop(T& out) {
    const size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return false;
    out = slots_[head];
    head_.store(Next(head), std::memory_order_release);
    return true;
  }

  /// Values queued now (a snapshot while the other side runs).
  size_t Size() const {
    const size_t head = head_.load(std::memory_order_acquire), tail = tail_.load(std::memory_order_acquire);
    return tail >= head ? tail - head : tail + slots_.size() - head;
  }
  /// Most values the queue holds.
  size_t Capacity() const { return slots_.size() - 1; }

 private:
  size_t Next(size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }

  std::vector<T> slots_;  // one slot stays empty, telling full from empty
  alignas(64) std::atomic<size_t> head_{0};  // next slot to pop; written by the consumer only
  alignas(64) std::atomic<size_t> tail_{0};  // next slot to push; written by the producer only
};

}  // namespace platoon::data
