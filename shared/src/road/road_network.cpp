#include "platoon/road/road_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <array>
#include <cstdint>
#include <string>
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

// Arc length of v(u) = a + b u + c u^2 + d u^3 from u0 to u1, sqrt(1 + v'^2) by 10-point Gauss-Legendre on
// panels of at most 1 m (the integrand is smooth; far below 1e-12 m per panel).
double PolyArcLengthBetween(const std::array<double, 4>& p, double u0, double u1) {
  const int panels = std::max(1, static_cast<int>(std::ceil(std::abs(u1 - u0))));
  const double h = (u1 - u0) / panels;
  double sum = 0.0;
  for (int k = 0; k < panels; ++k) {
    const double mid = u0 + (k + 0.5) * h;
    for (int i = 0; i < 5; ++i)
      for (double sign : {-1.0, 1.0}) {
        const double u = mid + sign * 0.5 * h * kGlNode[i];
        const double dv = p[1] + u * (2 * p[2] + 3 * u * p[3]);
        sum += kGlWeight[i] * std::sqrt(1 + dv * dv);
      }
  }
  return 0.5 * h * sum;
}

// Edge of a projection grid cell, in m: a road's own grid (Road::Project) and the network's (RoadNetwork::Project,
// over every road's samples at once). A query needs every sample within its nearest sample distance + 2 to 2.5
// sample steps (1 m at most); small cells visit fewer samples, large ones fewer cells and less memory. Measured
// with road_index_bench and opendrive_import_bench (docs/BENCHMARKS.md); the network's cells grow where the map's
// box would need more than kNetworkCellsPerSample cells per sample.
constexpr double kRoadGridCellM = 4.0;
constexpr double kNetworkGridCellM = 4.0;
constexpr double kNetworkCellsPerSample = 4.0;
constexpr double kGridCellM = kNetworkGridCellM;
// Rings of cells searched around a query before it falls back to trying every sample: 40 rings of 4 m
// reach at least 160 m, beyond which a road's nearest sample is far and brute force is rare.
constexpr int kGridMaxRings = 40;
// Slack on the ring distance bound, in m: covers the rounding of cell coordinates and of the distances
// (both ~1e-12 m at 1e5 m from the origin), so a bound never cuts off a sample it should keep.
constexpr double kGridSlackM = 1e-6;
// How far a sample may lie outside the cell it is binned in (rounding of the binning), in m.
constexpr double kGridBinSlackM = 1e-6;
// Coordinates beyond this, in m, go straight to brute force: no cell index overflows.
constexpr double kGridMaxCoordM = 1e9;

// Cell layout of a uniform grid over a point set's bounding box.
struct GridLayout {
  double x0_m = 0.0, y0_m = 0.0, cell_m = kGridCellM;
  int nx = 1, ny = 1;
};

// A layout over the box [x_lo, x_hi] x [y_lo, y_hi]; cells grow past kGridCellM only where the box would
// need more than ~4 cells per point (a long diagonal road), which bounds the grid's memory to O(points).
GridLayout MakeGridLayout(double x_lo, double x_hi, double y_lo, double y_hi, size_t points, double cell_m,
                          double cells_per_point = 4.0) {
  GridLayout g;
  g.cell_m = cell_m;
  g.x0_m = x_lo;
  g.y0_m = y_lo;
  const double max_cells = cells_per_point * static_cast<double>(points) + 64.0;
  for (;;) {
    const double nx = std::floor((x_hi - x_lo) / g.cell_m) + 1, ny = std::floor((y_hi - y_lo) / g.cell_m) + 1;
    if (nx * ny <= max_cells) {
      g.nx = static_cast<int>(nx);
      g.ny = static_cast<int>(ny);
      return g;
    }
    g.cell_m *= 1.5;
  }
}

// Cell of a point inside the layout's box (clamped against rounding at the far edges).
int CellOf(double v_m, double v0_m, double cell_m, int n) {
  return std::clamp(static_cast<int>(std::floor((v_m - v0_m) / cell_m)), 0, n - 1);
}

// Where a query sits in a grid: its cell (possibly outside [0, n)) and the distance from the query to
// the nearest edge of that cell, so that the (2k + 1)^2 block of cells around it contains the disc of
// radius k * cell + edge around the query.
struct GridQuery {
  int cx = 0, cy = 0;
  double edge_m = 0.0;
};

// The query's cell, or false when it lies more than kGridMaxRings cells outside the grid (no cell within
// the rings searched holds anything).
bool LocateInGrid(const GridLayout& g, double x_m, double y_m, GridQuery* q) {
  const double fx = std::floor((x_m - g.x0_m) / g.cell_m), fy = std::floor((y_m - g.y0_m) / g.cell_m);
  if (fx < -kGridMaxRings - 1 || fx > g.nx + kGridMaxRings || fy < -kGridMaxRings - 1 || fy > g.ny + kGridMaxRings)
    return false;
  q->cx = static_cast<int>(fx);
  q->cy = static_cast<int>(fy);
  const double left = g.x0_m + q->cx * g.cell_m, bottom = g.y0_m + q->cy * g.cell_m;
  q->edge_m = std::max(0.0, std::min({x_m - left, left + g.cell_m - x_m, y_m - bottom, bottom + g.cell_m - y_m}));
  return true;
}

// Calls f(cell index, x, y) for the cells of ring k around q inside the grid (ForEachRingCell with coordinates).
template <class F>
void ForEachRingCellXY(const GridLayout& g, const GridQuery& q, int k, F&& f) {
  for (int dy = -k; dy <= k; ++dy) {
    const int y = q.cy + dy;
    if (y < 0 || y >= g.ny) continue;
    const size_t row = static_cast<size_t>(y) * static_cast<size_t>(g.nx);
    const int step = (dy == -k || dy == k) ? 1 : std::max(1, 2 * k);
    for (int x = q.cx - k; x <= q.cx + k; x += step)
      if (x >= 0 && x < g.nx) f(row + static_cast<size_t>(x), x, y);
  }
}

// Calls f(cell index) for every cell of ring k around q (the border of its (2k + 1)^2 block) inside the grid.
template <class F>
void ForEachRingCell(const GridLayout& g, const GridQuery& q, int k, F&& f) {
  ForEachRingCellXY(g, q, k, [&](size_t cell, int, int) { f(cell); });
}

// Compressed cell lists from (cell, value) pairs: start[j] .. start[j + 1] index the values of cell j,
// in ascending order, without duplicates.
void BuildCellLists(std::vector<std::pair<uint32_t, uint32_t>> pairs, size_t cells, std::vector<uint32_t>* start,
                    std::vector<uint32_t>* values) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  start->assign(cells + 1, 0);
  for (const auto& [cell, v] : pairs) ++(*start)[cell + 1];
  for (size_t j = 0; j < cells; ++j) (*start)[j + 1] += (*start)[j];
  values->resize(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) (*values)[k] = pairs[k].second;
}

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

