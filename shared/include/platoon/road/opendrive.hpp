#pragma once
/// OpenDRIVE (.xodr) export and import of platoon roads; import reads OpenDRIVE 1.4-1.8 maps.
///
/// planView: line, arc, spiral, poly3 and paramPoly3 (arcLength and normalized) geometries chained
/// G1-continuously; elevation and superelevation cubics; lanes: laneOffset, several lane sections, lanes of
/// every type with width or border cubics, road marks with type, colour and line definitions; road links with
/// either contact point, links into junctions, junctions with their connections and lane links; objects and
/// signals kept. Elements with no effect in platoon (userData, surface, geoReference, ...) are accepted and
/// reported (OpenDriveMap::ignored). Anything else is an error "file:line: <what> is not supported (supported:
/// ...)", a bad number "file:line: <element>.<attribute>: expected ..., got ...". Errors are config::ConfigError,
/// like the TOML road files'. Mapping table: docs/ROADS.md "OpenDRIVE import".
/// Pure core apart from LoadOpenDriveFile (reads one file).

#include "platoon/road/road_network.hpp"

#include <string>
#include <utility>
#include <vector>

namespace platoon::road {

/// What the export writes into <header>.
struct OpenDriveHeader {
  std::string name = "platoon";  ///< header name attribute.
  std::string date;              ///< header date attribute; empty: omitted (keeps output byte-identical).
};

/// One connection of a junction: traffic from `incoming_road_id` enters `connecting_road_id` at `contact`.
struct JunctionConnection {
  std::string id;                ///< Connection id as written.
  int incoming_road_id = -1;     ///< Road that leads into the junction.
  int connecting_road_id = -1;   ///< Road inside the junction that carries the traffic through.
  ContactPoint contact = ContactPoint::kStart;  ///< End of the connecting road where the incoming road meets it.
  std::vector<std::pair<int, int>> lane_links;  ///< (lane of the incoming road, lane of the connecting road).
};

/// A junction (OpenDRIVE <junction>): its connections.
struct JunctionDef {
  int id = -1;                                 ///< Junction id.
  std::string name;                            ///< Name as written.
  std::vector<JunctionConnection> connections; ///< Connections in file order.
  std::vector<std::pair<int, int>> priorities; ///< <priority>: (high road id, low road id); low gives way to high.
};

/// Everything one import read, and what it accepted without effect in platoon.
struct OpenDriveMap {
  std::vector<RoadDef> roads;          ///< Every <road>, connecting roads included.
  std::vector<JunctionDef> junctions;  ///< Every <junction>.
  std::vector<std::string> read;       ///< What was read into the model, one line per kind: "paramPoly3 x 3".
  std::vector<std::string> ignored;    ///< Elements accepted and ignored, once each with a count and first file:line.
};

/// The OpenDRIVE 1.6 document of `network`'s roads, every number with 17 significant digits (round-trips).
std::string ExportOpenDrive(const RoadNetwork& network, const OpenDriveHeader& header = {});

/// Reads every <road> of an OpenDRIVE document; `source_name` names the file in messages.
/// Throws config::ConfigError "source:line: ..." for XML syntax, unsupported content and bad values.
std::vector<RoadDef> ReadOpenDrive(const std::string& text, const std::string& source_name);

/// Reads an OpenDRIVE document whole: roads, junctions and the report of what was read and ignored.
/// Throws config::ConfigError "source:line: ..." like ReadOpenDrive.
OpenDriveMap ReadOpenDriveMap(const std::string& text, const std::string& source_name);

/// Reads an .xodr file whole (ReadOpenDriveMap). Throws config::ConfigError.
OpenDriveMap LoadOpenDriveMapFile(const std::string& path);

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
