#pragma once
// `platoon bridge`: serves a running session over the Foxglove WebSocket protocol (tools/src/bridge_cmd.cpp).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace platoon::launcher {

/// Options of `platoon bridge`.
struct BridgeOptions {
  std::string session_path;          ///< The session file: where the server is, and its keys.
  std::string server;                ///< HOST:PORT of the server's control socket; "": the session file's.
  std::string address = "127.0.0.1"; ///< Address the WebSocket server binds.
  uint16_t port = 8765;              ///< Its TCP port (Foxglove's default); 0: any free one (printed).
  std::string token;                 ///< Clients must present it (?token=...); required beyond loopback.
  std::string name = "bridge";       ///< Node name in the session; the source of its parameter events.
  std::string key_file;              ///< CURVE: this client's secret key file; "": the session file's.
  double send_buffer_mb = 8.0;       ///< Per client: frames are dropped while more than this is unsent, in MB.
  double cloud_hz = 0;               ///< Clouds per stream and second of sim time at most; 0: every cloud.
  bool verbose = false;              ///< Log the session client's lines.
};

/// Adds the `bridge` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddBridgeCommand(CLI::App& app, BridgeOptions& options);
/// Runs the bridge until SIGINT/SIGTERM. Exit code: 0 stopped, 1 the session could not be joined or the
/// port not bound, 2 usage.
int RunBridge(const BridgeOptions& options);

}  // namespace platoon::launcher
