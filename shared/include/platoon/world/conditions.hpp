#pragma once
/// World conditions ([light] and [weather] of a session file): the light and the weather every sensor,
/// seat and viewer of a session sees. The server holds them as live parameters ("light.*", "weather.*")
/// and sends them to every node; renderers and sensor models are given them, they never read clocks or
/// files. Defaults are a clear summer noon with no fog and no rain. Models and sources: docs/WORLD.md
/// ("Light", "Weather").

#include <cstdint>
#include <vector>

namespace platoon::world {

/// Sun elevation below which headlights and street lights left on "auto" are lit, in deg. UN R48's
/// automatic dipped beam switches on below about 1000 lx of ambient light, which a clear sky gives with
/// the sun about 2 deg above the horizon (docs/WORLD.md "Light").
inline constexpr double kAutoLightsSunElevationDeg = 2.0;

/// Apparent contrast at which an object is just seen at the meteorological visibility (MOR, WMO: 5 %).
/// Koschmieder's law then gives the extinction coefficient sigma = -ln(0.05) / V ~ 3.0 / V.
inline constexpr double kVisibilityContrast = 0.05;

/// Light of the session ([light]).
struct LightConditions {
  double time_of_day_h = 12.0;        ///< Local solar time, in hours 0..24.
  int day_of_year = 172;              ///< Day of the year 1..366 (172: about 21 June).
  double latitude_deg = 48.0;         ///< Latitude of the map, in deg (north positive).
  double sun_elevation_deg = 65.0;    ///< Sun elevation above the horizon, in deg (negative: below it).
  double sun_azimuth_deg = 180.0;     ///< Sun azimuth in the map frame: clockwise from +y (north), in deg.
  bool sun_set_directly = false;      ///< true: the two sun angles above were given; false: computed from time and date.
  bool headlights = false;            ///< Vehicle headlights on (low beam).
  bool high_beam = false;             ///< High beam instead of low beam (with headlights).
  bool street_lights = false;         ///< Street lights of the environment lit.
  bool headlights_auto = true;        ///< headlights follows the sun (on below kAutoLightsSunElevationDeg) until set.
  bool street_lights_auto = true;     ///< street_lights follows the sun the same way until set.
  bool operator==(const LightConditions&) const = default;
};

/// Weather of the session ([weather]).
struct WeatherConditions {
  double fog_visibility_m = 0.0;      ///< Meteorological visibility in fog, in m (0: no fog).
  double rain_mm_h = 0.0;             ///< Rain rate, in mm/h (0: dry).
  double road_wetness = 0.0;          ///< Road wetness 0 (dry) .. 1 (standing water).
  bool operator==(const WeatherConditions&) const = default;
};

/// How the road's surface looks in rendered views ([scene] road_brightness, marking_contrast).
struct SurfaceConditions {
  double road_brightness = 1.0;       ///< Scale of the road surface's albedo (1: the default asphalt).
  double marking_contrast = 1.0;      ///< Markings between the road surface (0) and white paint (1).
  bool operator==(const SurfaceConditions&) const = default;
};

/// What a variable message sign shows now ([[sign]] variable = true, live parameter signs.vms_<id>).
struct VariableSignContent {
  uint32_t id = 0;     ///< The sign's id in the session's sign list.
  uint8_t type = 0;    ///< road::SignType number.
  double value = 0;    ///< Its number (a limit in the country's unit; 0 none).
  bool operator==(const VariableSignContent&) const = default;
};

/// Everything a renderer or a sensor model needs to know about the world's conditions.
struct WorldConditions {
  LightConditions light;
  WeatherConditions weather;
  SurfaceConditions surface;
  std::vector<VariableSignContent> variable_signs;  ///< Every variable sign's content (the server fills it; empty: as placed).
  bool operator==(const WorldConditions&) const = default;
};

/// Sun position in the map frame.
struct SunAngles {
  double elevation_deg = 0.0;  ///< Above the horizon, in deg (negative: below it).
  double azimuth_deg = 0.0;    ///< Clockwise from north (+y), 0..360, in deg.
};

/// Solar declination on day `day_of_year` (1..366), in deg: Spencer's Fourier series (J. W. Spencer,
/// "Fourier series representation of the position of the sun", Search 2(5):172, 1971). About +23.4 at
/// the June solstice, 0 at the equinoxes.
double SolarDeclinationDeg(int day_of_year);

/// Sun elevation and azimuth at local solar time `time_of_day_h` (0..24, 12 = solar noon) on day
/// `day_of_year` at `latitude_deg`: hour angle 15 deg/h from noon, sin(el) = sin(lat) sin(decl) +
/// cos(lat) cos(decl) cos(hour angle) (docs/WORLD.md "Light"). No refraction.
SunAngles SunPosition(double time_of_day_h, int day_of_year, double latitude_deg);

/// Brings the derived fields up to date: the sun angles from time, date and latitude (unless
/// sun_set_directly), and headlights and street lights left on auto from the sun elevation.
void UpdateDerived(LightConditions& light);

/// Fog extinction coefficient from the meteorological visibility by Koschmieder's law,
/// sigma = -ln(kVisibilityContrast) / V, in 1/m; 0 when `visibility_m` <= 0 (no fog).
double FogExtinctionPerM(double visibility_m);

}  // namespace platoon::world