double EvaluateCubic(const std::vector<CubicPiece>& pieces, double s_m) {
  if (pieces.empty()) return 0.0;
  auto it = std::upper_bound(pieces.begin(), pieces.end(), s_m, [](double s, const CubicPiece& p) { return s < p.s_m; });
  const CubicPiece& p = it == pieces.begin() ? pieces.front() : *std::prev(it);
  const double ds = s_m - p.s_m;
  return p.a + ds * (p.b + ds * (p.c + ds * p.d));
}

double EvaluateCubicSlope(const std::vector<CubicPiece>& pieces, double s_m) {
  if (pieces.empty()) return 0.0;
  auto it = std::upper_bound(pieces.begin(), pieces.end(), s_m, [](double s, const CubicPiece& p) { return s < p.s_m; });
  const CubicPiece& p = it == pieces.begin() ? pieces.front() : *std::prev(it);
  const double ds = s_m - p.s_m;
  return p.b + ds * (2.0 * p.c + 3.0 * ds * p.d);
}

namespace {
constexpr std::pair<LaneType, const char*> kLaneTypeNames[] = {
    {LaneType::kDriving, "driving"},       {LaneType::kNone, "none"},
    {LaneType::kBorder, "border"},         {LaneType::kShoulder, "shoulder"},
    {LaneType::kSidewalk, "sidewalk"},     {LaneType::kParking, "parking"},
    {LaneType::kBiking, "biking"},         {LaneType::kMedian, "median"},
    {LaneType::kRestricted, "restricted"}, {LaneType::kCurb, "curb"},
    {LaneType::kStop, "stop"},             {LaneType::kEntry, "entry"},
    {LaneType::kExit, "exit"},             {LaneType::kOnRamp, "onRamp"},
    {LaneType::kOffRamp, "offRamp"},       {LaneType::kConnectingRamp, "connectingRamp"},
    {LaneType::kBidirectional, "bidirectional"}, {LaneType::kSpecial1, "special1"},
    {LaneType::kSpecial2, "special2"},     {LaneType::kSpecial3, "special3"},
    {LaneType::kRoadWorks, "roadWorks"},   {LaneType::kTram, "tram"},
    {LaneType::kRail, "rail"},             {LaneType::kBus, "bus"},
    {LaneType::kTaxi, "taxi"},             {LaneType::kHov, "HOV"},
    {LaneType::kMwyEntry, "mwyEntry"},     {LaneType::kMwyExit, "mwyExit"},
    {LaneType::kWalking, "walking"},       {LaneType::kSlipLane, "slipLane"},
    {LaneType::kShared, "shared"},
};
constexpr std::pair<MarkColor, const char*> kMarkColorNames[] = {
    {MarkColor::kStandard, "standard"}, {MarkColor::kWhite, "white"},   {MarkColor::kYellow, "yellow"},
    {MarkColor::kBlue, "blue"},         {MarkColor::kGreen, "green"},   {MarkColor::kRed, "red"},
    {MarkColor::kOrange, "orange"},     {MarkColor::kViolet, "violet"}, {MarkColor::kBlack, "black"},
};
}  // namespace

const char* LaneTypeName(LaneType t) {
  for (const auto& [v, n] : kLaneTypeNames)
    if (v == t) return n;
  return "?";
}

bool ParseLaneType(const std::string& name, LaneType* out) {
  for (const auto& [v, n] : kLaneTypeNames)
    if (name == n) {
      *out = v;
      return true;
    }
  // OpenDRIVE 1.4 spelled the ramps in lower case.
  if (name == "onramp") { *out = LaneType::kOnRamp; return true; }
  if (name == "offramp") { *out = LaneType::kOffRamp; return true; }
  if (name == "connectingramp") { *out = LaneType::kConnectingRamp; return true; }
  return false;
}

const char* MarkColorName(MarkColor c) {
  for (const auto& [v, n] : kMarkColorNames)
    if (v == c) return n;
  return "?";
}

