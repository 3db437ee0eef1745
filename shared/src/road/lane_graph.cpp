#include "platoon/road/lane_graph.hpp"

#include "platoon/road/signs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace platoon::road {
namespace {

// Lane centres are sampled this often along the reference line, in m.
constexpr double kSampleStepM = 0.5;

// The lane definition of `lane` in section `section` of `road`, or nullptr (roads without lane sections).
const LaneDef* LaneOf(const Road& road, uint32_t section, int lane) {
  const auto& sections = road.Def().lane_sections;
  if (section >= sections.size()) return nullptr;
  const auto& side = lane > 0 ? sections[section].left : sections[section].right;
  for (const auto& l : side)
    if (l.id == lane) return &l;
  return nullptr;
}

// Road s range of lane section `i`.
std::pair<double, double> SectionRange(const Road& road, uint32_t i) {
  const auto& sections = road.Def().lane_sections;
  if (sections.empty()) return {0.0, road.Length()};
  const double lo = std::clamp(sections[i].s_m, 0.0, road.Length());
  const double hi = i + 1 < sections.size() ? std::clamp(sections[i + 1].s_m, lo, road.Length()) : road.Length();
  return {lo, hi};
}

uint32_t SectionCount(const Road& road) {
  return road.Def().lane_sections.empty() ? 1u : static_cast<uint32_t>(road.Def().lane_sections.size());
}

// dt/ds of lane `lane`'s centre offset at `s_m`, by central differences inside [lo, hi].
double OffsetSlope(const Road& road, int lane, double s_m, double lo, double hi) {
  const double h = 0.05;
  const double a = std::clamp(s_m - h, lo, hi), b = std::clamp(s_m + h, lo, hi);
  return b > a ? (road.LaneCenterOffsetAt(b, lane) - road.LaneCenterOffsetAt(a, lane)) / (b - a) : 0.0;
}

}  // namespace

