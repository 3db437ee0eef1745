#pragma once
/// The server's world core: membership, ownership, merge by stamp, stale/freeze/remove, deltas and
/// keyframes, parameters, the session phase and lock-step granting. Pure: it reads no clock and opens no
/// socket. It is handed decoded messages and the reference time, and queues what to send; SyncServer is
/// the I/O shell around it. Systems (WorldSystem) observe and steer it through named hooks.

#include "platoon/config/params.hpp"
#include "platoon/config/session.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/server/refusal_log.hpp"
#include "platoon/session/session_time.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <deque>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::server {

/// Ports the server actually bound (differs from the config when a port was 0).
struct BoundPorts {
  uint16_t control = 0;
  uint16_t time = 0;
  uint16_t world = 0;
  uint16_t state = 0;
};

/// What the server refused or dropped, by reason, and what it sent.
struct ServerCounters {
  uint64_t decode_errors = 0;        ///< Undecodable bytes (garbage, truncated, bad magic).
  uint64_t version_refused = 0;      ///< Joins and messages of another protocol version.
  uint64_t unknown_sender = 0;       ///< Messages from peers that have not joined.
  uint64_t foreign_entity = 0;       ///< Entity updates from a node that does not own the entity.
  uint64_t stale_update = 0;         ///< Entity updates older than (or as old as) the merged state.
  uint64_t forged_state = 0;         ///< Node states without the state token of the node they name.
  uint64_t future_stamp = 0;         ///< Entity updates stamped more than kMaxFutureStampNs ahead of sim time.
  uint64_t entity_limit = 0;         ///< New entities beyond max_entities or max_entities_per_node.
  uint64_t stalls_forgiven = 0;      ///< Stalls of the server's own loop whose time did not count as silence.
  uint64_t states_stall_dropped = 0; ///< Node states the senders dropped while this server stood still (not loss).
  uint64_t nodes_forgotten = 0;      ///< Lost nodes owning nothing, dropped after forget_lost_s (never owned: 2 x lost_timeout_s).
  uint64_t nodes_evicted = 0;        ///< Lost nodes dropped from a full table to let a live newcomer join.
  uint64_t unexpected_message = 0;   ///< Valid messages on the wrong socket.
  uint64_t join_refused = 0;         ///< Joins refused by a system (identity policy) or for an empty name.
  uint64_t wrong_connection = 0;     ///< Heartbeats, leaves and states naming a node other than the sender's connection or key.
  uint64_t not_operator = 0;         ///< Session control, parameter sets, markers (and closed reads) from a key not in operators.
  uint64_t rate_limited = 0;         ///< Messages beyond a peer's rate (peer_rate_hz, peer_burst) or its address's, dropped unread.
  uint64_t join_rate_limited = 0;    ///< Joins of new names beyond their address's or key's join_rate_hz, left unanswered.
  uint64_t handshake_mechanism = 0;  ///< Connections refused in the handshake for another security mechanism (plain TCP to CURVE).
  uint64_t handshake_crypto = 0;     ///< CURVE handshakes that failed to decrypt (a client with a wrong server key).
  uint64_t handshake_auth = 0;       ///< CURVE handshakes the ZAP handler refused (a client key not authorised).
  uint64_t handshake_protocol = 0;   ///< Handshakes that failed otherwise (malformed greeting or command, no detail).
  uint64_t subscription = 0;         ///< Subscriptions on the world port other than the empty one, ignored.
  uint64_t time_replies = 0;         ///< Time requests answered.
  uint64_t world_states_sent = 0;    ///< World states queued for broadcast (grants and re-grants included).
};

/// One refusal counter: its parameter (and exit line) name, its meaning, and its member of ServerCounters.
struct RefusalCounter {
  const char* name;                   ///< The parameter's name, e.g. "server.refused.undecodable".
  uint64_t ServerCounters::*counter;  ///< The counter.
  const char* meaning;                ///< One line for `ctl param list` and the docs.
};

/// Every refusal counter, in the exit line's order: the parameters server.refused.* and the server's exit
/// line are both made from this one table, so a counter added here appears in both.
const std::vector<RefusalCounter>& RefusalCounters();

