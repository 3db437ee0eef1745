// The entity models of every class drawn offscreen (viewer/src/scene.cpp, vehicle_model.cpp): each class
// inside the camera sensor's ROI of its box and shaped like its class, and the lamps (reverse, tail,
// brake) in their places and colours. Needs an X display: run under xvfb-run (tests/CMakeLists.txt).
#include "platoon/node/camera_pinhole.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace platoon;
using namespace platoon::viewer;

namespace vehicle_render_test_detail {

using Pixel = std::array<uint8_t, 3>;

protocol::EntityState Entity(uint64_t id, protocol::EntityKind kind, const Vec3& size, const Vec3& position, double yaw) {
  protocol::EntityState e;
  e.id = id;
  e.kind = kind;
  e.box_size_m = size;
  e.kinematics.pose.position_m = position;
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
  return e;
}

// The camera sensor's definition (seed-000 lens) at w x h pixels, and the same camera for the renderer.
sensors::CameraDef SensorDef(uint32_t w, uint32_t h) {
  sensors::CameraDef def = sensors::DefaultCameraDef();
  def.image_width_px = w;
  def.image_height_px = h;
  return def;
}

// The ROI the camera sensor reports for an unoccluded entity (its whole box, vehicle_model.hpp).
sensors::RoiBox RoiOf(const protocol::EntityState& e, const Pose& camera, const sensors::CameraDef& def) {
  const LocalBox box = EntityBox(e.box_size_m, DefaultVehicleLayout());
  sensors::CameraTarget t;
  t.entity_id = static_cast<uint32_t>(e.id);
  t.pose = BoxCentreInWorld(e.kinematics.pose, box);
  t.size_m = box.Size();
  const std::vector<sensors::RoiBox> rois = sensors::GroundTruth({t}, nullptr, camera, def);
  REQUIRE(rois.size() == 1);
  return rois[0];
}

// Pixels where `with` differs from `without` (the same view with no entity): the entity's pixels.
struct Mask {
  uint32_t w = 0, h = 0;
  std::vector<uint8_t> on;
  bool At(uint32_t i, uint32_t j) const { return on[j * w + i] != 0; }
  size_t Count() const { return static_cast<size_t>(std::count(on.begin(), on.end(), 1)); }
};
Mask Difference(const Image& with, const Image& without) {
  Mask m{with.width, with.height, std::vector<uint8_t>(static_cast<size_t>(with.width) * with.height, 0)};
  for (uint32_t j = 0; j < with.height; ++j)
    for (uint32_t i = 0; i < with.width; ++i) {
      const Pixel a = with.At(i, j), b = without.At(i, j);
      int d = 0;
      for (int c = 0; c < 3; ++c) d = std::max(d, std::abs(int{a[c]} - int{b[c]}));
      m.on[j * m.w + i] = d > 6 ? 1 : 0;
    }
  return m;
}

// Topmost row of the mask in columns [i0, i1); height if none.
double TopRow(const Mask& m, uint32_t i0, uint32_t i1) {
  for (uint32_t j = 0; j < m.h; ++j)
    for (uint32_t i = i0; i < i1 && i < m.w; ++i)
      if (m.At(i, j)) return j;
  return m.h;
}
// Number of mask pixels in row j within columns [i0, i1).
size_t RowCount(const Mask& m, uint32_t j, uint32_t i0, uint32_t i1) {
  size_t n = 0;
  for (uint32_t i = i0; i < i1 && i < m.w; ++i) n += m.At(i, j);
  return n;
}

struct Extent {
  double u0 = std::numeric_limits<double>::infinity(), v0 = u0, u1 = -u0, v1 = -u0;
};
Extent ExtentOf(const Mask& m) {
  Extent e;
  for (uint32_t j = 0; j < m.h; ++j)
    for (uint32_t i = 0; i < m.w; ++i)
      if (m.At(i, j)) {
        e.u0 = std::min<double>(e.u0, i), e.u1 = std::max<double>(e.u1, i + 1.0);
        e.v0 = std::min<double>(e.v0, j), e.v1 = std::max<double>(e.v1, j + 1.0);
      }
  return e;
}

}  // namespace vehicle_render_test_detail

