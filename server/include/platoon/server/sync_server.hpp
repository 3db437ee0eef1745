#pragma once
/// The sync server (seed 004 §5.11, MultiSimulatorServer): owns the reference clock, answers time
/// requests, keeps the node table, merges node states and broadcasts one world state.
/// Single-threaded event loop; nothing in it waits for any particular node.

#include "platoon/clock/oscillator.hpp"
#include "platoon/config/session.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/transport/channel.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <vector>
#include <string>

namespace platoon::server {

/// Ports the server actually bound (differs from the config when a port was 0).
struct BoundPorts {
  uint16_t control = 0;
  uint16_t time = 0;
  uint16_t world = 0;
  uint16_t state = 0;
};

/// What the server refused or dropped, by reason.
struct ServerCounters {
  uint64_t decode_errors = 0;        ///< Undecodable bytes (garbage, truncated, bad magic).
  uint64_t version_refused = 0;      ///< Joins and messages of another protocol version.
  uint64_t unknown_sender = 0;       ///< Messages from peers that have not joined.
  uint64_t foreign_entity = 0;       ///< Entity updates from a node that does not own the entity.
  uint64_t stale_update = 0;         ///< Entity updates older than (or as old as) the merged state.
  uint64_t unexpected_message = 0;   ///< Valid messages on the wrong socket.
  uint64_t time_replies = 0;
  uint64_t world_states_sent = 0;
};

/// One joined node, as the server tracks it.
struct NodeRecord {
  protocol::NodeInfo info;
  std::string peer;          ///< ROUTER identity on the control socket.
  int64_t joined_ns = 0;
  uint64_t states_received = 0;
  uint64_t last_state_sequence = 0;
  uint64_t states_missed = 0;  ///< Gaps in the node's state sequence numbers.
  int64_t last_state_ns = 0;   ///< Reference time of the last node state.
  double mean_interval_s = 0;  ///< Smoothed interval between node states, in s.
};

/// One merged entity and its lifecycle on the server.
struct MergedEntity {
  protocol::EntityState state;
  int64_t stale_since_ns = -1;  ///< Reference time the owner was lost; -1 while the owner is alive.
  bool frozen = false;          ///< Grace expired: held still at its last extrapolated pose.
};

/// The sync server.
class SyncServer {
 public:
  /// `reference` is the server's reference clock (CLOCK_MONOTONIC in production) and must outlive the server.
  SyncServer(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger,
             const clock::Oscillator& reference);

  /// Binds all sockets; returns the ports bound. Throws zmq::error_t when a port is taken.
  BoundPorts Bind();

  /// Runs the event loop until `stop` becomes true (checked at least every 50 ms).
  void Run(const std::atomic<bool>& stop);

  /// Applies a session command (start at T0, pause, resume, stop) as if a client had sent it.
  void Control(const protocol::SessionControl& control) { HandleSessionControl(control, reference_.NowNs()); }

  /// Starts the session (sim time 0) this long after the first node joins, unless that node
  /// reports a session already running (then the server resumes it). Negative: never.
  void SetAutostart(double delay_s) { autostart_s_ = delay_s; }

  /// Counters of refused and dropped input.
  const ServerCounters& Counters() const { return counters_; }
  /// The merged entities.
  const std::map<uint64_t, MergedEntity>& Entities() const { return entities_; }
  /// The node table.
  const std::map<uint32_t, NodeRecord>& Nodes() const { return nodes_; }
  /// Session sim time at reference time `ref_ns`.
  int64_t SimTimeAt(int64_t ref_ns) const;

 private:
  void HandleControl(const transport::Packet& packet, int64_t now);
  void HandleTime(const transport::Packet& packet);
  void HandleState(const transport::Packet& packet, int64_t now);
  void HandleJoin(const transport::Packet& packet, const protocol::Join& join, uint16_t peer_version, int64_t now);
  void HandleSessionControl(const protocol::SessionControl& control, int64_t now);
  void ReplyControl(const std::string& peer, const protocol::Message& message);
  protocol::ParamReply GetParam(const std::string& path) const;
  protocol::ParamReply SetParam(const std::string& path, const std::string& value);
  std::vector<protocol::Parameter> ListParams(const std::string& prefix) const;
  void CheckLost(int64_t now);
  void MarkOwnerAlive(NodeRecord& node);
  protocol::WorldState Snapshot(int64_t now) const;
  void AdoptSession(const protocol::Join& join);
  void Broadcast(int64_t now, bool periodic);
  void PrintStatus(int64_t now);
  NodeRecord* FindByPeer(const std::string& peer);
  void CountDecodeError(const std::string& where, const std::string& detail);
  template <class T>
  const T* Expect(const protocol::Decoded& decoded, const char* socket);

  config::SessionDef session_;
  std::shared_ptr<spdlog::logger> log_;
  const clock::Oscillator& reference_;
  zmq::context_t context_{1};
  transport::Channel control_, time_, world_, state_;

  std::map<uint32_t, NodeRecord> nodes_;
  uint32_t next_node_id_ = 1;
  std::map<uint64_t, MergedEntity> entities_;
  std::set<uint64_t> changed_;           // entities to send in the next delta
  std::vector<uint64_t> removed_;        // entities removed since the last broadcast
  uint64_t world_sequence_ = 0;
  int64_t next_keyframe_ns_ = 0;
  int64_t first_change_ns_ = -1;         // arrival of the oldest change not yet forwarded

  // Session clock: sim = sim_at_anchor + (ref - anchor_ref) while running.
  protocol::SessionPhase phase_ = protocol::SessionPhase::kWaiting;
  int64_t start_at_ns_ = 0;
  int64_t anchor_ref_ns_ = 0;
  int64_t sim_at_anchor_ns_ = 0;
  bool any_joined_ = false;  // until the first join, the server adopts a running session it is told of
  double autostart_s_ = -1;

  ServerCounters counters_;
  int64_t last_error_log_ns_ = 0;
  uint64_t errors_since_log_ = 0;
};

}  // namespace platoon::server
