#pragma once
/// Road geometry after seed 004 §4.1: a road is a chain of sections of constant curvature rate
/// (clothoids; lines and arcs are special cases), with lanes on both sides of its reference line,
/// marking types per lane boundary, a constant grade, and successor/predecessor links to other
/// roads. Pure core: no clock, no I/O, no rendering. Equations: docs/ROADS.md.
///
/// Road frame: s is the horizontal arc length along the reference line from the road's start, in m;
/// t is the lateral offset, positive to the left of the driving direction, in m.
/// Lanes: index +1..+lanes_left to the left of the reference line (1 is next to it),
/// -1..-lanes_right to the right; 0 is "no lane" (the reference line itself, or off the carriageway).
/// Boundaries: index b in [-lanes_right, +lanes_left]; boundary b > 0 is the left side of lane b,
/// b < 0 the right side of lane b, b = 0 the reference line.

#include "platoon/geometry.hpp"
#include "platoon/road/road_profile.hpp"

#include <cmath>
#include <cstddef>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace platoon::road {

/// Marking painted on a lane boundary.
enum class Marking { kNone, kSolid, kDashed, kDouble, kBottsDots };

/// File/doc name of a marking: "none", "solid", "dashed", "double", "botts_dots".
const char* MarkingName(Marking m);

/// One section of constant curvature rate: k(u) = curvature_start_1pm + (end - start) * u / length_m.
struct SectionDef {
  double length_m = 100.0;            ///< Horizontal length of the section, in m. Typical 10-500.
  double curvature_start_1pm = 0.0;   ///< Curvature at the section's start, in 1/m (+ = turning left). Typical |k| < 0.02.
  double curvature_end_1pm = 0.0;     ///< Curvature at the section's end, in 1/m; equal to the start for lines and arcs.
  GeometryKind kind = GeometryKind::kClothoid;  ///< How the shape is given; the curvatures hold only for kClothoid.
  std::array<double, 4> u_poly = {0.0, 1.0, 0.0, 0.0};  ///< kParamPoly3: u(p) = aU + bU p + cU p^2 + dU p^3, in m.
  std::array<double, 4> v_poly = {0.0, 0.0, 0.0, 0.0};  ///< kPoly3: v(u); kParamPoly3: v(p); coefficients a..d.
  bool p_normalized = false;          ///< kParamPoly3: pRange "normalized" (p in [0, 1]); else "arcLength" (p in [0, length]).
};

/// A line section (zero curvature) of `length_m` metres.
inline SectionDef LineSection(double length_m) { return {length_m, 0.0, 0.0}; }
/// An arc section of `length_m` metres and constant curvature `curvature_1pm` (1/radius, + = left), in 1/m.
inline SectionDef ArcSection(double length_m, double curvature_1pm) { return {length_m, curvature_1pm, curvature_1pm}; }
/// A clothoid section of `length_m` metres from curvature `k0_1pm` to `k1_1pm`, in 1/m.
inline SectionDef ClothoidSection(double length_m, double k0_1pm, double k1_1pm) { return {length_m, k0_1pm, k1_1pm}; }

/// What a road is: its placement, sections, lanes, markings, grade and links. Read-only once built.
struct RoadDef {
  int id = 0;                                 ///< Unique id within a network. Typical 1..1000.
  double start_x_m = 0.0;                     ///< World x of the reference line's start, in m.
  double start_y_m = 0.0;                     ///< World y of the reference line's start, in m.
  double start_heading_rad = 0.0;             ///< Heading at the start, in rad, counter-clockwise from +x.
  double start_height_m = 0.0;                ///< Height of the reference line at s = 0, in m.
  double grade = 0.0;                         ///< Constant grade, rise per horizontal run (m/m); 0.04 = 4 %.
  double speed_limit_mps = 0.0;               ///< Speed limit for traffic, in m/s; 0: none. 13.9 = 50 km/h.
  std::vector<SectionDef> sections;           ///< Sections in driving order, chained G1-continuously. At least one.
  std::vector<double> lane_widths_left_m = {3.5};   ///< Left lanes' widths, innermost (lane +1) first, in m. Typical 2.75-3.75.
  std::vector<double> lane_widths_right_m = {3.5};  ///< Right lanes' widths, innermost (lane -1) first, in m.
  std::vector<Marking> markings;              ///< One per boundary, from the left edge to the right edge (lanes_left + lanes_right + 1); empty: defaults.
  int successor_id = -1;                      ///< Road whose start follows this road's end; -1: none.
  int predecessor_id = -1;                    ///< Road whose end precedes this road's start; -1: none.
  ContactPoint successor_contact = ContactPoint::kStart;   ///< Which end of the successor touches this road's end.
  ContactPoint predecessor_contact = ContactPoint::kEnd;   ///< Which end of the predecessor touches this road's start.
  int successor_junction_id = -1;             ///< Junction this road's end leads into; -1: none.
  int predecessor_junction_id = -1;           ///< Junction this road's start comes from; -1: none.
  int junction_id = -1;                       ///< Junction this road is a connecting road of; -1: an ordinary road.
  std::vector<CubicPiece> elevation;          ///< Height pieces along s, in m; empty: start_height_m + grade * s.
  std::vector<CubicPiece> superelevation;     ///< Roll of the cross-section along s, in rad (+ falls to the right).
  std::vector<CubicPiece> lane_offset;        ///< Shift of the lane centre line from the reference line, in m (+ left).
  std::vector<LaneSectionDef> lane_sections;  ///< Lanes along s; empty: the constant lane_widths_*_m and markings.
  std::vector<RoadObjectDef> objects;         ///< Objects along the road (kept for the environment and sensors).
  std::vector<RoadSignalDef> signals;         ///< Signals along the road (kept for the sign model).
};

