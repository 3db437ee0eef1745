#include "platoon/node/road_traffic_module.hpp"

#include "action_args.hpp"

#include "platoon/entity_id.hpp"
#include "platoon/road/session_road.hpp"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace platoon::node {

road::Road BuildSessionRoad(const config::RoadSessionDef& def) { return road::SessionRoad(def); }

RoadTrafficModule::RoadTrafficModule(const config::SessionDef& session, const config::NodeDef& node)
    : name_(node.name), rate_hz_(node.module_rate_hz) {
  if (session.road.endless) {
    endless_ = std::make_unique<road::EndlessRoad>(road::SessionEndlessRoadDef(session.road));
    // Drivers' vehicles: VehicleId(name, 0) of every driver node, by its node hash (id >> 16).
    for (const auto& n : session.nodes)
      if (n.role == protocol::Role::kDriver) driver_nodes_.push_back(VehicleId(n.name, 0) >> 16);
  }
  road_ = std::make_unique<road::Road>(endless_ ? endless_->Chunks().front().road : BuildSessionRoad(session.road));
  vehicle::RoadTrafficDef def = vehicle::DefaultRoadTrafficDef();
  def.vehicles = node.vehicles;
  def.idm.desired_speed_mps = std::max(1.0, node.speed_mps);
  def.lane_changes = node.lane_changes;
  lead_ = !node.lead.empty();
  if (!node.lead.empty()) {
    def.lead_of_id = VehicleId(node.lead, 0);
    def.lead_gap_m = node.lead_gap_m;
    def.lead_follows_lane = node.lead_follows_lane;
  }
  def.vehicle_lanes = node.vehicle_lanes;
  const uint64_t h = VehicleId(node.name, 0) >> 16;
  def.seed = h;
  // Several traffic nodes on one road start at different places.
  def.start_offset_m = static_cast<double>(h % 1000) / 1000.0 * (endless_ ? endless_->WindowEnd() : road_->Length());
  // start_s_m / start_lane / start_speed_mps place the first vehicle (a scenario's lead car).
  if (node.start_given) {
    def.first_s_m = node.start_s_m;
    def.first_lane = node.start_lane;
    def.first_speed_mps = node.start_speed_mps > 0 ? node.start_speed_mps : node.speed_mps;
  }
  traffic_ = endless_ ? std::make_unique<vehicle::RoadTraffic>(*endless_, def)
                     : std::make_unique<vehicle::RoadTraffic>(*road_, def);
  // Speed limits from the session's signs ([signs], [[sign]]; docs/WORLD.md "Signs"); not on endless roads.
  if (!endless_) {
    signs_ = road::SessionSigns(session);
    traffic_->SetSigns(signs_);
  }
}

void RoadTrafficModule::FollowDrivers(const std::vector<RemoteEntity>& remote) {
  // The window follows the drivers; vehicles leave and enter in zones none of them sees.
  std::vector<Vec3> where;
  std::vector<double> s;
  for (const auto& e : remote) {
    if (std::find(driver_nodes_.begin(), driver_nodes_.end(), e.state.id >> 16) == driver_nodes_.end()) continue;
    const Vec3 p = e.displayed.position_m;
    where.push_back(p);
    // Followed from where it was (the road may pass near itself); a driver seen first, or lost (more than
    // 50 m from the road there), is found on the whole window, drawing up to 4 km more road.
    const auto was = driver_s_.find(e.state.id);
    road::RoadCoord at;
    if (was != driver_s_.end()) at = endless_->ProjectNear(p, was->second - 150.0, was->second + 150.0);
    if (was == driver_s_.end() || at.distance_m > road::EndlessRoad::kLocateNearM) at = endless_->Locate(p, 8);
    driver_s_[e.state.id] = at.s_m;
    s.push_back(at.s_m);
  }
  if (s.empty())
    endless_->Cover(endless_->WindowStart(), endless_->WindowStart());
  else
    endless_->Cover(*std::min_element(s.begin(), s.end()), *std::max_element(s.begin(), s.end()));
  const auto r = traffic_->Recycle(where, s);
  spawned_ += r.spawned.size();
  removed_ += r.removed.size();
}

