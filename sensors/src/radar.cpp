#include "platoon/sensors/radar.hpp"

#include "platoon/sensors/noise.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>

namespace platoon::sensors {

namespace {

constexpr double kRadPerDeg = std::numbers::pi / 180.0;

// Range gate (seed 000 Fig. 14, eq. 2): round to the nearest multiple of the resolution.
double Gate(double value, double resolution) {
  return resolution > 0.0 ? std::round(value / resolution) * resolution : value;
}

// Entry distance of the ray o + t d (d unit) into an oriented box, or a negative value on a miss.
double BoxEntryDistance(const Vec3& origin_w, const Vec3& dir_w, const Pose& box, const Vec3& half_m) {
  const Quat inv = box.orientation.conjugate();
  const Vec3 o = inv * (origin_w - box.position_m);
  const Vec3 d = inv * dir_w;
  double t_near = -std::numeric_limits<double>::infinity();
  double t_far = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 3; ++i) {
    if (std::abs(d[i]) < 1e-12) {
      if (o[i] < -half_m[i] || o[i] > half_m[i]) return -1.0;
      continue;
    }
    double t1 = (-half_m[i] - o[i]) / d[i];
    double t2 = (half_m[i] - o[i]) / d[i];
    if (t1 > t2) std::swap(t1, t2);
    t_near = std::max(t_near, t1);
    t_far = std::min(t_far, t2);
  }
  if (t_near > t_far || t_far < 0.0) return -1.0;
  return std::max(t_near, 0.0);
}

// Sensor-frame geometry of a target's footprint: centre, cross-range extent along n (eq. 3).
struct Footprint {
  Vec3 centre_s;      // Box centre in the sensor frame, m.
  Eigen::Vector2d n;  // Unit cross-range direction (perpendicular to the line of sight), sensor x-y.
  double s_min = 0.0, s_max = 0.0;  // Cross-range extent of the four footprint corners along n, m.
};

Footprint ComputeFootprint(const RadarTarget& t, const Pose& sensor_world) {
  Footprint f;
  const Quat to_sensor = sensor_world.orientation.conjugate();
  f.centre_s = to_sensor * (t.pose.position_m - sensor_world.position_m);
  const double az = std::atan2(f.centre_s.y(), f.centre_s.x());
  f.n = Eigen::Vector2d(-std::sin(az), std::cos(az));
  f.s_min = std::numeric_limits<double>::infinity();
  f.s_max = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < 4; ++i) {
    const Vec3 corner_b(((i & 1) ? 0.5 : -0.5) * t.size_m.x(), ((i & 2) ? 0.5 : -0.5) * t.size_m.y(), 0.0);
    const Vec3 corner_s = to_sensor * (t.pose.position_m + t.pose.orientation * corner_b - sensor_world.position_m);
    const double s = corner_s.head<2>().dot(f.n);
    f.s_min = std::min(f.s_min, s);
    f.s_max = std::max(f.s_max, s);
  }
  return f;
}

// Range gate, accuracy noise and sensor-frame position of one object (eq. 2, 4, 5).
void ApplyMeasurement(double range_m, double azimuth_rad, double range_rate_mps, const RadarDef& def,
                      std::mt19937_64& rng, RadarObject& obj) {
  const Vec3 n = StandardNormal3(rng);
  obj.range_m = std::max(0.0, Gate(range_m, def.range_resolution_m) + def.range_sigma_m * n.x());
  obj.azimuth_rad = Gate(azimuth_rad, def.azimuth_resolution_rad) + def.azimuth_sigma_rad * n.y();
  obj.range_rate_mps = Gate(range_rate_mps, def.range_rate_resolution_mps) + def.range_rate_sigma_mps * n.z();
  obj.x_m = obj.range_m * std::cos(obj.azimuth_rad);
  obj.y_m = obj.range_m * std::sin(obj.azimuth_rad);
}

// Reclassification (eq. 7): beyond the class distance the radar cannot tell the class.
RadarClass Reclassify(RadarClass c, double range_m, const RadarDef& def) {
  return range_m > def.Class(c).classification_range_m ? RadarClass::kUnknown : c;
}

double WrapPi(double a) { return std::atan2(std::sin(a), std::cos(a)); }

}  // namespace

