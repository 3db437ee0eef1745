#pragma once
// A ModuleContext for stepping sensor modules without a runtime: it serves a fixed world and keeps
// every camera frame published. Shared by the sensor-host tests with and without a display.
#include "platoon/node/module.hpp"

#include <cmath>
#include <optional>
#include <variant>
#include <vector>

namespace platoon::testing {

class CameraContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> remote;
  std::vector<protocol::CameraFrame> frames;
  int64_t step_ns = 0;  // the lock-step period; 0: real time
  std::optional<world::WorldConditions> conditions;  // what the server last sent (none: nothing yet)
  std::optional<world::WorldConditions> Conditions() const override { return conditions; }
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return remote; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
  int64_t StepNs() const override { return step_ns; }
  void PublishData(const protocol::Message& m) override {
    if (const auto* f = std::get_if<protocol::CameraFrame>(&m)) frames.push_back(*f);
  }
};

// A standing car (entity `id`) at `position`, heading `yaw_rad`.
inline node::RemoteEntity StandingCar(uint64_t id, const Vec3& position, double yaw_rad = 0.0) {
  node::RemoteEntity r;
  r.state.id = id;
  r.state.kind = protocol::EntityKind::kCar;
  r.state.kinematics.pose = Pose{position, Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()))};
  r.displayed = r.state.kinematics.pose;
  return r;
}

}  // namespace platoon::testing
