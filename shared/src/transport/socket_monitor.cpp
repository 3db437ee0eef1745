#include "platoon/transport/socket_monitor.hpp"

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
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

constexpr int kConnectionEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED;

// "address:port" of the peer of TCP socket `fd`; "" when it has none (closed, not IP).
std::string PeerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return {};
}

}  // namespace

SocketMonitor::SocketMonitor(zmq::context_t& context, zmq::socket_t& socket, const std::string& name,
                             bool track_connections)
    : watched_(socket), pair_(context, zmq::socket_type::pair), track_(track_connections) {
  const std::string endpoint = "inproc://platoon.monitor." + name;
  const int events = kHandshakeEvents | (track_ ? kConnectionEvents : 0);
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), events) != 0) throw zmq::error_t();
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
    // The value of these three is the connection's file descriptor.
    if (track_ && event == ZMQ_EVENT_ACCEPTED) connections_[static_cast<int>(value)] = PeerOf(static_cast<int>(value));
    if (track_ && (event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_CLOSED)) connections_.erase(static_cast<int>(value));
  }
  return failures;
}

std::vector<TalkerCut> SocketMonitor::DropTalkers(uint64_t max_bytes) {
  std::vector<TalkerCut> cuts;
  for (auto it = connections_.begin(); it != connections_.end();) {
    const int fd = it->first;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received ||
        info.tcpi_bytes_received <= max_bytes) {
      ++it;
      continue;
    }
    // The descriptor is still the connection accepted (not closed and reused since): the same peer.
    if (PeerOf(fd) == it->second && !it->second.empty() && ::shutdown(fd, SHUT_RDWR) == 0)
      cuts.push_back(TalkerCut{it->second, info.tcpi_bytes_received});
    it = connections_.erase(it);
  }
  return cuts;
}

}  // namespace platoon::transport
