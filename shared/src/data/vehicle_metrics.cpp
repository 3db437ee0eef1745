#include "platoon/data/vehicle_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace platoon::data {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A projection whose foot point is further than this along the road than the point's lateral offset
// explains lies beyond the road's start or end (s is clamped there), in m.
constexpr double kBeyondEndM = 0.01;

double YawOf(const Quat& q) {
  const Vec3 f = q * Vec3::UnitX();
  return std::atan2(f.y(), f.x());
}

// The box's extent along the vehicle's own x axis about its reference point: [-0.2 L, +0.8 L].
double RearOverhang(double length_m) { return 0.5 * length_m - BoxCentreInBody(Vec3(length_m, 0, 0)).x(); }
double FrontOverhang(double length_m) { return 0.5 * length_m + BoxCentreInBody(Vec3(length_m, 0, 0)).x(); }

// Where a vehicle is on one road, as the leader search needs it.
struct OnRoad {
  road::RoadCoord coord;
  double heading_rad = 0;  // reference-line heading at coord.s_m (unwrapped along the road)
  bool on = false;         // within the road's s range
};

// The nearest road of the network (Road::Project: global, about 10 us on a 2 km road).
OnRoad Locate(const road::RoadNetwork& roads, const Vec3& p) {
  OnRoad o;
  o.coord = roads.Project(p);
  const road::Road* r = o.coord.road_id >= 0 ? roads.Find(o.coord.road_id) : nullptr;
  if (!r) return o;
  o.heading_rad = r->Heading(o.coord.s_m);
  const double along2 = o.coord.distance_m * o.coord.distance_m - o.coord.t_m * o.coord.t_m;
  o.on = along2 <= kBeyondEndM * kBeyondEndM;
  return o;
}

// The foot point on `road` next to s0, by Newton's iteration on (p - C(s)) . T(s) = 0 (docs/ROADS.md
// eq. 8), a few Evaluate calls instead of a whole projection. Accepted only on the carriageway
// (a lane holds t) and inside the road's s range; otherwise nullopt and the caller projects globally.
std::optional<OnRoad> LocateNear(const road::Road& road, const Vec3& p, double s0) {
  double s = s0;
  for (int it = 0; it < 12; ++it) {
    const road::RoadPoint rp = road.Evaluate(s);
    const double ch = std::cos(rp.heading_rad), sh = std::sin(rp.heading_rad);
    const double dx = p.x() - rp.position_m.x(), dy = p.y() - rp.position_m.y();
    const double along = dx * ch + dy * sh, lateral = -dx * sh + dy * ch;
    const double denom = 1.0 - rp.curvature_1pm * lateral;
    if (denom < 0.1) return std::nullopt;
    if (std::abs(along) < 1e-8) {
      OnRoad o;
      o.coord.road_id = road.Id();
      o.coord.s_m = rp.s_m;
      o.coord.t_m = lateral;
      o.coord.lane = road.LaneAt(lateral);
      o.coord.distance_m = std::abs(lateral);
      o.heading_rad = rp.heading_rad;
      o.on = true;
      if (o.coord.lane == 0) return std::nullopt;
      return o;
    }
    const double next = s + along / denom;
    if (next < 0 || next > road.Length()) return std::nullopt;  // beyond an end: let Project decide
    s = next;
  }
  return std::nullopt;
}

}  // namespace

MetricsDef DefaultMetricsDef() { return MetricsDef{}; }

bool IsVehicle(protocol::EntityKind kind) {
  using K = protocol::EntityKind;
  return kind == K::kCar || kind == K::kTruck || kind == K::kMotorcycle || kind == K::kBicycle;
}

VehicleSample SampleOf(const protocol::EntityState& e) { return SampleOf(e, e.kinematics.pose); }

VehicleSample SampleOf(const protocol::EntityState& e, const Pose& displayed) {
  VehicleSample v;
  v.id = e.id;
  v.position_m = displayed.position_m;
  v.yaw_rad = YawOf(displayed.orientation);
  v.velocity_mps = e.kinematics.velocity_mps;
  v.acceleration_mps2 = e.kinematics.acceleration_mps2;
  v.yaw_rate_radps = e.kinematics.angular_velocity_radps.z();
  v.length_m = e.box_size_m.x();
  v.steer = e.controls.steer;
  v.throttle = e.controls.throttle;
  v.brake = e.controls.brake;
  return v;
}

