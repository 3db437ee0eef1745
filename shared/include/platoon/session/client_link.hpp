#pragma once
/// The one socket loop around a SessionClient, shared by platoon-node, platoon-viewer and every other
/// client: four ZeroMQ sockets (control DEALER, time DEALER, world SUB, state PUSH) that follow the
/// ports the server announces, one wait over them and the caller's extra sockets, and the hand-over of
/// what arrived and what to send. The core does the thinking; this does the I/O.

#include "platoon/clock/stall_watch.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/transport/fault_injector.hpp"

#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace platoon::session {

/// Sockets of one session client.
class ClientLink {
 public:
  /// Connects the control socket to `server_host`:`control_port`; the others follow the Welcome. With
  /// `curve`, every socket is a CURVE client of the server (config::LoadClientCurve).
  ClientLink(zmq::context_t& context, std::string server_host, uint16_t control_port, const transport::FaultDef& faults,
             const std::optional<transport::CurveDef>& curve = std::nullopt);

  /// One turn: waits at most `max_wait_ns` (less when the client has timed work due) for input on the
  /// session sockets or `extra`, hands what arrived to `client` (time replies stamped first), calls
  /// `drain_extra` for the caller's sockets, polls the client and sends what it queued. Every call
  /// into `client` holds `lock`.
  void Turn(SessionClient& client, std::mutex& lock, std::span<transport::Channel* const> extra, int64_t max_wait_ns,
            const std::function<void()>& drain_extra = {});

  /// Sends what the client queued now, without waiting for input (e.g. a lock-step acknowledgement).
  void SendPending(SessionClient& client, std::mutex& lock);

  /// Sends what the client queued (e.g. a Leave) and waits up to `linger_ms` for it to leave (the wait
  /// ends as soon as it has left; on a loaded machine ZeroMQ's I/O thread may need most of a second).
  void Flush(SessionClient& client, std::mutex& lock, int linger_ms = 1000);

  /// "tcp://host:port" of the server's control socket.
  const std::string& ControlEndpoint() const { return control_endpoint_; }

  /// How far this loop fell behind: the largest time beyond the asked wait between two checkpoints of a
  /// turn (or between two turns), and how many of those were stalls forgiven to the client.
  const clock::StallWatch& Stalls() const { return stalls_; }

  /// Replaces the receive-path faults of the control, time and world sockets (a live parameter).
  void SetFaults(const transport::FaultDef& faults);

 private:
  void Follow(const ServerPorts& ports);
  void Send(std::vector<Outgoing> out);

  std::string host_, control_endpoint_;
  transport::Channel control_, time_, world_, state_;
  ServerPorts connected_;
  /// A turn, its wait or the time between two turns this much longer than asked for: the process was not
  /// running.
  clock::StallWatch stalls_{250'000'000};
};

}  // namespace platoon::session
