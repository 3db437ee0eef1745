#include "platoon/vehicle/road_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace platoon::vehicle {

RoadTraffic::RoadTraffic(const road::Road& road, const RoadTrafficDef& def)
    : road_(road), def_(def), length_m_(road.Length()), speed_limit_mps_(road.Def().speed_limit_mps) {
  Place();
}

RoadTraffic::RoadTraffic(const road::EndlessRoad& road, const RoadTrafficDef& def)
    : road_(road.Layout()),
      def_(def),
      length_m_(road.WindowEnd() - road.WindowStart()),
      speed_limit_mps_(road.Layout().Def().speed_limit_mps),
      endless_(&road),
      spawn_rng_(def.seed ^ 0x5eed5eed5eed5eedull) {
  Place();
}

void RoadTraffic::Place() {
  // The driving lanes right of the reference line: on a road whose lanes vary along s (an OpenDRIVE map),
  // those of type driving in every lane section (sidewalks, shoulders, borders... are drawn and seen, not
  // driven).
  const int right = road_.HasLaneProfile() ? road_.LanesRightAt(0.0) : road_.LanesRight();
  for (int l = 1; l <= right; ++l) {
    bool driving = true;
    if (road_.HasLaneProfile())
      for (const auto& sec : road_.Def().lane_sections)
        driving = driving && l <= road_.LanesRightAt(sec.s_m) && road_.IsDrivingLane(sec.s_m, -l);
    if (driving) lanes_.push_back(-l);
  }
  if (lanes_.empty()) lanes_.push_back(1);  // a road with left lanes only: drive those
  std::mt19937_64 rng(def_.seed);
  std::uniform_real_distribution<double> spread(-def_.desired_speed_spread, def_.desired_speed_spread);
  const int n = std::max(0, def_.vehicles);
  const int per_lane = (n + static_cast<int>(lanes_.size()) - 1) / static_cast<int>(lanes_.size());
  const double spacing = length_m_ / std::max(1, per_lane);
  // On an endless road, placement is over the window, from its start.
  const double base_s = endless_ ? endless_->WindowStart() : 0.0;
  for (int i = 0; i < n; ++i) {
    TrafficCar c;
    c.index = static_cast<uint32_t>(i);
    c.lane = c.target_lane = lanes_[static_cast<size_t>(i) % lanes_.size()];
    // Lanes are staggered by half a spacing so neighbours do not start side by side.
    c.s_m = std::fmod((i / static_cast<int>(lanes_.size())) * spacing +
                          0.5 * spacing * static_cast<double>(static_cast<size_t>(i) % lanes_.size()),
                      length_m_);
    c.s_m = std::fmod(c.s_m + def_.start_offset_m + length_m_, length_m_) + base_s;
    spread_.push_back(1.0 + spread(rng));
    c.desired_speed_mps = def_.idm.desired_speed_mps * spread_.back();
    // The road's speed limit caps everybody's wish.
    if (speed_limit_mps_ > 0) c.desired_speed_mps = std::min(c.desired_speed_mps, speed_limit_mps_);
    c.speed_mps = 0.5 * c.desired_speed_mps;
    c.cooldown_s = def_.lane_change_cooldown_s * (static_cast<double>(i % 7) / 7.0);
    cars_.push_back(c);
  }
  next_index_ = static_cast<uint32_t>(n);
  // Fixed lanes (vehicle_lanes): every vehicle's lane first, then each lane's vehicles evenly spaced along it,
  // lanes staggered as above.
  if (!def_.vehicle_lanes.empty()) {
    std::map<int, std::vector<size_t>> in_lane;
    for (size_t i = 0; i < cars_.size(); ++i) {
      const int fixed = i < def_.vehicle_lanes.size() ? def_.vehicle_lanes[i] : 0;
      if (fixed != 0 && std::find(lanes_.begin(), lanes_.end(), fixed) != lanes_.end())
        cars_[i].lane = cars_[i].target_lane = fixed;
      in_lane[cars_[i].lane].push_back(i);
    }
    for (const auto& [lane, members] : in_lane) {
      const double lane_spacing = length_m_ / static_cast<double>(members.size());
      const auto k = static_cast<double>(std::find(lanes_.begin(), lanes_.end(), lane) - lanes_.begin());
      for (size_t j = 0; j < members.size(); ++j) {
        const double s = static_cast<double>(j) * lane_spacing + 0.5 * spacing * k / static_cast<double>(lanes_.size());
        cars_[members[j]].s_m = std::fmod(s + def_.start_offset_m + 2 * length_m_, length_m_) + base_s;
      }
    }
  }
  // A placed first vehicle (a lead car): everybody moves with it, so the spacing stays as it was.
  if (def_.first_s_m >= 0 && !cars_.empty()) {
    const double shift = def_.first_s_m + base_s - cars_[0].s_m;
    for (auto& c : cars_)
      c.s_m = endless_ ? base_s + std::fmod(c.s_m - base_s + shift + 2 * length_m_, length_m_) : Wrap(c.s_m + shift);
    if (std::find(lanes_.begin(), lanes_.end(), def_.first_lane) != lanes_.end() && !FixedLane(cars_[0]))
      cars_[0].lane = cars_[0].target_lane = def_.first_lane;
    if (def_.first_speed_mps >= 0) {
      cars_[0].desired_speed_mps = std::max(def_.first_speed_mps, 0.1);
      cars_[0].speed_mps = def_.first_speed_mps;
    }
    cars_[0].cooldown_s = def_.lane_change_cooldown_s;
  }
}

double RoadTraffic::Uniform(double lo, double hi) {
  // 53 random bits to [0, 1): the same on every standard library.
  return lo + (hi - lo) * (static_cast<double>(spawn_rng_() >> 11) * 0x1.0p-53);
}

