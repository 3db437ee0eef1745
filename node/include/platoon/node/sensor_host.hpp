#pragma once
/// The sensor role: sensor models from platoon::sensors mounted on one vehicle of the session, each run
/// at its own rate on the synced sim clock, outputs published on the node's data socket with sensor
/// id, stamp, mounting pose and sequence number (docs/SENSORS.md, docs/PROTOCOL.md). What each kind
/// measures comes from the sensor registry (platoon/sensors/sensor_registry.hpp); this module only
/// schedules, stamps and publishes.
///
/// The world a sensor sees: the static scene of the session ([scene], optionally the road's
/// environment) plus every remote entity as a box, as the node's world view displays it (dead-reckoned
/// with its kind's model and blended), carried to the rays' own time with the kind's model. The
/// vehicle the sensors sit on is not in the scene.

#include "platoon/config/session.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/module.hpp"
#include "platoon/point_record.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/sensors/sensor_instance.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace platoon::node {

/// Entity id of the vehicle named by `attach_to`; defined in shared (platoon/entity_id.hpp).
using ::platoon::AttachedVehicleId;

/// Adds the session's static geometry to `scene`: ground plane, [[scene.box]] entries and, when asked
/// for, the road environment. Does not commit.
void AddStaticScene(const config::SessionDef& session, sensors::Scene& scene);

/// Packs points into the wire records of PointCloud/FusedCloud (platoon/point_record.hpp).
inline std::string PackPoints(const std::vector<sensors::CloudPoint>& points) { return PackPointRecords(points); }
/// Unpacks wire records; empty when the stride is not the record size or the blob is not whole records.
inline std::vector<sensors::CloudPoint> UnpackPoints(const std::string& bytes, uint16_t stride) {
  if (stride != point_record::kStride || bytes.size() % stride != 0) return {};
  return UnpackPointRecords(bytes, static_cast<uint32_t>(bytes.size() / stride), stride);
}

/// One entity as the sensors see it: its last received fields, its displayed state at the anchor time
/// (kinematics) and the dead-reckoning model of its kind, which carries it to any other time.
struct SensedEntity {
  protocol::EntityState state;  ///< Kinematics = displayed state at the anchor time.
  dr::Model model = dr::Model::kRvb;
};

/// The displayed state of `remote` at `at_ns`: the world view's pose (dead-reckoned with the kind's
/// model `model` and blended), with the model's velocities turned by the blend's rotation.
KinematicState DisplayedState(const RemoteEntity& remote, dr::Model model, int64_t at_ns);

/// The session's static scene plus the remote entities as dynamic boxes, posed at any sim time.
class SensorWorld final : public sensors::SensorWorldView {
 public:
  SensorWorld(const config::SessionDef& session, uint64_t ego_id);
  /// Takes the remote entities as the world view displays them at `displayed_ns` (ns).
  void Update(const std::vector<RemoteEntity>& remote, int64_t displayed_ns);
  /// True once the vehicle the sensors sit on is in the world.
  bool HasEgo() const { return has_ego_; }
  KinematicState EgoAt(int64_t t_ns) const override;
  std::vector<protocol::EntityState> OthersAt(int64_t t_ns) const override;
  const sensors::Scene& SceneAt(int64_t t_ns) const override;
  /// Takes the session's light and weather (ModuleContext::Conditions), which every sensor measures in, and
  /// what the variable message signs show (their plates' class detail in the scene: the camera's ROIs).
  void SetConditions(const world::WorldConditions& conditions);
  world::WorldConditions Conditions() const override { return conditions_; }

 private:
  // The scene is a cache of the world posed at one time: SceneAt moves boxes, never entities.
  mutable sensors::Scene scene_;
  uint64_t ego_id_;
  bool has_ego_ = false;
  SensedEntity ego_;
  std::vector<SensedEntity> others_;
  std::map<uint64_t, sensors::DynamicId> slots_;  // entity id -> box
  std::vector<sensors::DynamicId> free_;
  mutable bool dirty_ = false;  // boxes added or parked since the last commit
  world::WorldConditions conditions_;
};

/// Every sensor of one sensor host, as one module stepped at 1 kHz; each sensor measures at whole
/// multiples of its own period. A camera with render = "rgb8" or "png" also sends an image of the scene
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
  /// Per sensor under "<prefix><sensor id>.": rate_hz and kind (read-only), and its kind's noise figures.
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  struct Sensor;
  void Measure(Sensor& s, int64_t t_ns, ModuleContext& context);
  // Opens a sensor's CAN bus and object mapping (can_bus, can_map); throws config::ConfigError.
  void OpenCan(Sensor& s);
  protocol::SensorHeader Header(Sensor& s, int64_t stamp_ns, uint32_t node_id) const;

  std::shared_ptr<spdlog::logger> log_;
  uint64_t ego_id_;
  std::string attach_to_;
  std::unique_ptr<SensorWorld> world_;
  /// The newest light and weather, shared with the cameras' image renderers (module thread only).
  std::shared_ptr<world::WorldConditions> camera_conditions_;
  std::vector<std::unique_ptr<Sensor>> sensors_;
  double rate_hz_ = 10;
  uint64_t host_epoch_;
  uint64_t no_ego_steps_ = 0;
  bool warned_no_ego_ = false;
};

}  // namespace platoon::node
