#pragma once
/// The sensor kinds, one row each: the name used in session files, the stream kind on the wire, the
/// reader of the kind's keys of a [[node.sensor]] table and the factory of its run-time object.
/// ReadSensorSpec and every sensor host look kinds up here; nothing else switches on the kind.
/// Adding a kind: docs/ARCHITECTURE.md "Where a change goes".

#include "platoon/config/table.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/sensors/sensor_instance.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::sensors {

struct SensorSpec;

/// One sensor kind.
struct SensorKindRow {
  /// Value of `type` in a [[node.sensor]] table, e.g. "lidar"; equals protocol::StreamKindName(kind).
  std::string_view name;
  /// Stream kind of its data stream.
  protocol::StreamKind kind = protocol::StreamKind::kUnknown;
  /// Reads the kind's keys of table `t` into `spec` (its definition and rate_hz; id, mounting and seed
  /// are read already) and validates them; throws config::ConfigError naming file, line and key.
  void (*read)(const config::Table& t, SensorSpec& spec) = nullptr;
  /// Makes the run-time object of a spec of this kind.
  std::unique_ptr<SensorInstance> (*make)(const SensorSpec& spec, const SensorServices& services) = nullptr;
};

/// Every sensor kind, in a stable order (lidar, radar, camera, imu, gnss, objects).
std::span<const SensorKindRow> SensorKinds();

/// The row of kind `name` ("lidar"), or nullptr.
const SensorKindRow* FindSensorKind(std::string_view name);

/// The row of stream kind `kind`, or nullptr (kUnknown, kFused).
const SensorKindRow* FindSensorKind(protocol::StreamKind kind);

/// The names of every kind, for error messages and config validation.
std::vector<std::string> SensorKindNames();

/// The run-time object of `spec`, made by its kind's row; throws std::invalid_argument for a kind
/// with no row.
std::unique_ptr<SensorInstance> MakeSensorInstance(const SensorSpec& spec, const SensorServices& services);

}  // namespace platoon::sensors
