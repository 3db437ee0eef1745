#pragma once
/// Live plots of entity variables (seed 004 §5.10 Plot Plug-in): fixed-size ring buffers sampled at a
/// user-chosen rate, several variables of one entity recorded side by side so they can be overlaid.
/// Pure data, no UI.

#include "platoon/protocol/messages.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace platoon::viewer {

/// A ring buffer of the newest `capacity` samples.
class RingBuffer {
 public:
  /// Holds up to `capacity` (>= 1) samples.
  explicit RingBuffer(size_t capacity = 600);
  /// Appends a sample, dropping the oldest when full.
  void Push(float value);
  /// Number of samples held.
  size_t Size() const { return size_; }
  /// Most samples held.
  size_t Capacity() const { return data_.size(); }
  /// Sample `i`, 0 the oldest. Precondition: i < Size().
  float At(size_t i) const { return data_[(head_ + data_.size() - size_ + i) % data_.size()]; }
  /// Samples oldest first.
  std::vector<float> Ordered() const;
  /// Drops every sample.
  void Clear() { size_ = 0; }

 private:
  std::vector<float> data_;
  size_t head_ = 0;  // where the next sample goes
  size_t size_ = 0;
};

/// A variable of an entity that can be plotted.
enum class PlotVariable : uint8_t { kSpeed, kYawRate, kLongAccel, kLatAccel, kHeading, kX, kY, kCount };

/// Display name with unit, e.g. "speed [m/s]".
const char* PlotVariableName(PlotVariable v);
/// Value of `v` for an entity state (world-frame kinematics): speed |v|, yaw rate w_z, longitudinal and
/// lateral acceleration in the body frame, heading (yaw) in deg, position x and y.
double PlotValue(PlotVariable v, const protocol::EntityState& e);

/// Records the chosen variables of one entity at `sample_rate_hz` of sim time.
class PlotRecorder {
 public:
  /// `capacity` samples per variable, taken every 1 / sample_rate_hz of sim time.
  PlotRecorder(double sample_rate_hz = 20.0, size_t capacity = 600);

  /// Follows entity `id` (clears the buffers when it changes); 0 follows none.
  void SetEntity(uint64_t id);
  /// Entity followed (0: none).
  uint64_t Entity() const { return entity_; }
  /// Changes the sample rate, in Hz (> 0), and the capacity; clears the buffers.
  void Configure(double sample_rate_hz, size_t capacity);
  /// Sample rate, in Hz.
  double SampleRateHz() const { return rate_hz_; }

  /// Samples the followed entity among `entities` if a sample is due at `sim_ns`; sim time that stands
  /// still (pause) records nothing, sim time that goes back restarts the buffers. Returns true when sampled.
  bool Record(int64_t sim_ns, const std::vector<protocol::EntityState>& entities);

  /// Buffer of variable `v`.
  const RingBuffer& Buffer(PlotVariable v) const { return buffers_[static_cast<size_t>(v)]; }

 private:
  void Clear();
  double rate_hz_;
  uint64_t entity_ = 0;
  int64_t next_ns_ = -1;
  int64_t last_ns_ = -1;
  std::array<RingBuffer, static_cast<size_t>(PlotVariable::kCount)> buffers_;
};

}  // namespace platoon::viewer
