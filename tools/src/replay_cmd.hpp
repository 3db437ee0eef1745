#pragma once
// `platoon replay`: serves a session log as a live sync server would (tools/src/replay_cmd.cpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// Options of `platoon replay`.
struct ReplayOptions {
  std::string log_path;
  std::string config_path;  ///< Server settings from this session file instead of the recorded one.
  std::string bind;
  int port = -1;
  double speed = 1.0;
  double from_s = -1, to_s = -1;
  bool lockstep = false;
  double step_hz = 0;
  std::string ready_file;
  bool paused = false;
  std::vector<std::string> wait_for;  ///< Start only once these nodes joined.
};

/// Adds the `replay` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions& options);
/// Runs the replay until its end, or SIGINT/SIGTERM. Exit code: 0 done, 1 failure, 2 usage.
int RunReplay(const ReplayOptions& options);

}  // namespace platoon::launcher