RoadTraffic::Recycled RoadTraffic::Recycle(const std::vector<Vec3>& drivers_m, const std::vector<double>& drivers_s_m) {
  Recycled out;
  if (!endless_) return out;
  double rear = endless_->WindowStart(), front = rear;
  if (!drivers_s_m.empty()) {
    rear = *std::min_element(drivers_s_m.begin(), drivers_s_m.end());
    front = *std::max_element(drivers_s_m.begin(), drivers_s_m.end());
  }
  auto clear = [&](const Vec3& p) {
    for (const auto& d : drivers_m)
      if ((p - d).head<2>().norm() < def_.spawn_clear_m) return false;
    return true;
  };
  const double end_margin = 100.0;
  const double lo = rear - def_.keep_behind_m;
  const double hi = std::min(front + def_.keep_ahead_m, endless_->WindowEnd() - end_margin);
  for (size_t i = 0; i < cars_.size();) {
    const TrafficCar& c = cars_[i];
    const bool off_road = c.s_m > endless_->WindowEnd() - end_margin || c.s_m < endless_->WindowStart();
    // Without drivers, only a vehicle that runs out of road goes.
    const bool far = !drivers_s_m.empty() && (c.s_m < lo || c.s_m > hi) && clear(endless_->PointAt(c.s_m, LateralOffsetM(c)));
    if (off_road || far) {
      out.removed.push_back(c.index);
      commands_.erase(c.index);
      cars_.erase(cars_.begin() + static_cast<long>(i));
      index_dirty_ = true;
    } else {
      ++i;
    }
  }
  // Spawn zones: ahead of the foremost driver and behind the last, outside spawn_clear_m of all of them.
  const double ahead_lo = front + def_.spawn_clear_m, ahead_hi = hi;
  const double behind_lo = std::max(lo, endless_->WindowStart()), behind_hi = rear - def_.spawn_clear_m;
  for (int attempt = 0; attempt < 4 && out.spawned.size() < 2 &&
                        cars_.size() < static_cast<size_t>(std::max(0, def_.vehicles)) && cars_.size() < kMaxVehicles;
       ++attempt) {
    const bool behind = behind_hi > behind_lo && (ahead_hi <= ahead_lo || Uniform(0, 1) < 0.3);
    const double zlo = behind ? behind_lo : ahead_lo, zhi = behind ? behind_hi : ahead_hi;
    const double u_lane = Uniform(0, 1), u_s = Uniform(0, 1), u_speed = Uniform(-1, 1);
    if (!(zhi > zlo)) continue;
    const double s = zlo + (zhi - zlo) * u_s;
    const int lane = lanes_[std::min(lanes_.size() - 1, static_cast<size_t>(u_lane * static_cast<double>(lanes_.size())))];
    double desired = def_.idm.desired_speed_mps * (1.0 + def_.desired_speed_spread * u_speed);
    if (speed_limit_mps_ > 0) desired = std::min(desired, speed_limit_mps_);
    // Room in the lane, and no faster start than the vehicle ahead allows.
    bool room = true;
    double speed = desired;
    for (const auto& o : cars_) {
      if (!Occupies(o, lane)) continue;
      const double ds = o.s_m - s;
      if (std::abs(ds) < def_.spawn_gap_m) room = false;
      if (ds > 0 && ds < 4 * def_.spawn_gap_m) speed = std::min(speed, o.speed_mps);
    }
    for (const auto& e : external_)
      if (e.lane == lane && std::abs(e.s_m - s) < def_.spawn_gap_m) room = false;
    if (!room || !clear(endless_->PointAt(s, road_.LaneCenterOffset(lane)))) continue;
    if (const auto index = Spawn(s, lane, desired)) {
      TrafficCar& c = cars_.back();
      c.speed_mps = speed;
      c.cooldown_s = def_.lane_change_cooldown_s;
      out.spawned.push_back(*index);
    }
  }
  return out;
}

const TrafficCar* RoadTraffic::Find(uint32_t index) const {
  for (const auto& c : cars_)
    if (c.index == index) return &c;
  return nullptr;
}

const CarCommand* RoadTraffic::CommandOf(uint32_t index) const {
  const auto it = commands_.find(index);
  return it == commands_.end() ? nullptr : &it->second;
}

bool RoadTraffic::Brake(uint32_t index, double decel_mps2, double duration_s) {
  if (!Find(index)) return false;
  CarCommand c;
  c.kind = CarCommand::Kind::kBrake;
  c.decel_mps2 = std::abs(decel_mps2);
  c.start_s = time_s_;
  c.until_s = duration_s > 0 ? time_s_ + duration_s : std::numeric_limits<double>::infinity();
  commands_[index] = c;
  return true;
}

bool RoadTraffic::Stop(uint32_t index, double decel_mps2) {
  if (!Find(index)) return false;
  CarCommand c;
  c.kind = CarCommand::Kind::kStop;
  c.decel_mps2 = std::abs(decel_mps2);
  c.start_s = time_s_;
  commands_[index] = c;
  return true;
}

bool RoadTraffic::FollowProfile(uint32_t index, std::vector<std::pair<double, double>> points) {
  if (!Find(index) || points.empty()) return false;
  CarCommand c;
  c.kind = CarCommand::Kind::kProfile;
  c.start_s = time_s_;
  c.profile = std::move(points);
  commands_[index] = std::move(c);
  return true;
}

bool RoadTraffic::Resume(uint32_t index) {
  if (!Find(index)) return false;
  commands_.erase(index);
  return true;
}

bool RoadTraffic::ChangeLane(uint32_t index, int lane) {
  for (auto& c : cars_) {
    if (c.index != index) continue;
    if (lane == c.lane || std::find(lanes_.begin(), lanes_.end(), lane) == lanes_.end()) return false;
    c.target_lane = lane;
    c.lane_change_progress = 0;
    c.cooldown_s = def_.lane_change_cooldown_s;
    index_dirty_ = true;
    return true;
  }
  return false;
}

