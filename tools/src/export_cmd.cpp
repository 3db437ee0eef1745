// `platoon export LOG.mcap --csv DIR --rate HZ`: for every entity of a session log, a CSV with the
// columns of the driver seat's data write ([node.data_write]), computed by the same functions
// (data::SampleOf, data::ComputeMetrics) on the recorded states at sim times k / HZ, and entities.csv
// listing them. docs/RECORDING.md, "Export to CSV". With --candump, one vehicle's signals as CAN frames
// instead (tools/src/can_export.cpp; docs/CAN.md, "Recorded sessions as CAN logs").
#include "export_cmd.hpp"

#include "can_export.hpp"
#include "pcd_export.hpp"
#include "ros2_export.hpp"

#include "progress.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/data/columns.hpp"
#include "platoon/data/drive_metrics.hpp"
#include "platoon/data/recorded_tracks.hpp"
#include "platoon/data/sign_columns.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/server/replay.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon export";
constexpr int kExitNothing = 1;
constexpr int kExitUsage = config::cli::kExitUsage;

std::string_view KindName(protocol::EntityKind kind) {
  switch (kind) {
    case protocol::EntityKind::kCar: return "car";
    case protocol::EntityKind::kTruck: return "truck";
    case protocol::EntityKind::kMotorcycle: return "motorcycle";
    case protocol::EntityKind::kBicycle: return "bicycle";
    case protocol::EntityKind::kPedestrian: return "pedestrian";
    case protocol::EntityKind::kStaticObject: return "static_object";
    default: return "unknown";
  }
}

std::string Hex(uint64_t id) { return fmt::format("{:016x}", id); }

int64_t SecondsToNsClamped(double s) {
  if (s <= -9e9) return INT64_MIN;
  if (s >= 9e9) return INT64_MAX;
  return SToNs(s);
}

std::string Seconds(int64_t ns) { return fmt::format("{:.6f}", NsToS(ns)); }

// A file name from an entity name: letters, digits, '.', '-' and '_' kept, anything else '_'
// ("robot:0" -> "robot_0").
std::string FileStem(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');
  return out;
}

// One entity's output: its CSV, written in pieces (a recording of thousands of entities cannot keep a
// file open for each, nor every row in memory).
struct Output {
  size_t track = 0;
  std::string name;  // readable name: "ego", "robot:0", a session vehicle_names entry; "" when no node made its id
  std::string ref;   // "<node>:<index>" (attach_to form), or "" when no node made its id
  std::string file;  // "robot_0.csv"
  std::string buffer;
  bool created = false;
  uint64_t rows = 0;
  int64_t first_row_ns = 0, last_row_ns = 0;
};

struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `text` to `path`, appended or from scratch.
void WriteText(const std::string& path, const std::string& text, bool append) {
  std::FILE* f = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!f) throw WriteError("cannot write " + path + ": " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) throw WriteError("writing " + path + ": " + std::strerror(ok ? errno : write_errno));
}

// Appends `out.buffer` to its file (created with `header` on the first piece).
void Flush(Output& out, const std::filesystem::path& dir, const std::string& header) {
  WriteText((dir / out.file).string(), out.created ? out.buffer : header + "\n" + out.buffer, out.created);
  out.created = true;
  out.buffer.clear();
}

}  // namespace

