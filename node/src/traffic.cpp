#include "platoon/node/traffic.hpp"

#include <algorithm>

namespace platoon::node {

protocol::EntityState TrafficTruth(const config::NodeDef& node, uint32_t index, int64_t sim_ns) {
  // Each node's stadium sits at its own place (from its name), vehicles spread evenly along it,
  // each a little faster than the one before, so they never need to overtake within a session.
  const uint64_t h = VehicleId(node.name, 0) >> 16;
  StadiumTrack track;
  track.center_m = node.track_center_m ? *node.track_center_m
                                       : Vec3(static_cast<double>(h % 1000) * 300.0, static_cast<double>((h / 1000) % 1000) * 300.0, 0);
  const double spacing = track.LengthM() / std::max(1, node.vehicles);
  const double speed = node.speed_mps * (1.0 + 0.01 * index);
  protocol::EntityState e;
  e.id = VehicleId(node.name, index);
  e.kind = protocol::EntityKind::kCar;
  e.kinematics = track.At(index * spacing + speed * NsToS(sim_ns), speed, sim_ns);
  e.controls.throttle = 0.2f;
  e.lights.headlights = true;
  return e;
}

TrafficModule::TrafficModule(const config::NodeDef& node) : node_(node), rate_hz_(node.module_rate_hz) {}

void TrafficModule::Step(const StepInfo& info, ModuleContext& context) {
  ++steps_;
  for (int i = 0; i < node_.vehicles; ++i) context.Publish(TrafficTruth(node_, static_cast<uint32_t>(i), info.sim_ns));
}

void TrafficModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  namespace b = config::bounds;
  registry.AddFloat(prefix + "speed_mps", "m/s", b::kTrafficSpeedMps,
                    "Cruising speed on the stadium track (fixed: positions follow from it and sim time)",
                    [this] { return node_.speed_mps; });
  registry.AddInt(prefix + "vehicles", "", b::kVehicles, "Vehicles on the track (fixed at start)",
                  [this] { return static_cast<int64_t>(node_.vehicles); });
}

void TrafficModule::Summarize(std::vector<std::string>& fields) const {
  fields.push_back("\"traffic_vehicles\":" + std::to_string(node_.vehicles));
  fields.push_back("\"traffic_steps\":" + std::to_string(steps_));
}

}  // namespace platoon::node