LaneGraph::LaneGraph(const RoadNetwork& network, const std::vector<JunctionDef>& junctions) : network_(network) {
  const auto& roads = network.Roads();
  std::map<std::tuple<uint32_t, uint32_t, int>, uint32_t> index;  // (road index, section, lane) -> piece
  for (uint32_t r = 0; r < roads.size(); ++r) {
    const Road& road = roads[r];
    for (uint32_t sec = 0; sec < SectionCount(road); ++sec) {
      const auto [lo, hi] = SectionRange(road, sec);
      if (hi - lo < 1e-6) continue;
      const double mid = 0.5 * (lo + hi);
      for (int lane = -road.LanesRightAt(mid); lane <= road.LanesLeftAt(mid); ++lane) {
        if (lane == 0 || !road.IsDrivingLane(mid, lane)) continue;
        LanePiece p;
        p.road_id = road.Id();
        p.road_index = r;
        p.lane = lane;
        p.section = sec;
        p.s_begin_m = lane < 0 ? lo : hi;
        p.s_end_m = lane < 0 ? hi : lo;
        p.junction_id = road.Def().junction_id;
        const LaneDef* def = LaneOf(road, sec, lane);
        p.speed_limit_mps = def && def->speed_mps > 0 ? def->speed_mps : road.Def().speed_limit_mps;
        index[{r, sec, lane}] = static_cast<uint32_t>(pieces_.size());
        pieces_.push_back(p);
      }
    }
  }
  sample_s_.resize(pieces_.size());
  sample_d_.resize(pieces_.size());
  sample_xy_.resize(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) Sample(pieces_[i], sample_s_[i], sample_d_[i], sample_xy_[i]);

  auto find = [&](uint32_t r, uint32_t sec, int lane) -> int64_t {
    const auto it = index.find({r, sec, lane});
    return it == index.end() ? -1 : static_cast<int64_t>(it->second);
  };
  // Where road `road_id` is entered at `contact` on lane `lane`: the piece, or -1 (and a note).
  auto entry = [&](int road_id, ContactPoint contact, int lane) -> int64_t {
    const Road* road = network.Find(road_id);
    if (!road) return -1;
    const auto r = static_cast<uint32_t>(road - roads.data());
    // Entered at its start a vehicle drives towards +s (a right lane), at its end towards -s (a left lane).
    if ((contact == ContactPoint::kStart) != (lane < 0)) return -1;
    return find(r, contact == ContactPoint::kStart ? 0 : SectionCount(*road) - 1, lane);
  };
  for (uint32_t i = 0; i < pieces_.size(); ++i) {
    const LanePiece& p = pieces_[i];
    const Road& road = roads[p.road_index];
    const RoadDef& def = road.Def();
    const bool forward = p.lane < 0;
    const LaneDef* lane_def = LaneOf(road, p.section, p.lane);
    const int link = lane_def ? (forward ? lane_def->successor : lane_def->predecessor) : 0;
    std::vector<int64_t> to;
    const bool last = forward ? p.section + 1 == SectionCount(road) : p.section == 0;
    if (!last) {
      // The next lane section of the same road.
      const int id = link != 0 ? link : p.lane;
      const int64_t j = (id < 0) == forward ? find(p.road_index, forward ? p.section + 1 : p.section - 1, id) : -1;
      if (j < 0) notes_.push_back(Describe(i) + ": its lane link names no driving lane " + std::to_string(id) +
                                  " of the next lane section");
      to.push_back(j);
    } else {
      const int junction = forward ? def.successor_junction_id : def.predecessor_junction_id;
      const int next_road = forward ? def.successor_id : def.predecessor_id;
      if (junction >= 0 && def.junction_id < 0) {
        // Into a junction: its connections from this road, lane by lane.
        for (const auto& j : junctions) {
          if (j.id != junction) continue;
          for (const auto& c : j.connections) {
            if (c.incoming_road_id != def.id) continue;
            for (const auto& [from, into] : c.lane_links) {
              if (from != p.lane) continue;
              const int64_t k = entry(c.connecting_road_id, c.contact, into);
              if (k < 0)
                notes_.push_back(fmt::format("junction {} connection {}: lane link {} -> {} names no driving lane of "
                                             "road {} entered at its {}",
                                             j.id, c.id, from, into, c.connecting_road_id,
                                             c.contact == ContactPoint::kStart ? "start" : "end"));
              to.push_back(k);
            }
          }
        }
      } else if (next_road >= 0) {
        const ContactPoint contact = forward ? def.successor_contact : def.predecessor_contact;
        // Without a lane link the lane keeps its number, mirrored when the next road is driven the other way.
        const bool flips = (contact == ContactPoint::kEnd) == forward;
        const int id = link != 0 ? link : (flips ? -p.lane : p.lane);
        const int64_t k = entry(next_road, contact, id);
        if (k < 0)
          notes_.push_back(Describe(i) + ": its link names no driving lane " + std::to_string(id) + " of road " +
                           std::to_string(next_road) + " entered at its " +
                           (contact == ContactPoint::kStart ? "start" : "end"));
        to.push_back(k);
      }
    }
    for (const int64_t k : to) {
      if (k < 0) continue;
      auto& next = pieces_[i].next;
      if (std::find(next.begin(), next.end(), static_cast<uint32_t>(k)) == next.end()) {
        next.push_back(static_cast<uint32_t>(k));
        pieces_[k].prev.push_back(i);
      }
    }
  }
  // Who gives way where a piece enters a junction: the junction's priorities, and stop and give-way signs.
  for (LanePiece& p : pieces_) {
    if (p.junction_id >= 0 || p.next.empty()) continue;
    const int junction = pieces_[p.next.front()].junction_id;
    if (junction < 0) continue;
    for (const auto& j : junctions)
      if (j.id == junction)
        for (const auto& [high, low] : j.priorities)
          if (low == p.road_id) p.yield = Yield::kGiveWay;
    const bool forward = p.lane < 0;
    for (const auto& g : roads[p.road_index].Def().signals) {
      const auto sign = SignFromOpenDrive(g.type, g.subtype, g.has_value ? g.value : 0.0, g.unit, g.country, g.s_m,
                                          g.t_m, g.orientation);
      if (!sign || (sign->type != SignType::kStop && sign->type != SignType::kGiveWay)) continue;
      if (g.orientation == "+" && !forward) continue;
      if (g.orientation == "-" && forward) continue;
      // Before the piece's end, within reach (s increases towards the end of a forward piece).
      const double before = forward ? p.s_end_m - g.s_m : g.s_m - p.s_end_m;
      if (before < -1e-6 || before > kYieldSignReachM) continue;
      if (sign->type == SignType::kStop) p.yield = Yield::kStop;
      else if (p.yield == Yield::kNone) p.yield = Yield::kGiveWay;
    }
  }
}

void LaneGraph::Sample(LanePiece& p, std::vector<double>& s, std::vector<double>& d, std::vector<Vec3>& xy) const {
  const Road& road = network_.Roads()[p.road_index];
  const double lo = std::min(p.s_begin_m, p.s_end_m), hi = std::max(p.s_begin_m, p.s_end_m);
  const int n = std::max(2, static_cast<int>(std::ceil((hi - lo) / kSampleStepM)) + 1);
  // Evaluated inside the section: at an inner section boundary the next section's lanes would answer.
  const double hi_eval = hi < road.Length() ? std::max(lo, hi - 1e-9) : hi;
  // The lane centre's arc length per m of s: sqrt((1 - k t)^2 + (dt/ds)^2), integrated by the trapezoid rule
  // (exact on lines and arcs with a constant offset); its curvature k / (1 - k t).
  auto stretch = [&](double se, double t) {
    const double slope = OffsetSlope(road, p.lane, se, lo, hi_eval);
    const double k = road.Curvature(se);
    const double g = 1.0 - k * t;
    if (std::abs(g) > 1e-9) p.max_curvature_1pm = std::max(p.max_curvature_1pm, std::abs(k / g));
    return std::hypot(g, slope);
  };
  double prev_g = 0.0;
  for (int k = 0; k < n; ++k) {
    const double sk = p.s_begin_m + (p.s_end_m - p.s_begin_m) * k / (n - 1);
    const double se = std::clamp(sk, lo, hi_eval);
    const double t = road.LaneCenterOffsetAt(se, p.lane);
    s.push_back(sk);
    xy.push_back(road.SurfacePoint(se, t));
    const double g = stretch(se, t);
    d.push_back(k == 0 ? 0.0 : d.back() + 0.5 * (prev_g + g) * std::abs(sk - s[k - 1]));
    prev_g = g;
  }
  p.length_m = d.back();
}

