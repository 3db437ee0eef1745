#include "platoon/node/route_traffic.hpp"

#include "platoon/config/params.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/vehicle/fmu.hpp"

#include "action_args.hpp"
#include "fmu_open.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace platoon::node {
namespace {

// Lengths of the vehicles and people published, in m (protocol::EntityState::box_size_m).
const Vec3 kCarBox(4.5, 1.8, 1.5);
const Vec3 kPedestrianBox(0.5, 0.6, 1.75);
// The rear axle sits this far behind the box's front face (box from -0.9 to +3.6 m around it).
constexpr double kRearAxleToFrontM = 3.6;
// Lateral error is judged after this much sim time (the start transient).
constexpr int64_t kSettleNs = 5'000'000'000;
// Lane routes are sampled this often along s, in m.
constexpr double kLaneSampleM = 2.0;

Quat YawQuat(double yaw_rad) { return Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ())); }

// vehicle_model = "fmu": route vehicle `index`'s own instance of the node's FMU, started at `start` (CG pose
// and speed), stepped every `step_s`; its messages go to `log`. Refusals become the ConfigError platoon
// check reports, at the fmu key's line.
std::unique_ptr<vehicle::FmuVehicle> OpenRouteFmu(const config::SessionDef& session, const config::NodeDef& node,
                                                  const vehicle::VehicleState& start, size_t index, double step_s,
                                                  const std::shared_ptr<spdlog::logger>& log) {
  return OpenNodeFmu(session, node, fmt::format("{}[{}]", node.name, index),
                     vehicle::FmuStart{start.x_m, start.y_m, start.yaw_rad, start.vx_mps}, step_s, log);
}

}  // namespace

vehicle::VehicleController MakeController(const config::ControllerDef& def) {
  vehicle::VehicleController c;
  if (def.speed_limit_mps > 0) {
    vehicle::SpeedLimiterDef l = vehicle::DefaultSpeedLimiterDef();
    l.max_speed_mps = def.speed_limit_mps;
    l.gain_per_mps = def.limiter_gain_per_mps;
    c.Add(vehicle::SpeedLimiter(l));
  }
  if (def.abs) {
    vehicle::AbsDef a = vehicle::DefaultAbsDef();
    a.utilization = def.abs_utilization;
    a.min_speed_mps = def.abs_min_speed_mps;
    c.Add(vehicle::Abs(a));
  }
  return c;
}

vehicle::VehicleDef NodeVehicleDef(const config::NodeDef& node) {
  vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  if (node.tyre_mu) def.mu = *node.tyre_mu;
  if (const std::string bad = vehicle::ValidateVehicleDef(def); !bad.empty())
    throw config::ConfigError(node.where + ": vehicle: " + bad);
  return def;
}

// --- Polyline ---

Polyline::Polyline(std::vector<Vec3> points_m, bool loop) : points_(std::move(points_m)), loop_(loop) {
  if (points_.size() < 2) throw config::ConfigError("a path needs at least two points");
  if (loop_) points_.push_back(points_.front());
  cumulative_.assign(1, 0.0);
  for (size_t i = 1; i < points_.size(); ++i) {
    const double len = (points_[i] - points_[i - 1]).head<2>().norm();
    if (len < 1e-6) throw config::ConfigError("a path has two consecutive points at the same place");
    cumulative_.push_back(cumulative_.back() + len);
  }
}

double Polyline::Wrap(double s_m) const {
  const double len = Length();
  if (!loop_) return std::clamp(s_m, 0.0, len);
  double w = std::fmod(s_m, len);
  if (w < 0) w += len;
  return w >= len ? 0.0 : w;
}

size_t Polyline::Segment(double s_m) const {
  // The segment [i, i + 1] holding s (the last one for s = Length()).
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), s_m);
  const size_t i = it == cumulative_.begin() ? 0 : static_cast<size_t>(it - cumulative_.begin()) - 1;
  return std::min(i, points_.size() - 2);
}

Vec3 Polyline::PointAt(double s_m) const {
  const double s = Wrap(s_m);
  const size_t i = Segment(s);
  const double t = (s - cumulative_[i]) / (cumulative_[i + 1] - cumulative_[i]);
  return points_[i] + t * (points_[i + 1] - points_[i]);
}

