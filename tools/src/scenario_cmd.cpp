// `platoon scenario check FILE.xosc`: the coverage of an OpenSCENARIO file (docs/SCENARIOS.md).
#include "scenario_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/scenario/osc.hpp"

#include <cstdio>

namespace platoon::launcher {

CLI::App* AddScenarioCommand(CLI::App& app, ScenarioOptions& options) {
  auto* cmd = app.add_subcommand("scenario", "OpenSCENARIO 1.x files as platoon sessions (docs/SCENARIOS.md)");
  cmd->require_subcommand(1);
  cmd->footer("Examples:\n"
              "  platoon scenario check examples/scenarios/cut_in.xosc          every element: mapped, ignored or refused\n"
              "  platoon scenario check cut_in.xosc --seat Ego=driver --events  with a seat for Ego, and the events\n"
              "  platoon run examples/scenarios/cut_in.xosc --lockstep --duration 30\n"
              "                                                               run it (road traffic drives every entity)");
  options.check = cmd->add_subcommand("check", "Print what each element of the file maps to; exit 1 when one is refused");
  options.check->add_option("file", options.file, "OpenSCENARIO file (.xosc)")->required()->check(CLI::ExistingFile);
  options.check->add_option("--seat", options.seats, "ENTITY=NODE: a driver seat drives this entity (repeatable)");
  options.check->add_flag("--events", options.events, "Also print the [[event]]s the storyboard maps to");
  return cmd;
}

int RunScenario(const ScenarioOptions& options) {
  scenario::OscOptions o;
  o.keep_going = true;
  for (const auto& s : options.seats) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      std::fprintf(stderr, "platoon scenario check: --seat: expected ENTITY=NODE, got \"%s\"\n", s.c_str());
      return config::cli::kExitUsage;
    }
    o.seats[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (!scenario::IsOpenScenarioPath(options.file)) {
    std::fprintf(stderr, "platoon scenario check: expected an OpenSCENARIO file (.xosc), got %s\n", options.file.c_str());
    return config::cli::kExitUsage;
  }
  scenario::OscMapping m;
  try {
    m = scenario::LoadOpenScenarioFile(options.file, o);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "platoon scenario check: %s\n", e.what());
    return config::cli::kExitUsage;
  }
  // One line per element: line, status, element path, what it became.
  int counts[3] = {0, 0, 0};
  for (const auto& c : m.coverage) {
    ++counts[static_cast<int>(c.status)];
    const std::string where = c.file == m.file ? std::to_string(c.line) : c.file + ":" + std::to_string(c.line);
    std::printf("%6s  %-8s %s: %s\n", where.c_str(), scenario::StatusName(c.status), c.element.c_str(), c.why.c_str());
  }
  for (const auto& w : m.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("%s: %zu elements: %d mapped, %d ignored, %d refused; %zu nodes, %zu events\n", m.file.c_str(),
              m.coverage.size(), counts[0], counts[1], counts[2], m.nodes.size(), m.events.size());
  for (const auto& [entity, node] : m.entity_node) std::printf("entity %s -> node %s\n", entity.c_str(), node.c_str());
  if (options.events)
    for (const auto& e : m.events) {
      std::printf("event %s: %zu condition group(s), %zu action(s)", e.name.c_str(), e.any.size(), e.actions.size());
      if (e.delay_s > 0) std::printf(", delay %g s", e.delay_s);
      if (!e.group.empty()) std::printf(", group %s (%s)", e.group.c_str(), e.priority.c_str());
      std::printf("\n");
      for (size_t g = 0; g < e.any.size(); ++g) {
        std::printf("  any[%zu]:", g);
        for (const auto& c : e.any[g]) {
          std::string what;
          switch (c.kind) {
            case config::ConditionDef::Kind::kSimTime: what = "sim_time " + std::to_string(c.sim_time_s); break;
            case config::ConditionDef::Kind::kEventState: what = "event " + c.text + " " + c.state; break;
            case config::ConditionDef::Kind::kParameter: what = "parameter " + c.text; break;
            case config::ConditionDef::Kind::kQuantity:
              what = c.entity + " " + config::QuantityName(c.quantity) + (c.other.empty() ? "" : " to " + c.other);
              if (c.below) what += " < " + std::to_string(*c.below);
              if (c.above) what += " > " + std::to_string(*c.above);
              if (c.equals) what += " == " + std::to_string(*c.equals);
              break;
            default: what = "marker " + c.text; break;
          }
          if (c.edge != config::ConditionDef::Edge::kNone) what += std::string(" (") + config::EdgeName(c.edge) + ")";
          std::printf(" [%s%s]", c.negate ? "not " : "", what.c_str());
        }
        std::printf("\n");
      }
      for (const auto& a : e.actions) std::printf("  do %s %s\n", a.name.c_str(), a.target.c_str());
    }
  return m.refused > 0 ? 1 : 0;
}

}  // namespace platoon::launcher
