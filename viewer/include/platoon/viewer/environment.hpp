#pragma once
/// The road's environment drawn (buildings, trees, guard rails, street lights, signs): the very boxes
/// road::GenerateEnvironment places and the lidar's scene holds, each drawn inside its box. Plus the
/// atmosphere that goes with it: a sky dome (horizon to zenith gradient) and distance fog.
///
/// Structure: one model per kind (built once, in a unit box); objects are grouped into square tiles and
/// each tile is one osg::LOD: its near level is one Geometry holding a copy of its kind's model scaled
/// into every object's box (buildings and trees; guard rails, lights and signs in a second, shorter-range
/// level), its far level one Geometry of plain boxes (buildings and tree canopies); beyond the far range
/// a tile draws nothing. Copies instead of one MatrixTransform per object: a software renderer
/// (llvmpipe) is bound by draw calls, and a tile costs one per level. Pure OSG: no window, no GL context.

#include "platoon/road/environment.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <osg/Group>
#include <osg/Node>
#include <osg/ref_ptr>

#include <vector>

namespace platoon::viewer {

/// Looks and level of detail of the environment. Read-only once built.
struct EnvironmentLooks {
  Rgb building_wall = {0.72f, 0.42f, 0.30f};  ///< Brick walls.
  Rgb building_roof = {0.30f, 0.28f, 0.30f};  ///< Flat roof slab (the top 4 % of the box).
  Rgb tree_canopy = {0.10f, 0.36f, 0.12f};    ///< Foliage: darker and bluer than the grass.
  Rgb tree_trunk = {0.36f, 0.24f, 0.14f};     ///< Bark.
  Rgb metal = {0.62f, 0.64f, 0.66f};          ///< Guard rails, poles, sign posts.
  Rgb sign_plate = {0.12f, 0.30f, 0.78f};     ///< Sign faces.
  Rgb lamp = {1.0f, 0.93f, 0.70f};            ///< Street-light heads (drawn emissive).
  double tile_m = 200.0;                      ///< Edge of a LOD tile, in m. Typical 100-400.
  double detail_range_m = 150.0;              ///< Objects nearer than this (plus the tile's radius) get full detail, in m.
  double far_range_m = 2500.0;                ///< Buildings and trees show as plain boxes up to this range (plus the tile's radius), in m.
  double small_range_m = 250.0;               ///< Guard rails, lights and signs vanish beyond this (plus the tile's radius), in m.
};

/// The defaults: brick, dark foliage, grey metal, blue signs; 200 m tiles, detail to 150 m, small objects to 250 m, boxes to 2.5 km.
EnvironmentLooks DefaultEnvironmentLooks();

/// The semantic colour a kind is painted in where it is largest (wall, canopy, rail, pole, plate).
Rgb KindColour(const EnvironmentLooks& looks, road::ObjectKind kind);

/// Builds the environment subgraph of `objects` (world frame; every object drawn within its box).
/// One model per kind; every tile is an osg::LOD (see the file comment). Empty list: empty group.
osg::ref_ptr<osg::Group> BuildEnvironment(const std::vector<road::EnvObject>& objects,
                                          const EnvironmentLooks& looks = DefaultEnvironmentLooks());

/// Sky and fog around a scene.
struct AtmosphereDef {
  Rgb horizon = {0.72f, 0.82f, 0.93f};  ///< Sky colour at the horizon: the clear colour and the fog colour.
  Rgb zenith = {0.30f, 0.50f, 0.82f};   ///< Sky colour straight up.
  bool fog = true;                      ///< Distance fog on (it costs a software renderer some fill rate).
  double fog_start_m = 300.0;           ///< Linear fog begins at this eye distance, in m.
  double fog_end_m = 4500.0;            ///< Everything beyond this eye distance has the horizon colour, in m.
};

/// A sky dome centred on the eye wherever it is (drawn after the opaque scene at the far plane's depth,
/// so only uncovered pixels are shaded; no depth writes, unlit, unfogged), with
/// colours from `def.horizon` (at and below the horizon) to `def.zenith`.
osg::ref_ptr<osg::Node> BuildSkyDome(const AtmosphereDef& def);

/// Enables linear distance fog in `horizon` colour on `stateset` (and whatever inherits it).
void ApplyFog(osg::StateSet& stateset, const AtmosphereDef& def);

}  // namespace platoon::viewer
