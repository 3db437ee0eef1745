#pragma once
/// The render module's scene (seed 004 §4.3): sky (the clear colour, or a dome with fog once an
/// environment is set), a ground plane, roads with lane markings, the road's environment objects, and
/// one low-poly model per entity (vehicle_model.hpp: car, van, truck, bus, motorcycle, bicycle or
/// pedestrian, scaled to its box; wheels that turn with the distance travelled; head, tail, brake,
/// reverse and turn lamps), re-posed from protocol::EntityState every frame. Pure OSG: no
/// window, no GL context; OffscreenRenderer and the interactive viewer both draw this graph.
/// Not thread-safe: build and update it on the render thread.

#include "platoon/protocol/messages.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/viewer/environment.hpp"
#include "platoon/viewer/sensor_data.hpp"
#include "platoon/viewer/vehicle_model.hpp"
#include "platoon/viewer/world_look.hpp"
#include "platoon/world/conditions.hpp"

#include <osg/Geometry>
#include <osg/Group>
#include <osg/MatrixTransform>
#include <osg/ref_ptr>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

namespace platoon::viewer {

namespace world_shading {
class Shading;
}

/// Looks of a scene. Read-only once the scene is built.
struct SceneDef {
  Rgb sky = {0.55f, 0.72f, 0.92f};        ///< Clear colour above the horizon.
  Rgb ground = {0.32f, 0.46f, 0.24f};     ///< Grass.
  Rgb asphalt = {0.27f, 0.27f, 0.29f};    ///< Carriageway.
  Rgb marking = {0.95f, 0.95f, 0.95f};    ///< Lane markings.
  Rgb yellow_marking = {0.93f, 0.72f, 0.12f};  ///< Yellow road marks (OpenDRIVE color="yellow").
  Rgb pavement = {0.56f, 0.55f, 0.52f};   ///< Sidewalks, kerbs, borders, shoulders and medians of OpenDRIVE roads.
  double ground_half_size_m = 5000.0;     ///< Least half size of the square ground plane, in m. Typical 2000-10000.
  double ground_margin_m = 2000.0;        ///< The ground reaches at least this far beyond every road, in m.
  double ground_depth_m = 0.03;           ///< The ground lies this far below the lowest road point, in m.
  double road_max_step_m = 10.0;          ///< Longest tessellation step along a road, in m.
  double road_sagitta_m = 0.01;           ///< Largest distance between a curve and its chords, in m.
  double marking_width_m = 0.15;          ///< Width of a painted line, in m. Typical 0.12-0.25.
  double marking_height_m = 0.005;        ///< Lines sit this far above the asphalt, in m.
  double dash_length_m = 3.0;             ///< Length of a dash, in m (German rural: 6).
  double dash_gap_m = 6.0;                ///< Gap between dashes, in m (German rural: 12).
  double ambient = 0.45;                  ///< Ambient light on every surface, 0..1.
  double diffuse = 0.6;                   ///< Sunlight on a surface facing the sun, 0..1.
  Vec3 sun_direction = Vec3(-0.35, -0.25, 1.0);  ///< Direction towards the sun (need not be unit).
  VehicleLayout layout;                   ///< How entity boxes are drawn.
  /// A vehicle whose bounding sphere's size on screen (osg::LOD PIXEL_SIZE_ON_SCREEN: about 1.15 times its
  /// diameter in px) is below this in the view drawing it is drawn as its far model
  /// (BuildFarVehicleModel), in px; 0: never. 90: a 4.5 m car switches about 59 m away in a 1280 px wide,
  /// 70 deg view, when 23 px tall (docs/WORLD.md).
  double far_model_below_px = 90.0;
  EnvironmentLooks environment;           ///< How environment objects are drawn (SetEnvironment).
  AtmosphereDef atmosphere;               ///< Sky dome and fog, switched on by SetEnvironment.
};

/// The default scene: blue sky, grass, grey asphalt, white lines, sun from the south-east above.
SceneDef DefaultSceneDef();

/// The road surface's colour under `surface`: `asphalt` scaled by road_brightness (each channel at most 1).
Rgb SurfaceAsphalt(const Rgb& asphalt, const world::SurfaceConditions& surface);
/// The markings' colour: from that road colour (marking_contrast 0) to `marking` (1), linearly.
Rgb SurfaceMarking(const Rgb& asphalt, const Rgb& marking, const world::SurfaceConditions& surface);

/// How the points of a cloud are coloured.
enum class PointColouring : uint8_t { kIntensity, kSource };

/// The square ground plane: centre (x, y) and half size, in m, at height z_m.
struct GroundExtent {
  double centre_x_m = 0.0, centre_y_m = 0.0;  ///< Centre of the square, in m.
  double half_size_m = 0.0;                    ///< Half its edge length, in m.
  double z_m = 0.0;                            ///< Height of the plane, in m.
};

/// Opaque surfaces drawn nearest first (OSG's default render bin sort mode, set once for the process
/// unless OSG_DEFAULT_BIN_SORT_MODE names another): the depth test then rejects hidden pixels before
/// their shading, which a software renderer pays per pixel. Called before a viewer is made; the scene
/// graph calls it too. Transparent surfaces stay farthest first.
void UseNearestFirstDrawOrder();

/// The scene graph and the entity models in it.
class SceneGraph {
 public:
  /// An empty scene: sky, light and a ground plane around the origin at z = -ground_depth_m.
  explicit SceneGraph(const SceneDef& def = DefaultSceneDef());
  ~SceneGraph();
  SceneGraph(const SceneGraph&) = delete;
  SceneGraph& operator=(const SceneGraph&) = delete;

