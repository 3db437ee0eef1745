#pragma once
/// Per-vehicle metrics (seed 004 §5.6): a vehicle's own state, where it is on the road (road id, s,
/// lane, lane offset) and its leader (headway, time headway, time to collision), computed from its
/// state, the states of the vehicles around it and the road. Pure: no clock, no I/O. The driver seat
/// calls it on its exact 1 kHz state; an export of a recording calls it on each recorded entity.
/// Equations (M1)-(M7): docs/RECORDING.md, "Data write (per-driver CSV)".

#include "platoon/data/columns.hpp"
#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/road/road_network.hpp"

#include <cstdint>
#include <span>

namespace platoon::data {

/// One vehicle as the metrics see it: numbers only, in the world frame.
struct VehicleSample {
  uint64_t id = 0;                             ///< Entity id.
  Vec3 position_m = Vec3::Zero();              ///< Reference point: the rear-axle centre on the ground, in m.
  double yaw_rad = 0;                          ///< Heading, counter-clockwise from +x, in rad.
  Vec3 velocity_mps = Vec3::Zero();            ///< Velocity of the reference point, in m/s.
  Vec3 acceleration_mps2 = Vec3::Zero();       ///< Acceleration of the reference point, in m/s^2.
  double yaw_rate_radps = 0;                   ///< Yaw rate, in rad/s.
  double length_m = 4.5;                       ///< Box length; the box spans -0.2 .. +0.8 of it about the reference point (BoxCentreInBody), in m.
  double steer = 0, throttle = 0, brake = 0;   ///< Normalised commands.
};

/// The sample of an entity state (pose, velocities, acceleration, box, controls as they are).
VehicleSample SampleOf(const protocol::EntityState& e);
/// The sample of an entity as a node displays it: the state with `displayed` for its pose.
VehicleSample SampleOf(const protocol::EntityState& e, const Pose& displayed);
/// Whether an entity kind takes part as a leader: cars, trucks, motorcycles and bicycles.
bool IsVehicle(protocol::EntityKind kind);

/// Settings of the metrics.
struct MetricsDef {
  double leader_range_m = 200.0;       ///< A leader further than this (bumper to bumper) is no leader, in m.
  double standstill_speed_mps = 0.1;   ///< Below this own speed the time headway is empty, in m/s.
  double min_closing_speed_mps = 0.01; ///< Below this closing speed the TTC is empty (not closing), in m/s.
  bool leader = true;                  ///< Look for a leader (headway, time headway, TTC); false leaves them empty.
};

/// Default settings: leader within 200 m, standstill below 0.1 m/s, closing above 0.01 m/s.
MetricsDef DefaultMetricsDef();

/// Every column for `own` at sim time `sim_ns`: its state (M1), its place on the nearest road of
/// `roads` (M2-M3; empty for an empty network or beyond a road's ends) and its leader among `others`
/// (M4-M7; `own` itself, if listed, is skipped). Cost: one road projection for `own` and one for each
/// other vehicle within leader range (straight-line pre-filter). `leader_id`, when given, receives the
/// leader's id (0: none).
MetricsRow ComputeMetrics(int64_t sim_ns, const VehicleSample& own, std::span<const VehicleSample> others,
                          const road::RoadNetwork& roads, const MetricsDef& def = DefaultMetricsDef(),
                          uint64_t* leader_id = nullptr);

}  // namespace platoon::data
