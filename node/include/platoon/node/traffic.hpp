#pragma once
/// The traffic role at this stage: vehicles on closed stadium tracks with a kinematic model whose
/// truth is a pure function of sim time. Any process that reads the session file can therefore
/// compute every traffic vehicle's true state, which the consistency checks rely on. Vehicle
/// dynamics and road networks replace the model in a later stage.

#include "platoon/config/session.hpp"
#include "platoon/geometry.hpp"
#include "platoon/node/module.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::node {

/// A stadium track: two straights joined by two half circles, driven counter-clockwise.
struct StadiumTrack {
  Vec3 center_m = Vec3::Zero();  ///< Centre of the stadium, in m.
  double straight_m = 100.0;     ///< Length of each straight, in m.
  double radius_m = 30.0;        ///< Radius of the half circles, in m.
  /// Track length, in m.
  double LengthM() const;
  /// State of a point moving at `speed_mps` that is `s_m` along the track (wrapped), stamped `stamp_ns`.
  KinematicState At(double s_m, double speed_mps, int64_t stamp_ns) const;
};

/// Session-unique, restart-stable id of a node's vehicle: FNV-1a(node name) << 16 | index.
uint64_t VehicleId(const std::string& node_name, uint32_t index);

/// True state of vehicle `index` of traffic node `node` at `sim_ns`.
protocol::EntityState TrafficTruth(const config::NodeDef& node, uint32_t index, int64_t sim_ns);

/// Steps the node's vehicles and offers their truth to the runtime.
class TrafficModule final : public Module {
 public:
  explicit TrafficModule(const config::NodeDef& node);
  std::string Name() const override { return "traffic"; }
  double RateHz() const override { return rate_hz_; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  config::NodeDef node_;
  double rate_hz_;
  uint64_t steps_ = 0;
};

}  // namespace platoon::node
