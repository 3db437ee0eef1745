#include "platoon/viewer/plot_buffer.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace platoon::viewer {

RingBuffer::RingBuffer(size_t capacity) : data_(std::max<size_t>(capacity, 1), 0.0f) {}

void RingBuffer::Push(float value) {
  data_[head_] = value;
  head_ = (head_ + 1) % data_.size();
  size_ = std::min(size_ + 1, data_.size());
}

std::vector<float> RingBuffer::Ordered() const {
  std::vector<float> out(size_);
  for (size_t i = 0; i < size_; ++i) out[i] = At(i);
  return out;
}

const char* PlotVariableName(PlotVariable v) {
  switch (v) {
    case PlotVariable::kSpeed: return "speed [m/s]";
    case PlotVariable::kYawRate: return "yaw rate [rad/s]";
    case PlotVariable::kLongAccel: return "long. accel [m/s^2]";
    case PlotVariable::kLatAccel: return "lat. accel [m/s^2]";
    case PlotVariable::kHeading: return "heading [deg]";
    case PlotVariable::kX: return "x [m]";
    case PlotVariable::kY: return "y [m]";
    case PlotVariable::kCount: break;
  }
  return "?";
}

double PlotValue(PlotVariable v, const protocol::EntityState& e) {
  const KinematicState& k = e.kinematics;
  const Vec3 forward = k.pose.orientation * Vec3::UnitX();
  const Vec3 left = k.pose.orientation * Vec3::UnitY();
  switch (v) {
    case PlotVariable::kSpeed: return k.velocity_mps.norm();
    case PlotVariable::kYawRate: return k.angular_velocity_radps.z();
    case PlotVariable::kLongAccel: return k.acceleration_mps2.dot(forward);
    case PlotVariable::kLatAccel: return k.acceleration_mps2.dot(left);
    case PlotVariable::kHeading: return std::atan2(forward.y(), forward.x()) * 180.0 / M_PI;
    case PlotVariable::kX: return k.pose.position_m.x();
    case PlotVariable::kY: return k.pose.position_m.y();
    case PlotVariable::kCount: break;
  }
  return 0.0;
}

PlotRecorder::PlotRecorder(double sample_rate_hz, size_t capacity) : rate_hz_(sample_rate_hz) {
  assert(sample_rate_hz > 0);
  for (auto& b : buffers_) b = RingBuffer(capacity);
}

void PlotRecorder::Clear() {
  for (auto& b : buffers_) b.Clear();
  next_ns_ = -1;
  last_ns_ = -1;
}

void PlotRecorder::SetEntity(uint64_t id) {
  if (id == entity_) return;
  entity_ = id;
  Clear();
}

void PlotRecorder::Configure(double sample_rate_hz, size_t capacity) {
  assert(sample_rate_hz > 0);
  rate_hz_ = sample_rate_hz;
  for (auto& b : buffers_) b = RingBuffer(capacity);
  Clear();
}

bool PlotRecorder::Record(int64_t sim_ns, const std::vector<protocol::EntityState>& entities) {
  if (entity_ == 0) return false;
  if (last_ns_ >= 0 && sim_ns < last_ns_) Clear();  // sim time went back: a new session
  if (sim_ns == last_ns_ || (next_ns_ >= 0 && sim_ns < next_ns_)) return false;
  const auto it = std::find_if(entities.begin(), entities.end(), [&](const auto& e) { return e.id == entity_; });
  if (it == entities.end()) return false;
  for (size_t v = 0; v < buffers_.size(); ++v)
    buffers_[v].Push(static_cast<float>(PlotValue(static_cast<PlotVariable>(v), *it)));
  const auto period = static_cast<int64_t>(1e9 / rate_hz_);
  next_ns_ = (next_ns_ < 0 ? sim_ns : next_ns_) + period;
  if (next_ns_ <= sim_ns) next_ns_ = sim_ns + period;  // fell behind: skip, never burst
  last_ns_ = sim_ns;
  return true;
}

}  // namespace platoon::viewer