std::string_view RadarClassName(RadarClass c) {
  switch (c) {
    case RadarClass::kCar: return "car";
    case RadarClass::kTruck: return "truck";
    case RadarClass::kPedestrian: return "pedestrian";
    case RadarClass::kMotorcycle: return "motorcycle";
    case RadarClass::kBicycle: return "bicycle";
    case RadarClass::kUnknown: return "unknown";
  }
  return "unknown";
}

double RadarDef::MaxRangeM(double azimuth_rad) const {
  // Eq. 1: full range in the inner sector, linear falloff to the outer edge, nothing beyond.
  const double a = std::abs(azimuth_rad);
  double clear = 0.0;
  if (a <= fov_inner_half_angle_rad) {
    clear = fov_inner_range_m;
  } else if (a <= fov_outer_half_angle_rad) {
    const double span = fov_outer_half_angle_rad - fov_inner_half_angle_rad;
    const double u = span > 0.0 ? (a - fov_inner_half_angle_rad) / span : 1.0;
    clear = fov_inner_range_m + u * (fov_outer_range_m - fov_inner_range_m);
  }
  return rain_attenuation_db_per_km > 0.0 ? RainShortenedRangeM(clear, rain_attenuation_db_per_km) : clear;
}

double RainShortenedRangeM(double clear_range_m, double attenuation_db_per_km) {
  if (!(clear_range_m > 0.0) || !(attenuation_db_per_km > 0.0)) return std::max(0.0, clear_range_m);
  // f(R) = 40 log10(R0 / R) - 2 gamma R / 1000 falls monotonically from +inf (R -> 0) to < 0 at R0:
  // bisection on (0, R0] to a relative 1e-12.
  const auto f = [&](double r) { return 40.0 * std::log10(clear_range_m / r) - 2e-3 * attenuation_db_per_km * r; };
  double lo = 0.0, hi = clear_range_m;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * clear_range_m; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > 0.0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

bool RadarDef::InFieldOfView(double x_m, double y_m) const {
  const double r = std::hypot(x_m, y_m);
  if (r < min_range_m) return false;
  return r <= MaxRangeM(std::atan2(y_m, x_m));
}

std::string RadarDef::Validate() const {
  if (!(fov_inner_half_angle_rad >= 0.0) || !(fov_outer_half_angle_rad >= fov_inner_half_angle_rad) ||
      !(fov_outer_half_angle_rad <= std::numbers::pi))
    return "radar: need 0 <= fov_inner_half_angle_rad <= fov_outer_half_angle_rad <= pi";
  if (!(fov_inner_range_m > min_range_m) || !(fov_outer_range_m >= 0.0))
    return "radar: need fov_inner_range_m > min_range_m and fov_outer_range_m >= 0";
  if (!(min_range_m >= 0.0)) return "radar.min_range_m must be >= 0";
  if (!(range_resolution_m >= 0.0) || !(azimuth_resolution_rad >= 0.0) || !(range_rate_resolution_mps >= 0.0))
    return "radar: resolutions must be >= 0";
  if (!(range_sigma_m >= 0.0) || !(azimuth_sigma_rad >= 0.0) || !(range_rate_sigma_mps >= 0.0))
    return "radar: accuracy sigmas must be >= 0";
  if (occlusion_rays < 1) return "radar.occlusion_rays must be >= 1";
  if (!(rate_hz > 0.0)) return "radar.rate_hz must be > 0";
  if (!(frequency_ghz >= 1.0 && frequency_ghz <= 1000.0)) return "radar.frequency_ghz must be in [1, 1000]";
  if (!(rain_attenuation_db_per_km >= 0.0)) return "radar.rain_attenuation_db_per_km must be >= 0";
  for (int i = 0; i < kRadarClassCount; ++i) {
    const RadarClassParams& c = classes[i];
    const std::string name(RadarClassName(static_cast<RadarClass>(i + 1)));
    if (!(c.detection_probability >= 0.0 && c.detection_probability <= 1.0))
      return "radar.classes." + name + ".detection_probability must be in [0, 1]";
    if (!(c.classification_range_m >= 0.0)) return "radar.classes." + name + ".classification_range_m must be >= 0";
    if (!(c.false_positives_per_frame >= 0.0)) return "radar.classes." + name + ".false_positives_per_frame must be >= 0";
    if (!(c.fp_size_m.minCoeff() > 0.0) || !(c.fp_size_sigma_m >= 0.0) || !(c.fp_rcs_sigma_db >= 0.0))
      return "radar.classes." + name + ": fp_size_m must be > 0 and sigmas >= 0";
  }
  return {};
}

RadarDef DefaultRadarDef() {
  RadarDef d;
  d.fov_inner_half_angle_rad = 40.0 * kRadPerDeg;
  d.fov_outer_half_angle_rad = 60.0 * kRadPerDeg;
  auto set = [&d](RadarClass c, double rcs, double pd, double class_range, double fp, Vec3 size) {
    RadarClassParams& p = d.Class(c);
    p.rcs_dbsm = rcs;
    p.detection_probability = pd;
    p.classification_range_m = class_range;
    p.false_positives_per_frame = fp;
    p.fp_size_m = size;
  };
  constexpr double kNever = std::numeric_limits<double>::infinity();
  set(RadarClass::kCar, 10.0, 0.95, 50.0, 0.01, Vec3(4.5, 1.8, 1.5));
  set(RadarClass::kTruck, 20.0, 0.97, 50.0, 0.005, Vec3(10.0, 2.5, 3.5));
  set(RadarClass::kPedestrian, -5.0, 0.80, 30.0, 0.01, Vec3(0.5, 0.5, 1.8));
  set(RadarClass::kMotorcycle, 5.0, 0.90, 50.0, 0.005, Vec3(2.2, 0.8, 1.4));
  set(RadarClass::kBicycle, 0.0, 0.85, 30.0, 0.005, Vec3(1.8, 0.6, 1.7));
  set(RadarClass::kUnknown, 0.0, 0.70, kNever, 0.05, Vec3(1.0, 1.0, 1.0));
  return d;
}

int PoissonCount(double mean, std::mt19937_64& rng) {
  assert(mean >= 0.0);
  // Poisson variables add, so large means are drawn in chunks of 30 to keep exp(-mean) representable.
  int count = 0;
  while (mean > 0.0) {
    const double chunk = std::min(mean, 30.0);
    mean -= chunk;
    const double limit = std::exp(-chunk);
    double prod = UniformOpenZero(rng);
    while (prod > limit) {
      ++count;
      prod *= UniformOpenZero(rng);
    }
  }
  return count;
}

double VisibleFraction(const RadarTarget& target, const Scene* occluders, const Pose& sensor_world,
                       const RadarDef& def) {
  if (occluders == nullptr) return 1.0;
  const Footprint f = ComputeFootprint(target, sensor_world);
  const Vec3 half = 0.5 * target.size_m;
  // Rays aimed at evenly spaced points across the cross-range extent, at the height of the box centre (eq. 3).
  int visible = 0;
  for (int i = 0; i < def.occlusion_rays; ++i) {
    const double s = f.s_min + (i + 0.5) / def.occlusion_rays * (f.s_max - f.s_min);
    const Vec3 aim_s(f.centre_s.x() + s * f.n.x(), f.centre_s.y() + s * f.n.y(), f.centre_s.z());
    const Vec3 dir_w = (sensor_world.orientation * aim_s).normalized();
    double t_target = BoxEntryDistance(sensor_world.position_m, dir_w, target.pose, half);
    if (t_target < 0.0) t_target = aim_s.norm();
    const Hit hit = occluders->Intersect(sensor_world.position_m, dir_w, t_target);
    // A hit on the target itself (if it is part of the scene) does not occlude it.
    if (!hit.valid || hit.tag.entity_id == target.entity_id) ++visible;
  }
  return static_cast<double>(visible) / def.occlusion_rays;
}

std::vector<RadarObject> Measure(const std::vector<RadarTarget>& targets, const Scene* occluders,
                                 const Pose& sensor_world, const Vec3& sensor_velocity_mps,
                                 const RadarDef& def, std::mt19937_64& rng) {
  assert(def.Validate().empty());
  std::vector<RadarObject> out;
  const Quat to_sensor = sensor_world.orientation.conjugate();
  const Vec3 v_sensor_s = to_sensor * sensor_velocity_mps;

  // Step I (ground truth) and step II (errors) for each real target, in input order.
  for (const RadarTarget& t : targets) {
    const Footprint f = ComputeFootprint(t, sensor_world);
    const double x = f.centre_s.x(), y = f.centre_s.y();
    if (!def.InFieldOfView(x, y)) continue;
    const double range_m = std::hypot(x, y);
    const double azimuth_rad = std::atan2(y, x);

    // Occlusion and aspect (seed Fig. 15, eq. 3): RCS scales with the visible part of the longest side.
    const double visible = VisibleFraction(t, occluders, sensor_world, def);
    if (visible <= 0.0) continue;
    double rcs_scale = visible;
    if (def.rcs_aspect_projection) {
      const double longest = std::max(t.size_m.x(), t.size_m.y());
      if (longest > 0.0) rcs_scale *= std::min(1.0, (f.s_max - f.s_min) / longest);
    }
    if (rcs_scale <= 0.0) continue;

    // False negative (eq. 6): one uniform draw per target in the FoV against the true class's P_d.
    const RadarClassParams& cls = def.Class(t.object_class);
    if (UniformOpenZero(rng) > cls.detection_probability) continue;

    RadarObject obj;
    // Radial velocity of the target relative to the sensor along the line of sight (eq. 5).
    const Vec3 los_s(std::cos(azimuth_rad), std::sin(azimuth_rad), 0.0);
    const double range_rate = (to_sensor * t.velocity_mps - v_sensor_s).dot(los_s);
    ApplyMeasurement(range_m, azimuth_rad, range_rate, def, rng, obj);
    obj.rcs_dbsm = cls.rcs_dbsm + 10.0 * std::log10(rcs_scale);
    obj.object_class = Reclassify(t.object_class, range_m, def);
    obj.entity_id = t.entity_id;
    obj.length_m = t.size_m.x();
    obj.width_m = t.size_m.y();
    const Vec3 heading_s = to_sensor * (t.pose.orientation * Vec3::UnitX());
    obj.orientation_rad = std::atan2(heading_s.y(), heading_s.x());
    out.push_back(obj);
  }

  // False positives (eq. 8), class by class after the model: Poisson count, random extent, RCS and pose.
  const double r_bound = std::max(def.fov_inner_range_m, def.fov_outer_range_m);
  for (int ci = 0; ci < kRadarClassCount; ++ci) {
    const RadarClass c = static_cast<RadarClass>(ci + 1);
    const RadarClassParams& cls = def.classes[ci];
    const int count = PoissonCount(cls.false_positives_per_frame, rng);
    for (int k = 0; k < count; ++k) {
      const Vec3 n_size = StandardNormal3(rng);
      const Vec3 n_rcs = StandardNormal3(rng);
      RadarObject obj;
      obj.length_m = std::max(0.1, cls.fp_size_m.x() + cls.fp_size_sigma_m * n_size.x());
      obj.width_m = std::max(0.1, cls.fp_size_m.y() + cls.fp_size_sigma_m * n_size.y());
      const double rcs = cls.rcs_dbsm + cls.fp_rcs_sigma_db * n_rcs.x();
      // Uniform position over the FoV area by rejection from the bounding square.
      double x = 0.0, y = 0.0;
      bool found = false;
      for (int tries = 0; tries < 1000 && !found; ++tries) {
        x = r_bound * (2.0 * UniformOpenZero(rng) - 1.0);
        y = r_bound * (2.0 * UniformOpenZero(rng) - 1.0);
        found = def.InFieldOfView(x, y);
      }
      if (!found) continue;
      obj.orientation_rad = WrapPi(2.0 * std::numbers::pi * UniformOpenZero(rng));
      const double range_m = std::hypot(x, y);
      const double azimuth_rad = std::atan2(y, x);
      // A ghost is static clutter: its range rate is the sensor's own motion along the line of sight.
      const Vec3 los_s(std::cos(azimuth_rad), std::sin(azimuth_rad), 0.0);
      ApplyMeasurement(range_m, azimuth_rad, -v_sensor_s.dot(los_s), def, rng, obj);
      obj.rcs_dbsm = rcs;
      obj.object_class = Reclassify(c, range_m, def);
      obj.entity_id = 0;
      obj.is_false_positive = true;
      out.push_back(obj);
    }
  }
  return out;
}

}  // namespace platoon::sensors
