#pragma once
/// Session-wide entity ids of node vehicles, defined once: every role that owns, follows or mounts
/// sensors on a vehicle computes its id from the node's name, so no id ever has to be looked up.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace platoon {

/// Session-unique, restart-stable id of a node's vehicle: FNV-1a(node name) << 16 | index (0..65535).
uint64_t VehicleId(const std::string& node_name, uint32_t index);

/// The name of a vehicle id in `attach_to` form, "<node name>:<index>", when VehicleId made it from one
/// of `node_names`; "" when none of them did (an entity that is no node's vehicle, or an unknown node).
std::string VehicleName(uint64_t id, std::span<const std::string> node_names);

/// How one node's vehicles are called, for EntityDisplayName.
struct NodeNaming {
  std::string node;                        ///< The node's name.
  bool driver = false;                     ///< A driver seat: its one vehicle goes by the node's name alone ("ego").
  std::vector<std::string> vehicle_names;  ///< Names from the session file ([[node]] vehicle_names) by vehicle index; "" keeps the default.
};

/// The readable name of an entity, the one the viewer shows and events, exports, the seat's data write and
/// the Python frames write: its session-file name when `nodes` gives one; a driver seat's vehicle 0 by the
/// node's name ("ego"); another node's vehicle "<node>:<index>" ("city:3"); else (no node in `nodes` made
/// the id) "#" and the id as 16 hex digits.
std::string EntityDisplayName(uint64_t id, std::span<const NodeNaming> nodes);

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