CLI::App* AddExportCommand(CLI::App& app, ExportOptions& o) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write, for every entity of a session log, a CSV with the columns of the driver seat's data write "
      "([node.data_write]: sim time, pose, speed, accelerations, controls, road id, s, lane, lane offset, headway, "
      "time headway, TTC), computed by the same functions on the recorded states at sim times k / rate; "
      "DIR/entities.csv lists the entities and their files.\n\n"
      "  platoon export recordings/drivers.mcap --csv out --rate 100\n"
      "  platoon export drive.mcap --csv out --rate 10 --entities robot,traffic:3 --variables speed,lane_offset,headway\n"
      "  platoon export drive.mcap --csv out --from 10 --to 20 --config configs/drivers.toml\n"
      "      the session (and its road) from that file, e.g. when the recorded road file is not on this PC\n"
      "  platoon export drive.mcap --csv out --rate 100 --metrics --from 60 --to 70 --event 60\n"
      "      also out/metrics.csv: SDLP, headways, TTC, TLC, steering reversal rate, speeds and the brake reaction\n"
      "      time to the event at 60 s, per entity over 60..70 s (docs/RECORDING.md, \"Driving metrics\")\n"
      "  platoon export drive.mcap --csv out --metrics --window \"lead braking:10\"\n"
      "      also a metrics row per entity for the 10 s after each marker \"lead braking\" (reaction time from it)\n\n"
      "With --candump instead of --csv: one vehicle's signals as CAN frames in a candump log, encoded by a CAN "
      "mapping file and its DBC (docs/CAN.md) at the recorded sim times of its states (with --every-period also at "
      "every k * period between them), each stamped with its sim time; the mapping's tx messages go once per "
      "period slot of sim time or when their payload changes.\n\n"
      "  platoon export drive.mcap --candump drive.log --can-map configs/can/rig_map.toml\n"
      "  platoon export drive.mcap --candump ego.log --can-map rig_map.toml --vehicle ego --interface vcan0 --from 5 --to 60\n"
      "  platoon export drive.mcap --candump bus.log --can-map rig_map.toml --every-period\n"
      "      a frame in every period slot, the states between recorded ones interpolated\n\n"
      "With --pcd DIR and/or --ply DIR: every recorded cloud of one lidar or fusion stream (--stream) as a binary "
      "PCD v0.7 / binary little-endian PLY file named by its sim time (000012.300000000.pcd), the point records as "
      "recorded (x y z, received power, snr, time, ring, echo, source, entity, class, intensity 0-255, return type), "
      "and DIR/clouds.csv listing them (docs/RECORDING.md, \"Point clouds as PCD and PLY files\").\n\n"
      "  platoon export farm.mcap --pcd clouds --stream lidar_front\n"
      "  platoon export farm.mcap --ply clouds --stream fused --from 5 --to 6\n\n"
      "With --ros2 DIR: the log as a rosbag2 bag that `ros2 bag play DIR` plays: DIR/<DIR name>_0.mcap (MCAP, ROS 2 "
      "messages in CDR with their ros2msg definitions) and DIR/metadata.yaml. Topics: /clock, /tf (map -> "
      "<vehicle>/base_link), /tf_static (each sensor's mount, base_link -> <vehicle>/<sensor>), /<vehicle>/odom, and per "
      "sensor /<vehicle>/<sensor>/points (PointCloud2 in Autoware's PointXYZIRCAEDT layout), .../imu, .../fix, .../scan "
      "(radar_msgs/RadarScan), .../objects (vision_msgs/Detection3DArray); stamps are sim time (docs/RECORDING.md, \"ROS 2\").\n\n"
      "  platoon export farm.mcap --ros2 farm_bag\n"
      "  ros2 bag play farm_bag --clock      (on a ROS 2 machine; nodes with use_sim_time:=true)\n\n"
      "Exit codes: 0 written, 1 nothing to export (no entity states, or none in --from/--to), 2 usage error "
      "(missing file, not a session log, bad option, a road or CAN mapping that does not load, an unknown or "
      "ambiguous --vehicle) or a failed write (the lines written before it are kept).");
  cmd->add_option("log", o.log_path, "Session log (.mcap) written by a recorder")->required()->check(CLI::ExistingFile);
  auto* csv = cmd->add_option("--csv", o.csv_dir,
                              "Output directory, created if missing (one <entity>.csv per entity, entities.csv); "
                              "this or --candump");
  auto* candump = cmd->add_option("--candump", o.candump_path,
                                  "CAN log to write (candump -l format, sim time stamps), of one vehicle's signals "
                                  "as --can-map maps them; this or --csv")
                      ->excludes(csv);
  auto* can_map = cmd->add_option("--can-map", o.can_map_path,
                                  "With --candump: the CAN mapping file (TOML, docs/CAN.md) naming the DBC, the tx "
                                  "messages, their periods and each signal's simulator variable, factor and offset")
                      ->needs(candump);
  candump->needs(can_map);
  cmd->add_option("--pcd", o.pcd_dir,
                  "Directory for one binary PCD file per recorded cloud of --stream (instead of --csv)")
      ->excludes(csv)
      ->excludes(candump);
  cmd->add_option("--ply", o.ply_dir,
                  "Directory for one binary PLY file per recorded cloud of --stream (with or instead of --pcd)")
      ->excludes(csv)
      ->excludes(candump);
  cmd->add_option("--ros2", o.ros2_dir,
                  "Directory for the log as a rosbag2 bag (DIR/<DIR name>_0.mcap and DIR/metadata.yaml), created if "
                  "missing (instead of --csv)")
      ->excludes(csv)
      ->excludes(candump);
  cmd->add_option("--stream", o.stream, "With --pcd or --ply: the point-cloud stream (a lidar's or a fusion's id)");
  cmd->add_option("--vehicle", o.vehicle,
                  "With --candump: the vehicle whose signals go on the bus: a name (robot:0), a node name with one "
                  "vehicle or an entity id (decimal or hex); default: the first driver seat's vehicle")
      ->needs(candump);
  cmd->add_option("--interface", o.can_interface, "With --candump: the interface name on every candump line")
      ->needs(candump)
      ->capture_default_str();
  cmd->add_flag("--every-period", o.can_every_period,
                "With --candump: also a frame at every k * period of each periodic message between the vehicle's "
                "first and last state, from its state there as --method finds it (without it: frames only at the "
                "recorded states' sim times, one per period slot that holds one)")
      ->needs(candump);
  cmd->add_option("--rate", o.rate_hz, "Rows per second of sim time, in (0, 1000]; rows at sim times k / rate")
      ->check(config::cli::Finite())
      ->capture_default_str()
      ->excludes(candump);
  cmd->add_option("--entities", o.entities,
                  "Only these entities, comma-separated: a name as entities.csv lists it (robot, traffic:3), "
                  "<node>:<index> (robot:0), its file stem (traffic_3), a node name (all its vehicles) or an entity id "
                  "(decimal or hex)")
      ->delimiter(',')
      ->excludes(candump);
  cmd->add_option("--variables", o.variables,
                  "Columns, comma-separated, as [node.data_write] variables (sim_time always first); default: all of " +
                      data::ColumnNameList())
      ->delimiter(',')
      ->excludes(candump);
  cmd->add_option("--from", o.from_s, "No rows before this sim time, in s (default: each entity's first state)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  cmd->add_option("--to", o.to_s, "No rows after this sim time, in s (default: each entity's end)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  auto* metrics = cmd->add_flag("--metrics", o.metrics,
                                "Also DIR/metrics.csv: for each exported entity, the driving metrics of its rows (SDLP, "
                                "time headway, TTC, time to line crossing, steering reversal rate, speed mean and SD, "
                                "brake reaction time), computed from every column whatever --variables writes")
                      ->excludes(candump);
  cmd->add_option("--event", o.event_s,
                  "With --metrics: sim time of the event the brake reaction time is measured from, in s (the first "
                  "row with brake >= 0.1 within 5 s after it)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7))
      ->needs(metrics);
  cmd->add_flag("--markers", o.markers,
                "A last column `marker` in each entity's CSV: the text of every marker in the log (platoon ctl mark, a "
                "seat key, a scenario's mark) whose sim time falls in the row's period (t - 1/rate, t], several joined "
                "by \" | \"")
      ->excludes(candump);
  cmd->add_option("--window", o.windows,
                  "With --metrics: MARKER:SECONDS, also a metrics row per entity over the SECONDS of sim time after "
                  "each marker with exactly that text in the log (the brake reaction time measured from the marker); "
                  "repeatable")
      ->needs(metrics);
  cmd->add_option("--config", o.config_path,
                  "Take the session (and its road) from this file instead of the one recorded in the log")
      ->check(CLI::ExistingFile);
  cmd->add_option("--method", o.method,
                  "States between recorded ones: interpolate (Hermite/slerp between the two that bracket a row; "
                  "default) or dead_reckon (from the newest, as receivers showed it); for CSV rows and --every-period")
      ->check(CLI::IsMember({"interpolate", "dead_reckon"}));
  return cmd;
}

int LoadExportLog(const std::string& path, server::ReplayLog& log) {
  // A progress line while a long log is read (only its world chunks are).
  std::optional<Progress> reading;
  log = server::LoadReplayLog(path, [&](uint64_t done, uint64_t total) {
    if (!reading) reading.emplace("export", static_cast<size_t>(total));
    reading->Update(static_cast<size_t>(done), "reading the log, bytes");
  });
  if (reading) reading->Done();
  if (log.world_states == 0) {
    std::fprintf(stderr, "%s: %s is not a platoon session log%s%s\n", kMe, path.c_str(),
                 log.problems.empty() ? "" : ": ", log.problems.empty() ? "" : log.problems.front().c_str());
    return kExitUsage;
  }
  for (const auto& p : log.problems) std::fprintf(stderr, "%s: warning: %s\n", kMe, p.c_str());
  if (log.states.empty()) {
    std::fprintf(stderr, "%s: %s holds %llu world states but no entity state: nothing to export\n", kMe,
                 path.c_str(), static_cast<unsigned long long>(log.world_states));
    return kExitNothing;
  }
  return 0;
}

int RunExport(const ExportOptions& o) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  if (!o.candump_path.empty()) return RunCanExport(o);
  if (!o.ros2_dir.empty()) {
    if (!o.pcd_dir.empty() || !o.ply_dir.empty()) {
      std::fprintf(stderr, "%s: --ros2 writes a bag on its own: give --pcd/--ply DIR in a second export\n", kMe);
      return kExitUsage;
    }
    return RunRos2Export(o);
  }
  if (!o.pcd_dir.empty() || !o.ply_dir.empty()) return RunCloudExport(o);
  if (!o.stream.empty()) {
    std::fprintf(stderr, "%s: --stream names the cloud stream of --pcd DIR or --ply DIR, and neither is given\n", kMe);
    return kExitUsage;
  }
  if (o.csv_dir.empty()) {
    std::fprintf(stderr, "%s: expected --csv DIR (a CSV per entity), --candump FILE --can-map MAP.toml (one vehicle's CAN frames) "
                         "or --pcd/--ply DIR --stream ID (a stream's point clouds) or --ros2 DIR (a rosbag2 bag)\n", kMe);
    return kExitUsage;
  }
  // 1. Options that need no log.
  if (!(o.rate_hz > 0 && o.rate_hz <= 1000)) {
    std::fprintf(stderr, "%s: --rate: expected rows per second of sim time in (0, 1000], got %g\n", kMe, o.rate_hz);
    return kExitUsage;
  }
  std::vector<data::Column> columns = data::AllColumns();
  if (!o.variables.empty()) {
    const std::string error = data::ColumnsFromVariables(o.variables, columns);
    if (!error.empty()) {
      std::fprintf(stderr, "%s: --variables: %s\n", kMe, error.c_str());
      return kExitUsage;
    }
  }
  if (o.to_s < o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) is before --from (%.3f s)\n", kMe, o.to_s, o.from_s);
    return kExitUsage;
  }
  data::ExportDef def = data::DefaultExportDef();
  def.rate_hz = o.rate_hz;
  def.from_ns = SecondsToNsClamped(o.from_s);
  def.to_ns = SecondsToNsClamped(o.to_s);
  def.method = *data::TrackMethodFromName(o.method);
  def.metrics.leader = o.metrics || std::any_of(columns.begin(), columns.end(), [](data::Column c) {
    return c == data::Column::kHeadway || c == data::Column::kTimeHeadway || c == data::Column::kTtc;
  });
  data::DriveMetricsDef metrics_def;
  metrics_def.event_s = o.event_s;
  // --window MARKER:SECONDS (the text may hold ':'; the seconds follow the last one).
  struct WindowSpec {
    std::string marker;
    double seconds = 0;
  };
  std::vector<WindowSpec> window_specs;
  for (const auto& w : o.windows) {
    const auto colon = w.rfind(':');
    char* end = nullptr;
    const double seconds = colon == std::string::npos ? 0.0 : std::strtod(w.c_str() + colon + 1, &end);
    if (colon == std::string::npos || colon == 0 || end == w.c_str() + colon + 1 || *end != '\0' || !std::isfinite(seconds) ||
        seconds <= 0 || seconds > 1e6) {
      std::fprintf(stderr, "%s: --window: expected MARKER:SECONDS (a marker's text and a window length in (0, 1e6] s, "
                           "e.g. \"lead braking:10\"), got \"%s\"\n", kMe, w.c_str());
      return kExitUsage;
    }
    window_specs.push_back({w.substr(0, colon), seconds});
  }

  // 2. The log: every distinct recorded entity state, removals, the node table, the session file.
  std::error_code size_error;
  const auto bytes = fs::file_size(o.log_path, size_error);
  if (!size_error && bytes > (64u << 20))
    std::fprintf(stderr, "%s: reading %s (%.0f MB)\n", kMe, o.log_path.c_str(), static_cast<double>(bytes) / 1e6);
  server::ReplayLog log;
  if (const int rc = LoadExportLog(o.log_path, log); rc != 0) return rc;
  // Each --window's markers: [marker, marker + seconds] of sim time.
  struct Window {
    std::string marker;
    int64_t from_ns = 0, to_ns = 0;
  };
  std::vector<Window> windows;
  for (const auto& spec : window_specs) {
    size_t found = 0;
    for (const auto& m : log.markers)
      if (m.text == spec.marker) {
        windows.push_back({m.text, m.sim_ns, m.sim_ns + SToNs(spec.seconds)});
        ++found;
      }
    if (found == 0) {
      std::set<std::string> texts;
      for (const auto& m : log.markers) texts.insert(m.text);
      std::string known;
      for (const auto& t : texts) {
        if (known.size() > 400) {
          known += ", ...";
          break;
        }
        known += (known.empty() ? "\"" : ", \"") + t + "\"";
      }
      std::fprintf(stderr, "%s: --window: %s has no marker \"%s\" (its markers: %s)\n", kMe, o.log_path.c_str(),
                   spec.marker.c_str(), known.empty() ? "none" : known.c_str());
      return kExitUsage;
    }
  }

  // 3. The session, for the road and the node names: --config, else the recorded file's text, its
  // relative road file looked up where the session file was when recorded.
  config::SessionDef session;
  bool have_session = false;
  std::string session_source;
  try {
    if (!o.config_path.empty()) {
      session_source = o.config_path;
      session = config::LoadSession(o.config_path);
      have_session = true;
    } else if (!log.session_text.empty()) {
      session_source = log.session_path.empty() ? o.log_path + " (recorded session)" : log.session_path + " (as recorded)";
      session = config::LoadSessionText(log.session_text, log.session_path.empty() ? o.log_path : log.session_path);
      have_session = true;
    }
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: the session file %s does not load: %s\n%s", kMe, session_source.c_str(), e.what(),
                 o.config_path.empty() ? "  give the session file with --config FILE to take the session and its road from there\n" : "");
    return kExitUsage;
  }
  road::RoadNetwork roads;
  std::vector<road::Sign> signs;         // the next/last sign columns (docs/WORLD.md "Signs")
  std::optional<road::Road> sign_road;
  std::string road_note;
  if (!have_session) {
    road_note = "none: the log carries no session file (give it with --config FILE); road_id .. ttc are empty";
  } else if (!session.has_road) {
    road_note = "none: the session has no [road]; road_id .. ttc are empty";
  } else {
    try {
      roads = road::SessionRoadNetwork(session.road);
      signs = road::SessionSigns(session);
      if (!signs.empty()) sign_road.emplace(road::SessionRoad(session.road));
    } catch (const config::ConfigError& e) {
      std::fprintf(stderr, "%s: the road of the session does not load here: %s\n", kMe, e.what());
      if (o.config_path.empty())
        std::fprintf(stderr, "  (%s names road file \"%s\", looked up next to the session file as recorded); give the "
                             "session file with --config FILE to take the session and its road from there\n",
                     session_source.c_str(), session.road.file.c_str());
      return kExitUsage;
    }
    road_note = session.road.file.empty() ? fmt::format("generated, {:.0f} m (from {})", session.road.generate_length_m, session_source)
                                          : fmt::format("{} (from {})", session.road.file, session_source);
  }

  // The sign columns follow what the variable message signs showed as recorded.
  std::optional<data::SignTimeline> sign_timeline;
  if (sign_road) {
    std::vector<data::SignTimeline::Change> changes;
    changes.reserve(log.sign_changes.size());
    for (auto& c : log.sign_changes) changes.emplace_back(c.sim_ns, std::move(c.contents));
    sign_timeline.emplace(signs, std::move(changes));
  }

  // 4. Tracks, and their names (EntityDisplayName): the session's vehicle_names, a driver's car by its
  // node name, another node's vehicle "<node>:<index>"; the file by the name, else by the hex id.
  std::vector<data::TrackRemoval> removals;
  removals.reserve(log.removals.size());
  for (const auto& r : log.removals) removals.push_back({r.id, r.sim_ns});
  const size_t state_count = log.states.size();
  const data::RecordedTracks tracks(std::move(log.states), removals, log.last_world_ns);
  log.states = {};
  const auto& all = tracks.Tracks();
  std::vector<std::string> node_names;
  for (const auto& [id, name] : log.node_names) node_names.push_back(name);
  if (have_session)
    for (const auto& n : session.nodes) node_names.push_back(n.name);
  std::sort(node_names.begin(), node_names.end());
  node_names.erase(std::unique(node_names.begin(), node_names.end()), node_names.end());
  std::vector<NodeNaming> naming;
  if (have_session) naming = config::SessionNaming(session);
  for (const auto& n : node_names) naming.push_back(NodeNaming{n, false, {}});  // a node the file does not list
  std::vector<Output> outputs(all.size());
  std::set<std::string> stems;
  for (size_t i = 0; i < all.size(); ++i) {
    Output& out = outputs[i];
    out.track = i;
    out.ref = VehicleName(all[i].id, node_names);
    out.name = out.ref.empty() ? "" : EntityDisplayName(all[i].id, naming);
    std::string stem = out.name.empty() ? Hex(all[i].id) : FileStem(out.name);
    if (stem == "entities" || stems.count(stem)) stem += "_" + Hex(all[i].id);
    stems.insert(stem);
    out.file = stem + ".csv";
  }

  // 5. The selection: names, file stems, node names, ids.
  std::vector<size_t> selected;
  if (o.entities.empty()) {
    for (size_t i = 0; i < all.size(); ++i) selected.push_back(i);
  } else {
    std::set<size_t> chosen;
    for (const auto& want : o.entities) {
      bool found = false;
      for (size_t i = 0; i < all.size(); ++i) {
        const Output& out = outputs[i];
        const std::string stem = out.file.substr(0, out.file.size() - 4);
        const bool by_node = !out.ref.empty() && out.ref.substr(0, out.ref.rfind(':')) == want;
        std::string lower = want;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        const bool by_id = lower == std::to_string(all[i].id) || lower == Hex(all[i].id) ||
                           lower == fmt::format("0x{:x}", all[i].id) || lower == fmt::format("{:x}", all[i].id);
        if (want == out.name || want == out.ref || want == stem || by_node || by_id) {
          chosen.insert(i);
          found = true;
        }
      }
      if (!found) {
        std::string known;
        for (size_t i = 0; i < all.size() && i < 20; ++i)
          known += (known.empty() ? "" : ", ") + (outputs[i].name.empty() ? Hex(all[i].id) : outputs[i].name);
        if (all.size() > 20) known += fmt::format(", ... ({} in all)", all.size());
        std::fprintf(stderr, "%s: --entities: %s has no entity \"%s\" (its entities: %s)\n", kMe, o.log_path.c_str(),
                     want.c_str(), known.c_str());
        return kExitUsage;
      }
    }
    selected.assign(chosen.begin(), chosen.end());
  }
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
  for (const auto& t : all) {
    first_ns = std::min(first_ns, t.FirstNs());
    last_ns = std::max(last_ns, t.end_ns);
  }
  std::printf("%s: %s: %zu entities, %zu states, sim time %.3f .. %.3f s; road: %s\n", kMe, o.log_path.c_str(),
              all.size(), state_count, NsToS(first_ns), NsToS(last_ns), road_note.c_str());
  const size_t with_rows = static_cast<size_t>(std::count_if(selected.begin(), selected.end(), [&](size_t i) {
    return data::RowSpan(all[i], def).has_value();
  }));
  if (with_rows == 0) {
    std::fprintf(stderr, "%s: none of the %zu selected entities exists at a row time (k / %g s) in %.3f .. %.3f s: nothing to export\n",
                 kMe, selected.size(), o.rate_hz, std::max(NsToS(first_ns), o.from_s), std::min(NsToS(last_ns), o.to_s));
    return kExitNothing;
  }

  // 6. The rows, time-major; each entity's CSV is written in pieces.
  std::error_code ec;
  fs::create_directories(o.csv_dir, ec);
  if (ec || !fs::is_directory(o.csv_dir)) {
    std::fprintf(stderr, "%s: --csv: cannot create directory %s%s%s\n", kMe, o.csv_dir.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return kExitUsage;
  }
  const fs::path dir(o.csv_dir);
  const std::string header = data::CsvHeader(columns) + (o.markers ? ",marker" : "");
  // --markers: the log's markers by sim time; a row at t takes those in (t - period, t].
  std::vector<server::ReplayLog::Marker> markers_by_time = o.markers ? log.markers : std::vector<server::ReplayLog::Marker>{};
  std::stable_sort(markers_by_time.begin(), markers_by_time.end(), [](const auto& a, const auto& b) { return a.sim_ns < b.sim_ns; });
  const int64_t period_ns = SToNs(1.0 / o.rate_hz);
  auto markers_of_row = [&](int64_t t) {
    auto it = std::upper_bound(markers_by_time.begin(), markers_by_time.end(), t - period_ns,
                               [](int64_t v, const auto& m) { return v < m.sim_ns; });
    std::string text;
    for (; it != markers_by_time.end() && it->sim_ns <= t; ++it) text += (text.empty() ? "" : " | ") + it->text;
    return data::CsvField(text);
  };
  // At most about 64 MiB buffered in all, at least 16 KiB per file between writes.
  const size_t piece = std::clamp<size_t>((64u << 20) / with_rows, 16u << 10, 1u << 20);
  std::optional<Progress> rows_progress;
  uint64_t rows = 0;
  // --metrics: an accumulator per exported entity, fed every row (constant memory whatever the length).
  std::vector<std::optional<data::DriveMetricsAccumulator>> metrics(o.metrics ? all.size() : 0);
  // --window: an accumulator per (entity, window), made at the window's first row, and its row span.
  struct WindowMetrics {
    std::optional<data::DriveMetricsAccumulator> acc;
    int64_t first_ns = 0, last_ns = 0;
  };
  std::vector<std::vector<WindowMetrics>> window_metrics(windows.empty() ? 0 : all.size());
  if (windows.size() * selected.size() > 1'000'000) {
    std::fprintf(stderr, "%s: --window: %zu windows x %zu entities is more than 10^6 metrics rows; choose --entities\n", kMe,
                 windows.size(), selected.size());
    return kExitUsage;
  }
  for (auto& w : window_metrics) w.resize(windows.size());
  try {
    rows = data::ExportRows(
        tracks, selected, roads, def,
        [&](size_t i, const data::MetricsRow& computed) {
          data::MetricsRow row = computed;
          if (sign_road) data::FillSignColumns(row, *sign_road, sign_timeline->At(SToNs(row[data::Column::kSimTime])));
          Output& out = outputs[i];
          const int64_t t = SToNs(row[data::Column::kSimTime]);
          if (out.rows++ == 0) out.first_row_ns = t;
          out.last_row_ns = t;
          data::AppendCsvRow(row, columns, out.buffer);
          if (o.markers) {
            out.buffer.back() = ',';  // the row's newline becomes the marker column's separator
            out.buffer += markers_of_row(t);
            out.buffer += '\n';
          }
          if (o.metrics) {
            if (!metrics[i]) metrics[i].emplace(metrics_def);
            metrics[i]->Add(row);
          }
          for (size_t k = 0; k < windows.size(); ++k) {
            if (t < windows[k].from_ns || t > windows[k].to_ns) continue;
            WindowMetrics& wm = window_metrics[i][k];
            if (!wm.acc) {
              data::DriveMetricsDef d = metrics_def;
              d.event_s = NsToS(windows[k].from_ns);
              wm.acc.emplace(d);
              wm.first_ns = t;
            }
            wm.last_ns = t;
            wm.acc->Add(row);
          }
          if (out.buffer.size() >= piece) Flush(out, dir, header);
        },
        [&](int64_t done, int64_t total) {
          if (!rows_progress) rows_progress.emplace("export", static_cast<size_t>(total));
          rows_progress->Update(static_cast<size_t>(done), "row times");
        });
    for (size_t i : selected)
      if (outputs[i].rows > 0) Flush(outputs[i], dir, header);
  } catch (const WriteError& e) {
    if (rows_progress) rows_progress->Done();
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return kExitUsage;
  }
  if (rows_progress) rows_progress->Done();

  // 7. entities.csv: every recorded entity, selected or not, with its file and rows.
  std::string index = "id,name,file,kind,owner,states,first_state_s,last_state_s,end_s,rows,first_row_s,last_row_s\n";
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& t = all[i];
    const Output& out = outputs[i];
    const auto owner = log.node_names.find(t.owner_node);
    index += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", t.id, out.name, out.rows > 0 ? out.file : "",
                         KindName(t.kind), owner != log.node_names.end() ? owner->second : "", t.states.size(),
                         Seconds(t.FirstNs()), Seconds(t.LastStateNs()), Seconds(t.end_ns), out.rows,
                         out.rows > 0 ? Seconds(out.first_row_ns) : "", out.rows > 0 ? Seconds(out.last_row_ns) : "");
  }
  try {
    WriteText((dir / "entities.csv").string(), index, false);
  } catch (const WriteError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return kExitUsage;
  }
  if (o.metrics) {
    std::string table = "id,name,marker,marker_s,first_row_s,last_row_s,event_s," + data::DriveMetricsCsvHeader() + "\n";
    for (size_t i : selected) {
      if (!metrics[i]) continue;
      const Output& out = outputs[i];
      table += fmt::format("{},{},,,{},{},{},{}\n", all[i].id, out.name, Seconds(out.first_row_ns), Seconds(out.last_row_ns),
                           std::isfinite(o.event_s) ? fmt::format("{:.6f}", o.event_s) : "",
                           data::DriveMetricsCsvRow(metrics[i]->Result()));
      for (size_t k = 0; k < windows.size(); ++k) {
        const WindowMetrics& wm = window_metrics[i][k];
        if (!wm.acc) continue;  // the entity has no row in this window
        table += fmt::format("{},{},{},{},{},{},{},{}\n", all[i].id, out.name, data::CsvField(windows[k].marker), Seconds(windows[k].from_ns),
                             Seconds(wm.first_ns), Seconds(wm.last_ns), Seconds(windows[k].from_ns),
                             data::DriveMetricsCsvRow(wm.acc->Result()));
      }
    }
    try {
      WriteText((dir / "metrics.csv").string(), table, false);
    } catch (const WriteError& e) {
      std::fprintf(stderr, "%s: %s\n", kMe, e.what());
      return kExitUsage;
    }
  }
  const size_t files = static_cast<size_t>(std::count_if(outputs.begin(), outputs.end(), [](const Output& out) { return out.rows > 0; }));
  if (rows == 0) {
    std::fprintf(stderr, "%s: the selected entities were removed at every row time in %.3f .. %.3f s: nothing to export\n",
                 kMe, std::max(NsToS(first_ns), o.from_s), std::min(NsToS(last_ns), o.to_s));
    return kExitNothing;
  }
  std::printf("%s: wrote %zu CSV file%s, %llu rows at %g Hz (%zu columns, rows by %s) to %s, listed in entities.csv%s, in %.1f s\n",
              kMe, files, files == 1 ? "" : "s", static_cast<unsigned long long>(rows), o.rate_hz, columns.size(),
              std::string(data::TrackMethodName(def.method)).c_str(), o.csv_dir.c_str(),
              o.metrics ? "; their driving metrics in metrics.csv" : "",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
  std::fflush(stdout);
  return 0;
}

}  // namespace platoon::launcher