double RoadTraffic::ShapeAt(Shape shape, double u) {
  u = std::clamp(u, 0.0, 1.0);
  switch (shape) {
    case Shape::kStep: return 1.0;
    case Shape::kLinear: return u;
    case Shape::kSinusoidal: return 0.5 * (1.0 - std::cos(M_PI * u));
    case Shape::kCubic: break;
  }
  return u * u * (3.0 - 2.0 * u);
}

bool RoadTraffic::OnPath(uint32_t index) const {
  const auto it = lateral_.find(index);
  return it != lateral_.end() && !it->second.path.empty();
}

double RoadTraffic::OffsetNow(const Lateral& l) const {
  if (l.offset_duration_s <= 0) return l.offset_to_m;
  const double u = (time_s_ - l.offset_start_s) / l.offset_duration_s;
  return l.offset_from_m + (l.offset_to_m - l.offset_from_m) * ShapeAt(l.offset_shape, u);
}

bool RoadTraffic::ChangeLane(uint32_t index, int lane, double duration_s, Shape shape, double offset_m) {
  const TrafficCar* car = Find(index);
  if (!car || !ChangeLane(index, lane)) return false;
  // Progress counts from now; the offset in the target lane is reached with the change.
  Lateral& l = lateral_[index];
  const double was = OffsetNow(l);
  l.change_start_s = time_s_;
  l.change_duration_s = shape == Shape::kStep ? 0.0 : std::max(0.0, duration_s);
  l.change_shape = shape;
  l.offset_from_m = was;
  l.offset_to_m = offset_m;
  l.offset_start_s = time_s_;
  l.offset_duration_s = l.change_duration_s;
  l.offset_shape = shape;
  return true;
}

bool RoadTraffic::FollowPath(uint32_t index, std::vector<std::pair<double, double>> points) {
  const TrafficCar* car = Find(index);
  if (!car || points.empty() || car->s_m >= points.back().first) return false;
  for (size_t k = 1; k < points.size(); ++k)
    if (!(points[k].first > points[k - 1].first)) return false;
  // From where it is now (a lane change under way included) to the first point ahead of it.
  const double t_now = LateralOffsetM(*car);
  while (!points.empty() && points.front().first <= car->s_m) points.erase(points.begin());
  points.insert(points.begin(), {car->s_m, t_now});
  lateral_[index].path = std::move(points);
  return true;
}

bool RoadTraffic::SetLaneOffset(uint32_t index, double offset_m, double duration_s, Shape shape) {
  if (!Find(index)) return false;
  Lateral& l = lateral_[index];
  l.offset_from_m = OffsetNow(l);
  l.offset_to_m = offset_m;
  l.offset_start_s = time_s_;
  l.offset_duration_s = shape == Shape::kStep ? 0.0 : std::max(0.0, duration_s);
  l.offset_shape = shape;
  return true;
}

std::optional<uint32_t> RoadTraffic::Spawn(double s_m, int lane, double speed_mps) {
  if (cars_.size() >= kMaxVehicles || std::find(lanes_.begin(), lanes_.end(), lane) == lanes_.end())
    return std::nullopt;
  TrafficCar c;
  c.index = next_index_++;
  c.lane = c.target_lane = lane;
  c.s_m = Wrap(s_m);
  c.speed_mps = speed_mps;
  c.desired_speed_mps = speed_mps > 0 ? speed_mps : def_.idm.desired_speed_mps;
  c.cooldown_s = def_.lane_change_cooldown_s;
  if (spread_.size() <= c.index) spread_.resize(c.index + 1, c.desired_speed_mps / std::max(def_.idm.desired_speed_mps, 0.1));
  cars_.push_back(c);
  index_dirty_ = true;
  return c.index;
}

bool RoadTraffic::Remove(uint32_t index) {
  const auto it = std::find_if(cars_.begin(), cars_.end(), [&](const TrafficCar& c) { return c.index == index; });
  if (it == cars_.end()) return false;
  cars_.erase(it);
  commands_.erase(index);
  lateral_.erase(index);
  index_dirty_ = true;
  return true;
}

double RoadTraffic::CommandedAccel(TrafficCar& car, double idm_accel, double dt_s) {
  const auto it = commands_.find(car.index);
  if (it == commands_.end()) return idm_accel;
  CarCommand& cmd = it->second;
  switch (cmd.kind) {
    case CarCommand::Kind::kBrake:
      // Ends at its time, or at standstill when it had none; never brakes less than IDM wants.
      if (time_s_ >= cmd.until_s || (std::isinf(cmd.until_s) && car.speed_mps <= 0)) break;
      return std::min(idm_accel, -cmd.decel_mps2);
    case CarCommand::Kind::kStop:
      return car.speed_mps > 0 ? std::min(idm_accel, -cmd.decel_mps2) : -cmd.decel_mps2;
    case CarCommand::Kind::kProfile: {
      // The speed the profile asks for at the end of this step, linear between points.
      const double t = time_s_ - cmd.start_s + dt_s;
      const auto& p = cmd.profile;
      if (t > p.back().first + dt_s) break;
      double v = p.back().second;
      if (t <= p.front().first) v = p.front().second;
      for (size_t k = 1; k < p.size(); ++k)
        if (t <= p[k].first) {
          const double u = (t - p[k - 1].first) / (p[k].first - p[k - 1].first);
          v = p[k - 1].second + u * (p[k].second - p[k - 1].second);
          break;
        }
      return std::clamp((v - car.speed_mps) / dt_s, -10.0, 6.0);
    }
  }
  commands_.erase(it);
  return idm_accel;
}

void RoadTraffic::UpdateDesiredSpeeds() {
  for (auto& c : cars_) {
    // Vehicles added later (spawned) have no spread of their own: they take the mean.
    const double f = c.index < spread_.size() ? spread_[c.index] : 1.0;
    c.desired_speed_mps = def_.idm.desired_speed_mps * f;
    if (speed_limit_mps_ > 0) c.desired_speed_mps = std::min(c.desired_speed_mps, speed_limit_mps_);
  }
}

