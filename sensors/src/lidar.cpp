#include "platoon/sensors/lidar.hpp"

#include "platoon/point_record.hpp"

#include "platoon/sensors/fast_exp.hpp"
#include "platoon/sensors/noise.hpp"

#include <algorithm>
#include <barrier>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>
#include <thread>

namespace platoon::sensors {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

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
      {0.95, 1.0, 0.0, 100.0},  // 6 retro-reflector: sheeting sends ~100x a white diffuser's power back
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
  if (threads < 1 || threads > 64) return "lidar.threads must be in 1..64";
  if (!(wavelength_nm > 0.0)) return "lidar.wavelength_nm must be > 0";
  if (!(pulse_duration_s >= 0.0) || !(overlap_range_m >= 0.0)) return "lidar: pulse_duration_s and overlap_range_m must be >= 0";
  if (!(backscatter_per_m_sr >= 0.0)) return "lidar.backscatter_per_m_sr must be >= 0";
  return {};
}

double CalibratedReflectance(const LidarDef& def, double p_r_w, double range_m) {
  if (!(p_r_w > 0.0) || !(range_m > 0.0)) return 0.0;
  const double tau = std::exp(-kReflectivityCalibrationExtinctionPerM * range_m);
  return p_r_w / ReceivedPowerW(def, 1.0, 1.0, range_m, tau);
}