/// Why a connection's handshake failed, as the server's socket monitor reports it.
enum class HandshakeFailure : uint8_t {
  kMechanism,  ///< Another security mechanism (a plain socket to a CURVE port).
  kCrypto,     ///< A CURVE box that does not open (a wrong server key).
  kAuth,       ///< The ZAP handler refused the client key.
  kProtocol,   ///< Anything else: a malformed greeting or command, or no detail.
};

/// One joined node, as the server tracks it.
struct NodeRecord {
  protocol::NodeInfo info;
  std::string peer;              ///< ROUTER identity on the control socket.
  std::string user_id;           ///< ZAP user id (client key name) of its join; empty with CURVE off.
  std::string peer_address;      ///< IP address its join came from; empty for an in-process client.
  uint64_t state_token = 0;      ///< Random per join, sent in the Welcome; node states must carry it.
  uint64_t entities_owned = 0;   ///< Merged entities this node owns (bounded by max_entities_per_node).
  bool owned_any = false;        ///< It ever owned an entity (since its first join): lost, it is kept longer.
  int64_t joined_ns = 0;         ///< Reference time of the (last) join, in ns.
  uint64_t states_received = 0;
  uint64_t last_state_sequence = 0;
  uint64_t states_missed = 0;    ///< Gaps in the node's state sequence numbers (loss on the way).
  uint64_t states_stall_dropped = 0;  ///< Gaps just after a stall of this server: the sender's queue overflowed.
  int64_t last_state_ns = 0;     ///< Reference time of the last node state, in ns.
  double mean_interval_s = 0;    ///< Smoothed interval between node states, in s.
  bool lockstep_member = false;  ///< Lock-step grants wait for this node's acknowledgements.
  bool dropped = false;          ///< Dropped from the lock-step member set after missing a deadline.
  uint64_t step_done = 0;        ///< Newest lock-step step the node acknowledged; 0: none.
  uint64_t idle_until_step = 0;  ///< The node computes nothing before this step: earlier steps do not wait for it.
  uint64_t required_from_step = 0;  ///< First step the node's acknowledgement is waited for (joins mid-session).
};

/// One merged entity and its lifecycle on the server.
struct MergedEntity {
  protocol::EntityState state;
  int64_t stale_since_ns = -1;  ///< Reference time the owner was lost, in ns; -1 while the owner is alive.
  bool frozen = false;          ///< Grace expired: held still at its last extrapolated pose.
  /// Reference time this state last went out on the broadcast stream (real time), in ns; a rolling
  /// keyframe's slice lists it by id only while that is within the keyframe interval.
  int64_t broadcast_ns = INT64_MIN / 2;
};

/// What the core wants sent.
struct Outgoing {
  enum class Target : uint8_t {
    kPeer,       ///< A reply on the control socket to `peer`.
    kBroadcast,  ///< A world state on the PUB socket.
  };
  Target target = Target::kPeer;
  std::string peer;  ///< ROUTER identity for kPeer; empty for kBroadcast.
  protocol::Message message;
};

/// A change of the session's phase or lock-step progress.
struct SessionEvent {
  enum class Kind : uint8_t {
    kStartScheduled,  ///< A start command was accepted; sim time T0 begins at ref_ns.
    kRunning,         ///< The start instant was reached (or a running session was adopted).
    kPaused,
    kResumed,
    kStopped,
    kStepEnd,         ///< Every required member finished lock-step step `step`.
    kSeek,            ///< A replay jumped to sim time `sim_time_ns`.
    kSpeed,           ///< A replay changed its speed.
  };
  Kind kind = Kind::kRunning;
  int64_t sim_time_ns = 0;  ///< Session sim time at the event, in ns (t_k for kStepEnd).
  int64_t ref_ns = 0;       ///< Reference time of the event, in ns.
  uint64_t step = 0;        ///< Lock-step step of the event; 0 in real time.
};

/// A change in the node table.
struct NodeEvent {
  enum class Kind : uint8_t { kJoined, kRejoined, kLeft, kLost, kBack, kDropped };
  Kind kind = Kind::kJoined;
  uint32_t node_id = 0;
  std::string name;
  int64_t ref_ns = 0;  ///< Reference time of the event, in ns.
};