void RoadTraffic::SetDesiredSpeed(double mps) {
  def_.idm.desired_speed_mps = mps;
  UpdateDesiredSpeeds();
}

void RoadTraffic::SetSpeedLimit(double mps) {
  speed_limit_mps_ = mps;
  UpdateDesiredSpeeds();
}

std::optional<double> RoadTraffic::LeadKeepingAccel(const TrafficCar& car) const {
  for (const ExternalCar& e : external_) {
    if (e.id != def_.lead_of_id) continue;
    // Along-road distance ahead of it, the shorter way round on a closed road.
    double ds = car.s_m - e.s_m;
    if (!endless_) {
      ds = std::fmod(ds, length_m_);
      if (ds > 0.5 * length_m_) ds -= length_m_;
      if (ds < -0.5 * length_m_) ds += length_m_;
    }
    const double gap_error_m = ds - def_.vehicle_length_m - def_.lead_gap_m;  // > 0: too far ahead
    // A critically damped spring on the gap (omega 0.32 1/s, zeta 0.95): settles in about 15 s without overshoot.
    constexpr double kStiffness = 0.1, kDamping = 0.6;
    const double a = -kStiffness * gap_error_m + kDamping * (e.speed_mps - car.speed_mps);
    return std::clamp(a, -def_.idm.comfort_decel_mps2, def_.idm.max_accel_mps2);
  }
  return std::nullopt;
}

double RoadTraffic::Wrap(double ds) const {
  if (endless_) return ds;
  ds = std::fmod(ds, length_m_);
  return ds < 0 ? ds + length_m_ : ds;
}

double RoadTraffic::Ahead(double ds) const {
  if (endless_) return ds >= 0 ? ds : std::numeric_limits<double>::infinity();
  return Wrap(ds);
}

bool RoadTraffic::Occupies(const TrafficCar& car, int lane) const {
  // A vehicle changing lanes occupies both lanes until it has fully arrived.
  return car.lane == lane || car.target_lane == lane;
}

RoadTraffic::Neighbour RoadTraffic::LeaderScan(int lane, double s_m, int self) const {
  Neighbour best;
  double best_ds = std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < cars_.size(); ++j) {
    if (static_cast<int>(j) == self || !Occupies(cars_[j], lane)) continue;
    const double ds = Ahead(cars_[j].s_m - s_m);
    if (ds < best_ds) {
      best_ds = ds;
      best.car = static_cast<int>(j);
    }
  }
  for (size_t j = 0; j < external_.size(); ++j) {
    if (external_[j].lane != lane || -2 - static_cast<int>(j) == self) continue;
    const double ds = Ahead(external_[j].s_m - s_m);
    if (ds < best_ds) {
      best_ds = ds;
      best.car = -2 - static_cast<int>(j);
    }
  }
  if (best.car != -1) best.gap_m = best_ds - def_.vehicle_length_m;
  return best;
}

void RoadTraffic::BuildIndex() const {
  by_lane_.resize(lanes_.size());
  for (auto& l : by_lane_) l.clear();
  const int n = static_cast<int>(cars_.size());
  for (size_t k = 0; k < lanes_.size(); ++k) {
    for (int j = 0; j < n; ++j)
      if (Occupies(cars_[static_cast<size_t>(j)], lanes_[k])) by_lane_[k].push_back(Slot{cars_[static_cast<size_t>(j)].s_m, j});
    for (size_t j = 0; j < external_.size(); ++j)
      if (external_[j].lane == lanes_[k]) by_lane_[k].push_back(Slot{external_[j].s_m, n + static_cast<int>(j)});
    std::sort(by_lane_[k].begin(), by_lane_[k].end());
  }
  index_dirty_ = false;
}

const std::vector<RoadTraffic::Slot>* RoadTraffic::LaneSlots(int lane) const {
  const auto at = std::find(lanes_.begin(), lanes_.end(), lane);
  if (at == lanes_.end()) return nullptr;
  if (index_dirty_) BuildIndex();
  return &by_lane_[static_cast<size_t>(at - lanes_.begin())];
}

// The indexed searches give exactly what the scans give: they visit the lane's vehicles in the order of
// their distance (ahead for the leader, behind for the follower; rounding keeps that order monotone),
// starting a hair before `s_m` (vehicles within 1e-6 m behind are "almost a lap ahead" on a periodic road),
// keep the smallest distance with the scans' tie rule (lower key first), and stop at the first vehicle
// further than the best.
RoadTraffic::Neighbour RoadTraffic::Leader(int lane, double s_m, int self) const {
  const std::vector<Slot>* slots = def_.spatial_index ? LaneSlots(lane) : nullptr;
  if (!slots) return LeaderScan(lane, s_m, self);
  const std::vector<Slot>& l = *slots;
  const size_t m = l.size();
  const int n = static_cast<int>(cars_.size());
  const size_t start = static_cast<size_t>(
      std::lower_bound(l.begin(), l.end(), s_m - 1e-6, [](const Slot& a, double s) { return a.s_m < s; }) - l.begin());
  Neighbour best;
  double best_ds = std::numeric_limits<double>::infinity();
  int best_key = std::numeric_limits<int>::max();
  for (size_t k = 0; k < m; ++k) {
    if (endless_ && start + k >= m) break;  // an endless road does not close on itself
    const Slot& e = l[(start + k) % m];
    const int id = e.key < n ? e.key : -2 - (e.key - n);
    if (id == self) continue;
    const double ds = Ahead(e.s_m - s_m);
    if (best.car != -1 && ds > best_ds) break;
    if (ds < best_ds || (best.car != -1 && ds == best_ds && e.key < best_key)) {
      best_ds = ds;
      best_key = e.key;
      best.car = id;
    }
  }
  if (best.car != -1) best.gap_m = best_ds - def_.vehicle_length_m;
  return best;
}

