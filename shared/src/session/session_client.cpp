#include "platoon/session/session_client.hpp"

#include "platoon/protocol/codec.hpp"

#include <unistd.h>

#include <algorithm>

namespace platoon::session {
namespace {

using protocol::DecodeError;
using protocol::SessionPhase;

constexpr int64_t kSecond = 1'000'000'000;

int64_t SToNs(double s) { return static_cast<int64_t>(s * 1e9); }

bool Live(SessionPhase p) { return p == SessionPhase::kRunning || p == SessionPhase::kPaused; }

}  // namespace

ClientDef DefaultClientDef(const std::string& name, protocol::Role role) {
  ClientDef d;
  d.name = name;
  d.role = role;
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  d.host = buf;
  d.pid = static_cast<uint32_t>(getpid());
  return d;
}

SessionClient::SessionClient(ClientDef def, const clock::Oscillator& local, std::shared_ptr<spdlog::logger> logger)
    : def_(std::move(def)), local_(local), log_(std::move(logger)), clock_(local, def_.clock), world_(def_.track) {
  const int64_t now = local_.NowNs();
  broadcast_ns_ = static_cast<int64_t>(1e9 / def_.broadcast_hz);
  start_ns_ = next_join_ns_ = next_request_ns_ = next_heartbeat_ns_ = last_heard_ns_ = waiting_logged_ns_ = now;
}

void SessionClient::Queue(Socket s, const protocol::Message& m) {
  out_.push_back(Outgoing{s, protocol::Encode(m)});
}

std::vector<Outgoing> SessionClient::TakeOutgoing() { return std::exchange(out_, {}); }

int64_t SessionClient::SimNowNs() const {
  if (step_ns_ > 0 && granted_step_ > 0) return granted_sim_ns_;
  return SimTimeAt(anchor_, clock_.NowNs());
}

bool SessionClient::Advancing() const {
  if (anchor_.phase != SessionPhase::kRunning) return false;
  // Lock-step time comes from the grants, not from the synced clock.
  if (step_ns_ > 0) return granted_step_ > step_done_;
  return clock_.IsSet();
}

void SessionClient::OnMessage(Socket from, std::string_view bytes, int64_t local_ns) {
  const auto d = protocol::Decode(bytes);
  if (d.error != DecodeError::kNone || !d.message) {
    // A refusal in another protocol version still decodes, so the reason reaches the user.
    if (!(d.message && std::holds_alternative<protocol::Refuse>(*d.message))) {
      ++stats_.bad_input;
      return;
    }
  }
  const protocol::Message& m = *d.message;
  switch (from) {
    case Socket::kTime: {
      const auto* reply = std::get_if<protocol::TimeReply>(&m);
      if (!reply) {
        ++stats_.bad_input;
        return;
      }
      last_heard_ns_ = local_ns;
      const clock::TimeSample sample{reply->t1_ns, reply->t2_ns, reply->t3_ns, local_ns};
      if (on_time_sample) on_time_sample(sample);
      clock_.AddSample(sample);
      return;
    }
    case Socket::kWorld: {
      const auto* w = std::get_if<protocol::WorldState>(&m);
      if (!w) {
        ++stats_.bad_input;
        return;
      }
      last_heard_ns_ = local_ns;
      if (last_world_ns_ >= 0) {
        const int64_t gap = local_ns - last_world_ns_;
        stats_.world_max_gap_ns = std::max(stats_.world_max_gap_ns, gap);
        const double periods = static_cast<double>(gap) / static_cast<double>(broadcast_ns_);
        if (local_ns - start_ns_ >= SToNs(def_.stats_warmup_s))
          ++stats_.gap_hist[periods <= 1.5 ? 0 : periods <= 2.5 ? 1 : periods <= 3.5 ? 2 : periods <= 10.5 ? 3 : 4];
      }
      last_world_ns_ = local_ns;
      ++stats_.world_received;
      if (on_world_broadcast) on_world_broadcast(bytes, *w, local_ns);
      OnWorld(*w, false, local_ns);
      return;
    }
    case Socket::kControl: OnControl(m, local_ns); return;
    case Socket::kState: ++stats_.bad_input; return;  // nothing comes back on a PUSH socket
  }
}

void SessionClient::OnControl(const protocol::Message& m, int64_t local_ns) {
  if (const auto* w = std::get_if<protocol::Welcome>(&m)) {
    last_heard_ns_ = local_ns;
    // The answer to a further join sent before the first one was answered (the server stood still while
    // this client retried): the same node and token, taken in silence, and nothing to ask again.
    const bool repeat =
        joined_ && w->node_id == node_id_ && w->state_token == state_token_ && w->session_name == session_name_;
    node_id_ = w->node_id;
    session_name_ = w->session_name;
    session_file_ = w->session_file;
    session_file_path_ = w->session_file_path;
    heartbeat_ns_ = std::max(w->heartbeat_interval_ns, SToNs(def_.min_heartbeat_s));
    lost_timeout_ns_ = w->lost_timeout_ns;
    step_ns_ = w->step_ns;
    time_control_ = w->time_control;
    state_token_ = w->state_token;
    ports_ = ServerPorts{w->time_port, w->world_port, w->state_port};
    if (repeat) return;
    if (log_)
      log_->info("{} session '{}' as node {} (time port {}, world port {}{})", joined_ ? "still in" : "joined",
                 w->session_name, node_id_, w->time_port, w->world_port,
                 step_ns_ > 0 ? fmt::format(", lock-step {:.1f} ms", static_cast<double>(step_ns_) / 1e6) : "");
    joined_ = true;
    rejoined_ = true;
    last_refusal_.clear();
    // A (re)joined client asks for the full world.
    snapshot_due_ns_ = local_ns;
    return;
  }
  if (const auto* r = std::get_if<protocol::Refuse>(&m)) {
    if (r->reason.rfind("unknown node", 0) == 0) {
      // The server restarted and forgot us: join again; the clock and the world keep running.
      if (joined_ && log_) log_->warn("the server does not know '{}' (restarted?); joining again", def_.name);
      joined_ = false;
      next_join_ns_ = local_ns;
      return;
    }
    joined_ = false;
    if (!def_.retry_refused) {
      if (log_)
        log_->error("server refused '{}': {} (server protocol version {}, ours {})", def_.name, r->reason,
                    r->server_protocol_version, def_.protocol_version);
      refused_ = r->reason;
      return;
    }
    if (r->reason != last_refusal_ && log_) log_->error("server refused '{}': {}", def_.name, r->reason);
    last_refusal_ = r->reason;
    next_join_ns_ = local_ns + kSecond;
    return;
  }
  if (const auto* w = std::get_if<protocol::WorldState>(&m)) {
    last_heard_ns_ = local_ns;
    ++stats_.snapshots;
    OnWorld(*w, true, local_ns);
    return;
  }
  // Parameter requests the server forwards to this node; a client without parameters (a tool, a viewer)
  // says so at once rather than letting the asker wait for the server's timeout.
  if (std::holds_alternative<protocol::ParamListRequest>(m) || std::holds_alternative<protocol::ParamGet>(m) ||
      std::holds_alternative<protocol::ParamSet>(m)) {
    last_heard_ns_ = local_ns;
    if (on_param_request) {
      if (auto answer = on_param_request(m)) Queue(Socket::kControl, *answer);
    } else if (const auto* l = std::get_if<protocol::ParamListRequest>(&m)) {
      Queue(Socket::kControl, protocol::ParamList{{}, l->request_id, {}});
    } else {
      const auto* g = std::get_if<protocol::ParamGet>(&m);
      const auto* s = std::get_if<protocol::ParamSet>(&m);
      const std::string path = g ? g->path : s->path;
      Queue(Socket::kControl, protocol::ParamReply{false, {path, "", false, ""}, path + ": no such parameter",
                                                   g ? g->request_id : s->request_id});
    }
    return;
  }
  // Answers to this client's own commands and requests: kept for a tool, else the phase comes with the world.
  if (def_.keep_replies) {
    std::optional<ControlReply> reply;
    if (const auto* s = std::get_if<protocol::SessionStatus>(&m)) reply = *s;
    else if (const auto* l = std::get_if<protocol::ParamList>(&m)) reply = *l;
    else if (const auto* p = std::get_if<protocol::ParamReply>(&m)) reply = *p;
    else if (const auto* e = std::get_if<protocol::EventList>(&m)) reply = *e;
    if (reply) {
      last_heard_ns_ = local_ns;
      if (replies_.size() >= kMaxKeptReplies) replies_.erase(replies_.begin());
      replies_.push_back(std::move(*reply));
      return;
    }
  }
  // A node's own marker (ModuleContext::Mark) is answered too: the entry also comes with the world.
  if (std::holds_alternative<protocol::SessionStatus>(m) || std::holds_alternative<protocol::EventList>(m)) return;
  ++stats_.bad_input;
}

void SessionClient::FollowAnchor(const protocol::WorldState& w) {
  // A server that does not know the session yet (restarted, nobody rejoined) cannot move a running
  // session clock: the client keeps its anchor and tells the server when it rejoins.
  if (anchor_known_ && Live(anchor_.phase) && (w.phase == SessionPhase::kWaiting || w.phase == SessionPhase::kStarting))
    return;
  anchor_ = SessionAnchor{w.phase, w.sim_time_ns, w.server_time_ns, w.sim_rate};
  anchor_known_ = true;
}

void SessionClient::OnWorld(const protocol::WorldState& w, bool snapshot, int64_t local_ns) {
  if (world_.HeldAt() && log_)
    log_->info("world states again after {:.1f} s: remote entities are dead-reckoned from their newest states again",
               static_cast<double>(local_ns - world_heard_ns_) / 1e9);
  world_heard_ns_ = local_ns;
  const bool stats_on = local_ns - start_ns_ >= SToNs(def_.stats_warmup_s);
  if (!snapshot && Advancing()) {
    // Update latency: owner computed the state -> server -> here, on the sim clock.
    const int64_t sim_now = SimNowNs();
    for (const auto& e : w.entities) {
      if (e.owner_node == node_id_) continue;
      auto [it, fresh] = newest_stamp_.try_emplace(e.id, e.kinematics.stamp_ns);
      if (!fresh && e.kinematics.stamp_ns <= it->second) continue;
      it->second = e.kinematics.stamp_ns;
      if (!fresh && stats_on && stats_.latencies_ns.size() < 2'000'000)
        stats_.latencies_ns.push_back(sim_now - e.kinematics.stamp_ns);
    }
  }
  FollowAnchor(w);
  if ((!w.nodes.empty() || w.keyframe) && w.nodes != nodes_) {
    nodes_ = w.nodes;
    ++nodes_version_;
  }
  // Lock-step: a grant newer than the last one lets the modules step; a repeated grant of a step
  // already done means the acknowledgement was lost or the grant was re-sent: acknowledge again.
  if (w.step > 0) {
    if (w.step > granted_step_) {
      granted_step_ = w.step;
      granted_sim_ns_ = w.sim_time_ns;
    } else if (w.step <= step_done_ && w.step == granted_step_) {
      Ack(w.step);
    }
  }
  const int64_t blend_from = step_ns_ > 0 && granted_step_ > 0 ? granted_sim_ns_ : SimTimeAt(anchor_, clock_.NowNs());
  const WorldApplyResult r = world_.Apply(w, blend_from, snapshot, node_id_);
  // Light and weather ride on keyframes and on the broadcast after a change; an old snapshot does not undo them.
  if (w.conditions && r.applied && w.conditions != conditions_) {
    conditions_ = w.conditions;
    ++conditions_version_;
  }
  // The whole world is here once a snapshot or a whole keyframe was applied after a Welcome.
  if (joined_ && r.applied && (snapshot || w.keyframe)) world_complete_ = true;
  if (r.reset) {
    ++stats_.server_restarts;
    if (log_) log_->warn("world sequence restarted: the server restarted; requesting a snapshot");
  }
  if (r.gap) ++stats_.world_gaps;
  if ((r.gap || r.reset) && snapshot_due_ns_ < 0) snapshot_due_ns_ = local_ns;
  // Session events repeat in world states for a second: each is taken once. A restarted server numbers
  // its events from 1 again.
  if (r.reset) last_event_sequence_ = 0;
  for (const auto& e : w.events) {
    if (e.sequence <= last_event_sequence_) continue;
    last_event_sequence_ = e.sequence;
    if (events_.size() >= kMaxKeptEvents) events_.erase(events_.begin());
    events_.push_back(e);
  }
}

void SessionClient::Ack(uint64_t step) {
  if (!joined_) return;
  protocol::NodeState ack{node_id_, 0, {}, step, 0, state_token_};
  Queue(Socket::kState, ack);
}

void SessionClient::SendState(std::string bytes) {
  if (joined_) Queue(Socket::kState, std::move(bytes));
}

void SessionClient::Control(protocol::SessionControl command) { pending_controls_.push_back(command); }

void SessionClient::RequestParams(const ParamRequest& request) {
  // What changes the session goes after the token: the server makes this connection an operator first.
  if (std::holds_alternative<protocol::ParamSet>(request) || std::holds_alternative<protocol::Mark>(request))
    PresentOperatorToken();
  std::visit([&](const auto& r) { Queue(Socket::kControl, r); }, request);
}

void SessionClient::PresentOperatorToken() {
  if (def_.operator_token.empty() && def_.find_operator_token) def_.operator_token = def_.find_operator_token();
  if (!def_.operator_token.empty()) Queue(Socket::kControl, protocol::OperatorHello{def_.operator_token});
}

void SessionClient::Leave(const std::string& reason) {
  if (joined_) Queue(Socket::kControl, protocol::Leave{node_id_, reason});
  joined_ = false;
}

void SessionClient::SendJoin() {
  protocol::Join join;
  join.name = def_.name;
  join.role = def_.role;
  join.host = def_.host;
  join.protocol_version = def_.protocol_version;
  join.pid = def_.pid;
  join.endpoints = def_.endpoints;
  join.lockstep_member = def_.lockstep_member;
  // The client's view of the session, so that a restarted server resumes it.
  join.session_phase = anchor_known_ ? anchor_.phase : SessionPhase::kWaiting;
  join.sim_anchor_ns = anchor_.sim_ns;
  join.ref_anchor_ns = anchor_.ref_ns;
  Queue(Socket::kControl, protocol::EncodeWithVersion(join, def_.protocol_version));
}

void SessionClient::ForgiveStall(int64_t gap_ns, int64_t local_ns) {
  if (gap_ns <= 0) return;
  ++stats_.stalls_forgiven;
  if (log_)
    log_->warn("this node was not running for {:.2f} s (suspended or starved); the server's silence counts from now on",
               static_cast<double>(gap_ns) / 1e9);
  last_heard_ns_ = std::min(last_heard_ns_ + gap_ns, local_ns);
  if (world_heard_ns_ >= 0) world_heard_ns_ = std::min(world_heard_ns_ + gap_ns, local_ns);
}

int64_t SessionClient::WorldHoldDueNs() const {
  if (def_.world_hold_s <= 0 || step_ns_ > 0 || world_heard_ns_ < 0 || world_.HeldAt()) return INT64_MAX;
  return world_heard_ns_ + SToNs(def_.world_hold_s);
}

void SessionClient::Poll(int64_t now) {
  if (refused_) return;
  if (!joined_ && now >= next_join_ns_) {
    SendJoin();
    next_join_ns_ = now + SToNs(def_.rejoin_interval_s);
    if (now - waiting_logged_ns_ >= 5 * kSecond && log_) {
      log_->info("waiting for the server");
      waiting_logged_ns_ = now;
    }
  }
  if (joined_ && snapshot_due_ns_ >= 0 && now >= snapshot_due_ns_) {
    Queue(Socket::kControl, protocol::StatusRequest{});
    snapshot_due_ns_ = -1;
  }
  // Time exchanges go on while rejoining, so the clock stays disciplined. Until the clock is set they
  // come in a burst (join_sync_rate_hz), so that the fit span fills and the clock is set soon after join.
  const double rate_hz =
      clock_.IsSet() ? def_.clock.sync_rate_hz : std::max(def_.clock.sync_rate_hz, def_.clock.join_sync_rate_hz);
  const int64_t request_period = static_cast<int64_t>(1e9 / rate_hz);
  if (ports_.time && now >= next_request_ns_) {
    Queue(Socket::kTime, protocol::TimeRequest{node_id_, ++request_seq_, now});
    next_request_ns_ = std::max(next_request_ns_ + request_period, now);
  }
  if (joined_ && now >= next_heartbeat_ns_) {
    const auto st = clock_.Status();
    Queue(Socket::kControl, protocol::Heartbeat{node_id_, st.now_ns, static_cast<int64_t>(st.offset_ns), st.min_delay_ns,
                                                static_cast<int64_t>((st.rate - 1.0) * 1e9)});
    next_heartbeat_ns_ = now + heartbeat_ns_;
  }
  // Session commands: a start without an instant starts now on the synced clock.
  for (auto& c : pending_controls_) {
    if ((c.command == protocol::SessionControl::Command::kStart ||
         c.command == protocol::SessionControl::Command::kRestart) &&
        c.at_server_time_ns == 0)
      c.at_server_time_ns = clock_.NowNs();
    PresentOperatorToken();
    Queue(Socket::kControl, c);
  }
  pending_controls_.clear();
  // A silent world stream: once the silence outlasts what the server itself dead-reckons a lost node's
  // entities for, the remote world stands where its estimates were when it fell due, flagged stale,
  // instead of running on without news (a car with a yaw rate would circle for ever). The instant is
  // that of the due time, not of this poll, which may come late.
  if (const int64_t due = WorldHoldDueNs(); now >= due) {
    const int64_t ref = clock_.NowNs() - (local_.NowNs() - due);
    world_.Hold(SimTimeAt(anchor_, ref));
    ++stats_.world_holds;
    if (log_)
      log_->warn("no world state for {:.1f} s: remote entities held where they were estimated to be, shown stale",
                 static_cast<double>(now - world_heard_ns_) / 1e9);
  }
  const int64_t silence = def_.server_silence_s > 0 ? SToNs(def_.server_silence_s) : 3 * lost_timeout_ns_;
  if (joined_ && now - last_heard_ns_ > silence) {
    if (log_)
      log_->warn("server silent for {:.1f} s; joining again (clock and world keep running)",
                 static_cast<double>(now - last_heard_ns_) / 1e9);
    joined_ = false;
    next_join_ns_ = now;
    last_heard_ns_ = now;
  }
}

int64_t SessionClient::NextDueNs() const {
  int64_t due = std::min(joined_ ? next_heartbeat_ns_ : next_join_ns_, ports_.time ? next_request_ns_ : INT64_MAX);
  if (snapshot_due_ns_ >= 0) due = std::min(due, snapshot_due_ns_);
  due = std::min(due, WorldHoldDueNs());
  if (!pending_controls_.empty() || !out_.empty()) due = local_.NowNs();
  return due;
}

}  // namespace platoon::session