/// The marking drawn for an OpenDRIVE roadMark type: solid, broken, the doubles (solid solid, solid broken, broken
/// solid, broken broken: kDouble), botts dots, edge (solid); none, curb, grass and custom draw nothing (kNone).
Marking MarkingOfRoadMark(const std::string& type);

/// A 3.5 m one-lane-each-way road, 100 m straight, id 0, no links.
RoadDef DefaultRoadDef();

/// Default markings for `lanes_left` and `lanes_right` lanes: solid edges, dashed inner boundaries.
std::vector<Marking> DefaultMarkings(int lanes_left, int lanes_right);

/// Checks a RoadDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateRoadDef(const RoadDef& def);

/// Reference-line state at one s.
struct RoadPoint {
  double s_m = 0.0;             ///< Arc length where it was evaluated (clamped to [0, length]), in m.
  Vec3 position_m = Vec3::Zero();  ///< Reference-line point (z = height), in m.
  double heading_rad = 0.0;     ///< Heading of the tangent, in rad, counter-clockwise from +x (not wrapped).
  double curvature_1pm = 0.0;   ///< Curvature, in 1/m (+ = turning left).
};

/// A world point expressed in road coordinates.
struct RoadCoord {
  int road_id = -1;             ///< Road it was projected on; -1: none (empty network).
  double s_m = 0.0;             ///< Arc length of the foot point, in m, in [0, length].
  double t_m = 0.0;             ///< Lateral offset from the reference line (+ left), in m.
  int lane = 0;                 ///< Lane containing t (t = 0 counts as lane +1 when there is one); 0 off the carriageway.
  double distance_m = 0.0;      ///< Horizontal distance from the point to the reference line's foot point, in m (|t| inside the road's s range).
};

/// One road, built from its definition; immutable and cheap to query from many threads.
class Road {
 public:
  /// Builds the road; asserts ValidateRoadDef(def) is empty.
  explicit Road(RoadDef def);

  /// The definition it was built from.
  const RoadDef& Def() const { return def_; }
  /// Road id.
  int Id() const { return def_.id; }
  /// Total horizontal length of the reference line, in m.
  double Length() const { return length_m_; }
  /// Arc length where section `i` starts, in m.
  double SectionStart(size_t i) const { return section_start_m_[i]; }

  /// Local frame of section `i` as OpenDRIVE writes it (x, y, hdg of its <geometry>): the section's start for
  /// lines, arcs and spirals; the origin and axis of u for poly3 and paramPoly3, in m and rad.
  Vec3 SectionFrame(size_t i) const;

  /// Reference-line state at `s_m` (clamped to [0, Length()]).
  RoadPoint Evaluate(double s_m) const;
  /// Reference-line point at `s_m`, z = height, in m.
  Vec3 ReferencePoint(double s_m) const { return Evaluate(s_m).position_m; }
  /// Heading at `s_m`, in rad.
  double Heading(double s_m) const { return Evaluate(s_m).heading_rad; }
  /// Curvature at `s_m`, in 1/m.
  double Curvature(double s_m) const;
  /// Height of the reference line at `s_m`, in m (h0 + grade * s).
  double Height(double s_m) const;
  /// World point at road coordinates (`s_m`, `t_m`), at the reference line's height, in m.
  Vec3 PointAt(double s_m, double t_m) const;

