// platoon: runs a whole session from one TOML file. On one machine it starts the server and every
// node; on a LAN each PC runs `platoon run session.toml --only <names>` with the same file.
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/input/axis_mapping.hpp"
#include "platoon/input/scripted_input.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/route_traffic.hpp"
#include "platoon/vehicle/fmu.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/process/child.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/session/discovery.hpp"
#include "batch_cmd.hpp"
#include "check_summary.hpp"
#include "bridge_cmd.hpp"
#include "ctl_cmd.hpp"
#include "export_cmd.hpp"
#include "keys_cmd.hpp"
#include "road_cmd.hpp"
#include "scenario_cmd.hpp"
#include "platoon/scenario/osc.hpp"
#include "reference_cmd.hpp"
#include "replay_cmd.hpp"
#include "study_cmd.hpp"
#include "task_cmd.hpp"
#include "validate_cmd.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

struct Proc {
  std::string name;
  platoon::process::Child child;
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void PrintLines(const std::string& name, size_t width, const std::vector<std::string>& lines) {
  for (const auto& l : lines) std::printf("%-*s | %s\n", static_cast<int>(width), name.c_str(), l.c_str());
  std::fflush(stdout);
}

// Pumps every child's output, prefixed by its name, for up to `timeout`.
void PumpOutput(std::vector<Proc>& procs, size_t width, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  // Reaped children are left out: their pipe at EOF would make poll() return at once, every time.
  for (auto& p : procs)
    if (p.child.OutputFd() >= 0 && p.child.Running()) fds.push_back(pollfd{p.child.OutputFd(), POLLIN, 0});
  poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  for (auto& p : procs) {
    std::vector<std::string> lines;
    p.child.Pump(lines);
    PrintLines(p.name, width, lines);
  }
}

// Pumps every child's output until all are reaped (true) or `deadline` passes (false).
bool ReapAll(std::vector<Proc>& procs, size_t width, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool running = false;
    for (auto& p : procs) running |= !p.child.TryWait().has_value();
    if (!running) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    PumpOutput(procs, width, std::chrono::milliseconds(50));
  }
}

// SIGTERM to all, then SIGKILL whatever is still running after the grace period.
int StopAll(std::vector<Proc>& procs, size_t width) {
  using std::chrono::seconds;
  using std::chrono::steady_clock;
  for (auto& p : procs) p.child.Signal(SIGTERM);
  if (!ReapAll(procs, width, steady_clock::now() + seconds(5))) {
    std::string late;
    for (auto& p : procs) {
      if (p.child.TryWait()) continue;
      // What its threads are doing tells a process hung in its own code from one whose exit the kernel
      // has not finished tearing down (on a loaded VM that waits on the kernel's workers, seconds at times).
      std::fprintf(stderr, "platoon: '%s' did not stop within 5 s; killing it. Its threads:\n%s", p.name.c_str(),
                   platoon::process::ThreadStates(p.child.Pid()).c_str());
      p.child.Signal(SIGKILL);
      late += (late.empty() ? "'" : ", '") + p.name + "'";
    }
    // A status is known only once reaped: a process already exiting keeps its own exit code (0 after a
    // clean stop), one killed in its own code gets 137.
    if (!ReapAll(procs, width, steady_clock::now() + seconds(2))) {
      std::fprintf(stderr, "platoon: waiting up to 60 s for the kernel to tear %s down\n", late.c_str());
      ReapAll(procs, width, steady_clock::now() + seconds(58));
    }
  }
  int worst = 0;
  for (auto& p : procs) {
    const int st = p.child.Status().value_or(137);
    // A process stopped by our own SIGTERM exits cleanly (0) or reports the signal (143): both are fine.
    if (st != 0 && st != 128 + SIGTERM) worst = std::max(worst, st);
  }
  PumpOutput(procs, width, std::chrono::milliseconds(0));
  return worst;
}

