// The viewer's scene graph and entity models (viewer/src/scene.cpp, vehicle_model.cpp), without a GL context.
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <doctest/doctest.h>
#include <osg/Drawable>
#include <osg/CullingSet>
#include <osg/LOD>
#include <osg/NodeVisitor>
#include <osg/Viewport>

#include <algorithm>
#include <cmath>
#include <string>

using namespace platoon;
using namespace platoon::viewer;

namespace {

protocol::EntityState Car(uint64_t id, double x, double yaw = 0.0) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.pose.position_m = Vec3(x, 0, 0);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
  return e;
}

}  // namespace

TEST_CASE("scene: wheels turn by distance / radius forwards and back and models come and go with the entities") {
  SceneGraph scene;
  protocol::EntityState a = Car(1, 0.0, 0.3);
  scene.Update({a, Car(2, 10.0)});
  CHECK(scene.EntityCount() == 2);
  const double r = WheelRadius(a.box_size_m, scene.Def().layout);
  // 1.2 m forward along the heading, in two steps.
  const Vec3 fwd = a.kinematics.pose.orientation * Vec3::UnitX();
  a.kinematics.pose.position_m += 0.5 * fwd;
  scene.Update({a, Car(2, 10.0)});
  a.kinematics.pose.position_m += 0.7 * fwd;
  scene.Update({a});
  CHECK(scene.EntityCount() == 1);
  REQUIRE(scene.WheelAngle(1).has_value());
  CHECK(*scene.WheelAngle(1) == doctest::Approx(1.2 / r));
  CHECK_FALSE(scene.WheelAngle(2).has_value());
  // Sideways motion does not turn the wheels; backwards turns them back.
  a.kinematics.pose.position_m += 0.4 * (a.kinematics.pose.orientation * Vec3::UnitY()) - 0.2 * fwd;
  scene.Update({a});
  CHECK(*scene.WheelAngle(1) == doctest::Approx(1.0 / r));
}

