#include "platoon/session/client_link.hpp"

#include <algorithm>
#include <array>

namespace platoon::session {

ClientLink::ClientLink(zmq::context_t& context, std::string server_host, uint16_t control_port,
                       const transport::FaultDef& faults, const std::optional<transport::CurveDef>& curve)
    : host_(std::move(server_host)),
      control_endpoint_(transport::TcpEndpoint(host_, control_port)),
      control_(context, transport::Pattern::kDealer, transport::ChannelDef{.faults = faults, .curve = curve}),
      time_(context, transport::Pattern::kDealer, transport::ChannelDef{.faults = faults, .curve = curve}),
      world_(context, transport::Pattern::kSub, transport::ChannelDef{.faults = faults, .curve = curve}),
      state_(context, transport::Pattern::kPush, transport::ChannelDef{.faults = {}, .curve = curve}) {
  control_.Connect(control_endpoint_);
}

void ClientLink::SetFaults(const transport::FaultDef& faults) {
  control_.SetFaults(faults);
  time_.SetFaults(faults);
  world_.SetFaults(faults);
}

void ClientLink::Follow(const ServerPorts& ports) {
  // (Re)connect the other sockets to the ports the server announced (a restarted server may move them).
  auto follow = [&](transport::Channel& c, uint16_t& current, uint16_t port) {
    if (current == port || port == 0) return;
    if (current) c.Disconnect(transport::TcpEndpoint(host_, current));
    c.Connect(transport::TcpEndpoint(host_, port));
    current = port;
  };
  follow(time_, connected_.time, ports.time);
  follow(world_, connected_.world, ports.world);
  follow(state_, connected_.state, ports.state);
}

void ClientLink::Send(std::vector<Outgoing> out) {
  for (auto& o : out) {
    switch (o.socket) {
      case Socket::kControl: control_.Send(o.bytes); break;
      case Socket::kTime: time_.Send(o.bytes); break;
      case Socket::kWorld: break;  // a SUB socket sends nothing
      case Socket::kState:
        if (connected_.state) state_.Send(o.bytes);
        break;
    }
  }
}

void ClientLink::Turn(SessionClient& client, std::mutex& lock, std::span<transport::Channel* const> extra,
                      int64_t max_wait_ns, const std::function<void()>& drain_extra) {
  int64_t due;
  {
    std::lock_guard guard(lock);
    due = client.NextDueNs() - client.LocalNowNs();
  }
  std::vector<transport::Channel*> inputs = {&time_, &control_, &world_};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  // Far more time since the last turn, or in the wait, than asked for: this process was not running, and
  // the client is told before it polls, so that the gap is not the server's silence.
  const int64_t wait_ns = std::clamp<int64_t>(due, 0, max_wait_ns);
  const auto checkpoint = [&](int64_t asked_ns) {
    const int64_t t = client.LocalNowNs();
    if (const int64_t stall = stalls_.Mark(t, asked_ns); stall > 0) {
      std::lock_guard guard(lock);
      client.ForgiveStall(stall, t);
    }
  };
  checkpoint(0);
  // Only the channels with input are read: an empty read costs system calls on every turn.
  const uint64_t ready = transport::WaitAny(inputs, std::chrono::nanoseconds(wait_ns));
  checkpoint(wait_ns);

  // Time replies first: t4 is stamped as soon as the loop sees them, before any lock is taken.
  if (ready & 1u)
    while (auto p = time_.TryReceive()) {
      const int64_t t4 = client.LocalNowNs();
      std::lock_guard guard(lock);
      client.OnMessage(Socket::kTime, p->data, t4);
    }
  if (ready & 2u)
    while (auto p = control_.TryReceive()) {
      std::lock_guard guard(lock);
      client.OnMessage(Socket::kControl, p->data, client.LocalNowNs());
    }
  if (ready & 4u)
    while (auto p = world_.TryReceive()) {
      std::lock_guard guard(lock);
      client.OnMessage(Socket::kWorld, p->data, client.LocalNowNs());
    }
  if (drain_extra && (ready >> 3) != 0) drain_extra();
  std::vector<Outgoing> out;
  ServerPorts ports;
  {
    std::lock_guard guard(lock);
    client.Poll(client.LocalNowNs());
    out = client.TakeOutgoing();
    ports = client.Ports();
  }
  Follow(ports);
  Send(std::move(out));
  checkpoint(0);
}

void ClientLink::SendPending(SessionClient& client, std::mutex& lock) {
  std::vector<Outgoing> out;
  {
    std::lock_guard guard(lock);
    out = client.TakeOutgoing();
  }
  Send(std::move(out));
}

void ClientLink::Flush(SessionClient& client, std::mutex& lock, int linger_ms) {
  SendPending(client, lock);
  // Give ZeroMQ a moment to put the last messages on the wire before the context closes.
  control_.Socket().set(zmq::sockopt::linger, linger_ms);
  state_.Socket().set(zmq::sockopt::linger, linger_ms);
}

}  // namespace platoon::session