Vec3 Polyline::DirectionAt(double s_m) const {
  const size_t i = Segment(Wrap(s_m));
  Vec3 d = points_[i + 1] - points_[i];
  d.z() = 0;
  return d.normalized();
}

void Polyline::Nearest(const Vec3& p_m, size_t first, size_t last, Projection& best, double& best_d2) const {
  for (size_t i = first; i <= last; ++i) {
    const Eigen::Vector2d a = points_[i].head<2>(), b = points_[i + 1].head<2>(), p = p_m.head<2>();
    const Eigen::Vector2d ab = b - a;
    const double t = std::clamp((p - a).dot(ab) / ab.squaredNorm(), 0.0, 1.0);
    const Eigen::Vector2d q = a + t * ab;
    const double d2 = (p - q).squaredNorm();
    if (d2 < best_d2) {
      best_d2 = d2;
      best.s_m = cumulative_[i] + t * ab.norm();
      // Left of the direction of travel: the cross product's sign.
      const double cross = ab.x() * (p - a).y() - ab.y() * (p - a).x();
      best.lateral_m = (cross >= 0 ? 1.0 : -1.0) * std::sqrt(d2);
    }
  }
}

Polyline::Projection Polyline::Project(const Vec3& p_m) const {
  Projection best;
  double best_d2 = std::numeric_limits<double>::infinity();
  Nearest(p_m, 0, points_.size() - 2, best, best_d2);
  best.s_m = Wrap(best.s_m);
  return best;
}

Polyline::Projection Polyline::ProjectNear(const Vec3& p_m, double hint_s_m, double window_m) const {
  if (2 * window_m >= Length()) return Project(p_m);
  Projection best;
  double best_d2 = std::numeric_limits<double>::infinity();
  const double from = hint_s_m - window_m, to = hint_s_m + window_m;
  if (!loop_ || (from >= 0 && to <= Length())) {
    Nearest(p_m, Segment(std::max(0.0, from)), Segment(std::min(Length(), to)), best, best_d2);
  } else {
    // The window wraps past the closing point: search both ends.
    Nearest(p_m, Segment(Wrap(from)), points_.size() - 2, best, best_d2);
    Nearest(p_m, 0, Segment(Wrap(to)), best, best_d2);
  }
  best.s_m = Wrap(best.s_m);
  return best;
}

Polyline RoutePath(const config::SessionDef& session, const config::NodeDef& node) {
  const config::RouteDef& r = node.route;
  if (!r.waypoints_m.empty()) return Polyline(r.waypoints_m, r.loop);
  if (!session.has_road)
    throw config::ConfigError(r.where + ": a route without waypoints follows a lane of the session road, but the session has no [road]");
  const road::Road road = road::SessionRoad(session.road);
  const double to = r.to_s_m > 0 ? std::min(r.to_s_m, road.Length()) : road.Length();
  std::vector<Vec3> points;
  const int n = std::max(1, static_cast<int>(std::ceil((to - r.from_s_m) / kLaneSampleM)));
  for (int k = 0; k <= n; ++k) points.push_back(road.LaneCenter(r.from_s_m + (to - r.from_s_m) * k / n, r.lane));
  // Left lanes run against s.
  if (r.lane > 0) std::reverse(points.begin(), points.end());
  // A circuit closes on its first point (ValidateSession checked that it comes back within 1 m).
  if (r.loop) points.pop_back();
  return Polyline(std::move(points), r.loop);
}

// --- Route traffic ---

