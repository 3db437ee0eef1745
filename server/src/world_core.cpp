#include "platoon/server/world_core.hpp"

#include "platoon/config/conditions.hpp"

#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/session/operator_token.hpp"
#include "platoon/text/escape.hpp"
#include "platoon/text/name_rule.hpp"

#include <algorithm>
#include <cassert>
#include <cinttypes>
#include <cmath>
#include <sstream>
#include <type_traits>

#include <spdlog/fmt/fmt.h>

namespace platoon::server {
namespace {

using protocol::DecodeError;
using protocol::SessionPhase;

constexpr int64_t kSecond = 1'000'000'000;

int64_t SecondsToNs(double s) { return static_cast<int64_t>(s * 1e9); }
double NsToS(int64_t ns) { return static_cast<double>(ns) / 1e9; }


std::string FormatUs(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f", static_cast<double>(ns) / 1e3);
  return buf;
}

}  // namespace

const char* SessionEventName(SessionEvent::Kind kind) {
  switch (kind) {
    case SessionEvent::Kind::kStartScheduled: return "start_scheduled";
    case SessionEvent::Kind::kRunning: return "running";
    case SessionEvent::Kind::kPaused: return "paused";
    case SessionEvent::Kind::kResumed: return "resumed";
    case SessionEvent::Kind::kStopped: return "stopped";
    case SessionEvent::Kind::kStepEnd: return "step_end";
    case SessionEvent::Kind::kSeek: return "seek";
    case SessionEvent::Kind::kSpeed: return "speed";
  }
  return "unknown";
}

const char* NodeEventName(NodeEvent::Kind kind) {
  switch (kind) {
    case NodeEvent::Kind::kJoined: return "joined";
    case NodeEvent::Kind::kRejoined: return "rejoined";
    case NodeEvent::Kind::kLeft: return "left";
    case NodeEvent::Kind::kLost: return "lost";
    case NodeEvent::Kind::kBack: return "back";
    case NodeEvent::Kind::kDropped: return "dropped";
  }
  return "unknown";
}

WorldCore::WorldCore(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger)
    : session_(session), log_(std::move(logger)) {
  assert(log_ && "WorldCore needs a logger");
  assert(session_.server.broadcast_hz > 0);
  assert(!session_.step.lockstep || session_.step.step_hz > 0);
  RegisterParams();
}

void WorldCore::AddSystem(std::shared_ptr<WorldSystem> system, int priority) {
  assert(system);
  // Stable: equal priorities keep their insertion order.
  const auto at = std::upper_bound(systems_.begin(), systems_.end(), priority,
                                   [](int p, const SystemSlot& s) { return p < s.priority; });
  systems_.insert(at, SystemSlot{priority, std::move(system)});
}

void WorldCore::SetBoundPorts(const BoundPorts& ports) {
  session_.server.control_port = ports.control;
  session_.server.time_port = ports.time;
  session_.server.world_port = ports.world;
  session_.server.state_port = ports.state;
}

void WorldCore::Emit(const SessionEvent& event) {
  for (auto& s : systems_) s.system->OnSessionEvent(event);
}

void WorldCore::Emit(const NodeEvent& event) {
  for (auto& s : systems_) s.system->OnNodeEvent(event);
}

void WorldCore::Reply(const std::string& peer, protocol::Message message) {
  outgoing_.push_back(Outgoing{Outgoing::Target::kPeer, peer, std::move(message)});
}

std::vector<Outgoing> WorldCore::TakeOutgoing() {
  std::vector<Outgoing> out;
  out.swap(outgoing_);
  return out;
}

// ---- bad input ----------------------------------------------------------------------------------

void WorldCore::CountDecodeError(const char* socket, const std::string& detail, int64_t now) {
  ++counters_.decode_errors;
  // Bad network input is counted always and logged at once, then at most once a second with the count.
  if (const uint64_t n = RefusalDue("undecodable message(s)", now))
    log_->warn("dropped {} undecodable message(s) (last: on the {} socket, {})", n, socket, detail);
}

bool WorldCore::CheckDecoded(const protocol::Decoded& d, const char* socket, int64_t now) {
  if (d.error == DecodeError::kNone && d.message) return true;
  if (d.error == DecodeError::kVersionMismatch) ++counters_.version_refused;
  else CountDecodeError(socket, d.detail, now);
  return false;
}

std::optional<protocol::TimeReply> WorldCore::AnswerTime(const protocol::Decoded& d, int64_t t2_ns, int64_t t3_ns) {
  if (!CheckDecoded(d, "time", t2_ns)) return std::nullopt;
  const auto* req = std::get_if<protocol::TimeRequest>(&*d.message);
  if (!req) {
    ++counters_.unexpected_message;
    return std::nullopt;
  }
  ++counters_.time_replies;
  return protocol::TimeReply{req->sequence, req->t1_ns, t2_ns, t3_ns};
}

// ---- control socket -----------------------------------------------------------------------------

NodeRecord* WorldCore::FindByPeer(const std::string& peer) {
  for (auto& [id, n] : nodes_)
    if (n.peer == peer) return &n;
  return nullptr;
}

uint64_t WorldCore::RefusalDue(std::string_view what, int64_t now) {
  // Counted always, logged at once and then at most once a second per kind: a flood of refusals cannot
  // flood the log, and Poll writes a period's count even when no refusal of the kind follows.
  return refusal_log_.Count(what, now);
}

void WorldCore::CountHandshakeFailure(HandshakeFailure why, const char* socket, int64_t now) {
  switch (why) {
    case HandshakeFailure::kMechanism:
      ++counters_.handshake_mechanism;
      LogRefusal("connection(s) of another security mechanism (plain TCP to CURVE)", fmt::format("{} socket", socket), now);
      break;
    case HandshakeFailure::kCrypto:
      ++counters_.handshake_crypto;
      LogRefusal("handshake(s) that failed to decrypt (a client with a wrong server key)", fmt::format("{} socket", socket), now);
      break;
    case HandshakeFailure::kAuth:
      // The ZAP handler logs these with the key's name (rate-limited): counted here only.
      ++counters_.handshake_auth;
      break;
    case HandshakeFailure::kProtocol:
      ++counters_.handshake_protocol;
      LogRefusal("handshake(s) that broke the protocol", fmt::format("{} socket", socket), now);
      break;
  }
}

void WorldCore::CountRefusedSubscriptions(uint64_t n, std::string_view last, int64_t now) {
  counters_.subscription += n;
  for (uint64_t i = 0; i < n; ++i)
    if (const uint64_t due = RefusalDue("subscription(s) on the world port other than the empty one", now))
      log_->warn("ignored {} subscription(s) on the world port other than the empty one (last: a topic of {} bytes)",
                 due, last.size());
}

void WorldCore::CountWorldPeerCut(const std::string& peer, uint64_t bytes, uint64_t max_bytes, int64_t now) {
  ++counters_.subscription;
  LogRefusal("world-port peer(s) cut for sending more than a subscription",
             fmt::format("{} had sent {} bytes; a subscriber sends its handshake and the empty subscription, under {}",
                         text::EscapeForLog(peer), bytes, max_bytes),
             now);
}

void WorldCore::FlushRefusalLog() {
  for (const RefusalLine& line : refusal_log_.TakeAll()) log_->warn("refused {} {} (at exit)", line.count, line.kind);
}

void WorldCore::LogRefusal(std::string_view what, const std::string& detail, int64_t now) {
  if (const uint64_t n = RefusalDue(what, now)) log_->warn("refused {} {} (last: {})", n, what, detail);
}

bool WorldCore::IsOperator(const std::string& peer, const std::string& user_id, int64_t now) const {
  if (user_id.empty()) {
    // No key: a socket without CURVE, which a session allows on one PC only. Every process there reaches
    // it, so the operator is the connection that presented the token the server wrote for its user.
    if (operator_token_.empty()) return true;
    const auto it = operator_peers_.find(peer);
    return it != operator_peers_.end() && now - it->second <= kOperatorIdleNs;
  }
  const auto& ops = session_.security.operators;
  return std::find(ops.begin(), ops.end(), user_id) != ops.end();
}

void WorldCore::SetOperatorToken(std::string token, std::string file) {
  operator_token_ = std::move(token);
  operator_token_file_ = std::move(file);
  operator_peers_.clear();
}

void WorldCore::HandleOperatorHello(const std::string& peer, const std::string& user_id,
                                    const protocol::OperatorHello& hello, int64_t now) {
  // Under CURVE the key is the credential, and an in-process core has no token: nothing to present.
  if (!user_id.empty() || operator_token_.empty()) {
    ++counters_.unexpected_message;
    return;
  }
  if (!session::OperatorTokensEqual(hello.token, operator_token_)) {
    operator_peers_.erase(peer);
    ++counters_.not_operator;
    LogRefusal("operator hello(s) with a wrong token",
               fmt::format("connection {} presented {} bytes that are not the token of {}", text::EscapeForLog(peer),
                           hello.token.size(), operator_token_file_),
               now);
    return;
  }
  // Bounded: the connection silent longest makes room (it presents the token again with its next command).
  if (!operator_peers_.count(peer)) {
    for (auto it = operator_peers_.begin(); it != operator_peers_.end();)
      it = now - it->second > kOperatorIdleNs ? operator_peers_.erase(it) : std::next(it);
    if (operator_peers_.size() >= kMaxOperatorPeers)
      operator_peers_.erase(std::min_element(operator_peers_.begin(), operator_peers_.end(),
                                             [](const auto& a, const auto& b) { return a.second < b.second; }));
  }
  operator_peers_[peer] = now;
}

bool WorldCore::RefuseNonOperator(const std::string& peer, const std::string& user_id, const protocol::Message& m,
                                  int64_t now) {
  if (user_id.empty() && !keyless_logged_) {
    keyless_logged_ = true;
    if (operator_token_.empty())
      log_->info("control messages come without a key (CURVE off): every client on this PC is an operator");
    else
      log_->info("control messages come without a key (CURVE off): operators present the token in {}",
                 operator_token_file_);
  }
  const NodeRecord* from = FindByPeer(peer);
  // Reads: open to every authenticated client unless [security] open_status = false. A joined node's own
  // snapshot is never refused: it cannot run without it (and the world broadcast is no secret from it).
  const bool read = std::holds_alternative<protocol::ParamListRequest>(m) ||
                    std::holds_alternative<protocol::ParamGet>(m) ||
                    std::holds_alternative<protocol::EventsRequest>(m) ||
                    std::holds_alternative<protocol::StatusRequest>(m);
  if (read && (session_.security.open_status || IsOperator(peer, user_id, now))) return false;
  if (std::holds_alternative<protocol::StatusRequest>(m) && from) return false;
  // A driver seat's key presses are markers from its own connection, in its own name.
  if (std::holds_alternative<protocol::Mark>(m) && from && from->info.role == protocol::Role::kDriver) return false;
  if (!read && IsOperator(peer, user_id, now)) return false;

  ++counters_.not_operator;
  const char* what = std::visit(
      [](const auto& x) -> const char* {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, protocol::SessionControl>) return "session control";
        if constexpr (std::is_same_v<T, protocol::ParamSet>) return "parameter set";
        if constexpr (std::is_same_v<T, protocol::Mark>) return "marker";
        return "status read";
      },
      m);
  const std::string reason =
      user_id.empty()
          ? fmt::format("{} refused: this connection has not presented the operator token of session '{}' (CURVE "
                        "off: platoon ctl, the viewer and Python read it from {}, a file only the server's user can "
                        "read; {} names another)",
                        what, session_.name, operator_token_file_, session::kOperatorTokenEnvironmentVariable)
          : fmt::format("{} refused: key '{}' is not an operator of session '{}' ([security] operators{})", what,
                        user_id, session_.name, read ? "; open_status = false" : "");
  LogRefusal("message(s) from keys that are not operators", reason, now);
  if (const auto* set = std::get_if<protocol::ParamSet>(&m)) {
    Reply(peer, protocol::ParamReply{false, {set->path, "", false, ""}, reason, set->request_id});
  } else if (const auto* get = std::get_if<protocol::ParamGet>(&m)) {
    Reply(peer, protocol::ParamReply{false, {get->path, "", false, ""}, reason, get->request_id});
  } else if (const auto* list = std::get_if<protocol::ParamListRequest>(&m)) {
    Reply(peer, protocol::ParamList{{}, list->request_id, {reason}});
  } else if (const auto* mark = std::get_if<protocol::Mark>(&m)) {
    Reply(peer, protocol::EventList{{}, mark->request_id, reason});
  } else if (const auto* ev = std::get_if<protocol::EventsRequest>(&m)) {
    Reply(peer, protocol::EventList{{}, ev->request_id, reason});
  } else if (std::holds_alternative<protocol::SessionControl>(m)) {
    // The session as it stands, with the reason: the asker stays joined and shows the error.
    Reply(peer, protocol::SessionStatus{phase_, SimTimeAt(now), now, start_at_ns_, reason});
  } else {
    // A snapshot asked by a tool that never joined: a Refuse with the reason.
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
  }
  return true;
}