TEST_CASE("vehicle model: every class's parts and wheels stay inside the entity box and colours are deterministic") {
  using K = protocol::EntityKind;
  const VehicleLayout layout = DefaultVehicleLayout();
  struct Case {
    K kind;
    Vec3 size;
    VehicleShape shape;
  };
  // Typical boxes of every kind, and boxes on either side of the size rule (kBusMinLengthM, kVanMinHeightM).
  const Case cases[] = {
      {K::kCar, Vec3(4.5, 1.8, 1.5), VehicleShape::kCar},
      {K::kUnknown, Vec3(4.5, 1.8, 1.5), VehicleShape::kCar},
      {K::kCar, Vec3(5.2, 2.0, kVanMinHeightM + 0.2), VehicleShape::kVan},
      {K::kCar, Vec3(5.2, 2.0, kVanMinHeightM - 0.1), VehicleShape::kCar},
      {K::kCar, Vec3(kBusMinLengthM + 5.5, 2.55, 3.2), VehicleShape::kBus},
      {K::kTruck, Vec3(12.0, 2.5, 3.6), VehicleShape::kTruck},
      {K::kTruck, Vec3(kBusMinLengthM - 0.5, 2.1, 2.6), VehicleShape::kVan},
      {K::kMotorcycle, Vec3(2.2, 0.8, 1.4), VehicleShape::kMotorcycle},
      {K::kMotorcycle, Vec3(4.5, 1.8, 1.5), VehicleShape::kMotorcycle},
      {K::kBicycle, Vec3(1.8, 0.6, 1.7), VehicleShape::kBicycle},
      {K::kPedestrian, Vec3(0.5, 0.6, 1.75), VehicleShape::kPedestrian},
      {K::kStaticObject, Vec3(2.0, 0.8, 1.2), VehicleShape::kBlock},
  };
  for (const Case& c : cases) {
    INFO(std::string(ShapeName(c.shape)) << " " << c.size.transpose());
    auto wheels_expected = [](VehicleShape s) -> size_t {
      return s == VehicleShape::kMotorcycle || s == VehicleShape::kBicycle ? 2 : s == VehicleShape::kPedestrian || s == VehicleShape::kBlock ? 0 : 4;
    };
    CHECK(ShapeOf(c.kind, c.size) == c.shape);
    const LocalBox whole = EntityBox(c.size, layout);
    CHECK((whole.Size() - c.size).norm() < 1e-12);
    CHECK(whole.min_m.z() == 0.0);  // standing on the ground at the rear-axle origin
    const VehicleModel m = BuildVehicleModel(c.kind, c.size, layout);
    CHECK(m.shape == c.shape);
    REQUIRE(!m.parts.empty());
    const double eps = 1e-9;
    Vec3 lo = Vec3::Constant(1e9), hi = Vec3::Constant(-1e9);
    for (const Solid& s : m.parts)
      for (const Vec3& p : s.corner_m) {
        CHECK((p.array() >= whole.min_m.array() - eps).all());
        CHECK((p.array() <= whole.max_m.array() + eps).all());
        lo = lo.cwiseMin(p);
        hi = hi.cwiseMax(p);
      }
    for (const WheelSpec& w : m.wheels) {
      CHECK(w.centre_m.z() == doctest::Approx(w.radius_m));  // touching the ground
      CHECK(w.radius_m > 0.0);
      CHECK(w.centre_m.x() - w.radius_m >= whole.min_m.x() - eps);
      CHECK(w.centre_m.x() + w.radius_m <= whole.max_m.x() + eps);
      CHECK(std::abs(w.centre_m.y()) + 0.5 * w.width_m <= 0.5 * c.size.y() + eps);
    }
    // The model fills its box: it reaches the top, and at least 85 % of the length (70 % for two-wheelers,
    // whose box may be a car's; half for a person, whose box leaves room to stride).
    CHECK(hi.z() == doctest::Approx(c.size.z()));
    CHECK(std::max(hi.x(), m.wheels.empty() ? hi.x() : m.wheels.back().centre_m.x() + m.wheels.back().radius_m) -
              std::min(lo.x(), m.wheels.empty() ? lo.x() : -m.wheels.front().radius_m) >=
          (c.shape == VehicleShape::kPedestrian ? 0.5 : wheels_expected(c.shape) == 2 ? 0.7 : 0.85) * c.size.x());
    // Wheels: four for road vehicles, two for two-wheelers, none for people and objects.
    const size_t wheels = wheels_expected(c.shape);
    CHECK(m.wheels.size() == wheels);
    // The far model: inside the box as well, no wheels, every lamp of the full model, few solids.
    const VehicleModel far = BuildFarVehicleModel(m);
    CHECK(far.wheels.empty());
    if (wheels == 4) {
      REQUIRE(!far.parts.empty());
      size_t far_lamps = 0, full_lamps = 0, far_solids = 0;
      for (const Solid& s : far.parts) {
        (IsLamp(s.role) ? far_lamps : far_solids) += 1;
        for (const Vec3& p : s.corner_m) {
          CHECK((p.array() >= whole.min_m.array() - eps).all());
          CHECK((p.array() <= whole.max_m.array() + eps).all());
        }
      }
      for (const Solid& s : m.parts) full_lamps += IsLamp(s.role) ? 1 : 0;
      CHECK(far_lamps == full_lamps);
      CHECK(far_solids <= 5);  // up to 3 hull solids and one box per axle
      CHECK(far_solids < m.parts.size() - full_lamps);
    } else {
      CHECK(far.parts.empty());  // two-wheelers, people and blocks are drawn in full at any size
    }
    auto count = [&](PartRole r) { return std::count_if(m.parts.begin(), m.parts.end(), [&](const Solid& s) { return s.role == r; }); };
    // Lamps: road vehicles have two of each (reverse included), motorcycles one head and one tail lamp
    // and four turn lamps, bicycles a front and a rear lamp.
    if (wheels == 4) {
      CHECK(count(PartRole::kHeadlamp) == 2);
      CHECK(count(PartRole::kTailLamp) == 2);
      CHECK(count(PartRole::kReverseLamp) == 2);
      CHECK(count(PartRole::kIndicatorLeft) == 2);
      CHECK(count(PartRole::kIndicatorRight) == 2);
      CHECK(count(PartRole::kGlass) >= 3);
      // Left turn lamps on the left (+y), right ones on the right; head lamps at the front, tail lamps at the back.
      for (const Solid& s : m.parts) {
        const double y = 0.5 * (s.corner_m[0].y() + s.corner_m[7].y()), x = 0.5 * (s.corner_m[0].x() + s.corner_m[7].x());
        if (s.role == PartRole::kIndicatorLeft) CHECK(y > 0.0);
        if (s.role == PartRole::kIndicatorRight) CHECK(y < 0.0);
        if (s.role == PartRole::kHeadlamp) CHECK(x > 0.5 * (whole.min_m.x() + whole.max_m.x()));
        if (s.role == PartRole::kTailLamp || s.role == PartRole::kReverseLamp) CHECK(x < 0.5 * (whole.min_m.x() + whole.max_m.x()));
      }
    } else if (c.shape == VehicleShape::kMotorcycle) {
      CHECK(count(PartRole::kHeadlamp) == 1);
      CHECK(count(PartRole::kTailLamp) == 1);
      CHECK(count(PartRole::kIndicatorLeft) == 2);
    } else if (c.shape == VehicleShape::kBicycle) {
      CHECK(count(PartRole::kHeadlamp) == 1);
      CHECK(count(PartRole::kTailLamp) == 1);
    } else {
      CHECK(count(PartRole::kHeadlamp) == 0);
    }
    // People (pedestrians and riders) have a head of skin or helmet above their body.
    if (c.shape == VehicleShape::kPedestrian || c.shape == VehicleShape::kBicycle || c.shape == VehicleShape::kMotorcycle) {
      const LocalBox head = PartsBounds(m, c.shape == VehicleShape::kPedestrian ? PartRole::kSkin : PartRole::kHair);
      CHECK(head.max_m.z() > 0.9 * c.size.z());
      CHECK(count(PartRole::kClothes) >= 2);
    }
  }
  // The car's greenhouse stands on the bonnet: cabin parts above the belt line and shorter than the body.
  const VehicleModel car = BuildVehicleModel(K::kCar, Vec3(4.5, 1.8, 1.5), layout);
  const LocalBox glass = PartsBounds(car, PartRole::kGlass);
  CHECK(glass.min_m.z() > 0.5 * 1.5);
  CHECK(glass.Size().x() < 0.7 * 4.5);
  // The wheels of the spin test are the model's.
  CHECK(car.wheels.front().radius_m == doctest::Approx(WheelRadius(Vec3(4.5, 1.8, 1.5), layout)));
  CHECK(EntityColour(17) == EntityColour(17));
  CHECK_FALSE(EntityColour(17) == EntityColour(18));
  // Never magenta: that colour is reserved for tests and highlights.
  for (uint64_t id = 0; id < 2000; ++id) {
    const Rgb c = EntityColour(id);
    CHECK_FALSE((c.r > 0.6f && c.b > 0.6f && c.g < 0.3f));
  }
}

