// Offscreen rendering (viewer/src/offscreen_renderer.cpp, scene.cpp, pinhole_camera.cpp) checked against
// the camera sensor's pinhole model (sensors/src/camera.cpp). Needs an X display: ctest runs this
// executable under xvfb-run (tests/CMakeLists.txt, render_tests).
#include "platoon/node/camera_pinhole.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/sensor_data.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>
#include <numbers>
#include <vector>

using namespace platoon;
using namespace platoon::viewer;

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;
constexpr Rgb kMagenta{1.0f, 0.0f, 1.0f};
constexpr Rgb kCyan{0.0f, 1.0f, 1.0f};

// Lit magenta and cyan stay saturated: one channel near zero, the other two equal-ish and bright.
bool IsMagenta(const std::array<uint8_t, 3>& p) { return p[0] > 60 && p[2] > 60 && p[1] < 30 && std::abs(p[0] - p[2]) < 30; }
bool IsCyan(const std::array<uint8_t, 3>& p) { return p[1] > 60 && p[2] > 60 && p[0] < 30 && std::abs(p[1] - p[2]) < 30; }

// Continuous pixel extent [u0, u1] x [v0, v1] of the pixels that pass `pred`; count 0 if none.
struct PixelBox {
  double u0 = std::numeric_limits<double>::infinity(), v0 = u0, u1 = -u0, v1 = -u0;
  size_t count = 0;
};
template <class Pred>
PixelBox PixelsOf(const Image& img, Pred pred) {
  PixelBox b;
  for (uint32_t j = 0; j < img.height; ++j) {
    for (uint32_t i = 0; i < img.width; ++i) {
      if (!pred(img.At(i, j))) continue;
      b.u0 = std::min<double>(b.u0, i);
      b.u1 = std::max<double>(b.u1, i + 1.0);
      b.v0 = std::min<double>(b.v0, j);
      b.v1 = std::max<double>(b.v1, j + 1.0);
      ++b.count;
    }
  }
  return b;
}

Quat Ypr(double yaw, double pitch, double roll) {
  return Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch, Vec3::UnitY()) *
              Eigen::AngleAxisd(roll, Vec3::UnitX()));
}

protocol::EntityState Car(uint64_t id, const Vec3& position, double yaw) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.box_size_m = Vec3(4.5, 1.8, 1.5);
  e.kinematics.pose.position_m = position;
  e.kinematics.pose.orientation = Ypr(yaw, 0, 0);
  return e;
}


// Pinhole projection of a world point the way the camera sensor does it (sensors::BodyToOptical,
// sensors::ProjectOptical), with intrinsics taken from `cam`.
Eigen::Vector2d SensorProject(const PinholeCamera& cam, const Pose& camera_world, const Vec3& p_world) {
  const Vec3 p_opt = sensors::BodyToOptical(camera_world.orientation.conjugate() * (p_world - camera_world.position_m));
  REQUIRE(p_opt.z() > 0.0);
  return sensors::ProjectOptical(sensors::CameraIntrinsics{cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px}, p_opt);
}

}  // namespace

