#pragma once
// `platoon export LOG --candump OUT.log --can-map MAP.toml`: one recorded vehicle's signals as CAN frames
// in a candump log (tools/src/can_export.cpp; docs/CAN.md, "Recorded sessions as CAN logs").
#include "export_cmd.hpp"

#include "platoon/can/mapping.hpp"
#include "platoon/protocol/messages.hpp"

namespace platoon::launcher {

/// The simulator variables of the CAN mapping from one recorded entity state: speed along the vehicle's
/// x axis (m/s, negative backwards), yaw rate (rad/s), accelerations in the vehicle frame (m/s^2), the
/// reference point's world x and y (m), yaw in -pi..pi (rad), the applied steer, throttle and brake
/// (the state's controls), indicator 1 left (also with both lit) / 2 right / 0 off, gear -1 while the
/// reversing light is on, else 1; the rear wheel speeds vx -+ yaw_rate * track_m / 2 (rear-left, rear-right;
/// the reference point is the rear-axle centre), as the driver seat sends them, from what its state records.
/// The front wheel speeds are left 0: a recording holds neither the road-wheel angle nor the wheelbase.
can::VariableValues CanValuesOfState(const protocol::EntityState& state, double track_m = can::kDefaultTrackM);

/// Writes the CAN log of `options.vehicle` (ExportOptions::candump_path set). Exit code: 0 written,
/// 1 nothing to export, 2 usage error (mapping, log, vehicle, interface) or a failed write.
int RunCanExport(const ExportOptions& options);

}  // namespace platoon::launcher
