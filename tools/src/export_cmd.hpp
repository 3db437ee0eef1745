#pragma once
// `platoon export`: the driver seat's data-write columns for every entity of a session log, one CSV
// per entity (tools/src/export_cmd.cpp; the rows themselves are platoon/data/recorded_tracks.hpp), or one
// vehicle's signals as CAN frames in a candump log (--candump, tools/src/can_export.cpp).
#include <CLI/CLI.hpp>

#include <limits>
#include <string>
#include <vector>

namespace platoon::server {
struct ReplayLog;
}  // namespace platoon::server

namespace platoon::launcher {

/// Options of `platoon export`.
struct ExportOptions {
  std::string log_path;                ///< Session log (MCAP).
  std::string csv_dir;                 ///< Where the CSVs go.
  double rate_hz = 100.0;              ///< Rows per second of sim time.
  std::vector<std::string> entities;   ///< Only these entities ("robot:0", "robot_0", "robot", an id); empty: all.
  std::vector<std::string> variables;  ///< Columns, as [node.data_write] variables; empty: every column.
  double from_s = -1e300, to_s = 1e300;  ///< Sim-time window, in s.
  std::string config_path;             ///< Session (and road) from this file instead of the recorded one.
  std::string method = "interpolate";  ///< "interpolate" or "dead_reckon".
  std::string candump_path;            ///< --candump: one vehicle's CAN frames go to this candump log (instead of CSVs).
  std::string can_map_path;            ///< --can-map: the CAN mapping file (docs/CAN.md) naming the DBC and the tx signals.
  std::string vehicle;                 ///< --vehicle: whose signals ("robot:0", "robot", an id); "": the first driver seat's.
  std::string can_interface = "can0";  ///< --interface: the interface name written on every candump line.
  bool can_every_period = false;       ///< --every-period: a frame in every period slot, states between recorded ones by `method`.
  bool metrics = false;                ///< --metrics: also DIR/metrics.csv, the drive metrics of each exported entity.
  double event_s = std::numeric_limits<double>::quiet_NaN();  ///< --event: sim time the brake reaction time is measured from, in s.
  std::vector<std::string> windows;    ///< --window MARKER:SECONDS: metrics over SECONDS after each marker of that text.
  bool markers = false;                ///< --markers: a last column `marker` in each CSV, the markers of each row's period.
  std::string pcd_dir;                 ///< --pcd: every cloud of `stream` as a binary PCD file in this directory.
  std::string ply_dir;                 ///< --ply: every cloud of `stream` as a binary PLY file in this directory.
  std::string stream;                  ///< --stream: the point-cloud stream (lidar or fusion id) --pcd and --ply export.
  std::string ros2_dir;                ///< --ros2: the log as a rosbag2 bag (MCAP storage) in this directory.
};

/// Adds the `export` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddExportCommand(CLI::App& app, ExportOptions& options);
/// Writes the CSVs (or, with --candump, the CAN log). Exit code: 0 written, 1 nothing to export, 2 usage
/// (bad path, not a log, bad option) or a failed write.
int RunExport(const ExportOptions& options);


/// Reads the session log at `path` into `log` for an export; 0 when it holds entity states, else the exit
/// code after saying why on stderr: 2 (kExitUsage) when it is not a session log, 1 when it holds no entity
/// state. Problems of a readable log are printed as warnings.
int LoadExportLog(const std::string& path, server::ReplayLog& log);

}  // namespace platoon::launcher
