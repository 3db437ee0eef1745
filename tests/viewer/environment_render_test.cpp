// The road's environment drawn (viewer/src/environment.cpp) and labelled (sensors camera ROIs): a sensor
// host's rendered camera image shows generated buildings and trees at the pixels the pinhole model
// predicts for them, in their kind's colour, and the same frame's ROIs hold a box of the right class
// around each. Needs an X display: part of platoon_render_tests, which ctest runs under xvfb-run.
#include "../support/camera_context.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/viewer/environment.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"

#include <doctest/doctest.h>
#include <osg/Geode>
#include <osg/LOD>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <utility>

using namespace platoon;

namespace {

constexpr uint32_t kFirstEnvironmentId = 0xE0000001u;  // the sensor host numbers environment objects from here

// Chromaticity (r, g, b) / (r + g + b): unchanged by the white sun and ambient light's brightness.
std::array<double, 3> Chroma(double r, double g, double b) {
  const double s = std::max(r + g + b, 1e-9);
  return {r / s, g / s, b / s};
}
std::array<double, 3> Chroma(const viewer::Rgb& c) { return Chroma(c.r, c.g, c.b); }
double Distance(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
}

// A point of object `o` the camera should see in the kind's main colour: a tree's axis at 60 % of its
// height (inside the canopy), a building's road-facing wall at mid height (between the window bands).
Vec3 ProbePoint(const road::EnvObject& o, const Vec3& camera_m) {
  const Vec3 up = o.position_m + Vec3(0, 0, (o.kind == road::ObjectKind::kTree ? 0.6 : 0.5) * o.size_m.z());
  if (o.kind == road::ObjectKind::kTree) return up;
  const Vec3 across(-std::sin(o.yaw_rad), std::cos(o.yaw_rad), 0.0);
  const Vec3 face = across.dot(camera_m - up) > 0 ? across : Vec3(-across);
  return up + (0.5 * o.size_m.y()) * face;
}

struct Probe {
  size_t index;  // into the environment list
  Eigen::Vector2d uv;
};

// The environment objects whose probe point is in the image (4 px margin), 8-150 m ahead and the first
// thing a ray from the camera meets (the lidar's own scene decides), buildings and trees only.
std::vector<Probe> VisibleProbes(const std::vector<road::EnvObject>& env, const sensors::Scene& rays, const Pose& camera,
                                 const sensors::CameraDef& def) {
  const auto k = sensors::Intrinsics(def);
  const Quat q_cw = camera.orientation.conjugate();
  std::vector<Probe> out;
  for (size_t i = 0; i < env.size(); ++i) {
    const road::EnvObject& o = env[i];
    if (o.kind != road::ObjectKind::kBuilding && o.kind != road::ObjectKind::kTree) continue;
    const Vec3 p = ProbePoint(o, camera.position_m);
    const Vec3 opt = sensors::BodyToOptical(q_cw * (p - camera.position_m));
    if (opt.z() < 8.0 || opt.z() > 150.0) continue;
    const Eigen::Vector2d uv = sensors::ProjectOptical(k, opt);
    if (uv.x() < 4 || uv.y() < 4 || uv.x() > def.image_width_px - 4 || uv.y() > def.image_height_px - 4) continue;
    const Vec3 d = p - camera.position_m;
    const sensors::Hit hit = rays.Intersect(camera.position_m, d.normalized(), d.norm() + 0.05);
    if (!hit.valid || hit.tag.entity_id != kFirstEnvironmentId + i) continue;
    out.push_back(Probe{i, uv});
  }
  return out;
}

}  // namespace

