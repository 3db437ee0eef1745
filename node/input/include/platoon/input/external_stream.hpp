#pragma once
/// External streams (docs/PROTOCOL.md, "External streams"; docs/INPUTS.md, "Stream input"): UDP
/// datagrams from another process (an ADAS stack, a driver model, a head tracker, a Python script) with
/// a small fixed little-endian layout. The decoders are pure; StreamSocket is the thin shell around one
/// non-blocking UDP socket bound by the node.
///
/// Control datagram (40 bytes): "PLC1", uint32 seq, int64 sent_ns, float64 steer (-1 .. 1 of full lock,
/// left positive), float64 throttle (0 .. 1), float64 brake (0 .. 1).
/// Pose datagram (64 bytes): "PLP1", uint32 seq, int64 sent_ns, float64 x, y, z (m, seat frame: x
/// forward, y left, z up, offset from the configured eye point), float64 yaw, pitch, roll (rad).
/// sent_ns: the sender's CLOCK_REALTIME in ns (Python: time.time_ns()), used for the latency figures
/// only; 0 when the sender has no synchronized clock.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace platoon::input {

constexpr size_t kControlDatagramBytes = 40;
constexpr size_t kPoseDatagramBytes = 64;

/// One command of the control stream.
struct ControlDatagram {
  uint32_t seq = 0;
  int64_t sent_ns = 0;
  double steer = 0, throttle = 0, brake = 0;
};

/// One pose of the pose stream: the eye's offset from its rest point, in the seat frame.
struct PoseDatagram {
  uint32_t seq = 0;
  int64_t sent_ns = 0;
  double x_m = 0, y_m = 0, z_m = 0;
  double yaw_rad = 0, pitch_rad = 0, roll_rad = 0;
};

/// Decodes a control datagram; nullopt with `error` set ("size 12, expected 40", "magic", "throttle
/// 1.5 not in [0, 1]", "steer not finite") when it is not one.
std::optional<ControlDatagram> DecodeControl(const uint8_t* data, size_t size, std::string& error);
/// Decodes a pose datagram; position within +-2 m and angles within +-pi, finite, else nullopt with `error`.
std::optional<PoseDatagram> DecodePose(const uint8_t* data, size_t size, std::string& error);
/// The datagrams' bytes (senders, tests).
std::vector<uint8_t> EncodeControl(const ControlDatagram& c);
std::vector<uint8_t> EncodePose(const PoseDatagram& p);

/// Whether sequence number `a` is newer than `b` (serial-number arithmetic, so it wraps at 2^32).
inline bool SeqNewer(uint32_t a, uint32_t b) { return a != b && static_cast<uint32_t>(a - b) < 0x80000000u; }

/// CLOCK_REALTIME in ns: the clock of sent_ns.
int64_t RealtimeNowNs();

/// One non-blocking UDP socket bound to `address`:`port` (IPv4). Throws std::runtime_error naming the
/// address when it cannot bind.
class StreamSocket {
 public:
  StreamSocket(const std::string& address, uint16_t port);
  ~StreamSocket();
  StreamSocket(const StreamSocket&) = delete;
  StreamSocket& operator=(const StreamSocket&) = delete;
  /// Reads one waiting datagram into `buffer` (resized to what came, at most 512 bytes: longer ones are
  /// truncated and then refused by the size check); false when none waits.
  bool Receive(std::vector<uint8_t>& buffer);
  uint16_t Port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

/// Sends one datagram to `address`:`port` (senders, tests); false on error.
bool SendDatagram(const std::string& address, uint16_t port, const std::vector<uint8_t>& bytes);

}  // namespace platoon::input
