// platoon-node: one node process of a platoon session.
#include "platoon/clock/oscillator.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/node/node_runtime.hpp"
#include "platoon/node/roles.hpp"
#include "platoon/process/memory.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  // Megabyte messages (clouds, fused frames, keyframes) reuse freed heap instead of new mappings.
  platoon::process::KeepLargeAllocations();
  using platoon::node::kExitUsage;
  CLI::App app{"platoon-node: a node of a platoon session. Joins the sync server, slews its clock to the\n"
               "server's reference clock and runs its role's modules on it."};
  std::string config_path, name, server, log_level, fault_spec, role;
  int port = -1;
  double drift_ppm = 0;
  bool drift_set = false;
  platoon::node::NodeOptions opt;
  int protocol_version = 0;
  app.add_option("-c,--config", config_path, "Session file (TOML); the node's [[node]] entry is found by --name")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--name", name, "Node name (required; must match a [[node]] name when --config is given)")->required();
  app.add_option("--role", role, "Role when the session file has no entry: observer (default), traffic or driver");
  app.add_option("-s,--server", server, "Server address (overrides [session] server_host)");
  app.add_option("--port", port, "Server control port (overrides [server] control_port)")->check(CLI::Range(1, 65535));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off");
  app.add_option("--fault", fault_spec, "Receive-path faults, e.g. drop=0.1,delay_ms=5,jitter_ms=1 (see platoon-server --help)");
  app.add_option_function<double>("--drift-ppm", [&](double v) { drift_ppm = v; drift_set = true; },
                                  "Make the local oscillator drift by this many ppm (tests, demos)")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(-100000.0, 100000.0));
  app.add_flag("--truth-check", opt.truth_check,
               "Measure the true clock error against this host's CLOCK_MONOTONIC (server on this host only)");
  app.add_option("--truth-warmup", opt.truth_warmup_s, "Seconds after the clock is set before truth statistics start")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--exit-after", opt.exit_after_s, "Leave the session and exit after this many seconds")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stats-warmup", opt.stats_warmup_s, "Seconds after launch before latency and gap statistics start")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::NonNegativeNumber);
  std::string publish;
  app.add_option("--publish", publish, "How owned entities are sent: threshold (dead-reckoning thresholds, default) or "
                                       "fixed (every module step)")
      ->check(CLI::IsMember({"threshold", "fixed"}));
  app.add_option("--pose-log", opt.pose_log,
                 "Diagnostic: write the truth of every entity this node owns and every remote entity as it displays "
                 "it to this CSV (source,sim_ns,id,x_m,y_m,z_m,yaw_rad); two nodes' logs give one's view error "
                 "against the other's truth")
      ->group("Diagnostics");
  app.add_option("--pose-log-every", opt.pose_log_every, "Diagnostic: only entities whose index is a multiple of this")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str()
      ->group("Diagnostics");
  app.add_option("--pose-log-hz", opt.pose_log_hz, "Diagnostic: rate of the pose log's view rows, Hz")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str()
      ->group("Diagnostics");
  double blend_time = -1, blend_speed = -1;
  app.add_option("--blend-time", blend_time,
                 "Seconds a correction of a remote entity is blended over at least; 0: shown at once (default: the "
                 "session file's blend_time_s, else 0.15 for a driver seat and 0 for every other role). Shorter: "
                 "the view stays closer to the owner's truth; longer: smoother (docs/BENCHMARKS.md, \"Road traffic "
                 "at scale\")")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--blend-speed", blend_speed,
                 "Fastest a blend moves the display, m/s (default: the session file's blend_speed_mps, else 0.3); "
                 "larger corrections blend for longer")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(0.001, 100.0));
  int vehicles = -1;
  double monitor_hz = 0, module_hz = 0;
  app.add_option("--module-hz", module_hz, "Step rate of the role's main module, Hz (default 100)")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--vehicles", vehicles, "traffic: number of vehicles (overrides the session file)")->check(CLI::Range(0, 65535));
  app.add_option("--monitor-hz", monitor_hz, "Rate of the clock monitor thread, Hz (default 1000)")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(1.0, 10000.0));
  std::string input;
  bool headless = false;
  app.add_option("--input", input, "driver: where the commands come from: sdl (wheel, pedals or gamepad through SDL2, "
                                   "keyboard fallback; [node.input_mapping]) or scripted:FILE (an input script, "
                                   "docs/INPUTS.md). Overrides the node's input key");
  app.add_flag("--headless", headless, "driver: no seat window (also the fallback when no display can be opened)");
  app.add_option("--protocol-version", protocol_version, "Testing: speak this protocol version")->group("");
  if (auto code = platoon::config::cli::Parse(app, argc, argv)) return *code;

  try {
    if (!config_path.empty()) {
      opt.session = platoon::config::LoadSession(config_path);
      const auto* def = opt.session.FindNode(name);
      if (!def) {
        std::fprintf(stderr, "platoon-node: %s has no [[node]] named \"%s\"\n", config_path.c_str(), name.c_str());
        return kExitUsage;
      }
      opt.node = *def;
    } else {
      opt.node.name = name;
    }
    if (!role.empty()) {
      opt.node.role = platoon::protocol::RoleFromName(role);
      if (opt.node.role == platoon::protocol::Role::kUnknown) {
        std::fprintf(stderr, "platoon-node: --role \"%s\": expected observer, traffic, driver, sensor or fusion\n",
                     role.c_str());
        return kExitUsage;
      }
    }
    if (!input.empty()) {
      if (input != "sdl" && input != "model:follow" &&
          (input.rfind("scripted:", 0) != 0 || input.size() == std::string("scripted:").size())) {
        std::fprintf(stderr, "platoon-node: --input \"%s\": expected sdl, scripted:<input script file> or model:follow\n",
                     input.c_str());
        return kExitUsage;
      }
      opt.node.input = input;
    }
    if (headless) opt.node.headless = true;
    if ((!input.empty() || headless) && opt.node.role != platoon::protocol::Role::kDriver) {
      std::fprintf(stderr, "platoon-node: --input and --headless are for the driver role (node \"%s\" is %s)\n",
                   name.c_str(), std::string(platoon::protocol::RoleName(opt.node.role)).c_str());
      return kExitUsage;
    }
    if (std::string why; !platoon::node::roles::Available(opt.node.role, why)) {
      std::fprintf(stderr, "platoon-node: %s\n", why.c_str());
      return kExitUsage;
    }
    if (!server.empty()) opt.session.server_host = server;
    if (port > 0) opt.session.server.control_port = static_cast<uint16_t>(port);
    if (drift_set) opt.node.drift_ppm = drift_ppm;
    if (vehicles >= 0) opt.node.vehicles = vehicles;
    opt.publish_every_step = publish == "fixed";
    if (blend_time >= 0) opt.node.blend_time_s = blend_time;
    if (blend_speed > 0) opt.node.blend_speed_mps = blend_speed;
    if (monitor_hz > 0) opt.node.monitor_rate_hz = monitor_hz;
    if (module_hz > 0) opt.node.module_rate_hz = module_hz;
    if (!log_level.empty()) {
      platoon::log::ParseLevel(log_level);
      opt.node.log_level = log_level;
    }
    if (!fault_spec.empty()) opt.session.faults = platoon::transport::ParseFaultSpec(fault_spec, opt.session.faults);
    opt.protocol_version = static_cast<uint16_t>(protocol_version);
  } catch (const platoon::config::ConfigError& e) {
    std::fprintf(stderr, "platoon-node: %s\n", e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "platoon-node: %s\n", e.what());
    return kExitUsage;
  }

  auto log = platoon::log::MakeLogger("node." + opt.node.name, opt.node.log_level);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  platoon::clock::MonotonicOscillator host;
  std::unique_ptr<platoon::clock::DriftingOscillator> drifting;
  const platoon::clock::Oscillator* local = &host;
  if (opt.node.drift_ppm != 0) {
    drifting = std::make_unique<platoon::clock::DriftingOscillator>(host, opt.node.drift_ppm);
    local = drifting.get();
    log->warn("local oscillator drifts by {:+.1f} ppm (injected)", opt.node.drift_ppm);
  }
  platoon::node::NodeRuntime runtime(opt, log, *local);
  return runtime.Run(g_stop);
}