TEST_CASE("environment render: buildings and trees appear at their predicted pixels in a sensor host's camera image, inside ROIs of their class") {
  // A generated 2 km road with its environment; a camera on an ego vehicle standing in the right lane.
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 2000\nseed = 11\nlanes = 2\n"
      "[scene]\nroad_environment = true\n"
      "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
      "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nimage_width_px = 960\nimage_height_px = 540\nrate_hz = 10\n"
      "position = [1.8, 0, 1.3]\nrender = \"rgb8\"\n",
      "env.toml");
  const std::vector<road::EnvObject> env = road::SessionEnvironment(session);
  REQUIRE(env.size() > 100);
  const road::Road road = road::SessionRoad(session.road);
  const sensors::SensorSpec spec = sensors::ReadSensorSpec(session.nodes[0].sensors[0]);
  const sensors::CameraDef def = spec.camera;
  const sensors::Mounting mounting = spec.mounting;
  sensors::Scene rays;  // the lidar's scene of this session: ground, environment boxes
  node::AddStaticScene(session, rays);
  rays.Commit();

  // The ego's station: the one (of every 20 m, either direction) that sees the most buildings, then trees.
  Pose ego;
  std::vector<Probe> probes;
  size_t best_buildings = 0, best_trees = 0;
  for (double s = 10.0; s < road.Length() - 10.0; s += 20.0) {
    for (int dir : {1, -1}) {
      const Pose p{road.LaneCenter(s, dir > 0 ? -1 : 1),
                   Quat(Eigen::AngleAxisd(road.Heading(s) + (dir > 0 ? 0.0 : M_PI), Vec3::UnitZ()))};
      const std::vector<Probe> seen = VisibleProbes(env, rays, sensors::SensorPoseInWorld(p, mounting), def);
      size_t b = 0, t = 0;
      for (const Probe& q : seen) (env[q.index].kind == road::ObjectKind::kBuilding ? b : t) += 1;
      if (std::make_pair(std::min<size_t>(b, 4), t) > std::make_pair(std::min<size_t>(best_buildings, 4), best_trees)) {
        best_buildings = b, best_trees = t, ego = p, probes = seen;
      }
    }
  }
  MESSAGE("station with " << best_buildings << " buildings and " << best_trees << " trees in view");
  REQUIRE(best_buildings >= 2);
  REQUIRE(best_trees >= 5);

  // One frame of the sensor host's camera.
  node::SensorHostModule host(session, session.nodes[0],
                              std::make_shared<spdlog::logger>("cams", std::make_shared<spdlog::sinks::null_sink_mt>()));
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), ego.position_m, 0.0)};
  context.remote[0].state.kinematics.pose = ego;
  context.remote[0].displayed = ego;
  host.Step(node::StepInfo{50'000'000, 0}, context);  // schedules the first frame at the next 100 ms
  host.Step(node::StepInfo{100'000'000, 0}, context);
  REQUIRE(context.frames.size() == 1);
  const protocol::CameraFrame& frame = context.frames[0];
  REQUIRE(frame.encoding == "rgb8");
  REQUIRE(frame.image.size() == size_t{frame.width} * frame.height * 3);

  const viewer::EnvironmentLooks looks = viewer::DefaultEnvironmentLooks();
  const viewer::SceneDef scene_def = viewer::DefaultSceneDef();
  const auto sky = Chroma(scene_def.atmosphere.horizon), grass = Chroma(scene_def.ground);
  int checked_buildings = 0, checked_trees = 0;
  for (const Probe& q : probes) {
    const road::EnvObject& o = env[q.index];
    const uint32_t id = kFirstEnvironmentId + static_cast<uint32_t>(q.index);
    CAPTURE(road::ObjectKindName(o.kind));
    CAPTURE(id);
    CAPTURE(q.uv.transpose());
    const auto i = static_cast<uint32_t>(q.uv.x()), j = static_cast<uint32_t>(q.uv.y());
    const uint8_t* px = reinterpret_cast<const uint8_t*>(frame.image.data()) + (size_t{j} * frame.width + i) * 3;
    const auto seen = Chroma(px[0], px[1], px[2]);
    const auto want = Chroma(viewer::KindColour(looks, o.kind));
    // The pixel is the object's colour (shaded), not sky or grass.
    CHECK(Distance(seen, want) < 0.04);
    CHECK(Distance(seen, sky) > 0.06);
    CHECK(Distance(seen, grass) > 0.06);
    // Its ROI: the right class, around the pixel.
    const auto roi = std::find_if(frame.rois.begin(), frame.rois.end(), [&](const protocol::CameraRoi& r) { return r.entity_id == id; });
    REQUIRE(roi != frame.rois.end());
    const auto cls = o.kind == road::ObjectKind::kBuilding ? sensors::SemanticClass::kBuilding : sensors::SemanticClass::kVegetation;
    CHECK(roi->class_id == static_cast<uint32_t>(cls));
    CHECK(roi->u_min <= q.uv.x());
    CHECK(roi->u_max >= q.uv.x());
    CHECK(roi->v_min <= q.uv.y());
    CHECK(roi->v_max >= q.uv.y());
    CHECK(roi->occlusion_ratio < 1.0f);
    (o.kind == road::ObjectKind::kBuilding ? checked_buildings : checked_trees) += 1;
  }
  CHECK(checked_buildings >= 2);
  CHECK(checked_trees >= 5);
  // Every ROI of an environment object names its kind's class.
  std::set<uint32_t> classes;
  for (const auto& r : frame.rois) {
    if (r.entity_id < kFirstEnvironmentId) continue;
    REQUIRE(r.entity_id - kFirstEnvironmentId < env.size());
    const road::ObjectKind kind = env[r.entity_id - kFirstEnvironmentId].kind;
    sensors::SemanticClass want = sensors::SemanticClass::kUnknown;
    switch (kind) {
      case road::ObjectKind::kBuilding: want = sensors::SemanticClass::kBuilding; break;
      case road::ObjectKind::kTree: want = sensors::SemanticClass::kVegetation; break;
      case road::ObjectKind::kGuardRail: want = sensors::SemanticClass::kGuardRail; break;
      case road::ObjectKind::kStreetLight: want = sensors::SemanticClass::kPole; break;
      case road::ObjectKind::kSign: want = sensors::SemanticClass::kSign; break;
    }
    CHECK(r.class_id == static_cast<uint32_t>(want));
    classes.insert(r.class_id);
  }
  MESSAGE(frame.rois.size() << " ROIs, " << classes.size() << " environment classes; checked " << checked_buildings
                            << " buildings and " << checked_trees << " trees at their pixels");
  CHECK(classes.count(static_cast<uint32_t>(sensors::SemanticClass::kGuardRail)) == 1);
}

