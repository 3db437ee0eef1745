#include "platoon/transport/channel.hpp"
#include "platoon/transport/send_shared.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <stdexcept>
#include <vector>

namespace platoon::transport {
namespace {

zmq::socket_type ToZmq(Pattern p) {
  switch (p) {
    case Pattern::kRouter: return zmq::socket_type::router;
    case Pattern::kDealer: return zmq::socket_type::dealer;
    case Pattern::kPub: return zmq::socket_type::pub;
    case Pattern::kSub: return zmq::socket_type::sub;
    case Pattern::kPush: return zmq::socket_type::push;
    case Pattern::kPull: return zmq::socket_type::pull;
  }
  return zmq::socket_type::pair;
}

// The ZAP handler's user id (the client key's name); empty if the message has none.
std::string UserIdOf(zmq::message_t& message) {
  const char* id = zmq_msg_gets(message.handle(), "User-Id");
  return id ? std::string(id) : std::string();
}

}  // namespace

std::string TcpEndpoint(const std::string& host, uint16_t port) {
  return "tcp://" + host + ":" + (port == 0 ? std::string("*") : std::to_string(port));
}

uint16_t PortOf(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) return 0;
  try {
    return static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1)));
  } catch (const std::exception&) {
    return 0;
  }
}

int64_t MonotonicNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Channel::Channel(zmq::context_t& context, Pattern pattern, const ChannelDef& def)
    : pattern_(pattern), socket_(context, ToZmq(pattern)), injector_(def.faults),
      share_from_bytes_(pattern == Pattern::kRouter ? 0 : def.share_from_bytes) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, def.send_hwm);
  socket_.set(zmq::sockopt::rcvhwm, def.receive_hwm);
  // A PUB socket receives nothing but subscriptions: a peer's large frame closes its connection unbuffered.
  socket_.set(zmq::sockopt::maxmsgsize, pattern == Pattern::kPub ? std::min(def.max_message_bytes, kPubMaxInboundBytes)
                                                                 : def.max_message_bytes);
  socket_.set(zmq::sockopt::reconnect_ivl, def.reconnect_interval_ms);
  if (def.io_affinity != 0) socket_.set(zmq::sockopt::affinity, def.io_affinity);
  if (pattern == Pattern::kSub) socket_.set(zmq::sockopt::subscribe, "");
  // Outgoing queues only to live connections: a dead peer costs a dropped message, never memory.
  if (pattern == Pattern::kDealer || pattern == Pattern::kPush) socket_.set(zmq::sockopt::immediate, 1);
  if (pattern == Pattern::kRouter) socket_.set(zmq::sockopt::router_handover, 1);
  // CURVE before any bind or connect: the handshake of every connection uses it.
  if (def.curve) {
    const CurveDef& c = *def.curve;
    auto set_key = [&](int option, const std::string& z85) {
      const std::string bin = DecodeKey(z85);
      if (zmq_setsockopt(socket_.handle(), option, bin.data(), bin.size()) != 0) throw zmq::error_t();
    };
    if (c.server) {
      socket_.set(zmq::sockopt::curve_server, 1);
      socket_.set(zmq::sockopt::zap_domain, "platoon");
      set_key(ZMQ_CURVE_SECRETKEY, c.secret_key);
      curve_server_ = true;
    } else {
      set_key(ZMQ_CURVE_SERVERKEY, c.server_key);
      set_key(ZMQ_CURVE_PUBLICKEY, c.public_key);
      set_key(ZMQ_CURVE_SECRETKEY, c.secret_key);
    }
  }
}

std::string Channel::Bind(const std::string& endpoint) {
  socket_.bind(endpoint);
  return socket_.get(zmq::sockopt::last_endpoint);
}

void Channel::Connect(const std::string& endpoint) { socket_.connect(endpoint); }

void Channel::Disconnect(const std::string& endpoint) {
  try {
    socket_.disconnect(endpoint);
  } catch (const zmq::error_t&) {
    // Not connected: nothing to undo.
  }
}

