#pragma once
/// The session's roads as the viewer draws them: every road of the [road] file, or the generated road
/// (the same generator settings the road-traffic role uses, so the viewer shows the road traffic drives on).

#include "platoon/config/session.hpp"
#include "platoon/road/road_network.hpp"

namespace platoon::viewer {

/// Builds the network of `def` (the file is taken as given: LoadSession already made it absolute or
/// relative to the working directory). Throws config::ConfigError naming file:line and key on a bad file.
road::RoadNetwork SessionRoads(const config::RoadSessionDef& def);

}  // namespace platoon::viewer