  /// Root node to hand to a viewer or renderer.
  osg::Group* Root() const { return root_.get(); }
  /// Clear colour of the sky (the horizon colour once the atmosphere is on; the conditions' horizon, or
  /// their fog, once SetConditions was called).
  const Rgb& SkyColour() const { return sky_colour_; }
  /// The definition this scene was built with.
  const SceneDef& Def() const { return def_; }

  /// Replaces the roads (asphalt and markings) and fits the ground plane around them.
  void SetRoads(const road::RoadNetwork& network);
  /// Replaces the environment objects (buildings, trees, guard rails, street lights, signs; as
  /// road::GenerateEnvironment places them) with BuildEnvironment's subgraph. The first call also
  /// switches on the atmosphere: a sky dome and distance fog (SkyColour becomes the horizon colour).
  void SetEnvironment(const std::vector<road::EnvObject>& objects);
  /// Replaces the traffic signs (road::PlaceSigns, session_road's SessionPlacedSigns; docs/WORLD.md "Signs")
  /// with BuildSigns's subgraph: posts, gantries and plates with their faces drawn in code.
  void SetSigns(const std::vector<road::PlacedSign>& signs);
  /// Number of traffic signs drawn now.
  size_t SignCount() const { return sign_count_; }
  /// Lights and weather from now on (world_look.hpp): the sun's direction and colour, sky and ambient from
  /// its elevation, headlights of the vehicles (lit lamps, and light sources: the kMaxHeadlights vehicles
  /// with lit headlights nearest each view's eye), the street lights of the environment (the
  /// kMaxStreetLights nearest each eye), Koschmieder fog by eye distance, rain's dimming, streaks and wet
  /// road; the road surface's brightness and the markings' contrast (SurfaceAsphalt, SurfaceMarking); what
  /// variable message signs show (their plates are redrawn when it changes). Also
  /// switches on the sky dome. Until the first call the scene has SceneDef's fixed sun.
  void SetConditions(const world::WorldConditions& conditions);
  /// The seat's own vehicle (nullopt: none): not drawn (the seat's cockpit is), but its headlights light
  /// the scene from the next Update on, like every drawn vehicle's.
  void SetOwnVehicle(const std::optional<protocol::EntityState>& own) { own_ = own; }
  /// The look of the conditions last set (the defaults' look before any).
  const WorldLook& Look() const { return look_; }
  /// Most vehicles whose headlights light the scene in one view (the nearest to its eye).
  static constexpr int kMaxHeadlights = 8;
  /// Most street lights that light the scene in one view (the nearest to its eye).
  static constexpr int kMaxStreetLights = 8;
  /// Number of environment objects drawn now.
  size_t EnvironmentCount() const { return environment_count_; }
  /// Whether the sky dome and fog are on.
  bool HasAtmosphere() const { return atmosphere_on_; }
  /// Where the ground plane is now.
  const GroundExtent& Ground() const { return ground_; }