void WorldCore::OnControl(const std::string& peer, const std::string& peer_address, const std::string& user_id,
                          const protocol::Decoded& d, int64_t now) {
  // A join of another version is still readable, so that the refusal can name both versions.
  if (d.error == DecodeError::kVersionMismatch && d.message && std::holds_alternative<protocol::Join>(*d.message)) {
    HandleJoin(peer, peer_address, user_id, std::get<protocol::Join>(*d.message), d.peer_version, now);
    return;
  }
  if (d.error != DecodeError::kNone || !d.message) {
    if (d.error == DecodeError::kVersionMismatch) {
      ++counters_.version_refused;
      Reply(peer, protocol::Refuse{d.detail, protocol::kProtocolVersion});
    } else {
      CountDecodeError("control", d.detail, now);
    }
    return;
  }
  const auto& m = *d.message;
  if (const auto* join = std::get_if<protocol::Join>(&m)) {
    HandleJoin(peer, peer_address, user_id, *join, d.peer_version, now);
    return;
  }
  if (const auto* hello = std::get_if<protocol::OperatorHello>(&m)) {
    HandleOperatorHello(peer, user_id, *hello, now);
    return;
  }
  // An operator connection that speaks stays one (kOperatorIdleNs counts from its last message).
  if (const auto op = operator_peers_.find(peer); op != operator_peers_.end() && now - op->second <= kOperatorIdleNs)
    op->second = now;
  // Session control, parameters and status may come from tools that never joined (a viewer, a script);
  // what steers the session needs the operator role, reads may be closed to others.
  const bool gated = std::holds_alternative<protocol::SessionControl>(m) || std::holds_alternative<protocol::ParamSet>(m) ||
                     std::holds_alternative<protocol::Mark>(m) || std::holds_alternative<protocol::ParamGet>(m) ||
                     std::holds_alternative<protocol::ParamListRequest>(m) ||
                     std::holds_alternative<protocol::EventsRequest>(m) || std::holds_alternative<protocol::StatusRequest>(m);
  if (gated && RefuseNonOperator(peer, user_id, m, now)) return;
  if (const auto* c = std::get_if<protocol::SessionControl>(&m)) {
    // A start of a session under way would rewind every node's sim time: refused like a non-operator's
    // control (SessionStatus has no error field), and nothing changes.
    if (std::string why = StartRefusal(*c); !why.empty()) {
      LogRefusal("start(s) of a session under way", fmt::format("from {}: {}", text::EscapeForLog(peer), why), now);
      Reply(peer, protocol::SessionStatus{phase_, SimTimeAt(now), now, start_at_ns_, std::move(why)});
      return;
    }
    const NodeRecord* from = FindByPeer(peer);
    const std::string who = from ? fmt::format("'{}' ({})", text::EscapeForLog(from->info.name), text::EscapeForLog(from->info.host))
                                 : fmt::format("connection {}", text::EscapeForLog(peer));
    Control(*c, now, user_id.empty() ? who : fmt::format("{}, key '{}'", who, text::EscapeForLog(user_id)));
    Reply(peer, protocol::SessionStatus{phase_, SimTimeAt(now), now, start_at_ns_, {}});
    return;
  }
  if (std::holds_alternative<protocol::ParamListRequest>(m) || std::holds_alternative<protocol::ParamGet>(m) ||
      std::holds_alternative<protocol::ParamSet>(m)) {
    HandleParamRequest(peer, m, now);
    return;
  }
  // A node's answer to a request the server forwarded to it.
  if (std::holds_alternative<protocol::ParamList>(m) || std::holds_alternative<protocol::ParamReply>(m)) {
    if (!HandleParamAnswer(peer, m, now)) ++counters_.unexpected_message;
    return;
  }
  if (const auto* mark = std::get_if<protocol::Mark>(&m)) {
    protocol::EventList reply{{}, mark->request_id, {}};
    if (mark->text.empty() || mark->text.size() > kMaxMarkerBytes) {
      reply.error = fmt::format("a marker needs a text of 1 to {} bytes (got {})", kMaxMarkerBytes, mark->text.size());
    } else {
      const NodeRecord* from = FindByPeer(peer);
      protocol::LoggedEvent e;
      e.kind = protocol::LoggedEvent::Kind::kMarker;
      e.sim_time_ns = mark->sim_time_ns != 0 ? mark->sim_time_ns : SimTimeAt(now);
      e.source = from ? from->info.name : "ctl";
      e.text = mark->text;
      reply.events.push_back(LogEvent(std::move(e), now));
    }
    Reply(peer, std::move(reply));
    return;
  }
  if (const auto* q = std::get_if<protocol::EventsRequest>(&m)) {
    Reply(peer, protocol::EventList{EventsAfter(q->after_sequence), q->request_id, {}});
    return;
  }
  if (std::holds_alternative<protocol::StatusRequest>(m)) {
    // The Clone pattern's snapshot: a late joiner (or a node that saw a gap) gets the full state
    // over the reliable control socket, numbered like the broadcast it follows.
    Reply(peer, Keyframe(now));
    return;
  }

  NodeRecord* node = FindByPeer(peer);
  if (!node) {
    ++counters_.unknown_sender;
    // A node the server does not know (e.g. after a server restart) is told to join again.
    Reply(peer, protocol::Refuse{"unknown node: join first", protocol::kProtocolVersion});
    return;
  }
  // The connection speaks for the node that joined on it, never for the id a message names.
  const uint32_t named = std::visit(
      [](const auto& x) -> uint32_t {
        if constexpr (requires { x.node_id; }) return x.node_id;
        return 0;
      },
      m);
  if (named != 0 && named != node->info.node_id) {
    ++counters_.wrong_connection;
    LogRefusal("heartbeat(s) or leave(s) naming another node than their connection's",
               fmt::format("'{}' (id {}) named id {}", node->info.name, node->info.node_id, named), now);
    return;
  }
  node->info.last_seen_ns = now;
  if (const auto* hb = std::get_if<protocol::Heartbeat>(&m)) {
    node->info.clock_offset_ns = hb->clock_offset_ns;
    node->info.rtt_ns = hb->rtt_ns;
    MarkOwnerAlive(*node, now);
  } else if (const auto* leave = std::get_if<protocol::Leave>(&m)) {
    log_->info("node '{}' left: {}", node->info.name, text::EscapeForLog(leave->reason));
    DropNode(node->info.node_id, now);
  } else {
    ++counters_.unexpected_message;
  }
}

