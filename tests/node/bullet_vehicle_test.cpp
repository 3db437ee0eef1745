// Tests of node/vehicle_bullet/src/bullet_vehicle.cpp: suspension settling, drive and brake,
// ground contact on a graded road mesh, collisions with static boxes, determinism.
#include "platoon/vehicle/bullet_vehicle.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace platoon;
using namespace platoon::vehicle;

namespace {

constexpr double kDtS = 0.01;  // caller's step, in s (the world substeps at 1 ms)

// A graded two-lane road: straight, left arc, straight; 5 % uphill.
road::RoadDef GradedRoadDef() {
  road::RoadDef d;
  d.id = 1;
  d.start_height_m = 2.0;
  d.grade = 0.05;
  d.sections = {road::LineSection(40), road::ArcSection(80, 1.0 / 60), road::LineSection(60)};
  return d;
}

// Pure-pursuit-like steering toward `goal_m` from the rear axle of `k`, as a -1..1 input.
double SteerToward(const VehicleDef& def, const KinematicState& k, const Vec3& goal_m) {
  const Vec3 local = k.pose.orientation.conjugate() * (goal_m - k.pose.position_m);
  const double d2 = local.x() * local.x() + local.y() * local.y();
  const double steer_rad = std::atan(2.0 * def.WheelbaseM() * local.y() / d2);
  return std::clamp(steer_rad / def.max_steer_rad, -1.0, 1.0);
}

// Lane-keeping driver on `road`: goal 10 m ahead on the centre of `lane`, speed held near `speed_mps`.
VehicleInput LaneInput(const VehicleDef& def, const road::Road& road, const KinematicState& k, int lane,
                       double speed_mps, double speed_now_mps) {
  const road::RoadCoord c = road.Project(k.pose.position_m);
  VehicleInput in;
  in.steer = SteerToward(def, k, road.PointAt(c.s_m + 10.0, road.LaneCenterOffset(lane)));
  const double e = speed_mps - speed_now_mps;
  in.throttle = std::clamp(0.5 * e, 0.0, 1.0);
  in.brake = std::clamp(-0.2 * e, 0.0, 1.0);
  return in;
}

// Reference scenario for determinism: a road with boxes beside it, lane keeping with a weave.
uint64_t RunReference(KinematicState* final_state) {
  const road::Road road(GradedRoadDef());
  BulletWorld world;
  world.AddRoadGround(road);
  for (int i = 0; i < 8; ++i) {
    const double s = 20.0 + 20.0 * i;
    world.AddBox(road.PointAt(s, road.LeftEdgeOffset() + 3.0) + Vec3(0, 0, 1.5), road.Heading(s), Vec3(6, 3, 3));
  }
  const VehicleDef def = DefaultVehicleDef();
  BulletVehicle car(world, def, DefaultBulletVehicleDef(), road.PointAt(5, road.LaneCenterOffset(-1)),
                    road.Heading(5), 0.2);
  for (int i = 0; i < 1000; ++i) {
    VehicleInput in = LaneInput(def, road, car.State(0), -1, 12.0, car.SpeedMps());
    in.steer = std::clamp(in.steer + 0.3 * std::sin(i * 0.02), -1.0, 1.0);
    car.SetInput(in);
    world.Step(kDtS);
  }
  *final_state = car.State(SToNs(world.TimeS()));
  return car.Hash();
}

}  // namespace

TEST_CASE("bullet vehicle: dropped from 0.5 m it settles on its suspension without sinking or bouncing") {
  BulletWorld world;
  world.AddFlatGround(0.0);
  const VehicleDef def = DefaultVehicleDef();
  BulletVehicle car(world, def, DefaultBulletVehicleDef(), Vec3(0, 0, 0), 0.3, 0.5);
  CHECK(car.State(0).pose.position_m.z() == doctest::Approx(0.5));

  double z_min = 1e9, z_max = -1e9, vz_max = 0;
  for (int i = 0; i < 300; ++i) {
    world.Step(kDtS);
    const KinematicState k = car.State(0);
    if (world.TimeS() >= 2.0 - 1e-9) {
      z_min = std::min(z_min, k.pose.position_m.z());
      z_max = std::max(z_max, k.pose.position_m.z());
      vz_max = std::max(vz_max, std::abs(k.velocity_mps.z()));
    }
  }
  MESSAGE("settled rear-axle ground point z in [", z_min, ", ", z_max, "] m, |vz| <= ", vz_max, " m/s");
  CHECK(world.TimeS() == doctest::Approx(3.0));
  // Rides at its design height: the rear-axle ground point within 2 cm of the ground, stable to 1 mm.
  CHECK(std::abs(z_min) < 0.02);
  CHECK(std::abs(z_max) < 0.02);
  CHECK(z_max - z_min < 0.001);
  CHECK(vz_max < 0.02);  // residual of about g * substep: gravity acts before the suspension impulse
  CHECK(car.Contacts() == 0);  // chassis box clear of the ground
  for (bool c : car.WheelsInContact()) CHECK(c);
  // Level body, heading kept.
  const Vec3 up = car.State(0).pose.orientation * Vec3::UnitZ();
  CHECK(up.z() > 0.9999);
  CHECK(std::abs(car.SpeedMps()) < 0.01);
}

