// Camera ground truth (sensors/src/camera.cpp) and the object-list error chain (sensors/src/object_list.cpp).
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/object_list.hpp"
#include "platoon/sensors/scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;

// Axis-aligned target of size (4, 2, 1.5) m centred at `centre`.
CameraTarget Car(uint32_t id, const Vec3& centre) {
  CameraTarget t;
  t.entity_id = id;
  t.class_id = 1;
  t.pose.position_m = centre;
  t.size_m = Vec3(4.0, 2.0, 1.5);
  return t;
}

// Chain with a wide field of view, everything detected and no noise unless the test sets it.
ObjectListDef QuietDef() {
  ObjectListDef def;
  def.fov.azimuth_half_rad = std::numbers::pi;
  def.fov.range_min_m = 0.0;
  def.fov.range_max_m = 1e6;
  def.noise.position_sigma_m = Vec3::Zero();
  def.noise.position_offset_sigma_m = Vec3::Zero();
  def.noise.velocity_sigma_mps = Vec3::Zero();
  def.noise.velocity_offset_sigma_mps = Vec3::Zero();
  return def;
}

GroundTruthObject Obj(uint32_t id, const Vec3& pos, ObjectClass c = ObjectClass::kCar) {
  GroundTruthObject g;
  g.id = id;
  g.object_class = c;
  g.position_m = pos;
  g.velocity_mps = Vec3(10.0, 0.0, 0.0);
  return g;
}

// Sample mean and standard deviation.
struct Moments {
  double n = 0, sum = 0, sum2 = 0;
  void Add(double x) { n += 1; sum += x; sum2 += x * x; }
  double Mean() const { return sum / n; }
  double Std() const { return std::sqrt((sum2 - sum * sum / n) / (n - 1)); }
};

}  // namespace

TEST_CASE("camera: seed-000 sensor and lens give an 89.4 deg horizontal field of view") {
  const CameraDef def = DefaultCameraDef();
  const double h_deg = HorizontalFovRad(def) / kDeg;
  const double v_deg = VerticalFovRad(def) / kDeg;
  INFO("FoV " << h_deg << " x " << v_deg << " deg");
  CHECK(h_deg == doctest::Approx(2.0 * std::atan(23.76 / 24.0) / kDeg).epsilon(1e-12));
  CHECK(h_deg == doctest::Approx(89.42).epsilon(1e-4));
  CHECK(v_deg == doctest::Approx(58.22).epsilon(1e-4));
  const CameraIntrinsics k = Intrinsics(def);
  CHECK(k.fx_px == doctest::Approx(12.0 * 1920 / 23.76));
  CHECK(k.fy_px == doctest::Approx(k.fx_px).epsilon(1e-9));  // square pixels: 16:9 sensor and image
  CHECK(k.cx_px == 960.0);
  CHECK(k.cy_px == 540.0);
}

TEST_CASE("camera: a box at a known pose projects to the closed-form pixel rectangle") {
  const CameraDef def = DefaultCameraDef();
  const CameraIntrinsics k = Intrinsics(def);
  // Box x in [18, 22], y in [1, 3], z in [-0.75, 0.75] in front of a camera at the origin:
  // u = cx - fx y / x, v = cy - fy z / x; extremes at the nearest corners (x = 18) except u_max (x = 22).
  const std::vector<RoiBox> boxes = GroundTruth({Car(7, Vec3(20, 2, 0))}, nullptr, Pose{}, def);
  REQUIRE(boxes.size() == 1);
  const RoiBox& b = boxes[0];
  INFO("box u " << b.u_min_px << ".." << b.u_max_px << " v " << b.v_min_px << ".." << b.v_max_px);
  CHECK(b.entity_id == 7);
  CHECK(b.u_min_px == doctest::Approx(k.cx_px - k.fx_px * 3.0 / 18.0).epsilon(1e-9));
  CHECK(b.u_max_px == doctest::Approx(k.cx_px - k.fx_px * 1.0 / 22.0).epsilon(1e-9));
  CHECK(b.v_min_px == doctest::Approx(k.cy_px - k.fy_px * 0.75 / 18.0).epsilon(1e-9));
  CHECK(b.v_max_px == doctest::Approx(k.cy_px + k.fy_px * 0.75 / 18.0).epsilon(1e-9));
  CHECK(b.depth_m == doctest::Approx(20.0));
  CHECK_FALSE(b.truncated);
  CHECK(b.occlusion_ratio == 0.0);

  // Same relative geometry from a mounted camera on a vehicle yawed 90 deg at (100, 50, 0).
  Pose vehicle;
  vehicle.position_m = Vec3(100, 50, 0);
  vehicle.orientation = Quat(Eigen::AngleAxisd(90 * kDeg, Vec3::UnitZ()));
  const Pose cam = SensorPoseInWorld(vehicle, def.mounting);
  CameraTarget t = Car(7, cam.position_m + cam.orientation * Vec3(20, 2, 0));
  t.pose.orientation = cam.orientation;
  const std::vector<RoiBox> moved = GroundTruth({t}, nullptr, cam, def);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].u_min_px == doctest::Approx(b.u_min_px).epsilon(1e-9));
  CHECK(moved[0].u_max_px == doctest::Approx(b.u_max_px).epsilon(1e-9));
  CHECK(moved[0].v_min_px == doctest::Approx(b.v_min_px).epsilon(1e-9));
  CHECK(moved[0].v_max_px == doctest::Approx(b.v_max_px).epsilon(1e-9));
}

