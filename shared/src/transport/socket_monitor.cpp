#include "platoon/transport/socket_monitor.hpp"

#include <cstring>

namespace platoon::transport {
namespace {

constexpr int kHandshakeEvents =
    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

HandshakeError Classify(uint16_t event, uint32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) return HandshakeError::kAuth;
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) return HandshakeError::kMechanism;
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC || value == ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE)
      return HandshakeError::kCrypto;
    // ZAP errors arrive as protocol errors when the handler's reply is bad: the handler refused.
    if ((value & 0xf0000000u) == 0x20000000u) return HandshakeError::kAuth;
  }
  return HandshakeError::kProtocol;
}

}  // namespace

SocketMonitor::SocketMonitor(zmq::context_t& context, zmq::socket_t& socket, const std::string& name)
    : watched_(socket), pair_(context, zmq::socket_type::pair) {
  const std::string endpoint = "inproc://platoon.monitor." + name;
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), kHandshakeEvents) != 0) throw zmq::error_t();
  // ZeroMQ's I/O thread writes events with a blocking send: an unbounded receive queue keeps a burst of
  // failed handshakes (a peer reconnecting without pause) from ever holding that thread up. The loop
  // reads the events every turn, so the queue stays short.
  pair_.set(zmq::sockopt::rcvhwm, 0);
  pair_.set(zmq::sockopt::linger, 0);
  pair_.connect(endpoint);
}

SocketMonitor::~SocketMonitor() { (void)zmq_socket_monitor(watched_.handle(), nullptr, 0); }

std::vector<HandshakeError> SocketMonitor::TakeFailures(int max_events) {
  std::vector<HandshakeError> failures;
  for (int n = 0; n < max_events; ++n) {
    // Version 1 events: the event and its value in one frame, then the endpoint.
    zmq::message_t head;
    if (!pair_.recv(head, zmq::recv_flags::dontwait)) break;
    zmq::message_t endpoint;
    if (head.more()) (void)pair_.recv(endpoint, zmq::recv_flags::dontwait);
    if (head.size() < 6) continue;
    uint16_t event = 0;
    uint32_t value = 0;
    std::memcpy(&event, head.data(), sizeof event);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, sizeof value);
    if (event & kHandshakeEvents) failures.push_back(Classify(event, value));
  }
  return failures;
}

}  // namespace platoon::transport