  /// Number of lanes left of the reference line.
  int LanesLeft() const { return static_cast<int>(def_.lane_widths_left_m.size()); }
  /// Number of lanes right of the reference line.
  int LanesRight() const { return static_cast<int>(def_.lane_widths_right_m.size()); }
  /// Width of lane `lane` (non-zero, within the lane counts), in m.
  double LaneWidth(int lane) const;
  /// Lateral offset of boundary `b` (in [-LanesRight(), LanesLeft()]), in m.
  double BoundaryOffset(int b) const;
  /// Marking on boundary `b`.
  Marking BoundaryMarking(int b) const;
  /// Lateral offset of the centre of lane `lane`, in m.
  double LaneCenterOffset(int lane) const;
  /// World point on the centre of lane `lane` at `s_m` (where lanes vary along s, as they are there), in m.
  Vec3 LaneCenter(double s_m, int lane) const { return PointAt(s_m, LaneCenterOffsetAt(s_m, lane)); }
  /// Left edge of the carriageway (t of the outermost left boundary), in m; >= 0.
  double LeftEdgeOffset() const { return BoundaryOffset(LanesLeft()); }
  /// Right edge of the carriageway (t of the outermost right boundary), in m; <= 0.
  double RightEdgeOffset() const { return BoundaryOffset(-LanesRight()); }
  /// Lane containing lateral offset `t_m`; 0 outside the carriageway.
  int LaneAt(double t_m) const;

  // Lanes along s (a RoadDef with lane_sections; without, each of these is the constant layout above). The
  // constant accessors above then answer for s = 0.
  /// True when the road's lanes vary along s (RoadDef::lane_sections given).
  bool HasLaneProfile() const { return !def_.lane_sections.empty(); }
  /// Index of the lane section holding `s_m` (0 without a profile).
  size_t LaneSectionAt(double s_m) const;
  /// Number of lanes left of the reference line at `s_m`.
  int LanesLeftAt(double s_m) const;
  /// Number of lanes right of the reference line at `s_m`.
  int LanesRightAt(double s_m) const;
  /// Lateral shift of the lane centre line at `s_m` (laneOffset), in m.
  double LaneOffsetAt(double s_m) const;
  /// Width of lane `lane` at `s_m`, in m (0 where a lane opens or closes).
  double LaneWidthAt(double s_m, int lane) const;
  /// Lateral offset of boundary `b` at `s_m`, lane offset included, in m.
  double BoundaryOffsetAt(double s_m, int b) const;
  /// Lateral offset of the centre of lane `lane` at `s_m`, in m.
  double LaneCenterOffsetAt(double s_m, int lane) const;
  /// Type of lane `lane` at `s_m` (kDriving without a profile).
  LaneType LaneTypeAt(double s_m, int lane) const;
  /// True when traffic may drive on lane `lane` at `s_m` (its type is driving).
  bool IsDrivingLane(double s_m, int lane) const { return LaneTypeAt(s_m, lane) == LaneType::kDriving; }
  /// The road mark in force on boundary `b` at `s_m` (b = 0: the centre lane's), or nullptr when none is written.
  const RoadMarkDef* BoundaryMarkAt(double s_m, int b) const;
  /// Lane containing (`s_m`, `t_m`); 0 outside the outermost lanes.
  int LaneAt(double s_m, double t_m) const;
  /// Roll of the cross-section at `s_m` (superelevation), in rad; + falls to the right.
  double Roll(double s_m) const;
  /// Slope of the reference line's height at `s_m` (dz/ds), in m/m.
  double Slope(double s_m) const;
  /// World point on the road surface at (`s_m`, `t_m`): PointAt with z = height + t * tan(roll), in m.
  Vec3 SurfacePoint(double s_m, double t_m) const;

  /// Nearest foot point on the reference line of the horizontal point (x, y) of `p_m` (z ignored):
  /// coarse sampling, then golden-section and Newton refinement of every candidate minimum. A uniform
  /// grid over the samples limits the work to the samples near `p_m`; the result is bit-identical to
  /// ProjectBruteForce (points far from the road, beyond the grid search, take that path).
  RoadCoord Project(const Vec3& p_m) const;
  /// The same, searching only the foot points with s in about [s_lo_m, s_hi_m] (to the sample spacing):
  /// a vehicle followed along a road that passes near itself.
  RoadCoord Project(const Vec3& p_m, double s_lo_m, double s_hi_m) const;
  /// Project(p_m) without the grid: every sample of the road is tried, O(Length()). The reference the
  /// grid must reproduce, kept for the tests and the benchmark (road_index_test, road_index_bench).
  RoadCoord ProjectBruteForce(const Vec3& p_m) const;

 private:
  // A precomputed state from which Evaluate integrates forward within one section.
  struct Checkpoint {
    double s_m;
    double x_m, y_m, heading_rad, curvature_1pm;
    double curvature_rate_1pm2;
    double cos_heading, sin_heading;  // of heading_rad (a line needs no other trigonometry)
  };
  static Checkpoint MakeCheckpoint(double s_m, double x_m, double y_m, double heading_rad, double k_1pm, double rate_1pm2) {
    return Checkpoint{s_m, x_m, y_m, heading_rad, k_1pm, rate_1pm2, std::cos(heading_rad), std::sin(heading_rad)};
  }
  RoadPoint Integrate(const Checkpoint& c, double s_m) const;
  RoadPoint EvaluateCurve(size_t section, double s_m) const;
  double Distance2(double s_m, double x_m, double y_m) const;
  double SampleDistance2(size_t i, double x_m, double y_m) const;
  double RefineMinimum(size_t i, size_t i0, size_t n, double x_m, double y_m, double* f2) const;
  RoadCoord Finish(double s_m, double d2, double x_m, double y_m) const;
  void BuildGrid();
  friend class RoadNetwork;  // its grid reads the samples

