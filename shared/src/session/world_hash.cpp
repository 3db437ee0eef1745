#include "platoon/session/world_hash.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace platoon::session {

void Hasher::Bytes(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h_ ^= p[i];
    h_ *= 1099511628211ull;
  }
}

void Hasher::Words(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h_ ^= w;
    h_ *= 1099511628211ull;
    h_ ^= h_ >> 29;
  }
  Bytes(p + i, size - i);
}

void Hasher::Measurement(const protocol::Message& m) {
  // The header minus who published it: sensor id, kind, sequence, stamp, mounting, entity.
  auto header = [&](const protocol::SensorHeader& hd) {
    Bytes(hd.sensor_id.data(), hd.sensor_id.size());
    Value(static_cast<uint8_t>(hd.kind));
    Value(hd.sequence);
    Value(hd.stamp_ns);
    Value(hd.entity_id);
    for (int i = 0; i < 3; ++i) Value(hd.mount_position_m[i]);
    for (int i = 0; i < 4; ++i) Value(hd.mount_orientation.coeffs()[i]);
  };
  auto vec = [&](const Vec3& v) {
    for (int i = 0; i < 3; ++i) Value(v[i]);
  };
  if (const auto* c = std::get_if<protocol::PointCloud>(&m)) {
    header(c->header);
    Value(c->duration_ns);
    Value(c->point_count);
    Value(c->point_stride);
    Words(c->points.data(), c->points.size());
  } else if (const auto* r = std::get_if<protocol::RadarScan>(&m)) {
    header(r->header);
    for (const auto& d : r->detections) {
      for (float f : {d.range_m, d.azimuth_rad, d.range_rate_mps, d.rcs_dbsm, d.length_m, d.width_m, d.orientation_rad,
                      d.x_m, d.y_m})
        Value(f);
      Value(d.object_class);
      Value(d.entity_id);
      Value(static_cast<uint8_t>(d.false_positive));
    }
  } else if (const auto* u = std::get_if<protocol::ImuMeasurement>(&m)) {
    header(u->header);
    vec(u->angular_velocity_radps);
    vec(u->acceleration_mps2);
  } else if (const auto* g = std::get_if<protocol::GnssMeasurement>(&m)) {
    header(g->header);
    for (double v : {g->latitude_deg, g->longitude_deg, g->altitude_m, g->horizontal_sigma_m, g->vertical_sigma_m}) Value(v);
    vec(g->velocity_enu_mps);
  } else if (const auto* f = std::get_if<protocol::CameraFrame>(&m)) {
    header(f->header);
    for (const auto& roi : f->rois) {
      Value(roi.entity_id);
      Value(roi.class_id);
      for (float v : {roi.u_min, roi.v_min, roi.u_max, roi.v_max, roi.depth_m, roi.occlusion_ratio}) Value(v);
    }
    Words(f->image.data(), f->image.size());
  } else if (const auto* fc = std::get_if<protocol::FusedCloud>(&m)) {
    Bytes(fc->sensor_id.data(), fc->sensor_id.size());
    Value(fc->sequence);
    Value(fc->reference_ns);
    Value(fc->entity_id);
    for (const auto& s : fc->sources) {
      Value(s.stamp_ns);
      Value(s.point_count);
      Value(static_cast<uint8_t>(s.status));
    }
    Words(fc->points.data(), fc->points.size());
  } else if (const auto* o = std::get_if<protocol::ObjectList>(&m)) {
    header(o->header);
    for (const auto& obj : o->objects) {
      Value(obj.track_id);
      Value(obj.object_class);
      vec(obj.position_m);
      vec(obj.velocity_mps);
      vec(obj.size_m);
    }
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
