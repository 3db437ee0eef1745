// Day, dusk, night, fog and rain rendered (viewer/src/world_shading.cpp, world_look.cpp, scene.cpp): the
// ego's low beam lights the road ahead, the sun's azimuth decides which wall of a building is lit, fog of
// visibility V leaves a black board at V the 5 % contrast Koschmieder's law gives, and a seat's frames in
// each condition (written as PNGs when PLATOON_WORLD_PICTURES names a folder, for docs/WORLD.md). Needs an
// X display: part of platoon_render_tests, which ctest runs under xvfb-run.
#include "platoon/road/environment.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/seat_window.hpp"
#include "platoon/viewer/world_look.hpp"

#include <doctest/doctest.h>
#include <osg/Geode>
#include <osg/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace platoon;
using namespace platoon::viewer;

namespace world_render_test_detail {

constexpr double kWrDeg = M_PI / 180.0;

Quat WrYawPitch(double yaw_rad, double pitch_rad) {
  return Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch_rad, Vec3::UnitY()));
}

// Mean Rec. 709 luma (0..255) of the (2 r + 1)^2 pixels about (u, v).
double WrLuma(const Image& img, double u, double v, int r = 2) {
  double sum = 0.0;
  int n = 0;
  for (int dj = -r; dj <= r; ++dj)
    for (int di = -r; di <= r; ++di) {
      const int i = static_cast<int>(std::floor(u)) + di, j = static_cast<int>(std::floor(v)) + dj;
      REQUIRE(i >= 0);
      REQUIRE(j >= 0);
      REQUIRE(i < static_cast<int>(img.width));
      REQUIRE(j < static_cast<int>(img.height));
      const auto p = img.At(static_cast<uint32_t>(i), static_cast<uint32_t>(j));
      sum += 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
      ++n;
    }
  return sum / n;
}

// The world through a 640 x 360 seat's windscreen: between the side mirrors, below the interior mirror,
// above the bonnet (the own car is drawn the same in every light).
constexpr uint32_t kWrU0 = 120, kWrU1 = 520, kWrV0 = 60, kWrV1 = 235;

double WrMeanLuma(const Image& img) {
  double sum = 0.0;
  for (uint32_t j = kWrV0; j < kWrV1; ++j)
    for (uint32_t i = kWrU0; i < kWrU1; ++i) {
      const auto p = img.At(i, j);
      sum += 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
    }
  return sum / (static_cast<double>(kWrU1 - kWrU0) * (kWrV1 - kWrV0));
}

// Standard deviation of the luma in the windscreen: how much contrast the world holds.
double WrLumaSpread(const Image& img) {
  const double mean = WrMeanLuma(img);
  double sum = 0.0;
  for (uint32_t j = kWrV0; j < kWrV1; ++j)
    for (uint32_t i = kWrU0; i < kWrU1; ++i) {
      const auto p = img.At(i, j);
      const double l = 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2] - mean;
      sum += l * l;
    }
  return std::sqrt(sum / (static_cast<double>(kWrU1 - kWrU0) * (kWrV1 - kWrV0)));
}

Eigen::Vector2d WrProject(const PinholeCamera& cam, const Pose& camera, const Vec3& p) {
  Eigen::Vector2d uv;
  REQUIRE(ProjectPoint(cam, camera, p, &uv));
  return uv;
}

road::RoadNetwork WrStraightRoad(double length_m) {
  road::RoadDef def = road::DefaultRoadDef();
  def.sections = {road::LineSection(length_m)};
  return road::RoadNetwork({def});
}

protocol::EntityState WrCar(const road::Road& road, uint64_t id, double s, int lane, bool headlights) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.box_size_m = Vec3(4.5, 1.8, 1.5);
  e.kinematics.pose.position_m = road.LaneCenter(s, lane);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(road.Heading(s) + (lane > 0 ? M_PI : 0.0), Vec3::UnitZ()));
  e.lights.headlights = headlights;
  return e;
}

