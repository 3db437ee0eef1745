#include "platoon/sensors/lidar.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>

namespace platoon::sensors {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

const LidarMaterial& MaterialOf(const LidarDef& def, uint32_t id) {
  static const LidarMaterial kFallback;
  if (def.materials.empty()) return kFallback;
  return id < def.materials.size() ? def.materials[id] : def.materials[0];
}

// Received power P_r, eq. 3 (seed_d3) or its extended-target form (lambertian_d2), in W.
// `tau` is the one-way atmospheric transmission exp(-alpha d).
double ReceivedPowerW(const LidarDef& def, double reflectance, double cos_incidence, double d, double tau) {
  const double num = reflectance * def.receiver_aperture_area_m2 * tau * tau * def.transmit_power_w *
                     def.optics_efficiency * cos_incidence;
  if (def.range_law == RangeLaw::kSeedD3) {
    const double q_v = std::sqrt(def.beam_divergence_h_rad * def.beam_divergence_v_rad);
    return num / (q_v * kPi * d * d * d);
  }
  return num / (kPi * d * d);
}

// Sun background P_sun, eq. 5, in W.
double SunPowerW(const LidarDef& def, double reflectance, double tau) {
  return def.sun_irradiance_w_per_m2_nm * def.optical_bandwidth_nm * reflectance * def.receiver_aperture_area_m2 *
         tau * def.ifov_rad * def.ifov_rad * def.optics_efficiency;
}

// Dark-current noise P_DK, eq. 6, in W.
double DarkPowerW(const LidarDef& def) { return def.dark_current_a / def.responsivity_a_per_w; }

// Sub-ray angular offsets (azimuth, elevation) around the central ray; index 0 is the centre.
int SubRayOffsets(const LidarDef& def, double (*out)[2]) {
  const double ha = 0.5 * def.beam_divergence_h_rad, he = 0.5 * def.beam_divergence_v_rad;
  int n = 0;
  out[n][0] = 0, out[n][1] = 0, ++n;
  if (def.divergence_sampling == DivergenceSampling::kElevationPair ||
      def.divergence_sampling == DivergenceSampling::kCross) {
    out[n][0] = 0, out[n][1] = +he, ++n;
    out[n][0] = 0, out[n][1] = -he, ++n;
  }
  if (def.divergence_sampling == DivergenceSampling::kAzimuthPair ||
      def.divergence_sampling == DivergenceSampling::kCross) {
    out[n][0] = +ha, out[n][1] = 0, ++n;
    out[n][0] = -ha, out[n][1] = 0, ++n;
  }
  return n;
}

struct SubHit {
  double distance_m;
  double power_w;
  int sub_index;
  SurfaceTag tag;
};

}  // namespace

std::optional<RangeLaw> ParseRangeLaw(std::string_view name) {
  if (name == "lambertian_d2") return RangeLaw::kLambertianD2;
  if (name == "seed_d3") return RangeLaw::kSeedD3;
  return std::nullopt;
}

std::string_view RangeLawName(RangeLaw law) {
  return law == RangeLaw::kSeedD3 ? "seed_d3" : "lambertian_d2";
}

std::vector<LidarMaterial> DefaultLidarMaterials() {
  return {
      {0.20, 1.0, 0.0},  // 0 generic
      {0.08, 1.0, 0.0},  // 1 asphalt
      {0.30, 1.0, 0.0},  // 2 concrete
      {0.50, 1.0, 0.0},  // 3 car paint
      {0.80, 1.0, 0.0},  // 4 white wall
      {0.40, 5.0, 0.0},  // 5 vegetation: rough on the beam scale
      {0.95, 1.0, 0.0},  // 6 retro-reflector (diffuse approximation)
      {0.05, 1.0, 0.0},  // 7 black car
  };
}

int LidarDef::ColumnCount() const {
  if (!(azimuth_resolution_rad > 0.0)) return 0;
  const double span = azimuth_max_rad - azimuth_min_rad;
  if (span < 0.0) return 0;
  // A full circle does not repeat its first column at +360 deg.
  if (span >= 2.0 * kPi - 0.5 * azimuth_resolution_rad)
    return static_cast<int>(std::lround(2.0 * kPi / azimuth_resolution_rad));
  return static_cast<int>(std::floor(span / azimuth_resolution_rad + 1e-9)) + 1;
}

