#pragma once
/// Lidar sensor model: ray casting with beam-divergence sub-rays and multiple echoes (seed 002 §4.3),
/// detection by the signal-to-noise ratio of seed 000 eq. 2-6, Gaussian range noise, and motion
/// distortion of rotating scanners. A pure function of (scene, sensor pose and motion, LidarDef, rng).
/// Equations and figures: docs/LIDAR.md.

#include "platoon/geometry.hpp"
#include "platoon/sensors/scene.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::sensors {

/// How the columns of one scan are timed.
enum class ScanKind {
  kRotating,  ///< Columns fired one after another as the scanner turns (motion distortion).
  kFlash,     ///< Solid-state/flash: every beam fired at the scan start time.
};

/// Received-power law, seed 000 eq. 3 and its extended-target variant (docs/LIDAR.md).
enum class RangeLaw {
  kLambertianD2,  ///< "lambertian_d2": extended Lambertian target filling the beam, P_r ~ 1/d^2. Default.
  kSeedD3,        ///< "seed_d3": seed 000 eq. 3 as printed, P_r ~ 1/(Q_V d^3).
};

/// Parses "lambertian_d2" or "seed_d3"; nullopt for anything else.
std::optional<RangeLaw> ParseRangeLaw(std::string_view name);
/// Config name of a range law ("lambertian_d2" or "seed_d3").
std::string_view RangeLawName(RangeLaw law);

/// Which sub-rays sample the divergent beam around its central ray (seed 002 §4.3.2, Fig. 4.11).
enum class DivergenceSampling {
  kCentre,         ///< Central ray only (1 ray per beam).
  kElevationPair,  ///< Centre plus +-half the vertical divergence (3 rays); IBEO-like tall beams.
  kAzimuthPair,    ///< Centre plus +-half the horizontal divergence (3 rays).
  kCross,          ///< Centre plus both pairs (5 rays).
};

/// Surface properties the lidar sees, indexed by SurfaceTag::material_id.
struct LidarMaterial {
  double reflectance = 0.2;   ///< Diffuse reflectance rho_t at the laser wavelength, 0..1. Asphalt 0.08, white paint 0.8.
  double noise_scale = 1.0;   ///< Multiplies the range noise sigma (seed 002 §4.3.3: grass ~5, walls 1).
  double max_range_m = 0.0;   ///< Empirical per-material detection threshold d_threshold(R), in m; 0 = none.
  double retro_gain = 1.0;    ///< Power returned towards the sensor over a Lambertian surface of the same reflectance, >= 1. Diffuse 1, retro-reflective sheeting ~100.
};

/// Default material table: 0 generic 0.2, 1 asphalt 0.08, 2 concrete 0.3, 3 car paint 0.5,
/// 4 white wall 0.8, 5 vegetation 0.4 (noise x5), 6 retro-reflector 0.95 with retro_gain 100, 7 black car 0.05.
std::vector<LidarMaterial> DefaultLidarMaterials();

/// Read-only lidar definition. Angles in the sensor frame: x forward, y left, z up; azimuth from +x
/// towards +y, elevation up from the x-y plane.
struct LidarDef {
  // --- Scan pattern ---
  std::vector<double> channel_elevations_rad;  ///< Elevation of each channel (ring), in rad.
  double azimuth_min_rad = -0.96;              ///< First azimuth of the field of view, in rad.
  double azimuth_max_rad = 0.96;               ///< Last azimuth (inclusive when on the grid), in rad.
  double azimuth_resolution_rad = 0.0043633;   ///< Column spacing, in rad. Typical 0.25 deg.
  ScanKind kind = ScanKind::kRotating;         ///< Rotating scanner or flash.
  double rotation_rate_hz = 25.0;              ///< Revolutions per second of a rotating scanner; scan rate of a flash. 10-25.
  bool clockwise = false;  ///< Rotating: columns fired from azimuth_max down to azimuth_min (Velodyne-style).
  double min_range_m = 0.3;    ///< Returns closer than this are dropped, in m.
  double max_range_m = 200.0;  ///< Ray-cast limit, in m (seed 002 §4.3.1.2).