RoadTraffic::Neighbour RoadTraffic::Follower(int lane, double s_m, int self) const {
  const std::vector<Slot>* slots = def_.spatial_index ? LaneSlots(lane) : nullptr;
  if (!slots) return FollowerScan(lane, s_m, self);
  const std::vector<Slot>& l = *slots;
  const size_t m = l.size();
  const int n = static_cast<int>(cars_.size());
  // One past the last vehicle at or before s_m + 1e-6; the scan goes backwards from there.
  const size_t end = static_cast<size_t>(
      std::upper_bound(l.begin(), l.end(), s_m + 1e-6, [](double s, const Slot& a) { return s < a.s_m; }) - l.begin());
  Neighbour best;
  double best_ds = std::numeric_limits<double>::infinity();
  int best_key = std::numeric_limits<int>::max();
  for (size_t k = 0; k < m; ++k) {
    if (endless_ && k >= end) break;
    const Slot& e = l[(end + m - 1 - k) % m];
    const int id = e.key < n ? e.key : -2 - (e.key - n);
    if (id == self) continue;
    const double ds = Ahead(s_m - e.s_m);
    if (!(ds > 0)) continue;
    if (best.car != -1 && ds > best_ds) break;
    if (ds < best_ds || (best.car != -1 && ds == best_ds && e.key < best_key)) {
      best_ds = ds;
      best_key = e.key;
      best.car = id;
    }
  }
  if (best.car != -1) best.gap_m = best_ds - def_.vehicle_length_m;
  return best;
}

TrafficCar RoadTraffic::AsCar(int car) const {
  if (car >= 0) return cars_[static_cast<size_t>(car)];
  const ExternalCar& e = external_[static_cast<size_t>(-2 - car)];
  TrafficCar c;
  c.lane = c.target_lane = e.lane;
  c.s_m = e.s_m;
  c.speed_mps = e.speed_mps;
  c.desired_speed_mps = std::max(e.speed_mps, 1.0);
  return c;
}

std::optional<std::pair<int, double>> RoadTraffic::OnLane(const Vec3& position_m) const {
  return OnLane(position_m, nullptr, nullptr);
}

std::optional<std::pair<int, double>> RoadTraffic::OnLane(const Vec3& position_m, double* s_out,
                                                          double* distance_out) const {
  const road::RoadCoord at = endless_ ? endless_->Project(position_m) : road_.Project(position_m);
  if (s_out) *s_out = at.s_m;
  if (distance_out) *distance_out = at.distance_m;
  if (std::find(lanes_.begin(), lanes_.end(), at.lane) == lanes_.end()) return std::nullopt;
  return std::make_pair(at.lane, at.s_m);
}

std::optional<std::pair<int, double>> RoadTraffic::OnLaneNear(const Vec3& position_m, double near_s_m, double window_m,
                                                              double* s_out, double* distance_out) const {
  const double lo = near_s_m - window_m, hi = near_s_m + window_m;
  // A periodic road's window must not cross its ends (the vehicle may reappear at the other one).
  if (!endless_ && (lo <= 0.0 || hi >= length_m_)) return OnLane(position_m, s_out, distance_out);
  const double x = position_m.x(), y = position_m.y();
  const auto eval = [&](double s) { return endless_ ? endless_->Evaluate(s) : road_.Evaluate(s); };
  // Newton on (p - c(s)) . T(s) = 0 from the last s (derivative -(1 - k t)): a vehicle followed from step to
  // step is a few iterations from its foot point, where the sampled search costs tens of evaluations.
  double s = near_s_m;
  bool converged = false;
  road::RoadPoint rp;
  double lateral = 0;
  for (int it = 0; it < 8; ++it) {
    rp = eval(s);
    const double ch = std::cos(rp.heading_rad), sh = std::sin(rp.heading_rad);
    const double dx = x - rp.position_m.x(), dy = y - rp.position_m.y();
    const double along = dx * ch + dy * sh;
    lateral = -dx * sh + dy * ch;
    const double denom = 1.0 - rp.curvature_1pm * lateral;
    if (std::abs(along) < 1e-9) {
      converged = true;
      break;
    }
    if (denom < 0.5) break;  // near the centre of curvature: no reliable step
    s += along / denom;
    if (!(s > lo && s < hi)) break;
  }
  // The foot point where the sampled search takes over: not converged, off the carriageway (the road may pass
  // near itself there), or in the outer quarter of the window (the vehicle moved far, or jumped).
  const double margin = 0.25 * window_m;
  const bool on_carriageway = lateral >= road_.RightEdgeOffset() - 5.0 && lateral <= road_.LeftEdgeOffset() + 5.0;
  if (!converged || !on_carriageway || s <= lo + margin || s >= hi - margin) {
    const road::RoadCoord at = endless_ ? endless_->ProjectNear(position_m, lo, hi) : road_.Project(position_m, lo, hi);
    if (at.s_m <= lo + margin || at.s_m >= hi - margin) return OnLane(position_m, s_out, distance_out);
    if (s_out) *s_out = at.s_m;
    if (distance_out) *distance_out = at.distance_m;
    if (std::find(lanes_.begin(), lanes_.end(), at.lane) == lanes_.end()) return std::nullopt;
    return std::make_pair(at.lane, at.s_m);
  }
  if (s_out) *s_out = s;
  if (distance_out) *distance_out = std::abs(lateral);
  const int lane = road_.LaneAt(lateral);  // road_ is an endless road's layout
  if (std::find(lanes_.begin(), lanes_.end(), lane) == lanes_.end()) return std::nullopt;
  return std::make_pair(lane, s);
}

