#pragma once
/// The session client core: everything a process does to take part in a session, with no I/O. It is
/// handed what arrived (OnMessage) and the local time (Poll), and returns what to send (TakeOutgoing).
/// It joins and rejoins, follows the ports the server announces, disciplines the slewed clock with
/// four-timestamp exchanges, sends heartbeats, applies world states (snapshot + deltas, Clone pattern)
/// into its RemoteWorld, follows the session anchor (eq. 11, session::SimTimeAt) and, in lock-step,
/// the server's step grants. platoon-node, platoon-viewer and every other client share it; each keeps
/// only a thin socket loop (session::ClientLink). See docs/ARCHITECTURE.md "Session client".
///
/// Not thread-safe: a shell that reads it from several threads guards it with one mutex.

#include "platoon/clock/oscillator.hpp"
#include "platoon/clock/slewed_clock.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/remote_world.hpp"
#include "platoon/session/session_time.hpp"

#include <spdlog/logger.h>

#include <array>
#include <map>
#include <utility>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace platoon::session {

/// The four session sockets of a client.
enum class Socket : uint8_t {
  kControl,  ///< DEALER to the server's ROUTER: join, heartbeat, snapshots, session control.
  kTime,     ///< DEALER: time exchanges.
  kWorld,    ///< SUB: world-state broadcasts.
  kState,    ///< PUSH: the client's node states (and lock-step acknowledgements).
};

/// How a client takes part. Read-only while it runs.
struct ClientDef {
  std::string name = "client";                      ///< Node name; unique in the session.
  protocol::Role role = protocol::Role::kObserver;  ///< Role reported at join.
  std::string host;                                 ///< Hostname for the server's node table.
  uint32_t pid = 0;                                 ///< Process id for the node table.
  uint16_t protocol_version = protocol::kProtocolVersion;  ///< Version spoken (tests may speak another).
  clock::ClockDef clock = clock::DefaultClockDef(); ///< Clock discipline (the session's [clock]).
  double rejoin_interval_s = 0.25;                  ///< Join retry period while not joined, in s.
  /// Silence after which the client joins again, in s; 0: three times the lost timeout of the Welcome.
  double server_silence_s = 0;
  double min_heartbeat_s = 0.01;                    ///< Heartbeats are never more frequent than this, in s.
  bool lockstep_member = false;                     ///< Lock-step steps wait for this client (it steps modules).
  bool retry_refused = false;                       ///< After a refusal: retry every second (viewer) or give up (node).
  std::vector<protocol::DataEndpoint> endpoints;    ///< Data streams announced at join.
  dr::TrackDef track = dr::DefaultTrackDef();       ///< Blending of corrections in the remote world.
  /// World-stream silence after which the remote world holds (RemoteWorld::Hold: every remote entity stands
  /// where its estimate was and shows stale) instead of dead-reckoning on without news, in s; 0: never.
  /// Nodes and viewers set the session's lost_timeout_s + stale_grace_s, as long as the server itself
  /// dead-reckons the entities of a lost node. Real time only: in lock-step, time moves with the grants.
  double world_hold_s = 3.0;
  double stats_warmup_s = 0;                        ///< Latency and gap statistics start this long after construction, in s.
  double broadcast_hz = 60.0;                       ///< The server's periodic broadcast rate (gap histogram), in Hz.
  /// Keep the server's answers to this client's commands and parameter requests for TakeReplies() (a
  /// tool such as platoon ctl); false (nodes, viewers): session status replies are dropped as before.
  bool keep_replies = false;
  /// A session without CURVE: the operator token (FindOperatorToken) presented in an OperatorHello before
  /// each session command, parameter set and marker, so that the server lets this connection steer; empty:
  /// none (reads only, or CURVE, where the key is the credential).
  std::string operator_token;
  /// Where the token is looked for again while `operator_token` is empty, before each command that needs
  /// it (a client started beside its server may look before the server has written the file); empty: never.
  std::function<std::string()> find_operator_token;
};

/// A ClientDef for `name` and `role` on this host and process (hostname, pid filled in).
ClientDef DefaultClientDef(const std::string& name, protocol::Role role);

