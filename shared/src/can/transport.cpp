#include "platoon/can/transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/can.h>
#include <linux/can/raw.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace platoon::can {
namespace {

// At most this many datagrams or socket reads per Receive call: a flood of malformed input cannot hold the
// caller's loop; the rest waits for the next call.
constexpr int kMaxReadsPerReceive = 64;
constexpr uint8_t kFlagExtended = 0x01, kFlagFd = 0x02;

// "bus spec \"S\": expected WHAT, got GOT".
[[noreturn]] void SpecFail(const std::string& spec, const std::string& expected, const std::string& got) {
  throw BusError("bus spec \"" + spec + "\": expected " + expected + ", got " + got);
}

bool ParseAddress(const std::string& text, sockaddr_in& out) {
  out = sockaddr_in{};
  out.sin_family = AF_INET;
  return inet_pton(AF_INET, text.c_str(), &out.sin_addr) == 1;
}

// "ADDR:PORT" of a udp spec; `min_port` 0 for the local side (kernel's choice), 1 for the peer.
void ParseEndpoint(const std::string& spec, const std::string& part, const char* side, uint16_t min_port, std::string& address,
                   uint16_t& port) {
  const auto colon = part.rfind(':');
  const std::string what = std::string("the ") + side + " endpoint as IPV4:PORT (e.g. 127.0.0.1:47001)";
  if (colon == std::string::npos) SpecFail(spec, what, "\"" + part + "\"");
  address = part.substr(0, colon);
  sockaddr_in a{};
  if (!ParseAddress(address, a)) SpecFail(spec, std::string("an IPv4 address for the ") + side + " endpoint", "\"" + address + "\"");
  const std::string p = part.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || value < min_port || value > 65535)
    SpecFail(spec, fmt::format("a {} port {}..65535", side, min_port), "\"" + p + "\"");
  port = static_cast<uint16_t>(value);
}

std::string JoinPath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir.back() == '/' ? base_dir + path : base_dir + "/" + path;
}

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// Why a frame cannot go on a bus ("" when it can): its id or length do not fit its format.
std::string FrameProblem(const Frame& f) {
  if (f.id > (f.extended ? kMaxExtendedId : kMaxStandardId))
    return fmt::format("id 0x{:X} over 0x{:X} for {} id", f.id, f.extended ? kMaxExtendedId : kMaxStandardId,
                       f.extended ? "an extended" : "a standard");
  if (!ValidLength(f.fd, f.len)) return fmt::format("len {} not a {} length", f.len, f.fd ? "CAN FD" : "classic CAN");
  return "";
}

}  // namespace

std::vector<uint8_t> EncodeUdpFrame(const Frame& frame) {
  std::vector<uint8_t> out(kUdpHeaderBytes + frame.len);
  std::memcpy(out.data(), "PCAN", 4);
  out[4] = kUdpVersion;
  out[5] = static_cast<uint8_t>((frame.extended ? kFlagExtended : 0) | (frame.fd ? kFlagFd : 0));
  out[6] = frame.len;
  out[7] = 0;
  PutU32(out.data() + 8, frame.id);
  std::copy_n(frame.data.begin(), std::min<size_t>(frame.len, kFdMaxLen), out.begin() + kUdpHeaderBytes);
  return out;
}

