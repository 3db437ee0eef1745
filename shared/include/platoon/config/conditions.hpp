#pragma once
/// Light and weather of a session: the [light] and [weather] readers and the live parameters light.* and
/// weather.* (docs/WORLD.md "Light" and "Weather"). Both use the bounds below, so a value ctl, a scenario
/// action or a variator sets is checked exactly like the same key in the file.

#include "platoon/config/params.hpp"
#include "platoon/config/table.hpp"
#include "platoon/world/conditions.hpp"

#include <functional>
#include <string>
#include <vector>

namespace platoon::config {

/// Bounds of the [light] and [weather] keys and of their live parameters.
namespace bounds {
inline constexpr Range kTimeOfDayH{0, 24};            ///< light.time_of_day_h, local solar time in h.
inline constexpr Range kDayOfYear{1, 366};            ///< [light] day_of_year.
inline constexpr Range kLatitudeDeg{-90, 90};         ///< [light] latitude_deg, in deg.
inline constexpr Range kSunElevationDeg{-90, 90};     ///< light.sun_elevation_deg, in deg.
inline constexpr Range kSunAzimuthDeg{0, 360};        ///< light.sun_azimuth_deg, clockwise from north, in deg.
inline constexpr Range kFogVisibilityM{0, 100000};    ///< weather.fog_visibility_m, in m (0: no fog; else >= 1).
inline constexpr Range kRainMmH{0, 300};              ///< weather.rain_mm_h, in mm/h (300: a cloudburst).
inline constexpr Range kRoadWetness{0, 1};            ///< weather.road_wetness, 0 dry .. 1 standing water.
inline constexpr Range kRoadBrightness{0.1, 3};       ///< scene.road_brightness, scale of the road's albedo.
inline constexpr Range kMarkingContrast{0, 1};        ///< scene.marking_contrast, 0 road .. 1 white paint.
}  // namespace bounds

/// Reads [light]: time_of_day_h, day_of_year, latitude_deg, or sun_elevation_deg and sun_azimuth_deg
/// given directly (not both ways); headlights, high_beam and street_lights (absent: automatic, on below
/// world::kAutoLightsSunElevationDeg). The derived fields are filled in. Throws ConfigError (file:line).
world::LightConditions ReadLight(const Table& t);
/// Reads [weather]: fog_visibility_m (0 or >= 1), rain_mm_h, road_wetness. Throws ConfigError (file:line).
world::WeatherConditions ReadWeather(const Table& t);

/// The paths of the live condition parameters (light.*, weather.*), sorted.
const std::vector<std::string>& ConditionParamPaths();

/// Registers light.time_of_day_h, light.day_of_year, light.latitude_deg, light.sun_elevation_deg,
/// light.sun_azimuth_deg, light.headlights, light.high_beam, light.street_lights, weather.fog_visibility_m,
/// weather.rain_mm_h, weather.road_wetness, scene.road_brightness, scene.marking_contrast on `conditions` (which must outlive the registry). Setting a
/// time, day or latitude moves the sun by the solar formula; setting a sun angle fixes the sun there;
/// setting headlights or street lights ends their automatic switching. Every set calls `changed`.
void AddConditionParams(ParamRegistry& registry, world::WorldConditions& conditions, std::function<void()> changed);

}  // namespace platoon::config