Marking MarkingOfRoadMark(const std::string& type) {
  if (type == "solid" || type == "edge") return Marking::kSolid;
  if (type == "broken") return Marking::kDashed;
  if (type == "solid solid" || type == "solid broken" || type == "broken solid" || type == "broken broken")
    return Marking::kDouble;
  if (type == "botts dots") return Marking::kBottsDots;
  return Marking::kNone;
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
  for (size_t i = 0; i < d.sections.size(); ++i) {
    const auto& s = d.sections[i];
    for (double v : s.u_poly)
      if (!Finite(v)) return "sections[" + std::to_string(i) + "].u_poly must be finite";
    for (double v : s.v_poly)
      if (!Finite(v)) return "sections[" + std::to_string(i) + "].v_poly must be finite";
    if (s.kind == GeometryKind::kParamPoly3 && s.u_poly[1] == 0.0 && s.v_poly[1] == 0.0)
      return "sections[" + std::to_string(i) + "]: a paramPoly3 needs a start tangent (bU, bV not both 0)";
  }
  for (const auto* pieces : {&d.elevation, &d.superelevation, &d.lane_offset})
    for (size_t i = 0; i < pieces->size(); ++i) {
      const CubicPiece& p = (*pieces)[i];
      if (!Finite(p.s_m) || !Finite(p.a) || !Finite(p.b) || !Finite(p.c) || !Finite(p.d))
        return "elevation, superelevation and lane_offset pieces must be finite";
      if (i > 0 && p.s_m < (*pieces)[i - 1].s_m) return "elevation, superelevation and lane_offset pieces must be sorted by s";
    }
  if (!d.lane_sections.empty()) {
    for (size_t k = 0; k < d.lane_sections.size(); ++k) {
      const LaneSectionDef& ls = d.lane_sections[k];
      os << "lane_sections[" << k << "]: ";
      if (!Finite(ls.s_m) || ls.s_m < 0 || (k > 0 && ls.s_m < d.lane_sections[k - 1].s_m)) {
        os << "s_m must be >= 0 and not below the previous section's, got " << ls.s_m;
        return os.str();
      }
      if (ls.left.empty() && ls.right.empty()) {
        os << "a lane section needs at least one lane";
        return os.str();
      }
      for (int side = 0; side < 2; ++side) {
        const auto& lanes = side == 0 ? ls.left : ls.right;
        for (size_t i = 0; i < lanes.size(); ++i) {
          const int want = side == 0 ? static_cast<int>(i) + 1 : -static_cast<int>(i) - 1;
          if (lanes[i].id != want) {
            os << "lane " << lanes[i].id << " stands where lane " << want << " belongs";
            return os.str();
          }
          if (lanes[i].width.empty()) {
            os << "lane " << want << " needs a width";
            return os.str();
          }
          for (const CubicPiece& p : lanes[i].width)
            if (!Finite(p.s_m) || !Finite(p.a) || !Finite(p.b) || !Finite(p.c) || !Finite(p.d)) {
              os << "lane " << want << ": width pieces must be finite";
              return os.str();
            }
        }
      }
      os.str("");
    }
    return {};
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
  if (HasLaneProfile()) {
    // The constant layout answers for s = 0: the first section's lanes and marks there.
    const LaneSectionDef& ls = def_.lane_sections.front();
    def_.lane_widths_left_m.assign(ls.left.size(), 0.0);
    def_.lane_widths_right_m.assign(ls.right.size(), 0.0);
    def_.markings.clear();
    const int left = static_cast<int>(ls.left.size()), right = static_cast<int>(ls.right.size());
    for (int b = left; b >= -right; --b) {
      const RoadMarkDef* m = BoundaryMarkAt(ls.s_m, b);
      def_.markings.push_back(m ? MarkingOfRoadMark(m->type) : Marking::kNone);
    }
  }
  if (def_.markings.empty()) def_.markings = DefaultMarkings(LanesLeft(), LanesRight());
  bool curves = false;
  for (const auto& sec : def_.sections) curves = curves || sec.kind != GeometryKind::kClothoid;
  if (curves) frames_.resize(def_.sections.size());

  // Chain the sections: each starts at the previous one's end state (G1), with checkpoints inside
  // so that one Evaluate integrates at most kCheckpointSpacingM or kPanelHeadingRad of heading.
  Checkpoint c = MakeCheckpoint(0.0, def_.start_x_m, def_.start_y_m, def_.start_heading_rad, 0.0, 0.0);
  double max_k = 0.0;
  for (size_t si = 0; si < def_.sections.size(); ++si) {
    const auto& sec = def_.sections[si];
    if (sec.kind != GeometryKind::kClothoid) {
      // A cubic curve: its local frame puts the curve's start and start tangent on the chain's state.
      section_start_m_.push_back(c.s_m);
      CurveFrame& f = frames_[si];
      const double u0 = sec.kind == GeometryKind::kPoly3 ? 0.0 : sec.u_poly[0];
      const double v0 = sec.v_poly[0];
      const double du = sec.kind == GeometryKind::kPoly3 ? 1.0 : sec.u_poly[1];
      const double dv = sec.v_poly[1];
      f.heading_rad = c.heading_rad - std::atan2(dv, du);
      f.x_m = c.x_m - (u0 * std::cos(f.heading_rad) - v0 * std::sin(f.heading_rad));
      f.y_m = c.y_m - (u0 * std::sin(f.heading_rad) + v0 * std::cos(f.heading_rad));
      if (sec.kind == GeometryKind::kPoly3) {
        // Arc length table s(u) over u in [0, length] (the curve is at least as long as its chord along u).
        const int n = std::max(4, static_cast<int>(std::ceil(sec.length_m / 1.0)));
        f.u.push_back(0.0);
        f.s.push_back(0.0);
        for (int i = 1; i <= n; ++i) {
          const double u = sec.length_m * i / n;
          f.u.push_back(u);
          f.s.push_back(f.s.back() + PolyArcLengthBetween(sec.v_poly, f.u[f.u.size() - 2], u));
        }
      }
      const RoadPoint e = EvaluateCurve(si, c.s_m + sec.length_m);
      max_k = std::max(max_k, std::abs(EvaluateCurve(si, c.s_m).curvature_1pm));
      max_k = std::max(max_k, std::abs(e.curvature_1pm));
      max_k = std::max(max_k, std::abs(EvaluateCurve(si, c.s_m + 0.5 * sec.length_m).curvature_1pm));
      c = MakeCheckpoint(c.s_m + sec.length_m, e.position_m.x(), e.position_m.y(), e.heading_rad, e.curvature_1pm, 0.0);
      continue;
    }
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
      c = MakeCheckpoint(s_next, p.position_m.x(), p.position_m.y(), p.heading_rad,
                         sec.curvature_start_1pm + rate * (s_next - s0), rate);
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
    sample_cos_.push_back(std::cos(p.heading_rad));
    sample_sin_.push_back(std::sin(p.heading_rad));
    sample_k_.push_back(p.curvature_1pm);
  }
  BuildGrid();
}

void Road::BuildGrid() {
  const auto [x_lo, x_hi] = std::minmax_element(sample_x_m_.begin(), sample_x_m_.end());
  const auto [y_lo, y_hi] = std::minmax_element(sample_y_m_.begin(), sample_y_m_.end());
  const GridLayout g = MakeGridLayout(*x_lo, *x_hi, *y_lo, *y_hi, sample_x_m_.size(), kRoadGridCellM);
  grid_x0_m_ = g.x0_m;
  grid_y0_m_ = g.y0_m;
  grid_cell_m_ = g.cell_m;
  grid_nx_ = g.nx;
  grid_ny_ = g.ny;
  // Each sample goes to the one cell that holds it; pairs sorted by cell keep each cell's samples ascending.
  std::vector<std::pair<uint32_t, uint32_t>> pairs(sample_x_m_.size());
  for (size_t i = 0; i < sample_x_m_.size(); ++i) {
    const int cx = CellOf(sample_x_m_[i], grid_x0_m_, grid_cell_m_, grid_nx_);
    const int cy = CellOf(sample_y_m_[i], grid_y0_m_, grid_cell_m_, grid_ny_);
    pairs[i] = {static_cast<uint32_t>(cy * grid_nx_ + cx), static_cast<uint32_t>(i)};
  }
  BuildCellLists(std::move(pairs), static_cast<size_t>(grid_nx_) * static_cast<size_t>(grid_ny_), &grid_start_,
                 &grid_samples_);
}

RoadPoint Road::Integrate(const Checkpoint& c, double s_m) const {
  if (c.curvature_rate_1pm2 == 0.0) {
    // A line or an arc: closed form. The chord from the checkpoint has the mean heading and length
    // du sinc(k du / 2) (sinc by its series where k du is tiny, so a slight arc loses no digits).
    const double du = s_m - c.s_m, k = c.curvature_1pm;
    const double half = 0.5 * k * du;
    const double sinc = std::abs(half) < 1e-4 ? 1.0 - half * half / 6.0 : std::sin(half) / half;
    const double mean = c.heading_rad + half;
    // On a line the mean heading is the checkpoint's (half = 0): its cached cosine and sine are the same bits.
    const double cm = k == 0.0 ? c.cos_heading : std::cos(mean), sm = k == 0.0 ? c.sin_heading : std::sin(mean);
    RoadPoint r;
    r.s_m = s_m;
    r.position_m = Vec3(c.x_m + du * sinc * cm, c.y_m + du * sinc * sm, Height(s_m));
    r.heading_rad = c.heading_rad + k * du;
    r.curvature_1pm = k;
    return r;
  }
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
  if (!frames_.empty()) {
    auto sec = std::upper_bound(section_start_m_.begin(), section_start_m_.end(), s_m);
    const size_t i = static_cast<size_t>(std::distance(section_start_m_.begin(), sec)) - 1;
    if (def_.sections[i].kind != GeometryKind::kClothoid) return EvaluateCurve(i, s_m);
  }
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
  if (sec.kind != GeometryKind::kClothoid) return EvaluateCurve(i, s_m).curvature_1pm;
  const double u = s_m - section_start_m_[i];
  return sec.curvature_start_1pm + (sec.curvature_end_1pm - sec.curvature_start_1pm) * u / sec.length_m;
}

double Road::Height(double s_m) const {
  if (!def_.elevation.empty()) return EvaluateCubic(def_.elevation, std::clamp(s_m, 0.0, length_m_));
  return def_.start_height_m + def_.grade * std::clamp(s_m, 0.0, length_m_);
}

double Road::Slope(double s_m) const {
  if (!def_.elevation.empty()) return EvaluateCubicSlope(def_.elevation, std::clamp(s_m, 0.0, length_m_));
  return def_.grade;
}

double Road::Roll(double s_m) const { return EvaluateCubic(def_.superelevation, std::clamp(s_m, 0.0, length_m_)); }

Vec3 Road::SurfacePoint(double s_m, double t_m) const {
  Vec3 p = PointAt(s_m, t_m);
  p.z() += t_m * std::tan(Roll(s_m));
  return p;
}

Vec3 Road::SectionFrame(size_t i) const {
  if (!frames_.empty() && def_.sections[i].kind != GeometryKind::kClothoid)
    return Vec3(frames_[i].x_m, frames_[i].y_m, frames_[i].heading_rad);
  if (i == 0) return Vec3(def_.start_x_m, def_.start_y_m, def_.start_heading_rad);
  const RoadPoint p = Evaluate(section_start_m_[i]);
  return Vec3(p.position_m.x(), p.position_m.y(), p.heading_rad);
}

RoadPoint Road::EvaluateCurve(size_t i, double s_m) const {
  const SectionDef& sec = def_.sections[i];
  const CurveFrame& f = frames_[i];
  const double ds = std::clamp(s_m - section_start_m_[i], 0.0, sec.length_m);
  const auto& a = sec.u_poly;
  const auto& b = sec.v_poly;
  double u, v, u1, v1, u2, v2;  // position and first two derivatives in the curve's parameter
  if (sec.kind == GeometryKind::kParamPoly3) {
    const double p = sec.p_normalized ? ds / sec.length_m : ds;
    u = a[0] + p * (a[1] + p * (a[2] + p * a[3]));
    v = b[0] + p * (b[1] + p * (b[2] + p * b[3]));
    u1 = a[1] + p * (2 * a[2] + 3 * p * a[3]);
    v1 = b[1] + p * (2 * b[2] + 3 * p * b[3]);
    u2 = 2 * a[2] + 6 * p * a[3];
    v2 = 2 * b[2] + 6 * p * b[3];
  } else {
    // poly3: the u whose arc length from u = 0 is ds (table, then Newton on s(u) - ds).
    auto it = std::upper_bound(f.s.begin(), f.s.end(), ds);
    size_t k = std::min(f.s.size() - 2, static_cast<size_t>(std::max<long>(0, it - f.s.begin() - 1)));
    double uu = f.u[k] + (ds - f.s[k]) / std::max(1e-12, f.s[k + 1] - f.s[k]) * (f.u[k + 1] - f.u[k]);
    for (int iter = 0; iter < 8; ++iter) {
      const double slope = b[1] + uu * (2 * b[2] + 3 * uu * b[3]);
      const double err = f.s[k] + PolyArcLengthBetween(b, f.u[k], uu) - ds;
      const double step = err / std::sqrt(1 + slope * slope);
      uu -= step;
      if (std::abs(step) < 1e-13) break;
    }
    u = uu;
    v = b[0] + uu * (b[1] + uu * (b[2] + uu * b[3]));
    u1 = 1.0;
    v1 = b[1] + uu * (2 * b[2] + 3 * uu * b[3]);
    u2 = 0.0;
    v2 = 2 * b[2] + 6 * uu * b[3];
  }
  const double ch = std::cos(f.heading_rad), sh = std::sin(f.heading_rad);
  RoadPoint r;
  r.s_m = s_m;
  r.position_m = Vec3(f.x_m + u * ch - v * sh, f.y_m + u * sh + v * ch, Height(s_m));
  r.heading_rad = f.heading_rad + std::atan2(v1, u1);
  const double n2 = u1 * u1 + v1 * v1;
  r.curvature_1pm = n2 > 0 ? (u1 * v2 - v1 * u2) / (n2 * std::sqrt(n2)) : 0.0;
  return r;
}

Vec3 Road::PointAt(double s_m, double t_m) const {
  const RoadPoint p = Evaluate(s_m);
  return p.position_m + t_m * Vec3(-std::sin(p.heading_rad), std::cos(p.heading_rad), 0.0);
}

double Road::LaneWidth(int lane) const {
  if (HasLaneProfile()) return LaneWidthAt(0.0, lane);
  assert(lane != 0 && lane <= LanesLeft() && -lane <= LanesRight());
  return lane > 0 ? def_.lane_widths_left_m[static_cast<size_t>(lane - 1)]
                  : def_.lane_widths_right_m[static_cast<size_t>(-lane - 1)];
}

double Road::BoundaryOffset(int b) const {
  if (HasLaneProfile()) return BoundaryOffsetAt(0.0, b);
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
  if (HasLaneProfile()) return LaneAt(0.0, t_m);
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

size_t Road::LaneSectionAt(double s_m) const {
  const auto& ls = def_.lane_sections;
  if (ls.empty()) return 0;
  auto it = std::upper_bound(ls.begin(), ls.end(), s_m, [](double s, const LaneSectionDef& l) { return s < l.s_m; });
  return it == ls.begin() ? 0 : static_cast<size_t>(std::distance(ls.begin(), it)) - 1;
}

int Road::LanesLeftAt(double s_m) const {
  return HasLaneProfile() ? static_cast<int>(def_.lane_sections[LaneSectionAt(s_m)].left.size()) : LanesLeft();
}

int Road::LanesRightAt(double s_m) const {
  return HasLaneProfile() ? static_cast<int>(def_.lane_sections[LaneSectionAt(s_m)].right.size()) : LanesRight();
}

double Road::LaneOffsetAt(double s_m) const { return EvaluateCubic(def_.lane_offset, s_m); }

double Road::BoundaryOffsetAt(double s_m, int b) const {
  if (!HasLaneProfile()) return BoundaryOffset(b) + LaneOffsetAt(s_m);
  const LaneSectionDef& ls = def_.lane_sections[LaneSectionAt(s_m)];
  const auto& lanes = b > 0 ? ls.left : ls.right;
  assert(static_cast<size_t>(std::abs(b)) <= lanes.size());
  const double ds = s_m - ls.s_m;
  // Outwards from the lane offset line: a width adds to the inner boundary, a border places the outer one at
  // its t from the reference line (signed, as OpenDRIVE's border records give it).
  const double sign = b >= 0 ? 1.0 : -1.0;
  double t = LaneOffsetAt(s_m);
  for (int i = 0; i < std::abs(b); ++i) {
    const LaneDef& l = lanes[static_cast<size_t>(i)];
    const double w = EvaluateCubic(l.width, ds);
    t = l.border ? w : t + sign * w;
  }
  return t;
}

double Road::LaneWidthAt(double s_m, int lane) const {
  assert(lane != 0);
  const int inner = lane > 0 ? lane - 1 : lane + 1;
  return std::abs(BoundaryOffsetAt(s_m, lane) - BoundaryOffsetAt(s_m, inner));
}

double Road::LaneCenterOffsetAt(double s_m, int lane) const {
  assert(lane != 0);
  const int inner = lane > 0 ? lane - 1 : lane + 1;
  return 0.5 * (BoundaryOffsetAt(s_m, inner) + BoundaryOffsetAt(s_m, lane));
}

LaneType Road::LaneTypeAt(double s_m, int lane) const {
  if (!HasLaneProfile()) return LaneType::kDriving;
  const LaneSectionDef& ls = def_.lane_sections[LaneSectionAt(s_m)];
  const auto& lanes = lane > 0 ? ls.left : ls.right;
  const size_t i = static_cast<size_t>(std::abs(lane)) - 1;
  assert(lane != 0 && i < lanes.size());
  return lanes[i].type;
}

const RoadMarkDef* Road::BoundaryMarkAt(double s_m, int b) const {
  if (!HasLaneProfile()) return nullptr;
  const LaneSectionDef& ls = def_.lane_sections[LaneSectionAt(s_m)];
  const std::vector<RoadMarkDef>* marks = &ls.center_marks;
  if (b != 0) {
    const auto& lanes = b > 0 ? ls.left : ls.right;
    const size_t i = static_cast<size_t>(std::abs(b)) - 1;
    assert(i < lanes.size());
    marks = &lanes[i].marks;
  }
  const double ds = s_m - ls.s_m;
  const RoadMarkDef* found = nullptr;
  for (const RoadMarkDef& m : *marks)
    if (m.s_offset_m <= ds + 1e-9) found = &m;
  return found;
}

int Road::LaneAt(double s_m, double t_m) const {
  if (!HasLaneProfile()) return LaneAt(t_m - LaneOffsetAt(s_m));
  const double t0 = LaneOffsetAt(s_m);
  // On the lane offset line itself: the left lane when there is one.
  const bool left = t_m > t0 || (t_m == t0 && LanesLeftAt(s_m) > 0);
  if (left) {
    for (int i = 1; i <= LanesLeftAt(s_m); ++i)
      if (t_m <= BoundaryOffsetAt(s_m, i)) return i;
  } else {
    for (int i = 1; i <= LanesRightAt(s_m); ++i)
      if (t_m >= BoundaryOffsetAt(s_m, -i)) return -i;
  }
  return 0;
}

double Road::Distance2(double s_m, double x_m, double y_m) const {
  const RoadPoint p = Evaluate(s_m);
  const double dx = x_m - p.position_m.x(), dy = y_m - p.position_m.y();
  return dx * dx + dy * dy;
}

double Road::SampleDistance2(size_t i, double x_m, double y_m) const {
  const double dx = x_m - sample_x_m_[i], dy = y_m - sample_y_m_[i];
  return dx * dx + dy * dy;
}

namespace {
// The last point RefineMinimum evaluated, so Finish need not evaluate the same s again (one per thread).
struct RefinedPoint {
  const Road* road = nullptr;
  double s_m = 0;
  RoadPoint point;
};
thread_local RefinedPoint g_refined;
}  // namespace

double Road::RefineMinimum(size_t i, size_t i0, size_t n, double x, double y, double* f2_out) const {
  double a = sample_s_m_[i == i0 ? i0 : i - 1], b = sample_s_m_[i + 1 == n ? n - 1 : i + 1];
  // Newton on (p - c(s)) . T(s) = 0 (derivative -(1 - k t), eq. 8) within the bracket: its first step from the
  // sample's stored frame, then on the exact line until the step is below 1e-10 m (a few steps: quadratic
  // convergence from within a sample step). Near a centre of curvature (1 - k t < 0.1) or without convergence:
  // the bracketing search below.
  {
    double s = sample_s_m_[i];
    double dx = x - sample_x_m_[i], dy = y - sample_y_m_[i];
    double along = dx * sample_cos_[i] + dy * sample_sin_[i], lateral = -dx * sample_sin_[i] + dy * sample_cos_[i];
    double denom = 1.0 - sample_k_[i] * lateral;
    bool converged = false;
    for (int it = 0; it < 8 && denom >= 0.1; ++it) {
      // The first step projects onto the sample's osculating circle (exact on lines and arcs), the later ones are
      // Newton's.
      const double k = sample_k_[i];
      const double step = it == 0 && std::abs(k) > 1e-12 ? std::atan2(k * along, denom) / k : along / denom;
      const double s_new = std::clamp(s + step, a, b);
      if (std::abs(s_new - s) <= 1e-10) {
        converged = true;
        break;
      }
      s = s_new;
      const RoadPoint rp = Evaluate(s);
      g_refined = RefinedPoint{this, s, rp};
      const double ch = std::cos(rp.heading_rad), sh = std::sin(rp.heading_rad);
      dx = x - rp.position_m.x();
      dy = y - rp.position_m.y();
      along = dx * ch + dy * sh;
      lateral = -dx * sh + dy * ch;
      denom = 1.0 - rp.curvature_1pm * lateral;
    }
    if (converged) {
      *f2_out = dx * dx + dy * dy;
      return s;
    }
  }
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
  *f2_out = f2;
  return s;
}

RoadCoord Road::Finish(double s_m, double d2, double x, double y) const {
  const RoadPoint rp = g_refined.road == this && g_refined.s_m == s_m ? g_refined.point : Evaluate(s_m);
  RoadCoord r;
  r.road_id = def_.id;
  r.s_m = s_m;
  r.t_m = -(x - rp.position_m.x()) * std::sin(rp.heading_rad) + (y - rp.position_m.y()) * std::cos(rp.heading_rad);
  r.lane = HasLaneProfile() || !def_.lane_offset.empty() ? LaneAt(s_m, r.t_m) : LaneAt(r.t_m);
  r.distance_m = std::sqrt(d2);
  return r;
}

RoadCoord Road::ProjectBruteForce(const Vec3& p_m) const { return Project(p_m, 0.0, length_m_); }

RoadCoord Road::Project(const Vec3& p_m) const {
  // ProjectBruteForce refines every sampled local minimum within reach = (nearest sample distance) +
  // 2 sample steps, in ascending sample order. The grid finds the same set without visiting the other
  // samples: rings of cells around the query are searched until the disc they cover (radius `bound`)
  // holds the nearest sample and every sample within reach; then the same minima are refined in the same
  // order, so the result is the same to the bit.
  const double x = p_m.x(), y = p_m.y();
  const GridLayout g{grid_x0_m_, grid_y0_m_, grid_cell_m_, grid_nx_, grid_ny_};
  GridQuery q;
  if (!(std::abs(x) < kGridMaxCoordM && std::abs(y) < kGridMaxCoordM) || !LocateInGrid(g, x, y, &q))
    return ProjectBruteForce(p_m);
  thread_local std::vector<std::pair<uint32_t, double>> found;  // (sample, squared distance)
  found.clear();
  double best_sample = 1e300;
  bool enough = false;
  for (int k = 0; k <= kGridMaxRings && !enough; ++k) {
    ForEachRingCell(g, q, k, [&](size_t cell) {
      for (uint32_t j = grid_start_[cell]; j < grid_start_[cell + 1]; ++j) {
        const uint32_t i = grid_samples_[j];
        const double d2 = SampleDistance2(i, x, y);
        found.emplace_back(i, d2);
        best_sample = std::min(best_sample, d2);
      }
    });
    // Every sample outside the searched block is at least `bound` away.
    const double bound = k * grid_cell_m_ + q.edge_m - kGridSlackM;
    enough = !found.empty() && std::sqrt(best_sample) + 2.0 * sample_step_m_ < bound;
  }
  // Far from the road: the rings did not reach far enough; every sample is tried instead.
  if (!enough) return ProjectBruteForce(p_m);

  // The sampled local minima within reach (neighbours' distances as the brute force computes them).
  const size_t n = sample_s_m_.size();
  const double reach = std::sqrt(best_sample) + 2.0 * sample_step_m_;
  thread_local std::vector<uint32_t> minima;
  minima.clear();
  for (const auto& [i, d2] : found) {
    if (d2 > reach * reach) continue;
    const bool local_min =
        (i == 0 || d2 <= SampleDistance2(i - 1, x, y)) && (i + 1 == n || d2 <= SampleDistance2(i + 1, x, y));
    if (local_min) minima.push_back(i);
  }
  std::sort(minima.begin(), minima.end());
  double best_s = 0.0, best_d2 = 1e300;
  for (const uint32_t i : minima) {
    double f2 = 0.0;
    const double s = RefineMinimum(i, 0, n, x, y, &f2);
    if (f2 < best_d2) {
      best_d2 = f2;
      best_s = s;
    }
  }
  return Finish(best_s, best_d2, x, y);
}

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
    d2(i) = SampleDistance2(i, x, y);
    best_sample = std::min(best_sample, d2(i));
  }
  // Every sampled local minimum that could beat the best sample after refinement is refined:
  // the true minimum lies within one sample step of a sampled one.
  const double reach = std::sqrt(best_sample) + 2.0 * sample_step_m_;
  double best_s = 0.0, best_d2 = 1e300;
  for (size_t i = i0; i < n; ++i) {
    const bool local_min = (i == i0 || d2(i) <= d2(i - 1)) && (i + 1 == n || d2(i) <= d2(i + 1));
    if (!local_min || d2(i) > reach * reach) continue;
    double f2 = 0.0;
    const double s = RefineMinimum(i, i0, n, x, y, &f2);
    if (f2 < best_d2) {
      best_d2 = f2;
      best_s = s;
    }
  }
  return Finish(best_s, best_d2, x, y);
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
  if (roads_.empty()) return;

  // The network grid: which roads have a sample in each cell.
  double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
  size_t samples = 0;
  for (const auto& r : roads_) {
    x_lo = std::min(x_lo, *std::min_element(r.sample_x_m_.begin(), r.sample_x_m_.end()));
    x_hi = std::max(x_hi, *std::max_element(r.sample_x_m_.begin(), r.sample_x_m_.end()));
    y_lo = std::min(y_lo, *std::min_element(r.sample_y_m_.begin(), r.sample_y_m_.end()));
    y_hi = std::max(y_hi, *std::max_element(r.sample_y_m_.begin(), r.sample_y_m_.end()));
    samples += r.sample_x_m_.size();
    max_half_step_m_ = std::max(max_half_step_m_, 0.5 * r.sample_step_m_);
  }
  const GridLayout g = MakeGridLayout(x_lo, x_hi, y_lo, y_hi, samples, kNetworkGridCellM, kNetworkCellsPerSample);
  grid_x0_m_ = g.x0_m;
  grid_y0_m_ = g.y0_m;
  grid_cell_m_ = g.cell_m;
  grid_nx_ = g.nx;
  grid_ny_ = g.ny;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t ri = 0; ri < roads_.size(); ++ri) {
    const Road& r = roads_[ri];
    uint32_t last_cell = UINT32_MAX;  // consecutive samples mostly share a cell: one pair each run
    for (size_t i = 0; i < r.sample_x_m_.size(); ++i) {
      const int cx = CellOf(r.sample_x_m_[i], grid_x0_m_, grid_cell_m_, grid_nx_);
      const int cy = CellOf(r.sample_y_m_[i], grid_y0_m_, grid_cell_m_, grid_ny_);
      const auto cell = static_cast<uint32_t>(cy * grid_nx_ + cx);
      if (cell != last_cell) pairs.emplace_back(cell, static_cast<uint32_t>(ri));
      last_cell = cell;
    }
  }
  BuildCellLists(std::move(pairs), static_cast<size_t>(grid_nx_) * static_cast<size_t>(grid_ny_), &grid_start_,
                 &grid_roads_);
  // The sample grid, in the same cells.
  std::vector<std::pair<uint32_t, GridSample>> cells;
  for (size_t ri = 0; ri < roads_.size(); ++ri) {
    const Road& r = roads_[ri];
    for (size_t i = 0; i < r.sample_x_m_.size(); ++i) {
      const int cx = CellOf(r.sample_x_m_[i], grid_x0_m_, grid_cell_m_, grid_nx_);
      const int cy = CellOf(r.sample_y_m_[i], grid_y0_m_, grid_cell_m_, grid_ny_);
      cells.emplace_back(static_cast<uint32_t>(cy * grid_nx_ + cx),
                         GridSample{r.sample_x_m_[i], r.sample_y_m_[i], static_cast<uint32_t>(ri), static_cast<uint32_t>(i)});
    }
  }
  std::stable_sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t ncells = static_cast<size_t>(grid_nx_) * static_cast<size_t>(grid_ny_);
  sample_grid_start_.assign(ncells + 1, 0);
  for (const auto& c : cells) ++sample_grid_start_[c.first + 1];
  for (size_t j = 0; j < ncells; ++j) sample_grid_start_[j + 1] += sample_grid_start_[j];
  sample_grid_.clear();
  sample_grid_.reserve(cells.size());
  for (const auto& c : cells) sample_grid_.push_back(c.second);
}