uint8_t ReflectivityValue(double rho) {
  if (!(rho > 0.0)) return 0;
  if (rho <= 1.0) return static_cast<uint8_t>(std::lround(100.0 * rho));
  const double v = 101.0 + std::floor(154.0 * std::log10(rho) / 3.0);
  return static_cast<uint8_t>(std::min(255.0, v));
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

SoftEcho MeanSoftEcho(const LidarDef& def) {
  SoftEcho e;
  if (!(def.backscatter_per_m_sr > 0.0)) return e;
  constexpr double kLightSpeedMps = 299792458.0;
  e.range_m = std::max(def.overlap_range_m, def.min_range_m);
  e.depth_m = 0.5 * kLightSpeedMps * def.pulse_duration_s;
  const double r = std::max(e.range_m, 1e-3);
  const double tau = std::exp(-def.extinction_coefficient_per_m * r);
  e.power_w = def.transmit_power_w * def.optics_efficiency * def.receiver_aperture_area_m2 * def.backscatter_per_m_sr *
              e.depth_m * tau * tau / (r * r);
  // The same power from a Lambertian target of reflectance rho_eff = pi beta c tau_p / 2: its sun background (eq. 5).
  const double rho_eff = kPi * def.backscatter_per_m_sr * e.depth_m;
  const double p_n = SunPowerW(def, rho_eff, tau) + DarkPowerW(def);
  e.snr = p_n > 0.0 ? e.power_w / p_n : std::numeric_limits<double>::infinity();
  e.detection_probability = e.snr > 0.0 ? std::exp(-def.snr_threshold / e.snr) : 0.0;
  return e;
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

namespace {

// Uniform draws in [0, 1) for the backscatter of one column, from their own stream (the range noise of the
// surface echoes stays the same with and without weather).
struct LidarUniformStream {
  uint64_t state;
  double Next() { return static_cast<double>(Mix64(state += 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53; }
};

LidarUniformStream LidarColumnUniforms(uint64_t scan_seed, int column) {
  return LidarUniformStream{Mix64(scan_seed ^ 0x6261636b73636174ull ^ Mix64(static_cast<uint64_t>(column) + 7))};
}

// Standard normal draws from one column's own stream, seeded by (scan seed, column) and independent of
// which thread casts the column.
NormalStream ColumnNormals(uint64_t scan_seed, int column) {
  return NormalStream(Mix64(scan_seed ^ Mix64(static_cast<uint64_t>(column) + 1)));
}

// Everything about a scan that does not change from column to column: geometry tables and the physics
// constants of eq. 3, 5 and 6 folded into per-hit multipliers.
struct ScanSetup {
  const LidarDef* def = nullptr;
  Pose start;
  Vec3 velocity_mps = Vec3::Zero(), angular_velocity_radps = Vec3::Zero();
  int columns = 0, channels = 0, n_sub = 0, per_column = 0;
  double sub_cos[5] = {}, sub_sin[5] = {};  // cos and sin of each sub-ray's azimuth offset
  std::vector<double> elevation_cs;          // (cos, sin) of channel elevation + sub-ray offset, [ch][s]
  // P_r = pr_k * rho * cos_i * tau^2 / d^pr_power per sub-ray; P_sun = sun_k * rho * tau per sub-ray.
  double pr_k = 0.0, sun_k = 0.0, p_dark = 0.0, alpha = 0.0;
  bool d3 = false;
  std::vector<double> reflectance, noise_sigma_m, material_max_range_m;  // by material id
  std::vector<double> power_reflectance;  // reflectance x retro_gain: what eq. 3 sees, by material id
  // Reflectivity calibration: rho_cal = P_r d^n / (cal_k tau_cal^2), tau_cal = exp(-cal_alpha d).
  double cal_k = 0.0, cal_alpha = 0.0;
  uint64_t noise_seed = 0;
  // Fog and rain backscatter (docs/WORLD.md "Weather"): per beam, an echo from the air at bs_range_m +
  // U bs_depth_m with probability bs_p, power u bs_power_w and SNR u bs_snr (u ~ Exp(1), given detection).
  double bs_p = 0.0, bs_range_m = 0.0, bs_depth_m = 0.0, bs_power_w = 0.0, bs_snr = 0.0;
  double bs_rho = 0.0;  // calibrated reflectance of a mean soft echo at bs_range_m (scaled by u per echo)
  // Constant twist (as PoseAtTime): R(t) = (I + sin th K + (1 - cos th) K^2) R0 with th = |w| t and
  // K = [w / |w|]x; p(t) = p0 + v t + (1 - cos th) / |w|^2 w x v + (t - sin th / |w|) / |w|^2 w x (w x v).
  Eigen::Matrix3d r0, k1, k2;
  Vec3 wv = Vec3::Zero(), wwv = Vec3::Zero();
  double w = 0.0;

  // Sensor orientation and position at `t_s` after the scan start: one sin/cos pair per column.
  void PoseAt(double t_s, Eigen::Matrix3d* rot, Vec3* origin) const {
    if (w * std::abs(t_s) < 1e-9) {
      *rot = r0;
      *origin = start.position_m + velocity_mps * t_s;
      return;
    }
    const double th = w * t_s, sn = std::sin(th), cs = std::cos(th);
    *rot = (Eigen::Matrix3d::Identity() + sn * k1 + (1.0 - cs) * k2) * r0;
    *origin = start.position_m + velocity_mps * t_s + wv * ((1.0 - cs) / (w * w)) + wwv * ((t_s - sn / w) / (w * w));
  }

  size_t MaterialIndex(uint32_t id) const { return id < reflectance.size() ? id : 0; }
};

ScanSetup MakeSetup(const Pose& start, const Vec3& velocity_mps, const Vec3& angular_velocity_radps,
                    const LidarDef& def) {
  ScanSetup su;
  su.def = &def;
  su.start = start;
  su.velocity_mps = velocity_mps;
  su.angular_velocity_radps = angular_velocity_radps;
  su.r0 = start.orientation.normalized().toRotationMatrix();
  su.w = angular_velocity_radps.norm();
  su.k1.setZero();
  if (su.w > 0.0) {
    const Vec3 a = angular_velocity_radps / su.w;
    su.k1 << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  }
  su.k2 = su.k1 * su.k1;
  su.wv = angular_velocity_radps.cross(velocity_mps);
  su.wwv = angular_velocity_radps.cross(su.wv);
  su.columns = def.ColumnCount();
  su.channels = static_cast<int>(def.channel_elevations_rad.size());
  double offsets[5][2];
  su.n_sub = SubRayOffsets(def, offsets);
  su.per_column = su.channels * su.n_sub;
  for (int s = 0; s < su.n_sub; ++s) su.sub_cos[s] = std::cos(offsets[s][0]), su.sub_sin[s] = std::sin(offsets[s][0]);
  su.elevation_cs.resize(static_cast<size_t>(su.per_column) * 2);
  for (int ch = 0; ch < su.channels; ++ch)
    for (int s = 0; s < su.n_sub; ++s) {
      const double el = def.channel_elevations_rad[ch] + offsets[s][1];
      su.elevation_cs[(static_cast<size_t>(ch) * su.n_sub + s) * 2] = std::cos(el);
      su.elevation_cs[(static_cast<size_t>(ch) * su.n_sub + s) * 2 + 1] = std::sin(el);
    }
  // Each sub-ray carries 1/n of the beam power; the background fills the whole IFOV (eq. 3, 5, 6).
  const double n = su.n_sub;
  su.d3 = def.range_law == RangeLaw::kSeedD3;
  const double q_v = su.d3 ? std::sqrt(def.beam_divergence_h_rad * def.beam_divergence_v_rad) : 1.0;
  su.pr_k = def.receiver_aperture_area_m2 * def.transmit_power_w * def.optics_efficiency / (q_v * kPi * n);
  su.sun_k = def.sun_irradiance_w_per_m2_nm * def.optical_bandwidth_nm * def.receiver_aperture_area_m2 *
             def.ifov_rad * def.ifov_rad * def.optics_efficiency / n;
  su.p_dark = DarkPowerW(def);
  su.alpha = def.extinction_coefficient_per_m;
  su.cal_k = su.pr_k * n;  // the whole beam on the target
  su.cal_alpha = kReflectivityCalibrationExtinctionPerM;
  if (def.backscatter_per_m_sr > 0.0) {
    const SoftEcho e = MeanSoftEcho(def);
    su.bs_range_m = e.range_m;
    su.bs_depth_m = e.depth_m;
    su.bs_power_w = e.power_w;
    su.bs_snr = e.snr;
    su.bs_p = e.detection_probability;
    // A soft echo's calibrated reflectance, taken at the overlap range (its depth changes it by < 1 %).
    const double r = su.bs_range_m, tau_cal = std::exp(-su.cal_alpha * r);
    su.bs_rho = su.bs_power_w * (su.d3 ? r * r * r : r * r) / (su.cal_k * tau_cal * tau_cal);
  }
  for (const LidarMaterial& m : def.materials) {
    su.reflectance.push_back(m.reflectance);
    su.power_reflectance.push_back(m.reflectance * m.retro_gain);
    su.noise_sigma_m.push_back(def.range_noise_k * def.range_resolution_m * m.noise_scale);
    su.material_max_range_m.push_back(m.max_range_m);
  }
  return su;
}

// One thread's buffers: the packets of up to one block of columns and their hits, and the central
// beam directions (sensor frame) that place the points. Allocated once per scan, never per hit.
struct ScanWorkspace {
  std::vector<RayPacket16> rays;
  std::vector<HitPacket16> hits;
  std::vector<double> central;  // [column in chunk][channel] x, y, z
  std::vector<float> column_time;
  std::vector<double> dist, power, sun, snr;  // per ray of the block, see RayPhysics
  std::vector<LidarPoint> points;
};

constexpr int kBlockColumns = 64;

// Fills ws.rays with the rays of columns [c0, c1), packed 16 to a packet in casting order; returns
// the packet count. Each column is cast from the sensor pose at its own firing time (motion distortion).
size_t GenerateRays(const ScanSetup& su, int c0, int c1, ScanWorkspace& ws) {
  const LidarDef& def = *su.def;
  const size_t n_rays = static_cast<size_t>(c1 - c0) * su.per_column;
  const size_t n_packets = (n_rays + 15) / 16;
  if (ws.rays.size() < n_packets) {
    ws.rays.resize(n_packets), ws.hits.resize(n_packets);
    ws.dist.resize(n_packets * 16), ws.power.resize(n_packets * 16), ws.sun.resize(n_packets * 16);
    ws.snr.resize(n_packets * 16);
  }
  if (ws.central.size() < static_cast<size_t>(c1 - c0) * su.channels * 3) {
    ws.central.resize(static_cast<size_t>(c1 - c0) * su.channels * 3);
    ws.column_time.resize(c1 - c0);
  }
  const auto tmax = static_cast<float>(def.max_range_m);
  size_t k = 0;  // ray index within the chunk
  double last_t = std::numeric_limits<double>::quiet_NaN();
  Eigen::Matrix3d rot = Eigen::Matrix3d::Identity();
  Vec3 origin = Vec3::Zero();
  for (int c = c0; c < c1; ++c) {
    const double t = def.ColumnTimeOffsetS(c);
    ws.column_time[c - c0] = static_cast<float>(t);
    if (!(t == last_t)) {  // a flash scanner fires every column from one pose
      su.PoseAt(t, &rot, &origin);
      last_t = t;
    }
    // Directions (cos el cos az, cos el sin az, sin el): one sin/cos pair per column, the sub-ray
    // azimuth offsets by the angle-sum identities.
    const double az = def.ColumnAzimuthRad(c);
    const double ca = std::cos(az), sa = std::sin(az);
    double az_cos[5], az_sin[5];
    for (int s = 0; s < su.n_sub; ++s) {
      az_cos[s] = ca * su.sub_cos[s] - sa * su.sub_sin[s];
      az_sin[s] = sa * su.sub_cos[s] + ca * su.sub_sin[s];
    }
    const auto ox = static_cast<float>(origin.x()), oy = static_cast<float>(origin.y()),
               oz = static_cast<float>(origin.z());
    // rot * (cos el cos az, cos el sin az, sin el) = cos el * (rot * (cos az, sin az, 0)) + sin el * rot.col(2):
    // per sub-ray azimuth one rotation, per ray two scaled sums.
    Vec3 horizontal[5];
    for (int s = 0; s < su.n_sub; ++s) horizontal[s] = rot.col(0) * az_cos[s] + rot.col(1) * az_sin[s];
    const Vec3 up = rot.col(2);
    double* central = &ws.central[static_cast<size_t>(c - c0) * su.channels * 3];
    for (int ch = 0; ch < su.channels; ++ch) {
      const double* el_cs = &su.elevation_cs[static_cast<size_t>(ch) * su.n_sub * 2];
      central[3 * ch] = el_cs[0] * az_cos[0];
      central[3 * ch + 1] = el_cs[0] * az_sin[0];
      central[3 * ch + 2] = el_cs[1];
      for (int s = 0; s < su.n_sub; ++s, ++k) {
        const double ce = el_cs[2 * s], se = el_cs[2 * s + 1];
        const Vec3 d = ce * horizontal[s] + se * up;
        RayPacket16& p = ws.rays[k >> 4];
        const size_t lane = k & 15;
        p.org_x[lane] = ox, p.org_y[lane] = oy, p.org_z[lane] = oz;
        p.dir_x[lane] = static_cast<float>(d.x());
        p.dir_y[lane] = static_cast<float>(d.y());
        p.dir_z[lane] = static_cast<float>(d.z());
        p.tmax_m[lane] = tmax;
        p.count = static_cast<int>(lane) + 1;
      }
    }
  }
  return n_packets;
}

// Per-ray physics of a block's packets, structure of arrays in casting order: distance (+inf where the
// ray found nothing within range), received power P_r (eq. 3) and sun background P_sun (eq. 5) of each
// sub-ray, and the signal-to-noise ratio (eq. 2) the ray would have alone (a beam's when it has one
// ray). Branch-free over a packet's lanes (the material's reflectance looked up first), so the
// exponentials and divisions of 16 rays run side by side in vector registers; the range law is a
// template argument, since a select on it would keep the loop scalar.
template <bool kD3>
void RayPhysics(const ScanSetup& su, size_t n_packets, ScanWorkspace& ws) {
  const double min_range = su.def->min_range_m, alpha = su.alpha, pr_k = su.pr_k, sun_k = su.sun_k,
               p_dark = su.p_dark;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (size_t p = 0; p < n_packets; ++p) {
    const HitPacket16& hp = ws.hits[p];
    double rho[16], pr_rho_cos[16];
    // The tag is undefined on a miss; MaterialIndex keeps the read in the table either way. A
    // retro-reflector returns retro_gain times more of the laser, but scatters the sun diffusely.
    for (int lane = 0; lane < 16; ++lane) {
      const size_t m = su.MaterialIndex(hp.tag[lane].material_id);
      rho[lane] = su.reflectance[m];
      pr_rho_cos[lane] = pr_k * su.power_reflectance[m] * hp.cos_incidence[lane];
    }
    double* dist = &ws.dist[p * 16];
    double* power = &ws.power[p * 16];
    double* sun = &ws.sun[p * 16];
    double* snr = &ws.snr[p * 16];
#pragma omp simd
    for (int lane = 0; lane < 16; ++lane) {
      const double df = hp.distance_m[lane];
      const bool hit = (df >= min_range) & (df != kInf);  // NaN-safe: a NaN distance is no hit
      const double d = hit ? df : 1.0;
      const double tau = ExpNonPositive(-alpha * d);  // shared by eq. 3 and 5
      const double d_n = kD3 ? d * d * d : d * d;     // P_r falls as d^-3 (seed_d3) or d^-2
      const double pw = pr_rho_cos[lane] * tau * tau / d_n;
      dist[lane] = hit ? d : kInf;
      power[lane] = hit ? pw : 0.0;
      const double p_sun = sun_k * rho[lane] * tau;
      sun[lane] = hit ? p_sun : 0.0;
      snr[lane] = pw / (p_sun + p_dark);  // eq. 2 for a beam of this one ray
    }
  }
}

// Casts columns [c0, c1) and appends their points to ws.points in firing order.
void CastColumns(const Scene& scene, const ScanSetup& su, int c0, int c1, ScanWorkspace& ws) {
  const LidarDef& def = *su.def;
  // A soft echo's calibrated reflectance per W of its power (the air's mean echo reads as bs_rho).
  const double soft_rho_per_w = su.bs_power_w > 0.0 ? su.bs_rho / su.bs_power_w : 0.0;
  for (int b0 = c0; b0 < c1; b0 += kBlockColumns) {
    const int b1 = std::min(c1, b0 + kBlockColumns);
    const size_t n_packets = GenerateRays(su, b0, b1, ws);
    scene.IntersectPackets(std::span<const RayPacket16>(ws.rays.data(), n_packets),
                           std::span<HitPacket16>(ws.hits.data(), n_packets));
    (su.d3 ? RayPhysics<true> : RayPhysics<false>)(su, n_packets, ws);

    // Every beam yields at most min(n_sub, max_echoes) points: room for all of them (growing
    // geometrically), so that appending never reallocates inside the loops below.
    const int soft = su.bs_p > 0.0 ? 1 : 0;
    const size_t needed = ws.points.size() + static_cast<size_t>(b1 - b0) * su.channels *
                                                 static_cast<size_t>(std::min(su.n_sub + soft, def.max_echoes));
    if (ws.points.capacity() < needed) ws.points.reserve(std::max(needed, 2 * ws.points.capacity()));
    size_t k = 0;
    for (int c = b0; c < b1; ++c) {
      NormalStream normal = ColumnNormals(su.noise_seed, c);
      LidarUniformStream uniform = LidarColumnUniforms(su.noise_seed, c);
      const float t = ws.column_time[c - b0];
      const double* central = &ws.central[static_cast<size_t>(c - b0) * su.channels * 3];
      // One echo of beam `ch` at distance d with power p_r and signal-to-noise ratio snr, from the surface
      // `tag`: detection (eq. 2 and the optional per-material threshold distance), range noise on the
      // distance only (angles are fixed by the hardware raster, seed 002 §4.3.3), and the point.
      auto emit = [&](int ch, int echo, double d, double p_r, double snr, const SurfaceTag& tag) {
        if (!(snr >= def.snr_threshold)) return false;
        const size_t m = su.MaterialIndex(tag.material_id);
        if (su.material_max_range_m[m] > 0.0 && d > su.material_max_range_m[m]) return false;
        const double sigma = su.noise_sigma_m[m];
        const double measured = sigma > 0.0 ? std::max(0.0, d + sigma * normal.Next()) : d;
        // Built in place: a point assembled field by field on the stack and then copied would be read
        // back in wider words than it was written, which the CPU cannot forward from its store buffer.
        LidarPoint& pt = ws.points.emplace_back();  // zeroed, padding included
        pt.x_m = static_cast<float>(central[3 * ch] * measured);
        pt.y_m = static_cast<float>(central[3 * ch + 1] * measured);
        pt.z_m = static_cast<float>(central[3 * ch + 2] * measured);
        pt.intensity_w = static_cast<float>(p_r);
        pt.snr = static_cast<float>(snr);
        pt.ring = static_cast<uint16_t>(ch);
        pt.column = static_cast<uint16_t>(c);
        pt.time_offset_s = t;
        pt.echo = static_cast<uint8_t>(echo);
        // Calibrated reflectivity from the power and the measured range, as the sensor computes it.
        const double d_n = su.d3 ? measured * measured * measured : measured * measured;
        const double tau_cal = std::exp(-su.cal_alpha * measured);
        pt.reflectivity = measured > 0.0 ? ReflectivityValue(p_r * d_n / (su.cal_k * tau_cal * tau_cal)) : 0;
        pt.return_type = static_cast<uint8_t>(point_record::ReturnType::kOnly);
        pt.entity_id = tag.entity_id;
        pt.class_id = tag.class_id;
        return true;
      };
      // The echo of the air in fog or rain (docs/WORLD.md "Weather"): drawn for every beam, it comes back
      // when its fluctuating power clears the threshold and no surface lies nearer. Returns its distance
      // (+inf: none) and fills its power and SNR.
      auto soft_draw = [&](double* p_r, double* snr) {
        if (!(su.bs_p > 0.0)) return std::numeric_limits<double>::infinity();
        const double v = 1.0 - uniform.Next();  // (0, 1]
        if (!(v < su.bs_p)) return std::numeric_limits<double>::infinity();
        // The echo's Exp(1) power factor, given that it cleared the threshold. In single precision: the power and
        // the SNR are recorded as floats, and logf costs half of log on every beam of a foggy scan.
        const double u = -static_cast<double>(std::log(static_cast<float>(v)));
        *p_r = u * su.bs_power_w;
        *snr = u * su.bs_snr;
        return su.bs_range_m + su.bs_depth_m * uniform.Next();
      };
      auto emit_soft = [&](int ch, int echo, double d, double p_r, double snr) {
        LidarPoint& pt = ws.points.emplace_back();
        pt.x_m = static_cast<float>(central[3 * ch] * d);
        pt.y_m = static_cast<float>(central[3 * ch + 1] * d);
        pt.z_m = static_cast<float>(central[3 * ch + 2] * d);
        pt.intensity_w = static_cast<float>(p_r);
        pt.snr = static_cast<float>(snr);
        pt.ring = static_cast<uint16_t>(ch);
        pt.column = static_cast<uint16_t>(c);
        pt.time_offset_s = t;
        pt.echo = static_cast<uint8_t>(echo);
        pt.reflectivity = ReflectivityValue(p_r * soft_rho_per_w);
        pt.return_type = static_cast<uint8_t>(point_record::ReturnType::kOnly);
        pt.class_id = kWeatherClassId;
      };
      // Several echoes of one beam: first, intermediate and last (each was emitted as the only one).
      auto mark_echoes = [&](size_t beam_first) {
        const size_t count = ws.points.size() - beam_first;
        if (count < 2) return;
        using point_record::ReturnType;
        for (size_t e = 0; e < count; ++e)
          ws.points[beam_first + e].return_type = static_cast<uint8_t>(
              e == 0 ? ReturnType::kFirst : e == count - 1 ? ReturnType::kLast : ReturnType::kIntermediate);
      };
      if (su.n_sub == 1) {
        // One ray per beam: its hit is the beam's only surface echo, its P_sun the beam's background, and the
        // signal-to-noise ratio was computed with the ray's physics.
        for (int ch = 0; ch < su.channels; ++ch, ++k) {
          double soft_p = 0.0, soft_snr = 0.0;
          const double soft_d = soft_draw(&soft_p, &soft_snr);
          const bool hit = ws.dist[k] != std::numeric_limits<double>::infinity();
          if (soft_d < ws.dist[k]) {
            const size_t beam_first = ws.points.size();
            emit_soft(ch, 0, soft_d, soft_p, soft_snr);
            if (hit && def.max_echoes > 1) emit(ch, 1, ws.dist[k], ws.power[k], ws.snr[k], ws.hits[k >> 4].tag[k & 15]);
            mark_echoes(beam_first);
            continue;
          }
          if (!hit) continue;
          emit(ch, 0, ws.dist[k], ws.power[k], ws.snr[k], ws.hits[k >> 4].tag[k & 15]);
        }
        continue;
      }
      for (int ch = 0; ch < su.channels; ++ch, k += su.n_sub) {
        // The beam's sub-ray hits in small fixed arrays sorted by distance as they arrive (insertion
        // sort; equal distances keep sub-ray order); P_sun sums over all of them.
        double dist[5], power[5];
        int sub_index[5];
        SurfaceTag tag[5];
        int n = 0;
        double p_sun = 0.0;
        for (int s = 0; s < su.n_sub; ++s) {
          const size_t i = k + s;
          const double d = ws.dist[i];
          if (d == std::numeric_limits<double>::infinity()) continue;
          p_sun += ws.sun[i];
          int j = n++;
          for (; j > 0 && dist[j - 1] > d; --j) {
            dist[j] = dist[j - 1], power[j] = power[j - 1], sub_index[j] = sub_index[j - 1], tag[j] = tag[j - 1];
          }
          dist[j] = d, power[j] = ws.power[i], sub_index[j] = s, tag[j] = ws.hits[i >> 4].tag[i & 15];
        }
        double soft_p = 0.0, soft_snr = 0.0;
        const double soft_d = soft_draw(&soft_p, &soft_snr);
        const bool soft = soft_d < (n > 0 ? dist[0] : std::numeric_limits<double>::infinity());
        if (n == 0 && !soft) continue;

        // Merge sub-ray hits closer than the merge distance into one echo (seed 002 §4.3.2); an echo
        // made of k of n sub-rays carries k/n of the beam power (partial illumination at an edge).
        const size_t beam_first = ws.points.size();
        int echo = 0;
        if (soft) emit_soft(ch, echo++, soft_d, soft_p, soft_snr);
        for (int b = 0; b < n && echo < def.max_echoes;) {
          int e = b + 1;
          while (e < n && dist[e] - dist[e - 1] < def.echo_merge_distance_m) ++e;
          double sum_d = 0.0, p_r = 0.0;
          int label = b;  // the sub-ray nearest the centre names the echo's surface
          for (int q = b; q < e; ++q) {
            sum_d += dist[q];
            p_r += power[q];
            if (sub_index[q] < sub_index[label]) label = q;
          }
          const double d = sum_d / static_cast<double>(e - b);
          b = e;
          if (emit(ch, echo, d, p_r, p_r / (p_sun + su.p_dark), tag[label])) ++echo;
        }
        mark_echoes(beam_first);
      }
    }
  }
}

}  // namespace

std::vector<RayPacket16> ScanRayPackets(const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
                                        const Vec3& angular_velocity_radps, const LidarDef& def) {
  assert(def.Validate().empty());
  const ScanSetup su = MakeSetup(sensor_at_scan_start, velocity_mps, angular_velocity_radps, def);
  std::vector<RayPacket16> all;
  ScanWorkspace ws;
  for (int b0 = 0; b0 < su.columns; b0 += kBlockColumns) {
    const size_t n = GenerateRays(su, b0, std::min(su.columns, b0 + kBlockColumns), ws);
    all.insert(all.end(), ws.rays.begin(), ws.rays.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return all;
}

std::vector<LidarPoint> Scan(const Scene& scene, const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
                             const Vec3& angular_velocity_radps, const LidarDef& def, std::mt19937_64& rng,
                             const std::function<void(double)>& before_block) {
  std::vector<LidarPoint> out;
  ScanInto(scene, sensor_at_scan_start, velocity_mps, angular_velocity_radps, def, rng, out, before_block);
  return out;
}

void ScanInto(const Scene& scene, const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
              const Vec3& angular_velocity_radps, const LidarDef& def, std::mt19937_64& rng, std::vector<LidarPoint>& out,
              const std::function<void(double)>& before_block) {
  assert(def.Validate().empty());
  ScanSetup su = MakeSetup(sensor_at_scan_start, velocity_mps, angular_velocity_radps, def);
  su.noise_seed = rng();
  const int threads = std::clamp(def.threads, 1, 64);

  // Segments run one after another: with before_block, the blocks of 64 columns (the scene is re-posed
  // between them); without it, the whole scan. Each segment is split into `threads` contiguous column
  // ranges whose points are appended in column order, so the output does not depend on the split.
  std::vector<ScanWorkspace> ws(static_cast<size_t>(threads));
  // The points go straight into `out`'s memory (kept from the caller's last scan: no fresh pages to fault in).
  ws[0].points = std::move(out);
  ws[0].points.clear();
  // Room for one surface echo a beam, and one from the air too in fog or rain.
  ws[0].points.reserve(static_cast<size_t>(su.columns) * su.channels * (su.bs_p > 0.0 ? 2 : 1));
  const int segment_columns = before_block ? kBlockColumns : std::max(su.columns, 1);
  int seg0 = 0, seg1 = 0;
  auto part = [&](int k, int* c0, int* c1) {
    const int n = seg1 - seg0;
    *c0 = seg0 + static_cast<int>(static_cast<int64_t>(n) * k / threads);
    *c1 = seg0 + static_cast<int>(static_cast<int64_t>(n) * (k + 1) / threads);
  };

  // Helper threads for this scan: they wait at `start` for a segment, cast their part, meet at `done`.
  std::barrier<> start(threads), done(threads);
  bool finished = false;
  std::vector<std::thread> helpers;
  for (int k = 1; k < threads; ++k)
    helpers.emplace_back([&, k] {
      for (;;) {
        start.arrive_and_wait();
        if (finished) return;
        int c0, c1;
        part(k, &c0, &c1);
        CastColumns(scene, su, c0, c1, ws[k]);
        done.arrive_and_wait();
      }
    });
  struct Join {  // releases and joins the helpers however the loop below ends
    std::vector<std::thread>& helpers;
    std::barrier<>& start;
    bool& finished;
    ~Join() {
      if (helpers.empty()) return;
      finished = true;
      start.arrive_and_wait();
      for (auto& h : helpers) h.join();
    }
  } join{helpers, start, finished};

  for (seg0 = 0; seg0 < su.columns; seg0 = seg1) {
    seg1 = std::min(su.columns, seg0 + segment_columns);
    // Moving entities are posed at the block's middle firing time (within half a block of each ray's own).
    if (before_block) before_block(0.5 * (def.ColumnTimeOffsetS(seg0) + def.ColumnTimeOffsetS(seg1 - 1)));
    if (threads > 1) start.arrive_and_wait();
    int c0, c1;
    part(0, &c0, &c1);
    CastColumns(scene, su, c0, c1, ws[0]);
    if (threads > 1) {
      done.arrive_and_wait();
      for (int k = 1; k < threads; ++k) {
        ws[0].points.insert(ws[0].points.end(), ws[k].points.begin(), ws[k].points.end());
        ws[k].points.clear();
      }
    }
  }
  out = std::move(ws[0].points);
}

}  // namespace platoon::sensors