TEST_CASE("camera: a target half hidden behind a wall gets the hidden fraction as occlusion ratio") {
  CameraDef def = DefaultCameraDef();
  def.occlusion_samples = 20;
  // Wall (entity 5) covering y < 0 at x = 10; target (entity 7) rear face at x = 18, y in [-0.5, 1.5]:
  // rays from the origin keep the sign of y, so the quarter y < 0 of the face is hidden.
  Scene scene;
  scene.AddBox(Pose{Vec3(10, -2.0, 0), Quat::Identity()}, Vec3(0.1, 2.0, 3.0), SurfaceTag{0, 5, 2});
  scene.AddDynamicBox(Vec3(2.0, 1.0, 0.75), SurfaceTag{0, 7, 1}, Pose{Vec3(20, 0.5, 0), Quat::Identity()});
  scene.Commit();
  const std::vector<CameraTarget> targets = {Car(7, Vec3(20, 0.5, 0)), Car(8, Vec3(20, -6.0, 0)),
                                             Car(9, Vec3(20, 6.0, 0))};
  const std::vector<RoiBox> boxes = GroundTruth(targets, &scene, Pose{}, def);
  REQUIRE(boxes.size() == 3);
  INFO("occlusion: partly hidden " << boxes[0].occlusion_ratio << ", behind wall "
                                      << boxes[1].occlusion_ratio << ", free " << boxes[2].occlusion_ratio);
  CHECK(boxes[0].occlusion_ratio == doctest::Approx(0.25).epsilon(0.02));
  // Entity 8 (y in [-7, -5], side face seen too) lies wholly behind the wall, entity 9 is free.
  CHECK(boxes[1].occlusion_ratio == doctest::Approx(1.0));
  CHECK(boxes[2].occlusion_ratio == 0.0);
}

TEST_CASE("camera: targets behind the camera or outside the image are not reported, cut ones are clipped") {
  const CameraDef def = DefaultCameraDef();
  const CameraIntrinsics k = Intrinsics(def);
  const std::vector<CameraTarget> targets = {
      Car(1, Vec3(-20, 0, 0)),   // behind
      Car(2, Vec3(20, 40, 0)),   // far left, outside the 89.4 deg field of view
      Car(3, Vec3(10, 12, 0)),   // partly left of the image
      Car(4, Vec3(20, 0, 30)),   // above the image
  };
  CameraTarget straddling = Car(5, Vec3(1.0, 3.0, 0));  // x in [-2, 4]: reaches behind the camera
  straddling.size_m = Vec3(6.0, 1.0, 1.0);
  std::vector<CameraTarget> all = targets;
  all.push_back(straddling);
  const std::vector<RoiBox> boxes = GroundTruth(all, nullptr, Pose{}, def);
  REQUIRE(boxes.size() == 2);
  // Partly left: u from < 0 (clipped) to cx - fx 11/12.
  CHECK(boxes[0].entity_id == 3);
  CHECK(boxes[0].u_min_px == 0.0);
  CHECK(boxes[0].u_max_px == doctest::Approx(k.cx_px - k.fx_px * 11.0 / 12.0).epsilon(1e-9));
  CHECK(boxes[0].truncated);
  // Straddling the near plane: the in-front corners (x = 4) bound u_max; the near-plane cut runs off the image.
  CHECK(boxes[1].entity_id == 5);
  CHECK(boxes[1].u_min_px == 0.0);
  CHECK(boxes[1].u_max_px == doctest::Approx(k.cx_px - k.fx_px * 2.5 / 4.0).epsilon(1e-9));
  CHECK(boxes[1].v_min_px == 0.0);
  CHECK(boxes[1].v_max_px == 1080.0);
  CHECK(boxes[1].truncated);
}

