#pragma once
// `platoon export`: the driver seat's data-write columns for every entity of a session log, one CSV
// per entity (tools/src/export_cmd.cpp; the rows themselves are platoon/data/recorded_tracks.hpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

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
};

/// Adds the `export` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddExportCommand(CLI::App& app, ExportOptions& options);
/// Writes the CSVs. Exit code: 0 written, 1 nothing to export, 2 usage (bad path, not a log, bad option).
int RunExport(const ExportOptions& options);

}  // namespace platoon::launcher