  /// Shows exactly `entities` (creating, re-posing and removing models): each at its
  /// kinematics.pose, lamps from `lights` (tail lamps dim red with the headlights, bright red when
  /// braking; reverse lamps white), wheels turned by the distance since the last update.
  /// Turn indicators that are on blink at kIndicatorHz, lit in the first half of each period of
  /// `sim_ns` (the session's sim time), so every screen of a session blinks in phase.
  void Update(const std::vector<protocol::EntityState>& entities, int64_t sim_ns = 0);
  /// Blink rate of a turn indicator, in Hz (UN ECE R48: 1.5 +/- 0.5 Hz).
  static constexpr double kIndicatorHz = 1.5;
  /// Whether an indicator that is on is lit at `sim_ns`.
  static bool IndicatorLit(int64_t sim_ns);
  /// Paints entity `id`'s body in `colour` from now on (also before the entity appears).
  void SetEntityColour(uint64_t id, const Rgb& colour);
  /// Returns entity `id` to its hashed colour (EntityColour).
  void ClearEntityColour(uint64_t id);
  /// Number of entity models in the scene.
  size_t EntityCount() const { return models_.size(); }
  /// Wheel rotation angle of entity `id`, in rad (nullopt if it has no model); forward travel of d
  /// metres turns the wheels by d / radius.
  std::optional<double> WheelAngle(uint64_t id) const;

  /// Shows exactly `points` (world frame) as unlit GL_POINTS of `size_px` pixels, coloured by intensity
  /// (log scale over the cloud's range) or by source index. One geometry whose arrays are refilled.
  void SetPointCloud(const std::vector<WorldPoint>& points, PointColouring colouring, float size_px);
  /// Number of points drawn now.
  size_t PointCount() const;
  /// Shows exactly `markers` as flat, unlit boxes just above their position (orange; grey for a
  /// false positive).
  void SetRadarMarkers(const std::vector<RadarMarker>& markers);
  /// Number of radar markers drawn now.
  size_t RadarMarkerCount() const { return radar_count_; }

 private:
  struct Model;
  struct ModelTemplate;
  void BuildGround(const GroundExtent& extent);
  std::unique_ptr<Model> MakeModel(const protocol::EntityState& e);
  std::shared_ptr<const ModelTemplate> TemplateFor(protocol::EntityKind kind, const Vec3& box_size_m);
  Rgb ColourOf(uint64_t id) const;

  SceneDef def_;
  osg::ref_ptr<osg::Group> root_;
  osg::ref_ptr<osg::Group> ground_group_;
  osg::ref_ptr<osg::Group> roads_;
  osg::ref_ptr<osg::Group> entities_;
  osg::ref_ptr<osg::Group> environment_;
  size_t environment_count_ = 0;
  osg::ref_ptr<osg::Group> signs_;   // SetSigns's subgraph, under root_
  std::vector<road::PlacedSign> placed_signs_;                  // as drawn (variable signs' contents applied)
  std::vector<world::VariableSignContent> variable_signs_;     // of the conditions last set
  size_t sign_count_ = 0;
  bool atmosphere_on_ = false;
  bool dome_on_ = false;
  std::optional<protocol::EntityState> own_;
  bool conditions_set_ = false;
  world::SurfaceConditions surface_;
  std::vector<std::pair<osg::ref_ptr<osg::Vec4Array>, osg::ref_ptr<osg::Vec4Array>>> road_colours_;  // asphalt, markings per road
  void ApplySurface();
  Rgb sky_colour_;
  WorldLook look_;
  std::unique_ptr<world_shading::Shading> shading_;
  void EnsureDome();
  osg::ref_ptr<osg::Group> sensors_;
  osg::ref_ptr<osg::Geometry> cloud_, radar_;
  size_t radar_count_ = 0;
  osg::ref_ptr<osg::StateSet> lamp_state_;
  std::map<std::tuple<int, double, double, double>, std::shared_ptr<const ModelTemplate>> templates_;
  GroundExtent ground_;
  std::map<uint64_t, std::unique_ptr<Model>> models_;
  std::map<uint64_t, Rgb> colours_;
};

}  // namespace platoon::viewer