RouteTrafficModule::RouteTrafficModule(const config::SessionDef& session, const config::NodeDef& node,
                                       std::shared_ptr<spdlog::logger> log)
    : name_(node.name),
      rate_hz_(node.module_rate_hz),
      speed_mps_(node.speed_mps),
      path_(RoutePath(session, node)),
      route_(node.route),
      def_(NodeVehicleDef(node)),
      controller_(MakeController(node.controller)),
      log_(std::move(log)) {
  idm_.desired_speed_mps = std::max(0.5, speed_mps_);
  idm_.time_headway_s = 1.2;
  // Vehicle 0 leads: vehicle i starts i spacings behind it, the last at the path's start, at cruise speed
  // (the limiter's speed when that is lower: the limiter only lifts the throttle).
  const int n = node.vehicles;
  const double start_mps = node.controller.speed_limit_mps > 0 ? std::min(speed_mps_, node.controller.speed_limit_mps) : speed_mps_;
  for (int i = 0; i < n; ++i) {
    Car c;
    c.s_m = path_.Wrap((n - 1 - i) * route_.spacing_m);
    const Vec3 dir = path_.DirectionAt(c.s_m);
    const Vec3 cg = path_.PointAt(c.s_m) + def_.cg_to_rear_m * dir;
    c.state.x_m = cg.x();
    c.state.y_m = cg.y();
    c.state.yaw_rad = std::atan2(dir.y(), dir.x());
    c.state.vx_mps = start_mps;
    cars_.push_back(std::move(c));
  }
  // vehicle_model = "fmu": one instance per vehicle, its communication step the module's step. Each
  // instance unzips the FMU into a folder of its own, so each loads its own copy of the library.
  if (node.vehicle_model == "fmu") {
    fmu_step_s_ = 1.0 / rate_hz_;
    for (size_t i = 0; i < cars_.size(); ++i) {
      cars_[i].fmu = OpenRouteFmu(session, node, cars_[i].state, i, fmu_step_s_, log_);
      cars_[i].state = cars_[i].fmu->State();
    }
    if (log_)
      log_->info("route vehicle model: {} instances of FMU {} (\"{}\"), step {} s, optional variables: {}", cars_.size(), node.fmu,
                 cars_.front().fmu->Description().model_name, fmu_step_s_, cars_.front().fmu->OptionalVariables());
  }
}

RouteTrafficModule::~RouteTrafficModule() = default;

bool RouteTrafficModule::FmuFailed(size_t i) const {
  const Car& c = cars_.at(i);
  return c.fmu && c.fmu->Failed();
}

vehicle::VehicleState RouteTrafficModule::StepFmu(size_t i, double dt_s) {
  Car& c = cars_[i];
  if (!c.fmu->Failed()) {
    // The command on a flat road at the path's height, with the node's friction.
    vehicle::FmuInput in;
    in.steer = c.input.steer;
    in.throttle = c.input.throttle;
    in.brake = c.input.brake;
    in.mu.fill(def_.mu);
    in.contact_z_m.fill(path_.PointAt(c.s_m).z());
    // As many communication steps as the module's step spans (one at the module's rate).
    const long n = std::max(1L, std::lround(dt_s / fmu_step_s_));
    bool ok = true;
    for (long k = 0; k < n && ok; ++k) ok = c.fmu->Step(in);
    if (ok) return c.fmu->State();
    // A failed step: this vehicle stops where it is and stays; the others and the session go on.
    if (log_)
      log_->error("route vehicle {} ({}[{}]): {}; it is held where it stands for the rest of the session", i, name_, i, c.fmu->Error());
  }
  ++fmu_held_steps_;
  vehicle::VehicleState held = c.state;
  held.vx_mps = held.vy_mps = held.yaw_rate_radps = 0;
  held.ax_mps2 = held.ay_mps2 = held.yaw_accel_radps2 = 0;
  return held;
}

protocol::EntityState RouteTrafficModule::Truth(size_t i, int64_t sim_ns) const {
  const Car& c = cars_[i];
  protocol::EntityState e;
  e.id = VehicleId(name_, static_cast<uint32_t>(i));
  e.kind = protocol::EntityKind::kCar;
  e.box_size_m = kCarBox;
  e.kinematics = vehicle::ToKinematic(def_, c.state, sim_ns);
  e.kinematics.pose.position_m.z() = path_.PointAt(c.s_m).z();
  e.controls = protocol::Controls{static_cast<float>(c.input.steer), static_cast<float>(c.input.throttle),
                                  static_cast<float>(c.input.brake)};
  e.lights.headlights = true;
  e.lights.brake = c.input.brake > 0.05;
  return e;
}

