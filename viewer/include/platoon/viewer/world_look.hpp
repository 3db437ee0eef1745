#pragma once
/// How the world's conditions (world::WorldConditions: sun, headlights, street lights, fog, rain,
/// wetness) look on a screen: the colours and intensities the scene's shaders are given. Pure functions
/// of the conditions: no OSG, no clock. docs/WORLD.md "Day and night" and "Fog and rain" give the
/// figures and pictures.
///
/// Fog follows Koschmieder's law: the apparent contrast of an object at distance d against the horizon
/// sky is C(d) = C0 exp(-sigma d), and the visibility V is the distance at which a black object's contrast
/// falls to the threshold epsilon. This project takes the meteorological optical range's threshold
/// (WMO: epsilon = 0.05), so sigma = ln(1 / 0.05) / V = 2.996 / V; Koschmieder's original 2 % threshold
/// would give 3.912 / V.

#include "platoon/geometry.hpp"
#include "platoon/viewer/vehicle_model.hpp"
#include "platoon/world/conditions.hpp"

namespace platoon::viewer {

/// Contrast threshold that defines the visibility (WMO meteorological optical range): 0.05.
inline constexpr double kVisibilityContrast = 0.05;

/// Extinction coefficient of fog of visibility `visibility_m`, in 1/m: -ln(kVisibilityContrast) / V
/// (0 for V <= 0: no fog). 80 m fog: 0.0374 1/m.
double FogExtinction(double visibility_m);

/// Share of an object's light that reaches an eye `distance_m` away through fog of visibility
/// `visibility_m`: exp(-FogExtinction(V) d), 0..1 (1 without fog). Exactly kVisibilityContrast at d = V.
double FogTransmission(double distance_m, double visibility_m);

/// Unit vector towards the sun in the map frame (x east, y north, z up) from the light's elevation and
/// azimuth (clockwise from north): (sin az cos el, cos az cos el, sin el).
Vec3 SunDirection(const world::LightConditions& light);

/// What a renderer draws for given conditions.
struct WorldLook {
  Vec3 sun_direction = Vec3(0, 0, 1);  ///< Unit vector towards the sun, map frame.
  Rgb sun = {0.6f, 0.6f, 0.6f};        ///< Direct sunlight on a surface facing the sun (0 below the horizon).
  Rgb ambient = {0.45f, 0.45f, 0.45f}; ///< Sky and scattered light on every surface.
  Rgb horizon = {0.72f, 0.82f, 0.93f}; ///< Sky colour at the horizon (also the clear-air haze colour).
  Rgb zenith = {0.30f, 0.50f, 0.82f};  ///< Sky colour straight up.
  Rgb fog = {0.78f, 0.79f, 0.80f};     ///< Colour of the fog (airlight at infinite distance).
  double fog_extinction_1pm = 0.0;     ///< FogExtinction of the visibility, in 1/m (0: no fog).
  double sun_glow = 1.0;               ///< Brightness of the sun's disc and halo in the sky, 0..1 (0: hidden).
  /// Weight of headlights and street lights as light sources, 0..1: 1 at night, 0 by day, when they are
  /// lost in the sunlight (the eye adapts; SceneGraph's default look has 0).
  double lamp_gain = 0.0;
  double wetness = 0.0;                ///< Road wetness used for darkening and sheen, 0..1.
  double rain_streaks = 0.0;           ///< Share of the rain streak particles drawn, 0..1 (0: no rain).
  bool headlights = false;             ///< Vehicles' headlights on (besides those an entity's own lamps turn on).
  bool high_beam = false;              ///< High beam instead of low beam.
  bool street_lights = false;          ///< Street lights lit (light sources and glowing heads).
};

/// The look of `conditions`: sun, sky and ambient from the sun's elevation (day above 12 deg, dusk
/// colours near 0 deg, night below -8 deg), rain's overcast dimming them, the fog's extinction and colour.
WorldLook LookOf(const world::WorldConditions& conditions);

/// Rec. 709 luma of a colour, 0..1.
double Luma(const Rgb& c);

/// How bright an unlit interior with baked colours (the seat's cockpit) is under `look`: the ambient light's
/// luma against a clear summer noon's, clamped to 0.05..1 (1 by day, about 0.06 at night).
double InteriorLight(const WorldLook& look);

}  // namespace platoon::viewer