  RoadDef def_;
  double length_m_ = 0.0;
  std::vector<double> section_start_m_;
  std::vector<Checkpoint> checkpoints_;
  // Per section: the local frame of poly3 and paramPoly3 sections (origin and heading), in m and rad; for poly3
  // also u at the section's end and a table of (u, s) for the arc length inversion.
  struct CurveFrame {
    double x_m = 0.0, y_m = 0.0, heading_rad = 0.0;
    std::vector<double> u, s;
  };
  std::vector<CurveFrame> frames_;
  std::vector<double> sample_s_m_;       // coarse samples for projection
  std::vector<double> sample_x_m_, sample_y_m_;
  std::vector<double> sample_cos_, sample_sin_, sample_k_;  // heading and curvature at each sample (Newton's start)
  double sample_step_m_ = 1.0;
  // Uniform grid over the samples: cell (cx, cy) covers x in [grid_x0_m_ + cx * grid_cell_m_, + grid_cell_m_),
  // the same in y; the samples of cell j = cy * grid_nx_ + cx are grid_samples_[grid_start_[j] .. grid_start_[j + 1]).
  double grid_x0_m_ = 0.0, grid_y0_m_ = 0.0, grid_cell_m_ = 1.0;
  int grid_nx_ = 0, grid_ny_ = 0;
  std::vector<uint32_t> grid_start_;
  std::vector<uint32_t> grid_samples_;
};

/// How well a link joins: the end of `road_id` against the start of its successor.
struct LinkGap {
  int road_id = -1;             ///< Road whose end is checked.
  int successor_id = -1;        ///< Its successor.
  double gap_m = 0.0;           ///< Horizontal distance between end and successor start, in m.
  double heading_error_rad = 0.0;  ///< Heading difference, wrapped to [-pi, pi], in rad.
  double height_error_m = 0.0;  ///< Height difference, in m.
};

/// A list of roads joined by successor/predecessor links.
class RoadNetwork {
 public:
  /// Empty network.
  RoadNetwork() = default;
  /// Builds every road; asserts ids are unique and links name roads of the network.
  explicit RoadNetwork(std::vector<RoadDef> defs);

  /// All roads, in definition order.
  const std::vector<Road>& Roads() const { return roads_; }
  /// Road with `id`, or nullptr.
  const Road* Find(int id) const;
  /// Nearest road to the horizontal point of `p_m`; road_id -1 when the network is empty. On equal
  /// distances the road defined first wins. A grid over the roads' samples asks only the roads that can
  /// be nearest; the result is bit-identical to ProjectBruteForce.
  RoadCoord Project(const Vec3& p_m) const;
  /// Project(p_m) asking every road's ProjectBruteForce: the reference for the tests and the benchmark.
  RoadCoord ProjectBruteForce(const Vec3& p_m) const;
  /// One entry per road with a successor: how far its end is from the successor's start.
  std::vector<LinkGap> CheckLinks() const;

 private:
  std::vector<Road> roads_;
  // Grid over every road's samples: the roads (indices into roads_, ascending) with a sample in cell
  // j = cy * grid_nx_ + cx are grid_roads_[grid_start_[j] .. grid_start_[j + 1]). Same cell layout as Road's.
  double grid_x0_m_ = 0.0, grid_y0_m_ = 0.0, grid_cell_m_ = 1.0;
  int grid_nx_ = 0, grid_ny_ = 0;
  std::vector<uint32_t> grid_start_;
  std::vector<uint32_t> grid_roads_;
  double max_half_step_m_ = 0.0;  // largest half sample step of any road: how far its line can be from a sample
  // The same cells over every road's samples: those in cell j are sample_grid_[sample_grid_start_[j] ..
  // sample_grid_start_[j + 1]), by road and sample index.
  // (x, y) copies in cell order, so a query reads each cell's samples from one run of memory.
  struct GridSample {
    double x_m, y_m;
    uint32_t road, sample;  // road index, sample index within it
  };
  std::vector<uint32_t> sample_grid_start_;
  std::vector<GridSample> sample_grid_;
  // Project(p_m) asking each road found in the road grid (the way for points beyond the sample search).
  RoadCoord ProjectByRoads(const Vec3& p_m) const;
};

}  // namespace platoon::road
