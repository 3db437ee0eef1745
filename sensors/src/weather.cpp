// What the weather does to each sensor model (platoon/sensors/weather.hpp; docs/WORLD.md "Weather").
#include "platoon/sensors/weather.hpp"

#include "platoon/sensors/noise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace platoon::sensors {

namespace {

// -ln(0.05): Koschmieder's law for the meteorological visibility, sigma = kWeatherLnContrast / V.
const double kWeatherLnContrast = -std::log(world::kVisibilityContrast);

// dB per neper-free extinction: alpha [1/m] = A [dB/km] / (10 log10(e) * 1000).
constexpr double kWeatherDbPerKmToPerM = 1.0 / (4.342944819032518 * 1000.0);

// One ITU-R P.838-3 fit: log10 y = sum_j a_j exp(-((log10 f - b_j) / c_j)^2) + m log10 f + c.
struct P838Fit {
  double a[5], b[5], c[5];
  int terms;
  double m, c0;
  double operator()(double frequency_ghz) const {
    const double x = std::log10(frequency_ghz);
    double s = m * x + c0;
    for (int j = 0; j < terms; ++j) {
      const double z = (x - b[j]) / c[j];
      s += a[j] * std::exp(-z * z);
    }
    return s;
  }
};

// The constants of P.838-3's tables 1-4 (kH, kV: log10 k; alphaH, alphaV: alpha itself).
constexpr P838Fit kP838KH{{-5.33980, -0.35351, -0.23789, -0.94158},
                      {-0.10008, 1.26970, 0.86036, 0.64552},
                      {1.13098, 0.45400, 0.15354, 0.16817},
                      4, -0.18961, 0.71147};
constexpr P838Fit kP838KV{{-3.80595, -3.44965, -0.39902, 0.50167},
                      {0.56934, -0.22911, 0.73042, 1.07319},
                      {0.81061, 0.51059, 0.11899, 0.27195},
                      4, -0.16398, 0.63297};
constexpr P838Fit kP838AH{{-0.14318, 0.29591, 0.32177, -5.37610, 16.1721},
                      {1.82442, 0.77564, 0.63773, -0.96230, -3.29980},
                      {-0.55187, 0.19822, 0.13164, 1.47828, 3.43990},
                      5, 0.67849, -1.95537};
constexpr P838Fit kP838AV{{-0.07771, 0.56727, -0.20238, -48.2991, 48.5833},
                      {2.33840, 0.95545, 1.14520, 0.791669, 0.791459},
                      {-0.76284, 0.54039, 0.26809, 0.116226, 0.116479},
                      5, -0.053739, 0.83433};

}  // namespace

double FogExtinctionPerM(double visibility_m, double wavelength_nm) {
  if (!(visibility_m > 0.0)) return 0.0;
  // Kim et al. (2001): the size-distribution exponent q from the visibility in km.
  const double v_km = visibility_m / 1000.0;
  double q = 0.0;
  if (v_km > 50.0) q = 1.6;
  else if (v_km > 6.0) q = 1.3;
  else if (v_km > 1.0) q = 0.16 * v_km + 0.34;
  else if (v_km > 0.5) q = v_km - 0.5;
  return kWeatherLnContrast / visibility_m * std::pow(wavelength_nm / 550.0, -q);
}

double RainExtinctionPerM(double rain_mm_h) {
  if (!(rain_mm_h > 0.0)) return 0.0;
  return 1.076 * std::pow(rain_mm_h, 0.67) * kWeatherDbPerKmToPerM;
}

LidarDef LidarInConditions(const LidarDef& def, const world::WorldConditions& conditions) {
  LidarDef out = def;
  const world::WeatherConditions& w = conditions.weather;
  const double fog = FogExtinctionPerM(w.fog_visibility_m, def.wavelength_nm);
  const double rain = RainExtinctionPerM(w.rain_mm_h);
  if (fog > 0.0 || rain > 0.0) {
    // The visibility includes the clear air's own extinction; rain alone adds to it.
    out.extinction_coefficient_per_m = (fog > 0.0 ? fog : def.extinction_coefficient_per_m) + rain;
    out.backscatter_per_m_sr = def.backscatter_per_m_sr + (fog + rain) / kLidarRatioWaterSr;
  }
  // Sun background: the configured figure is a high sun's; it fades below 10 deg to none at night.
  const double el = conditions.light.sun_elevation_deg * std::numbers::pi / 180.0;
  const double sun_scale = std::clamp(std::sin(el) / std::sin(10.0 * std::numbers::pi / 180.0), 0.0, 1.0);
  out.sun_irradiance_w_per_m2_nm = def.sun_irradiance_w_per_m2_nm * sun_scale;
  return out;
}

RainCoefficients ItuRainCoefficients(double frequency_ghz, bool vertical) {
  const double f = std::clamp(frequency_ghz, 1.0, 1000.0);
  RainCoefficients r;
  r.k = std::pow(10.0, (vertical ? kP838KV : kP838KH)(f));
  r.alpha = (vertical ? kP838AV : kP838AH)(f);
  return r;
}

double RainAttenuationDbPerKm(double frequency_ghz, double rain_mm_h) {
  if (!(rain_mm_h > 0.0)) return 0.0;
  const RainCoefficients c = ItuRainCoefficients(frequency_ghz, false);
  return c.k * std::pow(rain_mm_h, c.alpha);
}

RadarDef RadarInConditions(const RadarDef& def, const world::WorldConditions& conditions) {
  RadarDef out = def;
  out.rain_attenuation_db_per_km = def.rain_attenuation_db_per_km +
                                   RainAttenuationDbPerKm(def.frequency_ghz, conditions.weather.rain_mm_h);
  return out;
}

double VisibilityRangeM(double visibility_m, const VisibilityDetectionDef& def) {
  if (!(visibility_m > 0.0)) return std::numeric_limits<double>::infinity();
  if (!(def.inherent_contrast > def.threshold_contrast)) return 0.0;
  return visibility_m * std::log(def.inherent_contrast / def.threshold_contrast) / kWeatherLnContrast;
}

double VisibilityDetectionFactor(double distance_m, double visibility_m, const VisibilityDetectionDef& def) {
  if (!(visibility_m > 0.0)) return 1.0;
  const double d_max = VisibilityRangeM(visibility_m, def);
  // Where the contrast is still full_detection_contrast: ln(C0 / C_full) / sigma (0 when C0 is below it).
  const double d_full =
      std::clamp(visibility_m * std::log(def.inherent_contrast / def.full_detection_contrast) / kWeatherLnContrast, 0.0, d_max);
  if (distance_m >= d_max) return 0.0;
  if (distance_m <= d_full) return 1.0;
  return (d_max - distance_m) / (d_max - d_full);
}

void ApplyVisibility(std::vector<GroundTruthObject>& truth, double visibility_m, const VisibilityDetectionDef& def,
                     std::mt19937_64& rng) {
  if (!(visibility_m > 0.0)) return;
  std::erase_if(truth, [&](const GroundTruthObject& o) {
    const double p = VisibilityDetectionFactor(o.position_m.norm(), visibility_m, def);
    if (p >= 1.0) return false;
    if (p <= 0.0) return true;
    return UniformOpenZero(rng) > p;
  });
}

}  // namespace platoon::sensors