void WorldCore::HandleJoin(const std::string& peer, const std::string& peer_address, const std::string& user_id,
                           const protocol::Join& join, uint16_t peer_version, int64_t now) {
  if (peer_version != protocol::kProtocolVersion || join.protocol_version != protocol::kProtocolVersion) {
    ++counters_.version_refused;
    const uint16_t v = peer_version != protocol::kProtocolVersion ? peer_version : join.protocol_version;
    const std::string reason = "protocol version mismatch: node '" + join.name + "' speaks " + std::to_string(v) +
                               ", server speaks " + std::to_string(protocol::kProtocolVersion);
    log_->error("refused join from {} on {}: {}", text::EscapeForLog(join.name), text::EscapeForLog(join.host),
                text::EscapeForLog(reason));
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  // The one name rule of session files (text::CheckName): a name is printed in logs and status tables,
  // becomes file names and parameter paths.
  if (std::string error = text::CheckName(join.name); !error.empty()) {
    ++counters_.join_refused;
    std::string reason = "node name: " + error;
    LogRefusal("join(s) with a name against the name rule",
               fmt::format("from {} (pid {}): {}", text::EscapeForLog(join.host), join.pid, reason), now);
    Reply(peer, protocol::Refuse{std::move(reason), protocol::kProtocolVersion});
    return;
  }
  // Policies (identity, admission) may refuse before anything changes.
  for (auto& s : systems_) {
    std::string reason = s.system->PreJoin(join, peer_address);
    if (reason.empty()) continue;
    ++counters_.join_refused;
    log_->warn("refused join of '{}' from {}: {}", join.name, text::EscapeForLog(join.host), text::EscapeForLog(reason));
    Reply(peer, protocol::Refuse{std::move(reason), protocol::kProtocolVersion});
    return;
  }
  // One connection is one node: a connection that holds a live node cannot join again under another name
  // (nor fill the table with names).
  if (const NodeRecord* mine = FindByPeer(peer); mine && !mine->info.lost && mine->info.name != join.name) {
    ++counters_.join_refused;
    const std::string reason = "this connection already joined as '" + mine->info.name + "' (one node per connection)";
    LogRefusal("join(s) under a second name on one connection", reason, now);
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  // A node that joins again under its name (restart, reconnect) keeps its id and so its entities.
  NodeRecord* record = nullptr;
  for (auto& [id, n] : nodes_)
    if (n.info.name == join.name) record = &n;
  // Names are unique: while the node holding a name is alive (not lost) on another connection, a second
  // process under that name is refused, rather than the two taking the id from each other in turn. A
  // node that lost its connection (lost) may reclaim its name; the same connection may join again.
  if (record && !record->info.lost && record->peer != peer) {
    ++counters_.join_refused;
    const std::string reason = "node name '" + join.name + "' is in use by a live node (host " +
                               text::EscapeForLog(record->info.host) + ", pid " + std::to_string(record->info.pid) + ")";
    log_->warn("refused join of '{}' from {} (pid {}): {}", join.name, text::EscapeForLog(join.host), join.pid, reason);
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  // With CURVE on, a name belongs to the key that joined under it: a lost node's name (and its
  // entities) is reclaimed only with the same key.
  if (record && record->user_id != user_id) {
    ++counters_.join_refused;
    const std::string reason = "node name '" + join.name + "' belongs to key '" + record->user_id +
                               "'; it can be reclaimed only with that key (this client's key: '" + user_id + "')";
    LogRefusal("join(s) reclaiming a name with another key", reason, now);
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  const bool rejoined = record != nullptr;
  // The same connection joins again while this server never lost the node: the node's silence was this
  // server's (a stall) or a lost Welcome, and the joins it sent meanwhile arrive together. Nothing happened
  // to the node: the same id and state token (its states in flight stay valid), no "rejoined" in the log.
  const bool repeat = rejoined && !record->info.lost && record->peer == peer;
  // A name the table does not hold takes a token of its address's and key's join rate (AdmitNewName):
  // churn of new names cannot fill the table faster than lost nodes leave it. Left unanswered, the client
  // retries in 0.25 s. Taken only by a join that would get in; a join to a table full of live nodes is
  // refused at once.
  bool name_admitted = false;
  if (!rejoined && nodes_.size() >= static_cast<size_t>(session_.server.max_nodes)) {
    // A full table makes room for a live newcomer by dropping the node lost longest, preferring one that
    // owns nothing; only live nodes fill the table for good.
    const NodeRecord* oldest = nullptr;
    for (const auto& [id, n] : nodes_) {
      if (!n.info.lost) continue;
      if (!oldest || std::make_pair(n.entities_owned > 0, n.info.last_seen_ns) <
                         std::make_pair(oldest->entities_owned > 0, oldest->info.last_seen_ns))
        oldest = &n;
    }
    if (oldest) {
      if (!AdmitNewName(peer_address, user_id, join, now)) return;
      name_admitted = true;
      log_->warn("the session is full (max_nodes = {}): node '{}' (id {}, lost for {:.1f} s, {} entities) makes room "
                 "for '{}' from {} (pid {})",
                 session_.server.max_nodes, oldest->info.name, oldest->info.node_id,
                 NsToS(now - oldest->info.last_seen_ns), oldest->entities_owned, join.name, text::EscapeForLog(join.host),
                 join.pid);
      EvictNode(oldest->info.node_id, now);
    }
  }
  if (!rejoined && nodes_.size() >= static_cast<size_t>(session_.server.max_nodes)) {
    ++counters_.join_refused;
    const std::string reason = "the session is full: " + std::to_string(nodes_.size()) + " nodes (max_nodes = " +
                               std::to_string(session_.server.max_nodes) + ")";
    LogRefusal("join(s) beyond max_nodes",
               fmt::format("'{}' from {} (pid {}): {}", join.name, text::EscapeForLog(join.host), join.pid, reason), now);
    Reply(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  if (!rejoined && !name_admitted && !AdmitNewName(peer_address, user_id, join, now)) return;
  if (repeat) {
    log_->debug("node '{}' joined again on its connection while alive (id {}): welcomed as it is",
                record->info.name, record->info.node_id);
  } else if (rejoined) {
    log_->info("node '{}' rejoined from {} (pid {}) as id {}", join.name, text::EscapeForLog(join.host), join.pid,
               record->info.node_id);
  } else {
    const uint32_t id = next_node_id_++;
    record = &nodes_[id];
    record->info.node_id = id;
    log_->info("node '{}' ({}) joined from {} (pid {}) as id {}", join.name, protocol::RoleName(join.role),
               text::EscapeForLog(join.host), join.pid, id);
  }
  AdoptSession(join, now);
  record->info.name = join.name;
  record->info.role = join.role;
  record->info.host = join.host;
  record->info.pid = join.pid;
  // Data streams are reached at the address this join came from, unless the node names one.
  record->info.endpoints = join.endpoints;
  for (auto& e : record->info.endpoints)
    if (e.address.empty()) e.address = peer_address.empty() ? "127.0.0.1" : peer_address;
  for (const auto& e : record->info.endpoints)
    if (!repeat)
      log_->info("node '{}' publishes {} stream '{}' at {}", join.name, protocol::StreamKindName(e.kind),
               text::EscapeForLog(e.stream_id), text::EscapeForLog(e.Endpoint()));
  record->info.last_seen_ns = now;
  record->info.lost = false;
  MarkOwnerAlive(*record, now);
  record->peer = peer;
  record->user_id = user_id;
  record->peer_address = peer_address;
  record->joined_ns = now;
  // Lock-step: a (re)joining member is waited for from the next grant on, never for a step in flight.
  record->lockstep_member = join.lockstep_member;
  record->dropped = false;
  record->required_from_step = current_step_ + 1;
  record->idle_until_step = 0;
  if (session_.step.lockstep && join.lockstep_member && !repeat)
    log_->info("node '{}' is a lock-step member from step {}", join.name, record->required_from_step);

  protocol::Welcome w;
  w.node_id = record->info.node_id;
  w.session_name = session_.name;
  w.heartbeat_interval_ns = SecondsToNs(session_.server.heartbeat_interval_s);
  w.lost_timeout_ns = SecondsToNs(session_.server.lost_timeout_s);
  w.server_time_ns = now;
  w.time_port = session_.server.time_port;
  w.world_port = session_.server.world_port;
  w.state_port = session_.server.state_port;
  w.step_ns = StepNs();
  w.time_control = time_control_;
  w.session_file = session_file_;
  w.session_file_path = session_file_path_;
  // A fresh token per join (a repeat on the same live connection keeps it): only the process that received
  // this Welcome can send the node's states (the state socket carries no sender identity of its own).
  if (!repeat || record->state_token == 0) record->state_token = NewToken();
  w.state_token = record->state_token;
  Reply(peer, w);
  if (!repeat)
    Emit(NodeEvent{rejoined ? NodeEvent::Kind::kRejoined : NodeEvent::Kind::kJoined, record->info.node_id,
                 record->info.name, now});
}

void WorldCore::EvictNode(uint32_t id, int64_t now) {
  if (nodes_.count(id) == 0) return;
  ++counters_.nodes_evicted;
  DropNode(id, now);
}

void WorldCore::DropNode(uint32_t id, int64_t now) {
  const auto node = nodes_.find(id);
  if (node == nodes_.end()) return;
  // Its entities go with it, announced as removed in the next broadcast.
  for (auto it = entities_.begin(); it != entities_.end();) {
    if (it->second.state.owner_node == id) {
      removed_.push_back(it->first);
      changed_.erase(it->first);
      it = entities_.erase(it);
    } else {
      ++it;
    }
  }
  const NodeEvent event{NodeEvent::Kind::kLeft, id, node->second.info.name, now};
  operator_peers_.erase(node->second.peer);  // its connection presents the token again if it comes back
  nodes_.erase(node);
  Emit(event);
}

void WorldCore::AdoptSession(const protocol::Join& join, int64_t now) {
  // A restarted server resumes the session the nodes are in, instead of starting a new sim time.
  // "Fresh" means no node has joined yet, whatever the autostart did meanwhile.
  const bool fresh = !any_joined_;
  any_joined_ = true;
  if (!fresh) return;
  // A replay's clock is its recording's, never a node's.
  const bool theirs_live =
      !time_control_ && (join.session_phase == SessionPhase::kRunning || join.session_phase == SessionPhase::kPaused);
  if (!theirs_live) {
    if (autostart_s_ >= 0 && phase_ == SessionPhase::kWaiting)
      Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, now + SecondsToNs(autostart_s_), 0},
              now);
    return;
  }
  phase_ = join.session_phase;
  start_at_ns_ = join.ref_anchor_ns;
  if (session_.step.lockstep) {
    // Lock-step: go on with the step whose sim time the node stands at (t_k = its anchor), which the
    // node re-acknowledges if it already did it. Numbering assumes steps on the grid from sim time 0.
    const int64_t step = StepNs();
    const int64_t sim = std::max<int64_t>(0, join.sim_anchor_ns);
    first_step_ = static_cast<uint64_t>(sim / step) + 1;
    step_t0_ns_ = sim - static_cast<int64_t>(first_step_ - 1) * step;
    current_step_ = 0;
    anchor_ = session::SessionAnchor{SessionPhase::kPaused, sim, now};
  } else {
    anchor_ = session::SessionAnchor{phase_, join.sim_anchor_ns, join.ref_anchor_ns};
  }
  log_->info("resuming session '{}' from node '{}': {} at sim time {:.3f} s", session_.name, join.name,
             protocol::PhaseName(phase_), NsToS(SimTimeAt(now)));
  if (phase_ == SessionPhase::kRunning)
    Emit(SessionEvent{SessionEvent::Kind::kRunning, SimTimeAt(now), now, 0});
}

std::string WorldCore::StartRefusal(const protocol::SessionControl& c) const {
  // A restart is deliberate: any phase, but never without saying why.
  if (c.command == protocol::SessionControl::Command::kRestart)
    return c.reason.empty() ? "restart refused: a restart needs a reason (platoon ctl restart --reason TEXT)" : "";
  if (c.command != protocol::SessionControl::Command::kStart) return {};
  if (phase_ != SessionPhase::kRunning && phase_ != SessionPhase::kPaused && phase_ != SessionPhase::kStarting)
    return {};
  return fmt::format("start refused: the session is already {} (sim time would jump back to {:.3f} s); stop it first",
                     protocol::PhaseName(phase_), NsToS(c.sim_t0_ns));
}

bool WorldCore::Control(const protocol::SessionControl& c, int64_t now, std::string_view who) {
  using Command = protocol::SessionControl::Command;
  const bool lockstep = session_.step.lockstep;
  switch (c.command) {
    case Command::kStart:
    case Command::kRestart:
      if (const std::string why = StartRefusal(c); !why.empty()) {
        LogRefusal("start(s) of a session under way", why, now);
        return false;
      }
      if (c.command == Command::kRestart)
        log_->info("session restarted by {}: {} (was {} at sim time {:.3f} s)", who, text::EscapeForLog(c.reason),
                   protocol::PhaseName(phase_), NsToS(SimTimeAt(now)));
      // The seed's simultaneous start: every node begins sim time T0 at the same reference instant.
      phase_ = SessionPhase::kStarting;
      start_at_ns_ = std::max(c.at_server_time_ns, now);
      anchor_ = session::SessionAnchor{SessionPhase::kStarting, c.sim_t0_ns, start_at_ns_, anchor_.rate};
      // Lock-step restarts its numbering at step 1 = T0; old acknowledgements do not count.
      step_t0_ns_ = c.sim_t0_ns;
      first_step_ = 1;
      current_step_ = 0;
      next_keyframe_sim_ns_ = INT64_MIN;
      finished_ = false;
      for (auto& [id, n] : nodes_) {
        n.step_done = 0;
        n.idle_until_step = 0;
        n.required_from_step = 1;
      }
      log_->info("session starts at sim time {:.3f} s in {:.3f} s{}", NsToS(c.sim_t0_ns), NsToS(start_at_ns_ - now),
                 lockstep ? fmt::format(" (lock-step, {} Hz)", session_.step.step_hz) : std::string());
      Emit(SessionEvent{SessionEvent::Kind::kStartScheduled, c.sim_t0_ns, start_at_ns_, 0});
      break;
    case Command::kPause:
      if (phase_ == SessionPhase::kStarting) {
        // A pause before the start instant holds the session at T0 (a replay started with --paused).
        anchor_ = session::SessionAnchor{SessionPhase::kPaused, anchor_.sim_ns, now, anchor_.rate};
        phase_ = SessionPhase::kPaused;
        log_->info("session paused at its start, sim time {:.3f} s", NsToS(anchor_.sim_ns));
        Emit(SessionEvent{SessionEvent::Kind::kPaused, anchor_.sim_ns, now, current_step_});
        break;
      }
      if (phase_ != SessionPhase::kRunning) break;
      anchor_ = session::SessionAnchor{SessionPhase::kPaused, SimTimeAt(now), now, anchor_.rate};
      phase_ = SessionPhase::kPaused;
      log_->info("session paused at sim time {:.3f} s", NsToS(anchor_.sim_ns));
      Emit(SessionEvent{SessionEvent::Kind::kPaused, anchor_.sim_ns, now, current_step_});
      break;
    case Command::kResume:
      if (phase_ != SessionPhase::kPaused) break;
      phase_ = SessionPhase::kRunning;
      if (lockstep) {
        // Sim time stands at t_k until the next grant; the paused time does not count against the deadline.
        grant_ref_ns_ = now;
        next_late_check_ns_ = now + SecondsToNs(session_.step.deadline_s);
        next_regrant_ns_ = now;
      } else {
        anchor_ = session::SessionAnchor{SessionPhase::kRunning, anchor_.sim_ns, now, anchor_.rate};
      }
      log_->info("session resumed");
      Emit(SessionEvent{SessionEvent::Kind::kResumed, SimTimeAt(now), now, current_step_});
      break;
    case Command::kStop:
      anchor_ = session::SessionAnchor{SessionPhase::kStopped, SimTimeAt(now), now, anchor_.rate};
      phase_ = SessionPhase::kStopped;
      log_->info("session stopped at sim time {:.3f} s", NsToS(anchor_.sim_ns));
      Emit(SessionEvent{SessionEvent::Kind::kStopped, anchor_.sim_ns, now, current_step_});
      break;
    case Command::kSeek:
    case Command::kSpeed:
      if (!time_control_) {
        log_->warn("session control '{}' ignored: only a replay can seek or change its speed",
                   c.command == Command::kSeek ? "seek" : "speed");
        break;
      }
      if (c.command == Command::kSpeed) {
        // Re-anchor at the current sim time so the change does not move sim time (before the start
        // instant the anchor stays the start).
        if (anchor_.phase == SessionPhase::kStarting) anchor_.rate = c.speed;
        else anchor_ = session::SessionAnchor{anchor_.phase, SimTimeAt(now), now, c.speed};
        log_->info("replay speed {:.3g}x", c.speed);
        Emit(SessionEvent{SessionEvent::Kind::kSpeed, SimTimeAt(now), now, current_step_});
      } else {
        anchor_.sim_ns = c.sim_t0_ns;
        anchor_.ref_ns = phase_ == SessionPhase::kStarting ? start_at_ns_ : now;
        step_t0_ns_ = c.sim_t0_ns;
        first_step_ = 1;
        current_step_ = 0;
        next_keyframe_sim_ns_ = INT64_MIN;
        log_->info("replay sought to sim time {:.3f} s", NsToS(c.sim_t0_ns));
        Emit(SessionEvent{SessionEvent::Kind::kSeek, c.sim_t0_ns, now, 0});
      }
      break;
  }
  return true;
}

// ---- parameters ---------------------------------------------------------------------------------

const std::vector<RefusalCounter>& RefusalCounters() {
  static const std::vector<RefusalCounter> table = {
      {"server.refused.undecodable", &ServerCounters::decode_errors, "Undecodable messages dropped"},
      {"server.refused.version", &ServerCounters::version_refused, "Messages of another protocol version"},
      {"server.refused.unknown_sender", &ServerCounters::unknown_sender, "Messages from unjoined peers"},
      {"server.refused.unexpected_message", &ServerCounters::unexpected_message,
       "Valid messages on a socket that does not take them"},
      {"server.refused.foreign_entity", &ServerCounters::foreign_entity,
       "Entity updates from a node that does not own the entity"},
      {"server.refused.stale_update", &ServerCounters::stale_update, "Entity updates older than the merged state"},
      {"server.refused.forged_state", &ServerCounters::forged_state, "Node states without the token of the node they name"},
      {"server.refused.future_stamp", &ServerCounters::future_stamp,
       "Entity updates stamped more than 1 s ahead of the session clock"},
      {"server.refused.entity_limit", &ServerCounters::entity_limit,
       "New entities beyond max_entities or max_entities_per_node"},
      {"server.refused.join", &ServerCounters::join_refused,
       "Joins refused (name in use, another key, max_nodes, a second name on one connection, a policy)"},
      {"server.refused.wrong_connection", &ServerCounters::wrong_connection,
       "Heartbeats, leaves and states naming a node other than the sender's connection or key"},
      {"server.refused.not_operator", &ServerCounters::not_operator,
       "Session control, parameter sets, markers and closed reads from keys that are not operators"},
      {"server.refused.rate_limited", &ServerCounters::rate_limited, "Messages beyond a peer's rate, dropped"},
      {"server.refused.join_rate", &ServerCounters::join_rate_limited,
       "Joins of new names beyond their address's or key's join_rate_hz, left unanswered"},
      {"server.refused.handshake_mechanism", &ServerCounters::handshake_mechanism,
       "Connections of another security mechanism (plain TCP to a CURVE port), cut in the handshake"},
      {"server.refused.handshake_crypto", &ServerCounters::handshake_crypto,
       "CURVE handshakes that failed to decrypt (a client with a wrong server key)"},
      {"server.refused.handshake_auth", &ServerCounters::handshake_auth, "CURVE handshakes of client keys not authorised"},
      {"server.refused.handshake_protocol", &ServerCounters::handshake_protocol,
       "Handshakes that broke the protocol otherwise (malformed greeting or command)"},
      {"server.refused.subscription", &ServerCounters::subscription,
       "World-port peers cut for sending more than their handshake and the empty subscription"},
  };
  return table;
}

void WorldCore::RegisterParams() {
  using config::Range;
  namespace b = config::bounds;
  constexpr Range kCount{0, 1.8e19};
  auto& r = params_;
  auto& sv = session_.server;
  r.AddString("session.name", "Session name", [this] { return session_.name; });
  // Light and weather (light.*, weather.*): every node gets a change with the next broadcast.
  config::AddConditionParams(r, session_.conditions, [this] { conditions_changed_ = true; });
  // Variable message signs (docs/WORLD.md "Signs"): one string parameter each, "<type>" or "<type> <value>";
  // every node redraws and re-reads the sign with the next broadcast's conditions.
  std::vector<road::Sign> signs;
  try {
    signs = road::SessionSigns(session_);
  } catch (const config::ConfigError&) {
    // A road file that does not load: the processes that need it report it; no sign parameters here.
  }
  auto& contents = session_.conditions.variable_signs;
  contents = road::VariableContents(signs);
  for (size_t i = 0; i < contents.size(); ++i) {
    const std::string path = "signs.vms_" + std::to_string(contents[i].id);
    r.AddString(
        path, "What variable message sign " + std::to_string(contents[i].id) + " shows: \"<type>\" or \"<type> <value>\"",
        [&contents, i] {
          return road::SignContentText(static_cast<road::SignType>(contents[i].type), contents[i].value);
        },
        [this, &contents, i](const std::string& text) {
          std::string error;
          if (const auto parsed = road::ParseSignContent(text, error)) {
            contents[i].type = static_cast<uint8_t>(parsed->first);
            contents[i].value = parsed->second;
            conditions_changed_ = true;
          }
        });
    r.AddCheck(path, [](const config::ParamValue& v) {
      std::string error;
      return road::ParseSignContent(std::get<std::string>(v), error) ? std::string() : error;
    });
  }
  r.AddBool("session.lockstep", "Lock-step session ([session] mode)", [this] { return session_.step.lockstep; });
  r.AddInt("session.step", "", kCount, "Lock-step step granted last (0: none yet, or real time)",
           [this] { return static_cast<int64_t>(current_step_); });
  r.AddInt("session.steps_granted", "", kCount, "Lock-step steps granted",
           [this] { return static_cast<int64_t>(steps_granted_); });
  r.AddFloat("server.broadcast_hz", "Hz", b::kBroadcastHz, "World-state broadcast rate",
             [&sv] { return sv.broadcast_hz; }, [&sv](double v) { sv.broadcast_hz = v; });
  r.AddFloat("server.heartbeat_interval_s", "s", Range{0.01, 60}, "Heartbeat period asked of nodes (fixed at join)",
             [&sv] { return sv.heartbeat_interval_s; });
  r.AddFloat("server.lost_timeout_s", "s", b::kLostTimeoutS, "Silence after which a node is marked lost",
             [&sv] { return sv.lost_timeout_s; }, [&sv](double v) { sv.lost_timeout_s = v; });
  r.AddCheck("server.lost_timeout_s", [&sv](const config::ParamValue& v) {
    return std::get<double>(v) > sv.heartbeat_interval_s
               ? std::string()
               : fmt::format("must be longer than heartbeat_interval_s ({} s), got {}",
                             config::FormatNumber(sv.heartbeat_interval_s), config::FormatValue(v));
  });
  r.AddFloat("server.status_interval_s", "s", b::kStatusIntervalS, "Status table period (0: off)",
             [&sv] { return sv.status_interval_s; }, [&sv](double v) { sv.status_interval_s = v; });
  r.AddFloat("server.stale_grace_s", "s", b::kStaleGraceS, "Dead-reckoning time of a lost node's entities",
             [&sv] { return sv.stale_grace_s; }, [&sv](double v) { sv.stale_grace_s = v; });
  r.AddString(
      "server.stale_policy", "A lost node's entities after the grace: frozen in place or removed",
      [&sv] { return std::string(sv.stale_remove ? "remove" : "freeze"); },
      [&sv](const std::string& v) { sv.stale_remove = v == "remove"; }, {"freeze", "remove"});
  config::AddFaultParams(r, "server.faults.", session_.faults, [this] { ++faults_version_; });
  r.AddInt("server.nodes", "", kCount, "Joined nodes", [this] { return static_cast<int64_t>(nodes_.size()); });
  r.AddInt("server.entities", "", kCount, "Merged entities", [this] { return static_cast<int64_t>(entities_.size()); });
  r.AddInt("server.events", "", kCount, "Entries of the session's event log so far",
           [this] { return static_cast<int64_t>(event_sequence_); });
  auto counter = [&](const char* path, const uint64_t& v, const char* what) {
    r.AddInt(path, "", kCount, what, [&v] { return static_cast<int64_t>(v); });
  };
  // The refusal counters come from the one table the exit line is also made from.
  for (const RefusalCounter& c : RefusalCounters()) counter(c.name, counters_.*c.counter, c.meaning);
  counter("server.stalls_forgiven", counters_.stalls_forgiven,
          "Times the server itself was not running (suspended, starved) and did not count that as nodes' silence");
  counter("server.states_stall_dropped", counters_.states_stall_dropped,
          "Node states their senders dropped while the server was not running (not counted as loss)");
}

std::vector<protocol::Parameter> WorldCore::ListParams(const std::string& prefix) const { return params_.List(prefix); }

protocol::ParamReply WorldCore::GetParam(const std::string& path) const { return params_.Get(path); }

protocol::ParamReply WorldCore::SetParam(const std::string& path, const std::string& value) {
  auto reply = params_.Set(path, value);
  if (reply.ok) log_->info("parameter {} set to {}", text::EscapeForLog(path), text::EscapeForLog(reply.param.value));
  return reply;
}

namespace {

// "node.<name>.rest" -> "<name>"; empty when the path is not a node path.
std::string NodeOfPath(const std::string& path) {
  if (path.rfind("node.", 0) != 0) return {};
  const auto dot = path.find('.', 5);
  return path.substr(5, dot == std::string::npos ? std::string::npos : dot - 5);
}

}  // namespace

void WorldCore::FinishParamSet(const std::string& peer, protocol::ParamReply reply, const std::string& source,
                               int64_t now) {
  if (reply.ok) {
    protocol::LoggedEvent e;
    e.kind = protocol::LoggedEvent::Kind::kParam;
    e.sim_time_ns = SimTimeAt(now);
    e.source = source;
    e.text = reply.param.path + " = " + reply.param.value;
    LogEvent(std::move(e), now);
  } else if (peer.empty()) {
    log_->warn("parameter set by {} refused: {}", source, reply.error);
  }
  if (!peer.empty()) Reply(peer, std::move(reply));
}

std::optional<protocol::ParamReply> WorldCore::RequestParamSet(const std::string& path, const std::string& value,
                                                               const std::string& source, int64_t now) {
  const size_t before = pending_params_.size();
  // Answers to an empty peer go nowhere; what is refused is logged by FinishParamSet.
  if (NodeOfPath(path).empty()) {
    auto reply = SetParam(path, value);
    FinishParamSet({}, reply, source, now);
    return reply;
  }
  const std::string name = NodeOfPath(path);
  const auto node = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.second.info.name == name; });
  protocol::ParamReply refused{false, {path, "", false, ""}, "", 0};
  if (node == nodes_.end()) refused.error = fmt::format("{}: no node named '{}' in the session", path, name);
  else if (node->second.info.lost) refused.error = fmt::format("node.{}: lost, cannot answer", name);
  if (!refused.error.empty()) {
    log_->warn("parameter set by {} refused: {}", source, refused.error);
    return refused;
  }
  HandleParamRequest({}, protocol::ParamSet{path, value, 0}, now);
  if (pending_params_.size() > before) {
    pending_params_.rbegin()->second.source = source;
    return std::nullopt;
  }
  refused.error = fmt::format("server: {} parameter requests already wait for their nodes", kMaxPendingParams);
  return refused;
}

void WorldCore::HandleParamRequest(const std::string& peer, const protocol::Message& m, int64_t now) {
  const NodeRecord* from = peer.empty() ? nullptr : FindByPeer(peer);
  const std::string source = from ? from->info.name : "ctl";
  // Live nodes by name (a lost one cannot answer).
  auto find_node = [&](const std::string& name) -> const NodeRecord* {
    for (const auto& [id, n] : nodes_)
      if (n.info.name == name) return &n;
    return nullptr;
  };
  auto node_names = [&] {
    std::string names;
    for (const auto& [id, n] : nodes_) names += (names.empty() ? "" : ", ") + n.info.name;
    return names.empty() ? std::string("none") : names;
  };
  // Sends `request` to `node` under a fresh id; false when the table is full.
  auto forward = [&](const NodeRecord& node, protocol::Message request, uint64_t asker_id, uint64_t group) {
    if (pending_params_.size() >= kMaxPendingParams) return false;
    const uint64_t id = next_param_id_++;
    std::visit(
        [&](auto& r) {
          if constexpr (requires { r.request_id; }) r.request_id = id;
        },
        request);
    Reply(node.peer, request);
    pending_params_.emplace(id, PendingParam{std::move(request), peer, asker_id, source, node.peer, node.info.name,
                                             now + kParamTimeoutNs, group});
    return true;
  };
  const std::string busy = fmt::format("server: {} parameter requests already wait for their nodes", kMaxPendingParams);

  if (const auto* r = std::get_if<protocol::ParamListRequest>(&m)) {
    protocol::ParamList own{ListParams(r->prefix), r->request_id, {}};
    // Nodes whose parameters fall under the prefix: "", "node.", "node.ci" and "node.city.x" all reach "city".
    std::vector<const NodeRecord*> targets;
    for (const auto& [id, n] : nodes_) {
      if (n.peer == peer) continue;  // the asker (a joined tool) does not ask itself
      const std::string root = "node." + n.info.name + ".";
      if (root.rfind(r->prefix, 0) == 0 || r->prefix.rfind(root, 0) == 0 || r->prefix == "node." + n.info.name)
        targets.push_back(&n);
    }
    if (targets.empty()) {
      if (peer.empty()) return;
      Reply(peer, std::move(own));
      return;
    }
    const uint64_t group = next_param_id_++;
    ListGroup g{peer, r->request_id, std::move(own), 0};
    for (const NodeRecord* n : targets) {
      if (n->info.lost) {
        g.merged.errors.push_back("node." + n->info.name + ": lost");
      } else if (forward(*n, protocol::ParamListRequest{r->prefix, 0}, r->request_id, group)) {
        ++g.outstanding;
      } else {
        g.merged.errors.push_back("node." + n->info.name + ": not asked (" + busy + ")");
      }
    }
    list_groups_.emplace(group, std::move(g));
    FinishListGroup(group);
    return;
  }

  const bool is_set = std::holds_alternative<protocol::ParamSet>(m);
  const std::string path = is_set ? std::get<protocol::ParamSet>(m).path : std::get<protocol::ParamGet>(m).path;
  const uint64_t asker_id = is_set ? std::get<protocol::ParamSet>(m).request_id : std::get<protocol::ParamGet>(m).request_id;
  auto answer = [&](protocol::ParamReply reply) {
    reply.request_id = asker_id;
    if (!peer.empty()) Reply(peer, std::move(reply));
    else if (!reply.ok) log_->warn("parameter set by a system refused: {}", reply.error);
  };
  const std::string node_name = NodeOfPath(path);
  if (node_name.empty()) {
    if (!is_set) {
      answer(GetParam(path));
      return;
    }
    auto reply = SetParam(path, std::get<protocol::ParamSet>(m).value);
    reply.request_id = asker_id;
    FinishParamSet(peer, std::move(reply), source, now);
    return;
  }
  const NodeRecord* node = find_node(node_name);
  protocol::ParamReply refused{false, {path, "", false, ""}, "", 0};
  if (!node) {
    refused.error = fmt::format("{}: no node named '{}' in the session (nodes: {})", path, node_name, node_names());
  } else if (node->info.lost) {
    refused.error = fmt::format("node.{}: lost, cannot answer", node_name);
  } else if (!forward(*node, m, asker_id, 0)) {
    refused.error = busy;
  } else {
    return;
  }
  answer(std::move(refused));
}

bool WorldCore::HandleParamAnswer(const std::string& peer, const protocol::Message& m, int64_t now) {
  const uint64_t id = std::visit(
      [](const auto& a) -> uint64_t {
        if constexpr (requires { a.request_id; }) return a.request_id;
        return 0;
      },
      m);
  auto it = pending_params_.find(id);
  // Only the node the request went to may answer it.
  if (it == pending_params_.end() || it->second.node_peer != peer) return false;
  PendingParam p = std::move(it->second);
  pending_params_.erase(it);
  const std::string root = "node." + p.node_name + ".";
  if (const auto* list = std::get_if<protocol::ParamList>(&m)) {
    auto g = list_groups_.find(p.group);
    if (g == list_groups_.end()) return true;
    // A node answers for its own paths only.
    for (const auto& param : list->params)
      if (param.path.rfind(root, 0) == 0) g->second.merged.params.push_back(param);
    for (const auto& e : list->errors) g->second.merged.errors.push_back(e);
    --g->second.outstanding;
    FinishListGroup(p.group);
    return true;
  }
  const auto* reply = std::get_if<protocol::ParamReply>(&m);
  if (!reply) return true;
  protocol::ParamReply out = *reply;
  out.request_id = p.asker_id;
  if (std::holds_alternative<protocol::ParamSet>(p.request)) {
    FinishParamSet(p.asker, std::move(out), p.source, now);
  } else if (!p.asker.empty()) {
    Reply(p.asker, std::move(out));
  }
  return true;
}

void WorldCore::FinishListGroup(uint64_t group) {
  auto g = list_groups_.find(group);
  if (g == list_groups_.end() || g->second.outstanding > 0) return;
  protocol::ParamList list = std::move(g->second.merged);
  list.request_id = g->second.asker_id;
  std::sort(list.params.begin(), list.params.end(),
            [](const protocol::Parameter& a, const protocol::Parameter& b) { return a.path < b.path; });
  const std::string asker = g->second.asker;
  list_groups_.erase(g);
  if (!asker.empty()) Reply(asker, std::move(list));
}

void WorldCore::ExpireParamRequests(int64_t now) {
  const auto ms = kParamTimeoutNs / 1'000'000;
  for (auto it = pending_params_.begin(); it != pending_params_.end();) {
    if (now < it->second.deadline_ns) {
      ++it;
      continue;
    }
    PendingParam p = std::move(it->second);
    it = pending_params_.erase(it);
    const std::string why = fmt::format("node.{}: no reply in {} ms", p.node_name, ms);
    if (p.group != 0) {
      auto g = list_groups_.find(p.group);
      if (g == list_groups_.end()) continue;
      g->second.merged.errors.push_back(why);
      --g->second.outstanding;
      FinishListGroup(p.group);
      continue;
    }
    const std::string path = std::visit(
        [](const auto& r) -> std::string {
          if constexpr (requires { r.path; }) return r.path;
          return {};
        },
        p.request);
    if (p.asker.empty()) {
      log_->warn("parameter set {} by {} got no answer: {}", path, p.source, why);
      continue;
    }
    Reply(p.asker, protocol::ParamReply{false, {path, "", false, ""}, why, p.asker_id});
  }
}

// ---- state socket: merge --------------------------------------------------------------------------

void WorldCore::OnState(const std::string& user_id, const protocol::Decoded& d, int64_t now) {
  if (!CheckDecoded(d, "state", now)) return;
  const auto* ns = std::get_if<protocol::NodeState>(&*d.message);
  if (!ns) {
    ++counters_.unexpected_message;
    return;
  }
  // A node id on the state socket is never trusted on its own: the state must carry the token that
  // node's Welcome gave it.
  auto it = nodes_.find(ns->node_id);
  if (it != nodes_.end() && ns->token != it->second.state_token) {
    ++counters_.forged_state;
    if (const uint64_t n = RefusalDue("node state(s) without their node's token", now))
      log_->warn("refused {} node state(s) without their node's token (last: claiming node '{}', id {}; {} in all)", n,
                 it->second.info.name, ns->node_id, counters_.forged_state);
    return;
  }
  // With CURVE on, the state must also come with the key the node joined with.
  if (it != nodes_.end() && !user_id.empty() && user_id != it->second.user_id) {
    ++counters_.wrong_connection;
    LogRefusal("node state(s) from another key than their node's",
               fmt::format("'{}' (id {}, key '{}') claimed by key '{}'", it->second.info.name, ns->node_id,
                           it->second.user_id, user_id),
               now);
    return;
  }
  Merge(*ns, now);
}

bool WorldCore::Admit(RouterSocket socket, const std::string& peer, int64_t now) {
  const double rate = session_.server.peer_rate_hz;
  const double burst = session_.server.peer_burst;
  auto it = buckets_.find({socket, peer});
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxRateBuckets) ExpireRateBuckets(now);
    if (buckets_.size() >= kMaxRateBuckets) {
      ++counters_.rate_limited;
      LogRefusal("message(s) from new peers while the rate-limit table is full", std::to_string(buckets_.size()) + " peers",
                 now);
      return false;
    }
    it = buckets_.emplace(std::make_pair(socket, peer), Bucket{burst, now}).first;
  }
  // Token bucket: refilled at peer_rate_hz up to peer_burst; each message takes one token.
  Bucket& b = it->second;
  b.tokens = std::min(burst, b.tokens + rate * NsToS(now - b.last_ns));
  b.last_ns = now;
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return true;
  }
  ++counters_.rate_limited;
  if (const uint64_t n = RefusalDue("message(s) beyond a peer's rate", now))
    log_->warn("refused {} message(s) beyond a peer's rate (last: {} socket, {:.0f} msg/s with bursts of {:.0f})", n,
               socket == RouterSocket::kControl ? "control" : "time", rate, burst);
  return false;
}

