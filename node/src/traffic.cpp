#include "platoon/node/traffic.hpp"

#include <cmath>
#include <numbers>

namespace platoon::node {

double StadiumTrack::LengthM() const { return 2 * straight_m + 2 * std::numbers::pi * radius_m; }

KinematicState StadiumTrack::At(double s_m, double v, int64_t stamp_ns) const {
  const double L = LengthM();
  double s = std::fmod(s_m, L);
  if (s < 0) s += L;
  const double half = straight_m / 2, arc = std::numbers::pi * radius_m;
  Vec3 p;
  double heading = 0, curvature = 0;
  if (s < straight_m) {  // bottom straight, heading +x
    p = Vec3(-half + s, -radius_m, 0);
  } else if (s < straight_m + arc) {  // right half circle, turning left
    const double a = (s - straight_m) / radius_m;  // angle travelled
    p = Vec3(half + radius_m * std::sin(a), -radius_m * std::cos(a), 0);
    heading = a;
    curvature = 1 / radius_m;
  } else if (s < 2 * straight_m + arc) {  // top straight, heading -x
    p = Vec3(half - (s - straight_m - arc), radius_m, 0);
    heading = std::numbers::pi;
  } else {  // left half circle
    const double a = (s - 2 * straight_m - arc) / radius_m;
    p = Vec3(-half - radius_m * std::sin(a), radius_m * std::cos(a), 0);
    heading = std::numbers::pi + a;
    curvature = 1 / radius_m;
  }
  KinematicState k;
  k.stamp_ns = stamp_ns;
  k.pose.position_m = center_m + p;
  k.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
  const Vec3 forward(std::cos(heading), std::sin(heading), 0), left(-std::sin(heading), std::cos(heading), 0);
  k.velocity_mps = v * forward;
  k.acceleration_mps2 = v * v * curvature * left;
  k.angular_velocity_radps = Vec3(0, 0, v * curvature);
  return k;
}

uint64_t VehicleId(const std::string& node_name, uint32_t index) {
  uint32_t h = 2166136261u;
  for (unsigned char c : node_name) h = (h ^ c) * 16777619u;
  return (static_cast<uint64_t>(h) << 16) | (index & 0xffff);
}

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

void TrafficModule::Summarize(std::vector<std::string>& fields) const {
  fields.push_back("\"traffic_vehicles\":" + std::to_string(node_.vehicles));
  fields.push_back("\"traffic_steps\":" + std::to_string(steps_));
}

}  // namespace platoon::node
