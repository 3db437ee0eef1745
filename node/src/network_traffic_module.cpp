#include "platoon/node/network_traffic_module.hpp"

#include "action_args.hpp"

#include "platoon/config/params.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/session_road.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace platoon::node {

NetworkTrafficModule::NetworkTrafficModule(const config::SessionDef& session, const config::NodeDef& node)
    : name_(node.name), rate_hz_(node.module_rate_hz) {
  network_ = std::make_unique<road::RoadNetwork>(road::SessionRoadNetwork(session.road));
  graph_ = std::make_unique<road::LaneGraph>(*network_, road::SessionJunctions(session.road));
  vehicle::NetworkTrafficDef def = vehicle::DefaultNetworkTrafficDef();
  def.vehicles = node.vehicles;
  def.idm.desired_speed_mps = std::max(1.0, node.speed_mps);
  const uint64_t h = VehicleId(node.name, 0) >> 16;
  def.seed = h ^ session.road.seed;
  traffic_ = std::make_unique<vehicle::NetworkTraffic>(*graph_, def);
  if (traffic_->Cars().empty() && node.vehicles > 0)
    throw config::ConfigError(fmt::format("{}: node \"{}\" (traffic_model = \"network\") finds no driving lane long "
                                          "enough for a vehicle on the road network",
                                          session.road.file, node.name));
}

void NetworkTrafficModule::Step(const StepInfo& info, ModuleContext& context) {
  // Every remote vehicle (human drivers, other nodes' traffic) where this node displays it: followed and yielded to.
  std::vector<vehicle::NetworkExternal> external;
  for (const auto& e : context.RemoteEntities(info.sim_ns)) {
    if (e.state.kind == protocol::EntityKind::kPedestrian || e.state.kind == protocol::EntityKind::kStaticObject) continue;
    const Vec3 f = e.displayed.orientation * Vec3::UnitX();
    external.push_back(vehicle::NetworkExternal{e.displayed.position_m, std::atan2(f.y(), f.x()),
                                                e.state.kinematics.velocity_mps.norm(),
                                                e.state.box_size_m.x() > 0 ? e.state.box_size_m.x() : 4.5, e.state.id});
  }
  traffic_->SetExternal(std::move(external));
  if (info.dt_ns > 0) traffic_->Step(NsToS(info.dt_ns));
  max_external_ = std::max(max_external_, traffic_->ExternalOnLanes());
  for (const auto& c : traffic_->Cars()) {
    protocol::EntityState e;
    e.id = VehicleId(name_, c.index);
    e.kind = protocol::EntityKind::kCar;
    e.kinematics = traffic_->State(c, info.sim_ns);
    e.lights.headlights = true;
    e.lights.brake = c.accel_mps2 < -0.5;
    context.Publish(e);
  }
  if (info.sim_ns >= next_check_ns_) {
    next_check_ns_ = info.sim_ns + 1'000'000'000;
    check_ = traffic_->Check();
  }
}

void NetworkTrafficModule::OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) {
  if (!IsActionForThisNode(event, context)) return;
  const std::string& a = event.text;
  const std::string& d = event.detail;
  bool ok = false;
  if (const auto vehicle = VehicleIndexOf(event, name_)) {
    const uint32_t index = *vehicle;
    if (a == "brake") ok = traffic_->Brake(index, JsonNumber(d, "decel_mps2", 6), JsonNumber(d, "duration_s", 0));
    else if (a == "stop") ok = traffic_->Stop(index, JsonNumber(d, "decel_mps2", 4));
    else if (a == "resume") ok = traffic_->Resume(index);
    else if (a == "remove") ok = traffic_->Remove(index);
  }
  ++(ok ? actions_done_ : actions_refused_);
}

void NetworkTrafficModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  namespace b = config::bounds;
  auto* t = traffic_.get();
  registry.AddFloat(prefix + "desired_speed_mps", "m/s", b::kTrafficSpeedMps,
                    "Mean desired speed of the network traffic (each vehicle keeps its spread; at least 1 m/s)",
                    [t] { return t->DesiredSpeed(); }, [t](double v) { t->SetDesiredSpeed(std::max(1.0, v)); });
  registry.AddInt(prefix + "vehicles", "", b::kVehicles, "Vehicles of this traffic (fixed at start)",
                  [t] { return static_cast<int64_t>(t->Cars().size()); });
}

void NetworkTrafficModule::Summarize(std::vector<std::string>& fields) const {
  size_t movements = 0;
  for (const auto& p : graph_->Pieces()) movements += p.junction_id >= 0 ? 1 : 0;
  uint64_t crossed = 0;
  for (const auto& [piece, n] : traffic_->Movements()) crossed += n;
  fields.push_back(fmt::format(
      "\"network_vehicles\":{},\"network_lanes\":{},\"network_movements\":{},\"network_movements_driven\":{},"
      "\"network_junction_crossings\":{},\"network_overlaps\":{},\"network_forced_stops\":{},"
      "\"network_min_gap_m\":{:.2f},\"network_max_wait_s\":{:.1f},\"network_max_external\":{},"
      "\"network_actions\":{},\"network_actions_refused\":{},\"network_stop_sign_stops\":{},"
      "\"network_right_before_left\":{}",
      traffic_->Cars().size(), graph_->Pieces().size(), movements, traffic_->Movements().size(), crossed,
      check_.overlaps, check_.forced_stops, check_.min_gap_m > 1e8 ? -1.0 : check_.min_gap_m, check_.max_wait_s,
      max_external_, actions_done_, actions_refused_, check_.stops, check_.right_before_left));
}

}  // namespace platoon::node