  // --- Optics and detector, seed 000 eq. 2-6 ---
  double transmit_power_w = 20.0;             ///< Peak optical transmit power P_t, in W (effective, after the emitter optics). 5-100.
  double receiver_aperture_area_m2 = 5.0e-4;  ///< Receiving lens area A_r, in m^2 (25 mm aperture ~ 5e-4).
  double optics_efficiency = 0.8;             ///< System efficiency eta_sys (optical and filter losses), 0..1.
  double extinction_coefficient_per_m = 2.0e-4;  ///< Atmospheric extinction alpha, in 1/m; tau = exp(-alpha d). Clear air 2e-4, fog 0.03.
  double sun_irradiance_w_per_m2_nm = 0.7;    ///< Solar spectral irradiance E_Si at the wavelength, in W/(m^2 nm). Noon ~0.7-1.0, night 0.
  double optical_bandwidth_nm = 10.0;         ///< Receiver filter bandwidth B_lambda, in nm. Typical 5-20.
  double ifov_rad = 0.0035;                   ///< Instantaneous field of view of a detector, in rad.
  double dark_current_a = 2.0e-9;             ///< Photodiode dark current I_D, in A.
  double responsivity_a_per_w = 0.6;          ///< Peak responsivity R_max of the photodiode, in A/W.
  double snr_threshold = 5.0;                 ///< Detection threshold on SNR = P_r / P_n. Typical 5.
  RangeLaw range_law = RangeLaw::kLambertianD2;  ///< Received-power law, see RangeLaw.

  // --- Beam divergence and echoes, seed 002 §4.3.2 ---
  double beam_divergence_h_rad = 0.0014;  ///< Full horizontal beam divergence, in rad.
  double beam_divergence_v_rad = 0.014;   ///< Full vertical beam divergence, in rad.
  DivergenceSampling divergence_sampling = DivergenceSampling::kElevationPair;  ///< Sub-rays per beam.
  double echo_merge_distance_m = 0.5;  ///< Sub-ray hits closer than this are averaged into one echo, in m.
  int max_echoes = 3;                  ///< Most echoes reported per beam (nearest first).

  // --- Range noise, seed 000 / seed 002 §4.3.3 ---
  double range_resolution_m = 0.04;  ///< Datasheet range resolution, in m.
  double range_noise_k = 0.5;        ///< Noise sigma = k * range_resolution_m * material noise_scale.

  std::vector<LidarMaterial> materials = DefaultLidarMaterials();  ///< Indexed by SurfaceTag::material_id; unknown ids use entry 0.

  // --- Weather (docs/WORLD.md "Weather"; LidarInConditions sets the air's two coefficients) ---
  double wavelength_nm = 905.0;      ///< Laser wavelength, in nm (fog extinction's wavelength exponent). 905 or 1550.
  double pulse_duration_s = 5e-9;    ///< Laser pulse length tau_p, in s: a soft target's echo integrates c tau_p / 2 of air. 3-10 ns.
  double overlap_range_m = 2.0;      ///< Range of full transmitter-receiver overlap, in m: fog and rain echo from here. 1-5.
  /// Volume backscatter coefficient of the air beta, in 1/(m sr): 0 in clear air (no echoes from it); fog or
  /// rain of extinction alpha give alpha / kLidarRatioWaterSr. Each beam may then return a soft echo
  /// (class kWeatherClassId) from just beyond overlap_range_m.
  double backscatter_per_m_sr = 0.0;

  // --- Execution (not physics) ---
  int threads = 1;  ///< Threads that cast one scan, 1..64; the scan's points do not depend on it. 1 or 2.