/// Lower-case name of a session event kind ("running", "step_end", ...).
const char* SessionEventName(SessionEvent::Kind kind);
/// Lower-case name of a node event kind ("joined", "dropped", ...).
const char* NodeEventName(NodeEvent::Kind kind);

/// Named priorities of systems: lower runs first. Policies steer before observers see the result.
namespace system_priority {
inline constexpr int kPolicy = -100;   ///< Identity and admission policies.
inline constexpr int kStepper = -50;   ///< Lock-step helpers and event engines.
inline constexpr int kDefault = 0;     ///< Anything else.
inline constexpr int kRecorder = 100;  ///< Recorders and reporters: see the final outcome.
}  // namespace system_priority

/// Something that observes or steers the world (recorder, stepper, identity policy), plugged into
/// named phases of the core rather than into its merge rules. Every hook is a no-op by default.
class WorldSystem {
 public:
  virtual ~WorldSystem() = default;
  /// Before a join is accepted: return a non-empty reason to refuse it (identity policy).
  virtual std::string PreJoin(const protocol::Join& /*join*/, const std::string& /*peer_address*/) { return {}; }
  /// An entity update passed the ownership and stamp checks and was merged; `now_ns` is reference time.
  virtual void OnUpdateAccepted(const protocol::EntityState& /*entity*/, const NodeRecord& /*owner*/,
                                int64_t /*now_ns*/) {}
  /// A world state was queued for broadcast; `now_ns` is reference time.
  virtual void PostBroadcast(const protocol::WorldState& /*world*/, int64_t /*now_ns*/) {}
  /// The session started, paused, resumed, stopped, or finished a lock-step step.
  virtual void OnSessionEvent(const SessionEvent& /*event*/) {}
  /// A node joined, rejoined, left, was lost, came back or was dropped from lock-step.
  virtual void OnNodeEvent(const NodeEvent& /*event*/) {}
  /// Sim time stands at `sim_ns` before the world goes out: in real time at every Poll once the session
  /// started; in lock-step just before step k is granted at t_k, so what a system adds is in that grant.
  virtual void OnAdvance(int64_t /*sim_ns*/, int64_t /*now_ns*/) {}
  /// An entry was added to the session's event log (a marker, a parameter change, a scenario firing or
  /// action); `now_ns` is reference time.
  virtual void OnLoggedEvent(const protocol::LoggedEvent& /*event*/, int64_t /*now_ns*/) {}
};

/// The world core. Single-threaded; every call takes the current reference time `now_ns`.
class WorldCore {
 public:
  /// Wire-level re-grant period while a lock-step step is outstanding, in ns (a lost PUB grant cannot hang).
  static constexpr int64_t kRegrantPeriodNs = 200'000'000;
  /// [server] keyframe_parts = 0 (auto): up to this many entities a keyframe goes out whole (about 170 KB
  /// encoded), beyond it as a rolling keyframe spread over the interval's periodic broadcasts.
  static constexpr size_t kWholeKeyframeEntities = 512;
  /// Entity stamps may run this far ahead of the session clock, in ns (clock offsets are microseconds).
  static constexpr int64_t kMaxFutureStampNs = 1'000'000'000;

  /// `session` is copied (parameters may change it); `logger` receives every log line.
  WorldCore(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger);

  /// Adds a system; systems run in ascending `priority` (system_priority::*), ties in insertion order.
  void AddSystem(std::shared_ptr<WorldSystem> system, int priority = system_priority::kDefault);
  /// Ports announced in Welcome (after the shell bound its sockets).
  void SetBoundPorts(const BoundPorts& ports);
  /// Starts the session (sim time 0) this long after the first join, in s, unless that node reports a live
  /// session (then it is adopted). Negative: never.
  void SetAutostart(double delay_s) { autostart_s_ = delay_s; }
  /// Accepts the replay-only session commands (seek, speed); a live session ignores them with a warning.
  void EnableTimeControl() { time_control_ = true; }
  /// The session file every Welcome carries: its TOML `text` and the `path` it had on this PC, so that a
  /// client started without it (platoon-viewer with only --server) draws the session's road and scene.
  /// platoon-server serves the file it loaded; a replay serves its recording's. Unset: "" (none).
  void SetSessionFile(std::string text, std::string path) {
    session_file_ = std::move(text);
    session_file_path_ = std::move(path);
  }
  /// The session file's text that Welcomes carry ("" when none).
  const std::string& SessionFileText() const { return session_file_; }

