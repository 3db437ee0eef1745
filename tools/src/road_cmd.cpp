#include "road_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/config/table.hpp"
#include "platoon/road/lane_graph.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/road/session_road.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>

namespace platoon::launcher {
namespace {

// The roads of a road file (.toml, .xodr) or of a session file's [road] (its file or its generated road).
road::RoadNetwork LoadInput(const std::string& path) {
  if (road::IsOpenDrivePath(path)) return road::LoadOpenDriveFile(path);
  const config::Table root = config::Table::ParseFile(path);
  if (!root.Has("road"))
    throw config::ConfigError(path + ": neither a road file ([[road]]) nor a session file with a [road] table");
  bool session = true;
  try {
    (void)root.Sub("road");  // a table: a session's [road]; an array of tables: a road file's [[road]]
  } catch (const config::ConfigError&) {
    session = false;
  }
  if (!session) return road::LoadRoadFile(path);
  const config::SessionDef s = config::LoadSession(path);
  return road::SessionRoadNetwork(s.road);
}

int Export(const RoadOptions& o) {
  const road::RoadNetwork net = LoadInput(o.input);
  road::OpenDriveHeader header;
  header.name = o.name.empty() ? std::filesystem::path(o.input).stem().string() : o.name;
  const std::string text = road::ExportOpenDrive(net, header);
  if (o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  const std::string tmp = o.output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::fprintf(stderr, "platoon road export: cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, o.output, ec);
  if (ec) {
    std::fprintf(stderr, "platoon road export: cannot write %s: %s\n", o.output.c_str(), ec.message().c_str());
    return 1;
  }
  double length = 0;
  for (const auto& r : net.Roads()) length += r.Length();
  std::printf("wrote %s: %zu road(s), %.3f m of reference line\n", o.output.c_str(), net.Roads().size(), length);
  return 0;
}

int Info(const RoadOptions& o) {
  const road::RoadNetwork net = LoadInput(o.input);
  for (const auto& r : net.Roads()) {
    const auto& d = r.Def();
    int lines = 0, arcs = 0, spirals = 0, cubics = 0;
    for (const auto& s : d.sections) {
      if (s.kind != road::GeometryKind::kClothoid) ++cubics;  // poly3, paramPoly3
      else if (s.curvature_start_1pm != s.curvature_end_1pm) ++spirals;
      else if (s.curvature_start_1pm != 0) ++arcs;
      else ++lines;
    }
    std::printf("road %d: %.3f m, %zu sections (%d lines, %d arcs, %d spirals%s), start (%.3f, %.3f) heading %.3f deg, "
                "height %.3f m, grade %.4f\n",
                d.id, r.Length(), d.sections.size(), lines, arcs, spirals,
                cubics ? (", " + std::to_string(cubics) + " poly3/paramPoly3").c_str() : "", d.start_x_m, d.start_y_m,
                d.start_heading_rad * 180.0 / std::numbers::pi, d.start_height_m, d.grade);
    std::printf("  lanes: %d left, %d right; widths", r.LanesLeft(), r.LanesRight());
    for (int l = r.LanesLeft(); l >= -r.LanesRight(); --l)
      if (l != 0) std::printf(" %+d:%.3f", l, r.LaneWidth(l));
    std::printf(" m; markings (left edge to right edge)");
    for (int b = r.LanesLeft(); b >= -r.LanesRight(); --b) std::printf(" %s", road::MarkingName(r.BoundaryMarking(b)));
    std::printf("\n  speed limit %s",
                d.speed_limit_mps > 0 ? (std::to_string(std::lround(d.speed_limit_mps * 3.6)) + " km/h").c_str()
                                      : "none");
    std::printf(", predecessor %d, successor %d\n", d.predecessor_id, d.successor_id);
  }
  for (const auto& g : net.CheckLinks())
    std::printf("link %d -> %d: gap %.6f m, heading error %.6f rad, height error %.6f m\n", g.road_id,
                g.successor_id, g.gap_m, g.heading_error_rad, g.height_error_m);
  // An OpenDRIVE map: what the import read into the road model and what it accepted and ignored.
  if (road::IsOpenDrivePath(o.input)) {
    const road::OpenDriveMap map = road::LoadOpenDriveMapFile(o.input);
    std::printf("OpenDRIVE: %zu road(s), %zu junction(s)\n", map.roads.size(), map.junctions.size());
    for (const auto& line : map.read) std::printf("  read: %s\n", line.c_str());
    for (const auto& line : map.ignored) std::printf("  %s\n", line.c_str());
    // What network traffic (traffic_model = "network") can drive: the lane graph.
    const road::LaneGraph graph(net, map.junctions);
    size_t movements = 0, give_way = 0, stop = 0;
    std::vector<uint32_t> dead_ends;
    for (uint32_t i = 0; i < graph.Pieces().size(); ++i) {
      const road::LanePiece& p = graph.Pieces()[i];
      movements += p.junction_id >= 0 ? 1 : 0;
      give_way += p.yield == road::Yield::kGiveWay ? 1 : 0;
      stop += p.yield == road::Yield::kStop ? 1 : 0;
      if (p.next.empty()) dead_ends.push_back(i);
    }
    std::printf("lane graph (traffic_model = \"network\"): %zu driving lane pieces, %zu of them connecting lanes in "
                "junctions; %zu approaches give way, %zu stop; %zu lead nowhere (vehicles stop at their end)\n",
                graph.Pieces().size(), movements, give_way, stop, dead_ends.size());
    for (size_t k = 0; k < dead_ends.size() && k < 10; ++k)
      std::printf("  leads nowhere: %s\n", graph.Describe(dead_ends[k]).c_str());
    if (dead_ends.size() > 10) std::printf("  ... and %zu more\n", dead_ends.size() - 10);
    for (const auto& note : graph.Notes()) std::printf("  link left out: %s\n", note.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddRoadCommand(CLI::App& app, RoadOptions& o) {
  auto* cmd = app.add_subcommand(
      "road",
      "Road files: export platoon roads as OpenDRIVE 1.6 (.xodr) for esmini, CARLA or SUMO's netconvert, or print "
      "what a road file holds. A session's [road] file may itself be an .xodr (docs/ROADS.md \"OpenDRIVE\").\n\n"
      "  platoon road export configs/roads/ring.toml -o ring.xodr\n"
      "  platoon road export configs/drivers.toml -o drive.xodr      the session's road (its file or generated road)\n"
      "  platoon road info ring.xodr\n"
      "  netconvert --opendrive-files ring.xodr -o ring.net.xml      SUMO reads the export\n\n"
      "Exit codes: 0 done, 1 the output could not be written, 2 usage error (bad option, a file that does not "
      "load, with file:line).");
  cmd->require_subcommand(1);
  o.export_cmd = cmd->add_subcommand("export", "Write the roads of a road file (.toml, .xodr) or of a session's [road] "
                                               "as OpenDRIVE 1.6");
  o.export_cmd->add_option("input", o.input, "Road file (.toml or .xodr) or session file (.toml with [road])")
      ->required()
      ->check(CLI::ExistingFile);
  o.export_cmd->add_option("-o,--output", o.output, "The .xodr to write (\"-\": standard output)")->required();
  o.export_cmd->add_option("--name", o.name, "The header's name (default: the input's file name without extension)");
  o.info_cmd = cmd->add_subcommand("info", "Print the roads of a road file (.toml, .xodr) or of a session's [road]: "
                                           "sections, lanes, markings, links and link gaps; for an OpenDRIVE map also "
                                           "what the import read and ignored, and its lane graph (junction "
                                           "movements, who gives way, lanes that lead nowhere)");
  o.info_cmd->add_option("input", o.input, "Road file (.toml or .xodr) or session file (.toml with [road])")
      ->required()
      ->check(CLI::ExistingFile);
  return cmd;
}

int RunRoad(const RoadOptions& o) {
  try {
    if (o.export_cmd && o.export_cmd->parsed()) return Export(o);
    if (o.info_cmd && o.info_cmd->parsed()) return Info(o);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "platoon road: %s\n", e.what());
    return config::cli::kExitUsage;
  }
  std::fprintf(stderr, "platoon road: name a subcommand: export or info (platoon road --help)\n");
  return config::cli::kExitUsage;
}

}  // namespace platoon::launcher
