#pragma once
/// The own car as its driver sees it (issue 37, item 1): bonnet, dashboard and A-pillars drawn in the
/// vehicle frame, an instrument cluster (speedometer, rev counter, gear, tell-tales) and three mirrors that
/// show the world behind. What is configured (MirrorDef, CockpitDef) is apart from what changes every frame
/// (CockpitState, handed over by the seat). The needle mappings are pure functions so tests can compare the
/// drawn needle with them. Equations and pictures: docs/INPUTS.md, "The seat window".
///
/// Vehicle frame: origin at the rear-axle centre on the ground, x forward, y left, z up (as NodeDef::eye_m).

#include "platoon/geometry.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <osg/Node>
#include <osg/ref_ptr>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace platoon::viewer {

/// One mirror: a live view of the world behind, reflected (left and right swapped, as a mirror shows it),
/// drawn in a rectangle of the seat window.
struct MirrorDef {
  std::string name = "interior";              ///< Name in messages ("interior", "left", "right").
  Vec3 position_m = Vec3(1.75, 0.0, 1.3);     ///< Viewpoint of the reflected view, in the vehicle frame, in m.
  double yaw_deg = 180.0;                     ///< Direction the reflected view looks, about z from x forward, in deg (180 straight back, 168 back-left).
  double pitch_deg = -1.0;                    ///< Elevation of that direction, in deg (negative: down). Typical -5..0.
  double hfov_deg = 40.0;                     ///< Horizontal field of view of the mirror, in deg. Interior ~40, side ~25.
  /// Rectangle on the window as fractions of its width and height: left, top, right, bottom (0..1).
  std::array<double, 4> screen = {0.36, 0.015, 0.64, 0.14};
};

/// The three mirrors of a driver's seat: interior (top centre), left and right side mirrors (at the
/// window's left and right edges, a little below the middle).
std::vector<MirrorDef> DefaultMirrors();

/// Checks a mirror; "" when valid, else a message naming the bad field ("mirror \"left\": hfov_deg ...").
std::string ValidateMirror(const MirrorDef& m);

/// Looks of the own car.
struct CockpitDef {
  Rgb body = {0.16f, 0.24f, 0.42f};           ///< Paint of the bonnet and the A-pillars' outer skin.
  Rgb dashboard = {0.13f, 0.12f, 0.11f};      ///< Dashboard top and pillar trim (a warm grey, unlike the sky's blue-grey).
  double dash_front_x_m = 1.95;               ///< Where the dashboard meets the windscreen, x in the vehicle frame, in m.
  double dash_top_z_m = 1.02;                 ///< Height of the dashboard's top edge, in m.
  double bonnet_front_x_m = 3.55;             ///< Front edge of the bonnet, in m.
  double bonnet_half_width_m = 0.80;          ///< Half the bonnet's width at the windscreen, in m.
  double bonnet_rear_z_m = 0.98;              ///< Bonnet height at the windscreen, in m.
  double bonnet_front_z_m = 0.86;             ///< Bonnet height at its front edge, in m.
  double pillar_width_m = 0.08;               ///< Width of an A-pillar, in m.
  double speed_max_kmh = 240.0;               ///< Full scale of the speedometer, in km/h.
  double rpm_max = 8000.0;                    ///< Full scale of the rev counter, in 1/min.
  double rpm_red = 6500.0;                    ///< Start of the rev counter's red zone, in 1/min.
};

/// The default own car: a dark blue saloon, 0..240 km/h and 0..8000 1/min dials.
inline CockpitDef DefaultCockpitDef() { return CockpitDef{}; }

/// What the instruments show this frame (the seat hands it over with every frame).
struct CockpitState {
  double speed_mps = 0.0;                     ///< Speed over ground, in m/s (the speedometer shows |v| in km/h).
  double rpm = 800.0;                         ///< Engine speed, in 1/min.
  int gear = 1;                               ///< Gear: -1 reverse, 0 neutral, 1.. forward (shown "R", "N", "D1"..).
  bool indicator_left = false;                ///< Left turn indicator on (the tell-tale blinks with SceneGraph::IndicatorLit).
  bool indicator_right = false;               ///< Right turn indicator on.
  bool headlights = false;                    ///< Dipped headlights on (green tell-tale).
  bool hand_brake = false;                    ///< Parking brake applied (red tell-tale).
  bool warning = false;                       ///< A general warning (amber tell-tale), e.g. the controller layer intervening.
  int64_t sim_ns = 0;                         ///< Session sim time of this frame, in ns (indicator blink phase).
  Pose eye_in_vehicle = Pose{Vec3(1.2, 0.35, 1.2), Quat::Identity()};  ///< The eye in the vehicle frame (head tracking moves it).
  /// Scale of the interior's colours (bonnet, dashboard, pillars) for the light outside, 0.05..1
  /// (InteriorLight of the scene's look): dark at night; the backlit instruments keep theirs.
  double interior_light = 1.0;
};

/// Angle of the speedometer's needle at `speed_kmh`, in rad, counter-clockwise from the dial's 3 o'clock
/// direction on the screen (screen up positive): 0 km/h at 225 deg (lower left), full scale at -45 deg
/// (lower right), linear in between over 270 deg clockwise; speeds outside 0..full scale stop at the ends.
double SpeedometerNeedleAngleRad(double speed_kmh, double full_scale_kmh = 240.0);

/// Angle of the rev counter's needle at `rpm`, in rad, with the speedometer's mapping over 0..`full_scale`.
double RevNeedleAngleRad(double rpm, double full_scale = 8000.0);

/// Where the instrument cluster sits in a window of `width_px` x `height_px`, in px (u right, v down).
struct ClusterLayout {
  double speedo_u = 0, speedo_v = 0;          ///< Centre of the speedometer, in px.
  double rev_u = 0, rev_v = 0;                ///< Centre of the rev counter, in px.
  double radius_px = 0;                       ///< Radius of both dials, in px (8.5 % of the height).
  double panel_u0 = 0, panel_v0 = 0, panel_u1 = 0, panel_v1 = 0;  ///< The cluster's dark backing, in px.
};

/// The cluster of a window: two dials at the bottom centre, the gear and the tell-tales between them.
ClusterLayout InstrumentClusterLayout(int width_px, int height_px);

/// The gear as the cluster writes it: "R", "N", "D1".."D9".
std::string GearLabel(int gear);

/// Gear and engine speed as the cluster shows them.
struct GearRpm {
  int gear = 0;          ///< -1 reverse, 0 neutral, 1..6 forward.
  double rpm = 800.0;    ///< Engine speed, in 1/min.
};

/// What a six-speed automatic would show at `speed_mps` (negative: reversing) and `throttle` (0..1), for a
/// vehicle model without an engine: overall ratios 13.6, 8.4, 5.9, 4.6, 3.7, 3.1 on 0.31 m wheels, the
/// lowest gear whose engine speed stays under 2000 + 3000 throttle 1/min, idle 800 1/min.
GearRpm AutomaticGearDisplay(double speed_mps, double throttle);

/// Bonnet, dashboard top and A-pillars as unlit, shaded OSG geometry in the vehicle frame: draw it with a
/// camera whose view is the eye in the vehicle frame (ViewMatrix(CockpitState::eye_in_vehicle)).
osg::ref_ptr<osg::Node> BuildCockpitGeometry(const CockpitDef& def);

}  // namespace platoon::viewer
