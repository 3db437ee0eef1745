#pragma once
/// The driving lanes of a road network as a directed graph, for traffic that drives through junctions.
///
/// A piece is one driving lane of one lane section of one road, in its direction of travel (right-hand
/// traffic: lanes with negative ids drive towards +s, positive ids towards -s). Its successors follow the
/// lane links: within a road to the next lane section (the lane's successor id, or the same id when none is
/// written), at a road's end through the road link (with its contact point) or, where the road leads into a
/// junction, through that junction's connections and lane links into the connecting roads, whose own road
/// links lead out. Distances along a piece are the lane centre's own arc length (a turn lane inside a
/// junction is shorter than its reference line). Pure core: built once, read from any thread.
/// docs/ROADS.md "Traffic through junctions".

#include "platoon/geometry.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_network.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::road {

/// What a vehicle must do at the end of a piece that leads into a junction.
enum class Yield : uint8_t {
  kNone,     ///< Nothing: first come, first served.
  kGiveWay,  ///< Give way: the junction's <priority> names its road low, or a give-way sign stands before its end.
  kStop,     ///< Stop, then give way: a stop sign stands before its end.
};

/// One driving lane of one lane section, in its direction of travel.
struct LanePiece {
  int road_id = -1;          ///< Road it lies on.
  uint32_t road_index = 0;   ///< Index of that road in RoadNetwork::Roads().
  int lane = 0;              ///< Lane id in its lane section.
  uint32_t section = 0;      ///< Lane section index (0 on roads without lane sections).
  double s_begin_m = 0.0;    ///< Road s where it is entered, in m (> s_end_m for lanes driven towards -s).
  double s_end_m = 0.0;      ///< Road s where it is left, in m.
  int junction_id = -1;      ///< The road's junction (a connecting road's), -1: an ordinary road.
  double length_m = 0.0;     ///< Arc length of the lane centre, in m.
  double max_curvature_1pm = 0.0;  ///< Largest |curvature| of the lane centre, in 1/m.
  double speed_limit_mps = 0.0;    ///< The lane's or the road's limit, in m/s; 0: none.
  Yield yield = Yield::kNone;      ///< At its end, into a junction (signs within kYieldSignReachM of the end count).
  std::vector<uint32_t> next;      ///< Pieces a vehicle may enter at its end, in link order.
  std::vector<uint32_t> prev;      ///< Pieces whose end leads into it.
};

/// A stop or give-way sign (an OpenDRIVE signal of the road for the piece's direction) counts for a piece ending in a
/// junction when it stands at most this far before the piece's end, in m.
inline constexpr double kYieldSignReachM = 50.0;

/// Where a vehicle is on a piece.
struct LanePose {
  Vec3 position_m = Vec3::Zero();  ///< On the lane centre, on the road surface, in m.
  double heading_rad = 0.0;        ///< Direction of travel along the lane centre, in rad.
  double curvature_1pm = 0.0;      ///< Signed curvature of the path there (+ turning left), in 1/m.
  double s_m = 0.0;                ///< Road s, in m.
  double t_m = 0.0;                ///< Lateral offset of the lane centre from the reference line, in m.
};

/// The lane graph of a network and its junctions.
class LaneGraph {
 public:
  /// Builds the graph; `network` must outlive it. Links that name no driving lane are left out and
  /// reported in Notes().
  LaneGraph(const RoadNetwork& network, const std::vector<JunctionDef>& junctions);

  /// The network it was built on.
  const RoadNetwork& Network() const { return network_; }
  /// Every piece.
  const std::vector<LanePiece>& Pieces() const { return pieces_; }
  /// The road a piece lies on.
  const Road& RoadOf(uint32_t piece) const { return network_.Roads()[pieces_[piece].road_index]; }
  /// Road s at distance `d_m` (clamped to [0, length]) from the piece's entry, in m.
  double RoadS(uint32_t piece, double d_m) const;
  /// Pose at distance `d_m` from the piece's entry.
  LanePose Pose(uint32_t piece, double d_m) const;
  /// Distance from the piece's entry of road s `s_m` (clamped to the piece), in m: RoadS's inverse.
  double DistanceAt(uint32_t piece, double s_m) const;
  /// The piece holding (road, lane) at road s `s_m`, or -1.
  int64_t PieceAt(int road_id, int lane, double s_m) const;
  /// Pieces `a` and `b` (both inside junctions) whose lane centres come within `clearance_m` of each other,
  /// or that lead into the same piece: vehicles on them may meet. False for a == b.
  bool Crosses(uint32_t a, uint32_t b, double clearance_m) const;
  /// What the build left out (dangling lane links), one line each.
  const std::vector<std::string>& Notes() const { return notes_; }
  /// "road 3 lane -1 [0, 120.5]": a piece for messages.
  std::string Describe(uint32_t piece) const;

 private:
  void Sample(LanePiece& p, std::vector<double>& s, std::vector<double>& d, std::vector<Vec3>& xy) const;
  void Link(uint32_t from, int road_id, ContactPoint contact, int lane, const char* how);

  const RoadNetwork& network_;
  std::vector<LanePiece> pieces_;
  // Per piece: road s and lane arc length at its samples (entry first), and the samples' points.
  std::vector<std::vector<double>> sample_s_, sample_d_;
  std::vector<std::vector<Vec3>> sample_xy_;
  std::vector<std::string> notes_;
};

}  // namespace platoon::road
