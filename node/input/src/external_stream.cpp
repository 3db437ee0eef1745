#include "platoon/input/external_stream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace platoon::input {
namespace {

// Little-endian field access (the project builds for little-endian hosts; memcpy keeps it alignment-safe).
template <typename T>
T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void Write(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

bool CheckRange(const char* name, double v, double lo, double hi, std::string& error) {
  if (!std::isfinite(v)) {
    error = std::string(name) + " not finite";
    return false;
  }
  if (v < lo || v > hi) {
    error = std::string(name) + " " + std::to_string(v) + " not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  return true;
}

bool CheckHeader(const uint8_t* data, size_t size, size_t expected, const char* magic, std::string& error) {
  if (size != expected) {
    error = "size " + std::to_string(size) + ", expected " + std::to_string(expected);
    return false;
  }
  if (std::memcmp(data, magic, 4) != 0) {
    error = std::string("magic: expected \"") + magic + "\"";
    return false;
  }
  return true;
}

sockaddr_in Address(const std::string& address, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("stream address \"" + address + "\": expected an IPv4 address such as 127.0.0.1 or 0.0.0.0");
  return a;
}

}  // namespace

std::optional<ControlDatagram> DecodeControl(const uint8_t* data, size_t size, std::string& error) {
  if (!CheckHeader(data, size, kControlDatagramBytes, "PLC1", error)) return std::nullopt;
  ControlDatagram c;
  c.seq = Read<uint32_t>(data + 4);
  c.sent_ns = Read<int64_t>(data + 8);
  c.steer = Read<double>(data + 16);
  c.throttle = Read<double>(data + 24);
  c.brake = Read<double>(data + 32);
  if (!CheckRange("steer", c.steer, -1, 1, error) || !CheckRange("throttle", c.throttle, 0, 1, error) ||
      !CheckRange("brake", c.brake, 0, 1, error))
    return std::nullopt;
  return c;
}

std::optional<PoseDatagram> DecodePose(const uint8_t* data, size_t size, std::string& error) {
  if (!CheckHeader(data, size, kPoseDatagramBytes, "PLP1", error)) return std::nullopt;
  PoseDatagram p;
  p.seq = Read<uint32_t>(data + 4);
  p.sent_ns = Read<int64_t>(data + 8);
  double v[6];
  for (int i = 0; i < 6; ++i) v[i] = Read<double>(data + 16 + 8 * i);
  const char* names[6] = {"x", "y", "z", "yaw", "pitch", "roll"};
  for (int i = 0; i < 6; ++i)
    if (!CheckRange(names[i], v[i], i < 3 ? -2.0 : -M_PI, i < 3 ? 2.0 : M_PI, error)) return std::nullopt;
  p.x_m = v[0], p.y_m = v[1], p.z_m = v[2], p.yaw_rad = v[3], p.pitch_rad = v[4], p.roll_rad = v[5];
  return p;
}

std::vector<uint8_t> EncodeControl(const ControlDatagram& c) {
  std::vector<uint8_t> out = {'P', 'L', 'C', '1'};
  Write(out, c.seq);
  Write(out, c.sent_ns);
  Write(out, c.steer);
  Write(out, c.throttle);
  Write(out, c.brake);
  return out;
}

std::vector<uint8_t> EncodePose(const PoseDatagram& p) {
  std::vector<uint8_t> out = {'P', 'L', 'P', '1'};
  Write(out, p.seq);
  Write(out, p.sent_ns);
  for (double v : {p.x_m, p.y_m, p.z_m, p.yaw_rad, p.pitch_rad, p.roll_rad}) Write(out, v);
  return out;
}

int64_t RealtimeNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

StreamSocket::StreamSocket(const std::string& address, uint16_t port) : port_(port) {
  const sockaddr_in a = Address(address, port);
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("stream socket: ") + std::strerror(errno));
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    throw std::runtime_error("stream socket: cannot bind udp://" + address + ":" + std::to_string(port) + ": " + why);
  }
}

StreamSocket::~StreamSocket() {
  if (fd_ >= 0) close(fd_);
}

bool StreamSocket::Receive(std::vector<uint8_t>& buffer) {
  buffer.resize(512);
  const ssize_t n = recv(fd_, buffer.data(), buffer.size(), 0);
  if (n < 0) {
    buffer.clear();
    return false;
  }
  buffer.resize(static_cast<size_t>(n));
  return true;
}

bool SendDatagram(const std::string& address, uint16_t port, const std::vector<uint8_t>& bytes) {
  const sockaddr_in a = Address(address, port);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const ssize_t n = sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  close(fd);
  return n == static_cast<ssize_t>(bytes.size());
}

}  // namespace platoon::input
