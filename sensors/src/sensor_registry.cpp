#include "platoon/sensors/sensor_registry.hpp"

#include "kinds/sensor_kinds.hpp"

#include <array>
#include <stdexcept>

namespace platoon::sensors {
namespace {

using protocol::StreamKind;

// One row per sensor kind; each kind's reader and run-time object live in src/kinds/<kind>_sensor.cpp.
const std::array<SensorKindRow, 6> kRows = {{
    {"lidar", StreamKind::kLidar, &kinds::ReadLidar, &kinds::MakeLidar},
    {"radar", StreamKind::kRadar, &kinds::ReadRadar, &kinds::MakeRadar},
    {"camera", StreamKind::kCamera, &kinds::ReadCamera, &kinds::MakeCamera},
    {"imu", StreamKind::kImu, &kinds::ReadImu, &kinds::MakeImu},
    {"gnss", StreamKind::kGnss, &kinds::ReadGnss, &kinds::MakeGnss},
    {"objects", StreamKind::kObjects, &kinds::ReadObjects, &kinds::MakeObjects},
}};

}  // namespace

std::span<const SensorKindRow> SensorKinds() { return kRows; }

const SensorKindRow* FindSensorKind(std::string_view name) {
  for (const auto& row : kRows)
    if (row.name == name) return &row;
  return nullptr;
}

const SensorKindRow* FindSensorKind(protocol::StreamKind kind) {
  for (const auto& row : kRows)
    if (row.kind == kind) return &row;
  return nullptr;
}

std::vector<std::string> SensorKindNames() {
  std::vector<std::string> out;
  for (const auto& row : kRows) out.emplace_back(row.name);
  return out;
}

std::unique_ptr<SensorInstance> MakeSensorInstance(const SensorSpec& spec, const SensorServices& services) {
  const SensorKindRow* row = FindSensorKind(spec.kind);
  if (!row)
    throw std::invalid_argument("sensor '" + spec.id + "': no sensor kind '" +
                                std::string(protocol::StreamKindName(spec.kind)) + "' in the registry");
  return row->make(spec, services);
}

}  // namespace platoon::sensors