void RoadTrafficModule::Step(const StepInfo& info, ModuleContext& context) {
  // A variable message sign changed (signs.vms_<id>): its limit holds from now on.
  if (!endless_ && !signs_.empty())
    if (const auto c = context.Conditions(); c && c->variable_signs != sign_contents_) {
      sign_contents_ = c->variable_signs;
      if (road::ApplyVariableContents(signs_, sign_contents_)) traffic_->SetSigns(signs_);
    }
  // React to every remote vehicle that is on one of our lanes, where this node displays it.
  std::vector<vehicle::ExternalCar> external;
  const auto remote = context.RemoteEntities(info.sim_ns);
  if (endless_) FollowDrivers(remote);
  // Each remote vehicle is projected near where it was at the last step (a window of the road, not the whole
  // road: thousands of them a step); one seen first is projected onto the whole road.
  std::unordered_map<uint64_t, double> remote_s;
  remote_s.reserve(remote.size());
  for (const auto& e : remote) {
    if (e.state.kind == protocol::EntityKind::kPedestrian || e.state.kind == protocol::EntityKind::kStaticObject) continue;
    double s = 0, distance = 0;
    const auto was = remote_s_.find(e.state.id);
    const auto on = was == remote_s_.end()
                        ? traffic_->OnLane(e.displayed.position_m, &s, &distance)
                        : traffic_->OnLaneNear(e.displayed.position_m, was->second, kRemoteWindowM, &s, &distance);
    remote_s.emplace(e.state.id, s);
    if (on) external.push_back(vehicle::ExternalCar{on->first, on->second, e.state.kinematics.velocity_mps.norm(), e.state.id});
  }
  remote_s_ = std::move(remote_s);
  max_external_ = std::max(max_external_, external.size());
  traffic_->SetExternal(std::move(external));
  if (info.dt_ns > 0) traffic_->Step(NsToS(info.dt_ns));
  for (const auto& c : traffic_->Cars()) {
    protocol::EntityState e;
    e.id = VehicleId(name_, c.index);
    e.kind = protocol::EntityKind::kCar;
    e.kinematics = traffic_->State(c, info.sim_ns);
    e.lights.headlights = true;
    e.lights.brake = c.accel_mps2 < -0.5;
    e.lights.indicator_left = c.target_lane != c.lane && c.target_lane > c.lane;
    e.lights.indicator_right = c.target_lane != c.lane && c.target_lane < c.lane;
    context.Publish(e);
  }
  if (info.sim_ns >= next_check_ns_) {
    next_check_ns_ = info.sim_ns + 1'000'000'000;
    const vehicle::TrafficCheck c = traffic_->Check();
    worst_.overlaps += c.overlaps;
    worst_.min_gap_m = std::min(worst_.min_gap_m, c.min_gap_m);
    worst_.min_accel_mps2 = c.min_accel_mps2;
  }
}

void RoadTrafficModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  namespace b = config::bounds;
  auto* t = traffic_.get();
  registry.AddFloat(prefix + "desired_speed_mps", "m/s", b::kTrafficSpeedMps,
                    "Mean desired speed of the road traffic (each vehicle keeps its spread; at least 1 m/s)",
                    [t] { return t->DesiredSpeed(); }, [t](double v) { t->SetDesiredSpeed(std::max(1.0, v)); });
  registry.AddFloat(prefix + "speed_limit_kmh", "km/h", b::kSpeedLimitKmh,
                    "Speed limit capping every desired speed (0: none)", [t] { return t->SpeedLimit() * 3.6; },
                    [t](double v) { t->SetSpeedLimit(v / 3.6); });
  registry.AddFloat(prefix + "time_headway_s", "s", b::kTimeHeadwayS, "IDM safe time headway T",
                    [t] { return t->TimeHeadway(); }, [t](double v) { t->SetTimeHeadway(v); });
  registry.AddInt(prefix + "vehicles", "", b::kVehicles, "Vehicles of this traffic (fixed at start)",
                  [t] { return static_cast<int64_t>(t->Cars().size()); });
  if (lead_) {
    // The lead car (lead = "<driver>"): its gap, and whether it holds it (0 releases it to drive like the others).
    registry.AddFloat(prefix + "lead_gap_m", "m", config::Range{1, 1000}, "Gap the lead car keeps ahead of the driver it leads",
                      [t] { return t->LeadGap(); }, [t](double v) { t->SetLeadGap(std::clamp(v, 1.0, 1000.0)); });
    registry.AddBool(prefix + "lead_hold", "Whether the lead car holds its gap; false releases it to drive on like the others",
                     [t] { return t->LeadHold(); }, [t](bool v) { t->SetLeadHold(v); });
  }
}

namespace {


// A transition shape's name ("step", "linear", "sinusoidal", "cubic"; anything else: cubic).
vehicle::RoadTraffic::Shape ShapeOf(const std::string& name) {
  using S = vehicle::RoadTraffic::Shape;
  return name == "step" ? S::kStep : name == "linear" ? S::kLinear : name == "sinusoidal" ? S::kSinusoidal : S::kCubic;
}

}  // namespace

