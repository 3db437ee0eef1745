#include "road_cmd.hpp"

#include <cstdio>

namespace platoon::launcher {

CLI::App* AddRoadCommand(CLI::App& app, RoadOptions& options) {
  auto* cmd = app.add_subcommand("road", "(being written)");
  cmd->add_option("args", options.args, "Arguments");
  return cmd;
}

int RunRoad(const RoadOptions&) {
  std::fprintf(stderr, "platoon road: not built yet\n");
  return 2;
}

}  // namespace platoon::launcher
