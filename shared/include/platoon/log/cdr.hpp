#pragma once
/// A CDR encoder (OMG CDR as XCDR version 1, little-endian), the serialization ROS 2's rmw layers put on
/// the wire and rosbag2 stores with message encoding "cdr" (docs/RECORDING.md, "ROS 2").
///
/// The rules, from the OMG CDR specification (CORBA 3.x, Part 2, §9.3 "CDR Transfer Syntax"; DDS-XTypes
/// §7.4.3 for XCDR1):
///  - A serialized payload starts with a 4-byte encapsulation header: representation identifier
///    0x00 0x01 (CDR_LE) and two option bytes 0x00 0x00.
///  - Every primitive of size n (1, 2, 4 or 8 bytes) is aligned to a multiple of n counted from the first
///    byte after that header; padding bytes are zero.
///  - A string is a uint32 length that counts the terminating NUL, the bytes, then the NUL.
///  - A sequence (unbounded T[]) is a uint32 element count followed by the elements; a fixed array (T[N])
///    is the N elements with no count. A nested structure adds no bytes of its own.
///  - bool is one byte, 0 or 1.
///
/// The encoder only appends; it cannot fail. Not thread-safe.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace platoon::cdr {

/// Bytes of the encapsulation header before the payload.
inline constexpr size_t kHeaderSize = 4;

/// Builds one CDR_LE payload, encapsulation header first.
class Writer {
 public:
  /// Starts a payload with the CDR_LE encapsulation header (00 01 00 00). `reserve` bytes are reserved.
  explicit Writer(size_t reserve = 64) {
    bytes_.reserve(reserve + kHeaderSize);
    bytes_.insert(bytes_.end(), {0x00, 0x01, 0x00, 0x00});
  }

  /// Appends one primitive (integer, float or double), aligned to its size.
  template <typename T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  void Put(T v) {
    Align(sizeof(T));
    auto raw = std::bit_cast<std::array<uint8_t, sizeof(T)>>(v);
    if constexpr (std::endian::native == std::endian::big) std::reverse(raw.begin(), raw.end());
    bytes_.insert(bytes_.end(), raw.begin(), raw.end());
  }
  void U8(uint8_t v) { Put(v); }     ///< uint8 / byte / char.
  void I8(int8_t v) { Put(v); }      ///< int8.
  void U16(uint16_t v) { Put(v); }   ///< uint16, 2-aligned.
  void I16(int16_t v) { Put(v); }    ///< int16, 2-aligned.
  void U32(uint32_t v) { Put(v); }   ///< uint32, 4-aligned.
  void I32(int32_t v) { Put(v); }    ///< int32, 4-aligned.
  void U64(uint64_t v) { Put(v); }   ///< uint64, 8-aligned.
  void I64(int64_t v) { Put(v); }    ///< int64, 8-aligned.
  void F32(float v) { Put(v); }      ///< float32, 4-aligned.
  void F64(double v) { Put(v); }     ///< float64, 8-aligned.
  /// bool as one byte, 0 or 1.
  void Bool(bool v) { bytes_.push_back(v ? 1 : 0); }

  /// A string: uint32 length including the NUL, the bytes, the NUL.
  void String(std::string_view s) {
    U32(static_cast<uint32_t>(s.size() + 1));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    bytes_.push_back(0);
  }

  /// The element count of a sequence (T[]); the caller appends the elements after it.
  void SequenceLength(size_t n) { U32(static_cast<uint32_t>(n)); }

  /// A byte sequence (uint8[]): count, then the bytes as they are.
  void ByteSequence(std::span<const uint8_t> data) {
    SequenceLength(data.size());
    bytes_.insert(bytes_.end(), data.begin(), data.end());
  }

  /// A fixed array (T[N]) of primitives: the elements, no count.
  template <typename T, size_t N>
  void Array(const std::array<T, N>& a) {
    for (const T& v : a) Put(v);
  }

  /// Pads with zeros until the payload offset (bytes after the header) is a multiple of `n`.
  void Align(size_t n) {
    const size_t offset = bytes_.size() - kHeaderSize;
    const size_t pad = (n - offset % n) % n;
    bytes_.insert(bytes_.end(), pad, 0);
  }

  /// Appends `n` bytes of space (for a caller that fills a large uint8[] body in place) and returns a
  /// pointer to them; valid until the next call.
  uint8_t* Grow(size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    return bytes_.data() + at;
  }

  /// Bytes so far, header included.
  const std::vector<uint8_t>& Bytes() const { return bytes_; }
  /// Bytes after the header so far (the offset alignment counts from).
  size_t PayloadSize() const { return bytes_.size() - kHeaderSize; }
  /// Hands over the bytes; the writer is empty afterwards.
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace platoon::cdr
