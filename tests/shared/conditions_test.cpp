// Light and weather of a session (shared/src/world/conditions.cpp, shared/src/config/conditions.cpp) and their
// way over the wire (WorldState::conditions in shared/src/protocol/codec.cpp).
#include "platoon/config/conditions.hpp"
#include "platoon/config/session.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/world/conditions.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

namespace platoon::world {
namespace conditions_test_detail {

// The text of the ConfigError that loading `text` throws ("" when it loads).
std::string ConditionsLoadError(const std::string& text) {
  try {
    config::ValidateSession(config::LoadSessionText(text, "cond.toml"));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace conditions_test_detail

TEST_CASE("world conditions: the sun stands where spherical astronomy puts it at noon sunrise and sunset") {
  // Equinox (20 March, day 79/80): declination about 0, so the noon elevation is 90 - latitude, the sun rises
  // at 6 h due east and sets at 18 h due west.
  for (double lat : {0.0, 30.0, 48.0, 60.0}) {
    const SunAngles noon = SunPosition(12.0, 80, lat);
    CHECK(std::abs(noon.elevation_deg - (90.0 - lat)) < 0.3);
    if (lat > 0) CHECK(noon.azimuth_deg == doctest::Approx(180.0));
  }
  const SunAngles rise = SunPosition(6.0, 80, 48.0), set = SunPosition(18.0, 80, 48.0);
  CHECK(std::abs(rise.elevation_deg) < 0.3);
  CHECK(std::abs(rise.azimuth_deg - 90.0) < 0.5);
  CHECK(std::abs(set.elevation_deg) < 0.3);
  CHECK(std::abs(set.azimuth_deg - 270.0) < 0.5);
  // June solstice (day 172): declination +23.44 deg, noon elevation 90 - 48 + 23.44.
  CHECK(std::abs(SolarDeclinationDeg(172) - 23.44) < 0.1);
  CHECK(std::abs(SunPosition(12.0, 172, 48.0).elevation_deg - 65.44) < 0.1);
  // December solstice: -23.44; in the south the noon sun is due north.
  CHECK(std::abs(SolarDeclinationDeg(355) + 23.44) < 0.1);
  const SunAngles south = SunPosition(12.0, 172, -30.0);
  CHECK(std::abs(south.elevation_deg - (90.0 - 30.0 - 23.44)) < 0.1);
  CHECK((south.azimuth_deg < 0.5 || south.azimuth_deg > 359.5));
  // Morning and afternoon mirror each other about the meridian.
  const SunAngles am = SunPosition(9.5, 120, 48.0), pm = SunPosition(14.5, 120, 48.0);
  CHECK(am.elevation_deg == doctest::Approx(pm.elevation_deg));
  CHECK(am.azimuth_deg + pm.azimuth_deg == doctest::Approx(360.0));
}

TEST_CASE("world conditions: automatic lights follow the sun and fog extinction is Koschmieder's") {
  LightConditions l;
  l.time_of_day_h = 22.5;  // after sunset in June at 48 N
  UpdateDerived(l);
  CHECK(l.sun_elevation_deg < kAutoLightsSunElevationDeg);
  CHECK(l.headlights);
  CHECK(l.street_lights);
  l.time_of_day_h = 12.0;
  UpdateDerived(l);
  CHECK_FALSE(l.headlights);
  CHECK_FALSE(l.street_lights);
  // Set by hand: the sun no longer switches them.
  l.headlights_auto = false;
  l.headlights = true;
  UpdateDerived(l);
  CHECK(l.headlights);
  CHECK(FogExtinctionPerM(100.0) == doctest::Approx(std::log(20.0) / 100.0));
  CHECK(std::exp(-FogExtinctionPerM(250.0) * 250.0) == doctest::Approx(0.05));
  CHECK(FogExtinctionPerM(0.0) == 0.0);
}

TEST_CASE("world conditions: light and weather are read from the session file with file line and key in errors") {
  using conditions_test_detail::ConditionsLoadError;
  const config::SessionDef s = config::LoadSessionText(R"(
[light]
time_of_day_h = 21.5
day_of_year = 172
latitude_deg = 52
high_beam = true
street_lights = false

[weather]
fog_visibility_m = 80
rain_mm_h = 4
road_wetness = 0.6
)", "cond.toml");
  const SunAngles sun = SunPosition(21.5, 172, 52.0);
  CHECK(s.conditions.light.sun_elevation_deg == doctest::Approx(sun.elevation_deg));
  CHECK(s.conditions.light.sun_azimuth_deg == doctest::Approx(sun.azimuth_deg));
  CHECK(s.conditions.light.headlights == (sun.elevation_deg < kAutoLightsSunElevationDeg));
  CHECK(s.conditions.light.headlights_auto);
  CHECK(s.conditions.light.high_beam);
  CHECK_FALSE(s.conditions.light.street_lights);
  CHECK_FALSE(s.conditions.light.street_lights_auto);
  CHECK(s.conditions.weather.fog_visibility_m == 80);
  CHECK(s.conditions.weather.rain_mm_h == 4);
  CHECK(s.conditions.weather.road_wetness == 0.6);
  // The sun set directly.
  const config::SessionDef d = config::LoadSessionText("[light]\nsun_elevation_deg = -10\nsun_azimuth_deg = 300\n", "d.toml");
  CHECK(d.conditions.light.sun_set_directly);
  CHECK(d.conditions.light.sun_elevation_deg == -10);
  CHECK(d.conditions.light.headlights);
  // Without [light]: a clear June noon at 48 N, computed.
  CHECK(config::LoadSessionText("", "e.toml").conditions.light.sun_elevation_deg == doctest::Approx(SunPosition(12, 172, 48).elevation_deg));
  // Errors name the file, the line and the key.
  const std::string both = ConditionsLoadError("[light]\ntime_of_day_h = 8\nsun_elevation_deg = 20\n");
  CHECK(both.find("cond.toml:3") != std::string::npos);
  CHECK(both.find("sun_elevation_deg") != std::string::npos);
  CHECK(both.find("got both") != std::string::npos);
  const std::string fog = ConditionsLoadError("[weather]\nfog_visibility_m = 0.5\n");
  CHECK(fog.find("cond.toml:2") != std::string::npos);
  CHECK(fog.find("at least 1 m") != std::string::npos);
  CHECK(ConditionsLoadError("[weather]\nrain_mm_h = -1\n").find("rain_mm_h") != std::string::npos);
  CHECK(ConditionsLoadError("[light]\ntime_of_day_h = 25\n").find("time_of_day_h") != std::string::npos);
  CHECK(ConditionsLoadError("[weather]\nsnow = 1\n").find("snow") != std::string::npos);
  // A variator may name a condition parameter, but only an existing one.
  CHECK(ConditionsLoadError("[[variator]]\nparam = \"weather.fog_visibility_m\"\nkind = \"step\"\nmin = 20\nmax = 200\n"
                            "duration_s = [5, 10]\n")
            .empty());
  const std::string bad = ConditionsLoadError("[[variator]]\nparam = \"weather.snow_mm_h\"\nkind = \"step\"\nmin = 1\nmax = 2\n"
                                              "duration_s = [5, 10]\n");
  CHECK(bad.find("weather.fog_visibility_m") != std::string::npos);
}

TEST_CASE("world conditions: live parameters move the sun switch the lights and refuse what the file refuses") {
  WorldConditions c;
  UpdateDerived(c.light);
  int changes = 0;
  config::ParamRegistry r;
  config::AddConditionParams(r, c, [&] { ++changes; });
  CHECK(r.Set("light.time_of_day_h", "6").ok);
  CHECK(c.light.sun_elevation_deg == doctest::Approx(SunPosition(6, 172, 48).elevation_deg));
  CHECK(r.Set("light.sun_elevation_deg", "-5").ok);
  CHECK(c.light.sun_set_directly);
  CHECK(c.light.sun_elevation_deg == -5);
  CHECK(c.light.headlights);  // automatic, sun below 2 deg
  CHECK(r.Set("light.headlights", "false").ok);
  CHECK_FALSE(c.light.headlights);
  CHECK_FALSE(c.light.headlights_auto);
  CHECK(r.Set("weather.fog_visibility_m", "150").ok);
  CHECK(c.weather.fog_visibility_m == 150);
  CHECK(changes == 4);
  const auto refused = r.Set("weather.fog_visibility_m", "0.5");
  CHECK_FALSE(refused.ok);
  CHECK(refused.error.find("at least 1 m") != std::string::npos);
  CHECK_FALSE(r.Set("weather.rain_mm_h", "nan").ok);
  CHECK_FALSE(r.Set("light.sun_azimuth_deg", "400").ok);
  CHECK(c.weather.fog_visibility_m == 150);
  CHECK(changes == 4);
  for (const auto& path : config::ConditionParamPaths()) CHECK(r.Has(path));
}

TEST_CASE("world conditions: a world state carries them over the wire and garbage is clamped") {
  protocol::WorldState w;
  CHECK_FALSE(std::get<protocol::WorldState>(*protocol::Decode(protocol::Encode(w)).message).conditions);
  WorldConditions c;
  c.light.time_of_day_h = 19.25;
  c.light.sun_elevation_deg = 3.5;
  c.light.headlights = true;
  c.light.high_beam = true;
  c.light.headlights_auto = false;
  c.weather.fog_visibility_m = 75;
  c.weather.rain_mm_h = 12.5;
  c.weather.road_wetness = 0.4;
  c.surface.road_brightness = 1.75;
  c.surface.marking_contrast = 0.25;
  c.variable_signs = {{3, 0, 80.0}, {7, 12, 0.0}};
  w.conditions = c;
  const auto back = std::get<protocol::WorldState>(*protocol::Decode(protocol::Encode(w)).message);
  REQUIRE(back.conditions);
  CHECK(*back.conditions == c);
  w.conditions->weather.fog_visibility_m = std::nan("");
  w.conditions->weather.road_wetness = 7;
  const auto clamped = std::get<protocol::WorldState>(*protocol::Decode(protocol::Encode(w)).message);
  CHECK(clamped.conditions->weather.fog_visibility_m == 0.0);
  CHECK(clamped.conditions->weather.road_wetness == 1.0);
  w.conditions->surface.road_brightness = std::nan("");
  w.conditions->surface.marking_contrast = -3;
  const auto surface = std::get<protocol::WorldState>(*protocol::Decode(protocol::Encode(w)).message);
  CHECK(surface.conditions->surface.road_brightness == 1.0);
  CHECK(surface.conditions->surface.marking_contrast == 0.0);
}

TEST_CASE("world conditions: road brightness and marking contrast come from [scene] and are live parameters") {
  const auto s = config::LoadSessionText("[scene]\nroad_brightness = 0.6\nmarking_contrast = 0.3\n", "surface.toml");
  CHECK(s.conditions.surface.road_brightness == 0.6);
  CHECK(s.conditions.surface.marking_contrast == 0.3);
  CHECK(config::LoadSessionText("", "plain.toml").conditions.surface == SurfaceConditions{});
  const std::string bad = conditions_test_detail::ConditionsLoadError("[scene]\nmarking_contrast = 1.5\n");
  CHECK(bad.find("marking_contrast") != std::string::npos);
  CHECK(bad.find("cond.toml:2") != std::string::npos);
  WorldConditions c = s.conditions;
  int changes = 0;
  config::ParamRegistry r;
  config::AddConditionParams(r, c, [&] { ++changes; });
  CHECK(r.Set("scene.road_brightness", "1.4").ok);
  CHECK(r.Set("scene.marking_contrast", "0").ok);
  CHECK(c.surface.road_brightness == 1.4);
  CHECK(c.surface.marking_contrast == 0.0);
  CHECK(changes == 2);
  CHECK_FALSE(r.Set("scene.road_brightness", "0").ok);
  CHECK_FALSE(r.Set("scene.marking_contrast", "2").ok);
  CHECK(c.surface.road_brightness == 1.4);
}

}  // namespace platoon::world