// A recorder's `streams` must name streams this session publishes (sensor ids, fusion stream ids), or be
// ["*"]: a typo would otherwise record nothing and say nothing.
void CheckRecordedStreams(const platoon::config::SessionDef& s, const platoon::config::NodeDef& recorder) {
  std::set<std::string> published;
  for (const auto& n : s.nodes) {
    for (const auto& t : n.sensors) published.insert(platoon::sensors::ReadSensorSpec(t).id);
    if (n.fusion) published.insert(platoon::node::ReadFusionDef(*n.fusion).stream_id);
  }
  for (const auto& id : recorder.recorder.streams) {
    if (id == "*" || published.count(id)) continue;
    std::string known;
    for (const auto& p : published) known += (known.empty() ? "" : ", ") + p;
    throw platoon::config::ConfigError(recorder.where + ".streams: no node of this session publishes a stream \"" + id +
                                       "\" (its streams: " + (known.empty() ? "none" : known) + "; or [\"*\"] for all)");
  }
}

// The validation `check` and `run` share: everything a process of the session would refuse at start for
// a config reason, with the file, line and key. Throws config::ConfigError.
void Validate(const platoon::config::SessionDef& s) {
  using platoon::config::ConfigError;
  platoon::config::ValidateSession(s);
  for (const auto& n : s.nodes) {
    // Sensor tables are read by the sensor library, as the sensor host reads them at start.
    std::set<std::string> ids;
    for (const auto& t : n.sensors) {
      const auto spec = platoon::sensors::ReadSensorSpec(t);
      if (!ids.insert(spec.id).second) t.Fail("id", "duplicate sensor id \"" + spec.id + "\"");
    }
    // [node.fusion], as the fusion module reads it at start.
    if (n.fusion) (void)platoon::node::ReadFusionDef(*n.fusion);
    // A recorder's streams: ids that some sensor or fusion node of this session publishes.
    if (n.role == platoon::protocol::Role::kRecorder) CheckRecordedStreams(s, n);
    if (n.role == platoon::protocol::Role::kDriver) {
      const std::string where = s.file + ": node \"" + n.name + "\"";
      // A driver's input script must be there on the PC that runs it, and parse.
      if (n.input.rfind("scripted:", 0) == 0) {
        const std::string script = n.input.substr(9);
        if (access(script.c_str(), R_OK) != 0) throw ConfigError(where + ": input script " + script + " cannot be read");
        try {
          (void)platoon::input::ScriptedInput::Load(script);
        } catch (const platoon::input::ScriptError& e) {
          throw ConfigError(where + " input: " + e.what());
        }
      } else if (n.input_mapping) {
        (void)platoon::input::ReadAxisMapping(*n.input_mapping);
      }
      // The start on the road (start_s_m within it, start_lane one of its lanes).
      (void)platoon::node::DriverStartPose(s, n);
      // vehicle_model = "fmu": the FMU loads, has the variables and initialises, as the seat opens it.
      if (n.vehicle_model == "fmu") (void)platoon::node::OpenDriverFmu(s, n, nullptr);
    }
    // Route traffic with vehicle_model = "fmu": every vehicle's FMU instance opens as the node opens them.
    if (n.role == platoon::protocol::Role::kTraffic && n.traffic_model == "route" && n.vehicle_model == "fmu")
      (void)platoon::node::RouteTrafficModule(s, n, nullptr);
  }
}