std::optional<Frame> DecodeUdpFrame(const uint8_t* data, size_t size, std::string& error) {
  error.clear();
  if (size < kUdpHeaderBytes) {
    error = fmt::format("size {}, expected at least {}", size, kUdpHeaderBytes);
    return std::nullopt;
  }
  if (std::memcmp(data, "PCAN", 4) != 0) {
    error = "magic: expected \"PCAN\"";
    return std::nullopt;
  }
  if (data[4] != kUdpVersion) {
    error = fmt::format("version {}, expected {}", data[4], kUdpVersion);
    return std::nullopt;
  }
  if ((data[5] & ~(kFlagExtended | kFlagFd)) != 0) {
    error = fmt::format("flags 0x{:02X}: unknown bits", data[5]);
    return std::nullopt;
  }
  if (data[7] != 0) {
    error = fmt::format("reserved byte {}, expected 0", data[7]);
    return std::nullopt;
  }
  Frame f;
  f.extended = (data[5] & kFlagExtended) != 0;
  f.fd = (data[5] & kFlagFd) != 0;
  f.len = data[6];
  f.id = GetU32(data + 8);
  if (std::string problem = FrameProblem(f); !problem.empty()) {
    error = problem;
    return std::nullopt;
  }
  if (size != kUdpHeaderBytes + f.len) {
    error = fmt::format("size {}, expected {} for len {}", size, kUdpHeaderBytes + f.len, f.len);
    return std::nullopt;
  }
  std::copy_n(data + kUdpHeaderBytes, f.len, f.data.begin());
  return f;
}

// ---- UdpBus ----

UdpBus::UdpBus(const std::string& local_address, uint16_t local_port, const std::string& peer_address, uint16_t peer_port)
    : Bus(fmt::format("udp:{}:{}>{}:{}", local_address, local_port, peer_address, peer_port)), peer_(sizeof(sockaddr_in)),
      buffer_(kUdpHeaderBytes + kFdMaxLen + 1) {
  sockaddr_in local{}, peer{};
  if (!ParseAddress(local_address, local)) throw BusError(name_ + ": expected an IPv4 local address, got \"" + local_address + "\"");
  if (!ParseAddress(peer_address, peer)) throw BusError(name_ + ": expected an IPv4 peer address, got \"" + peer_address + "\"");
  local.sin_port = htons(local_port);
  peer.sin_port = htons(peer_port);
  std::memcpy(peer_.data(), &peer, sizeof peer);
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw BusError(name_ + ": cannot open a UDP socket: " + std::strerror(errno));
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    throw BusError(name_ + ": cannot bind udp://" + local_address + ":" + std::to_string(local_port) + ": " + why);
  }
  socklen_t len = sizeof local;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
  local_port_ = ntohs(local.sin_port);
}

UdpBus::~UdpBus() {
  if (fd_ >= 0) close(fd_);
}

bool UdpBus::Send(const Frame& frame) {
  if (std::string problem = FrameProblem(frame); !problem.empty()) {
    SendError("send: " + problem);
    return false;
  }
  const std::vector<uint8_t> bytes = EncodeUdpFrame(frame);
  const ssize_t n = sendto(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(peer_.data()),
                           sizeof(sockaddr_in));
  if (n != static_cast<ssize_t>(bytes.size())) {
    // ECONNREFUSED: an earlier datagram found no listener at the peer (loopback reports it); not this one's fault.
    SendError(std::string("send: ") + std::strerror(errno));
    return false;
  }
  ++counters_.sent;
  return true;
}

std::optional<Frame> UdpBus::Receive() {
  for (int i = 0; i < kMaxReadsPerReceive; ++i) {
    const ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
      continue;  // ECONNREFUSED of an earlier send, and the like: nothing to read from it
    }
    std::string error;
    if (auto f = DecodeUdpFrame(buffer_.data(), static_cast<size_t>(n), error)) {
      ++counters_.received;
      return f;
    }
    Reject("datagram refused: " + error);
  }
  return std::nullopt;
}

// ---- SocketCanBus ----

