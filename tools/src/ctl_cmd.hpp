#pragma once
// `platoon ctl`: steers a running session from the command line (tools/src/ctl_cmd.cpp).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::launcher {

/// The command `platoon ctl` was given.
enum class CtlCommand : uint8_t {
  kNone, kStatus, kStart, kPause, kResume, kStop, kSeek, kSpeed, kParamList, kParamGet, kParamSet, kMark, kEvents,
  kRestart, kStudy
};

/// Options of `platoon ctl`.
struct CtlOptions {
  std::string server;       ///< HOST:PORT of the server's control socket; "": session::FindServer's order.
  std::string config_path;  ///< Session file whose server address is the default.
  std::string session;      ///< --session: the running session of this name (a discovery file); "" any one.
  bool json = false;        ///< One JSON object on stdout instead of the human output.
  double timeout_s = 5.0;   ///< How long to wait for the server's answers, in s. Typical 2-10.
  bool verbose = false;     ///< Log the session client's join and clock lines on stderr.
  std::string key_file;     ///< CURVE: this client's secret key file; "": --config's [security] key.
  std::string server_key_file;  ///< CURVE without --config: the server's public key file.
  CtlCommand command = CtlCommand::kNone;
  double at_sim_s = 0;      ///< start, restart: sim time the session starts from, in s.
  std::string reason;       ///< restart: why the session begins again (required, logged by the server).
  double seek_s = 0;        ///< seek: target sim time, in s.
  double speed = 1.0;       ///< speed: sim seconds per real second, in (0, 1000].
  std::string prefix;       ///< param list: path prefix ("": every parameter).
  std::string path;         ///< param get/set: parameter path, e.g. "server.broadcast_hz".
  std::string value;        ///< param set: TOML literal, e.g. 30 or "text".
  std::string mark_text;    ///< mark: the marker's text (1..1024 bytes).
  std::string study_dir;    ///< study: the output folder of the study waiting for its operator.
  std::vector<std::string> study_words;  ///< study: next | repeat | abort REASON...
  uint64_t after = 0;       ///< events: only events with a sequence above this.
  bool follow = false;      ///< events: keep printing new events until interrupted.
};

/// Adds the `ctl` subcommand (and its commands) to `app`, filling `options` when it is parsed.
CLI::App* AddCtlCommand(CLI::App& app, CtlOptions& options);
/// Runs the parsed command. Exit code: 0 ok, 1 the server refused or did not answer in time, 2 usage.
int RunCtl(const CtlOptions& options);

}  // namespace platoon::launcher