  /// Number of azimuth columns per scan.
  int ColumnCount() const;
  /// Azimuth of column `c`, in rad (column 0 is the first one fired).
  double ColumnAzimuthRad(int c) const;
  /// Firing time of column `c` after the scan start, in s (0 for flash).
  double ColumnTimeOffsetS(int c) const;
  /// Beams per scan (columns x channels), without sub-rays.
  int BeamCount() const { return ColumnCount() * static_cast<int>(channel_elevations_rad.size()); }
  /// Rays cast per beam (1, 3 or 5).
  int RaysPerBeam() const;
  /// Empty if valid, otherwise a message naming the first bad field.
  std::string Validate() const;
};

/// Generic 16-channel defaults (a valid LidarDef to start from).
LidarDef DefaultLidarDef();
/// IBEO LUX: 4 layers over 3.2 deg, 110 deg (+50/-60) at 0.25 deg, 25 Hz, tall beam (elevation pair).
LidarDef IbeoLuxDef();
/// Valeo SCALA (gen 1): 4 layers over 3.2 deg, 145 deg at 0.25 deg, 25 Hz.
LidarDef ValeoScalaDef();
/// Velodyne VLP-16: 16 channels -15..+15 deg, 360 deg at 0.2 deg, 10 Hz.
LidarDef Vlp16Def();
/// Velodyne HDL-64E: 64 channels +2..-24.9 deg, 360 deg at 0.1728 deg (2083 columns), 10 Hz.
LidarDef Hdl64Def();
/// Ouster OS1-128: 128 channels -22.5..+22.5 deg, 1024 columns, 10 Hz.
LidarDef Os1_128Def();

/// class_id of an echo from fog or rain drops (no surface; entity_id 0); SemanticClass::kWeather.
inline constexpr uint32_t kWeatherClassId = 9;

/// One detected echo. Coordinates are in the sensor frame at the beam's own firing time (raw, not
/// motion-compensated), placed on the nominal beam direction at the measured range.
struct LidarPoint {
  float x_m = 0, y_m = 0, z_m = 0;  ///< Point in the sensor frame at firing time, in m.
  float intensity_w = 0;           ///< Received optical power P_r of the echo (eq. 3), in W.
  float snr = 0;                   ///< Signal-to-noise ratio P_r / (P_sun + P_DK) (eq. 2).
  uint16_t ring = 0;               ///< Channel index into LidarDef::channel_elevations_rad.
  uint16_t column = 0;             ///< Azimuth column index (firing order).
  float time_offset_s = 0;         ///< Firing time after the scan start, in s.
  uint8_t echo = 0;                ///< Echo index, 0 = nearest.
  uint8_t reflectivity = 0;        ///< Calibrated reflectivity 0..255 (ReflectivityValue of CalibratedReflectance).
  uint8_t return_type = 0;         ///< Echo's place among its beam's echoes (point_record::ReturnType as a number).
  uint32_t entity_id = 0;          ///< Entity of the surface that produced the echo.
  uint32_t class_id = 0;           ///< Semantic class of that surface.
  /// Measured range, in m.
  double RangeM() const;
};

/// SNR (eq. 2) of a return from a surface of `reflectance` at `distance_m` and incidence angle
/// `incidence_rad`, for the whole beam on the surface.
double LidarSnr(const LidarDef& def, double reflectance, double incidence_rad, double distance_m);

/// Atmospheric extinction the reflectivity calibration assumes, in 1/m: clear air. In fog (a larger
/// LidarDef::extinction_coefficient_per_m) targets read darker, as on a real sensor.
inline constexpr double kReflectivityCalibrationExtinctionPerM = 2.0e-4;

/// The reflectance a sensor calibrated on Lambertian targets at normal incidence infers from an echo of
/// received power `p_r_w` (W, the whole beam) at measured range `range_m` (m): eq. (3) solved for
/// rho_t with cos(theta_i) = 1 and tau from kReflectivityCalibrationExtinctionPerM (docs/LIDAR.md,
/// "Calibrated reflectivity"). Independent of range for a diffuse target; rho * cos(theta_i) on a
/// tilted one; above 1 for a retro-reflector. 0 for a non-positive power or range.
double CalibratedReflectance(const LidarDef& def, double p_r_w, double range_m);