void WorldCore::ExpireRateBuckets(int64_t now) {
  // A bucket full again is the same as no bucket: peers that never joined (time-only clients, floods
  // from many connections) leave the table once idle.
  const int64_t refill = SecondsToNs(session_.server.peer_burst / session_.server.peer_rate_hz);
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (now - it->second.last_ns >= refill) it = buckets_.erase(it);
    else ++it;
  }
  // A source's bucket is at least as large as with no node joined from it.
  const int64_t source_refill =
      SecondsToNs(session_.server.peer_address_burst / session_.server.peer_address_rate_hz);
  for (auto it = source_buckets_.begin(); it != source_buckets_.end();) {
    if (now - it->second.last_ns >= source_refill) it = source_buckets_.erase(it);
    else ++it;
  }
  const int64_t join_refill = SecondsToNs(session_.server.join_burst / session_.server.join_rate_hz);
  for (auto it = join_buckets_.begin(); it != join_buckets_.end();) {
    if (now - it->second.last_ns >= join_refill) it = join_buckets_.erase(it);
    else ++it;
  }
}

bool WorldCore::Admit(RouterSocket socket, const std::string& peer, const std::string& peer_address,
                      const std::string& user_id, int64_t now) {
  if (!Admit(socket, peer, now)) return false;
  // An in-process client has no address; a joined node's connection is limited on its own (and its
  // heartbeats must get through while a tool on its PC floods).
  if (peer_address.empty() && user_id.empty()) return true;
  if (socket == RouterSocket::kControl && FindByPeer(peer) != nullptr) return true;
  const bool key = !user_id.empty();
  const std::string source = key ? "k:" + user_id : "a:" + peer_address;
  // Every process of a PC shares its address (all of them share 127.0.0.1): the bucket grows with the
  // nodes joined from there, so that a lab of many nodes on one PC never meets it.
  const double scale = 1.0 + static_cast<double>(NodesFrom(key ? user_id : peer_address, key));
  const double rate = session_.server.peer_address_rate_hz * scale;
  const double burst = session_.server.peer_address_burst * scale;
  auto it = source_buckets_.find({socket, source});
  if (it == source_buckets_.end()) {
    if (source_buckets_.size() >= kMaxRateBuckets) ExpireRateBuckets(now);
    if (source_buckets_.size() >= kMaxRateBuckets) {
      ++counters_.rate_limited;
      LogRefusal("message(s) from new addresses while the rate-limit table is full",
                 std::to_string(source_buckets_.size()) + " addresses and keys", now);
      return false;
    }
    it = source_buckets_.emplace(std::make_pair(socket, source), Bucket{burst, now}).first;
  }
  Bucket& b = it->second;
  b.tokens = std::min(burst, b.tokens + rate * NsToS(now - b.last_ns));
  b.last_ns = now;
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return true;
  }
  ++counters_.rate_limited;
  if (const uint64_t n = RefusalDue("message(s) beyond an address's or key's rate", now))
    log_->warn("refused {} message(s) beyond an address's or key's rate (last: {} socket, {} {}, {:.0f} msg/s with "
               "bursts of {:.0f}, {:.0f} node(s) joined from it)",
               n, socket == RouterSocket::kControl ? "control" : "time", key ? "key" : "address",
               text::EscapeForLog(key ? user_id : peer_address), rate, burst, scale - 1);
  return false;
}

