// Light and weather of the world (platoon/world/conditions.hpp): the sun's position and Koschmieder's law.
#include "platoon/world/conditions.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace platoon::world {

namespace {
constexpr double kConditionsDegPerRad = 180.0 / std::numbers::pi;
}  // namespace

double SolarDeclinationDeg(int day_of_year) {
  // Spencer (1971): the day angle Gamma = 2 pi (n - 1) / 365 and a three-harmonic Fourier series, in rad
  // (error below 0.04 deg over the year).
  const double g = 2.0 * std::numbers::pi * (std::clamp(day_of_year, 1, 366) - 1) / 365.0;
  const double d = 0.006918 - 0.399912 * std::cos(g) + 0.070257 * std::sin(g) - 0.006758 * std::cos(2 * g) +
                   0.000907 * std::sin(2 * g) - 0.002697 * std::cos(3 * g) + 0.00148 * std::sin(3 * g);
  return d * kConditionsDegPerRad;
}

SunAngles SunPosition(double time_of_day_h, int day_of_year, double latitude_deg) {
  const double decl = SolarDeclinationDeg(day_of_year) / kConditionsDegPerRad;
  const double lat = std::clamp(latitude_deg, -90.0, 90.0) / kConditionsDegPerRad;
  // Hour angle: 15 deg per hour from solar noon, negative in the morning.
  const double hour = (15.0 * (time_of_day_h - 12.0)) / kConditionsDegPerRad;
  // The sun's direction in the local east-north-up frame.
  const double east = -std::cos(decl) * std::sin(hour);
  const double north = std::sin(decl) * std::cos(lat) - std::cos(decl) * std::sin(lat) * std::cos(hour);
  const double up = std::sin(decl) * std::sin(lat) + std::cos(decl) * std::cos(lat) * std::cos(hour);
  SunAngles s;
  s.elevation_deg = std::asin(std::clamp(up, -1.0, 1.0)) * kConditionsDegPerRad;
  double az = std::atan2(east, north) * kConditionsDegPerRad;
  if (az < 0.0) az += 360.0;
  s.azimuth_deg = az;
  return s;
}

void UpdateDerived(LightConditions& light) {
  if (!light.sun_set_directly) {
    const SunAngles s = SunPosition(light.time_of_day_h, light.day_of_year, light.latitude_deg);
    light.sun_elevation_deg = s.elevation_deg;
    light.sun_azimuth_deg = s.azimuth_deg;
  }
  const bool dark = light.sun_elevation_deg < kAutoLightsSunElevationDeg;
  if (light.headlights_auto) light.headlights = dark;
  if (light.street_lights_auto) light.street_lights = dark;
}

double FogExtinctionPerM(double visibility_m) {
  if (!(visibility_m > 0.0)) return 0.0;
  return -std::log(kVisibilityContrast) / visibility_m;
}

}  // namespace platoon::world