void RouteTrafficModule::Step(const StepInfo& info, ModuleContext& context) {
  const bool first_step = first_ns_ < 0;
  if (first_step) first_ns_ = info.sim_ns;
  ++steps_;
  const double dt = NsToS(info.dt_ns);
  const double len = path_.Length();
  const double g = 9.81;
  const double brake_force_n = def_.max_brake_torque_nm / def_.wheel_radius_m;
  // Where each rear axle is along the path, from this step's states.
  for (auto& c : cars_) {
    const Vec3 rear(c.state.x_m - def_.cg_to_rear_m * std::cos(c.state.yaw_rad),
                    c.state.y_m - def_.cg_to_rear_m * std::sin(c.state.yaw_rad), 0);
    // Near where it was: a car moves less than 50 m per step.
    const Polyline::Projection p = first_step ? path_.Project(rear) : path_.ProjectNear(rear, c.s_m, 50.0);
    c.s_m = p.s_m;
    if (info.sim_ns - first_ns_ >= kSettleNs) max_lateral_m_ = std::max(max_lateral_m_, std::abs(p.lateral_m));
  }
  if (dt > 0) {
    std::vector<vehicle::VehicleState> next(cars_.size());
    for (size_t i = 0; i < cars_.size(); ++i) {
      const Car& c = cars_[i];
      const double v = c.state.vx_mps;
      // Speed: IDM behind the nearest vehicle ahead on the route, and before an open route's end.
      double gap = std::numeric_limits<double>::infinity(), dv = 0;
      for (size_t j = 0; j < cars_.size(); ++j) {
        if (j == i) continue;
        double ds = cars_[j].s_m - c.s_m;
        if (path_.Loop()) ds = path_.Wrap(ds);
        if (ds <= 0) continue;
        if (ds - kCarBox.x() < gap) {
          gap = ds - kCarBox.x();
          dv = v - cars_[j].state.vx_mps;
        }
      }
      double accel = vehicle::IdmAccel(idm_, v, std::max(0.1, gap), dv);
      if (!path_.Loop()) accel = std::min(accel, vehicle::IdmAccel(idm_, v, std::max(0.1, len - c.s_m - kRearAxleToFrontM), v));
      // The pedals that give that acceleration on a flat road: drive force against rolling resistance and
      // drag, or brake force.
      vehicle::VehicleInput in;
      const double resist_n = def_.rolling_resistance * def_.mass_kg * g + 0.5 * def_.air_density_kgm3 * def_.drag_area_m2 * v * v;
      const double force_n = def_.mass_kg * accel + resist_n;
      if (force_n >= 0) in.throttle = std::clamp(force_n / vehicle::MaxDriveForceN(def_, v), 0.0, 1.0);
      else in.brake = std::clamp(-force_n / brake_force_n, 0.0, 1.0);
      // Steering: pure pursuit on the rear axle toward the path point one look-ahead ahead.
      const double ld = std::clamp(route_.lookahead_min_m + route_.lookahead_gain_s * std::max(0.0, v), route_.lookahead_min_m, 100.0);
      const Vec3 goal = path_.PointAt(c.s_m + ld);
      const double cy = std::cos(c.state.yaw_rad), sy = std::sin(c.state.yaw_rad);
      const double rx = c.state.x_m - def_.cg_to_rear_m * cy, ry = c.state.y_m - def_.cg_to_rear_m * sy;
      const double gx = (goal.x() - rx) * cy + (goal.y() - ry) * sy;
      const double gy = -(goal.x() - rx) * sy + (goal.y() - ry) * cy;
      if (gx * gx + gy * gy > 1e-4)
        in.steer = std::clamp(vehicle::PurePursuitSteerRad(gx, gy, def_.WheelbaseM()) / def_.max_steer_rad, -1.0, 1.0);
      // The controller layer, then the vehicle.
      cars_[i].input = controller_.Apply(def_, c.state, in);
      next[i] = c.fmu ? StepFmu(i, dt) : vehicle::Step(def_, c.state, cars_[i].input, dt);
    }
    for (size_t i = 0; i < cars_.size(); ++i) cars_[i].state = next[i];
  }
  for (size_t i = 0; i < cars_.size(); ++i) context.Publish(Truth(i, info.sim_ns));
}

void RouteTrafficModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  namespace b = config::bounds;
  registry.AddFloat(prefix + "speed_mps", "m/s", b::kTrafficSpeedMps, "Desired speed of the route vehicles (IDM v0; at least 0.5 m/s)",
                    [this] { return idm_.desired_speed_mps; }, [this](double v) { idm_.desired_speed_mps = std::max(0.5, v); });
  registry.AddInt(prefix + "vehicles", "", b::kVehicles, "Vehicles on the route (fixed at start)",
                  [this] { return static_cast<int64_t>(cars_.size()); });
}

void RouteTrafficModule::Summarize(std::vector<std::string>& fields) const {
  fields.push_back("\"route_vehicles\":" + std::to_string(cars_.size()));
  fields.push_back("\"route_steps\":" + std::to_string(steps_));
  fields.push_back("\"route_length_m\":" + fmt::format("{:.1f}", path_.Length()));
  fields.push_back("\"route_max_lateral_error_m\":" + fmt::format("{:.3f}", max_lateral_m_));
  std::string names;
  for (const auto& n : controller_.Names()) names += (names.empty() ? "\"" : ",\"") + n + "\"";
  fields.push_back("\"route_controller\":[" + names + "]");
  if (UsesFmu()) {
    // The FMU vehicles held by a failed step, and the first failure's message.
    size_t failed = 0;
    std::string error;
    for (const Car& c : cars_)
      if (c.fmu->Failed()) {
        ++failed;
        if (error.empty()) error = c.fmu->Error();
      }
    fields.push_back("\"route_fmu_failed_vehicles\":" + std::to_string(failed));
    fields.push_back("\"route_fmu_held_steps\":" + std::to_string(fmu_held_steps_));
    fields.push_back("\"route_fmu_error\":" + session_log::JsonQuote(error));
  }
}

// --- Pedestrians ---

namespace {

// Walker `def` on `path`, `d_m` along it unfolded (before wrapping or turning back), walking at `speed_mps`.
protocol::EntityState Walker(const config::PedestrianDef& def, const Polyline& path, uint64_t id, int64_t sim_ns,
                             double d_m, double speed_mps) {
  const double len = path.Length();
  double s = 0;
  Vec3 dir;
  if (path.Loop()) {
    s = path.Wrap(d_m);
    dir = path.DirectionAt(s);
  } else if (!def.turn_back) {
    s = std::clamp(d_m, 0.0, len);
    dir = path.DirectionAt(std::clamp(s, 0.0, len - 1e-9));
    if (d_m >= len) speed_mps = 0;  // arrived: stands at the end
  } else {
    // To the end and back: a period of twice the length.
    double m = std::fmod(d_m, 2 * len);
    if (m < 0) m += 2 * len;
    if (m <= len) {
      s = m;
      dir = path.DirectionAt(std::min(s, len - 1e-9));
    } else {
      s = 2 * len - m;
      dir = -path.DirectionAt(std::max(s - 1e-9, 0.0));
    }
  }
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kPedestrian;
  e.box_size_m = kPedestrianBox;
  e.kinematics.stamp_ns = sim_ns;
  e.kinematics.pose = Pose{path.PointAt(s), YawQuat(std::atan2(dir.y(), dir.x()))};
  e.kinematics.velocity_mps = speed_mps * dir;
  return e;
}

}  // namespace

protocol::EntityState PedestrianTruth(const config::NodeDef& node, uint32_t index, int64_t sim_ns) {
  const config::PedestrianDef& def = node.pedestrians.at(index);
  return Walker(def, Polyline(def.waypoints_m, def.loop), VehicleId(node.name, index), sim_ns,
                def.start_offset_m + def.speed_mps * NsToS(sim_ns), def.speed_mps);
}

double ProfileSpeed(const std::vector<std::pair<double, double>>& points, double tau_s) {
  if (points.empty()) return 0;
  if (tau_s <= points.front().first) return points.front().second;
  for (size_t k = 1; k < points.size(); ++k) {
    const auto& [t0, v0] = points[k - 1];
    const auto& [t1, v1] = points[k];
    if (tau_s <= t1) return t1 > t0 ? v0 + (v1 - v0) * (tau_s - t0) / (t1 - t0) : v1;
  }
  return points.back().second;
}