using namespace vehicle_render_test_detail;

TEST_CASE("vehicle render: every class draws inside its ROI and shows its class's shape from the side") {
  using K = protocol::EntityKind;
  const sensors::CameraDef def = SensorDef(960, 540);
  const PinholeCamera cam = node::SensorPinhole(def);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);
  struct Case {
    const char* name;
    K kind;
    Vec3 size;
    double distance_m;
  };
  const Case cases[] = {
      {"car", K::kCar, Vec3(4.5, 1.8, 1.5), 8.0},          {"van", K::kCar, Vec3(5.3, 2.0, 2.5), 9.0},
      {"truck", K::kTruck, Vec3(12.0, 2.5, 3.6), 16.0},    {"bus", K::kCar, Vec3(12.0, 2.55, 3.2), 16.0},
      {"motorcycle", K::kMotorcycle, Vec3(2.2, 0.8, 1.4), 5.0}, {"bicycle", K::kBicycle, Vec3(1.8, 0.6, 1.7), 5.0},
      {"pedestrian", K::kPedestrian, Vec3(0.5, 0.6, 1.75), 4.0},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.name));
    // The entity broadside, its front to the image's right: the camera at (0, 0, 1.4) looks along +x,
    // the entity crosses in front of it heading -y (its left side faces the camera).
    SceneGraph scene;
    renderer.SetScene(scene.Root(), scene.SkyColour());
    Pose camera;
    camera.position_m = Vec3(0.0, 0.0, 1.4);
    const LocalBox box = EntityBox(c.size, DefaultVehicleLayout());
    // Centre of the box on the camera's axis.
    const double yaw = -M_PI / 2;
    const Vec3 centre_offset = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ())) * Vec3(box.Centre().x(), 0, 0);
    const protocol::EntityState e = Entity(5, c.kind, c.size, Vec3(c.distance_m, 0, 0) - centre_offset, yaw);
    scene.Update({});
    const Image empty = renderer.Render(camera, cam);
    scene.Update({e});
    const Image img = renderer.Render(camera, cam);
    const Mask m = Difference(img, empty);
    if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR"))
      CHECK(WritePng(img, std::string(dir) + "/side_" + c.name + ".png").empty());
    const sensors::RoiBox roi = RoiOf(e, camera, def);
    const Extent px = ExtentOf(m);
    MESSAGE(std::string(c.name) << ": " << m.Count() << " px, extent [" << px.u0 << ", " << px.u1 << "] x [" << px.v0 << ", " << px.v1
                   << "], ROI [" << roi.u_min_px << ", " << roi.u_max_px << "] x [" << roi.v_min_px << ", " << roi.v_max_px << "]");
    REQUIRE(m.Count() > 500);
    // Inside the ROI (pixel centres, rasteriser rounding), and filling most of its height and width.
    const double tol = 0.05;
    CHECK(px.u0 + 0.5 >= roi.u_min_px - tol);
    CHECK(px.u1 - 0.5 <= roi.u_max_px + tol);
    CHECK(px.v0 + 0.5 >= roi.v_min_px - tol);
    CHECK(px.v1 - 0.5 <= roi.v_max_px + tol);
    const double roi_w = roi.u_max_px - roi.u_min_px, roi_h = roi.v_max_px - roi.v_min_px;
    CHECK(px.v1 - px.v0 > 0.9 * roi_h);
    const bool two_wheeler = c.kind == K::kMotorcycle || c.kind == K::kBicycle;
    CHECK(px.u1 - px.u0 > (c.kind == K::kPedestrian ? 0.5 : two_wheeler ? 0.8 : 0.85) * roi_w);

    // Class shape, from the heights of the silhouette along the length (front at the right). The box's
    // near side plane is where a vehicle's silhouette lies (the centre plane for two-wheelers and people),
    // so heights scale with f / depth there.
    const double depth = c.distance_m - (two_wheeler || c.kind == K::kPedestrian ? 0.0 : 0.5 * c.size.y());
    const double px_per_m = cam.fy_px / depth;
    const double v_ground = cam.cy_px + 1.4 * px_per_m;  // the near side's foot
    auto height_m = [&](double from, double to) {  // silhouette height over a fraction of the length
      const auto i0 = static_cast<uint32_t>(px.u0 + from * (px.u1 - px.u0)), i1 = static_cast<uint32_t>(px.u0 + to * (px.u1 - px.u0));
      return (v_ground - TopRow(m, i0, i1)) / px_per_m;
    };
    const double H = c.size.z();
    const std::string name = c.name;
    if (name == "car") {
      // The cabin stands above the bonnet and the boot.
      const double bonnet = height_m(0.9, 0.97), cabin = height_m(0.45, 0.55), boot = height_m(0.03, 0.1);
      MESSAGE("car heights: boot " << boot << " m, cabin " << cabin << " m, bonnet " << bonnet << " m");
      CHECK(cabin > 0.95 * H);
      CHECK(bonnet < 0.7 * H);
      CHECK(boot < 0.7 * H);
    } else if (name == "van") {
      // Full height from the back to behind a short bonnet.
      const double back = height_m(0.03, 0.1), middle = height_m(0.45, 0.55), nose = height_m(0.93, 0.99);
      MESSAGE("van heights: back " << back << " m, middle " << middle << " m, nose " << nose << " m");
      CHECK(back > 0.95 * H);
      CHECK(middle > 0.95 * H);
      CHECK(nose < 0.6 * H);
    } else if (name == "truck") {
      // A cargo box as high as the box, the cab in front lower.
      const double cargo = height_m(0.1, 0.6), cab = height_m(0.85, 0.95);
      MESSAGE("truck heights: cargo " << cargo << " m, cab " << cab << " m");
      CHECK(cargo > 0.95 * H);
      CHECK(cab < 0.9 * H);
      CHECK(cab > 0.6 * H);
    } else if (name == "bus") {
      // Full height over the whole length, with a band of dark windows along it.
      for (double f : {0.05, 0.3, 0.6, 0.9}) CHECK(height_m(f, f + 0.05) > 0.95 * H);
      const auto j = static_cast<uint32_t>(v_ground - 0.7 * H * px_per_m);
      size_t dark = 0;
      for (auto i = static_cast<uint32_t>(px.u0); i < static_cast<uint32_t>(px.u1); ++i) {
        const Pixel p = img.At(i, j);
        dark += p[0] < 60 && p[1] < 60 && p[2] < 80;
      }
      MESSAGE("bus: " << dark << " dark window pixels of " << px.u1 - px.u0 << " along the window band");
      CHECK(dark > 0.6 * (px.u1 - px.u0));
    } else if (name == "motorcycle" || name == "bicycle") {
      // Two wheels with daylight between them at the ground, a rider up to the box's top.
      const auto j = static_cast<uint32_t>(v_ground - 0.05 * px_per_m);
      const auto u_mid = static_cast<uint32_t>(0.5 * (px.u0 + px.u1));
      const size_t rear = RowCount(m, j, static_cast<uint32_t>(px.u0), static_cast<uint32_t>(px.u0 + 0.35 * (px.u1 - px.u0)));
      const size_t front = RowCount(m, j, static_cast<uint32_t>(px.u0 + 0.6 * (px.u1 - px.u0)), static_cast<uint32_t>(px.u1));
      const size_t between = RowCount(m, j, u_mid - 3, u_mid + 3);
      MESSAGE(std::string(c.name) << " at the ground: rear wheel " << rear << " px, front " << front << ", between " << between);
      CHECK(rear > 0);
      CHECK(front > 0);
      CHECK(between == 0);
      CHECK((v_ground - px.v0) / px_per_m > 0.95 * H);
    } else if (name == "pedestrian") {
      // Seen from the side a standing figure: as high as the box; its head narrower than its body.
      CHECK((v_ground - px.v0) / px_per_m > 0.95 * H);
      const auto head_row = static_cast<uint32_t>(v_ground - 0.93 * H * px_per_m);
      const auto chest_row = static_cast<uint32_t>(v_ground - 0.7 * H * px_per_m);
      const size_t head = RowCount(m, head_row, 0, m.w), chest = RowCount(m, chest_row, 0, m.w);
      MESSAGE("pedestrian widths: head " << head << " px, chest " << chest << " px");
      CHECK(head > 0);
      CHECK(head < chest);
    }
  }
}