SocketCanBus::SocketCanBus(const std::string& interface) : Bus("socketcan:" + interface) {
  if (interface.empty() || interface.size() >= IFNAMSIZ)
    throw BusError(name_ + ": expected an interface name of 1.." + std::to_string(IFNAMSIZ - 1) + " characters, got \"" + interface + "\"");
  fd_ = socket(PF_CAN, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, CAN_RAW);
  if (fd_ < 0)
    throw BusError(name_ + ": cannot open a raw CAN socket: " + std::strerror(errno) +
                   " (this kernel has no SocketCAN; use a \"udp:\" or \"candump:\" bus)");
  const unsigned index = if_nametoindex(interface.c_str());
  if (index == 0) {
    close(fd_);
    throw BusError(name_ + ": no CAN interface \"" + interface + "\" (e.g. `ip link add dev " + interface +
                   " type vcan && ip link set " + interface + " up`)");
  }
  const int on = 1;
  if (setsockopt(fd_, SOL_CAN_RAW, CAN_RAW_FD_FRAMES, &on, sizeof on) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    throw BusError(name_ + ": CAN FD frames cannot be enabled: " + why);
  }
  sockaddr_can addr{};
  addr.can_family = AF_CAN;
  addr.can_ifindex = static_cast<int>(index);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    throw BusError(name_ + ": cannot bind: " + why);
  }
}

SocketCanBus::~SocketCanBus() {
  if (fd_ >= 0) close(fd_);
}

bool SocketCanBus::Send(const Frame& frame) {
  if (std::string problem = FrameProblem(frame); !problem.empty()) {
    SendError("send: " + problem);
    return false;
  }
  canfd_frame out{};
  out.can_id = frame.id | (frame.extended ? CAN_EFF_FLAG : 0u);
  out.len = frame.len;
  std::copy_n(frame.data.begin(), frame.len, out.data);
  // A classic frame goes as struct can_frame (CAN_MTU), an FD frame as struct canfd_frame (CANFD_MTU).
  const size_t size = frame.fd ? CANFD_MTU : CAN_MTU;
  if (write(fd_, &out, size) != static_cast<ssize_t>(size)) {
    SendError(std::string("send: ") + std::strerror(errno));
    return false;
  }
  ++counters_.sent;
  return true;
}

std::optional<Frame> SocketCanBus::Receive() {
  for (int i = 0; i < kMaxReadsPerReceive; ++i) {
    canfd_frame in{};
    const ssize_t n = read(fd_, &in, sizeof in);
    if (n < 0) return std::nullopt;
    if (n != CAN_MTU && n != CANFD_MTU) {
      Reject(fmt::format("read of {} bytes, expected {} or {}", n, CAN_MTU, CANFD_MTU));
      continue;
    }
    if (in.can_id & (CAN_RTR_FLAG | CAN_ERR_FLAG)) {
      Reject(in.can_id & CAN_ERR_FLAG ? "error frame" : "remote frame");
      continue;
    }
    Frame f;
    f.extended = (in.can_id & CAN_EFF_FLAG) != 0;
    f.id = in.can_id & (f.extended ? CAN_EFF_MASK : CAN_SFF_MASK);
    f.fd = n == CANFD_MTU;
    f.len = in.len;
    if (std::string problem = FrameProblem(f); !problem.empty()) {
      Reject(problem);
      continue;
    }
    std::copy_n(in.data, f.len, f.data.begin());
    ++counters_.received;
    return f;
  }
  return std::nullopt;
}

// ---- CandumpFileBus ----

CandumpFileBus::CandumpFileBus(const std::string& name, const std::string& replay_path, const std::string& record_path)
    : Bus(name) {
  try {
    if (!replay_path.empty()) replay_ = ReadCandumpLog(replay_path);
    if (!record_path.empty()) writer_ = std::make_unique<CandumpWriter>(record_path);
  } catch (const CandumpError& e) {
    throw BusError(name_ + ": " + e.what());
  }
  // Replayed in time order whatever the file's order (candump of several interfaces may interleave).
  std::stable_sort(replay_.begin(), replay_.end(), [](const LoggedFrame& a, const LoggedFrame& b) { return a.time_ns < b.time_ns; });
}

CandumpFileBus::~CandumpFileBus() {
  if (writer_) writer_->Flush();
}