/// A parameter request for the server (docs/PROTOCOL.md "Parameters").
/// Markers and event-log reads go the same way.
using ParamRequest = std::variant<protocol::ParamListRequest, protocol::ParamGet, protocol::ParamSet, protocol::Mark,
                                  protocol::EventsRequest>;
/// The server's answer to a session command (SessionStatus) or to a ParamRequest.
using ControlReply =
    std::variant<protocol::SessionStatus, protocol::ParamList, protocol::ParamReply, protocol::EventList>;
/// Session events kept for TakeEvents() at most; older ones are dropped first.
inline constexpr size_t kMaxKeptEvents = 1000;
/// Replies kept for TakeReplies() at most; older ones are dropped first.
inline constexpr size_t kMaxKeptReplies = 64;

/// One message to send, already encoded.
struct Outgoing {
  Socket socket = Socket::kControl;
  std::string bytes;
};

/// Ports of the server's other sockets, as the Welcome announced them (0: not yet known).
struct ServerPorts {
  uint16_t time = 0;
  uint16_t world = 0;
  uint16_t state = 0;
  bool operator==(const ServerPorts&) const = default;
};

/// What the client has seen of the world stream.
struct ClientStats {
  uint64_t world_received = 0;   ///< World states received on the SUB socket.
  uint64_t world_gaps = 0;       ///< Sequence gaps (each asks for a snapshot).
  uint64_t snapshots = 0;        ///< Snapshot replies applied.
  uint64_t server_restarts = 0;  ///< Sequence resets seen.
  uint64_t bad_input = 0;        ///< Undecodable or unexpected messages, dropped.
  uint64_t stalls_forgiven = 0;  ///< Times this process was not running and that did not count as silence.
  uint64_t world_holds = 0;      ///< Times the world stream fell silent for world_hold_s and the remote world held.
  int64_t world_max_gap_ns = 0;  ///< Longest interval between two world states, local ns.
  /// World-state inter-arrival gaps in broadcast periods: <=1.5, <=2.5, <=3.5, <=10.5, more.
  std::array<uint64_t, 5> gap_hist{};
  /// Update latency samples: sim time now minus the stamp of each entity state first seen, in ns.
  std::vector<int64_t> latencies_ns;
};

/// The session client core.
class SessionClient {
 public:
  /// `local` is this process's oscillator (CLOCK_MONOTONIC in production, a fake in tests); it must
  /// outlive the client. `logger` gets join, refusal and restart lines.
  SessionClient(ClientDef def, const clock::Oscillator& local, std::shared_ptr<spdlog::logger> logger);

  // --- inputs ---
  /// Hands one message that arrived on `from`, received at local time `local_ns`.
  void OnMessage(Socket from, std::string_view bytes, int64_t local_ns);
  /// Time-driven work at local time `local_ns`: join retries, time requests, heartbeats, snapshot
  /// requests, silence detection, lock-step re-acknowledgements.
  void Poll(int64_t local_ns);
  /// Queues an encoded NodeState for the state socket (dropped while not joined).
  void SendState(std::string bytes);
  /// Queues a session command; a start without an instant starts now on the synced clock.
  void Control(protocol::SessionControl command);
  /// Queues a parameter request for the control socket; no join is needed. With `keep_replies` the
  /// answer comes back through TakeReplies().
  void RequestParams(const ParamRequest& request);
  /// Queues the answer to a forwarded parameter request that on_param_request left for later (a node's
  /// set in real time, answered once the value is in force), on the control socket.
  void AnswerParamRequest(const protocol::Message& answer) { Queue(Socket::kControl, answer); }
  /// Queues a Leave (when joined) with `reason`.
  void Leave(const std::string& reason);
  /// Sets the data streams announced at the next join.
  void SetEndpoints(std::vector<protocol::DataEndpoint> endpoints) { def_.endpoints = std::move(endpoints); }
  /// Lock-step: this client's modules finished step `step` (its acknowledgement is already queued).
  void MarkStepDone(uint64_t step) { step_done_ = std::max(step_done_, step); }

