#pragma once
/// OpenDRIVE 1.6 (.xodr) export and import of platoon roads: the subset platoon's RoadDef holds.
///
/// planView: line, arc and spiral (curvStart/curvEnd) geometries chained G1-continuously; elevationProfile:
/// one constant grade; lanes: one laneSection at s = 0 with driving lanes of constant width (a; b = c = d = 0)
/// and one road mark type per lane; road link: predecessor/successor roads; road type speed: the speed limit.
/// Import is strict: an element or attribute outside the subset is an error "file:line: <what> is not supported
/// (supported: ...)", a bad number "file:line: <element>.<attribute>: expected ..., got ...". Errors are
/// config::ConfigError, like the TOML road files'. Mapping and examples: docs/ROADS.md "OpenDRIVE".
/// Pure core apart from LoadOpenDriveFile (reads one file).

#include "platoon/road/road_network.hpp"

#include <string>
#include <vector>

namespace platoon::road {

/// What the export writes into <header>.
struct OpenDriveHeader {
  std::string name = "platoon";  ///< header name attribute.
  std::string date;              ///< header date attribute; empty: omitted (keeps output byte-identical).
};

/// The OpenDRIVE 1.6 document of `network`'s roads, every number with 17 significant digits (round-trips).
std::string ExportOpenDrive(const RoadNetwork& network, const OpenDriveHeader& header = {});

/// Reads every <road> of an OpenDRIVE document; `source_name` names the file in messages.
/// Throws config::ConfigError "source:line: ..." for XML syntax, unsupported content and bad values.
std::vector<RoadDef> ReadOpenDrive(const std::string& text, const std::string& source_name);

/// Loads and validates an .xodr file (links must name roads of the file). Throws config::ConfigError.
RoadNetwork LoadOpenDriveFile(const std::string& path);

/// Same as LoadOpenDriveFile, from text.
RoadNetwork LoadOpenDriveText(const std::string& text, const std::string& source_name);

/// True when `path` names an OpenDRIVE file (extension .xodr, any case).
bool IsOpenDrivePath(const std::string& path);

/// Largest gap between the end of one geometry and the start written on the next that import accepts, in m.
inline constexpr double kOpenDriveMaxGapM = 1e-3;
/// Largest heading jump between one geometry's end and the next's hdg that import accepts, in rad.
inline constexpr double kOpenDriveMaxHeadingJumpRad = 1e-4;

}  // namespace platoon::road
