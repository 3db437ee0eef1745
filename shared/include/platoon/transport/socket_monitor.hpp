#pragma once
/// What ZeroMQ tells about a socket's connections that no message carries: handshakes that failed before
/// any message or ZAP request (a plain socket at a CURVE port, a client with a wrong server key), read
/// without blocking from the socket's monitor (zmq_socket_monitor, libzmq >= 4.3).

#include <zmq.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace platoon::transport {

/// Why a handshake failed, from the monitor's event and its protocol error.
enum class HandshakeError : uint8_t {
  kMechanism,  ///< The peer speaks another security mechanism (ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH).
  kCrypto,     ///< A CURVE box did not open or the key exchange failed (a wrong server key).
  kAuth,       ///< The ZAP handler refused the peer (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH).
  kProtocol,   ///< Any other protocol error, or a failure without detail.
};

/// A connection cut by SocketMonitor::DropTalkers.
struct TalkerCut {
  std::string peer;    ///< "address:port" of the peer.
  uint64_t bytes = 0;  ///< Bytes it had sent on the connection when it was cut.
};

/// Watches one socket's handshakes and, optionally, its accepted TCP connections. Not thread-safe: use
/// from the socket's thread.
class SocketMonitor {
 public:
  /// Starts monitoring `socket` (which must outlive this) through an inproc PAIR of `context`; `name` makes
  /// the inproc endpoint unique within the context ("world", "control"). With `track_connections`, it also
  /// follows the connections the socket accepts (for DropTalkers). Throws zmq::error_t.
  SocketMonitor(zmq::context_t& context, zmq::socket_t& socket, const std::string& name,
                bool track_connections = false);
  ~SocketMonitor();
  SocketMonitor(const SocketMonitor&) = delete;
  SocketMonitor& operator=(const SocketMonitor&) = delete;

  /// The handshake failures reported since the last call, at most `max_events` of them (the rest wait for
  /// the next call). Never blocks.
  std::vector<HandshakeError> TakeFailures(int max_events = 256);
  /// With track_connections: cuts (shutdown) every accepted TCP connection whose peer has sent more than
  /// `max_bytes` on it (the kernel's count, TCP_INFO), and returns them. ZeroMQ then closes the connection
  /// and forgets what it had stored for it. A publisher's subscribers send their handshake and a
  /// subscription, well under a kilobyte: one that sends more can only grow the publisher's subscription
  /// store (libzmq keeps every topic, even with ZMQ_XPUB_MANUAL). Call TakeFailures first, so that the
  /// connections are current.
  std::vector<TalkerCut> DropTalkers(uint64_t max_bytes);
  /// Accepted connections tracked now.
  size_t Connections() const { return connections_.size(); }

 private:
  zmq::socket_t& watched_;
  zmq::socket_t pair_;
  bool track_ = false;
  std::map<int, std::string> connections_;  // file descriptor -> peer "address:port" at accept
};

}  // namespace platoon::transport
