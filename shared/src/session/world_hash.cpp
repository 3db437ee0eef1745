#include "platoon/session/world_hash.hpp"

#include <algorithm>
#include <cstdio>

namespace platoon::session {

void Hasher::Bytes(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h_ ^= p[i];
    h_ *= 1099511628211ull;
  }
}

void Hasher::Entity(const protocol::EntityState& e) {
  // Field by field (never the struct's bytes: padding is not part of the state).
  Value(e.id);
  Value(static_cast<uint8_t>(e.kind));
  const KinematicState& k = e.kinematics;
  Value(k.stamp_ns);
  for (int i = 0; i < 3; ++i) Value(k.pose.position_m[i]);
  for (int i = 0; i < 4; ++i) Value(k.pose.orientation.coeffs()[i]);
  for (int i = 0; i < 3; ++i) Value(k.velocity_mps[i]);
  for (int i = 0; i < 3; ++i) Value(k.angular_velocity_radps[i]);
  for (int i = 0; i < 3; ++i) Value(k.acceleration_mps2[i]);
  for (int i = 0; i < 3; ++i) Value(e.box_size_m[i]);
  Value(e.controls.steer);
  Value(e.controls.throttle);
  Value(e.controls.brake);
  const uint8_t lights = (e.lights.headlights ? 1 : 0) | (e.lights.brake ? 2 : 0) | (e.lights.indicator_left ? 4 : 0) |
                         (e.lights.indicator_right ? 8 : 0) | (e.lights.reverse ? 16 : 0);
  Value(lights);
  Value(static_cast<uint8_t>(e.stale ? 1 : 0));
}

uint64_t WorldHash(std::vector<protocol::EntityState> entities) {
  std::sort(entities.begin(), entities.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  Hasher h;
  const uint64_t count = entities.size();
  h.Value(count);
  for (const auto& e : entities) h.Entity(e);
  return h.Digest();
}

std::string HashHex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace platoon::session
