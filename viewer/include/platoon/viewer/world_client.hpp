#pragma once
/// The viewer's link to the sync server (seed 004 §5.11): the shared session client core
/// (session::SessionClient: join, synced clock, snapshot + deltas, heartbeats, session commands) in its
/// socket loop (session::ClientLink), plus the sensor data streams the viewer draws. All of it runs on
/// its own network thread; the render thread only takes copies (Snapshot) and queues commands
/// (SendControl), each under a mutex held for a copy, never for I/O.

#include "platoon/clock/oscillator.hpp"
#include "platoon/clock/slewed_clock.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/transport/fault_injector.hpp"
#include "platoon/remote_world.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/transport/channel.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <thread>
#include <vector>

namespace platoon::viewer {

/// Where and how the client connects. Read-only while it runs.
struct WorldClientDef {
  std::string server_host = "127.0.0.1";  ///< Address of the sync server.
  uint16_t control_port = 7400;           ///< Its control (ROUTER) port; the others come with the Welcome.
  std::string name = "viewer";            ///< Node name in the session; must be unique there.
  protocol::Role role = protocol::Role::kObserver;  ///< Role reported at join.
  clock::ClockDef clock = clock::DefaultClockDef(); ///< Clock discipline (the session's [clock]).
  transport::FaultDef faults;             ///< Receive-path faults (the session's [faults]).
  double rejoin_interval_s = 0.25;        ///< Join retry period while not joined, in s.
  double server_silence_s = 3.0;          ///< Silence after which the client joins again, in s.
  double world_hold_s = 3.0;              ///< World-stream silence after which remote vehicles hold, shown stale, in s.
  bool sensor_data = true;                ///< Subscribe to the fused and radar streams of the node table.
  bool subscribe_lidar = false;           ///< Also connect to raw lidar streams (counted and listed, not drawn).
  std::optional<transport::CurveDef> curve;  ///< CURVE client keys when the session has CURVE on (config::LoadClientCurve).
};

/// A data stream found in the node table, as the panel lists it.
struct SensorStreamStatus {
  std::string stream_id;                  ///< Stream (sensor) id.
  protocol::StreamKind kind = protocol::StreamKind::kUnknown;
  std::string endpoint;                   ///< "tcp://address:port" of the publishing node.
  std::string node;                       ///< Name of the publishing node.
  bool connected = false;                 ///< The data SUB socket is connected to it.
  uint64_t frames = 0;                    ///< Messages of this stream received since the viewer started.
  double age_s = -1.0;                    ///< Wall time since the last one, in s; < 0: none yet.
};

/// Copies handed to the render thread.
struct WorldSnapshot {
  bool joined = false;                    ///< A Welcome was received and the server has not gone silent since.
  uint32_t node_id = 0;                   ///< Id the server gave the viewer.
  std::string session_name;               ///< From the Welcome.
  protocol::SessionPhase phase = protocol::SessionPhase::kWaiting;  ///< Session phase of the newest world state.
  int64_t sim_time_ns = 0;                ///< Estimated session sim time when the snapshot was taken.
  bool replay = false;                    ///< The server is a replay: it takes seek and speed commands.
  double sim_rate = 1.0;                  ///< Sim seconds per second (a replay's speed).
  bool clock_set = false;                 ///< The synced clock has taken its one step.
  clock::ClockStatus clock;               ///< Clock figures (offset, drift, rtt).
  std::vector<protocol::NodeInfo> nodes;  ///< Node table of the newest world state that carried one.
  RemoteWorld world;                      ///< Every entity with its dead-reckoning track.
  uint64_t world_received = 0;            ///< World states received on the SUB socket.
  uint64_t world_gaps = 0;                ///< Sequence gaps seen (each asks for a snapshot).
  uint64_t snapshots = 0;                 ///< Snapshots received.
  uint64_t bad_input = 0;                 ///< Undecodable or unexpected messages, dropped.
  std::string error;                      ///< Last refusal from the server, if any.
  /// Data streams of kind fused, radar and lidar in the node table, by stream id.
  std::vector<SensorStreamStatus> streams;
  /// Latest fused cloud and radar scan per stream id (shared, immutable: copying a snapshot is cheap).
  std::map<std::string, std::shared_ptr<const protocol::FusedCloud>> fused;
  std::map<std::string, std::shared_ptr<const protocol::RadarScan>> radar;
  uint64_t data_received = 0;             ///< Messages received on the data SUB socket.
};

/// Runs the network thread; stops it (sending Leave) on destruction.
class WorldClient {
 public:
  /// `logger` receives the client's log lines ("viewer" logger of the process).
  WorldClient(const WorldClientDef& def, std::shared_ptr<spdlog::logger> logger);
  ~WorldClient();
  WorldClient(const WorldClient&) = delete;
  WorldClient& operator=(const WorldClient&) = delete;

  /// Starts the network thread (once).
  void Start();
  /// Stops and joins the network thread; sends Leave when joined. Idempotent.
  void Stop();

  /// A copy of everything the render thread shows, with sim_time_ns estimated now.
  WorldSnapshot Snapshot() const;
  /// The session file the server's Welcome carried: its TOML text ("" before the join, or when the server
  /// has none) and where it was on the server's PC.
  std::pair<std::string, std::string> SessionFile() const;
  /// The session's newest light and weather from the server (none before the first world state that
  /// carried them; docs/WORLD.md).
  std::optional<world::WorldConditions> Conditions() const;
  /// Estimated session sim time now, in ns: the newest world state's sim time advanced by the synced
  /// clock while the session runs.
  int64_t SimNowNs() const;
  /// Queues a session command for the server (start, pause, resume, stop).
  void SendControl(const protocol::SessionControl& command);
  /// Queues a parameter request (list, get, set), a marker or an events request for the server.
  void SendRequest(const session::ParamRequest& request);
  /// The server's answers to this viewer's commands and requests since the last call, oldest first.
  std::vector<session::ControlReply> TakeReplies();

 private:
  void Run();
  void DrainData(transport::Channel& data);
  void ResolveStreams(session::StreamConnector& connector);

  WorldClientDef def_;
  std::shared_ptr<spdlog::logger> log_;
  clock::MonotonicOscillator local_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable std::mutex mutex_;  // guards everything below
  session::SessionClient client_;
  WorldSnapshot data_;        // sensor streams and data only; the rest comes from client_
  uint64_t nodes_seen_ = ~0ull;                    // client_.NodesVersion() the streams were resolved for
  std::map<std::string, int64_t> stream_last_ns_;  // local time of each stream's newest message
};

}  // namespace platoon::viewer
