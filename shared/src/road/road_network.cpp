#include "platoon/road/road_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <set>
#include <sstream>

namespace platoon::road {
namespace {

// 10-point Gauss-Legendre nodes and weights on [-1, 1] (positive half; symmetric).
constexpr double kGlNode[5] = {0.1488743389816312, 0.4333953941292472, 0.6794095682990244, 0.8650633666889845,
                               0.9739065285171717};
constexpr double kGlWeight[5] = {0.2955242247147529, 0.2692667193099963, 0.2190863625159820, 0.1494513491505806,
                                 0.0666713443086881};

// Largest heading change one Gauss-Legendre panel integrates, in rad. cos/sin of a quadratic phase
// varying this little is reproduced by the 10-point rule far below 1e-12 relative.
constexpr double kPanelHeadingRad = 0.5;
// Largest spacing of integration checkpoints, in m; bounds the work of one Evaluate.
constexpr double kCheckpointSpacingM = 10.0;

double WrapPi(double a) {
  a = std::fmod(a + std::numbers::pi, 2 * std::numbers::pi);
  if (a < 0) a += 2 * std::numbers::pi;
  return a - std::numbers::pi;
}

bool Finite(double v) { return std::isfinite(v); }

}  // namespace

const char* MarkingName(Marking m) {
  switch (m) {
    case Marking::kNone: return "none";
    case Marking::kSolid: return "solid";
    case Marking::kDashed: return "dashed";
    case Marking::kDouble: return "double";
    case Marking::kBottsDots: return "botts_dots";
  }
  return "?";
}

RoadDef DefaultRoadDef() {
  RoadDef d;
  d.sections = {LineSection(100.0)};
  return d;
}

std::vector<Marking> DefaultMarkings(int lanes_left, int lanes_right) {
  std::vector<Marking> m(static_cast<size_t>(lanes_left + lanes_right + 1), Marking::kDashed);
  m.front() = Marking::kSolid;
  m.back() = Marking::kSolid;
  return m;
}

std::string ValidateRoadDef(const RoadDef& d) {
  std::ostringstream os;
  if (!Finite(d.start_x_m) || !Finite(d.start_y_m) || !Finite(d.start_heading_rad) || !Finite(d.start_height_m) ||
      !Finite(d.grade))
    return "start_x_m, start_y_m, start_heading_rad, start_height_m and grade must be finite";
  if (std::abs(d.grade) > 1.0) {
    os << "grade must be in [-1, 1], got " << d.grade;
    return os.str();
  }
  if (d.sections.empty()) return "sections: at least one section is required";
  for (size_t i = 0; i < d.sections.size(); ++i) {
    const auto& s = d.sections[i];
    if (!(s.length_m > 0) || !Finite(s.length_m)) {
      os << "sections[" << i << "].length_m must be > 0, got " << s.length_m;
      return os.str();
    }
    if (!Finite(s.curvature_start_1pm) || !Finite(s.curvature_end_1pm) || std::abs(s.curvature_start_1pm) > 10 ||
        std::abs(s.curvature_end_1pm) > 10) {
      os << "sections[" << i << "]: curvatures must be within [-10, 10] 1/m";
      return os.str();
    }
  }
  if (d.lane_widths_left_m.empty() && d.lane_widths_right_m.empty()) return "a road needs at least one lane";
  for (size_t i = 0; i < d.lane_widths_left_m.size(); ++i)
    if (!(d.lane_widths_left_m[i] > 0) || !Finite(d.lane_widths_left_m[i])) {
      os << "lane_widths_left_m[" << i << "] must be > 0, got " << d.lane_widths_left_m[i];
      return os.str();
    }
  for (size_t i = 0; i < d.lane_widths_right_m.size(); ++i)
    if (!(d.lane_widths_right_m[i] > 0) || !Finite(d.lane_widths_right_m[i])) {
      os << "lane_widths_right_m[" << i << "] must be > 0, got " << d.lane_widths_right_m[i];
      return os.str();
    }
  const size_t boundaries = d.lane_widths_left_m.size() + d.lane_widths_right_m.size() + 1;
  if (!d.markings.empty() && d.markings.size() != boundaries) {
    os << "markings: expected " << boundaries << " entries (lanes_left + lanes_right + 1), got " << d.markings.size();
    return os.str();
  }
  return {};
}

Road::Road(RoadDef def) : def_(std::move(def)) {
  assert(ValidateRoadDef(def_).empty());
  if (def_.markings.empty()) def_.markings = DefaultMarkings(LanesLeft(), LanesRight());

  // Chain the sections: each starts at the previous one's end state (G1), with checkpoints inside
  // so that one Evaluate integrates at most kCheckpointSpacingM or kPanelHeadingRad of heading.
  Checkpoint c{0.0, def_.start_x_m, def_.start_y_m, def_.start_heading_rad, 0.0, 0.0};
  double max_k = 0.0;
  for (const auto& sec : def_.sections) {
    const double rate = (sec.curvature_end_1pm - sec.curvature_start_1pm) / sec.length_m;
    const double kmax = std::max(std::abs(sec.curvature_start_1pm), std::abs(sec.curvature_end_1pm));
    max_k = std::max(max_k, kmax);
    const double spacing = std::min(kCheckpointSpacingM, kmax > 0 ? kPanelHeadingRad / kmax : kCheckpointSpacingM);
    const int n = std::max(1, static_cast<int>(std::ceil(sec.length_m / spacing)));
    const double s0 = c.s_m;
    section_start_m_.push_back(s0);
    c.curvature_1pm = sec.curvature_start_1pm;
    c.curvature_rate_1pm2 = rate;
    for (int i = 0; i < n; ++i) {
      checkpoints_.push_back(c);
      // Positions from the section start's checkpoint-relative integration, s from the exact fraction.
      const double s_next = s0 + sec.length_m * (i + 1) / n;
      const RoadPoint p = Integrate(c, s_next);
      c = Checkpoint{s_next, p.position_m.x(), p.position_m.y(), p.heading_rad,
                     sec.curvature_start_1pm + rate * (s_next - s0), rate};
    }
    c.s_m = s0 + sec.length_m;
  }
  length_m_ = c.s_m;
  // The end state, so Evaluate(Length()) needs no integration.
  c.curvature_1pm = def_.sections.back().curvature_end_1pm;
  c.curvature_rate_1pm2 = 0.0;
  checkpoints_.push_back(c);

  // Coarse samples for projection: dense enough that each sample interval turns < 0.25 rad.
  sample_step_m_ = std::clamp(max_k > 0 ? 0.25 / max_k : 1.0, 0.05, 1.0);
  const int ns = std::max(2, static_cast<int>(std::ceil(length_m_ / sample_step_m_)) + 1);
  sample_step_m_ = length_m_ / (ns - 1);
  for (int i = 0; i < ns; ++i) {
    const double s = (i == ns - 1) ? length_m_ : i * sample_step_m_;
    const RoadPoint p = Evaluate(s);
    sample_s_m_.push_back(s);
    sample_x_m_.push_back(p.position_m.x());
    sample_y_m_.push_back(p.position_m.y());
  }
}

RoadPoint Road::Integrate(const Checkpoint& c, double s_m) const {
  // x(u) = x_c + int_0^u cos(theta(v)) dv, theta(v) = theta_c + k_c v + k' v^2 / 2 (eq. 2-3),
  // split into panels of bounded heading change, each with 10-point Gauss-Legendre.
  const double du = s_m - c.s_m;
  const double k0 = c.curvature_1pm, k1 = c.curvature_rate_1pm2;
  const double kmax = std::max(std::abs(k0), std::abs(k0 + k1 * du));
  const int panels = std::max(1, static_cast<int>(std::ceil(kmax * std::abs(du) / kPanelHeadingRad)));
  const double h = du / panels;
  double sx = 0.0, sy = 0.0;
  auto theta = [&](double v) { return c.heading_rad + k0 * v + 0.5 * k1 * v * v; };
  for (int p = 0; p < panels; ++p) {
    const double mid = (p + 0.5) * h;
    for (int i = 0; i < 5; ++i) {
      const double off = 0.5 * h * kGlNode[i];
      const double a = theta(mid - off), b = theta(mid + off);
      sx += kGlWeight[i] * (std::cos(a) + std::cos(b));
      sy += kGlWeight[i] * (std::sin(a) + std::sin(b));
    }
  }
  RoadPoint r;
  r.s_m = s_m;
  r.position_m = Vec3(c.x_m + 0.5 * h * sx, c.y_m + 0.5 * h * sy, Height(s_m));
  r.heading_rad = theta(du);
  r.curvature_1pm = k0 + k1 * du;
  return r;
}

RoadPoint Road::Evaluate(double s_m) const {
  s_m = std::clamp(s_m, 0.0, length_m_);
  // Last checkpoint at or before s.
  auto it = std::upper_bound(checkpoints_.begin(), checkpoints_.end(), s_m,
                             [](double s, const Checkpoint& c) { return s < c.s_m; });
  const Checkpoint& c = *std::prev(it);
  return Integrate(c, s_m);
}

double Road::Curvature(double s_m) const {
  s_m = std::clamp(s_m, 0.0, length_m_);
  auto it = std::upper_bound(section_start_m_.begin(), section_start_m_.end(), s_m);
  const size_t i = static_cast<size_t>(std::distance(section_start_m_.begin(), it)) - 1;
  const auto& sec = def_.sections[i];
  const double u = s_m - section_start_m_[i];
  return sec.curvature_start_1pm + (sec.curvature_end_1pm - sec.curvature_start_1pm) * u / sec.length_m;
}

double Road::Height(double s_m) const { return def_.start_height_m + def_.grade * std::clamp(s_m, 0.0, length_m_); }

Vec3 Road::PointAt(double s_m, double t_m) const {
  const RoadPoint p = Evaluate(s_m);
  return p.position_m + t_m * Vec3(-std::sin(p.heading_rad), std::cos(p.heading_rad), 0.0);
}

double Road::LaneWidth(int lane) const {
  assert(lane != 0 && lane <= LanesLeft() && -lane <= LanesRight());
  return lane > 0 ? def_.lane_widths_left_m[static_cast<size_t>(lane - 1)]
                  : def_.lane_widths_right_m[static_cast<size_t>(-lane - 1)];
}

double Road::BoundaryOffset(int b) const {
  assert(b <= LanesLeft() && -b <= LanesRight());
  double t = 0.0;
  for (int i = 1; i <= std::abs(b); ++i) t += LaneWidth(b > 0 ? i : -i);
  return b >= 0 ? t : -t;
}

Marking Road::BoundaryMarking(int b) const {
  assert(b <= LanesLeft() && -b <= LanesRight());
  return def_.markings[static_cast<size_t>(LanesLeft() - b)];
}

double Road::LaneCenterOffset(int lane) const {
  assert(lane != 0);
  const int inner = lane > 0 ? lane - 1 : lane + 1;
  return 0.5 * (BoundaryOffset(inner) + BoundaryOffset(lane));
}

int Road::LaneAt(double t_m) const {
  // On the reference line itself: the left lane when there is one.
  const bool left = t_m > 0 || (t_m == 0 && LanesLeft() > 0);
  if (left) {
    for (int i = 1; i <= LanesLeft(); ++i)
      if (t_m <= BoundaryOffset(i)) return i;
  } else {
    for (int i = 1; i <= LanesRight(); ++i)
      if (t_m >= BoundaryOffset(-i)) return -i;
  }
  return 0;
}

double Road::Distance2(double s_m, double x_m, double y_m) const {
  const RoadPoint p = Evaluate(s_m);
  const double dx = x_m - p.position_m.x(), dy = y_m - p.position_m.y();
  return dx * dx + dy * dy;
}

RoadCoord Road::Project(const Vec3& p_m) const { return Project(p_m, 0.0, length_m_); }

RoadCoord Road::Project(const Vec3& p_m, double s_lo_m, double s_hi_m) const {
  const double x = p_m.x(), y = p_m.y();
  // The samples of [s_lo_m, s_hi_m] (at least two): i0 .. n - 1.
  const size_t all = sample_s_m_.size();
  const auto first = std::upper_bound(sample_s_m_.begin(), sample_s_m_.end(), s_lo_m);
  const size_t i0 = std::min(all - 2, static_cast<size_t>(std::max<long>(0, first - sample_s_m_.begin() - 1)));
  const auto last = std::lower_bound(sample_s_m_.begin(), sample_s_m_.end(), s_hi_m);
  const size_t n = std::max(i0 + 2, std::min(all, static_cast<size_t>(last - sample_s_m_.begin()) + 1));
  // Squared distances of the window's samples only (d2[k] is sample i0 + k): a window near the end of a
  // long road must not cost the whole road.
  thread_local std::vector<double> d2_buffer;
  d2_buffer.resize(n - i0);
  const auto d2 = [&](size_t i) -> double& { return d2_buffer[i - i0]; };  // by sample index, i0 .. n - 1
  double best_sample = 1e300;
  for (size_t i = i0; i < n; ++i) {
    const double dx = x - sample_x_m_[i], dy = y - sample_y_m_[i];
    d2(i) = dx * dx + dy * dy;
    best_sample = std::min(best_sample, d2(i));
  }
  // Every sampled local minimum that could beat the best sample after refinement is refined:
  // the true minimum lies within one sample step of a sampled one.
  const double reach = std::sqrt(best_sample) + 2.0 * sample_step_m_;
  double best_s = 0.0, best_d2 = 1e300;
  for (size_t i = i0; i < n; ++i) {
    const bool local_min = (i == i0 || d2(i) <= d2(i - 1)) && (i + 1 == n || d2(i) <= d2(i + 1));
    if (!local_min || d2(i) > reach * reach) continue;
    double a = sample_s_m_[i == i0 ? i0 : i - 1], b = sample_s_m_[i + 1 == n ? n - 1 : i + 1];
    // Golden-section search of the squared distance within the bracket.
    const double g = (std::sqrt(5.0) - 1.0) / 2.0;
    double c = b - g * (b - a), d = a + g * (b - a);
    double fc = Distance2(c, x, y), fd = Distance2(d, x, y);
    while (b - a > 1e-7) {
      if (fc < fd) {
        b = d; d = c; fd = fc; c = b - g * (b - a); fc = Distance2(c, x, y);
      } else {
        a = c; c = d; fc = fd; d = a + g * (b - a); fd = Distance2(d, x, y);
      }
    }
    double s = 0.5 * (a + b), f2 = Distance2(s, x, y);
    // Newton polish on (p - c(s)) . T(s) = 0, whose derivative is -(1 - k t) (eq. 8); kept only if it helps.
    for (int it = 0; it < 3; ++it) {
      const RoadPoint rp = Evaluate(s);
      const double ch = std::cos(rp.heading_rad), sh = std::sin(rp.heading_rad);
      const double dx = x - rp.position_m.x(), dy = y - rp.position_m.y();
      const double along = dx * ch + dy * sh, lateral = -dx * sh + dy * ch;
      const double denom = 1.0 - rp.curvature_1pm * lateral;
      if (denom < 0.1) break;
      const double s_new = std::clamp(s + along / denom, 0.0, length_m_);
      const double f_new = Distance2(s_new, x, y);
      if (!(f_new <= f2)) break;
      s = s_new;
      f2 = f_new;
    }
    if (f2 < best_d2) {
      best_d2 = f2;
      best_s = s;
    }
  }
  const RoadPoint rp = Evaluate(best_s);
  RoadCoord r;
  r.road_id = def_.id;
  r.s_m = best_s;
  r.t_m = -(x - rp.position_m.x()) * std::sin(rp.heading_rad) + (y - rp.position_m.y()) * std::cos(rp.heading_rad);
  r.lane = LaneAt(r.t_m);
  r.distance_m = std::sqrt(best_d2);
  return r;
}

RoadNetwork::RoadNetwork(std::vector<RoadDef> defs) {
  std::set<int> ids;
  for (auto& d : defs) {
    [[maybe_unused]] const bool unique = ids.insert(d.id).second;
    assert(unique);
    roads_.emplace_back(std::move(d));
  }
  for ([[maybe_unused]] const auto& r : roads_) {
    assert(r.Def().successor_id < 0 || ids.count(r.Def().successor_id));
    assert(r.Def().predecessor_id < 0 || ids.count(r.Def().predecessor_id));
  }
}

const Road* RoadNetwork::Find(int id) const {
  for (const auto& r : roads_)
    if (r.Id() == id) return &r;
  return nullptr;
}

RoadCoord RoadNetwork::Project(const Vec3& p_m) const {
  RoadCoord best;
  double best_d = 1e300;
  for (const auto& r : roads_) {
    const RoadCoord c = r.Project(p_m);
    if (c.distance_m < best_d) {
      best_d = c.distance_m;
      best = c;
    }
  }
  return best;
}

std::vector<LinkGap> RoadNetwork::CheckLinks() const {
  std::vector<LinkGap> out;
  for (const auto& r : roads_) {
    const Road* next = r.Def().successor_id >= 0 ? Find(r.Def().successor_id) : nullptr;
    if (!next) continue;
    const RoadPoint end = r.Evaluate(r.Length()), start = next->Evaluate(0.0);
    LinkGap g;
    g.road_id = r.Id();
    g.successor_id = next->Id();
    g.gap_m = (end.position_m - start.position_m).head<2>().norm();
    g.heading_error_rad = WrapPi(start.heading_rad - end.heading_rad);
    g.height_error_m = start.position_m.z() - end.position_m.z();
    out.push_back(g);
  }
  return out;
}

}  // namespace platoon::road