TEST_CASE("render: a magenta body's pixels span the pinhole projection of its parts' corners within 1 px") {
  OffscreenRenderer renderer(640, 480);
  MESSAGE("GL: " << renderer.GlInfo());
  // Off-centre principal point and unequal focal lengths, so that swapped or mis-signed terms show.
  PinholeCamera cam;
  cam.fx_px = 560.0;
  cam.fy_px = 530.0;
  cam.cx_px = 337.3;
  cam.cy_px = 221.6;
  cam.width_px = 640;
  cam.height_px = 480;

  struct Case {
    Vec3 car_position;
    double car_yaw;
    Vec3 camera_position;
    double yaw, pitch, roll;  // camera body frame, rad; pitch > 0 turns the nose down
  };
  const Case cases[] = {
      {Vec3(15.0, 1.0, 0.0), 0.4, Vec3(0.0, 0.0, 1.6), 0.0, 5 * kDeg, 0.0},
      {Vec3(12.0, -3.0, 0.0), -2.0, Vec3(0.0, 0.0, 4.0), -0.2, 15 * kDeg, 4 * kDeg},
      {Vec3(27.0, 5.0, 0.0), 1.57, Vec3(2.0, 1.0, 1.2), 0.15, -3 * kDeg, -2 * kDeg},
  };
  double worst = 0.0;
  for (const Case& c : cases) {
    SceneGraph scene;
    const protocol::EntityState car = Car(7, c.car_position, c.car_yaw);
    scene.SetEntityColour(car.id, kMagenta);
    scene.Update({car});
    renderer.SetScene(scene.Root(), scene.SkyColour());
    Pose camera;
    camera.position_m = c.camera_position;
    camera.orientation = Ypr(c.yaw, c.pitch, c.roll);
    const Image img = renderer.Render(camera, cam);

    // Expected extent: the projected corners of the painted body parts (vehicle frame -> world -> image);
    // the parts are convex, so their silhouettes' extremes are projected corners.
    const VehicleModel model = BuildVehicleModel(car.kind, car.box_size_m, scene.Def().layout);
    double u0 = 1e9, u1 = -1e9, v0 = 1e9, v1 = -1e9;
    for (const Solid& part : model.parts) {
      if (part.role != PartRole::kBody) continue;
      for (const Vec3& local : part.corner_m) {
        const Eigen::Vector2d uv = SensorProject(cam, camera, car.kinematics.pose.position_m + car.kinematics.pose.orientation * local);
        u0 = std::min(u0, uv.x()), u1 = std::max(u1, uv.x());
        v0 = std::min(v0, uv.y()), v1 = std::max(v1, uv.y());
      }
    }
    // The body must lie inside the image, or the comparison means nothing.
    REQUIRE(u0 > 2);
    REQUIRE(v0 > 2);
    REQUIRE(u1 < cam.width_px - 2);
    REQUIRE(v1 < cam.height_px - 2);
    const PixelBox px = PixelsOf(img, IsMagenta);
    REQUIRE(px.count > 200);
    // Pixels are covered when their centre is inside the silhouette, so the pixel extent is within half a
    // pixel of the continuous one; the 1 px bound leaves room for rasteriser rounding.
    const double err = std::max({std::abs(px.u0 - u0), std::abs(px.u1 - u1), std::abs(px.v0 - v0), std::abs(px.v1 - v1)});
    MESSAGE("expected [" << u0 << ", " << u1 << "] x [" << v0 << ", " << v1 << "], rendered [" << px.u0 << ", " << px.u1
                         << "] x [" << px.v0 << ", " << px.v1 << "], max edge error " << err << " px");
    CHECK(err <= 1.0);
    worst = std::max(worst, err);
  }
  MESSAGE("worst bounding-box edge error over the poses: " << worst << " px");
}