const Road* RoadNetwork::Find(int id) const {
  for (const auto& r : roads_)
    if (r.Id() == id) return &r;
  return nullptr;
}

RoadCoord RoadNetwork::ProjectBruteForce(const Vec3& p_m) const {
  RoadCoord best;
  double best_d = 1e300;
  for (const auto& r : roads_) {
    const RoadCoord c = r.ProjectBruteForce(p_m);
    if (c.distance_m < best_d) {
      best_d = c.distance_m;
      best = c;
    }
  }
  return best;
}

RoadCoord RoadNetwork::Project(const Vec3& p_m) const {
  // One search over every road's samples at once, giving what asking each road (Road::Project) and keeping
  // the nearest gives, to the bit, without asking roads that cannot win:
  // 1. Rings of cells around the query until the disc they cover holds every sample within
  //    (nearest sample distance) + 2.5 largest sample steps.
  // 2. Per road found, a lower bound of its distance: its nearest sample's distance - half its sample step (its
  //    line is within half a step of a sample). Roads in the order of that bound, until it exceeds the best
  //    distance found: each one's sampled local minima within its own reach (its nearest sample distance + 2
  //    steps, inside the disc, else the per-road search below) refined in ascending order, as Road::Project does.
  // 3. Equal distances: the road defined first, as in the brute force.
  const double x = p_m.x(), y = p_m.y();
  if (roads_.empty()) return {};
  const GridLayout g{grid_x0_m_, grid_y0_m_, grid_cell_m_, grid_nx_, grid_ny_};
  GridQuery q;
  if (!(std::abs(x) < kGridMaxCoordM && std::abs(y) < kGridMaxCoordM) || !LocateInGrid(g, x, y, &q))
    return ProjectByRoads(p_m);
  struct Found {
    uint32_t road, sample;  // road index, sample index within the road
    double d2;
  };
  thread_local std::vector<Found> found;
  found.clear();
  double best_sample = 1e300, bound = 0, keep2 = 1e300;
  const double max_step = 2.0 * max_half_step_m_;
  bool enough = false;
  double keep = 1e300;
  for (int k = 0; k <= kGridMaxRings && !enough; ++k) {
    ForEachRingCellXY(g, q, k, [&](size_t cell, int cx, int cy) {
      // A cell wholly beyond the distance that still matters holds nothing that does (slack for the binning).
      const double left = g.x0_m + cx * g.cell_m, bottom = g.y0_m + cy * g.cell_m;
      const double ox = std::max({0.0, left - x, x - left - g.cell_m}), oy = std::max({0.0, bottom - y, y - bottom - g.cell_m});
      if (ox * ox + oy * oy > (keep + kGridBinSlackM) * (keep + kGridBinSlackM)) return;
      for (uint32_t j = sample_grid_start_[cell]; j < sample_grid_start_[cell + 1]; ++j) {
        const GridSample& gs = sample_grid_[j];
        const double dx = x - gs.x_m, dy = y - gs.y_m;
        const double d2 = dx * dx + dy * dy;
        if (d2 < best_sample) {
          best_sample = d2;
          keep = std::sqrt(d2) + 2.5 * max_step;
          keep2 = keep * keep;
        }
        if (d2 <= keep2) found.push_back(Found{gs.road, gs.sample, d2});  // the rest can never matter (below)
      }
    });
    bound = k * grid_cell_m_ + q.edge_m - kGridSlackM;
    enough = !found.empty() && std::sqrt(best_sample) + 2.5 * max_step < bound;
  }
  if (!enough) return ProjectByRoads(p_m);
  // Only samples within (nearest) + 2.5 steps matter: a road that can win is within half its step of the best
  // distance (<= the nearest sample's), and refines samples within 2 steps of its own nearest.
  // (keep = sqrt(best_sample) + 2.5 max_step, as the scan left it.)
  found.erase(std::remove_if(found.begin(), found.end(), [&](const Found& f) { return f.d2 > keep * keep; }), found.end());
  // Per road found: its nearest sample, and a lower bound of its distance.
  struct Candidate {
    double lower;       // lower bound of the road's distance
    uint32_t road;
    double best_d2;     // its nearest sample
    int32_t head;       // its first sample in `found`, chained by next_found (-1: end)
  };
  thread_local std::vector<Candidate> candidates;
  thread_local std::vector<int32_t> slot_of_road, next_found;  // slot_of_road: -1 outside a query
  if (slot_of_road.size() < roads_.size()) slot_of_road.resize(roads_.size(), -1);
  candidates.clear();
  next_found.resize(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    const Found& f = found[i];
    int32_t& slot = slot_of_road[f.road];
    if (slot < 0) {
      slot = static_cast<int32_t>(candidates.size());
      candidates.push_back(Candidate{0, f.road, f.d2, -1});
    }
    Candidate& c = candidates[static_cast<size_t>(slot)];
    c.best_d2 = std::min(c.best_d2, f.d2);
    next_found[i] = c.head;
    c.head = static_cast<int32_t>(i);
  }
  for (const Candidate& c : candidates) slot_of_road[c.road] = -1;
  for (Candidate& c : candidates) c.lower = std::sqrt(c.best_d2) - 0.5 * roads_[c.road].sample_step_m_ - kGridSlackM;
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.lower != b.lower ? a.lower < b.lower : a.road < b.road;
  });
  thread_local std::vector<uint32_t> minima;
  double best_d = 1e300, best_d2 = 0, best_s = 0;
  size_t best_road = roads_.size();
  for (const Candidate& c : candidates) {
    if (best_road < roads_.size() && c.lower > best_d) break;
    const Road& r = roads_[c.road];
    const double reach = std::sqrt(c.best_d2) + 2.0 * r.sample_step_m_;
    if (!(reach < bound)) return ProjectByRoads(p_m);  // its reach is not all inside the searched disc
    const size_t n = r.sample_s_m_.size();
    // Its sampled local minima within its reach, refined in ascending order as Road::Project does.
    minima.clear();
    for (int32_t fi = c.head; fi >= 0; fi = next_found[static_cast<size_t>(fi)]) {
      const Found& f = found[static_cast<size_t>(fi)];
      if (f.d2 > reach * reach) continue;
      const uint32_t i = f.sample;
      const bool local_min = (i == 0 || f.d2 <= r.SampleDistance2(i - 1, x, y)) &&
                             (i + 1 == n || f.d2 <= r.SampleDistance2(i + 1, x, y));
      if (local_min) minima.push_back(i);
    }
    std::sort(minima.begin(), minima.end());
    double road_s = 0, road_d2 = 1e300;
    for (const uint32_t i : minima) {
      double f2 = 0.0;
      const double s = r.RefineMinimum(i, 0, n, x, y, &f2);
      if (f2 < road_d2) {
        road_d2 = f2;
        road_s = s;
      }
    }
    if (road_d2 > 1e299) continue;
    const double d = std::sqrt(road_d2);
    if (d < best_d || (d == best_d && c.road < best_road)) {
      best_d = d;
      best_d2 = road_d2;
      best_s = road_s;
      best_road = c.road;
    }
  }
  if (best_road == roads_.size()) return ProjectByRoads(p_m);
  return roads_[best_road].Finish(best_s, best_d2, x, y);
}