namespace {

// Vertices an environment subgraph draws at full detail (the LOD levels that start at range 0), and the
// most drawables any one tile has.
std::pair<size_t, size_t> NearVertices(const osg::Group& root) {
  size_t vertices = 0, most = 0;
  for (unsigned t = 0; t < root.getNumChildren(); ++t) {
    const auto* lod = dynamic_cast<const osg::LOD*>(root.getChild(t));
    REQUIRE(lod != nullptr);
    size_t drawables = 0;
    float far = 0.0f;
    for (unsigned c = 0; c < lod->getNumChildren(); ++c) {
      const auto* geode = dynamic_cast<const osg::Geode*>(lod->getChild(c));
      REQUIRE(geode != nullptr);
      drawables += geode->getNumDrawables();
      far = std::max(far, lod->getMaxRange(c));
      if (lod->getMinRange(c) > 0.0f) continue;
      for (unsigned d = 0; d < geode->getNumDrawables(); ++d)
        vertices += geode->getDrawable(d)->asGeometry()->getVertexArray()->getNumElements();
    }
    CHECK(far < 5000.0f);  // nothing drawn from some kilometres away
    most = std::max(most, drawables);
  }
  return {vertices, most};
}

}  // namespace

TEST_CASE("environment render: one model per kind, copied into every object's box, a few draw calls per level-of-detail tile") {
  const config::SessionDef session =
      config::LoadSessionText("[road]\ngenerate_length_m = 1500\nseed = 3\n[scene]\nroad_environment = true\n", "e.toml");
  const std::vector<road::EnvObject> env = road::SessionEnvironment(session);
  REQUIRE(env.size() > 100);
  const osg::ref_ptr<osg::Group> root = viewer::BuildEnvironment(env);
  REQUIRE(root->getNumChildren() > 1);
  const auto [vertices, most] = NearVertices(*root);
  // The same as drawing every object on its own: each object is there, with its kind's whole model.
  size_t alone = 0;
  std::map<road::ObjectKind, size_t> per_kind;
  for (const auto& o : env) {
    const size_t n = NearVertices(*viewer::BuildEnvironment({o})).first;
    CHECK(n > 0);
    if (per_kind.count(o.kind)) CHECK(per_kind[o.kind] == n);  // one model per kind, whatever the size
    per_kind[o.kind] = n;
    alone += n;
  }
  CHECK(vertices == alone);
  CHECK(per_kind.size() >= 3);
  CHECK(most <= 4);  // large objects near, their boxes far, small objects, lamp heads
  MESSAGE(env.size() << " objects in " << root->getNumChildren() << " tiles, " << vertices << " full-detail vertices");
}

