#pragma once
/// Probabilistic object-list radar after seed 000 §2.3.3 (Muckenhuber et al. 2013, parametrised as a
/// Continental ARS 408 near range): field-of-view selection, occlusion by sampling rays, range gates
/// plus Gaussian accuracy noise, RCS reduction by the visible fraction of the longest side,
/// reclassification to "unknown" beyond a class distance, false negatives by a per-class detection
/// probability and Poisson false positives. A pure function of (targets, occluders, sensor pose and
/// velocity, RadarDef, rng). Equations and figures: docs/RADAR.md.

#include "platoon/geometry.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/scene.hpp"

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::sensors {

/// Object classes of seed 000 Table 1; the value is the seed's index.
enum class RadarClass : uint8_t {
  kCar = 1,         ///< Passenger car.
  kTruck = 2,       ///< Truck or bus.
  kPedestrian = 3,  ///< Pedestrian.
  kMotorcycle = 4,  ///< Motorcycle or scooter.
  kBicycle = 5,     ///< Bicycle.
  kUnknown = 6,     ///< Anything else, or too far to classify.
};

/// Number of radar classes (size of RadarDef::classes).
inline constexpr int kRadarClassCount = 6;
/// Index of a class into RadarDef::classes (0 = car ... 5 = unknown).
inline constexpr int RadarClassIndex(RadarClass c) { return static_cast<int>(c) - 1; }
/// Config name of a class ("car", "truck", "pedestrian", "motorcycle", "bicycle", "unknown").
std::string_view RadarClassName(RadarClass c);

/// Per-class radar parameters.
struct RadarClassParams {
  double rcs_dbsm = 10.0;               ///< Maximum RCS (seen broadside, fully visible), in dBsm. Car 10, pedestrian -5.
  double detection_probability = 0.9;   ///< P_d per frame of a visible target in the FoV, 0..1 (1 - false-negative rate).
  double classification_range_m = 50.0;  ///< Beyond this ground-truth range the class reads "unknown", in m. Car 50, pedestrian 30.
  double false_positives_per_frame = 0.0;  ///< Poisson mean of false positives of this class per frame. Typical 0.01.
  Vec3 fp_size_m = Vec3(4.5, 1.8, 1.5);   ///< Mean box size (length, width, height) of a false positive, in m.
  double fp_size_sigma_m = 0.2;         ///< Gaussian sigma on each false-positive box dimension, in m.
  double fp_rcs_sigma_db = 3.0;         ///< Gaussian sigma of a false positive's RCS around rcs_dbsm, in dB.
};

/// Read-only radar definition. Sensor frame: x forward (boresight), y left, z up; azimuth from +x
/// towards +y. The radar is 2-D: ranges and azimuths are taken in the sensor x-y plane.
struct RadarDef {
  // --- Field of view (ARS 408 near range, seed 000 Fig. 13), eq. 1 of docs/RADAR.md ---
  double fov_inner_half_angle_rad = 0.6981317;  ///< Half angle of the full-range sector, in rad. ARS 408: 40 deg.
  double fov_inner_range_m = 70.0;     ///< Maximum range inside the inner sector, in m. ARS 408: 70.
  double fov_outer_half_angle_rad = 1.0471976;  ///< Half angle of the field of view, in rad. ARS 408: 60 deg.
  double fov_outer_range_m = 20.0;     ///< Maximum range at the outer half angle, in m (linear from inner). ARS 408: 20.
  double min_range_m = 0.2;            ///< Nearest detectable range, in m. ARS 408: 0.2.

  // --- Resolution (range gates) and accuracy (1-sigma Gaussian), seed 000 Fig. 14 ---
  double range_resolution_m = 0.39;         ///< Range gate width, in m; 0 = no gating. ARS 408 near range: 0.39.
  double azimuth_resolution_rad = 0.0558505;  ///< Azimuth gate width, in rad; 0 = no gating. ARS 408 near range: 3.2 deg.
  double range_rate_resolution_mps = 0.12;  ///< Range-rate gate width, in m/s; 0 = no gating. ARS 408: 0.43 km/h.
  double range_sigma_m = 0.10;              ///< Range accuracy, in m. ARS 408 near range: 0.10.
  double azimuth_sigma_rad = 0.0052360;     ///< Azimuth accuracy, in rad. ARS 408 at boresight: 0.3 deg.
  double range_rate_sigma_mps = 0.028;      ///< Range-rate accuracy, in m/s. ARS 408: 0.1 km/h.

  // --- Occlusion and RCS (seed 000 Fig. 15) ---
  int occlusion_rays = 16;         ///< Rays cast across each target's cross-range extent (>= 1). Typical 8-32.
  bool rcs_aspect_projection = true;  ///< Scale RCS by cross-range extent / longest side (seed Fig. 15); false: visible fraction only.

  // --- Classes (seed 000 Table 1), indexed by RadarClassIndex() ---
  std::array<RadarClassParams, kRadarClassCount> classes{};  ///< Per-class RCS, P_d, class range, false positives.

  // --- Weather (docs/WORLD.md "Weather"): rain attenuation shortens the range of eq. 1 ---
  double frequency_ghz = 76.5;  ///< Carrier frequency, in GHz; sets the rain attenuation (ITU-R P.838). ARS 408: 76-77.
  /// Specific attenuation of the air, one way, in dB/km: 0 in clear air; RadarInConditions sets it from the
  /// rain rate. The range of eq. 1 is the clear-air range and shrinks so that the two-way loss fits the same
  /// link budget (RainShortenedRangeM).
  double rain_attenuation_db_per_km = 0.0;

  double rate_hz = 20.0;  ///< Measurement cycle rate, in Hz. ARS 408: ~17-20.
  Mounting mounting;      ///< Placement on the vehicle; callers pass SensorPoseInWorld(vehicle, mounting) to Measure().

  /// Parameters of class `c`.
  const RadarClassParams& Class(RadarClass c) const { return classes[RadarClassIndex(c)]; }
  /// Parameters of class `c` (mutable, for configuration).
  RadarClassParams& Class(RadarClass c) { return classes[RadarClassIndex(c)]; }
  /// Maximum detection range at azimuth `azimuth_rad`, in m; 0 outside the field of view (eq. 1),
  /// shortened by rain_attenuation_db_per_km.
  double MaxRangeM(double azimuth_rad) const;
  /// True if the sensor-frame point (x_m, y_m) lies in the field of view (range and azimuth, eq. 1).
  bool InFieldOfView(double x_m, double y_m) const;
  /// Empty if valid, otherwise a message naming the first bad field.
  std::string Validate() const;
};

/// ARS 408-21 near-range-like defaults: +-40 deg to 70 m, falling linearly to 20 m at +-60 deg, 0.39 m
/// gates, 20 Hz, classification to 50 m (car, truck, motorcycle) and 30 m (pedestrian, bicycle).
RadarDef DefaultRadarDef();

/// One ground-truth object the radar may see. Pose and velocity in the world frame.
struct RadarTarget {
  uint32_t entity_id = 0;                 ///< World entity id (non-zero); hits on it in the occluder scene do not occlude it.
  RadarClass object_class = RadarClass::kCar;  ///< True class.
  Pose pose;                              ///< Box centre and orientation (x along the length) in the world, in m.
  Vec3 velocity_mps = Vec3::Zero();       ///< World-frame velocity, in m/s.
  Vec3 size_m = Vec3(4.5, 1.8, 1.5);      ///< Full box size (length, width, height), in m.
};

/// One reported radar object (an ARS 408 "object list" entry).
struct RadarObject {
  double range_m = 0.0;         ///< Measured range in the sensor x-y plane, in m (range gate + noise).
  double azimuth_rad = 0.0;     ///< Measured azimuth from +x towards +y, in rad.
  double range_rate_mps = 0.0;  ///< Measured radial velocity, in m/s; negative = approaching.
  double rcs_dbsm = 0.0;        ///< Reported RCS after the visibility reduction, in dBsm.
  RadarClass object_class = RadarClass::kUnknown;  ///< Reported class (after reclassification).
  uint32_t entity_id = 0;       ///< Ground-truth entity; 0 for a false positive.
  bool is_false_positive = false;  ///< True if the object is a generated false positive.
  double length_m = 0.0;        ///< Box length (ground truth; random for a false positive), in m.
  double width_m = 0.0;         ///< Box width (ground truth; random for a false positive), in m.
  double orientation_rad = 0.0; ///< Yaw of the box length axis from sensor +x, in rad (random for a false positive).
  double x_m = 0.0;             ///< Measured position in the sensor frame, forward, in m.
  double y_m = 0.0;             ///< Measured position in the sensor frame, left, in m.
};

/// Fraction of a target's cross-range extent that is visible from `sensor_world`, 0..1, by casting
/// `def.occlusion_rays` rays into `occluders` (nullptr: 1). Hits on the target's own entity do not occlude.
double VisibleFraction(const RadarTarget& target, const Scene* occluders, const Pose& sensor_world,
                       const RadarDef& def);

/// One radar measurement cycle. `occluders` (nullable) must be committed; the sensor (origin and
/// orientation `sensor_world`, velocity `sensor_velocity_mps`, both world frame) cannot change it.
/// Returns true targets first (input order), then false positives by class. Deterministic for a given
/// rng state; uses only library-independent draws (noise.hpp).
std::vector<RadarObject> Measure(const std::vector<RadarTarget>& targets, const Scene* occluders,
                                 const Pose& sensor_world, const Vec3& sensor_velocity_mps,
                                 const RadarDef& def, std::mt19937_64& rng);

/// The range at which a target seen to `clear_range_m` (m) in clear air is still seen when the air attenuates
/// by `attenuation_db_per_km` (one way, dB/km): the radar equation's R^-4 spreading and the two-way loss
/// share one link budget, 40 log10(R0 / R) = 2 gamma R / 1000 (R in m), solved for R. clear_range_m when
/// the attenuation is 0.
double RainShortenedRangeM(double clear_range_m, double attenuation_db_per_km);

/// Poisson draw with mean `mean` (>= 0) from library-independent uniforms (product of uniforms).
int PoissonCount(double mean, std::mt19937_64& rng);

}  // namespace platoon::sensors
