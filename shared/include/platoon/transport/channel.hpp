#pragma once
/// A thin layer over cppzmq for the socket patterns platoon uses (docs/PROTOCOL.md "Sockets"):
/// ROUTER/DEALER for control and time, PUB/SUB for world state, PUSH/PULL for node state upstream.
/// Every received message passes through the channel's FaultInjector. Sends never block.

#include "platoon/transport/fault_injector.hpp"
#include "platoon/transport/security.hpp"
#include "platoon/transport/shared_bytes.hpp"

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>
#include <span>
#include <string>

namespace platoon::transport {

/// Socket pattern of a channel.
enum class Pattern : uint8_t { kRouter, kDealer, kPub, kSub, kPush, kPull };

/// One message: the payload and, on a ROUTER, the peer identity it came from or goes to.
struct Packet {
  std::string peer;  ///< ROUTER peer identity; empty on other patterns.
  std::string data;  ///< Payload bytes (an encoded Envelope); empty when `shared` holds them.
  std::string peer_address{};  ///< Received on a TCP ROUTER: the peer's IP address as this host sees it.
  std::string user_id{};     ///< Received with CURVE on: the ZAP user id (the client key's name); else empty.
  /// A large received message kept in its ZeroMQ buffer, uncopied (ChannelDef::share_from_bytes).
  SharedBytes shared{};

  /// The payload, wherever it is held.
  std::string_view Payload() const { return shared.owner ? shared.view : std::string_view(data); }
  /// The payload as SharedBytes (a string payload is moved into it).
  SharedBytes TakePayload() { return shared.owner ? std::move(shared) : SharedBytes(std::move(data)); }
};

/// Socket settings.
struct ChannelDef {
  int send_hwm = 1000;                     ///< Messages queued per peer before sends are dropped.
  int receive_hwm = 1000;                  ///< Messages queued on receive before the peer's are dropped.
  int64_t max_message_bytes = 64 << 20;    ///< Larger incoming messages close the connection (kPub: at most kPubMaxInboundBytes).
  int reconnect_interval_ms = 100;         ///< DEALER/SUB/PUSH reconnect interval.
  FaultDef faults{};                       ///< Receive-path faults.
  /// CURVE encryption and authentication (docs/PROTOCOL.md "Security"); nullopt: plain TCP. A server
  /// socket needs a ZapHandler in its context, or ZeroMQ admits every client key.
  std::optional<CurveDef> curve{};
  /// Received messages (not on a ROUTER) of at least this many bytes stay in ZeroMQ's buffer and come out
  /// in Packet::shared instead of being copied into Packet::data; 0: every message is copied. For streams
  /// of megabyte messages (point clouds), where the copy is on the latency path.
  size_t share_from_bytes = 0;
  /// Which of the context's I/O threads serve this socket's connections (ZMQ_AFFINITY: bit k is thread k);
  /// 0: any. The server gives its world broadcast a thread of its own, so that writing one broadcast to
  /// hundreds of subscribers never holds up the states and time requests arriving meanwhile.
  uint64_t io_affinity = 0;
};

/// Sends of at least this many bytes from an rvalue string hand the string itself to ZeroMQ (no copy); also
/// the receive threshold the node's data sockets use (ChannelDef::share_from_bytes).
inline constexpr size_t kZeroCopySendBytes = 64 * 1024;

/// Largest message a PUB channel accepts from a subscriber, in bytes; a larger one closes that connection
/// before ZeroMQ buffers it. A subscriber sends only subscriptions (1 byte + topic; platoon subscribes to
/// the empty topic, 1 byte) and its handshake, of which a CURVE INITIATE (about 300 bytes) is the largest.
/// Overrides a larger ChannelDef::max_message_bytes on kPub: a 32 MiB subscription frame once cost the
/// server 2.95 GB and a 7.8 s stall.
inline constexpr int64_t kPubMaxInboundBytes = 512;

/// Counters of a channel.
struct ChannelStats {
  uint64_t sent = 0;          ///< Messages handed to ZeroMQ.
  uint64_t send_dropped = 0;  ///< Sends that would have blocked (no peer, queue full): dropped.
  uint64_t received = 0;      ///< Messages read from the socket (before faults).
  uint64_t malformed = 0;     ///< Multipart shapes this pattern never produces, dropped.
};

/// One socket with its fault injector. Not thread-safe: use from one thread.
class Channel {
 public:
  Channel(zmq::context_t& context, Pattern pattern, const ChannelDef& def = ChannelDef{});

  /// Binds, e.g. "tcp://*:7400" or "tcp://127.0.0.1:*"; returns the endpoint actually bound.
  std::string Bind(const std::string& endpoint);
  /// Connects, e.g. "tcp://10.0.0.1:7400".
  void Connect(const std::string& endpoint);
  /// Disconnects from an endpoint given to Connect().
  void Disconnect(const std::string& endpoint);

  /// Sends without blocking; returns false (and counts) when the message had to be dropped.
  bool Send(const Packet& packet);
  /// Sends a payload (no peer) without blocking.
  bool Send(std::string_view data);
  /// Same; a payload of kZeroCopySendBytes or more (not on a ROUTER) is handed to ZeroMQ without a copy
  /// and freed when sent or dropped.
  bool Send(std::string&& data);

  /// Returns a received message that is due, without blocking.
  std::optional<Packet> TryReceive();
  /// Waits up to `timeout` for a message.
  std::optional<Packet> Receive(std::chrono::nanoseconds timeout);

  /// Replaces the receive-path faults (resets the injector's state and counters).
  void SetFaults(const FaultDef& faults);

  Pattern GetPattern() const { return pattern_; }
  const ChannelStats& Stats() const { return stats_; }
  const FaultStats& Faults() const { return injector_.Stats(); }
  /// The underlying socket, for polling.
  zmq::socket_t& Socket() { return socket_; }

  /// Local time (CLOCK_MONOTONIC) at which the injector next releases a message, if any.
  std::optional<int64_t> NextDueNs() const { return injector_.NextDueNs(); }

 private:
  friend uint64_t WaitAny(std::span<Channel* const>, std::chrono::nanoseconds);
  void Drain();
  bool SendBody(zmq::message_t& body);

  Pattern pattern_;
  zmq::socket_t socket_;
  FaultInjector<Packet> injector_;
  ChannelStats stats_;
  bool curve_server_ = false;  // received messages carry the ZAP user id
  size_t share_from_bytes_ = 0;
};

/// Blocks until any channel may have a message for TryReceive(), or `timeout` passes. Returns a mask:
/// bit i set when channel i has input or a fault-delayed message due (all bits after an interrupted wait).
uint64_t WaitAny(std::span<Channel* const> channels, std::chrono::nanoseconds timeout);

/// "tcp://host:port"; port 0 gives "tcp://host:*", which binds to a free port.
std::string TcpEndpoint(const std::string& host, uint16_t port);

/// Port of an endpoint such as "tcp://127.0.0.1:7400" (0 if it has none).
uint16_t PortOf(const std::string& endpoint);

/// `count` free TCP ports on 127.0.0.1, bound together and released (good enough for a test's or a
/// benchmark's lifetime; another process may take one in between).
std::vector<uint16_t> FreeLoopbackPorts(int count);

/// CLOCK_MONOTONIC in ns, the transport's time base for fault scheduling.
int64_t MonotonicNowNs();

}  // namespace platoon::transport