TEST_CASE("vehicle render: a pedestrian seen from the front has two legs and a head narrower than the shoulders") {
  const sensors::CameraDef def = SensorDef(640, 480);
  const PinholeCamera cam = node::SensorPinhole(def);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);
  SceneGraph scene;
  renderer.SetScene(scene.Root(), scene.SkyColour());
  Pose camera;
  camera.position_m = Vec3(0.0, 0.0, 1.0);
  const Vec3 size(0.5, 0.6, 1.75);
  // Facing the camera (yaw pi), the box centre 4 m ahead.
  const LocalBox box = EntityBox(size, DefaultVehicleLayout());
  const protocol::EntityState e = Entity(3, protocol::EntityKind::kPedestrian, size, Vec3(4.0 + box.Centre().x(), 0, 0), M_PI);
  scene.Update({});
  const Image empty = renderer.Render(camera, cam);
  scene.Update({e});
  const Mask m = Difference(renderer.Render(camera, cam), empty);
  REQUIRE(m.Count() > 300);
  const double depth = 4.0 - 0.5 * size.x();
  const double px_per_m = cam.fy_px / depth, v_ground = cam.cy_px + 1.0 * px_per_m;
  const auto row = [&](double z) { return static_cast<uint32_t>(v_ground - z * px_per_m); };
  const auto u_c = static_cast<uint32_t>(cam.cx_px);
  // Between the legs (knee height) the background shows at the centre; the legs either side of it.
  const size_t gap = RowCount(m, row(0.25), u_c - 1, u_c + 2);
  const size_t legs = RowCount(m, row(0.25), 0, m.w);
  const size_t shoulders = RowCount(m, row(0.78 * size.z()), 0, m.w);
  const size_t head = RowCount(m, row(0.92 * size.z()), 0, m.w);
  MESSAGE("pedestrian from the front: legs " << legs << " px with " << gap << " at the centre, shoulders " << shoulders
                                             << " px, head " << head << " px");
  CHECK(gap == 0);
  CHECK(legs > 0);
  CHECK(head > 0);
  CHECK(head < 0.6 * shoulders);
}