  // --- outputs ---
  /// Everything queued to send since the last call, in order.
  std::vector<Outgoing> TakeOutgoing();
  /// Local time of the next timed work, in ns (Poll then).
  int64_t NextDueNs() const;
  /// Ports the shell should connect the time, world and state sockets to.
  ServerPorts Ports() const { return ports_; }
  /// True once after each Welcome: the client (re)joined; owners send all their entities afresh.
  bool TakeRejoined() { return std::exchange(rejoined_, false); }
  /// This process was not running for `gap_ns` up to `local_ns` (a suspended VM or laptop, SIGSTOP, a
  /// starved core): nothing could be heard meanwhile, so the server's silence counts from now on. The
  /// shell (ClientLink::Turn) calls it when a turn took far longer than its wait.
  void ForgiveStall(int64_t gap_ns, int64_t local_ns);
  /// Replies to this client's commands and parameter requests since the last call, oldest first
  /// (only with `keep_replies`; at most kMaxKeptReplies are held).
  std::vector<ControlReply> TakeReplies() { return std::exchange(replies_, {}); }
  /// Session events (markers, parameter changes, scenario firings and actions) that arrived with world
  /// states since the last call, each once, oldest first (at most kMaxKeptEvents).
  std::vector<protocol::LoggedEvent> TakeEvents() { return std::exchange(events_, {}); }
  /// The newest refusal while the client keeps retrying (retry_refused), empty once joined.
  const std::string& LastRefusal() const { return last_refusal_; }
  /// The refusal that ended the client (retry_refused false), if any.
  const std::optional<std::string>& Refused() const { return refused_; }

  // --- state ---
  /// A Welcome was received and the server has not gone silent since.
  bool Joined() const { return joined_; }
  /// An operator token is known (ClientDef::operator_token, or found since by find_operator_token).
  bool HasOperatorToken() const { return !def_.operator_token.empty(); }
  /// Id the server gave this client (0 before the first Welcome).
  uint32_t NodeId() const { return node_id_; }
  /// Session name from the Welcome.
  const std::string& SessionName() const { return session_name_; }
  /// The session file's TOML text from the Welcome ("" before it, or when the server has none): a client
  /// started without the file (platoon-viewer with only --server, Python) reads the session's road and
  /// scene from it. A replay serves its recording's file.
  const std::string& SessionFile() const { return session_file_; }
  /// Where that file was on the server's PC ("" when unknown); a relative road file is beside it.
  const std::string& SessionFilePath() const { return session_file_path_; }
  /// True once a world state was applied since the first Welcome: a snapshot reply or a broadcast
  /// keyframe (the whole world, as World() then holds it).
  bool WorldReceived() const { return world_complete_; }
  /// The session anchor of the newest world state (the client's view of the session clock).
  const SessionAnchor& Anchor() const { return anchor_; }
  /// Phase of the session.
  protocol::SessionPhase Phase() const { return anchor_.phase; }
  /// Session sim time now, in ns: in real time eq. 11 on the synced clock; in lock-step the granted step's time.
  int64_t SimNowNs() const;
  /// True while sim time advances here (real time: running; lock-step: a granted step is not done yet).
  bool Advancing() const;
  /// The synced clock (thread-safe on its own).
  const clock::SlewedClock& Clock() const { return clock_; }
  clock::SlewedClock& Clock() { return clock_; }
  /// Every remote entity with its dead-reckoning track (this client's own entities are skipped).
  const RemoteWorld& World() const { return world_; }
  /// Node table of the newest world state that carried one, and a counter bumped when it changes.
  const std::vector<protocol::NodeInfo>& Nodes() const { return nodes_; }
  /// The session's light and weather as the newest world state carrying them said; nullopt before any.
  const std::optional<world::WorldConditions>& Conditions() const { return conditions_; }
  /// Counts world states that changed Conditions() (the first one included).
  uint64_t ConditionsVersion() const { return conditions_version_; }
  uint64_t NodesVersion() const { return nodes_version_; }
  /// Statistics of the world stream.
  const ClientStats& Stats() const { return stats_; }
  /// Lock-step period announced by the server, in ns (0: real time).
  int64_t StepNs() const { return step_ns_; }
  /// True when the server accepts seek and speed commands (it is a replay).
  bool TimeControl() const { return time_control_; }
  /// The state token of the last Welcome: every NodeState this client's node sends carries it.
  uint64_t StateToken() const { return state_token_; }
  /// Newest lock-step grant: step number (0: none) and its sim time.
  uint64_t GrantedStep() const { return granted_step_; }
  int64_t GrantedSimNs() const { return granted_sim_ns_; }
  /// Newest step this client's modules finished.
  uint64_t StepDone() const { return step_done_; }
  /// Local time, from the oscillator the client was given.
  int64_t LocalNowNs() const { return local_.NowNs(); }