double LidarDef::ColumnAzimuthRad(int c) const {
  return clockwise ? azimuth_max_rad - c * azimuth_resolution_rad : azimuth_min_rad + c * azimuth_resolution_rad;
}

double LidarDef::ColumnTimeOffsetS(int c) const {
  if (kind == ScanKind::kFlash) return 0.0;
  return c * azimuth_resolution_rad / (2.0 * kPi * rotation_rate_hz);
}

int LidarDef::RaysPerBeam() const {
  double offsets[5][2];
  return SubRayOffsets(*this, offsets);
}

std::string LidarDef::Validate() const {
  if (channel_elevations_rad.empty()) return "lidar.channel_elevations_rad must list at least one channel";
  if (channel_elevations_rad.size() > 65535) return "lidar.channel_elevations_rad has more than 65535 channels";
  if (!(azimuth_resolution_rad > 0.0)) return "lidar.azimuth_resolution_rad must be > 0";
  if (azimuth_max_rad < azimuth_min_rad) return "lidar.azimuth_max_rad must be >= azimuth_min_rad";
  if (ColumnCount() > 65535) return "lidar: more than 65535 azimuth columns";
  if (!(rotation_rate_hz > 0.0)) return "lidar.rotation_rate_hz must be > 0";
  if (!(min_range_m >= 0.0) || !(max_range_m > min_range_m)) return "lidar: need 0 <= min_range_m < max_range_m";
  if (!(transmit_power_w > 0.0) || !(receiver_aperture_area_m2 > 0.0)) return "lidar: transmit power and aperture must be > 0";
  if (!(optics_efficiency > 0.0 && optics_efficiency <= 1.0)) return "lidar.optics_efficiency must be in (0, 1]";
  if (!(extinction_coefficient_per_m >= 0.0)) return "lidar.extinction_coefficient_per_m must be >= 0";
  if (!(responsivity_a_per_w > 0.0)) return "lidar.responsivity_a_per_w must be > 0";
  if (!(snr_threshold > 0.0)) return "lidar.snr_threshold must be > 0";
  if (range_law == RangeLaw::kSeedD3 && !(beam_divergence_h_rad > 0.0 && beam_divergence_v_rad > 0.0))
    return "lidar: range_law seed_d3 needs beam divergences > 0 (Q_V)";
  if (!(echo_merge_distance_m >= 0.0)) return "lidar.echo_merge_distance_m must be >= 0";
  if (max_echoes < 1 || max_echoes > 255) return "lidar.max_echoes must be in 1..255";
  if (!(range_resolution_m >= 0.0) || !(range_noise_k >= 0.0)) return "lidar: range noise terms must be >= 0";
  if (materials.empty()) return "lidar.materials must hold at least material 0";
  return {};
}

double LidarPoint::RangeM() const {
  return std::sqrt(double(x_m) * x_m + double(y_m) * y_m + double(z_m) * z_m);
}

// ---- Presets: scan patterns from datasheets; optics representative of 905 nm pulsed scanners, with
// P_t set so that MaxDetectionRangeM at 10 % reflectance matches the datasheet figure (docs/LIDAR.md).

LidarDef DefaultLidarDef() {
  LidarDef d;
  for (int i = 0; i < 16; ++i) d.channel_elevations_rad.push_back((-15.0 + 2.0 * i) * kDeg);
  return d;
}

LidarDef IbeoLuxDef() {
  LidarDef d;
  d.channel_elevations_rad = {-1.2 * kDeg, -0.4 * kDeg, 0.4 * kDeg, 1.2 * kDeg};
  d.azimuth_min_rad = -60.0 * kDeg;
  d.azimuth_max_rad = 50.0 * kDeg;
  d.azimuth_resolution_rad = 0.25 * kDeg;
  d.rotation_rate_hz = 25.0;
  d.clockwise = true;
  d.max_range_m = 200.0;
  d.transmit_power_w = 6.8;
  d.beam_divergence_h_rad = 0.08 * kDeg;
  d.beam_divergence_v_rad = 0.8 * kDeg;
  d.divergence_sampling = DivergenceSampling::kElevationPair;
  d.range_resolution_m = 0.04;
  d.ifov_rad = 0.8 * kDeg * 0.25;
  return d;
}