TEST_CASE("render: the sky/ground boundary is at the row the camera geometry predicts (v = cy - fy tan pitch)") {
  OffscreenRenderer renderer(480, 360);
  PinholeCamera cam;
  cam.fx_px = 400.0;
  cam.fy_px = 420.0;
  cam.cx_px = 241.5;
  cam.cy_px = 170.25;
  cam.width_px = 480;
  cam.height_px = 360;
  SceneGraph scene;  // ground and sky only
  renderer.SetScene(scene.Root(), scene.SkyColour());
  const GroundExtent ground = scene.Ground();
  const double h = 1.5;
  const std::array<uint8_t, 3> sky = {static_cast<uint8_t>(std::lround(scene.SkyColour().r * 255)),
                                      static_cast<uint8_t>(std::lround(scene.SkyColour().g * 255)),
                                      static_cast<uint8_t>(std::lround(scene.SkyColour().b * 255))};
  for (double pitch_deg : {0.0, 3.0, -2.0, 7.5}) {
    const double pitch = pitch_deg * kDeg;
    Pose camera;
    camera.position_m = Vec3(ground.centre_x_m, ground.centre_y_m, h);
    camera.orientation = Ypr(0.0, pitch, 0.0);
    const Image img = renderer.Render(camera, cam);
    // The farthest ground straight ahead is the plane's edge; it lies fy h / D below the ideal horizon.
    const Vec3 edge(ground.centre_x_m + ground.half_size_m, ground.centre_y_m, ground.z_m);
    const double v_edge = SensorProject(cam, camera, edge).y();
    const double v_horizon = cam.cy_px - cam.fy_px * std::tan(pitch);
    CHECK(std::abs(v_edge - v_horizon) < 0.5);
    double worst = 0.0, sum = 0.0;
    for (uint32_t i = 0; i < img.width; ++i) {
      // First row from the top whose pixel is not the clear colour.
      uint32_t j = 0;
      while (j < img.height) {
        const auto p = img.At(i, j);
        if (std::abs(p[0] - sky[0]) > 2 || std::abs(p[1] - sky[1]) > 2 || std::abs(p[2] - sky[2]) > 2) break;
        ++j;
      }
      REQUIRE(j < img.height);
      // Row j's centre j + 0.5 is the first one below the boundary: j is within half a pixel of v_edge.
      const double err = std::abs(static_cast<double>(j) - v_edge);
      worst = std::max(worst, err);
      sum += err;
    }
    MESSAGE("pitch " << pitch_deg << " deg: predicted v " << v_edge << " (ideal horizon " << v_horizon
                     << "), worst column error " << worst << " px, mean " << sum / img.width << " px");
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("render: the camera sensor's ROI of a partly occluded vehicle encloses its rendered pixels") {
  // The seed-000 camera (12 mm lens, 90 deg) at 960 x 540 px, behind the windscreen of an ego vehicle at
  // the origin.
  sensors::CameraDef def = sensors::DefaultCameraDef();
  def.image_width_px = 960;
  def.image_height_px = 540;
  const PinholeCamera cam = node::SensorPinhole(def);
  Pose ego;
  const Pose camera = sensors::SensorPoseInWorld(ego, def.mounting);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);

  // Target (magenta) ahead; occluder (cyan) closer and to the left, hiding about half of it.
  const protocol::EntityState target = Car(11, Vec3(20.0, -0.5, 0.0), 0.15);
  const protocol::EntityState occluder = Car(12, Vec3(10.0, 0.8, 0.0), -0.1);
  SceneGraph scene;
  scene.SetEntityColour(target.id, kMagenta);
  scene.SetEntityColour(occluder.id, kCyan);
  renderer.SetScene(scene.Root(), scene.SkyColour());

  // Ground truth: each entity's whole box (vehicle_model.hpp), occlusion by rays against the same boxes.
  std::vector<sensors::CameraTarget> targets;
  sensors::Scene rays;
  for (const auto* e : {&target, &occluder}) {
    const LocalBox box = EntityBox(e->box_size_m, scene.Def().layout);
    sensors::CameraTarget t;
    t.entity_id = static_cast<uint32_t>(e->id);
    t.pose = BoxCentreInWorld(e->kinematics.pose, box);
    t.size_m = box.Size();
    targets.push_back(t);
    rays.AddDynamicBox(0.5 * t.size_m, sensors::SurfaceTag{0, t.entity_id, 1}, t.pose);
  }
  rays.Commit();
  const std::vector<sensors::RoiBox> rois = sensors::GroundTruth(targets, &rays, camera, def);
  REQUIRE(rois.size() == 2);
  const sensors::RoiBox& roi = rois[0];
  REQUIRE(roi.entity_id == target.id);
  MESSAGE("target ROI [" << roi.u_min_px << ", " << roi.u_max_px << "] x [" << roi.v_min_px << ", " << roi.v_max_px
                         << "], occlusion ratio " << roi.occlusion_ratio);

  // Alone, then behind the occluder.
  scene.Update({target});
  const Image alone = renderer.Render(camera, cam);
  scene.Update({target, occluder});
  const Image both = renderer.Render(camera, cam);
  const PixelBox px_alone = PixelsOf(alone, IsMagenta);
  const PixelBox px_both = PixelsOf(both, IsMagenta);
  const PixelBox px_occluder = PixelsOf(both, IsCyan);
  REQUIRE(px_alone.count > 300);
  REQUIRE(px_occluder.count > 300);
  // Partly occluded: some but not all of the target is hidden, in the image and in the ground truth.
  const double hidden = 1.0 - static_cast<double>(px_both.count) / static_cast<double>(px_alone.count);
  MESSAGE("rendered target pixels " << px_alone.count << " alone, " << px_both.count << " behind the occluder (hidden "
                                    << hidden << ")");
  CHECK(hidden > 0.1);
  CHECK(hidden < 0.9);
  CHECK(roi.occlusion_ratio > 0.1);
  CHECK(roi.occlusion_ratio < 0.9);
  // The ray-cast ratio weighs the whole box's faces; the pixels of the whole model (every pixel the
  // target changes against an empty view: paint, windows, wheels, lamps) come close, not equal. A target
  // pixel is still visible behind the occluder when it keeps the colour it had alone.
  scene.Update({});
  const Image empty = renderer.Render(camera, cam);
  size_t target_px = 0, visible_px = 0;
  for (uint32_t j = 0; j < alone.height; ++j)
    for (uint32_t i = 0; i < alone.width; ++i) {
      if (alone.At(i, j) == empty.At(i, j)) continue;
      ++target_px;
      visible_px += both.At(i, j) == alone.At(i, j);
    }
  REQUIRE(target_px > 300);
  const double hidden_model = 1.0 - static_cast<double>(visible_px) / static_cast<double>(target_px);
  MESSAGE("whole model: " << target_px << " pixels alone, " << visible_px << " still visible (hidden " << hidden_model << ")");
  CHECK(std::abs(hidden_model - roi.occlusion_ratio) < 0.15);

  // Every rendered pixel of each entity lies inside its ROI (pixel centres: a covered pixel's centre is
  // inside the silhouette, which the box's projected hull encloses).
  auto inside = [](const PixelBox& p, const sensors::RoiBox& r) {
    const double tol = 0.05;  // rasteriser sub-pixel rounding
    return p.u0 + 0.5 >= r.u_min_px - tol && p.u1 - 0.5 <= r.u_max_px + tol && p.v0 + 0.5 >= r.v_min_px - tol &&
           p.v1 - 0.5 <= r.v_max_px + tol;
  };
  CHECK(inside(px_alone, roi));
  CHECK(inside(px_both, roi));
  CHECK(inside(px_occluder, rois[1]));
  // And the ROI is not loose: the unoccluded body fills most of it (the box adds wheels, lamps, clearance).
  const double roi_area = (roi.u_max_px - roi.u_min_px) * (roi.v_max_px - roi.v_min_px);
  const double px_area = (px_alone.u1 - px_alone.u0) * (px_alone.v1 - px_alone.v0);
  MESSAGE("target ROI area " << roi_area << " px^2, rendered body extent " << px_area << " px^2");
  CHECK(px_area > 0.75 * roi_area);
  CHECK(std::abs(px_alone.v0 - roi.v_min_px) <= 1.0);  // both reach the roof
}

TEST_CASE("render: a fused cloud's points appear at the pixels the pinhole model predicts") {
  OffscreenRenderer renderer(640, 480);
  PinholeCamera cam;
  cam.fx_px = 500.0;
  cam.fy_px = 500.0;
  cam.cx_px = 320.0;
  cam.cy_px = 240.0;
  cam.width_px = 640;
  cam.height_px = 480;

  // Three points in the ego vehicle frame (all from source 0: red in the palette), records as in docs/PROTOCOL.md.
  const Vec3 local[] = {Vec3(18.0, 3.0, 2.5), Vec3(22.0, -4.0, 1.0), Vec3(15.0, 0.5, 4.0)};
  protocol::FusedCloud cloud;
  cloud.entity_id = 9;
  cloud.point_stride = 36;
  for (const Vec3& p : local) {
    char rec[36] = {};
    const float xyz[4] = {static_cast<float>(p.x()), static_cast<float>(p.y()), static_cast<float>(p.z()), 1e-8f};
    std::memcpy(rec, xyz, sizeof xyz);
    cloud.points.append(rec, sizeof rec);
    ++cloud.point_count;
  }
  Pose ego;
  ego.position_m = Vec3(5.0, -2.0, 0.0);
  ego.orientation = Ypr(0.3, 0, 0);

  SceneGraph scene;
  scene.SetPointCloud(FusedPointsInWorld(cloud, ego), PointColouring::kSource, 5.0f);
  CHECK(scene.PointCount() == 3);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  Pose camera;
  camera.position_m = Vec3(0.0, 0.0, 1.6);
  camera.orientation = Ypr(0.25, -2 * kDeg, 0.0);
  const Image img = renderer.Render(camera, cam);

  auto is_red = [](const std::array<uint8_t, 3>& p) { return p[0] > 200 && p[1] < 130 && p[2] < 130; };
  size_t total = 0;
  for (const Vec3& p : local) {
    const Eigen::Vector2d uv = SensorProject(cam, camera, ego.position_m + ego.orientation * p);
    REQUIRE(uv.x() > 10);
    REQUIRE(uv.x() < cam.width_px - 10);
    REQUIRE(uv.y() > 10);
    REQUIRE(uv.y() < cam.height_px - 10);
    // Centroid of the red pixels within 8 px of the prediction.
    double su = 0, sv = 0;
    size_t n = 0;
    for (int j = static_cast<int>(uv.y()) - 8; j <= static_cast<int>(uv.y()) + 8; ++j)
      for (int i = static_cast<int>(uv.x()) - 8; i <= static_cast<int>(uv.x()) + 8; ++i)
        if (is_red(img.At(static_cast<uint32_t>(i), static_cast<uint32_t>(j)))) {
          su += i + 0.5;
          sv += j + 0.5;
          ++n;
        }
    REQUIRE(n >= 9);  // a 5 px point covers about 25 pixels
    const double du = su / n - uv.x(), dv = sv / n - uv.y();
    MESSAGE("point at (" << uv.x() << ", " << uv.y() << ") px: " << n << " red pixels, centroid off by (" << du << ", "
                         << dv << ") px");
    CHECK(std::hypot(du, dv) <= 1.0);
    total += n;
  }
  // Nothing else is red.
  CHECK(PixelsOf(img, is_red).count == total);

  // Turning the cloud off (an empty cloud) leaves no red pixel.
  scene.SetPointCloud({}, PointColouring::kSource, 5.0f);
  CHECK(scene.PointCount() == 0);
  CHECK(PixelsOf(renderer.Render(camera, cam), is_red).count == 0);
}

TEST_CASE("render: a car's left indicator blinks at 1.5 Hz by sim time on its left lamps only, the right ones stay dark") {
  OffscreenRenderer renderer(640, 480);
  PinholeCamera cam;
  cam.fx_px = cam.fy_px = 600.0;
  cam.cx_px = 320.0;
  cam.cy_px = 240.0;
  cam.width_px = 640;
  cam.height_px = 480;
  // A car 12 m ahead, seen from behind by a camera 1.3 m up: its left (+y) side is the image's left.
  SceneGraph scene;
  protocol::EntityState car = Car(9, Vec3(12.0, 0.0, 0.0), 0.0);
  car.lights.indicator_left = true;
  // Grey paint: the boot's lid faces the sun, and a lit orange body would pass for a lit lamp.
  scene.SetEntityColour(car.id, Rgb{0.5f, 0.5f, 0.5f});
  renderer.SetScene(scene.Root(), scene.SkyColour());
  Pose camera;
  camera.position_m = Vec3(0.0, 0.0, 1.3);
  camera.orientation = Ypr(0.0, 3 * kDeg, 0.0);
  const double u_centre = SensorProject(cam, camera, car.kinematics.pose.position_m + Vec3(0, 0, 0.5)).x();
  // Lit amber: bright red, half as much green, little blue (the dark lamp is a dull brown).
  auto lit_amber = [](const std::array<uint8_t, 3>& p) { return p[0] > 200 && p[1] > 90 && p[1] < 200 && p[2] < 90; };
  // 4 s of frames at 60 Hz from sim time 1234.5 s (any time of a session).
  const int64_t t0 = 1'234'500'000'000;
  std::vector<double> rising;
  bool was_lit = false;
  size_t left_lit_frames = 0, right_lit_pixels = 0, frames = 0;
  for (int f = 0; f < 240; ++f) {
    const int64_t t = t0 + int64_t{f} * 1'000'000'000 / 60;
    scene.Update({car}, t);
    const Image img = renderer.Render(camera, cam);
    ++frames;
    const PixelBox left = PixelsOf(img, [&](const auto& p) { return lit_amber(p); });
    size_t on_right = 0;
    for (uint32_t j = 0; j < img.height; ++j)
      for (uint32_t i = static_cast<uint32_t>(u_centre) + 1; i < img.width; ++i) on_right += lit_amber(img.At(i, j));
    right_lit_pixels += on_right;
    const bool lit = left.count >= 20;
    if (lit) {
      ++left_lit_frames;
      CHECK(left.u1 <= u_centre);  // the lit lamp is on the car's left
      CHECK(SceneGraph::IndicatorLit(t));
    } else {
      CHECK_FALSE(SceneGraph::IndicatorLit(t));
    }
    if (lit && !was_lit && f > 0) rising.push_back(static_cast<double>(t - t0) * 1e-9);
    if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR"); dir && lit && !was_lit)
      CHECK(WritePng(img, std::string(dir) + "/indicator_left.png").empty());
    was_lit = lit;
  }
  REQUIRE(rising.size() >= 3);
  const double hz = static_cast<double>(rising.size() - 1) / (rising.back() - rising.front());
  MESSAGE(frames << " frames: left indicator lit in " << left_lit_frames << ", " << rising.size() << " rising edges, "
                 << hz << " Hz; lit amber pixels right of the car's centre: " << right_lit_pixels);
  CHECK(hz >= 1.2);
  CHECK(hz <= 1.8);
  CHECK(right_lit_pixels == 0);
  // On for half of each period.
  CHECK(std::abs(static_cast<double>(left_lit_frames) / frames - 0.5) < 0.05);
  // Off when the state says so, whatever the phase.
  car.lights.indicator_left = false;
  for (int f = 0; f < 60; f += 7) {
    scene.Update({car}, t0 + int64_t{f} * 1'000'000'000 / 60);
    CHECK(PixelsOf(renderer.Render(camera, cam), [&](const auto& p) { return lit_amber(p); }).count == 0);
  }
}