  /// A message on the control socket from ROUTER identity `peer` at IP `peer_address`, authenticated as
  /// `user_id` (the ZAP user id, a client key's name; empty when the socket runs without CURVE).
  void OnControl(const std::string& peer, const std::string& peer_address, const std::string& user_id,
                 const protocol::Decoded& decoded, int64_t now_ns);
  /// The same without a key (CURVE off).
  void OnControl(const std::string& peer, const std::string& peer_address, const protocol::Decoded& decoded,
                 int64_t now_ns) {
    OnControl(peer, peer_address, std::string(), decoded, now_ns);
  }
  /// A message on the state socket, authenticated as `user_id` (empty without CURVE).
  void OnState(const std::string& user_id, const protocol::Decoded& decoded, int64_t now_ns);
  /// The same without a key (CURVE off).
  void OnState(const protocol::Decoded& decoded, int64_t now_ns) { OnState(std::string(), decoded, now_ns); }

  /// The ROUTER sockets whose peers are rate-limited one by one.
  enum class RouterSocket : uint8_t { kControl, kTime };
  /// Per-peer rate limit: admits one message from `peer` on `socket` (a token bucket of peer_burst
  /// messages refilled at peer_rate_hz); false: drop it, counted as rate_limited and logged once a second.
  bool Admit(RouterSocket socket, const std::string& peer, int64_t now_ns);
  /// Admit, and then per source: `user_id` under CURVE, else `peer_address` (no limit when both are empty,
  /// an in-process client) shares one bucket of peer_address_rate_hz and peer_address_burst, both times
  /// (1 + nodes joined from that source). On the control socket a connection that holds a joined node
  /// skips the source's bucket (its heartbeats are never starved by a flood from its own PC).
  bool Admit(RouterSocket socket, const std::string& peer, const std::string& peer_address,
             const std::string& user_id, int64_t now_ns);
  /// Buckets of the rate limit kept now (peers heard within peer_burst / peer_rate_hz); bounded by kMaxRateBuckets.
  size_t RateBuckets() const { return buckets_.size(); }
  /// Most peers tracked by the rate limit at once; messages from further new peers are dropped until some go idle.
  static constexpr size_t kMaxRateBuckets = 16384;
  /// Whether the connection `peer`, authenticated as `user_id`, may control the session, set parameters
  /// and add markers: a key named in [security] operators; without a key (CURVE off), a connection that
  /// presented the operator token (OperatorHello) within kOperatorIdleNs, or any when no token is set.
  bool IsOperator(const std::string& peer, const std::string& user_id, int64_t now_ns) const;
  /// CURVE off: the token a connection presents in an OperatorHello to become an operator, and the file
  /// clients read it from (named in refusals). Unset (in-process servers and tests): every connection
  /// without a key is an operator, as the process that owns the core is.
  void SetOperatorToken(std::string token, std::string file);
  /// Connections that presented the operator token, kept at most this many (the longest idle goes first).
  static constexpr size_t kMaxOperatorPeers = 64;
  /// An operator connection silent this long must present the token again, in ns (clients present it
  /// before each command). 10 min.
  static constexpr int64_t kOperatorIdleNs = 600'000'000'000;
  /// Connections now holding the operator role through the token.
  size_t OperatorPeers() const { return operator_peers_.size(); }
  /// Merges one node state: entities first (ownership, newest stamp wins), then its lock-step ack.
  void Merge(const protocol::NodeState& state, int64_t now_ns);
  /// A message on the time socket received at `t2_ns` and answered at `t3_ns` (reference times): the
  /// reply, or nothing for bad input (counted).
  std::optional<protocol::TimeReply> AnswerTime(const protocol::Decoded& decoded, int64_t t2_ns, int64_t t3_ns);
  /// Applies a session command (start at T0, pause, resume, stop). A start while the session is starting,
  /// running or paused is refused (it would rewind sim time): nothing changes, a warning is logged and
  /// false is returned; stop first. A start from waiting or stopped is accepted.
  /// A restart (operators only, any phase, a reason required) begins again at T0 as a start does and logs
  /// "session restarted by `who`: reason".
  bool Control(const protocol::SessionControl& control, int64_t now_ns, std::string_view who = "the server process");

