#pragma once
// `platoon road` (server/src/road_cmd.cpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// Options of `platoon road`.
struct RoadOptions {
  std::vector<std::string> args;  ///< Positional arguments.
};

/// Adds the `road` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddRoadCommand(CLI::App& app, RoadOptions& options);
/// Runs it; exit code 0 done, 2 usage.
int RunRoad(const RoadOptions& options);

}  // namespace platoon::launcher
