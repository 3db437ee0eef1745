#pragma once
/// The sync server (seed 004 §5.11, MultiSimulatorServer): the I/O shell around the WorldCore. It owns
/// the sockets and the reference clock, answers time requests, decodes what arrives, feeds it to the
/// core with the reference time, and sends what the core returns. Single-threaded event loop; in real
/// time nothing in it waits for any particular node (lock-step waiting is the core's, not the loop's).

#include "platoon/clock/oscillator.hpp"
#include "platoon/clock/stall_watch.hpp"
#include "platoon/config/session.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/server/world_core.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/transport/socket_monitor.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <map>
#include <memory>
#include <vector>
#include <optional>

namespace platoon::server {

/// Writes the bound ports as JSON ({"control":..,"time":..,"world":..,"state":..}) to `path`, atomically
/// (a temporary file renamed), so a waiting process never reads half a file. Returns "" or what went wrong.
std::string WriteReadyFile(const std::string& path, const BoundPorts& ports);

/// The sync server.
class SyncServer {
 public:
  /// Linger after a lock-step session finished, so that the stop broadcast leaves, in ns.
  static constexpr int64_t kFinishLingerNs = 300'000'000;

  /// `reference` is the server's reference clock (CLOCK_MONOTONIC in production) and must outlive the server.
  /// With CURVE on (config::CurveOn) it loads the server key and the authorised client keys: throws
  /// config::ConfigError naming the file when one is missing or malformed.
  SyncServer(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger,
             const clock::Oscillator& reference);

  /// Binds all sockets; returns the ports bound. Throws zmq::error_t when a port is taken.
  BoundPorts Bind();

  /// Runs the event loop until `stop` becomes true (checked at least every 50 ms), or until kFinishLingerNs
  /// after a lock-step session reached its end.
  void Run(const std::atomic<bool>& stop);

  /// Applies a session command (start at T0, pause, resume, stop) as if a client had sent it.
  void Control(const protocol::SessionControl& control);

  /// Starts the session (sim time 0) this long after the first node joins, in s, unless that node
  /// reports a session already running (then the server resumes it). Negative: never.
  void SetAutostart(double delay_s) { core_.SetAutostart(delay_s); }

  /// CURVE handshakes admitted and refused so far (zero on a session without CURVE).
  transport::ZapStats Handshakes() const;

  /// The world core, e.g. to add systems before Run().
  WorldCore& Core() { return core_; }
  /// The world core, read-only.
  const WorldCore& Core() const { return core_; }
  /// Counters of refused and dropped input.
  const ServerCounters& Counters() const { return core_.Counters(); }
  /// The merged entities.
  const std::map<uint64_t, MergedEntity>& Entities() const { return core_.Entities(); }
  /// The node table.
  const std::map<uint32_t, NodeRecord>& Nodes() const { return core_.Nodes(); }
  /// Session sim time at reference time `ref_ns`, in ns.
  int64_t SimTimeAt(int64_t ref_ns) const { return core_.SimTimeAt(ref_ns); }
  /// True once a lock-step session reached its end_s.
  bool Finished() const { return core_.Finished(); }
  /// How far the event loop fell behind (the largest time beyond the asked wait between two checkpoints),
  /// and how many of those gaps were stalls forgiven to the nodes.
  const clock::StallWatch& Stalls() const { return stalls_; }
  /// Times Run's loop stood still for more than a second while the watchdog looked (each one logged as a
  /// warning with the loop's phase and this process's thread states, process::LoopWatchdog).
  uint64_t StallsReported() const { return stalls_reported_; }

 private:
  std::optional<transport::CurveDef> SocketCurve() const;
  /// The settings of the three input sockets (control, time, state): the session's limits and faults, CURVE, kInputIo.
  transport::ChannelDef InputDef(const config::SessionDef& session) const;
  void HandleTime(const transport::Packet& packet);
  // Sends what the core queued; returns how many replies went to control peers.
  size_t Flush();

  std::shared_ptr<spdlog::logger> log_;
  const clock::Oscillator& reference_;
  config::SessionDef session_;  // socket settings; the core holds the live copy
  WorldCore core_;
  // Two I/O threads: kInputIo serves the control, time and state sockets, kWorldIo the world broadcast.
  static constexpr uint64_t kInputIo = 1, kWorldIo = 2;
  zmq::context_t context_{2};
  std::optional<config::ServerCurve> curve_;      // CURVE keys; nullopt on a loopback-only session
  std::unique_ptr<transport::ZapHandler> zap_;    // admits the authorised client keys (before the sockets)
  transport::Channel control_, time_, world_, state_;
  // Handshake failures of each socket (plain peers at a CURVE port, wrong server keys), counted by the core;
  // declared after the channels, so they stop before the sockets close.
  struct Monitored {
    const char* socket;
    std::unique_ptr<transport::SocketMonitor> monitor;
  };
  std::vector<Monitored> monitors_;
  /// Most bytes a world-port peer may send on one connection: its greeting, handshake (a CURVE INITIATE is
  /// the largest, about 300 bytes) and the empty subscription take under 1 KiB.
  static constexpr uint64_t kWorldPeerMaxBytes = 4096;
  int64_t next_monitor_read_ns_ = 0;
  // Reads the monitors (at most every 10 ms) and hands their failures to the core.
  void ReadMonitors(int64_t now);
  uint64_t faults_version_ = 0;  // the core's FaultsVersion() the sockets follow
  // Gaps of more than five of the loop's longest waits (250 ms) beyond the wait asked for are stalls.
  clock::StallWatch stalls_{250'000'000};
  uint64_t stalls_reported_ = 0;
};

}  // namespace platoon::server
