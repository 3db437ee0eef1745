#pragma once
/// Conversion between platoon messages and their wire bytes (a Cap'n Proto Envelope).
/// This is the one adapter layer between the wire format and core types.

#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace platoon::protocol {

/// Why bytes could not be decoded.
enum class DecodeError : uint8_t {
  kNone,             ///< Decoded.
  kBadSize,          ///< Empty, or not a whole number of 8-byte words.
  kMalformed,        ///< Not a valid Cap'n Proto message, or exceeds the reader limits.
  kBadMagic,         ///< A valid message, but not a platoon envelope.
  kVersionMismatch,  ///< A platoon envelope of a version this build cannot read, older than kOldestReadableVersion or newer than kProtocolVersion (only join/refuse are still returned).
  kUnknownBody,      ///< An envelope whose body this version does not know.
};

/// Lower-case name of a decode error, for counters and logs.
std::string_view DecodeErrorName(DecodeError error);

/// Result of Decode(): the message (when readable), the peer's version, and the error, if any.
struct Decoded {
  std::optional<Message> message;   ///< Set when error is kNone, or for join/refuse with kVersionMismatch.
  uint16_t peer_version = 0;        ///< Protocol version in the envelope (0 when unreadable).
  DecodeError error = DecodeError::kNone;
  std::string detail;               ///< Human-readable detail of the error.
};

/// Encodes a message into an envelope of this protocol version.
std::string Encode(const Message& message);

/// Encodes with an explicit envelope version; for tests of version handling.
std::string EncodeWithVersion(const Message& message, uint16_t version);

/// Decodes wire bytes; never throws. Join and Refuse of another version are still returned, so
/// that both ends can give a clear refusal; every other message of another version is an error.
Decoded Decode(std::string_view bytes);

}  // namespace platoon::protocol