double ProfileDistance(const std::vector<std::pair<double, double>>& points, double tau_s) {
  if (points.empty() || tau_s <= 0) return 0;
  // Before the first point its speed; then trapezoids (exact for the linear pieces); after the last, its speed.
  double d = points.front().second * std::min(tau_s, std::max(points.front().first, 0.0));
  for (size_t k = 1; k < points.size(); ++k) {
    const double t0 = std::max(points[k - 1].first, 0.0), t1 = points[k].first;
    if (tau_s <= t0 || t1 <= t0) continue;
    const double end = std::min(tau_s, t1);
    d += 0.5 * (ProfileSpeed(points, t0) + ProfileSpeed(points, end)) * (end - t0);
  }
  const double last = std::max(points.back().first, 0.0);
  if (tau_s > last) d += points.back().second * (tau_s - last);
  return d;
}

PedestrianModule::PedestrianModule(const config::NodeDef& node) : node_(node), walks_(node.pedestrians.size()) {
  for (const auto& p : node_.pedestrians) paths_.emplace_back(p.waypoints_m, p.loop);
}

std::pair<double, double> PedestrianModule::Along(uint32_t index, int64_t sim_ns) const {
  const config::PedestrianDef& def = node_.pedestrians[index];
  const Walk& w = walks_[index];
  if (!w.driven) return {def.start_offset_m + def.speed_mps * NsToS(sim_ns), def.speed_mps};
  const double tau = NsToS(sim_ns - w.anchor_ns);
  return {w.anchor_m + ProfileDistance(w.profile, tau), ProfileSpeed(w.profile, tau)};
}

std::optional<protocol::EntityState> PedestrianModule::Truth(uint32_t index, int64_t sim_ns) const {
  if (index >= walks_.size() || walks_[index].removed) return std::nullopt;
  const auto [d, v] = Along(index, sim_ns);
  return Walker(node_.pedestrians[index], paths_[index], VehicleId(node_.name, index), sim_ns, d, v);
}

void PedestrianModule::Step(const StepInfo& info, ModuleContext& context) {
  ++steps_;
  for (uint32_t i = 0; i < walks_.size(); ++i)
    if (const auto e = Truth(i, info.sim_ns)) context.Publish(*e);
}

void PedestrianModule::OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) {
  if (!IsActionForThisNode(event, context)) return;
  const auto walker = VehicleIndexOf(event, node_.name);
  if (!walker || *walker >= walks_.size() || walks_[*walker].removed) {
    ++actions_refused_;
    return;
  }
  const uint32_t index = *walker;
  Walk& w = walks_[index];
  const std::string& a = event.text;
  const std::string& d = event.detail;
  // From where it is at the action's instant, with the speed it has then.
  const auto [at_m, v_mps] = Along(index, event.sim_time_ns);
  std::vector<std::pair<double, double>> profile;
  if (a == "speed_profile") {
    const auto p = JsonNumbers(d, "points");
    for (size_t k = 0; k + 1 < p.size(); k += 2) profile.emplace_back(p[k], std::max(0.0, p[k + 1]));
  } else if (a == "stop") {
    const double decel = std::max(JsonNumber(d, "decel_mps2", 4), 1e-3);
    profile = {{0.0, v_mps}, {v_mps / decel, 0.0}};
  } else if (a == "resume") {
    profile = {{0.0, node_.pedestrians[index].speed_mps}};
  } else if (a == "remove") {
    w.removed = true;
    ++actions_done_;
    return;
  }
  bool ordered = !profile.empty();
  for (size_t k = 1; k < profile.size(); ++k) ordered = ordered && profile[k].first >= profile[k - 1].first;
  if (!ordered) {
    ++actions_refused_;
    return;
  }
  w.driven = true;
  w.anchor_ns = event.sim_time_ns;
  w.anchor_m = at_m;
  w.profile = std::move(profile);
  ++actions_done_;
}

void PedestrianModule::Summarize(std::vector<std::string>& fields) const {
  fields.push_back("\"pedestrians\":" + std::to_string(node_.pedestrians.size()));
  fields.push_back("\"pedestrian_steps\":" + std::to_string(steps_));
  fields.push_back("\"pedestrian_actions\":" + std::to_string(actions_done_) + ",\"pedestrian_actions_refused\":" +
                   std::to_string(actions_refused_));
}

}  // namespace platoon::node