  /// Lost detection and the stale grace: marks silent nodes lost, freezes or removes their entities.
  void Expire(int64_t now_ns);
  /// The server itself was not running for `gap_ns` up to `now_ns` (a suspended VM or laptop, SIGSTOP, a
  /// debugger): nobody could be heard meanwhile, so silence, the stale grace and the lock-step deadline
  /// count from now on, as if the gap had not been. The shell calls it when its loop turn took far
  /// longer than its longest wait; a stall of the server's own never marks every node lost.
  void ForgiveStall(int64_t gap_ns, int64_t now_ns);
  /// Everything time-driven: Starting -> Running, Expire, the broadcast schedule (real time) or granting
  /// (lock-step). Call after feeding input and whenever NextDueNs() is reached.
  void Poll(int64_t now_ns);
  /// Counts a handshake that failed on `socket` ("control", "time", "world", "state") and logs it
  /// rate-limited (the first at once, then one line a second with the count).
  void CountHandshakeFailure(HandshakeFailure why, const char* socket, int64_t now_ns);
  /// Counts `n` subscriptions other than the empty one read from the world port and logs them rate-limited;
  /// `last` is the last one's topic (only its size is logged).
  void CountRefusedSubscriptions(uint64_t n, std::string_view last, int64_t now_ns);
  /// Counts a world-port peer cut for sending `bytes` (more than `max_bytes`) and logs it rate-limited.
  void CountWorldPeerCut(const std::string& peer, uint64_t bytes, uint64_t max_bytes, int64_t now_ns);
  /// Writes every refusal count not yet logged (at shutdown), so that the lines add up to the counters.
  void FlushRefusalLog();
  /// Reference time at which Poll() next has work, in ns; 0 when due now. Lost and grace expiry are not
  /// included: poll at least every 50 ms.
  int64_t NextDueNs() const;
  /// Hands over what is queued to send, oldest first.
  std::vector<Outgoing> TakeOutgoing();

  /// The full world (keyframe with node table) as of `now_ns`, numbered like the last broadcast.
  protocol::WorldState Keyframe(int64_t now_ns) const;
  /// The status table, one line per entry (header, one row per node), for the shell to log.
  std::vector<std::string> StatusLines(int64_t now_ns) const;

  /// Counters of refused and dropped input.
  const ServerCounters& Counters() const { return counters_; }
  /// The merged entities by id.
  const std::map<uint64_t, MergedEntity>& Entities() const { return entities_; }
  /// The node table by node id.
  const std::map<uint32_t, NodeRecord>& Nodes() const { return nodes_; }
  /// The reported session phase.
  protocol::SessionPhase Phase() const { return phase_; }
  /// Session sim time at reference time `now_ns`, in ns (lock-step: t_k of the newest grant).
  int64_t SimTimeAt(int64_t now_ns) const { return session::SimTimeAt(anchor_, now_ns); }
  /// The session settings, as changed by parameters.
  const config::SessionDef& Session() const { return session_; }
  /// Lock-step period in ns; 0 in real time.
  int64_t StepNs() const { return session_.step.lockstep ? session_.step.StepNs() : 0; }
  /// Lock-step steps granted so far (re-grants not counted).
  uint64_t StepsGranted() const { return steps_granted_; }
  /// The newest granted lock-step step; 0 before the first grant.
  uint64_t CurrentStep() const { return current_step_; }
  /// True once a lock-step session reached its end_s: the shell may exit.
  bool Finished() const { return finished_; }

