#include "platoon/vehicle/network_traffic.hpp"

#include "platoon/entity_id.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace platoon::vehicle {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Corners of a vehicle's footprint: centre `c`, heading `h`, length `l`, width `w`.
std::array<Vec3, 4> Footprint(const Vec3& c, double h, double l, double w) {
  const Vec3 f(std::cos(h) * l / 2, std::sin(h) * l / 2, 0), s(-std::sin(h) * w / 2, std::cos(h) * w / 2, 0);
  return {c + f + s, c + f - s, c - f - s, c - f + s};
}

// Separating axis test of two convex quadrilaterals in the plane.
bool Overlap(const std::array<Vec3, 4>& a, const std::array<Vec3, 4>& b) {
  for (const auto* poly : {&a, &b})
    for (size_t k = 0; k < 4; ++k) {
      const Vec3 e = (*poly)[(k + 1) % 4] - (*poly)[k];
      const double nx = -e.y(), ny = e.x();
      double amin = kInf, amax = -kInf, bmin = kInf, bmax = -kInf;
      for (const Vec3& p : a) {
        const double v = p.x() * nx + p.y() * ny;
        amin = std::min(amin, v);
        amax = std::max(amax, v);
      }
      for (const Vec3& p : b) {
        const double v = p.x() * nx + p.y() * ny;
        bmin = std::min(bmin, v);
        bmax = std::max(bmax, v);
      }
      if (amax <= bmin || bmax <= amin) return false;
    }
  return true;
}

}  // namespace

NetworkTraffic::NetworkTraffic(const road::LaneGraph& graph, const NetworkTrafficDef& def) : graph_(graph), def_(def) {
  const auto& pieces = graph.Pieces();
  // Connecting lanes that cross or merge, within each junction.
  conflicts_.resize(pieces.size());
  const double clearance = def_.vehicle_width_m + def_.conflict_margin_m;
  for (uint32_t a = 0; a < pieces.size(); ++a) {
    if (pieces[a].junction_id < 0) continue;
    for (uint32_t b = 0; b < pieces.size(); ++b)
      if (b != a && pieces[b].junction_id == pieces[a].junction_id && graph.Crosses(a, b, clearance))
        conflicts_[a].push_back(b);
  }
  // Even placement over the lanes outside junctions, at least a jam distance apart, never straddling a piece's entry.
  std::vector<uint32_t> open;
  double total = 0.0;
  for (uint32_t p = 0; p < pieces.size(); ++p)
    if (pieces[p].junction_id < 0 && pieces[p].length_m > def_.vehicle_length_m + 1.0) {
      open.push_back(p);
      total += pieces[p].length_m;
    }
  const double len = def_.vehicle_length_m;
  if (def_.vehicles > 0 && total > 0) {
    const double spacing = total / def_.vehicles;
    std::vector<double> last_d(pieces.size(), -kInf);
    for (int k = 0; k < def_.vehicles; ++k) {
      double x = std::fmod(def_.start_offset_m + (k + 0.5) * spacing, total);
      if (x < 0) x += total;
      size_t j = 0;
      while (j + 1 < open.size() && x >= pieces[open[j]].length_m) x -= pieces[open[j++]].length_m;
      const uint32_t p = open[j];
      const double d = std::clamp(x, len + 0.5, pieces[p].length_m - 0.5);
      if (d - last_d[p] < len + def_.idm.min_gap_m) continue;  // lanes too short for this many
      last_d[p] = d;
      NetworkCar c;
      c.index = static_cast<uint32_t>(cars_.size());
      c.piece = p;
      c.d_m = d;
      cars_.push_back(c);
    }
  }
  spread_.resize(cars_.size());
  for (auto& c : cars_) {
    spread_[c.index] = 1.0 + def_.desired_speed_spread * (2.0 * Rand01(c.index, 0xD5) - 1.0);
    c.desired_speed_mps = def_.idm.desired_speed_mps * spread_[c.index];
    ExtendRoute(c);
    const double limit = pieces[c.piece].speed_limit_mps > 0 ? pieces[c.piece].speed_limit_mps : kInf;
    c.speed_mps = std::min({c.desired_speed_mps, limit, CurveLimit(c.piece, c.desired_speed_mps)});
    // Not yet admitted anywhere: it starts slow enough to stop comfortably before the next junction.
    double to_stop = pieces[c.piece].length_m - c.d_m;
    for (const uint32_t p : c.route) {
      if (pieces[p].junction_id >= 0) break;
      to_stop += pieces[p].length_m;
    }
    const double room = std::max(0.0, to_stop - def_.stop_line_gap_m - def_.idm.min_gap_m);
    c.speed_mps = std::min(c.speed_mps, std::sqrt(2.0 * def_.idm.comfort_decel_mps2 * room));
  }
  admitted_.assign(cars_.size(), -1);
  asked_at_.assign(cars_.size(), -1.0);
  wants_.assign(cars_.size(), -1);
  stop_at_.assign(cars_.size(), kInf);
  stood_.assign(cars_.size(), 0);
  yielded_right_.assign(cars_.size(), 0);
  released_.assign(cars_.size(), 0);
  on_piece_.resize(pieces.size());
  // Direction of travel at each piece's end (right before left compares approaches by it).
  end_heading_.reserve(pieces.size());
  for (uint32_t p = 0; p < pieces.size(); ++p) end_heading_.push_back(graph.Pose(p, pieces[p].length_m).heading_rad);
  // Uncontrolled junctions: every approach into them without a sign or a lower priority.
  for (const auto& p : pieces) {
    if (p.junction_id >= 0) continue;
    for (const uint32_t n : p.next) {
      const int j = pieces[n].junction_id;
      if (j < 0) continue;
      auto it = uncontrolled_.emplace(j, true).first;
      if (p.yield != road::Yield::kNone) it->second = false;
    }
  }
}

