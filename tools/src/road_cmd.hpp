#pragma once
// `platoon road` (tools/src/road_cmd.cpp): `export` writes a road file, a session's road or an .xodr as
// OpenDRIVE 1.6; `info` prints what a road file holds.
#include <CLI/CLI.hpp>

#include <string>

namespace platoon::launcher {

/// Options of `platoon road`.
struct RoadOptions {
  CLI::App* export_cmd = nullptr;  ///< The `export` subcommand (parsed() tells which one ran).
  CLI::App* info_cmd = nullptr;    ///< The `info` subcommand.
  std::string input;               ///< Road file (.toml or .xodr) or session file (.toml with [road]).
  std::string output;              ///< export: the .xodr to write; "-": stdout.
  std::string name;                ///< export: <header name>; empty: the input's file stem.
};

/// Adds the `road` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddRoadCommand(CLI::App& app, RoadOptions& options);
/// Runs it; exit code 0 done, 1 the output could not be written, 2 usage (bad input file).
int RunRoad(const RoadOptions& options);

}  // namespace platoon::launcher
