#pragma once
/// The traffic role at this stage: vehicles on closed stadium tracks with a kinematic model whose
/// truth is a pure function of sim time. Any process that reads the session file can therefore
/// compute every traffic vehicle's true state, which the consistency checks rely on. Vehicle
/// dynamics and road networks replace the model in a later stage.

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/geometry.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/stadium_track.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::node {

/// Session-unique vehicle id, defined in shared (platoon/entity_id.hpp); forwarded for existing callers.
using ::platoon::VehicleId;

/// True state of vehicle `index` of traffic node `node` at `sim_ns`.
protocol::EntityState TrafficTruth(const config::NodeDef& node, uint32_t index, int64_t sim_ns);

/// Steps the node's vehicles and offers their truth to the runtime.
class TrafficModule final : public Module {
 public:
  explicit TrafficModule(const config::NodeDef& node);
  std::string Name() const override { return "traffic"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// speed_mps and vehicles (read-only: the track positions follow from them and sim time).
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  config::NodeDef node_;
  double rate_hz_;
  uint64_t steps_ = 0;
};

}  // namespace platoon::node