std::optional<uint32_t> NetworkTraffic::AddCar(uint32_t piece, double d_m, double speed_mps, std::deque<uint32_t> route) {
  const auto& pieces = graph_.Pieces();
  if (piece >= pieces.size() || pieces[piece].junction_id >= 0 || !(d_m >= 0.0 && d_m <= pieces[piece].length_m) ||
      !(speed_mps >= 0.0))
    return std::nullopt;
  uint32_t last = piece;
  for (const uint32_t p : route) {
    const auto& nx = pieces[last].next;
    if (std::find(nx.begin(), nx.end(), p) == nx.end()) return std::nullopt;
    last = p;
  }
  NetworkCar c;
  c.index = cars_.empty() ? 0 : 1 + std::max_element(cars_.begin(), cars_.end(), [](const auto& a, const auto& b) {
                                   return a.index < b.index;
                                 })->index;
  c.piece = piece;
  c.d_m = d_m;
  c.speed_mps = speed_mps;
  c.route = std::move(route);
  if (spread_.size() <= c.index) spread_.resize(c.index + 1, 1.0);
  c.desired_speed_mps = def_.idm.desired_speed_mps * spread_[c.index];
  ExtendRoute(c);
  cars_.push_back(c);
  admitted_.push_back(-1);
  asked_at_.push_back(-1.0);
  wants_.push_back(-1);
  stop_at_.push_back(kInf);
  stood_.push_back(0);
  yielded_right_.push_back(0);
  released_.push_back(0);
  return c.index;
}

