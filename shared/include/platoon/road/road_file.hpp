#pragma once
/// Road files (seed 004 §4.1 "track information files"): a TOML list of [[road]] tables, each with
/// [[road.section]] sub-tables. Errors name file:line and key ("ring.toml:12: road[0].section[2].length_m:
/// expected a number in [0.001, 100000], got -5"). Format: docs/ROADS.md; example: configs/roads/ring.toml.

#include "platoon/config/table.hpp"
#include "platoon/road/road_network.hpp"

#include <string>
#include <vector>

namespace platoon::road {

/// Reads every [[road]] of a parsed file; throws config::ConfigError naming file:line and key.
std::vector<RoadDef> ReadRoadDefs(const config::Table& root);

/// Loads and validates a road file; throws config::ConfigError naming file:line and key.
/// A path ending in .xodr is read as OpenDRIVE (opendrive.hpp, LoadOpenDriveFile).
RoadNetwork LoadRoadFile(const std::string& path);

/// Same as LoadRoadFile, from text; `source_name` stands in for the file name in messages.
RoadNetwork LoadRoadText(const std::string& text, const std::string& source_name);

/// Parses a marking name ("none", "solid", "dashed", "double", "botts_dots"); false when unknown.
bool ParseMarking(const std::string& name, Marking* out);

}  // namespace platoon::road
