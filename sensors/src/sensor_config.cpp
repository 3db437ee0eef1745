#include "platoon/sensors/sensor_config.hpp"

#include "platoon/sensors/sensor_registry.hpp"
#include "platoon/text/name_rule.hpp"

#include <cmath>

namespace platoon::sensors {
namespace {

constexpr double kDeg = M_PI / 180.0;

}  // namespace

std::optional<LidarDef> LidarPreset(std::string_view name) {
  if (name == "default") return DefaultLidarDef();
  if (name == "ibeo_lux") return IbeoLuxDef();
  if (name == "valeo_scala") return ValeoScalaDef();
  if (name == "vlp16") return Vlp16Def();
  if (name == "hdl64") return Hdl64Def();
  if (name == "os1_128") return Os1_128Def();
  return std::nullopt;
}

Mounting MountingFromRpy(const Vec3& position_m, double roll_deg, double pitch_deg, double yaw_deg) {
  Mounting m;
  m.position_m = position_m;
  m.orientation = (Eigen::AngleAxisd(yaw_deg * kDeg, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch_deg * kDeg, Vec3::UnitY()) *
                   Eigen::AngleAxisd(roll_deg * kDeg, Vec3::UnitX()))
                      .normalized();
  return m;
}

SensorSpec ReadSensorSpec(const config::Table& t) {
  SensorSpec s;
  s.id = t.RequireString("id");
  // Sensor ids become stream ids and file names: the one name rule of nodes and sessions.
  if (std::string error = text::CheckName(s.id); !error.empty()) t.Fail("id", error);
  // The kind names come from the registry: a kind without a row is an unknown `type`.
  const std::string type = t.RequireString("type", SensorKindNames());
  const SensorKindRow& row = *FindSensorKind(type);
  s.kind = row.kind;
  const auto pos = t.GetDoubleArray("position", {0, 0, 0}, 3, -100, 100);
  const auto rpy = t.GetDoubleArray("rpy_deg", {0, 0, 0}, 3, -360, 360);
  s.mounting = MountingFromRpy(Vec3(pos[0], pos[1], pos[2]), rpy[0], rpy[1], rpy[2]);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the id: distinct, stable default seeds
  for (unsigned char c : s.id) h = (h ^ c) * 1099511628211ull;
  s.seed = static_cast<uint64_t>(t.GetInt("seed", static_cast<int64_t>(h >> 1), 0));
  row.read(t, s);
  t.RejectUnknownKeys();
  return s;
}

}  // namespace platoon::sensors