TEST_CASE("object list: field-of-view module drops objects outside range and azimuth") {
  ObjectListDef def = QuietDef();
  def.fov = FieldOfViewDef{};  // 0.5..200 m, +-45 deg
  ObjectListChain chain(def);
  std::mt19937_64 rng(1);
  const auto out = chain.Process({Obj(1, Vec3(250, 0, 0)), Obj(2, Vec3(10, 20, 0)), Obj(3, Vec3(10, 5, 0)),
                                  Obj(4, Vec3(0.2, 0, 0)), Obj(5, Vec3(-30, 0, 0)), Obj(6, Vec3(120, -110, 0))},
                                 rng);
  REQUIRE(out.size() == 2);
  CHECK(out[0].id == 3);
  CHECK(out[1].id == 6);  // 162.8 m at -42.5 deg: inside
}

TEST_CASE("object list: per-track offset is constant over frames for one id and differs between ids") {
  ObjectListDef def = QuietDef();
  def.noise.position_offset_sigma_m = Vec3(0.5, 0.2, 0.0);
  def.noise.velocity_offset_sigma_mps = Vec3(0.1, 0.1, 0.0);
  ObjectListChain chain(def);
  std::mt19937_64 rng(2);
  std::vector<Vec3> first(3);
  for (int frame = 0; frame < 5; ++frame) {
    // Objects move; the error sensed - truth must not.
    const Vec3 a(30 + frame, 2, 0), b(50 - frame, -3, 0);
    const auto out = chain.Process({Obj(1, a), Obj(2, b)}, rng);
    REQUIRE(out.size() == 2);
    const Vec3 ea = out[0].position_m - a, eb = out[1].position_m - b;
    if (frame == 0) {
      first[1] = ea;
      first[2] = eb;
      CHECK((ea - eb).norm() > 1e-6);
      CHECK(ea.norm() > 0.0);
    } else {
      CHECK((ea - first[1]).norm() < 1e-12);
      CHECK((eb - first[2]).norm() < 1e-12);
    }
  }
}

TEST_CASE("object list: offsets over many tracks and white noise over many frames have the configured sigma") {
  // Offsets: 4000 tracks, one frame each. sigma estimate within 5 sigma/sqrt(2N), mean within 5 sigma/sqrt(N).
  {
    ObjectListDef def = QuietDef();
    def.noise.position_offset_sigma_m = Vec3(0.5, 0.2, 0.0);
    def.noise.velocity_offset_sigma_mps = Vec3(0.3, 0.1, 0.0);
    ObjectListChain chain(def);
    std::mt19937_64 rng(3);
    const int n = 4000;
    std::vector<GroundTruthObject> truth;
    for (int i = 0; i < n; ++i) truth.push_back(Obj(static_cast<uint32_t>(i + 1), Vec3(50, 0, 0)));
    const auto out = chain.Process(truth, rng);
    REQUIRE(out.size() == static_cast<size_t>(n));
    Moments x, y, vx, vy;
    for (const SensedObject& o : out) {
      x.Add(o.position_m.x() - 50);
      y.Add(o.position_m.y());
      vx.Add(o.velocity_mps.x() - 10);
      vy.Add(o.velocity_mps.y());
      CHECK(o.position_m.z() == 0.0);
    }
    INFO("offset sigma x " << x.Std() << " y " << y.Std() << " vx " << vx.Std() << " vy " << vy.Std());
    const double k = 5.0 / std::sqrt(2.0 * n);
    CHECK(std::abs(x.Std() - 0.5) < 0.5 * k);
    CHECK(std::abs(y.Std() - 0.2) < 0.2 * k);
    CHECK(std::abs(vx.Std() - 0.3) < 0.3 * k);
    CHECK(std::abs(vy.Std() - 0.1) < 0.1 * k);
    CHECK(std::abs(x.Mean()) < 5.0 * 0.5 / std::sqrt(n));
    CHECK(std::abs(y.Mean()) < 5.0 * 0.2 / std::sqrt(n));
  }
  // White noise: one track, 10^4 frames, no offset.
  {
    ObjectListDef def = QuietDef();
    def.noise.position_sigma_m = Vec3(0.1, 0.3, 0.0);
    def.noise.velocity_sigma_mps = Vec3(0.45, 0.2, 0.0);
    ObjectListChain chain(def);
    std::mt19937_64 rng(4);
    const int n = 10000;
    Moments x, y, vx;
    for (int i = 0; i < n; ++i) {
      const auto out = chain.Process({Obj(1, Vec3(40, 1, 0))}, rng);
      REQUIRE(out.size() == 1);
      x.Add(out[0].position_m.x() - 40);
      y.Add(out[0].position_m.y() - 1);
      vx.Add(out[0].velocity_mps.x() - 10);
    }
    INFO("white sigma x " << x.Std() << " y " << y.Std() << " vx " << vx.Std());
    const double k = 5.0 / std::sqrt(2.0 * n);
    CHECK(std::abs(x.Std() - 0.1) < 0.1 * k);
    CHECK(std::abs(y.Std() - 0.3) < 0.3 * k);
    CHECK(std::abs(vx.Std() - 0.45) < 0.45 * k);
    CHECK(std::abs(x.Mean()) < 5.0 * 0.1 / std::sqrt(n));
  }
}

