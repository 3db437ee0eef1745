// platoon-server: the sync server of a platoon session.
#include "platoon/clock/oscillator.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/process/memory.hpp"
#include "platoon/server/marker_publisher.hpp"
#include "platoon/server/scenario_system.hpp"
#include "platoon/server/start_when_joined.hpp"
#include "platoon/server/sync_server.hpp"
#include "platoon/server/variators.hpp"
#include "platoon/session/discovery.hpp"
#include "platoon/session/operator_token.hpp"
#include "platoon/session/world_hash.hpp"

#include <memory>
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// The machine-readable last line: session, sim time, steps and the hash of the merged world.
void PrintSummary(const platoon::config::SessionDef& session, const platoon::server::SyncServer& server,
                  int64_t now_ns) {
  std::vector<platoon::protocol::EntityState> entities;
  entities.reserve(server.Entities().size());
  for (const auto& [id, e] : server.Entities()) entities.push_back(e.state);
  const std::string hash = platoon::session::HashHex(platoon::session::WorldHash(entities));
  std::printf("SUMMARY {\"server\":\"%s\",\"sim_time_s\":%.6f,\"steps\":%llu,\"entities\":%zu,\"world_hash\":\"%s\","
              "\"loop_late_max_ms\":%.1f,\"stalls_forgiven\":%llu,\"stalls_reported\":%llu}\n",
              session.name.c_str(), static_cast<double>(server.SimTimeAt(now_ns)) / 1e9,
              static_cast<unsigned long long>(server.Core().StepsGranted()), entities.size(), hash.c_str(),
              static_cast<double>(server.Stalls().LateMaxNs()) / 1e6,
              static_cast<unsigned long long>(server.Stalls().Stalls()),
              static_cast<unsigned long long>(server.StallsReported()));
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  // Megabyte messages (clouds, fused frames, keyframes) reuse freed heap instead of new mappings.
  platoon::process::KeepLargeAllocations();
  CLI::App app{"platoon-server: sync server of a platoon session. Keeps the reference clock, answers time\n"
               "requests, tracks nodes, merges their states and broadcasts the world state."};
  std::string config_path, log_level, bind, fault_spec, ready_file;
  int control_port = -1;
  double autostart_s = 1.0, exit_after_s = 0;
  app.add_option("-c,--config", config_path, "Session file (TOML); see configs/demo.toml")->check(CLI::ExistingFile);
  app.add_option("--bind", bind, "Interface to bind (overrides [server] bind_address), e.g. 127.0.0.1 or *");
  app.add_option("--port", control_port,
                 "Control port (overrides [server] control_port; time, world and state use the next three, so at "
                 "most 65532); 0 binds every socket to a free port")
      ->check(CLI::Range(0, 65535));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off (overrides config)");
  app.add_option("--fault", fault_spec,
                 "Receive-path faults, e.g. drop=0.1,dup=0.01,reorder=0.05,delay_ms=5,jitter_ms=1,"
                 "burst_every_s=10,burst_ms=500,seed=1 (overrides [faults])");
  app.add_option("--autostart", autostart_s,
                 "Start the session (sim time 0) this many seconds after the first node joins; negative: wait for a "
                 "start command. A restarted server instead resumes the session its nodes report.")
      ->check(platoon::config::cli::Finite())
      ->capture_default_str();
  app.add_option("--ready-file", ready_file, "Write the bound ports as JSON to this file once listening");
  std::string operator_token_file;
  app.add_option("--operator-token-file", operator_token_file,
                 "CURVE off: write the operator token here (mode 0600) instead of "
                 "$XDG_RUNTIME_DIR/platoon/operator.<control port>; removed at exit");
  app.add_option("--exit-after", exit_after_s, "Stop after this many seconds (0: run until SIGINT/SIGTERM)")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::NonNegativeNumber);
  bool lockstep = false;
  double step_hz = 0, end_s = -1;
  app.add_flag("--lockstep", lockstep, "Lock-step session (overrides [session] mode): each step waits for every member");
  app.add_option("--step-hz", step_hz, "Lock-step rate in steps per sim second (overrides [session] step_hz), e.g. 100")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--end", end_s,
                 "Lock-step: stop the session at this sim time, in s, and exit 0 (overrides [session] end_s; 0: never)")
      ->check(platoon::config::cli::Finite())
      ->check(CLI::Range(0.0, 1e7));
  std::vector<std::string> wait_for;
  app.add_option("--wait-for", wait_for,
                 "Start the session once these nodes joined (comma-separated names), 0.2 s after the last of them, "
                 "instead of --autostart; platoon run passes every node in lock-step")
      ->delimiter(',')
      ->excludes("--autostart");
  if (auto code = platoon::config::cli::Parse(app, argc, argv)) return *code;
  if (control_port > platoon::config::kMaxControlPort) {
    // The time, world and state sockets bind the next three ports: 65535 would wrap to ports 1 and 2.
    std::fprintf(stderr,
                 "platoon-server: --port %d: the control port must be at most %d (time, world and state bind the "
                 "next three ports)\n",
                 control_port, platoon::config::kMaxControlPort);
    return platoon::config::cli::kExitUsage;
  }

  platoon::config::SessionDef session;
  try {
    if (!config_path.empty()) session = platoon::config::LoadSession(config_path);
    platoon::config::SessionDef as_filed = session;  // what the nodes read
    if (!bind.empty()) session.server.bind_address = bind;
    if (control_port >= 0) platoon::config::SetControlPort(session.server, control_port);
    if (!log_level.empty()) {
      platoon::log::ParseLevel(log_level);
      session.server.log_level = log_level;
    }
    if (lockstep) session.step.lockstep = true;
    if (step_hz > 0) session.step.step_hz = step_hz;
    if (end_s >= 0) session.step.end_s = end_s;
    if (!fault_spec.empty()) session.faults = platoon::transport::ParseFaultSpec(fault_spec, session.faults);
    // --bind may move the server beyond loopback: the [security] checks hold for what it binds.
    platoon::config::ValidateSecurity(session);
    if (!bind.empty()) {
      if (platoon::config::CurveOn(session) != platoon::config::CurveOn(as_filed))
        throw platoon::config::ConfigError(
            "--bind " + bind + " turns CURVE " + (platoon::config::CurveOn(session) ? "on" : "off") +
            ", but the nodes read the session file's bind_address and would not: set bind_address in the file (or "
            "[security] mode = \"curve\")");
    }
  } catch (const platoon::config::ConfigError& e) {
    std::fprintf(stderr, "platoon-server: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "platoon-server: %s\n", e.what());
    return 2;
  }

  auto log = platoon::log::MakeLogger("server", session.server.log_level);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  platoon::clock::MonotonicOscillator reference;
  // The keys load here: a missing or malformed key file ends the start with its name.
  std::unique_ptr<platoon::server::SyncServer> server_ptr;
  try {
    server_ptr = std::make_unique<platoon::server::SyncServer>(session, log, reference);
  } catch (const platoon::config::ConfigError& e) {
    std::fprintf(stderr, "platoon-server: %s\n", e.what());
    return 2;
  }
  platoon::server::SyncServer& server = *server_ptr;
  log->info("security: {}", platoon::config::SecuritySummary(session));
  // Every Welcome carries the session file, so that a viewer given only --server draws its road and scene.
  if (!config_path.empty()) {
    std::ifstream in(config_path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(config_path, ec);
    server.Core().SetSessionFile(text.str(), ec ? config_path : absolute.string());
  }
  // Scenario events ([[event]]): evaluated on the merged world before each grant / at each poll.
  if (platoon::server::InstallScenario(server.Core(), log))
    log->info("scenario: {} event(s)", session.events.size());
  // Variators ([[variator]]): parameter values set before each grant / at each poll.
  if (platoon::server::InstallVariators(server.Core(), log))
    log->info("variators: {}", session.variators.size());
  platoon::server::BoundPorts ports;
  try {
    ports = server.Bind();
  } catch (const zmq::error_t& e) {
    log->critical("cannot bind on {} (ports {}-{}): {}", session.server.bind_address, session.server.control_port,
                  session.server.state_port, e.what());
    return 1;
  }
  // [markers] publish: every logged event out to external recorders (docs/PROTOCOL.md "Marker stream").
  if (!session.markers_publish.empty()) {
    try {
      server.Core().AddSystem(std::make_shared<platoon::server::MarkerPublisher>(server.Core(), session.markers_publish,
                                                                                 session.step.lockstep, log),
                              platoon::server::system_priority::kRecorder);
    } catch (const zmq::error_t& e) {
      log->critical("[markers] publish: cannot bind {}: {}", session.markers_publish, e.what());
      return 1;
    }
  }
  log->info("session '{}' listening on {}: control {}, time {}, world {}, state {}", session.name,
            session.server.bind_address, ports.control, ports.time, ports.world, ports.state);
  // CURVE off: every process of this PC reaches the sockets, so the operator is whoever can read the token
  // file this user owns (docs/DEPLOYMENT.md); ctl, the viewer and Python present it.
  platoon::session::ServerOperatorToken token;
  if (!platoon::config::CurveOn(session)) {
    try {
      token = platoon::session::MakeServerOperatorToken(ports.control, operator_token_file);
      server.Core().SetOperatorToken(token.token, token.file->Path());
      log->info("operator token in {} (session control needs it; status reads do not)", token.file->Path());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "platoon-server: operator token: %s\n", e.what());
      return 2;
    }
  } else if (!operator_token_file.empty()) {
    log->warn("--operator-token-file ignored: CURVE is on, operators are the keys in [security] operators");
  }
  if (session.faults.Enabled()) log->warn("fault injection is ON for received messages");
  if (!ready_file.empty()) {
    const std::string error = platoon::server::WriteReadyFile(ready_file, ports);
    if (!error.empty()) {
      std::fprintf(stderr, "platoon-server: --ready-file: %s\n", error.c_str());
      return 2;
    }
  }
  if (session.step.lockstep)
    log->info("lock-step session: {} steps per sim second, deadline {:.2f} s ({}), end {}", session.step.step_hz,
              session.step.deadline_s, session.step.drop_late ? "drop late members" : "wait",
              session.step.end_s > 0 ? fmt::format("at {:.3f} s", session.step.end_s) : std::string("never"));

  if (!wait_for.empty()) {
    server.SetAutostart(-1);
    server.Core().AddSystem(std::make_shared<platoon::server::StartWhenJoined>(
                                server.Core(), platoon::server::StartWhenJoinedDef{wait_for}),
                            platoon::server::system_priority::kPolicy);
    std::string names;
    for (const auto& n : wait_for) names += (names.empty() ? "" : ", ") + n;
    log->info("the session starts once {} joined", names);
  } else {
    server.SetAutostart(autostart_s);
  }

  std::thread timer;
  if (exit_after_s > 0) {
    timer = std::thread([exit_after_s] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(exit_after_s);
      while (!g_stop.load() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      g_stop.store(true);
    });
  }
  server.Run(g_stop);
  // A lock-step session that reached its end stops the exit timer too.
  g_stop.store(true);
  if (timer.joinable()) timer.join();
  const auto& c = server.Counters();
  // Every refusal counter under its parameter's name, from the table the parameters are made from.
  std::string refused;
  for (const auto& rc : platoon::server::RefusalCounters())
    refused += fmt::format("{}{} {}", refused.empty() ? "" : ", ", rc.name, c.*rc.counter);
  log->info("served {} time requests, sent {} world states; refused: {}", c.time_replies, c.world_states_sent, refused);
  if (platoon::config::CurveOn(session))
    log->info("CURVE handshakes: {} admitted, {} refused", server.Handshakes().accepted, server.Handshakes().refused);
  PrintSummary(session, server, reference.NowNs());
  return 0;
}
