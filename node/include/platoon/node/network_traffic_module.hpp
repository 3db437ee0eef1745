#pragma once
/// The traffic role on a road network with junctions (traffic_model = "network"): AI vehicles that drive every
/// road and junction of the [road] file's OpenDRIVE map along its lane graph (platoon::vehicle::NetworkTraffic),
/// choosing their way at every fork with a seeded draw, published like every entity. docs/ROADS.md
/// "Traffic through junctions". Remote vehicles (human drivers, other nodes' traffic) are followed and yielded to.

#include "platoon/config/session.hpp"
#include "platoon/node/module.hpp"
#include "platoon/road/lane_graph.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/network_traffic.hpp"

#include <memory>
#include <string>
#include <vector>

namespace platoon::node {

/// Steps network traffic and publishes its vehicles.
class NetworkTrafficModule final : public Module {
 public:
  /// Builds the lane graph of the session's road file. Throws config::ConfigError when it has no junction-linked
  /// driving lanes to drive.
  NetworkTrafficModule(const config::SessionDef& session, const config::NodeDef& node);
  std::string Name() const override { return "network-traffic"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// Scenario actions for this node's vehicles: brake, stop, resume, remove; others are refused (counted).
  void OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) override;
  /// desired_speed_mps (live), vehicles.
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  void Summarize(std::vector<std::string>& fields) const override;
  /// The traffic (tests read its movements and checks).
  const vehicle::NetworkTraffic& Traffic() const { return *traffic_; }
  /// The lane graph it drives.
  const road::LaneGraph& Graph() const { return *graph_; }

 private:
  std::string name_;
  double rate_hz_;
  std::unique_ptr<road::RoadNetwork> network_;
  std::unique_ptr<road::LaneGraph> graph_;
  std::unique_ptr<vehicle::NetworkTraffic> traffic_;
  vehicle::NetworkTrafficCheck check_;
  int64_t next_check_ns_ = 0;
  size_t max_external_ = 0;  // most remote vehicles on its lanes at once
  uint64_t actions_done_ = 0, actions_refused_ = 0;  // scenario actions carried out / not
};

}  // namespace platoon::node