MetricsRow ComputeMetrics(int64_t sim_ns, const VehicleSample& own, std::span<const VehicleSample> others,
                          const road::RoadNetwork& roads, const MetricsDef& def, uint64_t* leader_id) {
  MetricsRow row;
  uint64_t best_id = 0;
  if (leader_id) *leader_id = 0;
  // (M1) The vehicle's own state; accelerations turned into the body frame by -yaw.
  const double c = std::cos(own.yaw_rad), s = std::sin(own.yaw_rad);
  const double speed = std::hypot(own.velocity_mps.x(), own.velocity_mps.y());
  row[Column::kSimTime] = NsToS(sim_ns);
  row[Column::kX] = own.position_m.x();
  row[Column::kY] = own.position_m.y();
  row[Column::kZ] = own.position_m.z();
  row[Column::kYaw] = std::remainder(own.yaw_rad, 2 * M_PI);
  row[Column::kSpeed] = speed;
  row[Column::kAccelLong] = c * own.acceleration_mps2.x() + s * own.acceleration_mps2.y();
  row[Column::kAccelLat] = -s * own.acceleration_mps2.x() + c * own.acceleration_mps2.y();
  row[Column::kYawRate] = own.yaw_rate_radps;
  row[Column::kSteer] = own.steer;
  row[Column::kThrottle] = own.throttle;
  row[Column::kBrake] = own.brake;

  // (M2) Place on the nearest road: the foot point on its reference line (s, t) and the lane holding t.
  const OnRoad me = Locate(roads, own.position_m);
  if (!me.on) return row;
  const road::Road& road = *roads.Find(me.coord.road_id);
  row[Column::kRoadId] = me.coord.road_id;
  row[Column::kS] = me.coord.s_m;
  row[Column::kLane] = me.coord.lane;
  if (me.coord.lane == 0) return row;
  // (M3) Lane offset, left of the lane's direction of travel positive: right lanes (< 0) run along s,
  // left lanes (> 0) against it.
  const double lane_t = road.LaneCenterOffset(me.coord.lane);
  const double lane_sign = me.coord.lane < 0 ? 1.0 : -1.0;
  row[Column::kLaneOffset] = lane_sign * (me.coord.t_m - lane_t);
  if (!def.leader) return row;

  // (M4) Direction of travel along s: where the vehicle points, not the lane's nominal direction.
  const double cos_own = std::cos(own.yaw_rad - me.heading_rad);
  const double dir = cos_own >= 0 ? 1.0 : -1.0;
  const double own_front = FrontOverhang(own.length_m) * std::abs(cos_own);
  const auto along_lane = [dir](double heading_rad) -> Vec3 { return Vec3(std::cos(heading_rad), std::sin(heading_rad), 0) * dir; };
  const double own_v = own.velocity_mps.dot(along_lane(me.heading_rad));

  double best_gap = std::numeric_limits<double>::infinity(), best_closing = 0;
  for (const VehicleSample& o : others) {
    if (o.id == own.id) continue;
    // Straight-line pre-filter: the path along the lane is never shorter than the chord.
    if ((o.position_m - own.position_m).head<2>().norm() > def.leader_range_m + own.length_m + o.length_m) continue;
    // Its place on the own road next to where the own lane points, else on the nearest road.
    const double s_guess = me.coord.s_m + (o.position_m - own.position_m).x() * std::cos(me.heading_rad) +
                           (o.position_m - own.position_m).y() * std::sin(me.heading_rad);
    const std::optional<OnRoad> near = LocateNear(road, o.position_m, std::clamp(s_guess, 0.0, road.Length()));
    const OnRoad it = near ? *near : Locate(roads, o.position_m);
    if (!it.on || it.coord.road_id != me.coord.road_id || it.coord.lane != me.coord.lane) continue;
    // (M5) Path length along the lane centre between the two foot points: the offset curve at constant
    // t has ds_lane = (1 - k t) ds, and the integral of k ds is the change of heading.
    const double ahead = dir * ((it.coord.s_m - me.coord.s_m) - lane_t * (it.heading_rad - me.heading_rad));
    if (ahead <= 0) continue;
    // (M6) Bumper to bumper: minus the own front overhang and the other's end nearest to us, each
    // projected on the lane direction (an oncoming vehicle shows its front).
    const double cos_it = std::cos(o.yaw_rad - it.heading_rad) * dir;
    const double near_end = cos_it >= 0 ? RearOverhang(o.length_m) * cos_it : FrontOverhang(o.length_m) * -cos_it;
    const double gap = ahead - own_front - near_end;
    if (gap < best_gap) {
      best_gap = gap;
      best_id = o.id;
      best_closing = own_v - o.velocity_mps.dot(along_lane(it.heading_rad));
    }
  }
  if (!(best_gap <= def.leader_range_m)) return row;
  if (leader_id) *leader_id = best_id;
  // (M7) Time headway on the own speed, TTC on the closing speed along the lane.
  row[Column::kHeadway] = best_gap;
  if (speed >= def.standstill_speed_mps) row[Column::kTimeHeadway] = best_gap / speed;
  if (best_gap > 0 && best_closing >= def.min_closing_speed_mps) row[Column::kTtc] = best_gap / best_closing;
  return row;
}

}  // namespace platoon::data
