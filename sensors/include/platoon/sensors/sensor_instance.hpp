#pragma once
/// One configured sensor at run time: the per-kind object a sensor host steps. It is handed a const
/// view of the world at an explicit sim time and returns a measurement; it owns only its own state
/// (noise generator, IMU biases, image renderer). The host owns the schedule, the stream header
/// (sensor id, sequence, mounting, host epoch) and the socket. Made by the kind's registry row
/// (sensor_registry.hpp).

#include "platoon/config/params.hpp"
#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/world/conditions.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace platoon::sensors {

struct SensorSpec;

/// The world as a sensor sees it. Every query names its sim time, so a scanning sensor can pose the
/// world at each block's own firing time. The vehicle the sensors sit on is not in OthersAt or SceneAt.
class SensorWorldView {
 public:
  virtual ~SensorWorldView() = default;
  /// State of the vehicle the sensors are mounted on at sim time `t_ns` (ns).
  virtual KinematicState EgoAt(int64_t t_ns) const = 0;
  /// Every other entity, its kinematics at sim time `t_ns` (ns); other fields as last received.
  virtual std::vector<protocol::EntityState> OthersAt(int64_t t_ns) const = 0;
  /// The ray-casting scene with every dynamic box posed at sim time `t_ns` (ns). Posing moves only the
  /// view's acceleration structure, never the world, hence const. Valid until the next SceneAt call.
  virtual const Scene& SceneAt(int64_t t_ns) const = 0;
  /// The session's light and weather now (fog, rain, sun); default: clear noon.
  virtual world::WorldConditions Conditions() const { return {}; }
};

/// Draws a camera's image. Implemented where a renderer lives (the node, through the viewer library),
/// since sensors depend on shared/ only.
class CameraImager {
 public:
  virtual ~CameraImager() = default;
  /// Renders the static scene and `others` (states at the frame's time) from `camera_world` into
  /// frame.image and frame.encoding. Returns "" on success, else why not (frame.image then empty).
  virtual std::string Render(const Pose& camera_world, const std::vector<protocol::EntityState>& others,
                             protocol::CameraFrame& frame) = 0;
  /// Appends the imager's own summary members (",\"name\":value", e.g. the monitor window's counters).
  virtual void Summarize(std::string& json_members) const { (void)json_members; }
};

/// What a sensor host hands the factories of the registry.
struct SensorServices {
  /// Makes the image renderer of a camera whose render is not "none"; unset or returning null:
  /// ROIs only.
  std::function<std::unique_ptr<CameraImager>(const SensorSpec&)> make_camera_imager;
};

/// One measurement: a sensor message whose header carries only its stamp_ns (the host fills in the
/// rest), and how many items it holds.
struct Measurement {
  protocol::Message message;  ///< PointCloud, RadarScan, CameraFrame, ImuMeasurement, GnssMeasurement, ...
  uint64_t items = 0;         ///< Points, detections or ROIs in it; 0 for a single sample.
};

/// A configured sensor's run-time object.
class SensorInstance {
 public:
  virtual ~SensorInstance() = default;
  /// Measures what is due at sim time `t_ns` (ns): for a scan, the scan that completes at t_ns.
  /// nullopt when there is nothing to send.
  virtual std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) = 0;
  /// Appends kind-specific JSON members, each starting with ',', to the sensor's summary object
  /// (e.g. a camera's ,"images":12,"mean_render_ms":3.1).
  virtual void Summarize(std::string& json_members) const { (void)json_members; }
  /// Registers what may be tuned live (noise figures) under `prefix` ("node.<name>.<sensor id>."), with
  /// the bounds its [[node.sensor]] keys are read with. Setters run between measurements.
  virtual void Params(config::ParamRegistry& registry, const std::string& prefix) { (void)registry; (void)prefix; }
};

/// Ground-truth label of an entity in points, ROIs and radar objects: the low 32 bits of its 48-bit id.
inline uint32_t TruthLabel(uint64_t entity_id) { return static_cast<uint32_t>(entity_id & 0xffffffffu); }

/// World pose of an entity's box centre from its state (origin at the rear-axle centre) and box size (m).
inline Pose EntityBoxPose(const KinematicState& k, const Vec3& size_m) {
  return Pose{k.pose.position_m + k.pose.orientation * BoxCentreInBody(size_m), k.pose.orientation};
}

}  // namespace platoon::sensors