size_t WorldCore::NodesFrom(const std::string& source, bool key) const {
  size_t n = 0;
  for (const auto& [id, node] : nodes_)
    if ((key ? node.user_id : node.peer_address) == source) ++n;
  return n;
}

bool WorldCore::AdmitNewName(const std::string& peer_address, const std::string& user_id, const protocol::Join& join,
                             int64_t now) {
  const double rate = session_.server.join_rate_hz;
  const double burst = session_.server.join_burst;
  std::vector<std::string> sources;
  if (!peer_address.empty()) sources.push_back("a:" + peer_address);
  if (!user_id.empty()) sources.push_back("k:" + user_id);
  // Both buckets refilled first; a token is taken only when every source has one.
  std::vector<Bucket*> buckets;
  bool ok = true;
  for (const auto& s : sources) {
    auto it = join_buckets_.find(s);
    if (it == join_buckets_.end()) {
      if (join_buckets_.size() >= kMaxRateBuckets) ExpireRateBuckets(now);
      if (join_buckets_.size() >= kMaxRateBuckets) {
        ok = false;
        break;
      }
      it = join_buckets_.emplace(s, Bucket{burst, now}).first;
    }
    Bucket& b = it->second;
    b.tokens = std::min(burst, b.tokens + rate * NsToS(now - b.last_ns));
    b.last_ns = now;
    if (b.tokens < 1.0) ok = false;
    buckets.push_back(&b);
  }
  if (ok) {
    for (Bucket* b : buckets) b->tokens -= 1.0;
    return true;
  }
  ++counters_.join_rate_limited;
  LogRefusal("join(s) of new names beyond an address's or key's join rate (left unanswered; the client retries)",
             fmt::format("'{}' from {} (address {}{}), {:.0f} new names/s with bursts of {:.0f}", join.name,
                         text::EscapeForLog(join.host), text::EscapeForLog(peer_address),
                         user_id.empty() ? "" : ", key '" + text::EscapeForLog(user_id) + "'", rate, burst),
             now);
  return false;
}