bool Channel::Send(const Packet& packet) {
  try {
    if (pattern_ == Pattern::kRouter) {
      if (!socket_.send(zmq::buffer(packet.peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        ++stats_.send_dropped;
        return false;
      }
    }
    if (!socket_.send(zmq::buffer(packet.data), zmq::send_flags::dontwait)) {
      ++stats_.send_dropped;
      return false;
    }
  } catch (const zmq::error_t&) {
    // EHOSTUNREACH and friends: the peer is gone; the message is dropped like on a LAN.
    ++stats_.send_dropped;
    return false;
  }
  ++stats_.sent;
  return true;
}

bool Channel::SendBody(zmq::message_t& body) {
  try {
    if (socket_.send(body, zmq::send_flags::dontwait)) {
      ++stats_.sent;
      return true;
    }
  } catch (const zmq::error_t&) {
    // The peer is gone: dropped like on a LAN.
  }
  ++stats_.send_dropped;
  return false;
}

bool Channel::Send(std::string_view data) {
  if (pattern_ == Pattern::kRouter) return Send(Packet{{}, std::string(data)});
  zmq::message_t body(data.data(), data.size());
  return SendBody(body);
}

bool Channel::Send(std::string&& data) {
  if (pattern_ == Pattern::kRouter || data.size() < kZeroCopySendBytes) return Send(std::string_view(data));
  // ZeroMQ reads the string in place from its I/O thread and frees it when done (sent or dropped).
  auto* owned = new std::string(std::move(data));
  zmq::message_t body(owned->data(), owned->size(), [](void*, void* s) { delete static_cast<std::string*>(s); }, owned);
  return SendBody(body);
}

void Channel::Drain() {
  const int64_t now = MonotonicNowNs();
  // A bounded batch per call: a peer that sends without pause cannot keep one read going (the server's
  // loop reads a bounded number per socket and turn, then broadcasts).
  constexpr int kMaxDrainPerCall = 64;
  for (int n = 0; n < kMaxDrainPerCall; ++n) {
    zmq::message_t first;
    try {
      if (!socket_.recv(first, zmq::recv_flags::dontwait)) break;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) break;
      throw;
    }
    ++stats_.received;
    Packet packet;
    if (pattern_ == Pattern::kRouter) {
      packet.peer = first.to_string();
      if (!first.more()) {
        ++stats_.malformed;
        continue;
      }
      zmq::message_t body;
      if (!socket_.recv(body, zmq::recv_flags::dontwait)) {
        ++stats_.malformed;
        continue;
      }
      packet.data = body.to_string();
      try {
        packet.peer_address = body.gets("Peer-Address");
      } catch (const zmq::error_t&) {
        // inproc/ipc peers have no address.
      }
      if (curve_server_) packet.user_id = UserIdOf(body);
    } else {
      if (curve_server_) packet.user_id = UserIdOf(first);
      if (share_from_bytes_ > 0 && first.size() >= share_from_bytes_) {
        // Kept in ZeroMQ's buffer: the view points into the message now on the heap.
        auto held = std::make_shared<zmq::message_t>(std::move(first));
        const std::string_view view(static_cast<const char*>(held->data()), held->size());
        packet.shared = SharedBytes(std::move(held), view);
      } else {
        packet.data = first.to_string();
      }
    }
    // Swallow any further frames: platoon messages are single-frame.
    bool extra = false;
    while (socket_.get(zmq::sockopt::rcvmore)) {
      zmq::message_t rest;
      (void)socket_.recv(rest, zmq::recv_flags::dontwait);
      extra = true;
    }
    if (extra) {
      ++stats_.malformed;
      continue;
    }
    injector_.Offer(std::move(packet), now);
  }
}

std::optional<Packet> Channel::TryReceive() {
  // What is already due goes first; the socket is read only when nothing is waiting here.
  if (auto p = injector_.Poll(MonotonicNowNs())) return p;
  Drain();
  return injector_.Poll(MonotonicNowNs());
}

std::optional<Packet> Channel::Receive(std::chrono::nanoseconds timeout) {
  const int64_t deadline = MonotonicNowNs() + timeout.count();
  Channel* self = this;
  while (true) {
    if (auto p = TryReceive()) return p;
    const int64_t left = deadline - MonotonicNowNs();
    if (left <= 0) return std::nullopt;
    WaitAny(std::span<Channel* const>(&self, 1), std::chrono::nanoseconds(left));
  }
}

void Channel::SetFaults(const FaultDef& faults) { injector_ = FaultInjector<Packet>(faults); }

uint64_t WaitAny(std::span<Channel* const> channels, std::chrono::nanoseconds timeout) {
  int64_t wait_ns = timeout.count();
  const int64_t now = MonotonicNowNs();
  uint64_t due_mask = 0;
  std::vector<zmq::pollitem_t> items;
  items.reserve(channels.size());
  for (size_t i = 0; i < channels.size(); ++i) {
    Channel* c = channels[i];
    // A message already due in an injector means no wait at all.
    if (auto due = c->NextDueNs()) {
      wait_ns = std::min(wait_ns, std::max<int64_t>(0, *due - now));
      if (*due <= now && i < 64) due_mask |= uint64_t{1} << i;
    }
    items.push_back(zmq::pollitem_t{c->Socket().handle(), 0, ZMQ_POLLIN, 0});
  }
  // zmq::poll takes milliseconds; round up so that short waits still sleep. A zero wait still polls,
  // so that the caller learns which channels have input.
  const auto ms = std::chrono::milliseconds(wait_ns <= 0 ? 0 : (wait_ns + 999'999) / 1'000'000);
  try {
    zmq::poll(items.data(), items.size(), ms);
  } catch (const zmq::error_t& e) {
    // A signal (Ctrl-C, SIGTERM) interrupts the wait; the caller's loop checks its stop flag.
    if (e.num() != EINTR) throw;
    return ~uint64_t{0};
  }
  uint64_t ready = due_mask;
  for (size_t i = 0; i < items.size() && i < 64; ++i)
    if (items[i].revents & ZMQ_POLLIN) ready |= uint64_t{1} << i;
  // Channels past the 64th are always reported, so they are never starved.
  if (channels.size() > 64) ready |= ~uint64_t{0};
  return ready;
}

std::vector<uint16_t> FreeLoopbackPorts(int count) {
  zmq::context_t ctx(1);
  std::vector<zmq::socket_t> socks;
  std::vector<uint16_t> ports;
  // All bound at once, so the OS hands out distinct ports.
  for (int i = 0; i < count; ++i) {
    socks.emplace_back(ctx, zmq::socket_type::pull);
    socks.back().set(zmq::sockopt::linger, 0);
    socks.back().bind("tcp://127.0.0.1:*");
    ports.push_back(PortOf(socks.back().get(zmq::sockopt::last_endpoint)));
  }
  return ports;
}

bool SendShared(Channel& channel, std::string_view data, std::shared_ptr<const void> owner) {
  if (channel.GetPattern() == Pattern::kRouter) throw std::logic_error("transport::SendShared: not on a ROUTER (no peer frame)");
  // The hint owns a reference until ZeroMQ calls the free function (from its I/O thread, or right here
  // when the message is dropped); the bytes stay alive and unchanged until then.
  auto* hint = new std::shared_ptr<const void>(std::move(owner));
  zmq::message_t message(const_cast<char*>(data.data()), data.size(),
                         [](void*, void* h) { delete static_cast<std::shared_ptr<const void>*>(h); }, hint);
  try {
    return channel.Socket().send(message, zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;  // the peer is gone: dropped like on a LAN
  }
}

}  // namespace platoon::transport
