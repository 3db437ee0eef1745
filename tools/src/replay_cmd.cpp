// platoon replay LOG.mcap: the recorded world served by a sync server, so that viewers, observers,
// sensor hosts and the fusion node join it as they join a live session.
#include "replay_cmd.hpp"

#include "platoon/clock/oscillator.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/server/replay.hpp"
#include "platoon/server/start_when_joined.hpp"
#include "platoon/server/sync_server.hpp"
#include "platoon/session/operator_token.hpp"

#include <memory>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <set>
#include <thread>

namespace platoon::launcher {
namespace {

std::atomic<bool> g_replay_stop{false};
void OnReplaySignal(int) { g_replay_stop.store(true); }

double NsToS(int64_t ns) { return static_cast<double>(ns) / 1e9; }
int64_t SToNs(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

}  // namespace

CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions& o) {
  auto* cmd = app.add_subcommand(
      "replay",
      "Serve a session log as a live sync server would: viewers, observers, sensor hosts and the fusion node join "
      "it unchanged, so a recorded drive is re-measured by any sensor set.\n\n"
      "  platoon replay recordings/drivers.mcap                        at recorded speed, on the recorded ports\n"
      "  platoon replay log.mcap --from 10 --to 20 --speed 0.5         a stretch at half speed\n"
      "  platoon replay log.mcap --lockstep --config configs/lidar_farm.toml\n"
      "      lock-step: every grant waits for the sensor hosts, as fast as they go; ports from that file\n"
      "  platoon-viewer --server 127.0.0.1:7400                         then watch it (pause, seek, speed)");
  cmd->add_option("log", o.log_path, "Session log (.mcap) written by a recorder node")->required()->check(CLI::ExistingFile);
  cmd->add_option("--config", o.config_path,
                  "Take the server's settings (ports, bind address, rates) from this session file instead of the "
                  "recorded one")
      ->check(CLI::ExistingFile);
  cmd->add_option("--speed", o.speed, "Sim seconds per real second, e.g. 0.5 or 4 (real-time replays)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.01, 100.0))
      ->capture_default_str();
  cmd->add_option("--from", o.from_s, "Start at this sim time, in s (default: the first recorded state)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  cmd->add_option("--to", o.to_s, "End at this sim time, in s (default: the last recorded state)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  cmd->add_flag("--lockstep", o.lockstep,
                "Lock-step: each step's recorded world is granted once every member finished the previous one");
  cmd->add_option("--step-hz", o.step_hz, "Lock-step rate in steps per sim second (default: the session's)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(1.0, 10000.0));
  cmd->add_option("--bind", o.bind, "Interface to bind (overrides the session's bind_address)");
  cmd->add_option("--port", o.port, "Control port (time, world and state use the next three); 0: free ports")
      ->check(CLI::Range(0, config::kMaxControlPort));
  cmd->add_option("--ready-file", o.ready_file, "Write the bound ports as JSON to this file once listening");
  cmd->add_flag("--paused", o.paused, "Start paused (resume from the viewer or a session control command)");
  cmd->add_option("--wait-for", o.wait_for,
                  "Start once these nodes joined (comma-separated names), e.g. the sensor hosts of a lock-step "
                  "re-measurement, so that they see the replay from its first step")
      ->delimiter(',');
  return cmd;
}

int RunReplay(const ReplayOptions& o) {
  const char* me = "platoon replay";
  if (o.lockstep && o.speed != 1.0) {
    std::fprintf(stderr, "%s: --speed applies to real-time replays; a lock-step replay runs as fast as its members\n", me);
    return config::cli::kExitUsage;
  }
  if (o.from_s >= 0 && o.to_s >= 0 && o.to_s <= o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) must be after --from (%.3f s)\n", me, o.to_s, o.from_s);
    return config::cli::kExitUsage;
  }
  std::fprintf(stderr, "%s: reading %s ...\n", me, o.log_path.c_str());
  const auto t_read = std::chrono::steady_clock::now();
  const server::ReplayLog log = server::LoadReplayLog(o.log_path);
  for (const auto& p : log.problems) std::fprintf(stderr, "%s: %s\n", me, p.c_str());
  if (log.states.empty()) {
    std::fprintf(stderr, "%s: %s holds no entity states to replay\n", me, o.log_path.c_str());
    return log.world_states == 0 ? config::cli::kExitUsage : 1;  // not a session log: bad input
  }
  std::fprintf(stderr, "%s: %zu states of %zu entities, sim time %.3f .. %.3f s, read in %.2f s\n", me,
               log.states.size(), log.entity_count, NsToS(log.first_ns), NsToS(log.last_ns),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count());

  config::SessionDef session;
  try {
    if (!o.config_path.empty()) {
      session = config::LoadSession(o.config_path);
    } else if (!log.session_text.empty()) {
      try {
        session = config::LoadSessionText(log.session_text, o.log_path + " (recorded session)");
      } catch (const config::ConfigError& e) {
        std::fprintf(stderr, "%s: the recorded session file does not load here (%s); using default server settings\n",
                     me, e.what());
        session = config::SessionDef{};
      }
      // The recorded file's key paths belong to the PCs it ran on: a replay binds this PC's loopback
      // without keys unless -c names a session file with its own [security].
      session.server.bind_address = config::ServerDef{}.bind_address;
      session.security = config::SecurityDef{};
      session.security.where = o.log_path + " (recorded session): security";
    }
    if (!log.session_name.empty()) session.name = log.session_name + " (replay)";
    if (!o.bind.empty()) session.server.bind_address = o.bind;
    if (o.port >= 0) config::SetControlPort(session.server, o.port);
    session.step.lockstep = o.lockstep;
    if (o.step_hz > 0) session.step.step_hz = o.step_hz;
    config::ValidateSecurity(session);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", me, e.what());
    return config::cli::kExitUsage;
  }
  const int64_t from_ns = o.from_s >= 0 ? SToNs(o.from_s) : log.first_ns;
  const int64_t to_ns = o.to_s >= 0 ? SToNs(o.to_s) : log.last_ns;
  if (from_ns > log.last_ns || to_ns < log.first_ns) {
    std::fprintf(stderr, "%s: --from/--to (%.3f .. %.3f s) miss the recording (%.3f .. %.3f s)\n", me, NsToS(from_ns),
                 NsToS(to_ns), NsToS(log.first_ns), NsToS(log.last_ns));
    return config::cli::kExitUsage;
  }
  if (o.lockstep) session.step.end_s = NsToS(to_ns);

  auto logger = log::MakeLogger("replay", session.server.log_level);
  std::signal(SIGINT, OnReplaySignal);
  std::signal(SIGTERM, OnReplaySignal);
  std::signal(SIGPIPE, SIG_IGN);

  clock::MonotonicOscillator reference;
  std::unique_ptr<server::SyncServer> server_ptr;
  try {
    server_ptr = std::make_unique<server::SyncServer>(session, logger, reference);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", me, e.what());
    return config::cli::kExitUsage;
  }
  server::SyncServer& server = *server_ptr;
  logger->info("security: {}", config::SecuritySummary(session));
  server::BoundPorts ports;
  try {
    ports = server.Bind();
  } catch (const zmq::error_t& e) {
    logger->critical("cannot bind on {} (ports {}-{}): {}", session.server.bind_address, session.server.control_port,
                     session.server.state_port, e.what());
    return 1;
  }
  // No CURVE: seek, speed and pause need the operator token, as on platoon-server (docs/DEPLOYMENT.md).
  session::ServerOperatorToken token;
  if (!config::CurveOn(session)) {
    try {
      token = session::MakeServerOperatorToken(ports.control, "");
      server.Core().SetOperatorToken(token.token, token.file->Path());
      logger->info("operator token in {} (seek, speed and pause need it; status reads do not)", token.file->Path());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: operator token: %s\n", me, e.what());
      return config::cli::kExitUsage;
    }
  }
  auto replay = std::make_shared<server::ReplaySystem>(log, server.Core(), from_ns, to_ns);
  server.Core().AddSystem(replay, server::system_priority::kStepper);
  server.Core().EnableTimeControl();
  logger->info("session '{}' listening on {}: control {}, time {}, world {}, state {}", session.name,
               session.server.bind_address, ports.control, ports.time, ports.world, ports.state);
  if (!o.ready_file.empty()) {
    if (const std::string error = server::WriteReadyFile(o.ready_file, ports); !error.empty()) {
      std::fprintf(stderr, "%s: --ready-file: %s\n", me, error.c_str());
      return config::cli::kExitUsage;
    }
  }
  // Start now (or once the awaited nodes joined) at --from, at --speed; paused when asked.
  if (!o.wait_for.empty()) {
    server.Core().AddSystem(std::make_shared<server::StartWhenJoined>(
                                server.Core(), server::StartWhenJoinedDef{o.wait_for, from_ns, o.speed, o.paused}),
                            server::system_priority::kPolicy);
    std::string names;
    for (const auto& n : o.wait_for) names += (names.empty() ? "" : ", ") + n;
    logger->info("the replay starts once {} joined", names);
  } else {
    const int64_t now = reference.NowNs();
    server.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, now, from_ns});
    if (o.speed != 1.0) server.Control(protocol::SessionControl{protocol::SessionControl::Command::kSpeed, now, 0, o.speed});
    if (o.paused) server.Control(protocol::SessionControl{protocol::SessionControl::Command::kPause, now, 0});
  }

  // The end: real-time replays stop the session at --to and linger so that the stop goes out;
  // lock-step replays end through end_s in the core. Progress once a second.
  std::thread watcher([&] {
    const auto started = std::chrono::steady_clock::now();
    auto next_progress = started + std::chrono::seconds(1);
    while (!g_replay_stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (replay->Ended() && !o.lockstep) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(server::SyncServer::kFinishLingerNs));
        g_replay_stop.store(true);
        break;
      }
      if (std::chrono::steady_clock::now() >= next_progress) {
        next_progress += std::chrono::seconds(1);
        const int64_t reached = replay->ReachedNs();
        if (reached == INT64_MIN) continue;
        const double done = std::clamp(NsToS(reached - from_ns) / std::max(1e-9, NsToS(to_ns - from_ns)), 0.0, 1.0);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const double eta = done > 0.001 ? elapsed * (1 - done) / done : 0;
        std::fprintf(stderr, "\r%s: sim %.1f / %.1f s  %3.0f %%  ETA %.0f s   ", me, NsToS(reached), NsToS(to_ns),
                     done * 100, eta);
        std::fflush(stderr);
      }
    }
  });
  server.Run(g_replay_stop);
  g_replay_stop.store(true);
  watcher.join();
  std::fprintf(stderr, "\n");
  std::printf("SUMMARY {\"replay\":\"%s\",\"sim_time_s\":%.6f,\"states_served\":%llu,\"entities\":%zu,"
              "\"world_states_sent\":%llu,\"steps\":%llu,\"completed\":%s}\n",
              o.log_path.c_str(), NsToS(server.SimTimeAt(reference.NowNs())),
              static_cast<unsigned long long>(replay->Injected()), log.entity_count,
              static_cast<unsigned long long>(server.Counters().world_states_sent),
              static_cast<unsigned long long>(server.Core().StepsGranted()),
              replay->Ended() || server.Finished() ? "true" : "false");
  std::fflush(stdout);
  return 0;
}

}  // namespace platoon::launcher