world::WorldConditions WrSun(double elevation_deg, double azimuth_deg) {
  world::WorldConditions c;
  c.light.sun_set_directly = true;
  c.light.sun_elevation_deg = elevation_deg;
  c.light.sun_azimuth_deg = azimuth_deg;
  return c;
}

// A black square board of edge `size_m` facing -x, its centre at `centre`.
osg::ref_ptr<osg::Geode> WrBlackBoard(const Vec3& centre, double size_m) {
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  const auto h = static_cast<float>(0.5 * size_m);
  const osg::Vec3 c(static_cast<float>(centre.x()), static_cast<float>(centre.y()), static_cast<float>(centre.z()));
  for (const auto& [dy, dz] : {std::pair{-h, -h}, std::pair{h, -h}, std::pair{h, h}, std::pair{-h, h}}) v->push_back(c + osg::Vec3(0, dy, dz));
  osg::ref_ptr<osg::Vec4Array> col = new osg::Vec4Array(1);
  (*col)[0] = osg::Vec4(0, 0, 0, 1);
  osg::ref_ptr<osg::Vec3Array> n = new osg::Vec3Array(1);
  (*n)[0] = osg::Vec3(-1, 0, 0);
  g->setVertexArray(v);
  g->setColorArray(col, osg::Array::BIND_OVERALL);
  g->setNormalArray(n, osg::Array::BIND_OVERALL);
  g->addPrimitiveSet(new osg::DrawArrays(GL_QUADS, 0, 4));
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(g);
  return geode;
}

}  // namespace world_render_test_detail
using namespace world_render_test_detail;

TEST_CASE("world render: at night a road point in the ego's low beam is at least 4 times brighter than one outside it") {
  const road::RoadNetwork roads = WrStraightRoad(400.0);
  const road::Road& road = roads.Roads().front();
  SceneGraph scene;
  scene.SetRoads(roads);
  OffscreenRenderer renderer(640, 480);
  const PinholeCamera cam = CameraFromFov(640, 480, 70.0 * kWrDeg);
  // Above and behind the ego (right lane, 50 m along), looking along the road 20 deg down.
  const double s_car = 50.0;
  Pose camera;
  camera.position_m = road.LaneCenter(s_car - 12.0, -1) + Vec3(0, 0, 6.0);
  camera.orientation = WrYawPitch(road.Heading(s_car), 20.0 * kWrDeg);
  // In the cone: the lane 16 m ahead of the car's front; outside: the lane 6 m behind the car; far: 60 m
  // ahead of the front, where only the high beam reaches.
  const double front = s_car + 0.8 * 4.5;
  const Eigen::Vector2d in = WrProject(cam, camera, road.LaneCenter(front + 16.0, -1));
  const Eigen::Vector2d out = WrProject(cam, camera, road.LaneCenter(s_car - 6.0, -1));
  const Eigen::Vector2d far = WrProject(cam, camera, road.LaneCenter(front + 60.0, -1));

  auto render = [&](bool headlights, bool high_beam) {
    world::WorldConditions c = WrSun(-20.0, 0.0);
    c.light.headlights = headlights;
    c.light.high_beam = high_beam;
    scene.SetConditions(c);
    scene.Update({WrCar(road, 1, s_car, -1, false)});
    renderer.SetScene(scene.Root(), scene.SkyColour());
    return renderer.Render(camera, cam);
  };
  const Image dark = render(false, false), low = render(true, false), high = render(true, true);
  const double dark_in = WrLuma(dark, in.x(), in.y()), dark_out = WrLuma(dark, out.x(), out.y());
  const double low_in = WrLuma(low, in.x(), in.y()), low_out = WrLuma(low, out.x(), out.y());
  const double low_far = WrLuma(low, far.x(), far.y()), high_far = WrLuma(high, far.x(), far.y());
  MESSAGE("night, no lights: ahead " << dark_in << ", behind " << dark_out << "; low beam: 16 m ahead " << low_in
                                     << ", 6 m behind the car " << low_out << ", 60 m ahead " << low_far
                                     << "; high beam 60 m ahead " << high_far << " (luma 0..255)");
  CHECK(low_in >= 4.0 * std::max(low_out, 1.0));
  CHECK(low_out <= dark_out + 2.0);                 // the low beam does not reach behind the car
  CHECK(dark_in <= 1.5 * std::max(dark_out, 1.0));  // without lights the two points look alike
  CHECK(high_far >= 2.0 * std::max(low_far, 1.0));  // the high beam reaches further
}

