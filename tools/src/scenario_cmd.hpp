#pragma once
// `platoon scenario check FILE.xosc`: what an OpenSCENARIO file maps to (tools/src/scenario_cmd.cpp;
// docs/SCENARIOS.md).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// Options of `platoon scenario`.
struct ScenarioOptions {
  std::string file;                 ///< The .xosc file.
  std::vector<std::string> seats;   ///< --seat ENTITY=NODE: entities a seat drives (as [scenario] seats).
  bool events = false;              ///< --events: also print the [[event]]s it maps to.
  CLI::App* check = nullptr;        ///< The `check` subcommand (parsed when it ran).
};

/// Adds the `scenario` subcommand (with `check`) to `app`, filling `options` when it is parsed.
CLI::App* AddScenarioCommand(CLI::App& app, ScenarioOptions& options);
/// Runs it; exit code 0 every element mapped or ignored, 1 some refused, 2 usage or an unreadable file.
int RunScenario(const ScenarioOptions& options);

}  // namespace platoon::launcher