TEST_CASE("environment render: with the environment on every pixel below the horizon is ground, road or object, none sky-coloured") {
  // The participant's view: eye 1.2 m above the right lane of a generated road with its environment (sky
  // dome and distance fog on), looking along the road, level and pitched 2 deg down, at several stations.
  const config::SessionDef session =
      config::LoadSessionText("[road]\ngenerate_length_m = 3000\nseed = 5\nlanes = 2\n[scene]\nroad_environment = true\n",
                              "sky.toml");
  const road::RoadNetwork roads = road::SessionRoadNetwork(session.road);
  const road::Road& road = roads.Roads().front();
  viewer::SceneGraph scene;
  scene.SetRoads(roads);
  scene.SetEnvironment(road::SessionEnvironment(session));
  REQUIRE(scene.HasAtmosphere());
  viewer::OffscreenRenderer renderer(640, 360);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  viewer::PinholeCamera cam;
  cam.width_px = 640;
  cam.height_px = 360;
  cam.fx_px = cam.fy_px = 320.0 / std::tan(35.0 * M_PI / 180.0);  // 70 deg across, as the seat
  cam.cx_px = 320.0;
  cam.cy_px = 180.0;
  const auto sky = Chroma(scene.SkyColour());
  const auto zenith = Chroma(viewer::DefaultSceneDef().atmosphere.zenith);
  size_t below = 0, sky_like = 0;
  for (double s : {200.0, 900.0, 1700.0, 2500.0}) {
    for (double pitch_deg : {0.0, 2.0}) {
      Pose eye;
      eye.position_m = road.LaneCenter(s, -1) + Vec3(0, 0, 1.2);
      eye.orientation = Quat(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()) *
                             Eigen::AngleAxisd(pitch_deg * M_PI / 180.0, Vec3::UnitY()));  // + about y: nose down
      const viewer::Image img = renderer.Render(eye, cam);
      // The horizon's row for this pitch; 2 px below it (0.25 deg) the ground is ~270 m away, nearer than
      // where the fog starts (300 m), and every row further down nearer still.
      const double v_horizon = cam.cy_px - cam.fy_px * std::tan(pitch_deg * M_PI / 180.0);  // nose down: the horizon rises
      size_t here = 0;
      for (uint32_t j = static_cast<uint32_t>(std::ceil(v_horizon + 2.0)); j < img.height; ++j)
        for (uint32_t i = 0; i < img.width; ++i) {
          const auto p = img.At(i, j);
          const auto c = Chroma(p[0], p[1], p[2]);
          ++below;
          if (Distance(c, sky) < 0.02 || Distance(c, zenith) < 0.02) ++here;
        }
      CAPTURE(s);
      CAPTURE(pitch_deg);
      CHECK(here == 0);
      sky_like += here;
    }
  }
  MESSAGE(below << " pixels below the horizon in 8 views, " << sky_like << " of them sky-coloured");
}
