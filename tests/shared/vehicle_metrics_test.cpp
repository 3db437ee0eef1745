// Per-vehicle metrics (shared/src/data/vehicle_metrics.cpp): own state in the body frame, road place
// and lane offset against hand-computed projections, and the leader search (same lane only, along the
// lane on a curve, either direction of travel, oncoming vehicles, range, standstill).
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/road/road_generator.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace platoon;
using namespace platoon::data;

namespace {

// Two lanes right, one left, 3.5 m each, reference line from the origin heading +x.
road::RoadDef Layout(std::vector<road::SectionDef> sections) {
  road::RoadDef d = road::DefaultRoadDef();
  d.id = 7;
  d.sections = std::move(sections);
  d.lane_widths_right_m = {3.5, 3.5};
  d.lane_widths_left_m = {3.5};
  return d;
}

const road::RoadNetwork& Straight() {
  static const road::RoadNetwork n({Layout({road::LineSection(1000)})});
  return n;
}

// A left arc of radius 100 m: the reference line is the circle about (0, 100) from the origin.
constexpr double kR = 100.0;
const road::RoadNetwork& Arc() {
  static const road::RoadNetwork n({Layout({road::ArcSection(300, 1.0 / kR)})});
  return n;
}

// A car on the arc at polar angle phi and radius rho about the circle's centre, moving along the
// tangent (counter-clockwise) at `v_mps`.
VehicleSample OnArc(uint64_t id, double phi, double rho, double v_mps) {
  VehicleSample c;
  c.id = id;
  c.position_m = Vec3(rho * std::sin(phi), kR - rho * std::cos(phi), 0);
  c.yaw_rad = phi;
  c.velocity_mps = Vec3(std::cos(phi), std::sin(phi), 0) * v_mps;
  return c;
}

VehicleSample Car(uint64_t id, double x, double y, double yaw, double v_mps) {
  VehicleSample c;
  c.id = id;
  c.position_m = Vec3(x, y, 0);
  c.yaw_rad = yaw;
  c.velocity_mps = Vec3(std::cos(yaw), std::sin(yaw), 0) * v_mps;
  return c;
}

bool Empty(double v) { return std::isnan(v); }

}  // namespace