LidarDef ValeoScalaDef() {
  LidarDef d = IbeoLuxDef();
  d.azimuth_min_rad = -72.5 * kDeg;
  d.azimuth_max_rad = 72.5 * kDeg;
  d.max_range_m = 200.0;
  d.transmit_power_w = 17.5;
  d.range_resolution_m = 0.1;
  return d;
}

LidarDef Vlp16Def() {
  LidarDef d = DefaultLidarDef();
  d.azimuth_min_rad = -kPi;
  d.azimuth_max_rad = kPi;
  d.azimuth_resolution_rad = 0.2 * kDeg;
  d.rotation_rate_hz = 10.0;
  d.clockwise = true;
  d.max_range_m = 100.0;
  d.transmit_power_w = 8.5;
  d.beam_divergence_h_rad = 0.003;
  d.beam_divergence_v_rad = 0.0015;
  d.divergence_sampling = DivergenceSampling::kAzimuthPair;
  d.range_resolution_m = 0.03;
  d.ifov_rad = 0.003;
  return d;
}

LidarDef Hdl64Def() {
  LidarDef d = Vlp16Def();
  d.channel_elevations_rad.clear();
  // Upper block: +2 to -8.33 deg in 1/3 deg steps; lower block: -8.83 to -24.33 deg in 1/2 deg steps.
  for (int i = 0; i < 32; ++i) d.channel_elevations_rad.push_back((2.0 - i / 3.0) * kDeg);
  for (int i = 0; i < 32; ++i) d.channel_elevations_rad.push_back((-8.83 - 0.5 * i) * kDeg);
  d.azimuth_resolution_rad = 2.0 * kPi / 2083.0;
  d.max_range_m = 120.0;
  d.transmit_power_w = 4.5;
  d.beam_divergence_h_rad = 0.002;
  d.beam_divergence_v_rad = 0.002;
  d.divergence_sampling = DivergenceSampling::kCentre;
  d.range_resolution_m = 0.02;
  d.ifov_rad = 0.002;
  return d;
}

LidarDef Os1_128Def() {
  LidarDef d = Vlp16Def();
  d.channel_elevations_rad.clear();
  for (int i = 0; i < 128; ++i) d.channel_elevations_rad.push_back((-22.5 + 45.0 * i / 127.0) * kDeg);
  d.azimuth_resolution_rad = 2.0 * kPi / 1024.0;
  d.max_range_m = 120.0;
  d.transmit_power_w = 4.9;
  d.beam_divergence_h_rad = 0.18 * kDeg;
  d.beam_divergence_v_rad = 0.18 * kDeg;
  d.divergence_sampling = DivergenceSampling::kCentre;
  d.range_resolution_m = 0.03;
  d.ifov_rad = 0.18 * kDeg;
  return d;
}

// ---- Physics

double LidarSnr(const LidarDef& def, double reflectance, double incidence_rad, double distance_m) {
  const double cos_i = std::max(0.0, std::cos(incidence_rad));
  const double tau = std::exp(-def.extinction_coefficient_per_m * distance_m);
  const double p_r = ReceivedPowerW(def, reflectance, cos_i, distance_m, tau);
  const double p_n = SunPowerW(def, reflectance, tau) + DarkPowerW(def);
  return p_n > 0.0 ? p_r / p_n : (p_r > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
}

double MaxDetectionRangeM(const LidarDef& def, double reflectance, double incidence_rad) {
  // SNR(d) decreases monotonically: P_r falls as tau^2/d^n while P_sun only falls as tau.
  double lo = 1e-3;
  if (!(LidarSnr(def, reflectance, incidence_rad, lo) >= def.snr_threshold)) return 0.0;
  double hi = 1.0;
  while (LidarSnr(def, reflectance, incidence_rad, hi) >= def.snr_threshold) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e9) return hi;
  }
  // Bisection to double precision.
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (LidarSnr(def, reflectance, incidence_rad, mid) >= def.snr_threshold ? lo : hi) = mid;
  }
  return lo;
}