TEST_CASE("vehicle render: reverse lamps light white at the rear only when reversing and tail lamps glow dim then bright red") {
  const sensors::CameraDef def = SensorDef(640, 480);
  const PinholeCamera cam = node::SensorPinhole(def);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);
  SceneGraph scene;
  renderer.SetScene(scene.Root(), scene.SkyColour());
  const Vec3 size(4.5, 1.8, 1.5);
  protocol::EntityState car = Entity(21, protocol::EntityKind::kCar, size, Vec3(10.0, 0.0, 0.0), 0.0);
  // Neutral grey paint, so that only lamps are red or white.
  scene.SetEntityColour(car.id, Rgb{0.5f, 0.5f, 0.5f});
  // Behind the car (seeing its rear) and in front of it (seeing its front), 1 m up, 8 m from its ends.
  const LocalBox box = EntityBox(size, DefaultVehicleLayout());
  Pose behind, ahead;
  behind.position_m = Vec3(10.0 + box.min_m.x() - 8.0, 0.0, 1.0);
  ahead.position_m = Vec3(10.0 + box.max_m.x() + 8.0, 0.0, 1.0);
  ahead.orientation = Quat(Eigen::AngleAxisd(M_PI, Vec3::UnitZ()));
  auto white = [](const Pixel& p) { return p[0] > 235 && p[1] > 235 && p[2] > 235; };
  auto red = [](const Pixel& p) { return p[0] > 50 && p[0] > 3 * int{p[1]} && p[0] > 3 * int{p[2]}; };
  struct Count {
    size_t n = 0;
    double mean_r = 0, v0 = 1e9, v1 = -1e9;
  };
  auto count = [](const Image& img, auto pred) {
    Count c;
    for (uint32_t j = 0; j < img.height; ++j)
      for (uint32_t i = 0; i < img.width; ++i)
        if (pred(img.At(i, j))) {
          ++c.n;
          c.mean_r += img.At(i, j)[0];
          c.v0 = std::min<double>(c.v0, j), c.v1 = std::max<double>(c.v1, j + 1.0);
        }
    if (c.n) c.mean_r /= static_cast<double>(c.n);
    return c;
  };

  // Reverse: white at the rear only while the light is on; never at the front.
  scene.Update({car});
  const Count rear_off = count(renderer.Render(behind, cam), white);
  car.lights.reverse = true;
  scene.Update({car});
  const Image rear_img = renderer.Render(behind, cam);
  const Count rear_on = count(rear_img, white);
  const Count front_on = count(renderer.Render(ahead, cam), white);
  MESSAGE("white pixels: rear, reverse off " << rear_off.n << "; rear, reverse on " << rear_on.n << " (rows " << rear_on.v0
                                             << "-" << rear_on.v1 << "); front, reverse on " << front_on.n);
  CHECK(rear_off.n == 0);
  CHECK(rear_on.n > 30);
  CHECK(front_on.n == 0);
  // The lamps sit in the lower half of the car: below the roof's and above the ground's rows.
  const double rear_depth = 8.0;
  const double v_roof = cam.cy_px - (size.z() - 1.0) * cam.fy_px / rear_depth, v_ground = cam.cy_px + 1.0 * cam.fy_px / rear_depth;
  CHECK(rear_on.v0 > v_roof + 0.4 * (v_ground - v_roof));
  CHECK(rear_on.v1 < v_ground);
  if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR"))
    CHECK(WritePng(rear_img, std::string(dir) + "/reverse_lamps.png").empty());
  car.lights.reverse = false;

  // Tail lamps: dull red when off, dim red with the headlights, bright red when braking.
  scene.Update({car});
  const Count off = count(renderer.Render(behind, cam), red);
  car.lights.headlights = true;
  scene.Update({car});
  const Count tail = count(renderer.Render(behind, cam), red);
  car.lights.brake = true;
  scene.Update({car});
  const Count brake = count(renderer.Render(behind, cam), red);
  MESSAGE("red lamp pixels (mean red): off " << off.n << " (" << off.mean_r << "), headlights " << tail.n << " ("
                                             << tail.mean_r << "), braking " << brake.n << " (" << brake.mean_r << ")");
  REQUIRE(off.n > 30);
  CHECK(tail.n == doctest::Approx(static_cast<double>(off.n)).epsilon(0.1));
  CHECK(brake.n == doctest::Approx(static_cast<double>(off.n)).epsilon(0.1));
  CHECK(off.mean_r < 110);
  CHECK(tail.mean_r > 130);
  CHECK(tail.mean_r < 200);
  CHECK(brake.mean_r > 235);
}