int Check(const platoon::config::SessionDef& s) {
  std::printf("session '%s' (%s): server %s, ports %u (control), %u (time), %u (world), %u (state), broadcast %.0f Hz\n",
              s.name.c_str(), s.file.c_str(), s.server_host.c_str(), s.server.control_port, s.server.time_port,
              s.server.world_port, s.server.state_port, s.server.broadcast_hz);
  for (const auto& n : s.nodes) {
    std::printf("  node %-16s role %-9s host %s\n", n.name.c_str(), std::string(platoon::protocol::RoleName(n.role)).c_str(),
                n.host.c_str());
    for (const auto& t : n.sensors) {
      const auto spec = platoon::sensors::ReadSensorSpec(t);
      std::printf("    sensor %-14s %-6s %6.1f Hz at (%.2f, %.2f, %.2f) m%s\n", spec.id.c_str(),
                  std::string(platoon::protocol::StreamKindName(spec.kind)).c_str(), spec.rate_hz,
                  spec.mounting.position_m.x(), spec.mounting.position_m.y(), spec.mounting.position_m.z(),
                  spec.kind == platoon::protocol::StreamKind::kCamera && spec.camera.render != "none"
                      ? (", images " + spec.camera.render).c_str()
                      : "");
    }
    if (n.role == platoon::protocol::Role::kRecorder) {
      const auto& r = n.recorder;
      std::string streams;
      for (const auto& id : r.streams) streams += (streams.empty() ? "" : ",") + id;
      std::printf("    records to %s (world, events%s%s%s)\n", r.path.c_str(), streams.empty() ? "" : ", streams ",
                  streams.c_str(), r.foxglove ? ", Foxglove" : "");
    }
    if (n.role == platoon::protocol::Role::kDriver)
      std::printf("    driver input %s, starts at s %.1f m lane %d, %s\n", n.input.c_str(), n.start_s_m, n.start_lane,
                  n.headless ? "headless" : "seat window (headless without a display)");
  }
  if (s.step.lockstep)
    std::printf("  lock-step: %.0f steps per sim second, deadline %.2f s (%s)%s\n", s.step.step_hz, s.step.deadline_s,
                s.step.drop_late ? "drop late nodes" : "wait for late nodes",
                s.step.end_s > 0 ? (", ends at sim " + std::to_string(s.step.end_s) + " s").c_str() : "");
  else
    std::printf("  real time\n");
  if (s.faults.Enabled()) std::printf("  faults: ON in every process\n");
  std::printf("  security: %s\n", platoon::config::SecuritySummary(s).c_str());
  std::printf("ok\n");
  std::printf("%s", platoon::launcher::CheckSummary(s).c_str());
  return 0;
}

