#pragma once
/// What the session's weather does to each sensor model (docs/WORLD.md "Weather"). Pure functions of a
/// sensor definition and world::WorldConditions: the sensor kinds apply them to their definition before
/// each measurement, so the same models run with and without weather.
///   - Lidar: extinction from the fog visibility (Koschmieder, with Kim's wavelength exponent) and the rain
///     rate (Carbonneau's power law), replacing the sensor's clear-air coefficient; backscatter from the
///     drops (lidar ratio of water droplets), which gives soft echoes (lidar.hpp SoftEcho); the sun's
///     background from its elevation.
///   - Radar: rain's specific attenuation by ITU-R P.838-3 at the radar's frequency, two-way, which
///     shortens the range of eq. 1 (radar.hpp RainShortenedRangeM).
///   - Objects sensor: apparent contrast by Koschmieder's law; objects beyond the range where the contrast
///     falls to the threshold are not seen, and the detection probability falls towards it.

#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/object_list.hpp"
#include "platoon/sensors/radar.hpp"
#include "platoon/world/conditions.hpp"

#include <random>
#include <vector>

namespace platoon::sensors {

/// Lidar ratio (extinction over backscatter) of liquid water droplets at 905 nm, in sr: 18.8 (O'Connor,
/// Illingworth and Hogan, "A technique for autocalibration of cloud lidar", J. Atmos. Oceanic Technol.
/// 21, 2004). Used for fog and, as drops much larger than the wavelength, for rain.
inline constexpr double kLidarRatioWaterSr = 18.8;

/// Fog extinction at `wavelength_nm` for meteorological visibility `visibility_m` (at 550 nm), in 1/m:
/// (-ln 0.05 / V) (lambda / 550 nm)^-q with Kim's size-distribution exponent q(V) (I. I. Kim, B. McArthur,
/// E. Korevaar, "Comparison of laser beam propagation at 785 nm and 1550 nm in fog and haze for optical
/// wireless communications", Proc. SPIE 4214, 2001): q = 0 below 0.5 km (fog: no wavelength dependence).
/// 0 when visibility_m <= 0.
double FogExtinctionPerM(double visibility_m, double wavelength_nm);

/// Optical (near-infrared) rain extinction, in 1/m, from the rain rate in mm/h: A = 1.076 R^0.67 dB/km
/// (T. H. Carbonneau, D. R. Wisely, "Opportunities and challenges for optical wireless", Proc. SPIE 3232,
/// 1998), alpha = A / (10 log10(e) 1000). 0 when dry.
double RainExtinctionPerM(double rain_mm_h);

/// `def` in `conditions`: with fog or rain, extinction_coefficient_per_m = fog + rain extinction (the fog's
/// replaces the sensor's clear-air figure; rain alone adds to it) and backscatter_per_m_sr = extinction of
/// the drops / kLidarRatioWaterSr; the sun background scaled down below 10 deg elevation (0 at night).
/// Clear noon leaves `def` unchanged.
LidarDef LidarInConditions(const LidarDef& def, const world::WorldConditions& conditions);

/// ITU-R P.838-3 power-law coefficients of rain's specific attenuation gamma = k R^alpha (dB/km, R in mm/h).
struct RainCoefficients {
  double k = 0.0;      ///< In dB/km per (mm/h)^alpha.
  double alpha = 1.0;  ///< Exponent.
};
/// P.838-3's curve fits (eq. 2, 3) at `frequency_ghz` (1..1000) for a horizontal path and horizontal
/// (`vertical` false) or vertical linear polarisation.
RainCoefficients ItuRainCoefficients(double frequency_ghz, bool vertical);
/// Specific attenuation of rain `rain_mm_h` at `frequency_ghz`, horizontal polarisation, in dB/km (one way).
double RainAttenuationDbPerKm(double frequency_ghz, double rain_mm_h);

/// `def` in `conditions`: rain_attenuation_db_per_km from the rain rate at def.frequency_ghz (fog's droplets
/// attenuate a 77 GHz radar by far less: not modelled).
RadarDef RadarInConditions(const RadarDef& def, const world::WorldConditions& conditions);

/// How an object-list sensor (camera-based) sees through fog: Koschmieder's apparent contrast
/// C(d) = C0 exp(-sigma d), sigma = -ln(0.05) / V.
struct VisibilityDetectionDef {
  double inherent_contrast = 1.0;        ///< C0 of an object against its background (1: black against the sky).
  double threshold_contrast = 0.05;      ///< Contrast below which nothing is detected (the visibility's 5 %).
  double full_detection_contrast = 0.25; ///< Contrast above which the detection probability is not reduced.
};
/// Farthest distance at which an object is detected in fog of visibility `visibility_m`, in m: where C(d)
/// falls to the threshold, V ln(C0 / eps) / ln(1 / 0.05) (V for C0 = 1). Infinity without fog.
double VisibilityRangeM(double visibility_m, const VisibilityDetectionDef& def);
/// Factor on the detection probability at `distance_m` (m): 1 while C(d) >= full_detection_contrast, 0 at
/// and beyond VisibilityRangeM, linear in log contrast (so in distance) between. 1 without fog.
double VisibilityDetectionFactor(double distance_m, double visibility_m, const VisibilityDetectionDef& def);
/// Drops ground-truth objects the fog hides: each object at distance d (3-D, sensor frame) is kept with
/// probability VisibilityDetectionFactor(d); one uniform draw per object with a factor strictly between 0
/// and 1 (none without fog, so clear weather draws nothing).
void ApplyVisibility(std::vector<GroundTruthObject>& truth, double visibility_m, const VisibilityDetectionDef& def,
                     std::mt19937_64& rng);

}  // namespace platoon::sensors
