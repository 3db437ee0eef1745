// The look of the world's conditions (viewer/src/world_look.cpp): Koschmieder's fog, the sun's direction,
// sky and ambient following the sun's elevation, rain dimming the light.
#include "platoon/viewer/world_look.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::viewer;

namespace world_look_test_detail {

world::WorldConditions Sun(double elevation_deg, double azimuth_deg) {
  world::WorldConditions c;
  c.light.sun_elevation_deg = elevation_deg;
  c.light.sun_azimuth_deg = azimuth_deg;
  c.light.sun_set_directly = true;
  return c;
}

}  // namespace world_look_test_detail
using world_look_test_detail::Sun;

TEST_CASE("world look: a black object at the visibility keeps the 5 percent contrast threshold of Koschmieder's law") {
  for (double v : {50.0, 80.0, 300.0, 2000.0}) {
    CHECK(FogTransmission(v, v) == doctest::Approx(kVisibilityContrast).epsilon(1e-12));
    // Twice as far: the square of the transmission (exponential extinction).
    CHECK(FogTransmission(2.0 * v, v) == doctest::Approx(kVisibilityContrast * kVisibilityContrast).epsilon(1e-12));
    CHECK(FogExtinction(v) * v == doctest::Approx(std::log(20.0)).epsilon(1e-12));
  }
  CHECK(FogTransmission(1e6, 0.0) == 1.0);  // no fog
  CHECK(FogExtinction(-5.0) == 0.0);
}

TEST_CASE("world look: the sun's azimuth turns clockwise from north and its elevation lifts it") {
  const Vec3 east = SunDirection(Sun(0.0, 90.0).light);
  CHECK(east.x() == doctest::Approx(1.0));
  CHECK(std::abs(east.y()) < 1e-12);
  const Vec3 south = SunDirection(Sun(30.0, 180.0).light);
  CHECK(south.y() == doctest::Approx(-std::cos(30.0 * M_PI / 180.0)));
  CHECK(south.z() == doctest::Approx(0.5));
  CHECK(SunDirection(Sun(-20.0, 250.0).light).norm() == doctest::Approx(1.0));
}

TEST_CASE("world look: sky and ambient follow the sun's elevation from day through dusk to night") {
  const WorldLook day = LookOf(Sun(40.0, 180.0)), dusk = LookOf(Sun(1.0, 270.0)), night = LookOf(Sun(-20.0, 0.0));
  CHECK(Luma(night.ambient) < 0.15 * Luma(day.ambient));
  CHECK(Luma(night.sun) == 0.0);  // no direct sun below the horizon
  CHECK(Luma(day.sun) > Luma(dusk.sun));
  // Dusk's horizon is redder than day's (red over blue), and night's sky darker than both.
  CHECK(dusk.horizon.r / dusk.horizon.b > 1.5 * day.horizon.r / day.horizon.b);
  CHECK(Luma(night.horizon) < 0.2 * Luma(dusk.horizon));
  CHECK(Luma(night.zenith) < Luma(night.horizon) + 1e-9);
  // Lamps light the scene at night, not in daylight.
  CHECK(night.lamp_gain == 1.0);
  CHECK(day.lamp_gain == 0.0);
  // The defaults (summer noon) are the day's look.
  CHECK(LookOf(world::WorldConditions{}).sun == day.sun);
}

TEST_CASE("world look: rain dims the sun and the sky and turns on streaks in proportion to its rate") {
  world::WorldConditions dry = Sun(40.0, 180.0), light = dry, heavy = dry;
  light.weather.rain_mm_h = 2.0;
  heavy.weather.rain_mm_h = 20.0;
  const WorldLook d = LookOf(dry), l = LookOf(light), h = LookOf(heavy);
  CHECK(d.rain_streaks == 0.0);
  CHECK(l.rain_streaks > 0.0);
  CHECK(h.rain_streaks > l.rain_streaks);
  CHECK(Luma(h.sun) < Luma(l.sun));
  CHECK(Luma(l.sun) < Luma(d.sun));
  CHECK(Luma(h.horizon) < Luma(d.horizon));
  world::WorldConditions wet = dry;
  wet.weather.road_wetness = 1.5;  // clamped
  CHECK(LookOf(wet).wetness == 1.0);
}

TEST_CASE("world look: headlights street lights and high beam pass through") {
  world::WorldConditions c = Sun(-15.0, 0.0);
  CHECK_FALSE(LookOf(c).headlights);
  c.light.high_beam = true;  // high beam implies the headlights
  c.light.street_lights = true;
  const WorldLook l = LookOf(c);
  CHECK(l.headlights);
  CHECK(l.high_beam);
  CHECK(l.street_lights);
}