TEST_CASE("vehicle render: the class line-up shows every class with its lamps") {
  using K = protocol::EntityKind;
  const PinholeCamera cam = CameraFromFov(1280, 600, 66.0 * M_PI / 180.0);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);
  SceneGraph scene;
  renderer.SetScene(scene.Root(), scene.SkyColour());
  // A row of every class across the view (box centres 24 m ahead), each turned three quarters towards
  // the camera, headlights on, the car's left indicator lit, the truck braking.
  struct Item {
    K kind;
    Vec3 size;
    double y;
  };
  const Item items[] = {
      {K::kCar, Vec3(12.0, 2.55, 3.2), 15.0},  {K::kTruck, Vec3(12.0, 2.5, 3.6), 6.5}, {K::kCar, Vec3(5.3, 2.0, 2.5), -0.5},
      {K::kCar, Vec3(4.5, 1.8, 1.5), -5.0},    {K::kMotorcycle, Vec3(2.2, 0.8, 1.4), -8.3},
      {K::kBicycle, Vec3(1.8, 0.6, 1.7), -10.6}, {K::kPedestrian, Vec3(0.5, 0.6, 1.75), -12.6},
  };
  std::vector<protocol::EntityState> entities;
  uint64_t id = 40;
  const double yaw = -2.45;
  const Quat turn(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
  for (const Item& it : items) {
    const LocalBox box = EntityBox(it.size, DefaultVehicleLayout());
    protocol::EntityState e = Entity(id++, it.kind, it.size, Vec3(24.0, it.y, 0.0) - turn * Vec3(box.Centre().x(), 0, 0), yaw);
    e.lights.headlights = true;
    e.lights.brake = it.kind == K::kTruck;
    e.lights.indicator_left = it.kind == K::kCar && it.size.x() < 5;
    entities.push_back(e);
  }
  Pose camera;
  camera.position_m = Vec3(-1.0, 1.2, 5.0);
  camera.orientation = Quat(Eigen::AngleAxisd(0.035, Vec3::UnitZ()) * Eigen::AngleAxisd(6.0 * M_PI / 180.0, Vec3::UnitY()));
  scene.Update({}, 0);
  const Image empty = renderer.Render(camera, cam);
  scene.Update(entities, 0);  // sim time 0: indicators lit
  const Image img = renderer.Render(camera, cam);
  const Mask m = Difference(img, empty);
  CHECK(m.Count() > 0.05 * m.w * m.h);
  // Every entity is in view on its own.
  for (const auto& e : entities) {
    scene.Update({e}, 0);
    const size_t n = Difference(renderer.Render(camera, cam), empty).Count();
    MESSAGE(std::string(ShapeName(ShapeOf(e.kind, e.box_size_m))) << ": " << n << " px");
    CHECK(n > 300);
  }
  if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR"))
    CHECK(WritePng(img, std::string(dir) + "/vehicle_classes.png").empty());
}