void RoadTrafficModule::OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) {
  if (!IsActionForThisNode(event, context)) return;
  const std::string& a = event.text;
  const std::string& d = event.detail;
  bool ok = false;
  if (a == "spawn") {
    ok = traffic_->Spawn(JsonNumber(d, "s_m", 0), static_cast<int>(JsonNumber(d, "lane", -1)),
                         JsonNumber(d, "speed_mps", 0)).has_value();
  } else {
    const auto vehicle = VehicleIndexOf(event, name_);
    if (!vehicle) {
      ++actions_refused_;
      return;
    }
    const uint32_t index = *vehicle;
    if (a == "brake") {
      ok = traffic_->Brake(index, JsonNumber(d, "decel_mps2", 6), JsonNumber(d, "duration_s", 0));
    } else if (a == "stop") {
      ok = traffic_->Stop(index, JsonNumber(d, "decel_mps2", 4));
    } else if (a == "resume") {
      ok = traffic_->Resume(index);
    } else if (a == "remove") {
      ok = traffic_->Remove(index);
    } else if (a == "change_lane") {
      const vehicle::TrafficCar* car = traffic_->Find(index);
      int lane = static_cast<int>(JsonNumber(d, "lane", 0));
      if (car && lane == 0) {
        // One lane left (+1) or right (-1) among the driving lanes, inner first: left is toward the inner lane.
        const auto& lanes = traffic_->Lanes();
        const auto at = std::find(lanes.begin(), lanes.end(), car->lane) - lanes.begin();
        const long k = at - static_cast<long>(JsonNumber(d, "direction", 0));
        if (k >= 0 && k < static_cast<long>(lanes.size())) lane = lanes[static_cast<size_t>(k)];
      }
      // With a shape (an OpenSCENARIO LaneChangeAction): its duration, shape and offset in the target lane.
      const std::string shape = JsonString(d, "shape");
      if (car && lane != 0 && !shape.empty())
        ok = traffic_->ChangeLane(index, lane, JsonNumber(d, "duration_s", 0), ShapeOf(shape), JsonNumber(d, "offset_m", 0));
      else
        ok = car && lane != 0 && traffic_->ChangeLane(index, lane);
    } else if (a == "lane_offset") {
      ok = traffic_->SetLaneOffset(index, JsonNumber(d, "offset_m", 0), JsonNumber(d, "duration_s", 0),
                                   ShapeOf(JsonString(d, "shape")));
    } else if (a == "follow_path") {
      // The path (s, t pairs) and, when the points have times, the speed profile that keeps them.
      const auto xy = JsonNumbers(d, "path");
      std::vector<std::pair<double, double>> path;
      for (size_t i = 0; i + 1 < xy.size(); i += 2) path.emplace_back(xy[i], xy[i + 1]);
      ok = traffic_->FollowPath(index, std::move(path));
      const auto p = JsonNumbers(d, "points");
      std::vector<std::pair<double, double>> points;
      for (size_t i = 0; i + 1 < p.size(); i += 2) points.emplace_back(p[i], p[i + 1]);
      if (ok && !points.empty()) ok = traffic_->FollowProfile(index, std::move(points));
    } else if (a == "speed_profile") {
      const auto p = JsonNumbers(d, "points");
      std::vector<std::pair<double, double>> points;
      for (size_t i = 0; i + 1 < p.size(); i += 2) points.emplace_back(p[i], p[i + 1]);
      ok = traffic_->FollowProfile(index, std::move(points));
    }
  }
  ++(ok ? actions_done_ : actions_refused_);
}

void RoadTrafficModule::Summarize(std::vector<std::string>& fields) const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"road_vehicles\":%zu,\"road_length_m\":%.1f,\"road_lane_changes\":%llu,\"road_overlaps\":%d,"
                "\"road_min_gap_m\":%.2f,\"road_max_external\":%zu",
                traffic_->Cars().size(), road_->Length(), static_cast<unsigned long long>(traffic_->LaneChanges()),
                worst_.overlaps, worst_.min_gap_m > 1e8 ? -1.0 : worst_.min_gap_m, max_external_);
  fields.push_back(buf);
  if (endless_) {
    std::snprintf(buf, sizeof buf,
                  "\"road_endless\":true,\"road_window_m\":[%.1f,%.1f],\"road_chunks_generated\":%llu,"
                  "\"road_spawned\":%llu,\"road_removed\":%llu",
                  endless_->WindowStart(), endless_->WindowEnd(),
                  static_cast<unsigned long long>(endless_->ChunksGenerated()),
                  static_cast<unsigned long long>(spawned_), static_cast<unsigned long long>(removed_));
    fields.push_back(buf);
  }
  fields.push_back("\"road_actions\":" + std::to_string(actions_done_) + ",\"road_actions_refused\":" +
                   std::to_string(actions_refused_));
}

}  // namespace platoon::node