RoadCoord RoadNetwork::ProjectByRoads(const Vec3& p_m) const {
  // The roads are asked in rings of cells around the query, nearest first. A road with no sample in
  // the searched block has every sample at least `bound` away, and its line (within half a sample step
  // of a sample: a chord is never longer than its arc) at least bound - max_half_step_m_: once that
  // exceeds the best distance found, no other road can be nearer, nor tie. Ties between the roads asked
  // go to the one defined first, as in the brute force.
  const double x = p_m.x(), y = p_m.y();
  if (roads_.empty()) return {};
  const GridLayout g{grid_x0_m_, grid_y0_m_, grid_cell_m_, grid_nx_, grid_ny_};
  if (!(std::abs(x) < kGridMaxCoordM && std::abs(y) < kGridMaxCoordM)) return ProjectBruteForce(p_m);
  GridQuery q;
  const int rings = LocateInGrid(g, x, y, &q) ? kGridMaxRings + 1 : 0;
  RoadCoord best;
  double best_d = 1e300;
  size_t best_road = roads_.size();
  const auto consider = [&](size_t ri) {
    const RoadCoord c = roads_[ri].Project(p_m);
    if (c.distance_m < best_d || (c.distance_m == best_d && ri < best_road)) {
      best_d = c.distance_m;
      best_road = ri;
      best = c;
    }
  };
  thread_local std::vector<uint32_t> asked;  // roads asked so far, few
  asked.clear();
  for (int k = 0; k < rings; ++k) {
    ForEachRingCell(g, q, k, [&](size_t cell) {
      for (uint32_t j = grid_start_[cell]; j < grid_start_[cell + 1]; ++j) {
        const uint32_t ri = grid_roads_[j];
        if (std::find(asked.begin(), asked.end(), ri) != asked.end()) continue;
        asked.push_back(ri);
        consider(ri);
      }
    });
    const double bound = k * grid_cell_m_ + q.edge_m - kGridSlackM - max_half_step_m_;
    if (best_road < roads_.size() && best_d < bound) return best;
  }
  // Far from every road the rings searched: the roads not asked yet, nearest grid box first (a road's
  // samples lie in its grid's box, its line within half a sample step of them), until no box is near
  // enough to hold a road nearer than, or as near as, the best.
  thread_local std::vector<std::pair<double, uint32_t>> rest;  // (lower bound of the distance, road)
  rest.clear();
  for (size_t ri = 0; ri < roads_.size(); ++ri) {
    if (std::find(asked.begin(), asked.end(), static_cast<uint32_t>(ri)) != asked.end()) continue;
    const Road& r = roads_[ri];
    const double dx = std::max({0.0, r.grid_x0_m_ - x, x - (r.grid_x0_m_ + r.grid_nx_ * r.grid_cell_m_)});
    const double dy = std::max({0.0, r.grid_y0_m_ - y, y - (r.grid_y0_m_ + r.grid_ny_ * r.grid_cell_m_)});
    rest.emplace_back(std::sqrt(dx * dx + dy * dy) - max_half_step_m_ - kGridSlackM, static_cast<uint32_t>(ri));
  }
  std::sort(rest.begin(), rest.end());
  for (const auto& [lower_bound_m, ri] : rest) {
    if (best_road < roads_.size() && lower_bound_m > best_d) break;
    consider(ri);
  }
  return best_road < roads_.size() ? best : RoadCoord{};
}

std::vector<LinkGap> RoadNetwork::CheckLinks() const {
  std::vector<LinkGap> out;
  for (const auto& r : roads_) {
    const Road* next = r.Def().successor_id >= 0 ? Find(r.Def().successor_id) : nullptr;
    if (!next) continue;
    const bool reversed = r.Def().successor_contact == ContactPoint::kEnd;
    const RoadPoint end = r.Evaluate(r.Length()), start = next->Evaluate(reversed ? next->Length() : 0.0);
    LinkGap g;
    g.road_id = r.Id();
    g.successor_id = next->Id();
    g.gap_m = (end.position_m - start.position_m).head<2>().norm();
    // A successor met at its end runs the other way.
    g.heading_error_rad = WrapPi(start.heading_rad + (reversed ? std::numbers::pi : 0.0) - end.heading_rad);
    g.height_error_m = start.position_m.z() - end.position_m.z();
    out.push_back(g);
  }
  return out;
}

}  // namespace platoon::road
