#include "platoon/server/sync_server.hpp"

#include "platoon/process/loop_watchdog.hpp"
#include "platoon/protocol/codec.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>

namespace platoon::server {

SyncServer::SyncServer(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger,
                       const clock::Oscillator& reference)
    : log_(std::move(logger)),
      reference_(reference),
      session_(session),
      core_(session, log_),
      // CURVE: the keys load first, the ZAP handler serves the context before any socket binds.
      curve_(config::CurveOn(session) ? std::optional(config::LoadServerCurve(session)) : std::nullopt),
      zap_(curve_ ? std::make_unique<transport::ZapHandler>(context_, curve_->authorised,
                                                            [log = log_](const std::string& line) { log->warn("{}", line); })
                  : nullptr),
      control_(context_, transport::Pattern::kRouter, InputDef(session)),
      time_(context_, transport::Pattern::kRouter, InputDef(session)),
      // A subscriber's messages wait at most 16 deep for the loop to store them: a peer sending subscriptions
      // without end gets a few of them stored before ReadMonitors cuts it (kWorldPeerMaxBytes).
      world_(context_, transport::Pattern::kPub,
             transport::ChannelDef{.receive_hwm = 16, .faults = {}, .curve = SocketCurve(), .io_affinity = kWorldIo}),
      state_(context_, transport::Pattern::kPull, InputDef(session)) {
  for (auto [name, channel] : {std::pair{"control", &control_}, std::pair{"time", &time_}, std::pair{"world", &world_},
                               std::pair{"state", &state_}})
    monitors_.push_back(Monitored{name, std::make_unique<transport::SocketMonitor>(context_, channel->Socket(), name,
                                                                                   channel == &world_)});
}

void SyncServer::ReadMonitors(int64_t now) {
  // Each read costs a system call or two per socket: a few times per broadcast period is soon enough.
  constexpr int64_t kMonitorPeriodNs = 10'000'000;
  if (now < next_monitor_read_ns_) return;
  next_monitor_read_ns_ = now + kMonitorPeriodNs;
  for (auto& m : monitors_)
    for (const transport::HandshakeError e : m.monitor->TakeFailures()) {
      using transport::HandshakeError;
      const HandshakeFailure why = e == HandshakeError::kMechanism ? HandshakeFailure::kMechanism
                                   : e == HandshakeError::kCrypto  ? HandshakeFailure::kCrypto
                                   : e == HandshakeError::kAuth    ? HandshakeFailure::kAuth
                                                                   : HandshakeFailure::kProtocol;
      core_.CountHandshakeFailure(why, m.socket, now);
    }
  // The world port takes nothing but the empty subscription: a peer that has sent more than a subscriber
  // ever does is cut before libzmq stores more of its topics (about 750 bytes each, never bounded).
  for (auto& m : monitors_)
    if (m.monitor->Connections() > 0)
      for (const transport::TalkerCut& cut : m.monitor->DropTalkers(kWorldPeerMaxBytes))
        core_.CountWorldPeerCut(cut.peer, cut.bytes, kWorldPeerMaxBytes, now);
}

transport::ChannelDef SyncServer::InputDef(const config::SessionDef& session) const {
  return transport::ChannelDef{.max_message_bytes = session.server.max_message_bytes,
                               .faults = session.faults,
                               .curve = SocketCurve(),
                               .io_affinity = kInputIo};
}

std::optional<transport::CurveDef> SyncServer::SocketCurve() const {
  if (!curve_) return std::nullopt;
  return curve_->socket;
}

transport::ZapStats SyncServer::Handshakes() const { return zap_ ? zap_->Stats() : transport::ZapStats{}; }

BoundPorts SyncServer::Bind() {
  const auto& s = session_.server;
  BoundPorts p;
  using transport::PortOf;
  using transport::TcpEndpoint;
  p.control = PortOf(control_.Bind(TcpEndpoint(s.bind_address, s.control_port)));
  p.time = PortOf(time_.Bind(TcpEndpoint(s.bind_address, s.time_port)));
  p.world = PortOf(world_.Bind(TcpEndpoint(s.bind_address, s.world_port)));
  p.state = PortOf(state_.Bind(TcpEndpoint(s.bind_address, s.state_port)));
  core_.SetBoundPorts(p);
  return p;
}

void SyncServer::Control(const protocol::SessionControl& control) {
  core_.Control(control, reference_.NowNs());
  Flush();
}

size_t SyncServer::Flush() {
  size_t replies = 0;
  for (auto& out : core_.TakeOutgoing()) {
    if (out.target == Outgoing::Target::kPeer) {
      control_.Send(transport::Packet{out.peer, protocol::Encode(out.message), {}});
      ++replies;
    } else {
      world_.Send(protocol::Encode(out.message));
    }
  }
  return replies;
}

void SyncServer::HandleTime(const transport::Packet& packet) {
  // t2 at arrival, t3 just before the send: the reply is stamped as close to the wire as the loop allows.
  const int64_t t2 = reference_.NowNs();
  const auto decoded = protocol::Decode(packet.data);
  const auto reply = core_.AnswerTime(decoded, t2, reference_.NowNs());
  if (reply) time_.Send(transport::Packet{packet.peer, protocol::Encode(*reply), {}});
}

void SyncServer::Run(const std::atomic<bool>& stop) {
  constexpr int64_t kMaxWaitNs = 50'000'000;
  auto status_period = [&] { return static_cast<int64_t>(core_.Session().server.status_interval_s * 1e9); };
  int64_t next_status = reference_.NowNs() + status_period();
  int64_t finished_at = -1;
  std::array<transport::Channel*, 3> inputs = {&time_, &control_, &state_};

  // Checkpoints through each turn: far more time between two of them than the wait asked for means this
  // process was not running (a suspended VM or laptop, SIGSTOP, a starved core). The core is told before
  // it polls, so that the gap never counts as every node's silence.
  auto checkpoint = [&](int64_t asked_ns) {
    const int64_t t = reference_.NowNs();
    if (const int64_t stall = stalls_.Mark(t, asked_ns); stall > 0) core_.ForgiveStall(stall, t);
  };
  // The loop waits at most 50 ms: standing a second in one phase is a stall, and the log says where it was
  // held (the phase, and each thread's state and kernel wait channel) while it is held.
  process::LoopWatchdog watchdog(std::chrono::seconds(1), [log = log_](const std::string& text) {
    log->warn("{}", text);
  });
  while (!stop.load(std::memory_order_relaxed)) {
    watchdog.Beat("wait");
    checkpoint(0);
    const int64_t now = reference_.NowNs();
    int64_t next_due = core_.NextDueNs();
    if (status_period() > 0) next_due = std::min(next_due, next_status);
    // Only the channels with input are read: an empty read costs system calls on every turn.
    const int64_t wait_ns = std::clamp<int64_t>(next_due - now, 0, kMaxWaitNs);
    const uint64_t ready = transport::WaitAny(inputs, std::chrono::nanoseconds(wait_ns));
    watchdog.Beat("read");
    checkpoint(wait_ns);

    // At most max_messages_per_turn from each socket, then the core's Poll: whatever arrives, the world
    // broadcast is late by at most one turn. What is left is read in the next turn (WaitAny sees it).
    const int per_turn = core_.Session().server.max_messages_per_turn;
    // Time first: its replies are stamped as close to arrival as the loop allows.
    if (ready & 1u)
      for (int n = 0; n < per_turn; ++n) {
        auto p = time_.TryReceive();
        if (!p) break;
        if (core_.Admit(WorldCore::RouterSocket::kTime, p->peer, p->peer_address, p->user_id, reference_.NowNs()))
          HandleTime(*p);
      }
    int64_t t = reference_.NowNs();
    // Replies (snapshots above all) cost the loop most: past max_replies_per_turn the requests wait unread
    // in the socket for the next turn, and the world broadcast goes out between.
    const size_t reply_budget = static_cast<size_t>(core_.Session().server.max_replies_per_turn);
    size_t replies = 0;
    if (ready & 2u)
      for (int n = 0; n < per_turn && replies < reply_budget; ++n) {
        auto p = control_.TryReceive();
        if (!p) break;
        // Dropped before decoding: a flooding peer costs one read per message, nothing more.
        if (!core_.Admit(WorldCore::RouterSocket::kControl, p->peer, p->peer_address, p->user_id, t)) continue;
        core_.OnControl(p->peer, p->peer_address, p->user_id, protocol::Decode(p->data), t);
        // Replies leave as they are made, so a turn never holds more than its own.
        replies += Flush();
      }
    if (ready & 4u)
      for (int n = 0; n < per_turn; ++n) {
        auto p = state_.TryReceive();
        if (!p) break;
        core_.OnState(p->user_id, protocol::Decode(p->data), t);
      }

    watchdog.Beat("poll");
    checkpoint(0);
    t = reference_.NowNs();
    ReadMonitors(t);
    core_.Poll(t);
    Flush();
    // server.faults.* changed: the receiving sockets take the new faults.
    if (core_.FaultsVersion() != faults_version_) {
      faults_version_ = core_.FaultsVersion();
      for (transport::Channel* c : inputs) c->SetFaults(core_.Session().faults);
    }
    if (status_period() > 0 && t >= next_status) {
      for (const auto& line : core_.StatusLines(t)) log_->info("{}", line);
      next_status = t + status_period();
    }
    // A finished lock-step session lingers briefly, so that its stop broadcast reaches the subscribers.
    if (core_.Finished()) {
      if (finished_at < 0) finished_at = t;
      if (t - finished_at >= kFinishLingerNs) break;
    }
  }
  stalls_reported_ = watchdog.Stalls();
  // The last handshake failures, then every refusal count not yet in a line: the lines add up to the counters.
  next_monitor_read_ns_ = 0;
  ReadMonitors(reference_.NowNs());
  core_.FlushRefusalLog();
  log_->info("server stopping");
}

std::string WriteReadyFile(const std::string& path, const BoundPorts& p) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << "{\"control\":" << p.control << ",\"time\":" << p.time << ",\"world\":" << p.world
      << ",\"state\":" << p.state << "}\n";
    f.flush();
    if (!f) return "cannot write " + tmp;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return "cannot rename " + tmp + " to " + path + ": " + ec.message();
  return {};
}

}  // namespace platoon::server
