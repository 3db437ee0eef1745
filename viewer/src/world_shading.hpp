#pragma once
// The scene's shaders (internal to the viewer library): per-pixel sun, ambient, vehicle headlights and
// street lights, wet road sheen, Koschmieder fog by eye distance, the sky dome's colours and the rain
// streaks; and the per-view light selection (the nearest lights to each camera's eye), installed as a
// cull callback on the scene's root so every camera (seat, mirror, camera sensor) gets its own set.

#include "platoon/geometry.hpp"
#include "platoon/viewer/world_look.hpp"

#include <osg/Geode>
#include <osg/Node>
#include <osg/NodeCallback>
#include <osg/Program>
#include <osg/StateSet>
#include <osg/Uniform>
#include <osg/ref_ptr>

#include <map>
#include <vector>

namespace platoon::viewer::world_shading {

/// Light sources a view may pick from, at most this many of each kind per view.
inline constexpr int kMaxHeadlights = 8;
inline constexpr int kMaxStreetLights = 8;

/// Surface kinds (uniform u_surface), for wetness.
inline constexpr int kSurfaceOther = 0, kSurfaceRoad = 1, kSurfaceGround = 2;
/// Shading modes (uniform u_mode): lit, unlit (lamps: own colour, still fogged), street-lamp head (glows when lit).
inline constexpr int kModeLit = 0, kModeUnlit = 1, kModeStreetLamp = 2;

/// A vehicle's headlight pair, as one source at the middle of its front.
struct Headlight {
  Vec3 position_m = Vec3::Zero();  ///< World frame, in m.
  Vec3 forward = Vec3::UnitX();    ///< Unit vector along the vehicle's x axis.
  bool high_beam = false;
};

/// Uniforms and the selection of lights; owns the programs.
class Shading {
 public:
  /// Installs the scene program, its default uniforms (SceneDef's sun) and the cull callback on `root`.
  Shading(osg::Group& root, const Vec3& sun_direction, double ambient, double diffuse);
  /// Sets the global uniforms from `look`.
  void SetLook(const WorldLook& look);
  /// Linear clear-air fade to the horizon colour between start and end (end 0: none), in m.
  void SetHaze(double start_m, double end_m);
  /// Marks `ss` as a surface of `kind` (kSurface*).
  static void SetSurface(osg::StateSet& ss, int kind);
  /// Marks `ss` with shading mode `mode` (kMode*).
  static void SetMode(osg::StateSet& ss, int mode);
  /// Gives the sky dome node its program (colours from the look's horizon, zenith, sun and fog).
  void ShadeSky(osg::Node& dome);
  /// The rain streak particles (drawn around each eye; their share of the look's rain_streaks).
  osg::Node* Rain() const { return rain_.get(); }
  /// Sim time for the rain's fall, in s.
  void SetTime(double t_s);
  /// Candidate light sources (every view picks its nearest).
  std::vector<Headlight>& Headlights() { return heads_; }
  std::vector<Vec3>& StreetLamps() { return lamps_; }
  bool street_lights_on = false;

 private:
  friend class ViewCallback;
  osg::ref_ptr<osg::StateSet> StateFor(const void* camera);
  osg::StateSet* root_ss_ = nullptr;
  // The scene program [wet][lamps]: without the wet-surface terms in a dry world and without the lamps by day,
  // so that a pixel pays for neither when they add nothing.
  osg::ref_ptr<osg::Program> programs_[2][2];
  osg::Program* program_ = nullptr;
  osg::ref_ptr<osg::Geode> rain_;
  std::vector<Headlight> heads_;
  std::vector<Vec3> lamps_;
  std::map<const void*, osg::ref_ptr<osg::StateSet>> views_;
};

}  // namespace platoon::viewer::world_shading
