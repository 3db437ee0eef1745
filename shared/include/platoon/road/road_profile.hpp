#pragma once
/// What a road holds besides its reference line's placement, as OpenDRIVE 1.4-1.8 describes real maps: cubic
/// pieces along s (elevation, superelevation, laneOffset, lane widths), lane sections with typed lanes and road
/// marks, links with either contact point, and the objects and signals standing along the road. Plain data, part
/// of RoadDef (road_network.hpp); the road core evaluates it. Equations: docs/ROADS.md "OpenDRIVE import".

#include <array>
#include <string>
#include <vector>

namespace platoon::road {

/// One cubic piece f(s) = a + b ds + c ds^2 + d ds^3, ds = s - s_m, valid from s_m to the next piece's s_m.
struct CubicPiece {
  double s_m = 0.0;  ///< Where the piece starts, in m (road s, or the offset from a lane section's start).
  double a = 0.0;    ///< Value at s_m (m for offsets and heights, rad for roll).
  double b = 0.0;    ///< First coefficient, per m.
  double c = 0.0;    ///< Second coefficient, per m^2.
  double d = 0.0;    ///< Third coefficient, per m^3.
};

/// Value of piecewise cubic `pieces` (sorted by s_m) at `s_m`: the last piece starting at or before s (the first
/// piece before its start); 0 when empty.
double EvaluateCubic(const std::vector<CubicPiece>& pieces, double s_m);
/// Derivative of the same piecewise cubic at `s_m`, per m; 0 when empty.
double EvaluateCubicSlope(const std::vector<CubicPiece>& pieces, double s_m);

/// How a section's reference line is given (OpenDRIVE <geometry> children).
enum class GeometryKind {
  kClothoid,    ///< Line, arc or spiral: curvature linear in s (SectionDef curvatures).
  kPoly3,       ///< v(u) = a + b u + c u^2 + d u^3 in the section's local frame, s the arc length along it.
  kParamPoly3,  ///< u(p), v(p) cubic in p, with p linear in s (pRange arcLength: p = ds; normalized: p = ds / length).
};

/// Lane types of OpenDRIVE (lane@type); traffic drives only on kDriving.
enum class LaneType {
  kDriving, kNone, kBorder, kShoulder, kSidewalk, kParking, kBiking, kMedian, kRestricted, kCurb, kStop, kEntry,
  kExit, kOnRamp, kOffRamp, kConnectingRamp, kBidirectional, kSpecial1, kSpecial2, kSpecial3, kRoadWorks, kTram,
  kRail, kBus, kTaxi, kHov, kMwyEntry, kMwyExit, kWalking, kSlipLane, kShared,
};

/// OpenDRIVE spelling of a lane type: "driving", "sidewalk", "HOV", ...
const char* LaneTypeName(LaneType t);
/// Parses an OpenDRIVE lane type (exact spelling, "onramp"/"offramp" of 1.4 too); false when unknown.
bool ParseLaneType(const std::string& name, LaneType* out);

/// Road mark colours of OpenDRIVE (roadMark@color).
enum class MarkColor { kStandard, kWhite, kYellow, kBlue, kGreen, kRed, kOrange, kViolet, kBlack };
/// OpenDRIVE spelling of a colour: "standard", "white", ...
const char* MarkColorName(MarkColor c);

/// One road mark on a lane's outer boundary, from `s_offset_m` (relative to its lane section) to the next.
struct RoadMarkDef {
  double s_offset_m = 0.0;          ///< Start, from the lane section's start, in m.
  std::string type = "none";        ///< OpenDRIVE type as written: "solid", "broken", "solid solid", "curb", ...
  MarkColor color = MarkColor::kStandard;  ///< Paint colour.
  double width_m = 0.12;            ///< Line width, in m. Typical 0.12-0.3.
  bool has_lines = false;           ///< True when a <type> (explicit line definitions) came with it.
};

/// One lane of a lane section.
struct LaneDef {
  int id = -1;                        ///< +1.. outwards on the left, -1.. outwards on the right.
  LaneType type = LaneType::kDriving; ///< What the lane is for.
  std::vector<CubicPiece> width;      ///< Width pieces (s_m = sOffset from the section's start), in m.
  bool border = false;                ///< `width` holds <border> pieces: the outer edge's t from the reference line (signed), in m.
  std::vector<RoadMarkDef> marks;     ///< Marks on its outer boundary, by s_offset_m.
  int predecessor = 0;                ///< Lane id on the preceding section or road; 0: none.
  int successor = 0;                  ///< Lane id on the following section or road; 0: none.
  double speed_mps = 0.0;             ///< Lane speed limit, in m/s; 0: the road's.
};

/// Lanes from `s_m` to the next section's start.
struct LaneSectionDef {
  double s_m = 0.0;                     ///< Start along the road, in m.
  std::vector<LaneDef> left;            ///< Lanes +1, +2, ... outwards.
  std::vector<LaneDef> right;           ///< Lanes -1, -2, ... outwards.
  std::vector<RoadMarkDef> center_marks;  ///< Marks on the centre lane (the lane offset line).
};

/// Which end of a linked road touches.
enum class ContactPoint { kStart, kEnd };

/// A corner of an object's outline, in its local frame (u forward, v left, from its origin) or in road
/// coordinates (s, t) when the outline was written with cornerRoad.
struct OutlineCorner {
  double u_m = 0.0;       ///< Local u, or road s, in m.
  double v_m = 0.0;       ///< Local v, or road t, in m.
  double z_m = 0.0;       ///< Height of the corner's foot above the object's origin (or the road), in m.
  double height_m = 0.0;  ///< Height of the object at the corner, in m.
};

/// An object along the road (OpenDRIVE <object>): a box, a cylinder or an outline, placed at (s, t).
struct RoadObjectDef {
  std::string id;                ///< Id as written.
  std::string name;              ///< Name as written (may be empty).
  std::string type;              ///< OpenDRIVE type: "pole", "building", "barrier", "obstacle", ...
  double s_m = 0.0;              ///< Position along the road, in m.
  double t_m = 0.0;              ///< Lateral position (+ left), in m.
  double z_offset_m = 0.0;       ///< Height above the road surface, in m.
  double heading_rad = 0.0;      ///< Heading relative to the reference line's direction, in rad.
  double pitch_rad = 0.0;        ///< Pitch, in rad.
  double roll_rad = 0.0;         ///< Roll, in rad.
  double length_m = 0.0;         ///< Box length (along u), in m; 0: not a box.
  double width_m = 0.0;          ///< Box width (along v), in m.
  double height_m = 0.0;         ///< Height, in m.
  double radius_m = 0.0;         ///< Cylinder radius, in m; 0: not a cylinder.
  bool outline_in_road_frame = false;  ///< Corners are (s, t) road coordinates (cornerRoad), else local (u, v).
  std::vector<OutlineCorner> outline;  ///< Outline corners, in order; empty: the box or cylinder.
};

/// A signal along the road (OpenDRIVE <signal>), kept for the sign model.
struct RoadSignalDef {
  std::string id;            ///< Id as written.
  std::string name;          ///< Name as written (may be empty).
  double s_m = 0.0;          ///< Position along the road, in m.
  double t_m = 0.0;          ///< Lateral position (+ left), in m.
  double z_offset_m = 0.0;   ///< Height of its bottom above the road, in m.
  double h_offset_rad = 0.0; ///< Heading offset from the orientation's direction, in rad.
  std::string orientation;   ///< "+" (valid in +s), "-" (in -s) or "none".
  bool dynamic = false;      ///< A signal that changes (a traffic light).
  std::string country;       ///< Country code as written ("DE", "OpenDRIVE", ...).
  std::string type;          ///< Type code as written ("274", "1000001", ...).
  std::string subtype;       ///< Subtype as written ("-1", "50", ...).
  double value = 0.0;        ///< Value (a speed, a weight), in `unit`; 0 when none.
  bool has_value = false;    ///< A value was written.
  std::string unit;          ///< Unit of the value ("km/h", "m/s", ...), as written.
  double height_m = 0.0;     ///< Plate height, in m; 0: unknown.
  double width_m = 0.0;      ///< Plate width, in m; 0: unknown.
  std::string text;          ///< Text on the plate, as written.
};

}  // namespace platoon::road