double NetworkTraffic::Rand01(uint64_t a, uint64_t b) const {
  const uint64_t h = SplitMix64(def_.seed ^ SplitMix64(a * 0x9E3779B97F4A7C15ull + SplitMix64(b)));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

uint32_t NetworkTraffic::Choose(NetworkCar& car, const std::vector<uint32_t>& options) const {
  if (options.size() == 1) return options.front();
  const double u = Rand01(car.index, 0x100000000ull + car.choices++);
  return options[std::min(options.size() - 1, static_cast<size_t>(u * static_cast<double>(options.size())))];
}

void NetworkTraffic::ExtendRoute(NetworkCar& car) {
  const auto& pieces = graph_.Pieces();
  double ahead = pieces[car.piece].length_m - car.d_m;
  for (const uint32_t p : car.route) ahead += pieces[p].length_m;
  for (;;) {
    const uint32_t last = car.route.empty() ? car.piece : car.route.back();
    // Far enough, and never ending inside a junction (the lane it leaves on decides its admission).
    if ((ahead >= def_.lookahead_m && pieces[last].junction_id < 0) || pieces[last].next.empty()) return;
    const uint32_t p = Choose(car, pieces[last].next);
    car.route.push_back(p);
    ahead += pieces[p].length_m;
  }
}

double NetworkTraffic::CurveLimit(uint32_t piece, double desired_mps) const {
  const double k = graph_.Pieces()[piece].max_curvature_1pm;
  return k > 1e-6 ? std::min(desired_mps, std::sqrt(def_.max_lateral_accel_mps2 / k)) : desired_mps;
}

void NetworkTraffic::SetDesiredSpeed(double mps) {
  def_.idm.desired_speed_mps = mps;
  for (auto& c : cars_) c.desired_speed_mps = mps * spread_[c.index];
}

double NetworkTraffic::SpeedOf(uint32_t key) const {
  return key < cars_.size() ? cars_[key].speed_mps : external_[key - cars_.size()].speed_mps;
}

void NetworkTraffic::LocateExternal() {
  const auto& pieces = graph_.Pieces();
  const auto& roads = graph_.Network().Roads();
  external_at_.assign(external_.size(), ExternalAt{});
  external_on_lanes_ = 0;
  for (size_t e = 0; e < external_.size(); ++e) {
    const NetworkExternal& x = external_[e];
    double best = kInf;
    for (const auto& road : roads) {
      const road::RoadCoord c = road.Project(x.position_m);
      if (c.s_m < 0.0 || c.s_m > road.Length() || c.distance_m > 30.0) continue;
      const int lane = road.LaneAt(c.s_m, c.t_m);
      if (lane == 0 || !road.IsDrivingLane(c.s_m, lane)) continue;
      const double off = std::abs(c.t_m - road.LaneCenterOffsetAt(c.s_m, lane));
      if (off >= best) continue;
      const int64_t p = graph_.PieceAt(road.Id(), lane, c.s_m);
      if (p < 0) continue;
      const double d = graph_.DistanceAt(static_cast<uint32_t>(p), c.s_m);
      // Only a lane running its way (within 60 degrees).
      if (std::cos(graph_.Pose(static_cast<uint32_t>(p), d).heading_rad - x.heading_rad) < 0.5) continue;
      best = off;
      external_at_[e] = ExternalAt{p, std::min(d + 0.5 * x.length_m, pieces[p].length_m)};
    }
    if (external_at_[e].piece < 0) continue;
    ++external_on_lanes_;
    on_piece_[external_at_[e].piece].emplace_back(external_at_[e].d_m, static_cast<uint32_t>(cars_.size() + e));
  }
}

NetworkTraffic::Leader NetworkTraffic::FindLeader(size_t i) const {
  const auto& pieces = graph_.Pieces();
  const NetworkCar& c = cars_[i];
  const double len = def_.vehicle_length_m;
  Leader best;
  auto consider = [&](double gap, double speed, bool vehicle = true) {
    if (gap < best.gap_m) best = Leader{gap, speed, vehicle};
  };
  // On its own piece.
  for (const auto& [d, j] : on_piece_[c.piece])
    if (j != i && (d > c.d_m || (d == c.d_m && j > i))) {
      consider(d - c.d_m - len, SpeedOf(j));
      break;
    }
  // Along its route; at each fork also a vehicle on another branch whose rear is still at the fork.
  double dist = pieces[c.piece].length_m - c.d_m;
  uint32_t from = c.piece;
  for (const uint32_t p : c.route) {
    if (dist - len > best.gap_m || dist > def_.lookahead_m) break;
    for (const uint32_t n : pieces[from].next) {
      if (n == p) continue;
      for (const auto& [d, j] : on_piece_[n]) {
        if (d > len + def_.idm.min_gap_m) break;
        consider(dist + d - len, SpeedOf(j));
      }
    }
    if (!on_piece_[p].empty()) {
      const auto& [d, j] = on_piece_[p].front();
      consider(dist + d - len, SpeedOf(j));
      break;
    }
    dist += pieces[p].length_m;
    from = p;
  }
  // A stop line it is not admitted past, and the end of a lane that leads nowhere: standing obstacles.
  if (stop_at_[i] < kInf) consider(stop_at_[i] - def_.stop_line_gap_m, 0.0, false);
  const uint32_t last = c.route.empty() ? c.piece : c.route.back();
  if (pieces[last].next.empty()) {
    double end = pieces[c.piece].length_m - c.d_m;
    for (const uint32_t p : c.route) end += pieces[p].length_m;
    consider(end - def_.stop_line_gap_m, 0.0, false);
  }
  return best;
}

double NetworkTraffic::Accel(size_t i) {
  const auto& pieces = graph_.Pieces();
  const NetworkCar& c = cars_[i];
  const Leader leader = FindLeader(i);
  auto limit_of = [&](uint32_t p) {
    const double l = pieces[p].speed_limit_mps > 0 ? pieces[p].speed_limit_mps : kInf;
    return std::min(l, CurveLimit(p, c.desired_speed_mps));
  };
  IdmDef idm = def_.idm;
  idm.desired_speed_mps = std::max(0.5, std::min(c.desired_speed_mps, limit_of(c.piece)));
  // While its rear is still on a curvier piece, that piece's limit holds too.
  if (c.behind >= 0) idm.desired_speed_mps = std::max(0.5, std::min(idm.desired_speed_mps, limit_of(static_cast<uint32_t>(c.behind))));
  double a = IdmAccel(idm, c.speed_mps, std::max(leader.gap_m, 0.01), c.speed_mps - leader.speed_mps);
  // Slower pieces ahead: brake so as to reach each one's limit at its entry.
  double dist = pieces[c.piece].length_m - c.d_m;
  for (const uint32_t p : c.route) {
    if (dist > def_.lookahead_m) break;
    const double v = limit_of(p);
    if (c.speed_mps > v) a = std::min(a, (v * v - c.speed_mps * c.speed_mps) / (2.0 * std::max(dist, 1.0)));
    dist += pieces[p].length_m;
  }
  if (leader.vehicle && leader.gap_m < 1e8) check_.min_gap_m = std::min(check_.min_gap_m, leader.gap_m);
  // A scenario's command: never more acceleration than it allows.
  if (const auto cmd = commands_.find(c.index); cmd != commands_.end()) {
    const Command& k = cmd->second;
    const bool standing = c.speed_mps <= 0.0;
    if (!k.stop && (time_s_ >= k.until_s || (std::isinf(k.until_s) && standing))) {
      commands_.erase(cmd);  // done: it drives on
    } else {
      a = standing ? std::min(a, 0.0) : std::min(a, -k.decel_mps2);
    }
  }
  return std::max(a, -def_.max_decel_mps2);
}

int64_t NetworkTraffic::Position(uint32_t index) const {
  for (size_t i = 0; i < cars_.size(); ++i)
    if (cars_[i].index == index) return static_cast<int64_t>(i);
  return -1;
}

bool NetworkTraffic::Brake(uint32_t index, double decel_mps2, double duration_s) {
  if (Position(index) < 0 || !(decel_mps2 > 0.0)) return false;
  commands_[index] = Command{false, decel_mps2, duration_s > 0.0 ? time_s_ + duration_s : kInf};
  return true;
}

bool NetworkTraffic::Stop(uint32_t index, double decel_mps2) {
  if (Position(index) < 0 || !(decel_mps2 > 0.0)) return false;
  commands_[index] = Command{true, decel_mps2, kInf};
  return true;
}

bool NetworkTraffic::Resume(uint32_t index) {
  if (Position(index) < 0) return false;
  commands_.erase(index);
  return true;
}

bool NetworkTraffic::Remove(uint32_t index) {
  const int64_t p = Position(index);
  if (p < 0) return false;
  const auto at = static_cast<size_t>(p);
  cars_.erase(cars_.begin() + p);
  for (auto* v : {&admitted_, &wants_}) v->erase(v->begin() + p);
  for (auto* v : {&asked_at_, &stop_at_}) v->erase(v->begin() + p);
  stood_.erase(stood_.begin() + static_cast<std::ptrdiff_t>(at));
  yielded_right_.erase(yielded_right_.begin() + static_cast<std::ptrdiff_t>(at));
  released_.erase(released_.begin() + static_cast<std::ptrdiff_t>(at));
  commands_.erase(index);
  return true;
}

bool NetworkTraffic::RoomOnExit(size_t i, uint32_t junction_piece) const {
  const auto& pieces = graph_.Pieces();
  const NetworkCar& c = cars_[i];
  // The piece it leaves the junction on: the first after `junction_piece` on its route outside the junction.
  bool past = false;
  int64_t exit = -1;
  for (const uint32_t p : c.route) {
    if (p == junction_piece) {
      past = true;
      continue;
    }
    if (past && pieces[p].junction_id < 0) {
      exit = p;
      break;
    }
  }
  if (exit < 0) return true;
  const double need = def_.vehicle_length_m + def_.idm.min_gap_m;
  // Room behind the last vehicle on the exit lane (the distance it clears in one headway counts), shared with
  // every other vehicle on or admitted to a connecting lane that leads there.
  double room = pieces[exit].length_m;
  if (!on_piece_[exit].empty()) {
    const auto& [d, j] = on_piece_[exit].front();
    room = d - def_.vehicle_length_m + SpeedOf(j) * def_.idm.time_headway_s;
  }
  int queued = 0;
  for (size_t j = 0; j < cars_.size(); ++j) {
    if (j == i) continue;
    const int64_t a = admitted_[j];
    const bool into = (a >= 0 && std::find(pieces[a].next.begin(), pieces[a].next.end(), static_cast<uint32_t>(exit)) !=
                                     pieces[a].next.end()) ||
                      (pieces[cars_[j].piece].junction_id >= 0 &&
                       std::find(pieces[cars_[j].piece].next.begin(), pieces[cars_[j].piece].next.end(),
                                 static_cast<uint32_t>(exit)) != pieces[cars_[j].piece].next.end() &&
                       a < 0);
    if (into) ++queued;
  }
  return room >= need * (queued + 1);
}

void NetworkTraffic::Admit() {
  const auto& pieces = graph_.Pieces();
  // Connecting lanes taken: by a vehicle on them (front or rear) or admitted to them.
  std::vector<char> taken(pieces.size(), 0);
  for (size_t i = 0; i < cars_.size(); ++i) {
    const NetworkCar& c = cars_[i];
    if (pieces[c.piece].junction_id >= 0) taken[c.piece] = 1;
    if (c.behind >= 0 && pieces[c.behind].junction_id >= 0) taken[c.behind] = 1;
    if (admitted_[i] >= 0) taken[admitted_[i]] = 1;
  }
  // External vehicles: the connecting lane they are on (or whose end their rear may still be in), and those they
  // may take next within their braking distance + 15 m.
  for (size_t e = 0; e < external_.size(); ++e) {
    const int64_t p = external_at_[e].piece;
    if (p < 0) continue;
    const double d = external_at_[e].d_m;
    if (pieces[p].junction_id >= 0) taken[p] = 1;
    if (d < external_[e].length_m)
      for (const uint32_t q : pieces[p].prev)
        if (pieces[q].junction_id >= 0) taken[q] = 1;
    const double v = external_[e].speed_mps;
    if (pieces[p].length_m - d < v * v / (2.0 * def_.idm.comfort_decel_mps2) + 15.0)
      for (const uint32_t q : pieces[p].next)
        if (pieces[q].junction_id >= 0 && pieces[q].junction_id != pieces[p].junction_id) taken[q] = 1;
  }
  // Who asks: the first connecting lane on its route not yet admitted, within its reach.
  std::vector<std::pair<double, uint32_t>> asking;
  std::vector<road::Yield> rule(cars_.size(), road::Yield::kNone);  // what the asking vehicle's approach demands
  std::vector<uint32_t> approach(cars_.size(), 0);                   // the piece it asks from
  for (size_t i = 0; i < cars_.size(); ++i) {
    NetworkCar& c = cars_[i];
    wants_[i] = -1;
    stop_at_[i] = kInf;
    const double reach = c.speed_mps * c.speed_mps / (2.0 * def_.idm.comfort_decel_mps2) + def_.approach_m;
    double dist = pieces[c.piece].length_m - c.d_m;
    uint32_t from = c.piece;
    for (const uint32_t p : c.route) {
      if (dist > reach) break;
      // A connecting lane that follows another one of the same junction is entered with it.
      const bool entry = pieces[p].junction_id >= 0 && pieces[from].junction_id != pieces[p].junction_id;
      if (entry) {
        if (admitted_[i] != static_cast<int64_t>(p)) {
          wants_[i] = p;
          stop_at_[i] = dist;
          rule[i] = pieces[from].yield;
          approach[i] = from;
          if (asked_at_[i] < 0) asked_at_[i] = time_s_;
          asking.emplace_back(asked_at_[i], static_cast<uint32_t>(i));
          // At a stop sign: standing at the line (where the stop line holds it, the jam gap before it) counts.
          if (rule[i] == road::Yield::kStop && c.speed_mps < 0.1 &&
              dist <= def_.stop_line_gap_m + def_.idm.min_gap_m + 1.0)
            stood_[i] = 1;
        }
        break;
      }
      dist += pieces[p].length_m;
      from = p;
    }
    if (wants_[i] < 0) {
      asked_at_[i] = -1.0;
      yielded_right_[i] = 0;
      released_[i] = 0;
    }
  }
  // Requests with priority first, each class in the order asked.
  std::sort(asking.begin(), asking.end(), [&](const auto& a, const auto& b) {
    const bool pa = rule[a.second] == road::Yield::kNone, pb = rule[b.second] == road::Yield::kNone;
    return pa != pb ? pa : a < b;
  });
  // Connecting lanes that vehicles with priority (no sign, not the junction's low road) are driving towards: who
  // gives way waits while one of them comes (one standing in a queue lets it go; admitted ones are taken).
  std::vector<char> priority_asks(pieces.size(), 0);
  for (const auto& [at, i] : asking)
    if (rule[i] == road::Yield::kNone && cars_[i].speed_mps > 1.0) priority_asks[static_cast<size_t>(wants_[i])] = 1;
  // Right before left at an uncontrolled junction: a request waits while one from its right (arriving 45 to 135
  // degrees to the left of its own direction) asks for a lane crossing or merging with its own and can go: it is
  // still coming (over 1 m/s), or its lane is free with room behind it. One standing before a full exit holds up
  // nobody. When the junction has stood empty for a second with requests held so (all arms waiting for each
  // other), the one that asked first goes.
  std::vector<char> ready(cars_.size(), 0);
  for (const auto& [at, k] : asking) {
    const auto jk = static_cast<uint32_t>(wants_[k]);
    bool free = cars_[k].speed_mps > 1.0;
    if (!free) {
      free = !taken[jk];
      for (const uint32_t c : conflicts_[jk]) free = free && !taken[c];
      free = free && RoomOnExit(k, jk);
    }
    ready[k] = free;
  }
  std::vector<char> held(cars_.size(), 0);
  std::map<int, std::pair<double, uint32_t>> first_asker;  // junction -> (asked at, car) among those held
  std::map<int, bool> busy;                                // junction -> a vehicle on or admitted to one of its lanes
  for (uint32_t p = 0; p < pieces.size(); ++p)
    if (taken[p] && pieces[p].junction_id >= 0) busy[pieces[p].junction_id] = true;
  for (const auto& [at, i] : asking) {
    const int jid = pieces[static_cast<size_t>(wants_[i])].junction_id;
    const auto u = uncontrolled_.find(jid);
    if (u == uncontrolled_.end() || !u->second) continue;
    const auto& crossing = conflicts_[static_cast<size_t>(wants_[i])];
    const double h_i = end_heading_[approach[i]];
    for (const auto& [at_k, k] : asking) {
      if (k == i || !ready[k] || pieces[static_cast<size_t>(wants_[k])].junction_id != jid) continue;
      if (wants_[k] != wants_[i] && std::find(crossing.begin(), crossing.end(), static_cast<uint32_t>(wants_[k])) == crossing.end())
        continue;
      const double rel = std::remainder(end_heading_[approach[k]] - h_i, 2.0 * M_PI);
      if (rel > M_PI / 4 && rel < 3 * M_PI / 4) held[i] = 1;
    }
    if (held[i])
      if (auto f = first_asker.find(jid); f == first_asker.end() || std::make_pair(at, i) < f->second)
        first_asker[jid] = {at, i};
  }
  for (auto it = stalled_since_.begin(); it != stalled_since_.end();)
    it = first_asker.count(it->first) && !busy.count(it->first) ? std::next(it) : stalled_since_.erase(it);
  for (const auto& [jid, f] : first_asker) {
    if (busy.count(jid)) continue;
    const double since = stalled_since_.emplace(jid, time_s_).first->second;
    if (time_s_ - since >= kRightStallS) {
      held[f.second] = 0;
      released_[f.second] = 1;
    }
  }
  std::vector<char> waiting(pieces.size(), 0);  // connecting lanes an earlier request still waits for
  for (const auto& [at, i] : asking) {
    const auto j = static_cast<uint32_t>(wants_[i]);
    if (held[i]) {
      yielded_right_[i] = 1;
      continue;  // it waits for the one from its right, and holds up nobody
    }
    bool free = admitted_[i] < 0;  // one admission at a time
    for (const uint32_t k : conflicts_[j]) free = free && !taken[k] && !waiting[k];
    // Give way (and stop first): no vehicle with priority may be about to take a crossing lane.
    if (rule[i] != road::Yield::kNone)
      for (const uint32_t k : conflicts_[j]) free = free && !priority_asks[k];
    if (rule[i] == road::Yield::kStop) free = free && stood_[i];
    if (free && RoomOnExit(i, j)) {
      admitted_[i] = j;
      taken[j] = 1;
      stop_at_[i] = kInf;
      check_.max_wait_s = std::max(check_.max_wait_s, time_s_ - at);
      if (rule[i] == road::Yield::kStop) ++check_.stops;
      if (yielded_right_[i] && !released_[i]) ++check_.right_before_left;
      if (released_[i]) ++check_.right_deadlocks;
      asked_at_[i] = -1.0;
      stood_[i] = 0;
      yielded_right_[i] = 0;
      released_[i] = 0;
    } else if (rule[i] == road::Yield::kNone) {
      waiting[j] = 1;  // who gives way holds up nobody
    }
  }
}

void NetworkTraffic::Step(double dt_s) {
  const auto& pieces = graph_.Pieces();
  for (auto& v : on_piece_) v.clear();
  for (size_t i = 0; i < cars_.size(); ++i) on_piece_[cars_[i].piece].emplace_back(cars_[i].d_m, static_cast<uint32_t>(i));
  LocateExternal();
  for (auto& v : on_piece_) std::sort(v.begin(), v.end());
  Admit();
  std::vector<double> accel(cars_.size());
  for (size_t i = 0; i < cars_.size(); ++i) accel[i] = Accel(i);
  time_s_ += dt_s;
  for (size_t i = 0; i < cars_.size(); ++i) {
    NetworkCar& c = cars_[i];
    const double a = accel[i];
    c.accel_mps2 = a;
    check_.min_accel_mps2 = std::min(check_.min_accel_mps2, a);
    double v = c.speed_mps + a * dt_s;
    double ds;
    if (v < 0) {  // stops within the step
      ds = a < 0 ? c.speed_mps * c.speed_mps / (-2.0 * a) : 0.0;
      v = 0;
    } else {
      ds = 0.5 * (c.speed_mps + v) * dt_s;
    }
    c.speed_mps = v;
    c.d_m += ds;
    c.distance_m += ds;
    while (c.d_m >= pieces[c.piece].length_m) {
      if (c.route.empty()) {  // a lane that leads nowhere
        c.distance_m -= c.d_m - pieces[c.piece].length_m;
        c.d_m = pieces[c.piece].length_m;
        c.speed_mps = 0;
        break;
      }
      const uint32_t next = c.route.front();
      // A stop line it is not admitted past: held there (counted; the approach should have stopped it).
      if (pieces[next].junction_id >= 0 && pieces[c.piece].junction_id != pieces[next].junction_id &&
          admitted_[i] != static_cast<int64_t>(next)) {
        c.distance_m -= c.d_m - pieces[c.piece].length_m;
        c.d_m = pieces[c.piece].length_m;
        c.speed_mps = 0;
        ++check_.forced_stops;
        break;
      }
      c.d_m -= pieces[c.piece].length_m;
      if (pieces[c.piece].junction_id >= 0) {
        ++movements_[c.piece];
        ++c.junctions_crossed;
      }
      c.behind = c.piece;
      c.piece = next;
      c.route.pop_front();
    }
    if (c.behind >= 0 && c.d_m >= def_.vehicle_length_m) {
      if (admitted_[i] == c.behind) admitted_[i] = -1;  // left its junction, rear included
      c.behind = -1;
    }
    ExtendRoute(c);
  }
}

KinematicState NetworkTraffic::State(const NetworkCar& c, int64_t stamp_ns) const {
  const auto& pieces = graph_.Pieces();
  // The centre lies half a length behind the front: on the previous piece while the rear is still there.
  const double centre = c.d_m - def_.vehicle_length_m / 2;
  const road::LanePose pose = centre >= 0 || c.behind < 0
                                  ? graph_.Pose(c.piece, std::max(0.0, centre))
                                  : graph_.Pose(static_cast<uint32_t>(c.behind), pieces[c.behind].length_m + centre);
  KinematicState k;
  k.stamp_ns = stamp_ns;
  k.pose.position_m = pose.position_m;
  k.pose.orientation = Quat(Eigen::AngleAxisd(pose.heading_rad, Vec3::UnitZ()));
  const Vec3 forward = k.pose.orientation * Vec3::UnitX();
  k.velocity_mps = c.speed_mps * forward;
  k.acceleration_mps2 = c.accel_mps2 * forward + c.speed_mps * c.speed_mps * pose.curvature_1pm * (k.pose.orientation * Vec3::UnitY());
  k.angular_velocity_radps = Vec3(0, 0, c.speed_mps * pose.curvature_1pm);
  return k;
}

NetworkTrafficCheck NetworkTraffic::Check() {
  std::vector<std::array<Vec3, 4>> boxes;
  std::vector<Vec3> centres;
  for (const auto& c : cars_) {
    const KinematicState k = State(c, 0);
    const Vec3 f = k.pose.orientation * Vec3::UnitX();
    centres.push_back(k.pose.position_m);
    boxes.push_back(Footprint(k.pose.position_m, std::atan2(f.y(), f.x()), def_.vehicle_length_m, def_.vehicle_width_m));
  }
  // The external vehicles too (a vehicle of the traffic that runs into one counts).
  for (const auto& x : external_) {
    centres.push_back(x.position_m);
    boxes.push_back(Footprint(x.position_m, x.heading_rad, x.length_m, def_.vehicle_width_m));
  }
  double longest = def_.vehicle_length_m;
  for (const auto& x : external_) longest = std::max(longest, x.length_m);
  const double near = longest + def_.vehicle_width_m;
  for (size_t a = 0; a < cars_.size(); ++a)
    for (size_t b = a + 1; b < centres.size(); ++b) {
      const Vec3 d = centres[a] - centres[b];
      if (std::hypot(d.x(), d.y()) < near && Overlap(boxes[a], boxes[b])) ++check_.overlaps;
    }
  return check_;
}

}  // namespace platoon::vehicle