Pose PoseAtTime(const Pose& start, const Vec3& velocity_mps, const Vec3& angular_velocity_radps, double t_s) {
  // Constant twist: the velocity turns with the body, p(t) = p0 + int_0^t exp([w] s) v ds
  //   = p0 + (I t + (1 - cos th) / |w|^2 [w] + (t - sin th / |w|) / |w|^2 [w]^2) v,  th = |w| t,
  // exact on circles (a vehicle in a steady bend), the straight line when w = 0.
  Pose p;
  const double w = angular_velocity_radps.norm();
  if (w * std::abs(t_s) < 1e-9) {
    p.position_m = start.position_m + velocity_mps * t_s;
  } else {
    const double th = w * t_s;
    const Vec3 wv = angular_velocity_radps.cross(velocity_mps);
    const Vec3 wwv = angular_velocity_radps.cross(wv);
    p.position_m = start.position_m + velocity_mps * t_s + wv * ((1.0 - std::cos(th)) / (w * w)) +
                   wwv * ((t_s - std::sin(th) / w) / (w * w));
  }
  p.orientation = (QuatFromAngularVelocity(angular_velocity_radps, t_s) * start.orientation).normalized();
  return p;
}

std::vector<LidarPoint> Scan(const Scene& scene, const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
                             const Vec3& angular_velocity_radps, const LidarDef& def, std::mt19937_64& rng,
                             const std::function<void(double)>& before_block) {
  assert(def.Validate().empty());
  std::vector<LidarPoint> points;
  const int columns = def.ColumnCount();
  const int channels = static_cast<int>(def.channel_elevations_rad.size());
  double offsets[5][2];
  const int n_sub = SubRayOffsets(def, offsets);
  const double p_dark = DarkPowerW(def);
  std::normal_distribution<double> unit_normal(0.0, 1.0);

  // Columns are cast in blocks, so that ray packets are full whatever the channel count.
  constexpr int kBlockColumns = 64;
  const size_t per_column = static_cast<size_t>(channels) * n_sub;
  std::vector<Ray> rays(per_column * kBlockColumns);
  std::vector<Hit> hits(rays.size());
  std::vector<Vec3> central(static_cast<size_t>(channels) * kBlockColumns);
  std::vector<double> column_time(kBlockColumns);
  std::vector<SubHit> sub;
  sub.reserve(n_sub);
  // cos and sin of every channel's elevation plus each sub-ray's elevation offset.
  std::vector<double> elevation_cs(static_cast<size_t>(channels) * n_sub * 2);
  for (int ch = 0; ch < channels; ++ch)
    for (int s = 0; s < n_sub; ++s) {
      const double el = def.channel_elevations_rad[ch] + offsets[s][1];
      elevation_cs[(static_cast<size_t>(ch) * n_sub + s) * 2] = std::cos(el);
      elevation_cs[(static_cast<size_t>(ch) * n_sub + s) * 2 + 1] = std::sin(el);
    }
  points.reserve(static_cast<size_t>(columns) * channels);

  for (int block = 0; block < columns; block += kBlockColumns) {
    const int block_columns = std::min(kBlockColumns, columns - block);
    // Moving entities are posed at the block's middle firing time (within half a block of each ray's own).
    if (before_block)
      before_block(0.5 * (def.ColumnTimeOffsetS(block) + def.ColumnTimeOffsetS(block + block_columns - 1)));
    for (int bc = 0; bc < block_columns; ++bc) {
      const int c = block + bc;
      // Each column is cast from the sensor pose at its own firing time (motion distortion).
      const double t = def.ColumnTimeOffsetS(c);
      column_time[bc] = t;
      const Pose pose = PoseAtTime(sensor_at_scan_start, velocity_mps, angular_velocity_radps, t);
      const Eigen::Matrix3d rot = pose.orientation.toRotationMatrix();
      // Directions (cos el cos az, cos el sin az, sin el) from per-column azimuth and per-channel
      // elevation sines and cosines: a few trig calls per column instead of two per ray.
      const double az = def.ColumnAzimuthRad(c);
      double az_cos[5], az_sin[5];
      for (int s = 0; s < n_sub; ++s) {
        az_cos[s] = std::cos(az + offsets[s][0]);
        az_sin[s] = std::sin(az + offsets[s][0]);
      }
      for (int ch = 0; ch < channels; ++ch) {
        const double* el_cs = &elevation_cs[(static_cast<size_t>(ch) * n_sub) * 2];
        central[static_cast<size_t>(bc) * channels + ch] = Vec3(el_cs[0] * az_cos[0], el_cs[0] * az_sin[0], el_cs[1]);
        for (int s = 0; s < n_sub; ++s) {
          Ray& r = rays[bc * per_column + static_cast<size_t>(ch) * n_sub + s];
          const double ce = el_cs[2 * s], se = el_cs[2 * s + 1];
          r.origin_m = pose.position_m;
          r.direction = rot * Vec3(ce * az_cos[s], ce * az_sin[s], se);
          r.tmax_m = def.max_range_m;
        }
      }
    }
    const size_t n_rays = per_column * block_columns;
    scene.IntersectBatch(std::span<const Ray>(rays.data(), n_rays), std::span<Hit>(hits.data(), n_rays));

    for (int bc = 0; bc < block_columns; ++bc) {
      const int c = block + bc;
      const double t = column_time[bc];
      for (int ch = 0; ch < channels; ++ch) {
        // Physics per sub-ray: each carries 1/n of the beam power; the background fills the whole IFOV.
        sub.clear();
        double p_sun = 0.0;
        for (int s = 0; s < n_sub; ++s) {
          const size_t i = bc * per_column + static_cast<size_t>(ch) * n_sub + s;
          const Hit& h = hits[i];
          if (!h.valid || h.distance_m < def.min_range_m) continue;
          const LidarMaterial& m = MaterialOf(def, h.tag.material_id);
          const double cos_i = std::abs(h.normal.dot(rays[i].direction));
          const double tau = std::exp(-def.extinction_coefficient_per_m * h.distance_m);  // shared by eq. 3 and 5
          sub.push_back({h.distance_m, ReceivedPowerW(def, m.reflectance, cos_i, h.distance_m, tau) / n_sub, s, h.tag});
          p_sun += SunPowerW(def, m.reflectance, tau) / n_sub;
        }
        if (sub.empty()) continue;
        std::sort(sub.begin(), sub.end(), [](const SubHit& a, const SubHit& b) {
          return a.distance_m != b.distance_m ? a.distance_m < b.distance_m : a.sub_index < b.sub_index;
        });

        // Merge sub-ray hits closer than the merge distance into one echo (seed 002 §4.3.2); an echo
        // made of k of n sub-rays carries k/n of the beam power (partial illumination at an edge).
        int echo = 0;
        for (size_t b = 0; b < sub.size() && echo < def.max_echoes;) {
          size_t e = b + 1;
          while (e < sub.size() && sub[e].distance_m - sub[e - 1].distance_m < def.echo_merge_distance_m) ++e;
          double sum_d = 0.0, p_r = 0.0;
          const SubHit* label = &sub[b];  // the sub-ray nearest the centre names the echo's surface
          for (size_t k = b; k < e; ++k) {
            sum_d += sub[k].distance_m;
            p_r += sub[k].power_w;
            if (sub[k].sub_index < label->sub_index) label = &sub[k];
          }
          const double dist = sum_d / static_cast<double>(e - b);
          b = e;
          // Detection: SNR threshold (eq. 2) and the optional per-material threshold distance.
          const double snr = p_r / (p_sun + p_dark);
          const LidarMaterial& m = MaterialOf(def, label->tag.material_id);
          if (!(snr >= def.snr_threshold)) continue;
          if (m.max_range_m > 0.0 && dist > m.max_range_m) continue;
          // Range noise on the distance only; angles are fixed by the hardware raster (seed 002 §4.3.3).
          const double sigma = def.range_noise_k * def.range_resolution_m * m.noise_scale;
          const double measured = std::max(0.0, dist + sigma * unit_normal(rng));
          const Vec3 p = central[static_cast<size_t>(bc) * channels + ch] * measured;
          LidarPoint pt;
          pt.x_m = static_cast<float>(p.x());
          pt.y_m = static_cast<float>(p.y());
          pt.z_m = static_cast<float>(p.z());
          pt.intensity_w = static_cast<float>(p_r);
          pt.snr = static_cast<float>(snr);
          pt.ring = static_cast<uint16_t>(ch);
          pt.column = static_cast<uint16_t>(c);
          pt.time_offset_s = static_cast<float>(t);
          pt.echo = static_cast<uint8_t>(echo++);
          pt.entity_id = label->tag.entity_id;
          pt.class_id = label->tag.class_id;
          points.push_back(pt);
        }
      }
    }
  }
  return points;
}

}  // namespace platoon::sensors