TEST_CASE("bullet vehicle: full throttle accelerates on flat ground and a full brake stops it") {
  BulletWorld world;
  world.AddFlatGround(0.0);
  const VehicleDef def = DefaultVehicleDef();
  BulletVehicle car(world, def, DefaultBulletVehicleDef(), Vec3(0, 0, 0), 0.0);
  for (int i = 0; i < 50; ++i) world.Step(kDtS);  // settle

  car.SetInput({0.0, 1.0, 0.0});
  double speed_at_1s = 0;
  for (int i = 0; i < 500; ++i) {
    const auto a0 = car.WheelAnglesRad();
    world.Step(kDtS);
    if (i == 99) speed_at_1s = car.SpeedMps();
    // Wheels spin forward by about v dt / r each step (well under pi, so the wrap is unambiguous).
    const auto a1 = car.WheelAnglesRad();
    if (i == 300) {
      const double expect = car.SpeedMps() * kDtS / def.wheel_radius_m;
      for (int w = 0; w < 4; ++w) CHECK(std::remainder(a1[w] - a0[w], 2 * 3.14159265358979) == doctest::Approx(expect).epsilon(0.05));
    }
  }
  const double v_5s = car.SpeedMps();
  const KinematicState k5 = car.State(0);
  MESSAGE("speed after 1 s ", speed_at_1s, " m/s, after 5 s ", v_5s, " m/s, x ", k5.pose.position_m.x(), " m");
  CHECK(speed_at_1s > 3.0);
  CHECK(v_5s > 15.0);
  CHECK(v_5s < 30.0);
  CHECK(std::abs(k5.pose.position_m.y()) < 0.2);  // straight ahead
  CHECK(k5.velocity_mps.x() == doctest::Approx(v_5s).epsilon(0.01));

  car.SetInput({0.0, 0.0, 1.0});
  const double x_brake = k5.pose.position_m.x();
  double t_stop = -1;
  for (int i = 0; i < 500; ++i) {
    world.Step(kDtS);
    if (t_stop < 0 && std::abs(car.SpeedMps()) < 0.05) t_stop = (i + 1) * kDtS;
  }
  const double dist = car.State(0).pose.position_m.x() - x_brake;
  MESSAGE("full brake from ", v_5s, " m/s: stopped after ", t_stop, " s and ", dist, " m");
  CHECK(t_stop > 0);
  CHECK(t_stop < 4.0);
  CHECK(dist < v_5s * v_5s / (2 * 6.0));   // mean deceleration above 6 m/s^2
  CHECK(dist > v_5s * v_5s / (2 * 11.0));  // and friction-limited near mu g (plus drag)
  CHECK(std::abs(car.SpeedMps()) < 0.01);
  CHECK(car.Contacts() == 0);
}

