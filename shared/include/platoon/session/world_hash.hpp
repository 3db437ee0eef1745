#pragma once
/// The session hash: one 64-bit digest of a set of entity states, the same on every process that holds
/// the same states. It covers id, kind, kinematics (stamp, pose, velocities, acceleration), box, controls,
/// lights and the stale flag, in id order, bit for bit; not the owner's node id, which depends on join
/// order. Lock-step runs of the same session file and seeds give the same hash (tests/shared, ctest).

#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::session {

/// Incremental 64-bit FNV-1a over plain values.
class Hasher {
 public:
  /// Mixes `size` bytes.
  void Bytes(const void* data, size_t size);
  /// Mixes one value's bytes (integers, doubles: their bit pattern).
  template <class T>
  void Value(const T& v) { Bytes(&v, sizeof v); }
  /// Mixes `size` bytes a 64-bit word at a time (bulk data: point records, images).
  void Words(const void* data, size_t size);
  /// Mixes one entity state (every field but owner_node).
  void Entity(const protocol::EntityState& e);
  /// Mixes one data-stream message (a measurement): what it measured, when, and its sequence number;
  /// not the publishing node's id or host epoch, which differ between runs of the same session.
  void Measurement(const protocol::Message& m);
  /// The digest so far.
  uint64_t Digest() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

/// Hash of entity states, in id order whatever the input order.
uint64_t WorldHash(std::vector<protocol::EntityState> entities);

/// "0123456789abcdef": 16 lower-case hex digits.
std::string HashHex(uint64_t hash);

}  // namespace platoon::session
