#pragma once
/// Sensor definitions from the session file: one [[node.sensor]] table per sensor of a sensor host.
/// Every key is optional except `id` and `type`; anything not given keeps the model's default (or the
/// preset's). Errors name the file, the line, the key and what was expected. Keys: docs/SENSORS.md.
/// The kinds and their keys come from the registry (sensor_registry.hpp).

#include "platoon/config/table.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/gnss.hpp"
#include "platoon/sensors/imu.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/object_list.hpp"
#include "platoon/sensors/radar.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace platoon::sensors {

/// Semantic classes the sensor host gives scene surfaces (SurfaceTag::class_id, CloudPoint::class_id).
enum class SemanticClass : uint32_t {
  kUnknown = 0,
  kGround = 1,
  kVehicle = 2,
  kBuilding = 3,
  kVegetation = 4,
  kPole = 5,
  kSign = 6,
  kGuardRail = 7,
  kStaticObject = 8,
  kWeather = 9,  ///< Fog or rain drops: a lidar's backscatter echo (kWeatherClassId).
};

/// One configured sensor: its id, kind, rate, mounting, seed and the model definition of its kind.
struct SensorSpec {
  std::string id;                                   ///< Stream id, unique in the session.
  protocol::StreamKind kind = protocol::StreamKind::kUnknown;  ///< Kind, from `type` via the registry.
  double rate_hz = 10.0;                            ///< Measurement rate, in Hz (a lidar's scan rate).
  Mounting mounting;                                ///< Pose of the sensor frame on the vehicle.
  uint64_t seed = 1;                                ///< Noise seed (default: from the id).
  LidarDef lidar;                                   ///< kind == lidar.
  RadarDef radar;                                   ///< kind == radar.
  CameraDef camera;                                 ///< kind == camera.
  ImuDef imu;                                       ///< kind == imu.
  GnssDef gnss;                                     ///< kind == gnss.
  ObjectListDef objects;                            ///< kind == objects (error chain, seed 002 ch. 3).
  std::string can_bus;                              ///< kind == objects: CAN bus spec its lists also go out on ("" none).
  std::string can_map;                              ///< kind == objects: object mapping file (absolute, or next to the session).
  std::string can_dir;                              ///< Directory relative candump paths of can_bus are taken from.
  std::string can_where;                            ///< "FILE:LINE: node[i].sensor[j].can_map" for errors of the mapping.
};

/// Lidar preset by name: "default", "ibeo_lux", "valeo_scala", "vlp16", "hdl64", "os1_128"; nullopt otherwise.
std::optional<LidarDef> LidarPreset(std::string_view name);

/// Reads one [[node.sensor]] table: common keys here, the kind's keys by its registry row; throws
/// config::ConfigError naming file, line and key (an unknown `type` lists the registry's kinds).
SensorSpec ReadSensorSpec(const config::Table& t);

/// Mounting from a position (m) and roll, pitch, yaw (deg, applied z-y-x: yaw first about z).
Mounting MountingFromRpy(const Vec3& position_m, double roll_deg, double pitch_deg, double yaw_deg);

}  // namespace platoon::sensors