RoadTraffic::Neighbour RoadTraffic::FollowerScan(int lane, double s_m, int self) const {
  Neighbour best;
  double best_ds = std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < cars_.size(); ++j) {
    if (static_cast<int>(j) == self || !Occupies(cars_[j], lane)) continue;
    const double ds = Ahead(s_m - cars_[j].s_m);
    if (ds > 0 && ds < best_ds) {
      best_ds = ds;
      best.car = static_cast<int>(j);
    }
  }
  for (size_t j = 0; j < external_.size(); ++j) {
    if (external_[j].lane != lane || -2 - static_cast<int>(j) == self) continue;
    const double ds = Ahead(s_m - external_[j].s_m);
    if (ds > 0 && ds < best_ds) {
      best_ds = ds;
      best.car = -2 - static_cast<int>(j);
    }
  }
  if (best.car != -1) best.gap_m = best_ds - def_.vehicle_length_m;
  return best;
}

double RoadTraffic::Accel(const TrafficCar& car, const Neighbour& leader) const {
  IdmDef idm = def_.idm;
  idm.desired_speed_mps = car.desired_speed_mps;
  const double inf = std::numeric_limits<double>::infinity();
  const double a = leader.car == -1 ? IdmAccel(idm, car.speed_mps, inf, 0)
                                    : IdmAccel(idm, car.speed_mps, leader.gap_m, car.speed_mps - AsCar(leader.car).speed_mps);
  if (signs_.empty()) return a;
  // A sign's limit below the vehicle's own wish: the free-road term aims at the limit. Above it, IDM's
  // (v/v0)^4 term would brake many times harder than comfortable; a vehicle brakes at most comfort_decel
  // instead, easing off over the last kSignEaseS seconds of the speed difference.
  const double limit = SignLimitAt(car.s_m);
  if (!(limit > 0) || limit >= car.desired_speed_mps) return a;
  constexpr double kSignEaseS = 1.0;
  double free;
  if (car.speed_mps > limit) {
    free = -std::min(idm.comfort_decel_mps2, (car.speed_mps - limit) / kSignEaseS);
  } else {
    idm.desired_speed_mps = limit;
    free = IdmAccel(idm, car.speed_mps, inf, 0);
  }
  return std::min(a, free);
}

void RoadTraffic::SetSigns(std::vector<road::Sign> signs) {
  signs_.clear();
  for (const auto& g : signs)
    if (g.direction > 0) signs_.push_back(g);
  // A periodic road: the signs before the end hold on past the start (the same signs, one lap earlier).
  if (!endless_) {
    const size_t n = signs_.size();
    for (size_t i = 0; i < n; ++i) {
      road::Sign g = signs_[i];
      g.s_m -= length_m_;
      signs_.push_back(g);
    }
  }
}

double RoadTraffic::SignLimitAt(double s_m) const { return road::SpeedLimitAt(signs_, s_m, 1, speed_limit_mps_); }

bool RoadTraffic::FixedLane(const TrafficCar& car) const {
  return car.index < def_.vehicle_lanes.size() && def_.vehicle_lanes[car.index] != 0;
}

const ExternalCar* RoadTraffic::LedCar() const {
  if (def_.lead_of_id == 0) return nullptr;
  for (const ExternalCar& e : external_)
    if (e.id == def_.lead_of_id) return &e;
  return nullptr;
}

void RoadTraffic::PlaceLead() {
  const ExternalCar* led = LedCar();
  if (!led || cars_.empty() || cars_[0].index != 0) return;
  // lead_gap_m ahead of it in its lane, if no other vehicle is within a length and a jam gap of that place.
  const double s = Wrap(led->s_m + def_.vehicle_length_m + def_.lead_gap_m);
  const double clear_m = def_.vehicle_length_m + def_.idm.min_gap_m;
  for (size_t j = 1; j < cars_.size(); ++j)
    if (Occupies(cars_[j], led->lane) && std::min(Ahead(cars_[j].s_m - s), Ahead(s - cars_[j].s_m)) < clear_m) return;
  for (const ExternalCar& e : external_)
    if (&e != led && e.lane == led->lane && std::min(Ahead(e.s_m - s), Ahead(s - e.s_m)) < clear_m) return;
  TrafficCar& c = cars_[0];
  c.s_m = s;
  c.lane = c.target_lane = led->lane;
  c.lane_change_progress = 0;
  c.speed_mps = led->speed_mps;
  lead_placed_ = true;
  index_dirty_ = true;
}

void RoadTraffic::FollowLedLane(double dt_s) {
  const ExternalCar* led = LedCar();
  if (!led || cars_.empty() || cars_[0].index != 0 || !def_.lead_follows_lane || FixedLane(cars_[0])) return;
  TrafficCar& c = cars_[0];
  if (led->lane == c.lane) {
    led_elsewhere_s_ = 0;
    return;
  }
  led_elsewhere_s_ += dt_s;
  if (c.target_lane != c.lane || commands_.count(0) || led_elsewhere_s_ < def_.lead_lane_delay_s) return;
  // One lane toward it, when the target lane has half a second of room (at least the jam gap) both ways.
  const auto at = std::find(lanes_.begin(), lanes_.end(), c.lane) - lanes_.begin();
  const auto to = std::find(lanes_.begin(), lanes_.end(), led->lane) - lanes_.begin();
  if (at >= static_cast<long>(lanes_.size()) || to >= static_cast<long>(lanes_.size())) return;
  const int target = lanes_[static_cast<size_t>(at + (to > at ? 1 : -1))];
  const double room_m = std::max(def_.idm.min_gap_m, 0.5 * c.speed_mps);
  const Neighbour ahead = Leader(target, c.s_m, 0);
  const Neighbour behind = Follower(target, c.s_m, 0);
  if ((ahead.car != -1 && ahead.gap_m < room_m) || (behind.car != -1 && behind.gap_m < room_m)) return;
  c.target_lane = target;
  c.lane_change_progress = 0;
  c.cooldown_s = def_.lane_change_cooldown_s;
  index_dirty_ = true;
}

