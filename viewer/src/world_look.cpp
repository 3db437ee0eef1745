#include "platoon/viewer/world_look.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::viewer {
namespace world_look_detail {

double Smoothstep(double e0, double e1, double x) {
  const double t = std::clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3.0 - 2.0 * t);
}

Rgb Mix(const Rgb& a, const Rgb& b, double t) {
  const auto f = static_cast<float>(t);
  return Rgb{a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

Rgb Scale(const Rgb& a, double k) {
  const auto f = static_cast<float>(k);
  return Rgb{a.r * f, a.g * f, a.b * f};
}

// Colours at three sun elevations: night (<= -8 deg), dusk (about 0 deg), day (>= 12 deg).
struct SkyKey {
  Rgb horizon, zenith, ambient, sun, fog;
};
constexpr SkyKey kNight{{0.045f, 0.055f, 0.09f}, {0.01f, 0.015f, 0.04f}, {0.03f, 0.035f, 0.05f}, {0, 0, 0}, {0.035f, 0.038f, 0.045f}};
constexpr SkyKey kDusk{{0.93f, 0.55f, 0.32f}, {0.16f, 0.22f, 0.45f}, {0.26f, 0.22f, 0.24f}, {0.55f, 0.30f, 0.14f}, {0.42f, 0.38f, 0.38f}};
constexpr SkyKey kDay{{0.72f, 0.82f, 0.93f}, {0.30f, 0.50f, 0.82f}, {0.45f, 0.45f, 0.45f}, {0.60f, 0.60f, 0.60f}, {0.78f, 0.79f, 0.80f}};

SkyKey KeyAt(double elevation_deg) {
  // Night to dusk between -8 and 0 deg, dusk to day between 0 and 12 deg.
  const auto blend = [](const SkyKey& a, const SkyKey& b, double t) {
    return SkyKey{Mix(a.horizon, b.horizon, t), Mix(a.zenith, b.zenith, t), Mix(a.ambient, b.ambient, t), Mix(a.sun, b.sun, t),
                  Mix(a.fog, b.fog, t)};
  };
  if (elevation_deg <= 0.0) return blend(kNight, kDusk, Smoothstep(-8.0, 0.0, elevation_deg));
  return blend(kDusk, kDay, Smoothstep(0.0, 12.0, elevation_deg));
}

}  // namespace world_look_detail

double FogExtinction(double visibility_m) {
  if (!(visibility_m > 0.0)) return 0.0;
  return -std::log(kVisibilityContrast) / visibility_m;
}

double FogTransmission(double distance_m, double visibility_m) {
  return std::exp(-FogExtinction(visibility_m) * std::max(0.0, distance_m));
}

Vec3 SunDirection(const world::LightConditions& light) {
  const double el = light.sun_elevation_deg * M_PI / 180.0, az = light.sun_azimuth_deg * M_PI / 180.0;
  return Vec3(std::sin(az) * std::cos(el), std::cos(az) * std::cos(el), std::sin(el));
}

double Luma(const Rgb& c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; }

WorldLook LookOf(const world::WorldConditions& conditions) {
  using namespace world_look_detail;
  const world::LightConditions& light = conditions.light;
  const world::WeatherConditions& weather = conditions.weather;
  WorldLook out;
  out.sun_direction = SunDirection(light);
  const double el = light.sun_elevation_deg;
  const SkyKey key = KeyAt(el);
  out.horizon = key.horizon;
  out.zenith = key.zenith;
  out.ambient = key.ambient;
  out.fog = key.fog;
  // Direct sun only while its disc is above the horizon (half a degree of fade).
  out.sun = Scale(key.sun, Smoothstep(-0.5, 1.0, el));
  out.sun_glow = Smoothstep(-1.0, 1.0, el);
  out.lamp_gain = 1.0 - Smoothstep(-6.0, 10.0, el);

  // Rain's clouds: overcast at 8 mm/h and more. Less direct sun, a dimmer and greyer sky and fog.
  const double rain = std::max(0.0, weather.rain_mm_h);
  const double overcast = std::clamp(rain / 8.0, 0.0, 1.0);
  if (overcast > 0.0) {
    const auto grey = [](const Rgb& c) {
      const auto l = static_cast<float>(Luma(c));
      return Rgb{l, l, l * 1.03f};
    };
    out.sun = Scale(out.sun, 1.0 - 0.9 * overcast);
    out.sun_glow *= 1.0 - overcast;
    out.ambient = Scale(out.ambient, 1.0 - 0.25 * overcast);
    out.horizon = Scale(Mix(out.horizon, grey(out.horizon), 0.8 * overcast), 1.0 - 0.3 * overcast);
    out.zenith = Scale(Mix(out.zenith, grey(out.horizon), 0.8 * overcast), 1.0 - 0.35 * overcast);
    out.fog = Scale(out.fog, 1.0 - 0.3 * overcast);
    out.lamp_gain = std::max(out.lamp_gain, 0.25 * overcast * Smoothstep(-6.0, 10.0, el));
  }
  out.rain_streaks = rain > 0.0 ? std::clamp(0.15 + rain / 25.0, 0.0, 1.0) : 0.0;
  out.wetness = std::clamp(weather.road_wetness, 0.0, 1.0);

  // Fog: the sun's disc fades behind it, the sky takes its colour in the sky shader.
  out.fog_extinction_1pm = FogExtinction(weather.fog_visibility_m);
  if (out.fog_extinction_1pm > 0.0) out.sun_glow *= std::exp(-out.fog_extinction_1pm * 400.0);

  out.headlights = light.headlights || light.high_beam;
  out.high_beam = light.high_beam;
  out.street_lights = light.street_lights;
  return out;
}

double InteriorLight(const WorldLook& look) {
  static const double kNoon = Luma(LookOf(world::WorldConditions{}).ambient);
  return std::clamp(Luma(look.ambient) / kNoon, 0.05, 1.0);
}

}  // namespace platoon::viewer