/// The 0..255 reflectivity drivers report for a calibrated reflectance `rho`: round(100 rho) for
/// 0 <= rho <= 1 (1 count per percent), 101 + floor(154 log10(rho) / 3) for a retro-reflector
/// (1 < rho <= 1000, one decade per ~51 counts), 255 above; 0 for rho <= 0 or NaN.
uint8_t ReflectivityValue(double rho);

/// Distance in m at which SNR = def.snr_threshold for a target filling the beam (bisection on
/// eq. 2-6; SNR falls monotonically with distance). Not capped by max_range_m. 0 if undetectable
/// even at 1 mm.
double MaxDetectionRangeM(const LidarDef& def, double reflectance, double incidence_rad);

/// The echo of the air (fog, rain) one beam receives on average (docs/WORLD.md "Weather"): the lidar
/// equation of a volume target, P_bs = P_t eta A_r beta (c tau_p / 2) exp(-2 alpha R) / R^2, at the range R
/// of full overlap (nearer, the receiver does not see the beam). The drops' echo fluctuates like speckle:
/// its power is exponentially distributed about P_bs, so a beam detects it with probability
/// exp(-snr_threshold / SNR_bs).
struct SoftEcho {
  double range_m = 0.0;                ///< R = max(overlap_range_m, min_range_m), in m.
  double depth_m = 0.0;                ///< Depth of air one pulse integrates, c tau_p / 2, in m.
  double power_w = 0.0;                ///< Mean received power P_bs, in W.
  double snr = 0.0;                    ///< Mean signal-to-noise ratio P_bs / (P_sun + P_DK).
  double detection_probability = 0.0;  ///< Per beam, exp(-snr_threshold / snr); 0 when beta is 0.
};
/// The mean soft echo of `def`'s air (backscatter_per_m_sr, extinction_coefficient_per_m).
SoftEcho MeanSoftEcho(const LidarDef& def);

/// One lidar scan. The sensor starts at `sensor_at_scan_start` (world frame) and moves with constant
/// world-frame `velocity_mps` and `angular_velocity_radps` during the scan; each column is cast from
/// the pose at its firing time. The scene is const: the sensor cannot change the world. Deterministic
/// for a given rng state: Scan draws one 64-bit seed from `rng`, and each column's range noise comes
/// from its own stream derived from (seed, column), so the points are identical for any def.threads.
/// `before_block`, when set, is called with a time after the scan start (s) before each block of 64
/// columns is cast, so the caller can pose moving entities at the rays' own time (SetDynamicPose and
/// Commit on the same scene); Scan reads the scene only between these calls.
std::vector<LidarPoint> Scan(const Scene& scene, const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
                             const Vec3& angular_velocity_radps, const LidarDef& def, std::mt19937_64& rng,
                             const std::function<void(double)>& before_block = {});
/// Scan into `out` (replaced), reusing its memory: a sensor that keeps one vector for its scans writes every scan
/// into memory already mapped (a fresh vector of a large scan costs its page faults each time). Same points as Scan.
void ScanInto(const Scene& scene, const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
              const Vec3& angular_velocity_radps, const LidarDef& def, std::mt19937_64& rng, std::vector<LidarPoint>& out,
              const std::function<void(double)>& before_block = {});

/// The ray packets Scan() casts for this scan with one thread, in casting order (columns in blocks of 64,
/// per column channel-major then sub-ray; each block starts a new packet), for benchmarks that time a
/// bare ray-cast loop over exactly the same rays.
std::vector<RayPacket16> ScanRayPackets(const Pose& sensor_at_scan_start, const Vec3& velocity_mps,
                                        const Vec3& angular_velocity_radps, const LidarDef& def);

/// Sensor pose at `t_s` after the scan start under a constant twist: world-frame velocity at the start
/// `velocity_mps`, turning with the constant world-frame angular velocity (exact on a circle).
Pose PoseAtTime(const Pose& start, const Vec3& velocity_mps, const Vec3& angular_velocity_radps, double t_s);

}  // namespace platoon::sensors