TEST_CASE("bullet vehicle: on a graded road mesh it follows the surface while lane keeping") {
  const road::Road road(GradedRoadDef());
  BulletWorld world;
  world.AddRoadGround(road);
  const VehicleDef def = DefaultVehicleDef();
  const int lane = -1;
  BulletVehicle car(world, def, DefaultBulletVehicleDef(), road.PointAt(5, road.LaneCenterOffset(lane)),
                    road.Heading(5), 0.05);
  double max_dz = 0, max_dt = 0, s = 0;
  int steps = 0, contact_steps = 0;
  while (s < road.Length() - 15 && steps < 3000) {
    const KinematicState k = car.State(0);
    car.SetInput(LaneInput(def, road, k, lane, 12.0, car.SpeedMps()));
    world.Step(kDtS);
    ++steps;
    const KinematicState k1 = car.State(0);
    const road::RoadCoord c = road.Project(k1.pose.position_m);
    s = c.s_m;
    if (world.TimeS() > 1.0) {
      max_dz = std::max(max_dz, std::abs(k1.pose.position_m.z() - road.Height(c.s_m)));
      max_dt = std::max(max_dt, std::abs(c.t_m - road.LaneCenterOffset(lane)));
      if (car.Contacts() > 0) ++contact_steps;
    }
  }
  MESSAGE("graded road: ", steps * kDtS, " s to s = ", s, " m, max |z - Height(s)| ", max_dz,
          " m, max lane offset ", max_dt, " m, speed ", car.SpeedMps(), " m/s");
  CHECK(s >= road.Length() - 15);
  CHECK(max_dz < 0.05);
  CHECK(max_dt < 0.5);
  CHECK(contact_steps == 0);  // the chassis never touches the road mesh
  CHECK(car.SpeedMps() == doctest::Approx(12.0).epsilon(0.1));
  // The body pitches up with the 5 % grade on the final straight.
  const Vec3 fwd = car.State(0).pose.orientation * Vec3::UnitX();
  CHECK(fwd.z() == doctest::Approx(0.05 / std::sqrt(1 + 0.05 * 0.05)).epsilon(0.2));
}

TEST_CASE("bullet vehicle: driving into a static box registers contacts and stops at its face") {
  BulletWorld world;
  world.AddFlatGround(0.0);
  const double face_x = 30.0;
  world.AddBox(Vec3(face_x + 1.0, 0, 1.5), 0.0, Vec3(2, 10, 3));  // a wall 2 m thick
  CHECK(world.StaticObjectCount() == 2);
  const VehicleDef def = DefaultVehicleDef();
  const BulletVehicleDef bdef = DefaultBulletVehicleDef();
  BulletVehicle car(world, def, bdef, Vec3(0, 0, 0), 0.0);
  const double rear_to_front = def.WheelbaseM() + bdef.front_overhang_m;

  car.SetInput({0.0, 1.0, 0.0});
  int max_contacts = 0;
  double max_front = 0, speed_at_hit = -1;
  for (int i = 0; i < 600; ++i) {
    if (i == 450) car.SetInput({0.0, 0.0, 1.0});
    const double v_before = car.SpeedMps();
    world.Step(kDtS);
    max_contacts = std::max(max_contacts, car.Contacts());
    if (speed_at_hit < 0 && car.Contacts() > 0) speed_at_hit = v_before;
    max_front = std::max(max_front, car.State(0).pose.position_m.x() + rear_to_front);
  }
  MESSAGE("hit the wall at ", speed_at_hit, " m/s, up to ", max_contacts, " contact points, ",
          car.ContactSubsteps(), " substeps in contact, front reached x = ", max_front, " m (face at ",
          face_x, " m)");
  CHECK(speed_at_hit > 5.0);
  CHECK(max_contacts > 0);
  CHECK(car.ContactSubsteps() > 0);
  CHECK(max_front < face_x + 0.05);  // did not pass through
  CHECK(std::abs(car.SpeedMps()) < 0.1);
  CHECK(car.State(0).pose.position_m.x() + rear_to_front < face_x + 0.05);
}

TEST_CASE("bullet vehicle: two identical runs give identical final states") {
  KinematicState a, b;
  const uint64_t ha = RunReference(&a);
  const uint64_t hb = RunReference(&b);
  MESSAGE("reference run hash ", ha, ", final rear axle (", a.pose.position_m.x(), ", ", a.pose.position_m.y(),
          ", ", a.pose.position_m.z(), ") m");
  CHECK(ha == hb);
  CHECK(a == b);
}

TEST_CASE("bullet world: steps carry the remainder so sim time does not drift") {
  BulletWorld world;
  world.AddFlatGround();
  for (int i = 0; i < 1000; ++i) world.Step(1.0 / 60.0);
  CHECK(world.TimeS() == doctest::Approx(1000.0 / 60.0).epsilon(1e-4));
  CHECK(std::abs(world.TimeS() - 1000.0 / 60.0) < 0.001 + 1e-9);
}
