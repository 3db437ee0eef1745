#pragma once
/// What ZeroMQ tells about a socket's connections that no message carries: handshakes that failed before
/// any message or ZAP request (a plain socket at a CURVE port, a client with a wrong server key), read
/// without blocking from the socket's monitor (zmq_socket_monitor, libzmq >= 4.3).

#include <zmq.hpp>

#include <cstdint>
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

/// Watches one socket's handshakes. Not thread-safe: use from the socket's thread.
class SocketMonitor {
 public:
  /// Starts monitoring `socket` (which must outlive this) through an inproc PAIR of `context`; `name` makes
  /// the inproc endpoint unique within the context ("world", "control"). Throws zmq::error_t.
  SocketMonitor(zmq::context_t& context, zmq::socket_t& socket, const std::string& name);
  ~SocketMonitor();
  SocketMonitor(const SocketMonitor&) = delete;
  SocketMonitor& operator=(const SocketMonitor&) = delete;

  /// The handshake failures reported since the last call, at most `max_events` of them (the rest wait for
  /// the next call). Never blocks.
  std::vector<HandshakeError> TakeFailures(int max_events = 256);

 private:
  zmq::socket_t& watched_;
  zmq::socket_t pair_;
};

}  // namespace platoon::transport
