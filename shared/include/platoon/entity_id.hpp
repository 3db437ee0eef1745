#pragma once
/// Session-wide entity ids of node vehicles, defined once: every role that owns, follows or mounts
/// sensors on a vehicle computes its id from the node's name, so no id ever has to be looked up.

#include <cstdint>
#include <span>
#include <string>

namespace platoon {

/// Session-unique, restart-stable id of a node's vehicle: FNV-1a(node name) << 16 | index (0..65535).
uint64_t VehicleId(const std::string& node_name, uint32_t index);

/// The name of a vehicle id in `attach_to` form, "<node name>:<index>", when VehicleId made it from one
/// of `node_names`; "" when none of them did (an entity that is no node's vehicle, or an unknown node).
std::string VehicleName(uint64_t id, std::span<const std::string> node_names);

/// Entity id of the vehicle named by an `attach_to` key, "<node name>[:<vehicle index 0..65535>]"
/// ("ego" is "ego:0"); throws config::ConfigError quoting the value when it is malformed.
uint64_t AttachedVehicleId(const std::string& attach_to);

/// SplitMix64's finaliser: a bijective mix of `x` in which neighbouring inputs share no structure.
uint64_t SplitMix64(uint64_t x);

/// The entity's own phase of periodic work, a fraction in [0, 1) spread evenly over ids (SplitMix64 of
/// the id): the send policy's heartbeat slot, so that the vehicles of nodes that start together do not
/// all send their heartbeats in the same instant.
double EntityPhase(uint64_t id);

}  // namespace platoon