double LaneGraph::RoadS(uint32_t piece, double d_m) const {
  const auto& d = sample_d_[piece];
  const auto& s = sample_s_[piece];
  if (d_m <= 0.0) return s.front();
  if (d_m >= d.back()) return s.back();
  const size_t k = static_cast<size_t>(std::upper_bound(d.begin(), d.end(), d_m) - d.begin());
  const double f = (d_m - d[k - 1]) / std::max(1e-12, d[k] - d[k - 1]);
  return s[k - 1] + f * (s[k] - s[k - 1]);
}

double LaneGraph::DistanceAt(uint32_t piece, double s_m) const {
  const auto& d = sample_d_[piece];
  const auto& s = sample_s_[piece];
  // s runs up or down along the piece; measured from its entry it always rises.
  const double sign = s.back() >= s.front() ? 1.0 : -1.0;
  const double u = sign * (s_m - s.front());
  const double span = sign * (s.back() - s.front());
  if (u <= 0.0) return 0.0;
  if (u >= span) return d.back();
  const size_t n = s.size();
  const size_t k = std::min(n - 1, std::max<size_t>(1, static_cast<size_t>(std::ceil(u / span * static_cast<double>(n - 1)))));
  const double f = (u - sign * (s[k - 1] - s.front())) / std::max(1e-12, sign * (s[k] - s[k - 1]));
  return d[k - 1] + std::clamp(f, 0.0, 1.0) * (d[k] - d[k - 1]);
}

LanePose LaneGraph::Pose(uint32_t piece, double d_m) const {
  const LanePiece& p = pieces_[piece];
  const Road& road = RoadOf(piece);
  const double lo = std::min(p.s_begin_m, p.s_end_m), hi = std::max(p.s_begin_m, p.s_end_m);
  const double hi_eval = hi < road.Length() ? std::max(lo, hi - 1e-9) : hi;
  LanePose out;
  out.s_m = std::clamp(RoadS(piece, d_m), lo, hi_eval);
  out.t_m = road.LaneCenterOffsetAt(out.s_m, p.lane);
  const RoadPoint ref = road.Evaluate(out.s_m);
  out.position_m = road.SurfacePoint(out.s_m, out.t_m);
  // The lane centre's direction: the reference heading turned by the offset's slope dt/ds.
  const double slope = OffsetSlope(road, p.lane, out.s_m, lo, hi_eval);
  const double stretch = 1.0 - ref.curvature_1pm * out.t_m;
  const double turn = std::atan2(slope, stretch);
  const bool forward = p.lane < 0;
  out.heading_rad = forward ? ref.heading_rad + turn : ref.heading_rad + turn + M_PI;
  const double k = std::abs(stretch) > 1e-9 ? ref.curvature_1pm / stretch : 0.0;
  out.curvature_1pm = forward ? k : -k;
  return out;
}

int64_t LaneGraph::PieceAt(int road_id, int lane, double s_m) const {
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const LanePiece& p = pieces_[i];
    if (p.road_id != road_id || p.lane != lane) continue;
    const double lo = std::min(p.s_begin_m, p.s_end_m), hi = std::max(p.s_begin_m, p.s_end_m);
    if (s_m >= lo && (s_m < hi || (s_m <= hi && hi >= RoadOf(static_cast<uint32_t>(i)).Length())))
      return static_cast<int64_t>(i);
  }
  return -1;
}

bool LaneGraph::Crosses(uint32_t a, uint32_t b, double clearance_m) const {
  if (a == b) return false;
  for (const uint32_t n : pieces_[a].next)
    if (std::find(pieces_[b].next.begin(), pieces_[b].next.end(), n) != pieces_[b].next.end()) return true;
  const double c2 = clearance_m * clearance_m;
  for (const Vec3& pa : sample_xy_[a])
    for (const Vec3& pb : sample_xy_[b]) {
      const double dx = pa.x() - pb.x(), dy = pa.y() - pb.y();
      if (dx * dx + dy * dy < c2) return true;
    }
  return false;
}

std::string LaneGraph::Describe(uint32_t piece) const {
  const LanePiece& p = pieces_[piece];
  return fmt::format("road {} lane {} [{:.1f}, {:.1f}]", p.road_id, p.lane, p.s_begin_m, p.s_end_m);
}

}  // namespace platoon::road