  /// Called with each accepted time exchange (truth checks in tests and the node's monitor).
  std::function<void(const clock::TimeSample&)> on_time_sample;
  /// The world tap: called with each world-state broadcast that arrives on the world socket (not the
  /// snapshot replies), with its envelope bytes exactly as received, the decoded state and the local
  /// receive time in ns, before the client applies it. It runs on the thread that calls OnMessage
  /// (a node's network thread, under the client's mutex), so it must only copy and return: a recorder
  /// queues the bytes in a bounded queue of its own. Unset (the default): nothing is copied.
  std::function<void(std::string_view bytes, const protocol::WorldState& state, int64_t local_ns)> on_world_broadcast;
  /// Node side of parameters by path: the server forwards node.<name>.* requests (ParamListRequest,
  /// ParamGet, ParamSet) to the node that owns them; this answers one (a ParamList or ParamReply carrying
  /// the request's request_id), and the client queues the answer on the control socket. nullopt: answered
  /// later through AnswerParamRequest (a set is confirmed once it is in force, so that the asker's next
  /// get reads the new value). Runs on the thread that calls OnMessage. Unset: refused at once.
  std::function<std::optional<protocol::Message>(const protocol::Message& request)> on_param_request;

 private:
  void OnControl(const protocol::Message& m, int64_t local_ns);
  void OnWorld(const protocol::WorldState& w, bool snapshot, int64_t local_ns);
  void FollowAnchor(const protocol::WorldState& w);
  void Queue(Socket s, const protocol::Message& m);
  void Queue(Socket s, std::string bytes) { out_.push_back(Outgoing{s, std::move(bytes)}); }
  void Ack(uint64_t step);
  void SendJoin();
  // Queues an OperatorHello with def_.operator_token (when there is one) before a command that needs it.
  void PresentOperatorToken();
  /// Local time at which the remote world holds for the world stream's silence; INT64_MAX: not due.
  int64_t WorldHoldDueNs() const;

  ClientDef def_;
  const clock::Oscillator& local_;
  std::shared_ptr<spdlog::logger> log_;
  clock::SlewedClock clock_;
  RemoteWorld world_;
  std::vector<Outgoing> out_;
  std::vector<protocol::SessionControl> pending_controls_;
  std::vector<ControlReply> replies_;
  std::vector<protocol::LoggedEvent> events_;
  uint64_t last_event_sequence_ = 0;

  bool joined_ = false, rejoined_ = false;
  uint32_t node_id_ = 0;
  std::string session_name_, session_file_, session_file_path_;
  bool world_complete_ = false;  ///< A snapshot or a keyframe was applied since the first Welcome.
  std::optional<std::string> refused_;
  std::string last_refusal_;
  ServerPorts ports_;
  int64_t heartbeat_ns_ = 250'000'000, lost_timeout_ns_ = 1'000'000'000, broadcast_ns_ = 16'666'667;
  int64_t start_ns_ = 0, next_join_ns_ = 0, next_request_ns_ = 0, next_heartbeat_ns_ = 0;
  int64_t last_heard_ns_ = 0, waiting_logged_ns_ = 0, snapshot_due_ns_ = -1, last_world_ns_ = -1;
  int64_t world_heard_ns_ = -1;  ///< Local time of the newest world state (broadcast or snapshot); -1: none.
  uint32_t request_seq_ = 0;

  SessionAnchor anchor_;
  bool anchor_known_ = false;
  std::vector<protocol::NodeInfo> nodes_;
  uint64_t nodes_version_ = 0;
  std::optional<world::WorldConditions> conditions_;  // newest received light and weather
  uint64_t conditions_version_ = 0;
  std::map<uint64_t, int64_t> newest_stamp_;
  ClientStats stats_;

  int64_t step_ns_ = 0;
  bool time_control_ = false;
  uint64_t state_token_ = 0;
  uint64_t granted_step_ = 0, step_done_ = 0;
  int64_t granted_sim_ns_ = 0;
};

}  // namespace platoon::session