uint64_t WorldCore::NewToken() {
  uint64_t t = 0;
  while (t == 0) t = token_rng_();
  return t;
}

void WorldCore::Merge(const protocol::NodeState& ns, int64_t now) {
  auto it = nodes_.find(ns.node_id);
  if (it == nodes_.end()) {
    ++counters_.unknown_sender;
    return;
  }
  NodeRecord& node = it->second;
  node.info.last_seen_ns = now;
  MarkOwnerAlive(node, now);
  if (node.last_state_ns > 0) {
    // Exponential smoothing over about 20 states.
    const double dt = NsToS(now - node.last_state_ns);
    node.mean_interval_s = node.mean_interval_s > 0 ? 0.95 * node.mean_interval_s + 0.05 * dt : dt;
    node.info.update_rate_hz = node.mean_interval_s > 0 ? static_cast<float>(1.0 / node.mean_interval_s) : 0.f;
  }
  node.last_state_ns = now;
  ++node.states_received;
  if (node.last_state_sequence != 0 && ns.sequence > node.last_state_sequence + 1) {
    const uint64_t gap = ns.sequence - node.last_state_sequence - 1;
    // While the backlog of a stall of this server drains, a gap is what the sender's queue could not hold
    // while nobody read it (it sends on at its rate): no network lost it, and the loss column says so.
    if (now <= stall_backlog_until_ns_) {
      node.states_stall_dropped += gap;
      counters_.states_stall_dropped += gap;
    } else {
      node.states_missed += gap;
    }
  }
  node.last_state_sequence = std::max(node.last_state_sequence, ns.sequence);
  const uint64_t expected = node.states_received + node.states_missed;
  node.info.loss_fraction = expected ? static_cast<float>(node.states_missed) / static_cast<float>(expected) : 0.f;

  // Entities first: a step's acknowledgement may ride on the state that carries the step's results.
  const bool clock_live = phase_ == SessionPhase::kRunning || phase_ == SessionPhase::kPaused;
  const int64_t latest_stamp = SimTimeAt(now) + kMaxFutureStampNs;
  for (const auto& e : ns.entities) {
    // Newest stamp wins, so a stamp far ahead of the session clock would lock the owner's real updates
    // out until sim time caught up with it: refused (after ownership, the more basic reason).
    if (auto held = entities_.find(e.id); held != entities_.end() && held->second.state.owner_node != node.info.node_id) {
      ++counters_.foreign_entity;
      continue;
    }
    if (clock_live && e.kinematics.stamp_ns > latest_stamp) {
      ++counters_.future_stamp;
      continue;
    }
    if (!entities_.count(e.id)) {
      // A new entity: within the session's and the node's bounds (keyframes stay a bounded size).
      if (entities_.size() >= static_cast<size_t>(session_.server.max_entities) ||
          node.entities_owned >= static_cast<uint64_t>(session_.server.max_entities_per_node)) {
        ++counters_.entity_limit;
        continue;
      }
      ++node.entities_owned;
      node.owned_any = true;
    }
    auto [slot, inserted] = entities_.try_emplace(e.id, MergedEntity{e});
    MergedEntity& merged = slot->second;
    if (!inserted) {
      // Ownership: an entity belongs to the node that created it.
      if (merged.state.owner_node != node.info.node_id) {
        ++counters_.foreign_entity;
        continue;
      }
      // Order by the entity's own stamp: older or duplicate updates never overwrite newer ones.
      if (e.kinematics.stamp_ns <= merged.state.kinematics.stamp_ns) {
        ++counters_.stale_update;
        continue;
      }
      merged.state = e;
    }
    merged.state.owner_node = node.info.node_id;
    merged.state.stale = false;
    merged.stale_since_ns = -1;
    merged.frozen = false;
    changed_.insert(e.id);
    if (first_change_ns_ < 0) first_change_ns_ = now;
    for (auto& s : systems_) s.system->OnUpdateAccepted(merged.state, node, now);
  }

  // The acknowledgement: never beyond the step granted (a confused node cannot pre-acknowledge). A node
  // whose modules are not due before `next_step` is not waited for until then.
  if (ns.step_done > 0 && session_.step.lockstep) {
    node.step_done = std::max(node.step_done, std::min(ns.step_done, current_step_));
    node.idle_until_step = std::max(node.idle_until_step, ns.next_step);
  }
}

void WorldCore::MarkOwnerAlive(NodeRecord& node, int64_t now) {
  if (node.info.lost) {
    node.info.lost = false;
    log_->info("node '{}' is back", node.info.name);
    // Back from lost: waited for from the next grant on, like a node joining mid-session.
    node.required_from_step = current_step_ + 1;
    node.idle_until_step = 0;
    Emit(NodeEvent{NodeEvent::Kind::kBack, node.info.node_id, node.info.name, now});
  }
  // Its entities stay stale until it sends each of them again (Merge): what the server holds is the state
  // from before the loss, or a frozen one, and a restarted owner's cars are elsewhere by now.
}

// ---- time-driven --------------------------------------------------------------------------------