  // --- Sources that are not nodes (a replay): their entities bypass ownership and never go stale ---
  /// Sets an entity's state as a source that is not a joined node (a replay) says it is, whatever its
  /// stamp; it goes out with the next broadcast.
  void Inject(const protocol::EntityState& entity, int64_t now_ns);
  /// Removes an injected entity; receivers drop it with the next broadcast.
  void RemoveEntity(uint64_t id);
  /// Removes every entity at once, in a world state of its own (queued now), so that what is injected
  /// after it starts fresh tracks on every receiver (a replay seeking back).
  void ClearEntities(int64_t now_ns);
  /// Node ids handed out from here on start at `first_id` (a replay keeps the recorded owners' ids free).
  void ReserveNodeIds(uint32_t first_id) { next_node_id_ = std::max(next_node_id_, first_id); }

  // --- The session's event log (markers, parameter changes, scenario firings and actions) ---
  /// Entries kept for EventsAfter(); older ones are dropped first.
  static constexpr size_t kMaxLoggedEvents = 1000;
  /// An entry rides in every world state for this long of reference time after it was logged, in ns,
  /// so that a lost broadcast does not lose it; receivers keep each sequence once.
  static constexpr int64_t kEventRepeatNs = 1'000'000'000;
  /// Longest marker text accepted, in bytes.
  static constexpr size_t kMaxMarkerBytes = 1024;
  /// Numbers `event` (its sequence is set here), keeps it, logs a line, tells the systems and puts it in
  /// the world states of the next kEventRepeatNs (in lock-step: in the next grant). Returns the entry.
  protocol::LoggedEvent LogEvent(protocol::LoggedEvent event, int64_t now_ns);
  /// Kept entries with a sequence above `sequence`, oldest first.
  std::vector<protocol::LoggedEvent> EventsAfter(uint64_t sequence) const;

  // --- Parameters by path (docs/PROTOCOL.md "Parameters"): server.* and session.* live here, node.<name>.*
  // on the node of that name; the core forwards those under a request id of its own ---
  /// Forwarded requests waiting for their node's answer at most; further ones are refused.
  static constexpr size_t kMaxPendingParams = 256;
  /// A node that has not answered a forwarded request after this long is named in the answer, in ns.
  static constexpr int64_t kParamTimeoutNs = 500'000'000;
  /// The server's own parameters under `prefix` (server.*, session.*); node parameters are not included.
  std::vector<protocol::Parameter> ListParams(const std::string& prefix) const;
  /// One of the server's own parameters.
  protocol::ParamReply GetParam(const std::string& path) const;
  /// Sets one of the server's own writable parameters, checked like the config loader checks it; a
  /// refusal names the path and the expected range, and changes nothing. Does not log an event.
  protocol::ParamReply SetParam(const std::string& path, const std::string& value);
  /// Sets a parameter on behalf of a server-side system (a scenario action), server and node paths
  /// alike: checked the same way, logged as a kParam event from `source` when it took. Returns the
  /// answer for a server path (and for a node path that cannot be forwarded); nullopt when the request
  /// went to the node (its answer is logged when it comes).
  std::optional<protocol::ParamReply> RequestParamSet(const std::string& path, const std::string& value,
                                                      const std::string& source, int64_t now_ns);
  /// Forwarded parameter requests still waiting for their node.
  size_t PendingParamRequests() const { return pending_params_.size(); }
  /// Bumped by every set of server.faults.*: the shell hands Session().faults to its sockets when it changes.
  uint64_t FaultsVersion() const { return faults_version_; }

 private:
  struct SystemSlot {
    int priority;
    std::shared_ptr<WorldSystem> system;
  };