void CandumpFileBus::SetTimeNs(int64_t sim_ns) {
  if (start_sim_ns_ < 0) start_sim_ns_ = sim_ns;
  sim_ns_ = sim_ns;
}

bool CandumpFileBus::Record(const Frame& frame) {
  if (!writer_) return true;
  LoggedFrame logged;
  logged.time_ns = sim_ns_;
  logged.frame = frame;
  if (writer_->Append(logged)) return true;
  SendError("record: write failed");
  return false;
}

bool CandumpFileBus::Send(const Frame& frame) {
  if (std::string problem = FrameProblem(frame); !problem.empty()) {
    SendError("send: " + problem);
    return false;
  }
  if (!Record(frame)) return false;
  ++counters_.sent;
  return true;
}

std::optional<Frame> CandumpFileBus::Receive() {
  if (next_ >= replay_.size() || start_sim_ns_ < 0) return std::nullopt;
  // Due when its offset from the log's first frame has passed since the first sim time given.
  if (replay_[next_].time_ns - replay_.front().time_ns > sim_ns_ - start_sim_ns_) return std::nullopt;
  const Frame f = replay_[next_++].frame;
  ++counters_.received;
  Record(f);
  return f;
}

// ---- Specs ----

BusSpec ParseBusSpec(const std::string& spec, const std::string& base_dir) {
  BusSpec s;
  const auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? spec : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "udp") {
    s.kind = BusSpec::Kind::kUdp;
    const auto arrow = rest.find('>');
    if (arrow == std::string::npos)
      SpecFail(spec, "udp:LOCAL_IPV4:PORT>PEER_IPV4:PORT (e.g. udp:127.0.0.1:47001>127.0.0.1:47002)", "no '>'");
    ParseEndpoint(spec, rest.substr(0, arrow), "local", 0, s.local_address, s.local_port);
    ParseEndpoint(spec, rest.substr(arrow + 1), "peer", 1, s.peer_address, s.peer_port);
  } else if (kind == "socketcan") {
    s.kind = BusSpec::Kind::kSocketCan;
    if (rest.empty() || rest.size() >= IFNAMSIZ || rest.find_first_of("/ >:") != std::string::npos)
      SpecFail(spec, "socketcan:IFNAME with an interface name of 1..15 characters (e.g. socketcan:can0)", "\"" + rest + "\"");
    s.interface = rest;
  } else if (kind == "candump") {
    s.kind = BusSpec::Kind::kCandump;
    const auto arrow = rest.find('>');
    s.replay_path = JoinPath(base_dir, rest.substr(0, arrow));
    if (arrow != std::string::npos) {
      s.record_path = JoinPath(base_dir, rest.substr(arrow + 1));
      if (s.record_path.empty()) SpecFail(spec, "a record file after '>' (candump:REPLAY.log>RECORD.log)", "none");
    }
    if (s.replay_path.empty() && s.record_path.empty())
      SpecFail(spec, "candump:REPLAY.log, candump:>RECORD.log or candump:REPLAY.log>RECORD.log", "no file");
  } else {
    SpecFail(spec, "a bus kind \"udp:\", \"socketcan:\" or \"candump:\"", "\"" + kind + "\"");
  }
  return s;
}

std::unique_ptr<Bus> OpenBus(const std::string& spec, const std::string& base_dir) {
  const BusSpec s = ParseBusSpec(spec, base_dir);
  switch (s.kind) {
    case BusSpec::Kind::kUdp: return std::make_unique<UdpBus>(s.local_address, s.local_port, s.peer_address, s.peer_port);
    case BusSpec::Kind::kSocketCan: return std::make_unique<SocketCanBus>(s.interface);
    case BusSpec::Kind::kCandump: return std::make_unique<CandumpFileBus>(spec, s.replay_path, s.record_path);
  }
  throw BusError("bus spec \"" + spec + "\": unknown kind");
}

}  // namespace platoon::can