namespace scene_test_detail {
// Counts the drawables under a node: each is one draw call per frame when in view.
struct DrawableCounter : osg::NodeVisitor {
  DrawableCounter() : osg::NodeVisitor(osg::NodeVisitor::TRAVERSE_ALL_CHILDREN) {}
  size_t count = 0;
  void apply(osg::Drawable&) override { ++count; }
};
size_t CountDrawables(osg::Node* root) {
  DrawableCounter c;
  root->accept(c);
  return c.count;
}
}  // namespace scene_test_detail

TEST_CASE("scene: a vehicle is three drawables and a pedestrian one so that 200 vehicles stay cheap") {
  using scene_test_detail::CountDrawables;
  SceneDef def = DefaultSceneDef();
  def.far_model_below_px = 0.0;  // full models only; the far model's drawables are counted below
  SceneGraph scene(def);
  const size_t empty = CountDrawables(scene.Root());
  std::vector<protocol::EntityState> cars;
  for (uint64_t id = 1; id <= 200; ++id) cars.push_back(Car(id, 10.0 * static_cast<double>(id)));
  scene.Update(cars);
  // Static parts with per-vertex colours, the lamps, the wheels' light bars.
  CHECK(CountDrawables(scene.Root()) - empty == 3 * cars.size());
  protocol::EntityState person = Car(500, 0.0);
  person.kind = protocol::EntityKind::kPedestrian;
  person.box_size_m = Vec3(0.5, 0.6, 1.75);
  scene.Update({person});
  CHECK(CountDrawables(scene.Root()) - empty == 1);
}