// The control port in the server's "listening on BIND: control N, ..." line: the port it bound, also when
// control_port = 0 let the OS choose.
std::optional<uint16_t> LauncherBoundControlPort(const std::string& line) {
  const size_t at = line.rfind("listening on ");
  const size_t control = at == std::string::npos ? at : line.find(": control ", at);
  if (control == std::string::npos) return std::nullopt;
  const long port = std::strtol(line.c_str() + control + 10, nullptr, 10);
  if (port < 1 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

// The host a client on this PC reaches the server at: its bind address, loopback for a wildcard.
std::string LauncherLocalServerHost(const platoon::config::SessionDef& s) {
  const std::string& bind = s.server.bind_address;
  if (bind.empty() || bind == "*" || bind == "0.0.0.0") return "127.0.0.1";
  if (platoon::config::IsLoopbackAddress(bind)) return bind.rfind("127.", 0) == 0 ? bind : "127.0.0.1";
  in_addr ipv4{};
  if (inet_pton(AF_INET, bind.c_str(), &ipv4) == 1) return bind;
  return s.server_host;  // an interface name: the address the nodes use
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"platoon: runs a platoon session from one TOML file.\n\n"
               "  platoon run configs/demo.toml                 server and every node on this machine\n"
               "  platoon run lab.toml --only server            on the server PC of a LAN lab\n"
               "  platoon run lab.toml --only seat1,seat2       on a driver PC of the same lab\n"
               "  platoon run configs/demo.toml --lockstep --duration 60\n"
               "                                                60 s of sim time in lock-step, as fast as the nodes go\n"
               "  platoon check lab.toml                        validate a session file\n"
               "  platoon check --explain control_port          one session key: type, unit, range, default, meaning\n"
               "  platoon replay recordings/drivers.mcap        serve a recorded session to viewers and sensor hosts\n"
               "  platoon ctl status                            nodes and session of a running server (see platoon ctl --help)\n"
               "  platoon bridge configs/lidar_farm.toml        a running session live in Foxglove at ws://127.0.0.1:8765\n"
               "  platoon validate drive.mcap --sensor front    a sensor's object list against the recorded ground truth\n"
               "  platoon export drive.mcap --csv out --rate 100\n"
               "                                                the data-write columns of every recorded vehicle, one CSV each\n"
               "  platoon batch plan.toml                       a session run many times with varied parameters (see platoon batch --help)\n"
               "  platoon study study.toml                      participants x blocks, counterbalanced (see platoon study --help)\n"
               "  platoon run scenario.xosc --lockstep          an OpenSCENARIO file as a session (see platoon scenario --help)"};
  app.require_subcommand(1);
  std::string session_path, only, server_host, bin_dir;
  double duration_s = 0;
  bool lockstep = false;
  auto* run = app.add_subcommand("run", "Start the session's processes here, with prefixed logs; Ctrl-C stops them all");
  run->add_option("session", session_path, "Session file (TOML), or an OpenSCENARIO file (.xosc): road traffic drives its entities")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--only", only, "Comma-separated names to start here (\"server\" is the sync server)");
  run->add_option("--server", server_host, "Server address for the nodes (overrides [session] server_host)");
  run->add_option("--duration", duration_s,
                  "Stop everything after this many seconds (0: until Ctrl-C); in lock-step, seconds of sim time")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(0.0, 1e7));
  run->add_flag("--lockstep", lockstep,
                "Lock-step: the server grants each step once every node finished the previous one, so the session "
                "runs as fast as its slowest node (same as [session] mode = \"lockstep\")");
  run->add_option("--bin-dir", bin_dir, "Where platoon-server and platoon-node are (default: next to platoon)");
  auto* check = app.add_subcommand("check", "Validate a session file and print what it would start");
  check->add_option("session", session_path, "Session file (TOML) or OpenSCENARIO file (.xosc)")->check(CLI::ExistingFile);
  platoon::launcher::ReferenceOptions reference_options;
  check->add_flag("--reference", reference_options.reference,
                  "Print the reference of every session and road file key as Markdown (docs/CONFIG.md)");
  check->add_option("--explain", reference_options.explain,
                    "Print one key of the reference: \"server.control_port\", or \"control_port\" when one table has it");
  platoon::launcher::ReplayOptions replay_options;
  auto* replay = platoon::launcher::AddReplayCommand(app, replay_options);
  platoon::launcher::CtlOptions ctl_options;
  auto* ctl = platoon::launcher::AddCtlCommand(app, ctl_options);
  platoon::launcher::ValidateOptions validate_options;
  auto* validate = platoon::launcher::AddValidateCommand(app, validate_options);
  platoon::launcher::ExportOptions export_options;
  auto* export_cmd = platoon::launcher::AddExportCommand(app, export_options);
  platoon::launcher::BatchOptions batch_options;
  auto* batch = platoon::launcher::AddBatchCommand(app, batch_options);
  platoon::launcher::KeysOptions keys_options;
  auto* keys = platoon::launcher::AddKeysCommand(app, keys_options);
  platoon::launcher::RoadOptions road_options;
  auto* road = platoon::launcher::AddRoadCommand(app, road_options);
  platoon::launcher::TaskOptions task_options;
  auto* task = platoon::launcher::AddTaskCommand(app, task_options);
  platoon::launcher::StudyOptions study_options;
  auto* study = platoon::launcher::AddStudyCommand(app, study_options);
  platoon::launcher::BridgeOptions bridge_options;
  auto* bridge = platoon::launcher::AddBridgeCommand(app, bridge_options);
  platoon::launcher::ScenarioOptions scenario_options;
  auto* scenario_cmd = platoon::launcher::AddScenarioCommand(app, scenario_options);
  if (auto code = platoon::config::cli::Parse(app, argc, argv)) return *code;
  if (scenario_cmd->parsed()) return platoon::launcher::RunScenario(scenario_options);
  if (validate->parsed()) return platoon::launcher::RunValidate(validate_options);
  if (export_cmd->parsed()) return platoon::launcher::RunExport(export_options);
  if (replay->parsed()) return platoon::launcher::RunReplay(replay_options);
  if (ctl->parsed()) return platoon::launcher::RunCtl(ctl_options);
  if (batch->parsed()) return platoon::launcher::RunBatch(batch_options, Validate);
  if (study->parsed()) return platoon::launcher::RunStudy(study_options, Validate);
  if (keys->parsed()) return platoon::launcher::RunKeys(keys_options);
  if (road->parsed()) return platoon::launcher::RunRoad(road_options);
  if (task->parsed()) return platoon::launcher::RunTask(task_options);
  if (bridge->parsed()) return platoon::launcher::RunBridge(bridge_options);
  if (check->parsed() && (reference_options.reference || !reference_options.explain.empty()))
    return platoon::launcher::RunReference(reference_options);
  if (check->parsed() && session_path.empty()) {
    std::fprintf(stderr, "platoon check: a session file is required (or --reference, or --explain KEY)\n");
    return platoon::config::cli::kExitUsage;
  }

  // An OpenSCENARIO file runs as a session of its own: a generated session file names it (every process
  // reads that file), removed when the launcher ends.
  struct GeneratedSession {
    std::string path;
    ~GeneratedSession() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } generated;
  if (platoon::scenario::IsOpenScenarioPath(session_path)) {
    const std::string xosc = std::filesystem::absolute(session_path).lexically_normal().string();
    generated.path = (std::filesystem::temp_directory_path() /
                      ("platoon-scenario-" + std::to_string(getpid()) + ".toml")).string();
    FILE* f = std::fopen(generated.path.c_str(), "w");
    const std::string text = platoon::scenario::SessionTextFor(xosc, lockstep, 0);
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
      std::fprintf(stderr, "platoon: cannot write the session file %s for %s\n", generated.path.c_str(), xosc.c_str());
      if (f) std::fclose(f);
      return 1;
    }
    std::fclose(f);
    session_path = generated.path;
  }

  // check and run validate alike: nothing passes check and then fails at start for a config reason.
  platoon::config::SessionDef session;
  try {
    session = platoon::config::LoadSession(session_path);
    Validate(session);
  } catch (const platoon::config::ConfigError& e) {
    std::fprintf(stderr, "platoon: %s\n", e.what());
    return 2;
  }
  if (check->parsed()) return Check(session);
  if (lockstep) session.step.lockstep = true;

  // Which processes run here.
  const auto wanted = SplitCommas(only);
  std::set<std::string> known = {"server"};
  for (const auto& n : session.nodes) known.insert(n.name);
  for (const auto& w : wanted)
    if (!known.count(w)) {
      std::fprintf(stderr, "platoon: --only: %s has no process named \"%s\" (known: server", session_path.c_str(), w.c_str());
      for (const auto& n : session.nodes) std::fprintf(stderr, ", %s", n.name.c_str());
      std::fprintf(stderr, ")\n");
      return 2;
    }
  auto selected = [&](const std::string& name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
  };
  if (bin_dir.empty()) bin_dir = platoon::process::ExecutableDir();
  const std::string server_bin = bin_dir + "/platoon-server", node_bin = bin_dir + "/platoon-node";
  for (const auto& b : {server_bin, node_bin})
    if (!std::filesystem::exists(b)) {
      std::fprintf(stderr, "platoon: %s not found (build the project, or pass --bin-dir)\n", b.c_str());
      return 2;
    }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  size_t width = 6;
  for (const auto& n : session.nodes) width = std::max(width, n.name.size());
  std::vector<Proc> procs;
  // The discovery file of a server started here (ctl and the viewer find the session by it); removed at
  // the end, after the processes stopped.
  std::optional<platoon::session::DiscoveryFile> discovery;
  uint16_t bound_control_port = 0;
  try {
    if (selected("server")) {
      std::vector<std::string> args = {server_bin, "--config", session_path};
      if (lockstep) args.push_back("--lockstep");
      // In lock-step the server ends the session at a sim time; the launcher then stops the nodes.
      if (session.step.lockstep && duration_s > 0) args.insert(args.end(), {"--end", std::to_string(duration_s)});
      // In lock-step the session starts once every node started here joined, however long that takes on a
      // loaded machine: every node computes from step 1 (the same run twice gives the same result), and a
      // short run does not wait out a fixed countdown.
      if (session.step.lockstep) {
        std::string names;
        for (const auto& n : session.nodes)
          if (selected(n.name)) names += (names.empty() ? "" : ",") + n.name;
        if (!names.empty() && wanted.empty()) args.insert(args.end(), {"--wait-for", names});
      }
      procs.push_back({"server", platoon::process::Child::Spawn(args)});
      // Handshake: nodes start once the server listens (they would retry anyway, but logs read better).
      auto& server = procs.back().child;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      bool listening = false;
      while (!listening && std::chrono::steady_clock::now() < deadline && !server.TryWait()) {
        auto line = server.ReadLine(std::chrono::milliseconds(100));
        if (!line) continue;
        PrintLines("server", width, {*line});
        listening = line->find("listening on") != std::string::npos;
        if (listening) bound_control_port = LauncherBoundControlPort(*line).value_or(0);
      }
      if (!listening) {
        std::fprintf(stderr, "platoon: the server did not start listening (status %d); see its log above\n",
                     server.WaitFor(std::chrono::seconds(1)).value_or(-1));
        StopAll(procs, width);
        return 1;
      }
      if (bound_control_port == 0) {
        std::fprintf(stderr, "platoon: note: the server's listening line shows no control port: no discovery file\n");
      } else {
        try {
          platoon::session::DiscoveryEntry entry;
          entry.session = session.name;
          entry.control = {LauncherLocalServerHost(session), bound_control_port};
          entry.pid = static_cast<int>(getpid());
          entry.session_file = std::filesystem::absolute(session_path).lexically_normal().string();
          discovery.emplace(platoon::session::DiscoveryDir(), entry);
        } catch (const platoon::session::DiscoveryError& e) {
          std::fprintf(stderr, "platoon: note: %s; platoon ctl and the viewer need --server %s:%u\n", e.what(),
                       LauncherLocalServerHost(session).c_str(), bound_control_port);
        }
      }
    }
    for (const auto& n : session.nodes) {
      if (!selected(n.name)) continue;
      std::vector<std::string> args = {node_bin, "--config", session_path, "--name", n.name};
      if (!server_host.empty()) args.insert(args.end(), {"--server", server_host});
      // control_port = 0: the nodes go to the port the server bound.
      if (session.server.control_port == 0 && bound_control_port != 0)
        args.insert(args.end(), {"--port", std::to_string(bound_control_port)});
      procs.push_back({n.name, platoon::process::Child::Spawn(args)});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platoon: %s\n", e.what());
    StopAll(procs, width);
    return 1;
  }
  std::fprintf(stderr, "platoon: started %zu process(es) of session '%s'; Ctrl-C stops them all\n", procs.size(),
               session.name.c_str());
  if (discovery)
    std::fprintf(stderr, "platoon: the server listens at %s:%u; platoon ctl and the viewer find it there (%s)\n",
                 LauncherLocalServerHost(session).c_str(), bound_control_port, discovery->Path().c_str());

  const bool sim_duration = session.step.lockstep && duration_s > 0 && selected("server");
  const auto end = duration_s > 0 && !sim_duration ? std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                          std::chrono::duration<double>(duration_s))
                                  : std::chrono::steady_clock::time_point::max();
  while (true) {
    PumpOutput(procs, width, std::chrono::milliseconds(100));
    if (int sig = g_signal.load()) {
      std::fprintf(stderr, "platoon: %s: stopping all processes\n", sig == SIGINT ? "interrupted" : "terminated");
      return StopAll(procs, width) == 0 ? 0 : 1;
    }
    if (std::chrono::steady_clock::now() >= end) {
      std::fprintf(stderr, "platoon: duration reached: stopping all processes\n");
      return StopAll(procs, width) == 0 ? 0 : 1;
    }
    for (auto& p : procs) {
      if (auto st = p.child.TryWait()) {
        PumpOutput(procs, width, std::chrono::milliseconds(0));
        if ((sim_duration || session.step.end_s > 0) && p.name == "server" && *st == 0) {
          std::fprintf(stderr, "platoon: the session reached its end: stopping all processes\n");
          return StopAll(procs, width) == 0 ? 0 : 1;
        }
        std::fprintf(stderr, "platoon: required process '%s' exited with status %d; stopping the session\n",
                     p.name.c_str(), *st);
        StopAll(procs, width);
        return *st == 0 ? 1 : *st;
      }
    }
  }
}
