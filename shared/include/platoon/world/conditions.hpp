#pragma once
/// World conditions ([light] and [weather] of a session file): the light and the weather every sensor,
/// seat and viewer of a session sees. The server holds them as live parameters ("light.*", "weather.*")
/// and sends them to every node; renderers and sensor models are given them, they never read clocks or
/// files. Defaults are a clear summer noon with no fog and no rain.

#include <cstdint>

namespace platoon::world {

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
};

/// Weather of the session ([weather]).
struct WeatherConditions {
  double fog_visibility_m = 0.0;      ///< Meteorological visibility in fog, in m (0: no fog).
  double rain_mm_h = 0.0;             ///< Rain rate, in mm/h (0: dry).
  double road_wetness = 0.0;          ///< Road wetness 0 (dry) .. 1 (standing water).
};

/// Everything a renderer or a sensor model needs to know about the world's conditions.
struct WorldConditions {
  LightConditions light;
  WeatherConditions weather;
};

}  // namespace platoon::world