namespace scene_test_detail {
// Finds the osg::LOD nodes under a node.
struct LodFinder : osg::NodeVisitor {
  LodFinder() : osg::NodeVisitor(osg::NodeVisitor::TRAVERSE_ALL_CHILDREN) {}
  std::vector<osg::LOD*> lods;
  void apply(osg::LOD& lod) override {
    lods.push_back(&lod);
    traverse(lod);
  }
};
}  // namespace scene_test_detail

TEST_CASE("scene: a distant car switches to a far model of two drawables when about 20 to 30 px tall in a 70 deg 1280 px view") {
  using scene_test_detail::CountDrawables;
  SceneGraph scene;
  const size_t empty = CountDrawables(scene.Root());
  const protocol::EntityState car = Car(1, 0.0);
  scene.Update({car});
  // Full model (3 drawables) and far model (its parts and its lamps) under one LOD.
  CHECK(CountDrawables(scene.Root()) - empty == 5);
  scene_test_detail::LodFinder finder;
  scene.Root()->accept(finder);
  REQUIRE(finder.lods.size() == 1);
  osg::LOD& lod = *finder.lods.front();
  CHECK(lod.getRangeMode() == osg::LOD::PIXEL_SIZE_ON_SCREEN);
  REQUIRE(lod.getNumChildren() == 2);
  CHECK(CountDrawables(lod.getChild(0)) == 3);
  CHECK(CountDrawables(lod.getChild(1)) == 2);
  const float px = static_cast<float>(scene.Def().far_model_below_px);
  CHECK(lod.getMinRange(0) == px);
  CHECK(lod.getMaxRange(1) == px);
  // Where OSG switches: its pixel size of the model's bounding sphere at distance d straight ahead in a
  // 1280 x 720 view 70 deg wide is radius / (d * k) with k from CullingSet::computePixelSizeVector.
  const double hfov = 70.0 * M_PI / 180.0;
  const double vfov_deg = 2.0 * std::atan(std::tan(0.5 * hfov) * 720.0 / 1280.0) * 180.0 / M_PI;
  const osg::Matrixd proj = osg::Matrixd::perspective(vfov_deg, 1280.0 / 720.0, 1.0, 10000.0);
  osg::ref_ptr<osg::Viewport> vp = new osg::Viewport(0, 0, 1280, 720);
  const osg::Vec4 psv = osg::CullingSet::computePixelSizeVector(*vp, proj, osg::Matrixd::identity());
  const double radius = lod.getBound().radius();
  CHECK(radius == doctest::Approx(0.5 * car.box_size_m.norm()).epsilon(0.1));
  // pixel size(d) = radius / (psv . (0, 0, -d, 1)), solved for pixel size == px.
  const double d_switch = (radius / px - psv.w()) / -psv.z();
  // The car's height in pixels there, by the pinhole: focal length 640 / tan(35 deg) px.
  const double focal_px = 640.0 / std::tan(0.5 * hfov);
  const double height_px = focal_px * car.box_size_m.z() / d_switch;
  INFO("switch at " << d_switch << " m, car " << height_px << " px tall");
  CHECK(height_px >= 18.0);
  CHECK(height_px <= 32.0);
}