TEST_CASE("object list: detection rate matches the class probability over 10^4 frames (5 sigma)") {
  ObjectListDef def = QuietDef();
  def.detection.probability[ObjectClass::kCar] = 0.7;
  def.detection.probability[ObjectClass::kPedestrian] = 0.0;
  ObjectListChain chain(def);
  std::mt19937_64 rng(5);
  const int n = 10000;
  int cars = 0, pedestrians = 0, trucks = 0;
  for (int i = 0; i < n; ++i) {
    const auto out = chain.Process({Obj(1, Vec3(20, 0, 0)), Obj(2, Vec3(10, 1, 0), ObjectClass::kPedestrian),
                                    Obj(3, Vec3(30, -2, 0), ObjectClass::kTruck)},
                                   rng);
    for (const SensedObject& o : out) {
      cars += o.id == 1;
      pedestrians += o.id == 2;
      trucks += o.id == 3;
    }
  }
  INFO("car detected " << cars << " / " << n << " (expected 7000 +- " << 5 * std::sqrt(n * 0.21) << ")");
  CHECK(std::abs(cars - 0.7 * n) < 5.0 * std::sqrt(n * 0.7 * 0.3));
  CHECK(pedestrians == 0);
  CHECK(trucks == n);  // default probability 1
}

TEST_CASE("object list: unclassified becomes car exactly when the length first exceeds 2.0 m, and stays") {
  ObjectListDef def = QuietDef();
  def.classes.rules[0].width_threshold_m = 0.0;  // length trigger only
  ObjectListChain chain(def);
  std::mt19937_64 rng(6);
  const std::vector<double> lengths = {1.0, 1.5, 1.99, 2.0, 2.01, 1.5, 3.0, 1.0};
  std::vector<ObjectClass> got;
  for (double l : lengths) {
    GroundTruthObject car = Obj(1, Vec3(20, 3, 0));
    car.size_m = Vec3(l, 1.8, 1.5);
    GroundTruthObject walker = Obj(2, Vec3(10, -2, 0), ObjectClass::kPedestrian);
    walker.size_m = Vec3(0.5, 0.5, 1.8);
    const auto out = chain.Process({car, walker}, rng);
    REQUIRE(out.size() == 2);
    got.push_back(out[0].object_class);
    CHECK(out[1].object_class == ObjectClass::kPedestrian);  // no rule: true class
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == (i < 4 ? ObjectClass::kUnclassified : ObjectClass::kCar));
  }
  // The default rule also triggers on width > 1.0 m (seed 002 Fig. 3.21, lower trace).
  ObjectListChain with_width(QuietDef());
  GroundTruthObject wide = Obj(3, Vec3(20, 0, 0));
  wide.size_m = Vec3(1.0, 0.9, 1.5);
  CHECK(with_width.Process({wide}, rng)[0].object_class == ObjectClass::kUnclassified);
  wide.size_m = Vec3(1.0, 1.1, 1.5);
  CHECK(with_width.Process({wide}, rng)[0].object_class == ObjectClass::kCar);
}

TEST_CASE("object list: two chains with the same seed give the same list") {
  const ObjectListDef def = DefaultObjectListDef();
  ObjectListChain a(def), b(def);
  std::mt19937_64 ra(7), rb(7);
  for (int frame = 0; frame < 50; ++frame) {
    const std::vector<GroundTruthObject> truth = {Obj(1, Vec3(20.0 + frame, 1, 0)), Obj(2, Vec3(60, -5, 0))};
    const auto oa = a.Process(truth, ra), ob = b.Process(truth, rb);
    REQUIRE(oa.size() == ob.size());
    for (size_t i = 0; i < oa.size(); ++i) {
      CHECK(oa[i].position_m == ob[i].position_m);
      CHECK(oa[i].velocity_mps == ob[i].velocity_mps);
      CHECK(oa[i].object_class == ob[i].object_class);
    }
  }
}