TEST_CASE("world render: road brightness scales the asphalt and marking contrast fades the lines into it, live") {
  const road::RoadNetwork roads = WrStraightRoad(200.0);
  const road::Road& road = roads.Roads().front();
  SceneGraph scene;
  scene.SetRoads(roads);
  OffscreenRenderer renderer(640, 480);
  const PinholeCamera cam = CameraFromFov(640, 480, 70.0 * kWrDeg);
  // 5 m above the right lane, looking along the road 45 deg down: the lane and the right edge line.
  Pose camera;
  camera.position_m = road.LaneCenter(40.0, -1) + Vec3(0, 0, 5.0);
  camera.orientation = WrYawPitch(road.Heading(40.0), 45.0 * kWrDeg);
  const Eigen::Vector2d lane = WrProject(cam, camera, road.LaneCenter(46.0, -1));
  const Eigen::Vector2d line = WrProject(cam, camera, road.SurfacePoint(46.0, road.RightEdgeOffset()));
  auto render = [&](double brightness, double contrast) {
    world::WorldConditions c = WrSun(60.0, 180.0);
    c.surface.road_brightness = brightness;
    c.surface.marking_contrast = contrast;
    scene.SetConditions(c);  // as a live parameter's change arrives: the same scene, its colours changed
    renderer.SetScene(scene.Root(), scene.SkyColour());
    const Image img = renderer.Render(camera, cam);
    return std::pair{WrLuma(img, lane.x(), lane.y()), WrLuma(img, line.x(), line.y())};
  };
  const auto [lane1, line1] = render(1.0, 1.0);
  const auto [lane2, line2] = render(2.0, 1.0);
  const auto [lane_faded, line_faded] = render(1.0, 0.0);
  const auto [lane_half, line_half] = render(1.0, 0.5);
  const auto [lane_back, line_back] = render(1.0, 1.0);
  MESSAGE("asphalt luma " << lane1 << " at brightness 1, " << lane2 << " at 2; edge line " << line1 << " at contrast 1, "
                          << line_half << " at 0.5, " << line_faded << " at 0 (asphalt " << lane_faded << ")");
  CHECK(lane2 >= 1.6 * lane1);
  CHECK(lane2 <= 2.4 * lane1);
  CHECK(line1 >= 2.0 * lane1);
  CHECK(std::abs(line_faded - lane_faded) <= 3.0);
  CHECK(line_half > lane_half + 0.25 * (line1 - lane1));
  CHECK(line_half < line1 - 0.25 * (line1 - lane1));
  CHECK(std::abs(lane_back - lane1) <= 1.0);
  CHECK(std::abs(line_back - line1) <= 1.0);
}

TEST_CASE("world render: turning the sun from south to west moves the lit side of a building from its south wall to its west wall") {
  SceneGraph scene;
  road::EnvObject house;
  house.kind = road::ObjectKind::kBuilding;
  house.position_m = Vec3(0, 0, 0);
  house.size_m = Vec3(20, 20, 12);
  scene.SetEnvironment({house});
  OffscreenRenderer renderer(480, 360);
  const PinholeCamera cam = CameraFromFov(480, 360, 60.0 * kWrDeg);
  // South-west of the building, looking at its middle: the south and the west wall in view.
  Pose camera;
  camera.position_m = Vec3(-35, -35, 6);
  camera.orientation = WrYawPitch(45.0 * kWrDeg, 0.0);
  // Mid height of each wall (the brick between the window bands), a quarter of its length in from the corner.
  const Eigen::Vector2d south = WrProject(cam, camera, Vec3(-5, -10.01, 6)), west = WrProject(cam, camera, Vec3(-10.01, -5, 6));
  auto walls = [&](double azimuth_deg) {
    scene.SetConditions(WrSun(30.0, azimuth_deg));
    renderer.SetScene(scene.Root(), scene.SkyColour());
    const Image img = renderer.Render(camera, cam);
    return std::pair{WrLuma(img, south.x(), south.y()), WrLuma(img, west.x(), west.y())};
  };
  const auto [s180, w180] = walls(180.0);
  const auto [s270, w270] = walls(270.0);
  MESSAGE("sun in the south: south wall " << s180 << ", west wall " << w180 << "; sun in the west: south wall " << s270
                                          << ", west wall " << w270 << " (luma)");
  // The lit wall gets ambient plus sun (cos 30 deg of it), the other ambient only.
  CHECK(s180 > 1.5 * w180);
  CHECK(w270 > 1.5 * s270);
  CHECK(std::abs(s180 - w270) < 0.1 * s180);  // the same light on the same brick
}