  uint64_t NewToken();
  void ReleaseOwned(uint32_t owner);
  void HandleJoin(const std::string& peer, const std::string& peer_address, const std::string& user_id,
                  const protocol::Join& join, uint16_t peer_version, int64_t now);
  // Counts a refusal of kind `what` (a string literal); once a second per kind returns how many there were
  // since the last line, for the caller to log; else 0. Nothing is formatted for refusals not logged.
  uint64_t RefusalDue(std::string_view what, int64_t now);
  // RefusalDue, and the line with the last case when due.
  void LogRefusal(std::string_view what, const std::string& detail, int64_t now);
  // Refuses a control message that needs the operator role; false when `user_id` may send it.
  bool RefuseNonOperator(const std::string& peer, const std::string& user_id, const protocol::Message& m, int64_t now);
  void ExpireRateBuckets(int64_t now);
  // Joins of a name the table does not hold: a token from the address's and from the key's join bucket
  // (join_rate_hz, join_burst); false: the join is left unanswered, counted and logged.
  bool AdmitNewName(const std::string& peer_address, const std::string& user_id, const protocol::Join& join,
                    int64_t now);
  // Nodes in the table that joined from `source` (a key under CURVE, else an address).
  size_t NodesFrom(const std::string& source, bool key) const;
  void Reply(const std::string& peer, protocol::Message message);
  void AdoptSession(const protocol::Join& join, int64_t now);
  // Why `control` is refused now (a start of a session under way, a restart without a reason); empty
  // when it may be applied.
  std::string StartRefusal(const protocol::SessionControl& control) const;
  // An OperatorHello: a right token makes `peer` an operator connection; a wrong one is counted and logged.
  void HandleOperatorHello(const std::string& peer, const std::string& user_id, const protocol::OperatorHello& hello,
                           int64_t now);
  // Drops node `id` from the table with its entities (a full table making room for a live newcomer).
  void EvictNode(uint32_t id, int64_t now);
  // Removes node `id` and the entities it owns, and emits its kLeft event (a Leave, or an eviction).
  void DropNode(uint32_t id, int64_t now);
  void MarkOwnerAlive(NodeRecord& node, int64_t now);
  NodeRecord* FindByPeer(const std::string& peer);
  bool CheckDecoded(const protocol::Decoded& decoded, const char* socket, int64_t now);
  void CountDecodeError(const char* socket, const std::string& detail, int64_t now);
  void Broadcast(protocol::WorldState world, int64_t now);
  void BroadcastRealTime(int64_t now, bool periodic);
  protocol::WorldState Delta(int64_t now) const;
  // A delta plus slice `part` of `parts` of a rolling keyframe (every entity whose id % parts == part).
  protocol::WorldState Slice(int64_t now, uint16_t part, uint16_t parts) const;
  // Slices of the next keyframe: 1 whole, or the periodic broadcasts of one keyframe interval.
  uint16_t KeyframeParts() const;
  // An empty world state numbered like the last broadcast, stamped with `now`, sim time and phase.
  protocol::WorldState Stamped(int64_t now, bool keyframe) const;
  void ClearChanges();
  void PollRealTime(int64_t now);
  void PollLockstep(int64_t now);
  bool StepComplete(uint64_t step) const;
  std::vector<NodeRecord*> LateMembers();
  void Grant(uint64_t step, int64_t now);
  void FinishAtEnd(int64_t now);
  int64_t StepSimNs(uint64_t step) const;
  void Emit(const SessionEvent& event);
  void Emit(const NodeEvent& event);
  void RegisterParams();
  // Parameters: requests from `peer` (empty: a system) and the nodes' answers to forwarded ones.
  void HandleParamRequest(const std::string& peer, const protocol::Message& request, int64_t now);
  bool HandleParamAnswer(const std::string& peer, const protocol::Message& answer, int64_t now);
  void FinishParamSet(const std::string& peer, protocol::ParamReply reply, const std::string& source, int64_t now);
  void ExpireParamRequests(int64_t now);
  void FinishListGroup(uint64_t group);

  config::SessionDef session_;  // its `conditions` are the live light and weather (light.*, weather.*)
  bool conditions_changed_ = false;  // light or weather set since the last broadcast
  std::shared_ptr<spdlog::logger> log_;
  std::vector<SystemSlot> systems_;
  std::vector<Outgoing> outgoing_;

  std::map<uint32_t, NodeRecord> nodes_;
  uint32_t next_node_id_ = 1;
  std::map<uint64_t, MergedEntity> entities_;
  std::set<uint64_t> changed_;     // entities to send in the next delta
  std::vector<uint64_t> removed_;  // entities removed since the last broadcast
  uint64_t world_sequence_ = 0;