void RoadTraffic::ConsiderLaneChange(size_t i) {
  TrafficCar& c = cars_[i];
  if (!def_.lane_changes || FixedLane(c) || c.lane != c.target_lane || c.cooldown_s > 0) return;
  const auto me = static_cast<int>(i);
  const auto at = std::find(lanes_.begin(), lanes_.end(), c.lane) - lanes_.begin();
  for (int dir : {+1, -1}) {  // +1: toward the outer (right) lane, -1: toward the inner (left) lane
    const long k = at + dir;
    if (k < 0 || k >= static_cast<long>(lanes_.size())) continue;
    const int target = lanes_[static_cast<size_t>(k)];
    const Neighbour new_leader = Leader(target, c.s_m, me);
    const Neighbour new_follower = Follower(target, c.s_m, me);
    // Never cut into a gap that is not there, whatever the accelerations say.
    if ((new_leader.car != -1 && new_leader.gap_m < def_.idm.min_gap_m) ||
        (new_follower.car != -1 && new_follower.gap_m < def_.idm.min_gap_m))
      continue;
    const Neighbour old_leader = Leader(c.lane, c.s_m, me);
    const Neighbour old_follower = Follower(c.lane, c.s_m, me);
    LaneChangeAccels a;
    a.self_now = Accel(c, old_leader);
    a.self_after = Accel(c, new_leader);
    if (new_follower.car != -1) {
      const TrafficCar f = AsCar(new_follower.car);
      a.new_follower_now = Accel(f, Leader(target, f.s_m, new_follower.car));
      a.new_follower_after = Accel(f, Neighbour{me, new_follower.gap_m});
    }
    if (old_follower.car != -1) {
      const TrafficCar f = AsCar(old_follower.car);
      a.old_follower_now = Accel(f, Neighbour{me, old_follower.gap_m});
      a.old_follower_after =
          old_leader.car != -1
              ? Accel(f, Neighbour{old_leader.car, old_follower.gap_m + def_.vehicle_length_m + old_leader.gap_m})
              : Accel(f, Neighbour{});
    }
    if (MobilAllows(def_.mobil, a, dir > 0)) {
      // It now occupies the target lane too: later vehicles of this pass see it there.
      if (!index_dirty_)
        if (auto* slots = const_cast<std::vector<Slot>*>(LaneSlots(target))) {
          const Slot slot{c.s_m, me};
          slots->insert(std::upper_bound(slots->begin(), slots->end(), slot), slot);
        }
      c.target_lane = target;
      c.lane_change_progress = 0;
      c.cooldown_s = def_.lane_change_cooldown_s;
      return;
    }
  }
}

void RoadTraffic::Step(double dt_s) {
  // The lead car: put in front of the vehicle it leads once, then into its lane when it changes lanes.
  if (def_.lead_of_id != 0 && lead_hold_) {
    if (!lead_placed_ && def_.lead_places_itself && def_.first_s_m < 0) PlaceLead();
    FollowLedLane(dt_s);
  }
  // Accelerations first, from one consistent snapshot of positions (a parallel update).
  index_dirty_ = true;
  std::vector<double> accel(cars_.size());
  for (size_t i = 0; i < cars_.size(); ++i) {
    const TrafficCar& c = cars_[i];
    const auto me = static_cast<int>(i);
    Neighbour lead = Leader(c.lane, c.s_m, me);
    if (c.target_lane != c.lane) {
      // While changing lanes, keep a safe distance in both lanes.
      const Neighbour other = Leader(c.target_lane, c.s_m, me);
      if (other.car != -1 && (lead.car == -1 || other.gap_m < lead.gap_m)) lead = other;
    }
    accel[i] = Accel(c, lead);
    if (c.index == 0 && def_.lead_of_id != 0 && lead_hold_)
      if (const auto keep = LeadKeepingAccel(c)) {
        // Never closer to its own leader than IDM allows, whatever speed the gap asks for.
        IdmDef idm = def_.idm;
        idm.desired_speed_mps = 1e3;
        const double safe = lead.car == -1 ? idm.max_accel_mps2
                                           : IdmAccel(idm, c.speed_mps, lead.gap_m, c.speed_mps - AsCar(lead.car).speed_mps);
        accel[i] = std::min(*keep, safe);
      }
  }
  for (size_t i = 0; i < cars_.size(); ++i) {
    TrafficCar& c = cars_[i];
    // Ballistic update that never reverses (the standard IDM integration); a scenario command overrides IDM.
    const double a = CommandedAccel(c, accel[i], dt_s);
    c.accel_mps2 = a;
    min_accel_ = std::min(min_accel_, a);
    if (c.speed_mps + a * dt_s < 0) {
      c.s_m = Wrap(c.s_m - 0.5 * c.speed_mps * c.speed_mps / a);
      c.speed_mps = 0;
    } else {
      c.s_m = Wrap(c.s_m + c.speed_mps * dt_s + 0.5 * a * dt_s * dt_s);
      c.speed_mps += a * dt_s;
    }
    c.cooldown_s = std::max(0.0, c.cooldown_s - dt_s);
    const auto lat = lateral_.find(c.index);
    if (lat != lateral_.end() && !lat->second.path.empty() && c.s_m >= lat->second.path.back().first) {
      // The path's end: its last offset, now in the lane it lies in (or the nearest driving lane).
      Lateral& l = lat->second;
      const double t_end = l.path.back().second;
      int lane = road_.LaneAt(c.s_m, t_end);
      if (std::find(lanes_.begin(), lanes_.end(), lane) == lanes_.end()) {
        double best = std::numeric_limits<double>::infinity();
        for (int k : lanes_)
          if (std::abs(road_.LaneCenterOffsetAt(c.s_m, k) - t_end) < best) {
            best = std::abs(road_.LaneCenterOffsetAt(c.s_m, k) - t_end);
            lane = k;
          }
      }
      c.lane = c.target_lane = lane;
      c.lane_change_progress = 0;
      l.change_duration_s = -1;
      l.offset_from_m = l.offset_to_m = t_end - road_.LaneCenterOffsetAt(c.s_m, lane);
      l.offset_duration_s = 0;
      l.path.clear();
      index_dirty_ = true;
    }
    if (c.target_lane != c.lane && lat != lateral_.end() && lat->second.change_duration_s >= 0) {
      // A commanded change: its progress from its own start and duration (ends exactly after it).
      const Lateral& l = lat->second;
      const double elapsed = time_s_ + dt_s - l.change_start_s;
      c.lane_change_progress = l.change_duration_s <= 0 ? 1.0 : elapsed / l.change_duration_s;
      if (c.lane_change_progress >= 1 - 1e-9) {
        c.lane = c.target_lane;
        c.lane_change_progress = 0;
        ++c.lane_changes;
        lat->second.change_duration_s = -1;
      }
    } else if (c.target_lane != c.lane) {
      c.lane_change_progress += dt_s / def_.lane_change_time_s;
      if (c.lane_change_progress >= 1) {
        c.lane = c.target_lane;
        c.lane_change_progress = 0;
        ++c.lane_changes;
      }
    }
  }
  time_s_ += dt_s;
  // Lane changes see the new positions.
  index_dirty_ = true;
  for (size_t i = 0; i < cars_.size(); ++i)
    if (!commands_.count(cars_[i].index) && !OnPath(cars_[i].index)) ConsiderLaneChange(i);
}