TEST_CASE("vehicle metrics: own state in the body frame, time from the sample instant") {
  VehicleSample own = Car(1, 12, 3, 0.7, 10);
  own.position_m.z() = 0.25;
  // World acceleration of 1.5 forward and 0.5 to the right in the body frame.
  own.acceleration_mps2 = Vec3(1.5 * std::cos(0.7) + 0.5 * std::sin(0.7), 1.5 * std::sin(0.7) - 0.5 * std::cos(0.7), 0);
  own.yaw_rate_radps = 0.05;
  own.steer = -0.25;
  own.throttle = 0.3;
  own.brake = 0;
  const MetricsRow r = ComputeMetrics(12'340'000'000, own, {}, road::RoadNetwork());
  CHECK(r[Column::kSimTime] == doctest::Approx(12.34));
  CHECK(r[Column::kX] == 12);
  CHECK(r[Column::kZ] == 0.25);
  CHECK(r[Column::kYaw] == doctest::Approx(0.7));
  CHECK(r[Column::kSpeed] == doctest::Approx(10));
  CHECK(r[Column::kAccelLong] == doctest::Approx(1.5));
  CHECK(r[Column::kAccelLat] == doctest::Approx(-0.5));
  CHECK(r[Column::kYawRate] == doctest::Approx(0.05));
  CHECK(r[Column::kSteer] == doctest::Approx(-0.25));
  // No road: every road column and the leader are empty.
  for (Column c : {Column::kRoadId, Column::kS, Column::kLane, Column::kLaneOffset, Column::kHeadway, Column::kTtc})
    CHECK(Empty(r[c]));
  // A yaw beyond pi is written wrapped.
  own.yaw_rad = 3 * M_PI / 2;
  CHECK(ComputeMetrics(0, own, {}, road::RoadNetwork())[Column::kYaw] == doctest::Approx(-M_PI / 2));
}

TEST_CASE("vehicle metrics: lane offset on a curved road matches the hand-computed projection") {
  // On the circle of radius rho about the arc's centre: s = R phi, t = R - rho (left of the reference line +).
  // Lane -1 (right, 3.5 m) has its centre at t = -1.75; 0.4 m further right of it:
  const double phi = 0.7, rho = kR + 1.75 + 0.4;
  const MetricsRow r = ComputeMetrics(0, OnArc(1, phi, rho, 10), {}, Arc());
  CHECK(r[Column::kRoadId] == 7);
  CHECK(r[Column::kS] == doctest::Approx(kR * phi).epsilon(1e-9));
  CHECK(r[Column::kLane] == -1);
  CHECK(r[Column::kLaneOffset] == doctest::Approx(-0.4).epsilon(1e-7));
  // Lane -2 (centre t = -5.25), 0.3 m left of its centre.
  const MetricsRow r2 = ComputeMetrics(0, OnArc(1, 1.2, kR + 5.25 - 0.3, 10), {}, Arc());
  CHECK(r2[Column::kLane] == -2);
  CHECK(r2[Column::kS] == doctest::Approx(kR * 1.2).epsilon(1e-9));
  CHECK(r2[Column::kLaneOffset] == doctest::Approx(0.3).epsilon(1e-7));
  // Lane +1 runs against s: 0.3 m towards the reference line (t = 1.45) is 0.3 m to its driver's left.
  VehicleSample back = OnArc(1, 0.4, kR - 1.45, 10);
  back.yaw_rad += M_PI;
  back.velocity_mps = -back.velocity_mps;
  const MetricsRow r3 = ComputeMetrics(0, back, {}, Arc());
  CHECK(r3[Column::kLane] == 1);
  CHECK(r3[Column::kLaneOffset] == doctest::Approx(0.3).epsilon(1e-7));
  // Off the carriageway (t = -8): the lane is 0 and there is no lane offset.
  const MetricsRow off = ComputeMetrics(0, OnArc(1, 0.7, kR + 8, 10), {}, Arc());
  CHECK(off[Column::kLane] == 0);
  CHECK(Empty(off[Column::kLaneOffset]));
  // Before the road's start (s would be clamped to 0): no road place at all.
  const MetricsRow before = ComputeMetrics(0, Car(1, -20, -1.75, 0, 10), {}, Straight());
  CHECK(Empty(before[Column::kS]));
  CHECK(Empty(before[Column::kLane]));
}

TEST_CASE("vehicle metrics: headway, time headway and TTC to the leader in the same lane") {
  const VehicleSample own = Car(1, 100, -1.75, 0, 20);
  const std::vector<VehicleSample> others = {
      Car(2, 140, -1.75, 0, 15),  // the leader: 40 m ahead between reference points
      Car(3, 130, -5.25, 0, 10),  // closer, but in lane -2
      Car(4, 80, -1.75, 0, 25),   // behind
      Car(5, 170, -1.75, 0, 10),  // ahead of the leader
      Car(1, 110, -1.75, 0, 0),   // itself, if listed
  };
  const MetricsRow r = ComputeMetrics(0, own, others, Straight());
  // Bumper to bumper: 40 m minus the own front overhang (0.8 x 4.5) and the leader's rear one (0.2 x 4.5).
  CHECK(r[Column::kHeadway] == doctest::Approx(35.5));
  CHECK(r[Column::kTimeHeadway] == doctest::Approx(35.5 / 20));
  CHECK(r[Column::kTtc] == doctest::Approx(35.5 / 5));
  // A faster leader: headway, but not closing, so no TTC.
  const std::vector<VehicleSample> faster = {Car(2, 140, -1.75, 0, 25)};
  const MetricsRow f = ComputeMetrics(0, own, faster, Straight());
  CHECK(f[Column::kHeadway] == doctest::Approx(35.5));
  CHECK(Empty(f[Column::kTtc]));
  // At standstill there is no time headway, and behind a standing car no closing either.
  const std::vector<VehicleSample> parked = {Car(2, 140, -1.75, 0, 0)};
  const MetricsRow s = ComputeMetrics(0, Car(1, 100, -1.75, 0, 0), parked, Straight());
  CHECK(s[Column::kHeadway] == doctest::Approx(35.5));
  CHECK(Empty(s[Column::kTimeHeadway]));
  CHECK(Empty(s[Column::kTtc]));
  // Without leader columns asked for, nothing is searched.
  MetricsDef no_leader = DefaultMetricsDef();
  no_leader.leader = false;
  CHECK(Empty(ComputeMetrics(0, own, others, Straight(), no_leader)[Column::kHeadway]));
}

TEST_CASE("vehicle metrics: no leader: only other lanes, behind, or beyond 200 m") {
  const VehicleSample own = Car(1, 100, -1.75, 0, 20);
  const std::vector<VehicleSample> others = {
      Car(3, 120, -5.25, 0, 10),   // lane -2
      Car(4, 110, 1.75, M_PI, 10), // lane +1, oncoming
      Car(5, 60, -1.75, 0, 30),    // behind
      Car(6, 310, -1.75, 0, 10),   // 210 m ahead: 205.5 m bumper to bumper
  };
  const MetricsRow r = ComputeMetrics(0, own, others, Straight());
  CHECK(r[Column::kLane] == -1);
  CHECK(Empty(r[Column::kHeadway]));
  CHECK(Empty(r[Column::kTimeHeadway]));
  CHECK(Empty(r[Column::kTtc]));
  // Within range it is found.
  const std::vector<VehicleSample> near = {Car(6, 300, -1.75, 0, 10)};
  CHECK(ComputeMetrics(0, own, near, Straight())[Column::kHeadway] == doctest::Approx(195.5));
}

TEST_CASE("vehicle metrics: headway on a curve is measured along the lane, not along the reference line") {
  // Both in lane -1 (radius R + 1.75 about the centre), 0.3 rad apart: the lane arc is (R + 1.75) 0.3.
  const double rho = kR + 1.75;
  const VehicleSample own = OnArc(1, 0.5, rho, 10);
  const std::vector<VehicleSample> leader = {OnArc(2, 0.8, rho, 12)};
  const MetricsRow r = ComputeMetrics(0, own, leader, Arc());
  CHECK(r[Column::kHeadway] == doctest::Approx(rho * 0.3 - 4.5).epsilon(1e-9));
  CHECK(r[Column::kTimeHeadway] == doctest::Approx((rho * 0.3 - 4.5) / 10).epsilon(1e-9));
  CHECK(Empty(r[Column::kTtc]));  // the leader is faster
  // The reference-line distance would be R 0.3 = 30 m, 0.5 m less: the check above tells them apart.
  CHECK(std::abs(r[Column::kHeadway] - (kR * 0.3 - 4.5)) > 0.5);
}

TEST_CASE("vehicle metrics: opposite direction: a left-lane driver's leader is at smaller s, oncoming cars close fast") {
  // Own car in lane +1, driving against s (yaw pi): ahead means smaller s.
  const VehicleSample own = Car(1, 300, 1.75, M_PI, 20);
  const std::vector<VehicleSample> others = {
      Car(2, 250, 1.75, M_PI, 10),  // its leader, 50 m ahead
      Car(3, 280, -1.75, 0, 20),    // lane -1: the other direction's lane, nearer
      Car(4, 350, 1.75, M_PI, 10),  // behind it (larger s)
  };
  const MetricsRow r = ComputeMetrics(0, own, others, Straight());
  CHECK(r[Column::kLane] == 1);
  CHECK(r[Column::kLaneOffset] == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(r[Column::kHeadway] == doctest::Approx(45.5));
  CHECK(r[Column::kTtc] == doctest::Approx(45.5 / 10));

  // A wrong-way car in the own lane, head on: its front is the near end, the closing speed is the sum.
  const VehicleSample right_way = Car(1, 100, -1.75, 0, 20);
  const std::vector<VehicleSample> wrong_way = {Car(2, 160, -1.75, M_PI, 10)};
  const MetricsRow h = ComputeMetrics(0, right_way, wrong_way, Straight());
  CHECK(h[Column::kHeadway] == doctest::Approx(60 - 3.6 - 3.6));
  CHECK(h[Column::kTtc] == doctest::Approx((60 - 7.2) / 30));
}

TEST_CASE("vehicle metrics: the sample of an entity state takes pose, velocities, box and controls") {
  protocol::EntityState e;
  e.id = 42;
  e.kind = protocol::EntityKind::kTruck;
  e.kinematics.pose.position_m = Vec3(1, 2, 3);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(0.3, Vec3::UnitZ()));
  e.kinematics.velocity_mps = Vec3(4, 5, 0);
  e.kinematics.angular_velocity_radps = Vec3(0, 0, 0.2);
  e.box_size_m = Vec3(12, 2.5, 3.5);
  e.controls.brake = 0.5f;
  const VehicleSample v = SampleOf(e);
  CHECK(v.id == 42);
  CHECK(v.yaw_rad == doctest::Approx(0.3));
  CHECK(v.length_m == 12);
  CHECK(v.yaw_rate_radps == doctest::Approx(0.2));
  CHECK(v.brake == doctest::Approx(0.5));
  Pose shown{Vec3(7, 8, 0), Quat(Eigen::AngleAxisd(-0.1, Vec3::UnitZ()))};
  const VehicleSample d = SampleOf(e, shown);
  CHECK(d.position_m == Vec3(7, 8, 0));
  CHECK(d.yaw_rad == doctest::Approx(-0.1));
  CHECK(IsVehicle(protocol::EntityKind::kTruck));
  CHECK_FALSE(IsVehicle(protocol::EntityKind::kPedestrian));
  CHECK_FALSE(IsVehicle(protocol::EntityKind::kStaticObject));
}

TEST_CASE("vehicle metrics: the leader found from local foot points is the one global projections give, on a curvy road") {
  // A generated road (curves of radius 100-500 m); own car and 30 others scattered over both lanes
  // within 250 m. The expected leader is computed here from Road::Project alone.
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 11;
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::RoadDef def = road::GenerateRoad(gen, 2000);
  const road::RoadNetwork net({def});
  const road::Road& road = net.Roads().front();
  uint64_t state = 12345;
  auto uniform = [&](double lo, double hi) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  int with_leader = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const double s0 = uniform(300, 1700);
    const int lane = uniform(0, 1) < 0.5 ? -1 : -2;
    const double h0 = road.Heading(s0);
    VehicleSample own = Car(1, 0, 0, h0, 15);
    own.position_m = road.PointAt(s0, road.LaneCenterOffset(lane) + uniform(-0.5, 0.5));
    std::vector<VehicleSample> others;
    for (int i = 0; i < 30; ++i) {
      const double s = s0 + uniform(-250, 250);
      const int l = uniform(0, 1) < 0.5 ? -1 : -2;
      VehicleSample o = Car(static_cast<uint64_t>(10 + i), 0, 0, road.Heading(s), uniform(5, 25));
      o.position_m = road.PointAt(s, road.LaneCenterOffset(l) + uniform(-0.6, 0.6));
      others.push_back(o);
    }
    // Expected: the smallest bumper-to-bumper distance ahead in the own lane, from global projections.
    const road::RoadCoord me = road.Project(own.position_m);
    const double lane_t = road.LaneCenterOffset(me.lane);
    double best = 1e300;
    for (const auto& o : others) {
      const road::RoadCoord c = road.Project(o.position_m);
      if (c.lane != me.lane) continue;
      const double ahead = (c.s_m - me.s_m) - lane_t * (road.Heading(c.s_m) - road.Heading(me.s_m));
      if (ahead <= 0) continue;
      const double gap = ahead - 0.8 * 4.5 * std::cos(own.yaw_rad - road.Heading(me.s_m)) -
                         0.2 * 4.5 * std::cos(o.yaw_rad - road.Heading(c.s_m));
      best = std::min(best, gap);
    }
    const MetricsRow r = ComputeMetrics(0, own, others, net);
    INFO("trial " << trial);
    if (best <= 200) {
      ++with_leader;
      CHECK(std::abs(r[Column::kHeadway] - best) < 1e-6);  // Project refines s to 1e-7 m
    } else {
      CHECK(Empty(r[Column::kHeadway]));
    }
  }
  CHECK(with_leader > 30);
}
