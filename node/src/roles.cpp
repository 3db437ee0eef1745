#include "platoon/node/roles.hpp"

#include "platoon/node/driver_seat.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/network_traffic_module.hpp"
#include "platoon/node/recorder.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/node/route_traffic.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/node/traffic.hpp"

#include <array>

namespace platoon::node::roles {
namespace {

using Modules = std::vector<std::unique_ptr<Module>>;
using Log = std::shared_ptr<spdlog::logger>;

// One module of type M, built from what its constructor takes.
template <typename M, typename... Args>
Modules One(Args&&... args) {
  Modules out;
  out.push_back(std::make_unique<M>(std::forward<Args>(args)...));
  return out;
}

Modules Observer(const config::SessionDef&, const config::NodeDef&, Log) { return {}; }

Modules Traffic(const config::SessionDef& session, const config::NodeDef& node, Log log) {
  // traffic_model picks the model: vehicles on the session's road, on its road network through junctions,
  // along routes, people walking, or the closed stadium tracks.
  if (node.traffic_model == "road") return One<RoadTrafficModule>(session, node);
  if (node.traffic_model == "network") return One<NetworkTrafficModule>(session, node);
  if (node.traffic_model == "route") return One<RouteTrafficModule>(session, node, std::move(log));
  if (node.traffic_model == "pedestrians") return One<PedestrianModule>(node);
  return One<TrafficModule>(node);
}

Modules Driver(const config::SessionDef& session, const config::NodeDef& node, Log log) {
  return One<DriverSeatModule>(session, node, std::move(log));
}

Modules Sensor(const config::SessionDef& session, const config::NodeDef& node, Log log) {
  return One<SensorHostModule>(session, node, std::move(log));
}

Modules Fusion(const config::SessionDef& session, const config::NodeDef& node, Log log) {
  return One<FusionModule>(session, node, std::move(log));
}

Modules Recorder(const config::SessionDef& session, const config::NodeDef& node, Log log) {
  return One<RecorderModule>(session, node, std::move(log));
}

// One row per role.
const std::array<RoleRow, 6> kRows = {{
    {"observer", protocol::Role::kObserver, &Observer},
    {"traffic", protocol::Role::kTraffic, &Traffic},
    {"driver", protocol::Role::kDriver, &Driver},
    {"sensor", protocol::Role::kSensor, &Sensor},
    {"fusion", protocol::Role::kFusion, &Fusion},
    {"recorder", protocol::Role::kRecorder, &Recorder},
}};

}  // namespace

std::span<const RoleRow> Table() { return kRows; }

const RoleRow* Find(protocol::Role role) {
  for (const auto& row : kRows)
    if (row.role == role) return &row;
  return nullptr;
}

bool Available(protocol::Role role, std::string& why) {
  if (Find(role)) return true;
  std::string names;
  for (const auto& row : kRows) names += (names.empty() ? "" : ", ") + std::string(row.name);
  why = "role '" + std::string(protocol::RoleName(role)) + "' is not available in this version (available: " + names + ")";
  return false;
}

std::vector<std::unique_ptr<Module>> MakeModules(const config::SessionDef& session, const config::NodeDef& node,
                                                 std::shared_ptr<spdlog::logger> log) {
  std::string why;
  if (!Available(node.role, why)) throw config::ConfigError(session.file + ": node \"" + node.name + "\": " + why);
  return Find(node.role)->make(session, node, std::move(log));
}

}  // namespace platoon::node::roles
