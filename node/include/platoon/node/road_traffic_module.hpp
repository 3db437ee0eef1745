#pragma once
/// The traffic role on the session's road ([road]): AI vehicles with IDM car following and MOBIL
/// lane changes (platoon::vehicle::RoadTraffic), published like every entity, and reacting to every
/// remote vehicle on their lanes (human drivers, other nodes' traffic) as it is displayed here.

#include "platoon/config/session.hpp"
#include "platoon/node/module.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace platoon::node {

/// Builds the session's road: the [road] file's road (by id), or a generated one.
/// Throws config::ConfigError naming the file and what is wrong.
road::Road BuildSessionRoad(const config::RoadSessionDef& def);

/// Steps road traffic and publishes its vehicles.
class RoadTrafficModule final : public Module {
 public:
  RoadTrafficModule(const config::SessionDef& session, const config::NodeDef& node);
  std::string Name() const override { return "road-traffic"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// Scenario actions for this node (kAction with target_node == its id): brake, stop, change_lane,
  /// speed_profile, resume, spawn, remove (docs/PROTOCOL.md, "Scenario actions").
  void OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) override;
  /// desired_speed_mps, speed_limit_kmh, time_headway_s (live), vehicles.
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  void Summarize(std::vector<std::string>& fields) const override;
  /// The endless road ([road] endless = true), or nullptr.
  const road::EndlessRoad* Endless() const { return endless_.get(); }

 private:
  // Endless road: moves the window to the drivers among `remote` and recycles the traffic around them.
  void FollowDrivers(const std::vector<RemoteEntity>& remote);

  std::string name_;
  double rate_hz_;
  std::unique_ptr<road::Road> road_;               // the session road; on an endless road its first chunk
  std::unique_ptr<road::EndlessRoad> endless_;     // [road] endless = true
  std::vector<uint64_t> driver_nodes_;             // VehicleId(driver node, 0) >> 16
  std::map<uint64_t, double> driver_s_;            // each driver's road s at the last step, by entity id
  uint64_t spawned_ = 0, removed_ = 0;             // endless road: vehicles spawned / removed by Recycle
  std::unique_ptr<vehicle::RoadTraffic> traffic_;
  std::vector<road::Sign> signs_;                             // the session's, variable ones as last told
  std::vector<world::VariableSignContent> sign_contents_;     // the conditions' variable signs last applied
  // Remote vehicles' road s at the last step, by entity id: the next projection searches around it.
  std::unordered_map<uint64_t, double> remote_s_;
  static constexpr double kRemoteWindowM = 60.0;  // half-width of that search, in m of s
  vehicle::TrafficCheck worst_;
  size_t max_external_ = 0;
  bool lead_ = false;  // a lead car (lead = "<driver>"): its live parameters
  int64_t next_check_ns_ = 0;
  uint64_t actions_done_ = 0, actions_refused_ = 0;  // scenario actions carried out / not (no such vehicle, bad lane)
};

}  // namespace platoon::node