TEST_CASE("world render: in fog of visibility V a black board at distance V keeps 5 percent contrast against the sky") {
  SceneGraph scene;
  OffscreenRenderer renderer(320, 240);
  const PinholeCamera cam = CameraFromFov(320, 240, 60.0 * kWrDeg);
  Pose camera;
  camera.position_m = Vec3(0, 0, 30);
  camera.orientation = Quat::Identity();
  for (double visibility : {150.0, 400.0}) {
    for (double share : {1.0, 0.5}) {
      const double d = share * visibility;
      osg::ref_ptr<osg::Geode> board = WrBlackBoard(Vec3(d, 0, 30), 0.1 * visibility + 20.0);
      scene.Root()->addChild(board);
      world::WorldConditions c = WrSun(40.0, 180.0);
      c.weather.fog_visibility_m = visibility;
      scene.SetConditions(c);
      renderer.SetScene(scene.Root(), scene.SkyColour());
      const Image img = renderer.Render(camera, cam);
      scene.Root()->removeChild(board);
      // The board's middle is the image's centre; the sky 8 rows above the horizon, left and right of it.
      const double box = WrLuma(img, cam.cx_px, cam.cy_px, 1);
      const double sky = 0.5 * (WrLuma(img, 6, cam.cy_px - 8, 1) + WrLuma(img, cam.width_px - 7, cam.cy_px - 8, 1));
      const double contrast = (sky - box) / sky;
      const double expected = std::exp(-std::log(1.0 / 0.05) * share);  // Koschmieder, 5 % threshold at V
      MESSAGE("V " << visibility << " m, board at " << d << " m: sky " << sky << ", board " << box << ", contrast "
                   << contrast << " (expected " << expected << ")");
      CHECK(contrast == doctest::Approx(expected).epsilon(0.01 / expected));
      if (share == 1.0) CHECK(std::abs(contrast - 0.05) <= 0.01);
    }
  }
}

