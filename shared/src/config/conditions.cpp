// [light] and [weather] and the live parameters light.* and weather.* (platoon/config/conditions.hpp).
#include "platoon/config/conditions.hpp"

#include <fmt/format.h>

namespace platoon::config {

world::LightConditions ReadLight(const Table& t) {
  namespace b = bounds;
  world::LightConditions l;
  const bool by_time = t.Has("time_of_day_h") || t.Has("day_of_year") || t.Has("latitude_deg");
  const bool by_angle = t.Has("sun_elevation_deg") || t.Has("sun_azimuth_deg");
  l.time_of_day_h = t.GetDouble("time_of_day_h", l.time_of_day_h, b::kTimeOfDayH.min, b::kTimeOfDayH.max);
  l.day_of_year = static_cast<int>(t.GetInt("day_of_year", l.day_of_year, 1, 366));
  l.latitude_deg = t.GetDouble("latitude_deg", l.latitude_deg, b::kLatitudeDeg.min, b::kLatitudeDeg.max);
  l.sun_elevation_deg =
      t.GetDouble("sun_elevation_deg", l.sun_elevation_deg, b::kSunElevationDeg.min, b::kSunElevationDeg.max);
  l.sun_azimuth_deg = t.GetDouble("sun_azimuth_deg", l.sun_azimuth_deg, b::kSunAzimuthDeg.min, b::kSunAzimuthDeg.max);
  if (by_time && by_angle)
    t.Fail(t.Has("sun_elevation_deg") ? "sun_elevation_deg" : "sun_azimuth_deg",
           "expected either the sun's angles (sun_elevation_deg, sun_azimuth_deg) or the time, day and latitude "
           "they follow from (time_of_day_h, day_of_year, latitude_deg), got both");
  l.sun_set_directly = by_angle;
  // Absent: automatic (on while the sun is below world::kAutoLightsSunElevationDeg).
  l.headlights_auto = !t.Has("headlights");
  l.headlights = t.GetBool("headlights", false);
  l.high_beam = t.GetBool("high_beam", false);
  l.street_lights_auto = !t.Has("street_lights");
  l.street_lights = t.GetBool("street_lights", false);
  t.RejectUnknownKeys();
  world::UpdateDerived(l);
  return l;
}

world::WeatherConditions ReadWeather(const Table& t) {
  namespace b = bounds;
  world::WeatherConditions w;
  w.fog_visibility_m = t.GetDouble("fog_visibility_m", 0, b::kFogVisibilityM.min, b::kFogVisibilityM.max);
  if (w.fog_visibility_m > 0 && w.fog_visibility_m < 1)
    t.Fail("fog_visibility_m", fmt::format("expected 0 (no fog) or a visibility of at least 1 m, got {}", w.fog_visibility_m));
  w.rain_mm_h = t.GetDouble("rain_mm_h", 0, b::kRainMmH.min, b::kRainMmH.max);
  w.road_wetness = t.GetDouble("road_wetness", 0, b::kRoadWetness.min, b::kRoadWetness.max);
  t.RejectUnknownKeys();
  return w;
}

const std::vector<std::string>& ConditionParamPaths() {
  static const std::vector<std::string> paths = {
      "light.day_of_year",     "light.headlights",      "light.high_beam",       "light.latitude_deg",
      "light.street_lights",   "light.sun_azimuth_deg", "light.sun_elevation_deg", "light.time_of_day_h",
      "scene.marking_contrast", "scene.road_brightness",
      "weather.fog_visibility_m", "weather.rain_mm_h",  "weather.road_wetness"};
  return paths;
}

void AddConditionParams(ParamRegistry& r, world::WorldConditions& c, std::function<void()> changed) {
  namespace b = bounds;
  world::LightConditions& l = c.light;
  world::WeatherConditions& w = c.weather;
  // Each setter changes its field, brings the derived ones up to date and reports the change.
  const auto done = [&l, changed] {
    world::UpdateDerived(l);
    if (changed) changed();
  };
  r.AddFloat("light.time_of_day_h", "h", b::kTimeOfDayH, "Local solar time; moves the sun (solar formula)",
             [&l] { return l.time_of_day_h; },
             [&l, done](double v) {
               l.time_of_day_h = v;
               l.sun_set_directly = false;
               done();
             });
  r.AddInt("light.day_of_year", "", Range{b::kDayOfYear.min, b::kDayOfYear.max}, "Day of the year; moves the sun",
           [&l] { return static_cast<int64_t>(l.day_of_year); },
           [&l, done](int64_t v) {
             l.day_of_year = static_cast<int>(v);
             l.sun_set_directly = false;
             done();
           });
  r.AddFloat("light.latitude_deg", "deg", b::kLatitudeDeg, "Latitude of the map; moves the sun",
             [&l] { return l.latitude_deg; },
             [&l, done](double v) {
               l.latitude_deg = v;
               l.sun_set_directly = false;
               done();
             });
  r.AddFloat("light.sun_elevation_deg", "deg", b::kSunElevationDeg,
             "Sun elevation above the horizon; fixes the sun (time no longer moves it)",
             [&l] { return l.sun_elevation_deg; },
             [&l, done](double v) {
               l.sun_elevation_deg = v;
               l.sun_set_directly = true;
               done();
             });
  r.AddFloat("light.sun_azimuth_deg", "deg", b::kSunAzimuthDeg,
             "Sun azimuth clockwise from north (+y); fixes the sun", [&l] { return l.sun_azimuth_deg; },
             [&l, done](double v) {
               l.sun_azimuth_deg = v;
               l.sun_set_directly = true;
               done();
             });
  r.AddBool("light.headlights", "Vehicle headlights (low beam); a set ends the automatic switching",
            [&l] { return l.headlights; },
            [&l, done](bool v) {
              l.headlights = v;
              l.headlights_auto = false;
              done();
            });
  r.AddBool("light.high_beam", "High beam instead of low beam (with headlights)", [&l] { return l.high_beam; },
            [&l, done](bool v) {
              l.high_beam = v;
              done();
            });
  r.AddBool("light.street_lights", "Street lights lit; a set ends the automatic switching",
            [&l] { return l.street_lights; },
            [&l, done](bool v) {
              l.street_lights = v;
              l.street_lights_auto = false;
              done();
            });
  r.AddFloat("weather.fog_visibility_m", "m", b::kFogVisibilityM, "Meteorological visibility in fog (0: no fog)",
             [&w] { return w.fog_visibility_m; },
             [&w, done](double v) {
               w.fog_visibility_m = v;
               done();
             });
  r.AddCheck("weather.fog_visibility_m", [](const ParamValue& v) {
    const double d = std::get<double>(v);
    return d > 0 && d < 1 ? fmt::format("expected 0 (no fog) or a visibility of at least 1 m, got {}", d) : std::string();
  });
  r.AddFloat("weather.rain_mm_h", "mm/h", b::kRainMmH, "Rain rate (0: dry)", [&w] { return w.rain_mm_h; },
             [&w, done](double v) {
               w.rain_mm_h = v;
               done();
             });
  r.AddFloat("weather.road_wetness", "", b::kRoadWetness, "Road wetness, 0 dry .. 1 standing water",
             [&w] { return w.road_wetness; },
             [&w, done](double v) {
               w.road_wetness = v;
               done();
             });
  world::SurfaceConditions& f = c.surface;
  r.AddFloat("scene.road_brightness", "", b::kRoadBrightness,
             "Scale of the road surface's brightness in rendered views (1: the default asphalt)",
             [&f] { return f.road_brightness; },
             [&f, done](double v) {
               f.road_brightness = v;
               done();
             });
  r.AddFloat("scene.marking_contrast", "", b::kMarkingContrast,
             "Lane markings between the road surface (0) and white paint (1) in rendered views",
             [&f] { return f.marking_contrast; },
             [&f, done](double v) {
               f.marking_contrast = v;
               done();
             });
}

}  // namespace platoon::config
