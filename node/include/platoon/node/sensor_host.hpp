#pragma once
/// The sensor role: sensor models from platoon::sensors mounted on one vehicle of the session, each run
/// at its own rate on the synced sim clock, outputs published on the node's data socket with sensor
/// id, stamp, mounting pose and sequence number (docs/SENSORS.md, docs/PROTOCOL.md).
///
/// The world a sensor sees: the static scene of the session ([scene], optionally the road's
/// environment) plus every remote entity as a box, dead-reckoned (RVB) from its last received state to
/// the rays' own time. The vehicle the sensors sit on is not in the scene.

#include "platoon/config/session.hpp"
#include "platoon/node/module.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace platoon::node {

/// Entity id of the vehicle named by `attach_to` ("node" or "node:index"); throws config::ConfigError.
uint64_t AttachedVehicleId(const std::string& attach_to);

/// Adds the session's static geometry to `scene`: ground plane, [[scene.box]] entries and, when asked
/// for, the road environment. Does not commit.
void AddStaticScene(const config::SessionDef& session, sensors::Scene& scene);

/// Packs points into the wire records of PointCloud/FusedCloud (docs/PROTOCOL.md).
std::string PackPoints(const std::vector<sensors::CloudPoint>& points);
/// Unpacks wire records; empty when the stride is not the CloudPoint record size.
std::vector<sensors::CloudPoint> UnpackPoints(const std::string& bytes, uint16_t stride);

/// The session's static scene plus the remote entities as dynamic boxes, posed at any sim time.
class SensorWorld {
 public:
  SensorWorld(const config::SessionDef& session, uint64_t ego_id);
  /// Takes the remote entities (their last received states); the ego is left out.
  void Update(const std::vector<RemoteEntity>& remote);
  /// Poses every entity at sim time `t_ns` (RVB dead reckoning) and commits the scene.
  void PoseAt(int64_t t_ns);
  /// The ego's last received state, if any.
  const protocol::EntityState* Ego() const { return has_ego_ ? &ego_ : nullptr; }
  /// Remote entities other than the ego, last received states.
  const std::vector<protocol::EntityState>& Others() const { return others_; }
  const sensors::Scene& Scene() const { return scene_; }

 private:
  sensors::Scene scene_;
  uint64_t ego_id_;
  bool has_ego_ = false;
  protocol::EntityState ego_;
  std::vector<protocol::EntityState> others_;
  std::map<uint64_t, sensors::DynamicId> slots_;  // entity id -> box
  std::vector<sensors::DynamicId> free_;
  bool dirty_ = false;  // boxes added or parked since the last commit
};

/// Every sensor of one sensor host, as one module stepped at the fastest sensor's rate; each sensor
/// measures at its own rate. A camera with render = "rgb8" or "png" also sends an image of the scene
/// (platoon::viewer: road, [[scene.box]] entries, remote vehicles), rendered off-screen from its
/// mounting pose with its intrinsics on the module thread; without a GL context (no display) it warns
/// once and sends ROIs only.
class SensorHostModule final : public Module {
 public:
  SensorHostModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log);
  ~SensorHostModule() override;
  std::string Name() const override { return "sensors"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  std::vector<protocol::DataEndpoint> Streams() const override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  struct Sensor;
  struct CameraImager;
  void Measure(Sensor& s, int64_t t_ns, ModuleContext& context);
  void RenderImage(Sensor& s, const Pose& camera_world, int64_t t_ns, protocol::CameraFrame& frame);
  protocol::SensorHeader Header(Sensor& s, int64_t stamp_ns, uint32_t node_id) const;

  std::shared_ptr<spdlog::logger> log_;
  config::SessionDef session_;  // what camera images draw: the road and the [[scene.box]] entries
  uint64_t ego_id_;
  std::string attach_to_;
  std::unique_ptr<SensorWorld> world_;
  std::vector<std::unique_ptr<Sensor>> sensors_;
  double rate_hz_ = 10;
  uint64_t host_epoch_;
  uint64_t no_ego_steps_ = 0;
  bool warned_no_ego_ = false;
};

}  // namespace platoon::node