double RoadTraffic::LateralOffsetM(const TrafficCar& c) const {
  // Lane centres where the car is: on an OpenDRIVE road they move with laneOffset and the width polynomials.
  const double from = road_.LaneCenterOffsetAt(c.s_m, c.lane);
  // A commanded lateral motion: its shape and the offset from the lane centre (left positive).
  const auto lat = lateral_.find(c.index);
  if (lat != lateral_.end() && !lat->second.path.empty()) {
    // A path: linear in s between its points.
    const auto& p = lat->second.path;
    if (c.s_m <= p.front().first) return p.front().second;
    for (size_t k = 1; k < p.size(); ++k)
      if (c.s_m <= p[k].first)
        return p[k - 1].second + (c.s_m - p[k - 1].first) / (p[k].first - p[k - 1].first) * (p[k].second - p[k - 1].second);
    return p.back().second;
  }
  const double offset = lat == lateral_.end() ? 0.0 : OffsetNow(lat->second);
  if (c.target_lane == c.lane) return from + offset;
  const double u = std::clamp(c.lane_change_progress, 0.0, 1.0);
  const double f = lat != lateral_.end() && lat->second.change_duration_s >= 0 ? ShapeAt(lat->second.change_shape, u)
                                                                                 : u * u * (3 - 2 * u);  // smoothstep
  return from + (road_.LaneCenterOffsetAt(c.s_m, c.target_lane) - from) * f + offset;
}

KinematicState RoadTraffic::State(const TrafficCar& c, int64_t stamp_ns) const {
  KinematicState k;
  k.stamp_ns = stamp_ns;
  const double t = LateralOffsetM(c);
  const double sign = c.lane > 0 ? -1.0 : 1.0;  // left lanes drive against s
  double heading = 0;
  if (endless_) {
    heading = endless_->Heading(c.s_m);
    k.pose.position_m = endless_->PointAt(c.s_m, t);
  } else {
    // One evaluation of the reference line for heading and point (Road::PointAt's formula, the same bits).
    const road::RoadPoint p = road_.Evaluate(c.s_m);
    heading = p.heading_rad;
    k.pose.position_m = p.position_m + t * Vec3(-std::sin(p.heading_rad), std::cos(p.heading_rad), 0.0);
  }
  k.pose.orientation = Quat(Eigen::AngleAxisd(sign > 0 ? heading : heading + M_PI, Vec3::UnitZ()));
  const Vec3 forward = k.pose.orientation * Vec3::UnitX();
  k.velocity_mps = c.speed_mps * forward;
  const double kappa = endless_ ? endless_->Curvature(c.s_m) : road_.Curvature(c.s_m);
  k.acceleration_mps2 = c.accel_mps2 * forward + c.speed_mps * c.speed_mps * kappa * (k.pose.orientation * Vec3::UnitY());
  k.angular_velocity_radps = Vec3(0, 0, c.speed_mps * kappa);
  return k;
}

TrafficCheck RoadTraffic::Check() {
  TrafficCheck r;
  r.min_accel_mps2 = min_accel_;
  for (int lane : lanes_) {
    std::vector<std::pair<double, int>> in_lane;
    for (size_t j = 0; j < cars_.size(); ++j)
      if (Occupies(cars_[j], lane)) in_lane.emplace_back(cars_[j].s_m, static_cast<int>(j));
    for (size_t j = 0; j < external_.size(); ++j)
      if (external_[j].lane == lane) in_lane.emplace_back(external_[j].s_m, -2 - static_cast<int>(j));
    if (in_lane.size() < 2) continue;
    std::sort(in_lane.begin(), in_lane.end());
    for (size_t k = 0; k < in_lane.size(); ++k) {
      const auto& [s0, a] = in_lane[k];
      const auto& [s1, b] = in_lane[(k + 1) % in_lane.size()];
      if (a < 0 && b < 0) continue;  // two external vehicles: not this traffic's business
      if (endless_ && k + 1 == in_lane.size()) continue;  // an endless road does not close on itself
      const double gap = Wrap(s1 - s0) - def_.vehicle_length_m;
      r.min_gap_m = std::min(r.min_gap_m, gap);
      if (gap < 0) ++r.overlaps;
    }
  }
  return r;
}

uint64_t RoadTraffic::LaneChanges() const {
  uint64_t n = 0;
  for (const auto& c : cars_) n += c.lane_changes;
  return n;
}

}  // namespace platoon::vehicle