  // Real-time broadcast schedule (reference times); started at the first Poll.
  bool schedule_started_ = false;
  int64_t next_broadcast_ns_ = 0;
  int64_t next_keyframe_ns_ = 0;
  uint16_t slice_parts_ = 0;      // a rolling keyframe under way: its slice count; 0: none
  uint16_t slice_next_ = 0;       // the slice the next periodic broadcast carries
  int64_t first_change_ns_ = -1;  // arrival of the oldest change not yet forwarded
  int64_t last_forward_ns_ = INT64_MIN / 2;

  // Session clock. In lock-step the anchor stands at t_k of the newest grant (paused-like) while the
  // reported phase is running.
  protocol::SessionPhase phase_ = protocol::SessionPhase::kWaiting;
  session::SessionAnchor anchor_;
  int64_t start_at_ns_ = 0;
  bool any_joined_ = false;  // until the first join, the server adopts a running session it is told of
  double autostart_s_ = -1;
  bool time_control_ = false;  // replays: seek and speed are accepted
  std::string session_file_, session_file_path_;  // what Welcomes carry (SetSessionFile)

  // Lock-step: step k is computed at sim time step_t0_ns_ + (k - 1) * StepNs().
  int64_t step_t0_ns_ = 0;
  uint64_t first_step_ = 1;         // step of the first grant after the session runs
  uint64_t current_step_ = 0;
  uint64_t steps_granted_ = 0;
  protocol::WorldState grant_;      // the newest grant as a keyframe, re-sent while waiting
  int64_t grant_ref_ns_ = 0;        // reference time grant current_step_ went out
  int64_t next_regrant_ns_ = 0;
  int64_t next_late_check_ns_ = 0;
  /// Reference time until which gaps in node state sequences are the backlog of a stall of this server
  /// (senders dropped what their queues could not hold), not loss; -1: none.
  int64_t stall_backlog_until_ns_ = -1;
  int64_t next_keyframe_sim_ns_ = INT64_MIN;
  bool finished_ = false;

  ServerCounters counters_;
  std::mt19937_64 token_rng_{std::random_device{}()};
  RefusalLog refusal_log_;  // by kind (string literals): the first line at once, then one a second with the count
  bool keyless_logged_ = false;  // the first message without a key says that everyone is an operator
  std::string operator_token_, operator_token_file_;  // CURVE off: SetOperatorToken
  std::map<std::string, int64_t> operator_peers_;     // connection -> last message, bounded by kMaxOperatorPeers

  // Rate limit: one token bucket per (socket, peer).
  struct Bucket {
    double tokens = 0;
    int64_t last_ns = 0;
  };
  std::map<std::pair<RouterSocket, std::string>, Bucket> buckets_;
  // Per source ("a:" address or "k:" key): messages (by socket) and joins of new names; each bounded by
  // kMaxRateBuckets, idle full buckets expire with the connections' ones.
  std::map<std::pair<RouterSocket, std::string>, Bucket> source_buckets_;
  std::map<std::string, Bucket> join_buckets_;
  int64_t next_bucket_expiry_ns_ = 0;

  struct KeptEvent {
    protocol::LoggedEvent event;
    int64_t logged_ns = 0;  // reference time it was logged
  };
  std::deque<KeptEvent> events_;
  uint64_t event_sequence_ = 0;

  config::ParamRegistry params_;  // server.* and session.*
  // A request forwarded to a node, by the server's request id.
  struct PendingParam {
    protocol::Message request;   // as sent to the node (carrying the server's id)
    std::string asker;           // control peer to answer; empty: a system (RequestParamSet)
    uint64_t asker_id = 0;       // the asker's request id
    std::string source;          // who set it, for the event log
    std::string node_peer;       // the only peer whose answer is taken
    std::string node_name;
    int64_t deadline_ns = 0;
    uint64_t group = 0;          // a list fanned out to several nodes; 0: none
  };
  std::map<uint64_t, PendingParam> pending_params_;
  // A list fanned out to several nodes, merged as they answer.
  struct ListGroup {
    std::string asker;
    uint64_t asker_id = 0;
    protocol::ParamList merged;
    size_t outstanding = 0;
  };
  std::map<uint64_t, ListGroup> list_groups_;
  uint64_t next_param_id_ = 1;
  uint64_t faults_version_ = 0;
};

}  // namespace platoon::server
