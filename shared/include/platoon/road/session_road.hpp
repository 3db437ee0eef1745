#pragma once
/// The session's road ([road]): the roads of its road file, or the road its generator settings make.
/// Every process that needs the road (road traffic, sensor hosts, the viewer) builds it here, so they
/// all see the same road.

#include "platoon/config/session.hpp"
#include "platoon/road/endless_road.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"

#include <vector>

namespace platoon::road {

/// The endless road of [road] endless = true: the generator settings of a generated session road
/// (seed, lanes, speed limit) with ahead_m and behind_m.
EndlessRoadDef SessionEndlessRoadDef(const config::RoadSessionDef& def);

/// Every road of the [road] file, or the one generated road (endless: its first chunks, at least
/// generate_length_m of them, as one road). Throws config::ConfigError naming the file
/// (and line and key) on a bad road file.
RoadNetwork SessionRoadNetwork(const config::RoadSessionDef& def);

/// The junctions of an OpenDRIVE [road] file (their connections and lane links); empty for other roads.
/// Throws config::ConfigError like SessionRoadNetwork.
std::vector<JunctionDef> SessionJunctions(const config::RoadSessionDef& def);

/// The road traffic drives on: `road_id` of the file (0: its first road), or the generated road.
/// Throws config::ConfigError when the file has no roads or no road with that id.
Road SessionRoad(const config::RoadSessionDef& def);

/// The session's environment objects ([scene] road_environment): GenerateEnvironment on SessionRoad with
/// [scene] environment (the rural or urban preset with [scene.<kind>] applied) seeded by [road] seed; empty when road_environment is off or there is no
/// [road]. The lidar's scene, the camera images, the viewer and the seat window all draw this list.
std::vector<EnvObject> SessionEnvironment(const config::SessionDef& session);

/// The session's traffic signs: the [[sign]] list, then (ids after them) the signs among an OpenDRIVE road
/// file's signals on SessionRoad (SignFromOpenDrive; traffic lights and unknown codes are left out), then
/// what the [signs] generator places on SessionRoad; sorted by s. Empty without any. Road traffic, sensor hosts, the viewer and the seat
/// all take their signs from here (docs/WORLD.md "Signs").
std::vector<Sign> SessionSigns(const config::SessionDef& session);
/// SessionSigns placed along SessionRoad (PlaceSigns), and with an OpenDRIVE map every other road's signs placed
/// along that road (ids after SessionSigns'): what the viewer, the seat and the camera draw.
std::vector<PlacedSign> SessionPlacedSigns(const config::SessionDef& session);

}  // namespace platoon::road