TEST_CASE("world render: a seat sees day dusk night fog and rain as a participant would") {
  road::RoadDef def = road::DefaultRoadDef();
  def.sections = {road::LineSection(300), road::ArcSection(200, 0.003), road::LineSection(600)};
  def.lane_widths_left_m = {3.5};
  def.lane_widths_right_m = {3.5};
  const road::RoadNetwork roads({def});
  const road::Road& road = roads.Roads().front();
  SceneGraph scene;
  scene.SetRoads(roads);
  scene.SetEnvironment(road::GenerateEnvironment(road, road::UrbanEnvironmentDef()));
  SeatWindowDef seat = DefaultSeatWindowDef();
  seat.width_px = 640;
  seat.height_px = 360;
  SeatWindow window(seat, scene);
  const double s = 150.0;
  const protocol::EntityState own = WrCar(road, 1, s, -1, false);
  scene.SetOwnVehicle(own);
  const std::vector<protocol::EntityState> others = {WrCar(road, 2, s + 35.0, -1, false), WrCar(road, 3, s + 80.0, 1, false),
                                                     WrCar(road, 4, s + 160.0, 1, false), WrCar(road, 5, s + 120.0, -1, false)};
  Pose eye;
  eye.position_m = own.kinematics.pose.position_m + own.kinematics.pose.orientation * Vec3(1.4, 0.35, 1.2);
  eye.orientation = own.kinematics.pose.orientation;
  // The sun's azimuth (clockwise from north) of the road's heading (anticlockwise from east), and 60 deg right of it.
  const double ahead_az = 90.0 - road.Heading(s) / kWrDeg;
  struct Shot {
    const char* name;
    world::WorldConditions c;
  };
  std::vector<Shot> shots;
  shots.push_back({"day", WrSun(45.0, ahead_az + 140.0)});
  shots.push_back({"dusk", WrSun(2.0, ahead_az + 15.0)});
  {
    world::WorldConditions c = WrSun(-25.0, ahead_az);
    c.light.headlights = true;
    c.light.street_lights = true;
    shots.push_back({"night", c});
  }
  {
    world::WorldConditions c = WrSun(-25.0, ahead_az);
    c.light.headlights = true;
    c.light.high_beam = true;
    shots.push_back({"night_high_beam", c});
  }
  {
    world::WorldConditions c = WrSun(30.0, ahead_az + 140.0);
    c.weather.fog_visibility_m = 80.0;
    shots.push_back({"fog", c});
  }
  {
    world::WorldConditions c = WrSun(30.0, ahead_az + 140.0);
    c.weather.rain_mm_h = 12.0;
    c.weather.road_wetness = 0.9;
    shots.push_back({"rain", c});
  }
  const char* folder = std::getenv("PLATOON_WORLD_PICTURES");
  std::map<std::string, Image> frames;
  for (const Shot& shot : shots) {
    scene.SetConditions(shot.c);
    scene.Update(others, 1'300'000'000);
    CockpitState cockpit;  // as the seat hands it over: the interior lit by the light outside
    cockpit.interior_light = InteriorLight(scene.Look());
    window.SetCockpit(cockpit);
    Image img;
    REQUIRE(window.PollEvents());
    window.Render(eye, {}, {}, &img);
    REQUIRE(img.width == 640);
    frames[shot.name] = img;
    if (folder && *folder) {
      const std::string path = std::string(folder) + "/world_" + shot.name + ".png";
      CHECK(WritePng(img, path).empty());
    }
    MESSAGE(std::string(shot.name) << ": windscreen mean luma " << WrMeanLuma(img) << ", spread " << WrLumaSpread(img));
  }
  // Night (street lights and headlights on) and dusk darker than day; fog brighter and flatter; rain darker.
  CHECK(WrMeanLuma(frames["night"]) < 0.7 * WrMeanLuma(frames["day"]));
  CHECK(WrMeanLuma(frames["dusk"]) < 0.7 * WrMeanLuma(frames["day"]));
  CHECK(WrMeanLuma(frames["fog"]) > 1.3 * WrMeanLuma(frames["day"]));
  CHECK(WrLumaSpread(frames["fog"]) < 0.85 * WrLumaSpread(frames["day"]));
  CHECK(WrMeanLuma(frames["rain"]) < 0.8 * WrMeanLuma(frames["day"]));
  // The bonnet and dashboard (rows 75-82 % down, beside the backlit instruments in the middle) are dark
  // at night, not lit as by day.
  auto bottom = [](const Image& img) {
    double sum = 0;
    int n = 0;
    for (uint32_t y = img.height * 75 / 100; y < img.height * 82 / 100; ++y)
      for (uint32_t x = 0; x < img.width; x += 2) {
        if (x > img.width * 3 / 10 && x < img.width * 7 / 10) continue;
        ++n;
        const auto px = img.At(x, y);
        sum += 0.2126 * px[0] + 0.7152 * px[1] + 0.0722 * px[2];
      }
    return sum / n;
  };
  MESSAGE("bonnet and dashboard mean luma: day " << bottom(frames["day"]) << ", dusk " << bottom(frames["dusk"])
                                                    << ", night " << bottom(frames["night"]));
  CHECK(bottom(frames["night"]) < 0.25 * bottom(frames["day"]));
  CHECK(bottom(frames["dusk"]) < bottom(frames["day"]));
}
