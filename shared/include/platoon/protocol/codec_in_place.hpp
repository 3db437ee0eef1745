#pragma once
/// The codec without copies of large point blobs (docs/FUSION.md, "Incremental fusion"): a cloud decoded
/// in place, and a fused cloud encoded in front of a blob that is already where it will be sent from.
/// The wire format is the same as Encode()/Decode() (codec.hpp).

#include "platoon/protocol/codec.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstddef>
#include <string_view>

namespace platoon::protocol {

/// Decode() without copying the point blob of a PointCloud or FusedCloud: the message's `points` stays
/// empty and `blob` views the blob inside `bytes`, which must outlive it (every other message decodes as
/// with Decode(), `blob` empty). `bytes` must be 8-byte aligned (a std::string's heap buffer is); unaligned
/// bytes give kBadSize, since a decode in place cannot copy them.
Decoded DecodeInPlace(std::string_view bytes, std::string_view* blob);

/// Room to leave in front of a point blob for EncodeFusedInPlace's envelope, in bytes (a FusedCloud with
/// up to 255 sources and 1 kB ids fits easily).
inline constexpr size_t kFusedHeadroomBytes = 64 * 1024;

/// Encodes `message` (its `points` must be empty) with the `blob_bytes` bytes at `blob` as its point blob,
/// without copying the blob: the envelope (segment table and first segment) is written into the
/// `headroom` bytes right in front of `blob`, and the blob becomes the message's last segment.
/// Preconditions: `blob` is 8-byte aligned and the bytes after it up to the next multiple of 8 are
/// writable (they are zeroed). Returns the wire bytes, from inside the headroom to the blob's padded end;
/// they decode like Encode(message with the blob) (a valid Cap'n Proto message of two segments). Throws
/// std::length_error when the envelope does not fit the headroom, std::invalid_argument on a bad blob.
std::string_view EncodeFusedInPlace(const FusedCloud& message, char* blob, size_t blob_bytes, size_t headroom);

}  // namespace platoon::protocol