void WorldCore::ForgiveStall(int64_t gap_ns, int64_t now) {
  if (gap_ns <= 0) return;
  ++counters_.stalls_forgiven;
  // The queued node states arrive within the next turns (max_messages_per_turn each); a second covers them.
  stall_backlog_until_ns_ = now + kSecond;
  log_->warn("the server was not running for {:.2f} s (suspended or starved); silence, grace and step deadlines "
             "count from now on",
             NsToS(gap_ns));
  for (auto& [id, n] : nodes_)
    if (!n.info.lost) n.info.last_seen_ns = std::min(n.info.last_seen_ns + gap_ns, now);
  for (auto& [id, e] : entities_)
    if (e.stale_since_ns >= 0 && !e.frozen) e.stale_since_ns = std::min(e.stale_since_ns + gap_ns, now);
  if (session_.step.lockstep) {
    next_late_check_ns_ += gap_ns;
    grant_ref_ns_ += gap_ns;
  }
}

void WorldCore::Expire(int64_t now) {
  const int64_t timeout = SecondsToNs(session_.server.lost_timeout_s);
  for (auto& [id, n] : nodes_) {
    if (n.info.lost || now - n.info.last_seen_ns <= timeout) continue;
    n.info.lost = true;
    size_t count = 0;
    for (auto& [eid, e] : entities_) {
      if (e.state.owner_node != id) continue;
      e.stale_since_ns = now;
      e.state.stale = true;
      changed_.insert(eid);
      ++count;
    }
    log_->warn("node '{}' lost: silent for {:.2f} s; {} entities stale", n.info.name, NsToS(now - n.info.last_seen_ns),
               count);
    Emit(NodeEvent{NodeEvent::Kind::kLost, id, n.info.name, now});
  }
  // A lost node that owns nothing (a process that joined and died, or a flood of fake joins) leaves the
  // table after forget_lost_s, so the table stays bounded; one that owns entities stays to reclaim them.
  // One that never owned an entity (joined and went silent: churn) has nothing to reclaim and leaves after
  // another lost_timeout_s, so that join/disconnect cycles cannot hold the table for forget_lost_s.
  const int64_t forget = SecondsToNs(session_.server.forget_lost_s);
  const int64_t forget_unused = std::min(forget, timeout);
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    const NodeRecord& n = it->second;
    const int64_t after = n.owned_any ? forget : forget_unused;
    if (n.info.lost && n.entities_owned == 0 && now - n.info.last_seen_ns > timeout + after) {
      log_->info("node '{}' (id {}) forgotten: lost for {:.0f} s and owning nothing", n.info.name, it->first,
                 NsToS(now - n.info.last_seen_ns));
      ++counters_.nodes_forgotten;
      operator_peers_.erase(it->second.peer);
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  // Stale entities are dead-reckoned by every receiver for the grace period, then frozen or removed.
  const int64_t grace = SecondsToNs(session_.server.stale_grace_s);
  for (auto it = entities_.begin(); it != entities_.end();) {
    MergedEntity& e = it->second;
    if (e.stale_since_ns < 0 || e.frozen || now - e.stale_since_ns < grace) {
      ++it;
      continue;
    }
    if (session_.server.stale_remove) {
      removed_.push_back(it->first);
      changed_.erase(it->first);
      ReleaseOwned(it->second.state.owner_node);
      it = entities_.erase(it);
      continue;
    }
    // Frozen: held at the pose receivers had extrapolated to, standing still.
    const int64_t sim_now = SimTimeAt(now);
    const auto model = dr::ModelForKind(e.state.kind);
    KinematicState held = dr::ExtrapolateState(model, e.state.kinematics, std::max(sim_now, e.state.kinematics.stamp_ns));
    held.velocity_mps.setZero();
    held.acceleration_mps2.setZero();
    held.angular_velocity_radps.setZero();
    e.state.kinematics = held;
    e.frozen = true;
    changed_.insert(it->first);
    ++it;
  }
}

void WorldCore::Poll(int64_t now) {
  // A period that ended with refusals not yet logged is written now, so the lines add up to the counters.
  for (const RefusalLine& line : refusal_log_.TakeDue(now))
    log_->warn("refused {} {} in the last second or more (no further line was due)", line.count, line.kind);
  if (!schedule_started_) {
    schedule_started_ = true;
    next_broadcast_ns_ = now;
  }
  if (phase_ == SessionPhase::kStarting && now >= anchor_.ref_ns) {
    phase_ = SessionPhase::kRunning;
    // Real time: the same anchor, now advancing. Lock-step: sim time stands at T0 until the grants move it.
    anchor_.phase = session_.step.lockstep ? SessionPhase::kPaused : SessionPhase::kRunning;
    log_->info("session running: sim time {:.3f} s", NsToS(SimTimeAt(now)));
    Emit(SessionEvent{SessionEvent::Kind::kRunning, SimTimeAt(now), now, 0});
  }
  Expire(now);
  ExpireParamRequests(now);
  if (now >= next_bucket_expiry_ns_) {
    ExpireRateBuckets(now);
    next_bucket_expiry_ns_ = now + kSecond;
  }
  if (!session_.step.lockstep && phase_ != SessionPhase::kWaiting) {
    const int64_t sim_now = SimTimeAt(now);
    for (auto& s : systems_) s.system->OnAdvance(sim_now, now);
  }
  if (session_.step.lockstep) PollLockstep(now);
  else PollRealTime(now);
}

void WorldCore::Inject(const protocol::EntityState& entity, int64_t now) {
  MergedEntity& merged = entities_[entity.id];
  merged.state = entity;
  merged.stale_since_ns = -1;
  merged.frozen = false;
  changed_.insert(entity.id);
  if (first_change_ns_ < 0) first_change_ns_ = now;
}

void WorldCore::ReleaseOwned(uint32_t owner) {
  if (auto n = nodes_.find(owner); n != nodes_.end() && n->second.entities_owned > 0) --n->second.entities_owned;
}

void WorldCore::RemoveEntity(uint64_t id) {
  auto it = entities_.find(id);
  if (it == entities_.end()) return;
  ReleaseOwned(it->second.state.owner_node);
  entities_.erase(it);
  changed_.erase(id);
  removed_.push_back(id);
}

void WorldCore::ClearEntities(int64_t now) {
  if (entities_.empty() && changed_.empty()) return;
  protocol::WorldState w = Stamped(now, false);
  for (const auto& [id, e] : entities_) w.removed_entities.push_back(id);
  w.removed_entities.insert(w.removed_entities.end(), removed_.begin(), removed_.end());
  entities_.clear();
  for (auto& [id, n] : nodes_) n.entities_owned = 0;
  ClearChanges();
  Broadcast(std::move(w), now);
}

int64_t WorldCore::NextDueNs() const {
  // Lost and grace expiry are not scheduled here: the shell polls at least every 50 ms.
  // 0: due now (reference times are positive).
  if (!schedule_started_) return 0;
  int64_t due = INT64_MAX;
  if (phase_ == SessionPhase::kStarting) due = std::min(due, anchor_.ref_ns);
  // Forwarded parameter requests time out on time.
  for (const auto& [id, p] : pending_params_) due = std::min(due, p.deadline_ns);
  if (session_.step.lockstep && phase_ == SessionPhase::kRunning) {
    if (current_step_ < first_step_ || StepComplete(current_step_)) return 0;
    return std::min({due, next_regrant_ns_, next_late_check_ns_});
  }
  due = std::min(due, next_broadcast_ns_);
  const bool forwarding = !session_.step.lockstep || current_step_ == 0;
  if (forwarding && first_change_ns_ >= 0) {
    const int64_t forward_due = std::max(first_change_ns_ + SecondsToNs(session_.server.max_forward_delay_ms / 1e3),
                                         last_forward_ns_ + SecondsToNs(session_.server.min_forward_interval_ms / 1e3));
    due = std::min(due, forward_due);
  }
  return due;
}

// ---- broadcasts ---------------------------------------------------------------------------------

protocol::WorldState WorldCore::Stamped(int64_t now, bool keyframe) const {
  protocol::WorldState w;
  w.sequence = world_sequence_;
  w.server_time_ns = now;
  w.sim_time_ns = SimTimeAt(now);
  w.sim_rate = anchor_.rate;
  w.phase = phase_;
  w.keyframe = keyframe;
  for (const auto& k : events_)
    if (now - k.logged_ns < kEventRepeatNs) w.events.push_back(k.event);
  return w;
}

// ---- event log ----------------------------------------------------------------------------------

protocol::LoggedEvent WorldCore::LogEvent(protocol::LoggedEvent event, int64_t now) {
  event.sequence = ++event_sequence_;
  if (events_.size() >= kMaxLoggedEvents) events_.pop_front();
  events_.push_back(KeptEvent{event, now});
  // Marker texts and parameter values come from peers: escaped, one line each.
  log_->info("event {} at sim {:.3f} s: {} '{}' from {}{}{}", event.sequence,
             static_cast<double>(event.sim_time_ns) / 1e9, protocol::EventKindName(event.kind),
             text::EscapeForLog(event.text), text::EscapeForLog(event.source), event.detail.empty() ? "" : " ",
             text::EscapeForLog(event.detail));
  for (auto& slot : systems_) slot.system->OnLoggedEvent(event, now);
  return event;
}

std::vector<protocol::LoggedEvent> WorldCore::EventsAfter(uint64_t sequence) const {
  std::vector<protocol::LoggedEvent> out;
  for (const auto& k : events_)
    if (k.event.sequence > sequence) out.push_back(k.event);
  return out;
}

protocol::WorldState WorldCore::Keyframe(int64_t now) const {
  protocol::WorldState w = Stamped(now, true);
  w.conditions = session_.conditions;
  w.entities.reserve(entities_.size());
  for (const auto& [id, e] : entities_) w.entities.push_back(e.state);
  for (const auto& [id, n] : nodes_) w.nodes.push_back(n.info);
  return w;
}

protocol::WorldState WorldCore::Delta(int64_t now) const {
  protocol::WorldState w = Stamped(now, false);
  w.entities.reserve(changed_.size());
  for (uint64_t id : changed_) w.entities.push_back(entities_.at(id).state);
  w.removed_entities = removed_;
  // The node table rides on keyframes only (status changes slowly); deltas stay small.
  return w;
}

protocol::WorldState WorldCore::Slice(int64_t now, uint16_t part, uint16_t parts) const {
  protocol::WorldState w = Delta(now);
  w.keyframe_part = part;
  w.keyframe_parts = parts;
  // Those unchanged since their state went out within the last keyframe interval by id only: every
  // receiver that has missed no broadcast holds that state (one that missed one asks for a snapshot).
  const int64_t recent_ns = now - SecondsToNs(session_.server.keyframe_interval_s);
  for (const auto& [id, e] : entities_) {
    if (id % parts != part || changed_.count(id)) continue;
    if (e.broadcast_ns > recent_ns) w.kept_entities.push_back(id);
    else w.entities.push_back(e.state);
  }
  // The node table rides on the first slice, once per keyframe interval as with whole keyframes.
  if (part == 0)
    for (const auto& [id, n] : nodes_) w.nodes.push_back(n.info);
  return w;
}

uint16_t WorldCore::KeyframeParts() const {
  const auto& s = session_.server;
  if (s.keyframe_parts == 1) return 1;
  if (s.keyframe_parts == 0 && entities_.size() <= kWholeKeyframeEntities) return 1;
  // Spread over the periodic broadcasts of one keyframe interval (auto), or over the configured count.
  const double per_interval = std::round(s.keyframe_interval_s * s.broadcast_hz);
  const int parts = s.keyframe_parts > 1 ? s.keyframe_parts : static_cast<int>(std::clamp(per_interval, 1.0, 1000.0));
  return static_cast<uint16_t>(parts);
}

void WorldCore::ClearChanges() {
  changed_.clear();
  removed_.clear();
  first_change_ns_ = -1;
}

void WorldCore::Broadcast(protocol::WorldState w, int64_t now) {
  w.sequence = ++world_sequence_;
  w.server_time_ns = now;
  w.sim_rate = anchor_.rate;
  // Light and weather: on keyframes, on a rolling keyframe's first slice and on the first broadcast after
  // they changed (a receiver that missed it sees a gap and asks for a snapshot, which carries them).
  if (conditions_changed_ || w.keyframe || (w.keyframe_parts > 1 && w.keyframe_part == 0)) {
    w.conditions = session_.conditions;
    conditions_changed_ = false;
  }
  ++counters_.world_states_sent;
  for (auto& s : systems_) s.system->PostBroadcast(w, now);
  outgoing_.push_back(Outgoing{Outgoing::Target::kBroadcast, {}, std::move(w)});
}

void WorldCore::BroadcastRealTime(int64_t now, bool periodic) {
  if (periodic && slice_parts_ == 0 && now >= next_keyframe_ns_) {
    // Keyframe time: the full set in one broadcast (receivers drop what it does not list), or, for a large
    // world, a rolling keyframe: one slice on each periodic broadcast of the interval, so that no
    // broadcast carries the whole world at once (docs/PROTOCOL.md, "Rolling keyframes").
    next_keyframe_ns_ = now + SecondsToNs(session_.server.keyframe_interval_s);
    slice_parts_ = KeyframeParts();
    slice_next_ = 0;
  }
  protocol::WorldState w;
  if (periodic && slice_parts_ == 1) {
    w = Keyframe(now);
    slice_parts_ = 0;
  } else if (periodic && slice_parts_ > 1) {
    w = Slice(now, slice_next_, slice_parts_);
    if (++slice_next_ >= slice_parts_) slice_parts_ = slice_next_ = 0;
  } else {
    w = Delta(now);
  }
  for (const auto& e : w.entities) entities_.at(e.id).broadcast_ns = now;
  Broadcast(std::move(w), now);
  ClearChanges();
}

void WorldCore::PollRealTime(int64_t now) {
  const int64_t forward_due = std::max(first_change_ns_ + SecondsToNs(session_.server.max_forward_delay_ms / 1e3),
                                       last_forward_ns_ + SecondsToNs(session_.server.min_forward_interval_ms / 1e3));
  if (now >= next_broadcast_ns_) {
    BroadcastRealTime(now, true);
    // Keep the schedule; after a stall, skip missed slots instead of bursting.
    const int64_t period = static_cast<int64_t>(1e9 / session_.server.broadcast_hz);
    next_broadcast_ns_ += period;
    if (next_broadcast_ns_ < now) next_broadcast_ns_ = now + period;
  } else if (first_change_ns_ >= 0 && now >= forward_due) {
    // Forward merged updates now instead of holding them for the next periodic broadcast.
    BroadcastRealTime(now, false);
    last_forward_ns_ = now;
  }
}

// ---- lock-step ----------------------------------------------------------------------------------

int64_t WorldCore::StepSimNs(uint64_t step) const {
  assert(step >= 1);
  return step_t0_ns_ + static_cast<int64_t>(step - 1) * StepNs();
}

bool WorldCore::StepComplete(uint64_t step) const {
  for (const auto& [id, n] : nodes_) {
    const bool required = n.lockstep_member && !n.info.lost && !n.dropped && n.required_from_step <= step;
    if (required && n.step_done < step && step >= n.idle_until_step) return false;
  }
  return true;
}

std::vector<NodeRecord*> WorldCore::LateMembers() {
  std::vector<NodeRecord*> late;
  for (auto& [id, n] : nodes_) {
    const bool required = n.lockstep_member && !n.info.lost && !n.dropped && n.required_from_step <= current_step_;
    if (required && n.step_done < current_step_ && current_step_ >= n.idle_until_step) late.push_back(&n);
  }
  return late;
}

void WorldCore::Grant(uint64_t step, int64_t now) {
  current_step_ = step;
  ++steps_granted_;
  const int64_t t = StepSimNs(step);
  // Sim time stands at t_k until the next grant.
  anchor_ = session::SessionAnchor{SessionPhase::kPaused, t, now, anchor_.rate};
  for (auto& s : systems_) s.system->OnAdvance(t, now);
  // The world every node computes step k from; kept to re-send while the step is outstanding, so that a
  // late receiver sees exactly what the others saw.
  grant_ = Keyframe(now);
  grant_.step = step;
  grant_.sim_time_ns = t;
  grant_.phase = SessionPhase::kRunning;
  // A keyframe every keyframe_interval_s of sim time; a delta of every change since the last grant otherwise.
  if (t >= next_keyframe_sim_ns_) {
    next_keyframe_sim_ns_ = t + SecondsToNs(session_.server.keyframe_interval_s);
    Broadcast(grant_, now);
  } else {
    protocol::WorldState delta = Delta(now);
    delta.step = step;
    delta.sim_time_ns = t;
    delta.phase = SessionPhase::kRunning;
    Broadcast(std::move(delta), now);
  }
  ClearChanges();
  grant_ref_ns_ = now;
  next_regrant_ns_ = now + kRegrantPeriodNs;
  next_late_check_ns_ = now + SecondsToNs(session_.step.deadline_s);
}

void WorldCore::FinishAtEnd(int64_t now) {
  phase_ = SessionPhase::kStopped;
  anchor_ = session::SessionAnchor{SessionPhase::kStopped, anchor_.sim_ns, now, anchor_.rate};
  finished_ = true;
  log_->info("lock-step: session reached its end ({:.3f} s) at sim time {:.3f} s after {} steps", session_.step.end_s,
             NsToS(anchor_.sim_ns), steps_granted_);
  Emit(SessionEvent{SessionEvent::Kind::kStopped, anchor_.sim_ns, now, current_step_});
  // The final world, so that every receiver sees the session stop with the last step's results.
  Broadcast(Keyframe(now), now);
  ClearChanges();
}

void WorldCore::PollLockstep(int64_t now) {
  if (phase_ != SessionPhase::kRunning) {
    // Before the first grant the world is shared as in real time (start poses, node table).
    if (current_step_ == 0) {
      PollRealTime(now);
      return;
    }
    // Paused or stopped between steps: the phase goes out at broadcast_hz; the world of the newest grant
    // as a keyframe at keyframe_interval_s. Changes wait for the next grant.
    if (now < next_broadcast_ns_) return;
    protocol::WorldState w;
    if (now >= next_keyframe_ns_) {
      next_keyframe_ns_ = now + SecondsToNs(session_.server.keyframe_interval_s);
      w = grant_;
      w.nodes.clear();
      for (const auto& [id, n] : nodes_) w.nodes.push_back(n.info);
    } else {
      w.keyframe = false;
    }
    w.phase = phase_;
    w.sim_time_ns = SimTimeAt(now);
    w.step = 0;
    Broadcast(std::move(w), now);
    const int64_t period = static_cast<int64_t>(1e9 / session_.server.broadcast_hz);
    next_broadcast_ns_ += period;
    if (next_broadcast_ns_ < now) next_broadcast_ns_ = now + period;
    return;
  }

  // Running: the first grant, or the next one once every required member finished the current step.
  const int64_t end_ns = SecondsToNs(session_.step.end_s);
  uint64_t next = 0;
  if (current_step_ < first_step_) {
    next = first_step_;
  } else if (StepComplete(current_step_)) {
    Emit(SessionEvent{SessionEvent::Kind::kStepEnd, StepSimNs(current_step_), now, current_step_});
    next = current_step_ + 1;
  }
  if (next != 0) {
    if (end_ns > 0 && StepSimNs(next) > end_ns) FinishAtEnd(now);
    else Grant(next, now);
    return;
  }

  // Waiting: name the late members once per deadline period, drop them if the policy says so.
  if (now >= next_late_check_ns_) {
    const double waited_s = NsToS(now - grant_ref_ns_);
    bool dropped = false;
    for (NodeRecord* n : LateMembers()) {
      log_->warn("lock-step: node '{}' has not finished step {} after {:.1f} s", n->info.name, current_step_, waited_s);
      if (!session_.step.drop_late) continue;
      n->dropped = true;
      dropped = true;
      log_->warn("lock-step: dropped node '{}' from the member set (late_policy drop)", n->info.name);
      Emit(NodeEvent{NodeEvent::Kind::kDropped, n->info.node_id, n->info.name, now});
    }
    next_late_check_ns_ = now + SecondsToNs(session_.step.deadline_s);
    if (dropped) {
      PollLockstep(now);  // the step may be complete now
      return;
    }
  }
  // Re-send the outstanding grant: a grant lost on the PUB socket must not hang the session.
  if (now >= next_regrant_ns_) {
    protocol::WorldState w = grant_;
    w.nodes.clear();
    for (const auto& [id, n] : nodes_) w.nodes.push_back(n.info);
    Broadcast(std::move(w), now);
    next_regrant_ns_ = now + kRegrantPeriodNs;
  }
}

// ---- status -------------------------------------------------------------------------------------

std::vector<std::string> WorldCore::StatusLines(int64_t now) const {
  std::vector<std::string> lines;
  std::ostringstream os;
  os << "session '" << text::EscapeForLog(session_.name) << "' " << protocol::PhaseName(phase_) << ", sim " << NsToS(SimTimeAt(now))
     << " s, " << nodes_.size() << " node(s), " << entities_.size() << " entities, bad input "
     << counters_.decode_errors + counters_.version_refused + counters_.foreign_entity;
  if (session_.step.lockstep) os << ", lock-step step " << current_step_ << " (" << steps_granted_ << " granted)";
  lines.push_back(os.str());
  if (nodes_.empty()) return lines;
  lines.push_back(fmt::format("  {:>3} {:<14} {:<9} {:<16} {:>10} {:>8} {:>8} {:>6} {:>7} {}", "id", "node", "role",
                              "host", "offset us", "rtt us", "upd/s", "loss", "seen s", "state"));
  for (const auto& [id, n] : nodes_) {
    std::string state = n.info.lost ? "LOST" : "ok";
    if (session_.step.lockstep && n.lockstep_member)
      state += n.dropped ? " dropped" : fmt::format(" step {}", n.step_done);
    lines.push_back(fmt::format("  {:>3} {:<14} {:<9} {:<16} {:>10} {:>8.1f} {:>8.1f} {:>5.1f}% {:>7.2f} {}", id,
                                text::EscapeForLog(n.info.name, 64), protocol::RoleName(n.info.role),
                                text::EscapeForLog(n.info.host, 64),
                                FormatUs(n.info.clock_offset_ns), static_cast<double>(n.info.rtt_ns) / 1e3,
                                n.info.update_rate_hz, 100.0 * n.info.loss_fraction, NsToS(now - n.info.last_seen_ns),
                                state));
  }
  return lines;
}

}  // namespace platoon::server
