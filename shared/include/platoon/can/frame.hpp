#pragma once
/// One CAN or CAN FD frame as every part of platoon's CAN support passes it around: the DBC codec
/// (dbc.hpp), the candump log, the UDP and SocketCAN transports and the `can` role. Plain data.

#include <array>
#include <cstdint>

namespace platoon::can {

/// Largest payload of a classic CAN frame, in bytes.
inline constexpr uint8_t kClassicMaxLen = 8;
/// Largest payload of a CAN FD frame, in bytes.
inline constexpr uint8_t kFdMaxLen = 64;
/// Largest standard (11-bit) identifier.
inline constexpr uint32_t kMaxStandardId = 0x7FF;
/// Largest extended (29-bit) identifier.
inline constexpr uint32_t kMaxExtendedId = 0x1FFFFFFF;

/// A CAN frame: identifier, format and payload. Bytes past `len` are zero.
struct Frame {
  uint32_t id = 0;        ///< Identifier without flags: 11 bits (standard) or 29 bits (extended).
  bool extended = false;  ///< 29-bit identifier (CAN 2.0B) rather than 11-bit.
  bool fd = false;        ///< CAN FD frame (payload up to 64 bytes) rather than classic CAN (up to 8).
  uint8_t len = 0;        ///< Payload length, in bytes: 0..8 classic; 0..8, 12, 16, 20, 24, 32, 48, 64 FD.
  std::array<uint8_t, kFdMaxLen> data{};  ///< Payload; data[0] is the first byte on the bus.
  /// Exact equality of every field (payload compared over all 64 bytes).
  bool operator==(const Frame&) const = default;
};

/// True when `len` is a payload length the frame's format allows (see Frame::len).
bool ValidLength(bool fd, uint8_t len);

/// The smallest CAN FD payload length that holds `bytes` bytes (8 -> 8, 9 -> 12, 33 -> 48); 0 when over 64.
uint8_t FdLengthFor(uint32_t bytes);

}  // namespace platoon::can
