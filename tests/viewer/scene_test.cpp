// The viewer's scene graph and entity models (viewer/src/scene.cpp, vehicle_model.cpp), without a GL context.
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <doctest/doctest.h>

#include <cmath>

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

TEST_CASE("vehicle model: body, wheels and lamps stay inside the entity box and colours are deterministic") {
  const VehicleLayout layout = DefaultVehicleLayout();
  for (const Vec3& size : {Vec3(4.5, 1.8, 1.5), Vec3(12.0, 2.5, 3.6), Vec3(2.0, 0.8, 1.2)}) {
    const LocalBox whole = EntityBox(size, layout);
    CHECK((whole.Size() - size).norm() < 1e-12);
    CHECK(whole.min_m.z() == 0.0);  // standing on the ground at the rear-axle origin
    const LocalBox body = BodyBox(size, protocol::EntityKind::kCar, layout);
    CHECK((body.min_m.array() >= whole.min_m.array()).all());
    CHECK((body.max_m.array() <= whole.max_m.array()).all());
    const double r = WheelRadius(size, layout);
    for (int i = 0; i < 4; ++i) {
      const Vec3 c = WheelCentre(size, layout, i);
      CHECK(c.z() == doctest::Approx(r));  // touching the ground
      CHECK(c.x() - r >= whole.min_m.x());
      CHECK(c.x() + r <= whole.max_m.x());
      CHECK(std::abs(c.y()) <= 0.5 * size.y());
    }
  }
  CHECK(EntityColour(17) == EntityColour(17));
  CHECK_FALSE(EntityColour(17) == EntityColour(18));
  // Never magenta: that colour is reserved for tests and highlights.
  for (uint64_t id = 0; id < 2000; ++id) {
    const Rgb c = EntityColour(id);
    CHECK_FALSE((c.r > 0.6f && c.b > 0.6f && c.g < 0.3f));
  }
}