TEST_CASE("vehicle render: a distant car is drawn as its far model and its brake lamps still light") {
  // The seat's typical view: 1280 x 720, 70 deg wide; a car 90 m ahead, seen from behind at eye height.
  const PinholeCamera cam = CameraFromFov(1280, 720, 70.0 * M_PI / 180.0);
  OffscreenRenderer renderer(cam.width_px, cam.height_px);
  SceneGraph scene;
  SceneDef full_def = DefaultSceneDef();
  full_def.far_model_below_px = 0.0;
  SceneGraph full_scene(full_def);
  protocol::EntityState car = Entity(31, protocol::EntityKind::kCar, Vec3(4.5, 1.8, 1.5), Vec3(90.0, 0.0, 0.0), 0.0);
  car.lights.headlights = true;
  Pose eye;
  eye.position_m = Vec3(0.0, 0.0, 1.2);
  // Bright red: a lit brake lamp (1.0, 0.06, 0.06), not the dim tail lamp (0.62) nor the paint.
  auto bright_red = [](const Image& img) {
    size_t n = 0;
    for (uint32_t j = 0; j < img.height; ++j)
      for (uint32_t i = 0; i < img.width; ++i) {
        const Pixel p = img.At(i, j);
        n += p[0] > 200 && p[1] < 80 && p[2] < 80;
      }
    return n;
  };
  for (SceneGraph* s : {&scene, &full_scene}) s->SetEntityColour(car.id, Rgb{0.5f, 0.5f, 0.5f});
  renderer.SetScene(full_scene.Root(), full_scene.SkyColour());
  full_scene.Update({car});
  const Image full_img = renderer.Render(eye, cam);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  scene.Update({car});
  const Image far_off = renderer.Render(eye, cam);
  car.lights.brake = true;
  scene.Update({car});
  const Image far_on = renderer.Render(eye, cam);
  // The far model is what is drawn: the image differs from the full model's somewhere, yet covers about
  // the same pixels (it is the same silhouette within the same box).
  const Mask changed = Difference(far_off, full_img);
  SceneGraph empty_scene;
  renderer.SetScene(empty_scene.Root(), empty_scene.SkyColour());
  const Image none = renderer.Render(eye, cam);
  const size_t full_px = Difference(full_img, none).Count(), far_px = Difference(far_off, none).Count();
  const size_t brake_off = bright_red(far_off), brake_on = bright_red(far_on);
  MESSAGE("car 90 m ahead: full model " << full_px << " px, far model " << far_px << " px, differing " << changed.Count()
                                        << " px; bright red px: brake off " << brake_off << ", on " << brake_on);
  CHECK(changed.Count() > 0);
  REQUIRE(full_px > 50);
  CHECK(static_cast<double>(far_px) == doctest::Approx(static_cast<double>(full_px)).epsilon(0.35));
  CHECK(brake_off == 0);
  CHECK(brake_on >= 2);
}
