#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/sign_textures.hpp"

#include "world_shading.hpp"

#include <osg/CullFace>
#include <osg/Geode>
#include <osg/Geometry>
#include <osg/Light>
#include <osg/LightModel>
#include <osg/LightSource>
#include <osg/LOD>
#include <osg/Material>
#include <osg/Point>
#include <osg/BufferObject>
#include <osg/PolygonOffset>
#include <osg/Program>
#include <osgUtil/RenderBin>

#include <algorithm>
#include <sstream>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

namespace platoon::viewer {
namespace {

osg::Vec3 ToOsg(const Vec3& v) { return osg::Vec3(static_cast<float>(v.x()), static_cast<float>(v.y()), static_cast<float>(v.z())); }
osg::Vec4 ToOsg(const Rgb& c) { return osg::Vec4(c.r, c.g, c.b, 1.0f); }

osg::Matrixd PoseMatrix(const Pose& p) {
  const Quat& q = p.orientation;
  return osg::Matrixd::rotate(osg::Quat(q.x(), q.y(), q.z(), q.w())) *
         osg::Matrixd::translate(p.position_m.x(), p.position_m.y(), p.position_m.z());
}

// Geometry drawn from client-side vertex buffer objects (no display lists, so colours can change).
osg::ref_ptr<osg::Geometry> NewGeometry(const Rgb& colour) {
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  g->setUseDisplayList(false);
  g->setUseVertexBufferObjects(true);
  osg::ref_ptr<osg::Vec4Array> c = new osg::Vec4Array(1);
  (*c)[0] = ToOsg(colour);
  g->setColorArray(c, osg::Array::BIND_OVERALL);
  return g;
}

// Colour of a part that is not a lamp, for an entity painted `body`.
osg::Vec4 PartColour(PartRole role, const Rgb& body) {
  switch (role) {
    case PartRole::kBody: return ToOsg(body);
    case PartRole::kCargo:
      return osg::Vec4(0.35f * body.r + 0.6f, 0.35f * body.g + 0.6f, 0.35f * body.b + 0.58f, 1.0f);
    case PartRole::kGlass: return osg::Vec4(0.11f, 0.14f, 0.19f, 1.0f);
    case PartRole::kTrim: return osg::Vec4(0.16f, 0.16f, 0.17f, 1.0f);
    case PartRole::kTyre: return osg::Vec4(0.07f, 0.07f, 0.07f, 1.0f);
    case PartRole::kSkin: return osg::Vec4(0.86f, 0.67f, 0.53f, 1.0f);
    case PartRole::kClothes: return osg::Vec4(0.16f, 0.2f, 0.36f, 1.0f);
    case PartRole::kHair: return osg::Vec4(0.2f, 0.14f, 0.1f, 1.0f);
    default: return osg::Vec4(0.5f, 0.5f, 0.5f, 1.0f);
  }
}

}  // namespace

namespace scene_detail {
// Which of an entity's lamps are lit.
struct LampsLit {
  bool head = false, brake = false, reverse = false, left = false, right = false;
  bool operator==(const LampsLit&) const = default;
};
}  // namespace scene_detail
using scene_detail::LampsLit;

namespace {

// Colour of a lamp (drawn unlit): off lamps are dull, tail lamps glow dim red with the headlights and
// bright red when braking.
osg::Vec4 LampColour(PartRole role, const LampsLit& lit) {
  switch (role) {
    case PartRole::kHeadlamp: return lit.head ? osg::Vec4(1.0f, 1.0f, 0.9f, 1) : osg::Vec4(0.55f, 0.55f, 0.52f, 1);
    case PartRole::kTailLamp:
      return lit.brake  ? osg::Vec4(1.0f, 0.06f, 0.06f, 1)
             : lit.head ? osg::Vec4(0.62f, 0.04f, 0.04f, 1)
                        : osg::Vec4(0.3f, 0.03f, 0.03f, 1);
    case PartRole::kReverseLamp: return lit.reverse ? osg::Vec4(1.0f, 1.0f, 1.0f, 1) : osg::Vec4(0.33f, 0.33f, 0.35f, 1);
    case PartRole::kIndicatorLeft: return lit.left ? osg::Vec4(1.0f, 0.55f, 0.05f, 1) : osg::Vec4(0.4f, 0.25f, 0.06f, 1);
    case PartRole::kIndicatorRight: return lit.right ? osg::Vec4(1.0f, 0.55f, 0.05f, 1) : osg::Vec4(0.4f, 0.25f, 0.06f, 1);
    default: return osg::Vec4(0.5f, 0.5f, 0.5f, 1.0f);
  }
}

// Appends the six faces of a convex hexahedron (corner k: x, y, z side from bits 0, 1, 2) as triangles
// with flat normals pointing away from its centre, one role per vertex.
void AddSolid(const Solid& solid, osg::Vec3Array& v, osg::Vec3Array& n, osg::DrawElementsUInt& idx,
              std::vector<PartRole>& roles) {
  Vec3 centre = Vec3::Zero();
  for (const Vec3& c : solid.corner_m) centre += c / 8.0;
  for (int axis = 0; axis < 3; ++axis) {
    const int ua = axis == 0 ? 1 : 0, ub = axis == 2 ? 1 : 2;
    for (int side = 0; side < 2; ++side) {
      std::array<Vec3, 4> q;
      const int order[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
      for (int i = 0; i < 4; ++i)
        q[i] = solid.corner_m[(side << axis) | (order[i][0] << ua) | (order[i][1] << ub)];
      Vec3 normal = (q[2] - q[0]).cross(q[3] - q[1]);
      if (normal.norm() < 1e-12) continue;  // a face shrunk to a line
      normal.normalize();
      const Vec3 face_centre = 0.25 * (q[0] + q[1] + q[2] + q[3]);
      const bool flip = normal.dot(face_centre - centre) < 0;
      if (flip) normal = -normal;
      const auto base = static_cast<unsigned>(v.size());
      for (const Vec3& p : q) {
        v.push_back(ToOsg(p));
        n.push_back(ToOsg(normal));
        roles.push_back(solid.role);
      }
      // Counter-clockwise seen from outside.
      for (unsigned k : flip ? std::array<unsigned, 6>{0, 2, 1, 0, 3, 2} : std::array<unsigned, 6>{0, 1, 2, 0, 2, 3})
        idx.push_back(base + k);
    }
  }
}

// Appends a tyre: a cylinder about the y axis at `w.centre_m` (tread and two side discs).
void AddTyre(const WheelSpec& w, osg::Vec3Array& v, osg::Vec3Array& n, osg::DrawElementsUInt& idx,
             std::vector<PartRole>& roles) {
  constexpr int kSegments = 16;
  const osg::Vec3 c = ToOsg(w.centre_m);
  const auto r = static_cast<float>(w.radius_m);
  const auto hw = static_cast<float>(std::max(0.005, 0.5 * w.width_m - 0.01));
  const auto tread = static_cast<unsigned>(v.size());
  for (int i = 0; i <= kSegments; ++i) {
    const float a = static_cast<float>(2.0 * M_PI * i / kSegments);
    const osg::Vec3 radial(std::cos(a), 0.0f, std::sin(a));
    v.push_back(c + radial * r + osg::Vec3(0, -hw, 0));
    v.push_back(c + radial * r + osg::Vec3(0, hw, 0));
    n.push_back(radial);
    n.push_back(radial);
    if (i < kSegments)
      for (unsigned d : {0u, 1u, 2u, 1u, 3u, 2u}) idx.push_back(tread + 2 * static_cast<unsigned>(i) + d);
  }
  for (int side = -1; side <= 1; side += 2) {
    const auto centre = static_cast<unsigned>(v.size());
    v.push_back(c + osg::Vec3(0, side * hw, 0));
    n.push_back(osg::Vec3(0, static_cast<float>(side), 0));
    for (int i = 0; i <= kSegments; ++i) {
      const float a = static_cast<float>(2.0 * M_PI * i / kSegments);
      v.push_back(c + osg::Vec3(r * std::cos(a), side * hw, r * std::sin(a)));
      n.push_back(osg::Vec3(0, static_cast<float>(side), 0));
    }
    for (int i = 0; i < kSegments; ++i) {
      idx.push_back(centre);
      idx.push_back(centre + 1 + static_cast<unsigned>(side > 0 ? i + 1 : i));
      idx.push_back(centre + 1 + static_cast<unsigned>(side > 0 ? i : i + 1));
    }
  }
  roles.resize(v.size(), PartRole::kTyre);
}

// The light bar across each wheel that shows its rotation: a box of 1.6 r x width x 0.36 r per wheel,
// about the wheel's centre (24 vertices per wheel, in bar_v and bar_n), and its triangles.
void MakeSpokeBars(const std::vector<WheelSpec>& wheels, osg::Vec3Array& bar_v, osg::Vec3Array& bar_n,
                   osg::DrawElementsUInt& idx) {
  std::vector<PartRole> roles;
  for (const WheelSpec& w : wheels) {
    const double r = w.radius_m;
    AddSolid(BoxSolid(LocalBox{Vec3(-0.8 * r, -0.5 * w.width_m, -0.18 * r), Vec3(0.8 * r, 0.5 * w.width_m, 0.18 * r)},
                      PartRole::kTrim),
             bar_v, bar_n, idx, roles);
  }
}

// The bars of MakeSpokeBars turned by `angle` about their axles and moved to the wheel centres.
void PoseSpokes(const std::vector<WheelSpec>& wheels, const osg::Vec3Array& bar_v, const osg::Vec3Array& bar_n,
                double angle, osg::Vec3Array& v, osg::Vec3Array& n) {
  const osg::Matrix turn = osg::Matrix::rotate(angle, osg::Vec3(0, 1, 0));
  const size_t per_wheel = wheels.empty() ? 0 : bar_v.size() / wheels.size();
  for (size_t k = 0; k < bar_v.size(); ++k) {
    v[k] = ToOsg(wheels[k / per_wheel].centre_m) + bar_v[k] * turn;  // OSG's row vectors, as a MatrixTransform turns them
    n[k] = osg::Matrix::transform3x3(bar_n[k], turn);
  }
}

// A strip between lateral offsets t0 and t1 over [s0, s1] of `road`, raised by dz.
void AddStrip(const road::Road& road, double s0, double s1, double t0, double t1, double dz, double step,
              osg::Vec3Array& v, osg::Vec3Array& n, osg::DrawElementsUInt& idx) {
  const int count = std::max(1, static_cast<int>(std::ceil((s1 - s0) / step)));
  const auto base = static_cast<unsigned>(v.size());
  for (int i = 0; i <= count; ++i) {
    const double s = s0 + (s1 - s0) * i / count;
    v.push_back(ToOsg(road.PointAt(s, t0) + Vec3(0, 0, dz)));
    v.push_back(ToOsg(road.PointAt(s, t1) + Vec3(0, 0, dz)));
    n.push_back(osg::Vec3(0, 0, 1));
    n.push_back(osg::Vec3(0, 0, 1));
    if (i < count) {
      const unsigned k = base + 2 * static_cast<unsigned>(i);
      for (unsigned d : {0u, 2u, 1u, 1u, 2u, 3u}) idx.push_back(k + d);
    }
  }
}

// A strip between two lateral offsets that vary along s (t0(s), t1(s)) over [s0, s1] of `road`, on its surface
// (superelevation included), raised by dz; tessellated at least every `step` and at both ends.
template <class T0, class T1>
void AddStripAlong(const road::Road& road, double s0, double s1, T0&& t0, T1&& t1, double dz, double step,
                   osg::Vec3Array& v, osg::Vec3Array& n, osg::DrawElementsUInt& idx) {
  if (!(s1 > s0)) return;
  const int count = std::max(1, static_cast<int>(std::ceil((s1 - s0) / step)));
  const auto base = static_cast<unsigned>(v.size());
  for (int i = 0; i <= count; ++i) {
    const double s = i == count ? s1 : s0 + (s1 - s0) * i / count;
    v.push_back(ToOsg(road.SurfacePoint(s, t0(s)) + Vec3(0, 0, dz)));
    v.push_back(ToOsg(road.SurfacePoint(s, t1(s)) + Vec3(0, 0, dz)));
    n.push_back(osg::Vec3(0, 0, 1));
    n.push_back(osg::Vec3(0, 0, 1));
    if (i < count) {
      const unsigned k = base + 2 * static_cast<unsigned>(i);
      for (unsigned d : {0u, 2u, 1u, 1u, 2u, 3u}) idx.push_back(k + d);
    }
  }
}

// Whether a lane of this type is paved like the carriageway (drawn in asphalt) rather than a footway, verge or
// kerb (drawn in the pavement colour); lanes of type none are not drawn.
bool PavedLikeCarriageway(road::LaneType t) {
  using L = road::LaneType;
  switch (t) {
    case L::kSidewalk: case L::kCurb: case L::kWalking: case L::kMedian: case L::kBorder: case L::kShoulder:
    case L::kNone: case L::kRail: case L::kTram:
      return false;
    default:
      return true;
  }
}

// Where one road mark's lines go: the white and the yellow marks' arrays.
struct MarkGeometry {
  osg::Vec3Array* v;
  osg::Vec3Array* n;
  osg::DrawElementsUInt* idx;
};

// One road mark's lines over [s0, s1] on boundary b: its type's words (solid, broken, botts dots; two words:
// two lines, the first left of the boundary), its width; yellow marks go to `yellow`.
void AddMark(const road::Road& road, const road::RoadMarkDef& mark, int b, double s0, double s1, const SceneDef& def,
             double step, const MarkGeometry& white, const MarkGeometry& yellow) {
  std::vector<std::string> words;
  {
    std::string type = mark.type;
    for (size_t at = type.find("botts dots"); at != std::string::npos; at = type.find("botts dots")) type.replace(at, 10, "dots");
    std::istringstream is(type);
    for (std::string w; is >> w;) words.push_back(w);
  }
  const MarkGeometry& g = mark.color == road::MarkColor::kYellow ? yellow : white;
  const double hw = 0.5 * std::clamp(mark.width_m, 0.05, 0.5);
  const double dz = def.marking_height_m;
  for (size_t k = 0; k < words.size() && k < 2; ++k) {
    const double shift = words.size() < 2 ? 0.0 : (k == 0 ? 2 * hw : -2 * hw);
    auto lo = [&](double s) { return road.BoundaryOffsetAt(s, b) + shift - hw; };
    auto hi = [&](double s) { return road.BoundaryOffsetAt(s, b) + shift + hw; };
    if (words[k] == "solid") {
      AddStripAlong(road, s0, s1, lo, hi, dz, step, *g.v, *g.n, *g.idx);
    } else if (words[k] == "broken") {
      for (double s = s0; s < s1; s += def.dash_length_m + def.dash_gap_m)
        AddStripAlong(road, s, std::min(s1, s + def.dash_length_m), lo, hi, dz, step, *g.v, *g.n, *g.idx);
    } else if (words[k] == "dots") {
      for (double s = s0; s < s1; s += 1.2) AddStripAlong(road, s, std::min(s1, s + 2 * hw), lo, hi, dz, step, *g.v, *g.n, *g.idx);
    }
    // curb, grass, edge, custom, none: no paint.
  }
}

// Tessellation step of a road: chords stay within `sagitta` of the curve (s^2 |k| / 8 <= sagitta).
double RoadStep(const road::Road& road, const SceneDef& def) {
  double k_max = 0.0;
  for (const auto& sec : road.Def().sections)
    k_max = std::max({k_max, std::abs(sec.curvature_start_1pm), std::abs(sec.curvature_end_1pm)});
  if (k_max < 1e-9) return def.road_max_step_m;
  return std::clamp(std::sqrt(8.0 * def.road_sagitta_m / k_max), 0.25, def.road_max_step_m);
}

// A road whose lanes vary along s (an OpenDRIVE map): per lane section, each lane between its boundaries as they
// are at each s, in asphalt or the pavement colour by its type; the road marks of the centre line and of each
// lane's outer boundary, by type, width and colour (white or yellow).
osg::ref_ptr<osg::Group> BuildProfiledRoad(const road::Road& road, const SceneDef& def, double step,
                                           osg::ref_ptr<osg::Geometry> asphalt,
                                           osg::ref_ptr<osg::Vec4Array>& asphalt_colour,
                                           osg::ref_ptr<osg::Vec4Array>& marking_colour) {
  osg::ref_ptr<osg::Geometry> pavement = NewGeometry(def.pavement);
  osg::ref_ptr<osg::Geometry> lines = NewGeometry(def.marking);
  osg::ref_ptr<osg::Geometry> yellow_lines = NewGeometry(def.yellow_marking);
  struct Arrays {
    osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array, n = new osg::Vec3Array;
    osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
  } a_asphalt, a_pavement, a_white, a_yellow;
  const MarkGeometry white{a_white.v.get(), a_white.n.get(), a_white.idx.get()};
  const MarkGeometry yellow{a_yellow.v.get(), a_yellow.n.get(), a_yellow.idx.get()};
  // Sections: the lane profile's, or one over the whole road (a lane offset on constant lanes).
  std::vector<double> starts;
  for (const auto& ls : road.Def().lane_sections) starts.push_back(std::clamp(ls.s_m, 0.0, road.Length()));
  if (starts.empty()) starts.push_back(0.0);
  for (size_t k = 0; k < starts.size(); ++k) {
    const double s0 = starts[k], s1 = k + 1 < starts.size() ? starts[k + 1] : road.Length();
    if (!(s1 > s0)) continue;
    const double mid = 0.5 * (s0 + s1);
    for (int side : {-1, 1}) {
      const int count = side < 0 ? road.LanesRightAt(mid) : road.LanesLeftAt(mid);
      for (int i = 1; i <= count; ++i) {
        const int lane = side * i;
        const road::LaneType type = road.LaneTypeAt(mid, lane);
        if (type == road::LaneType::kNone) continue;
        Arrays& arr = PavedLikeCarriageway(type) ? a_asphalt : a_pavement;
        // Lower t first, as every strip goes, so all triangles face up.
        auto right_edge = [&](double s) { return road.BoundaryOffsetAt(s, side < 0 ? lane : lane - side); };
        auto left_edge = [&](double s) { return road.BoundaryOffsetAt(s, side < 0 ? lane - side : lane); };
        AddStripAlong(road, s0, s1, right_edge, left_edge, 0.0, step, *arr.v, *arr.n, *arr.idx);
      }
    }
    // Marks: the centre line's (b = 0) and each lane's outer boundary, each mark until the next.
    if (road.HasLaneProfile()) {
      const road::LaneSectionDef& ls = road.Def().lane_sections[k];
      auto marks = [&](const std::vector<road::RoadMarkDef>& list, int b) {
        for (size_t m = 0; m < list.size(); ++m) {
          const double from = std::max(s0, s0 + list[m].s_offset_m);
          const double to = m + 1 < list.size() ? std::min(s1, s0 + list[m + 1].s_offset_m) : s1;
          if (to > from) AddMark(road, list[m], b, from, to, def, step, white, yellow);
        }
      };
      marks(ls.center_marks, 0);
      for (const auto& l : ls.right) marks(l.marks, l.id);
      for (const auto& l : ls.left) marks(l.marks, l.id);
    }
  }
  auto finish = [](osg::Geometry* g, Arrays& a) {
    g->setVertexArray(a.v);
    g->setNormalArray(a.n, osg::Array::BIND_PER_VERTEX);
    g->addPrimitiveSet(a.idx);
  };
  finish(asphalt.get(), a_asphalt);
  finish(pavement.get(), a_pavement);
  finish(lines.get(), a_white);
  finish(yellow_lines.get(), a_yellow);
  asphalt_colour = static_cast<osg::Vec4Array*>(asphalt->getColorArray());
  marking_colour = static_cast<osg::Vec4Array*>(lines->getColorArray());
  osg::ref_ptr<osg::Geode> asphalt_geode = new osg::Geode;
  asphalt_geode->addDrawable(asphalt);
  asphalt_geode->addDrawable(pavement);
  asphalt_geode->getOrCreateStateSet()->setAttributeAndModes(new osg::PolygonOffset(-1.0f, -2.0f));
  osg::ref_ptr<osg::Geode> line_geode = new osg::Geode;
  line_geode->addDrawable(lines);
  line_geode->addDrawable(yellow_lines);
  line_geode->getOrCreateStateSet()->setAttributeAndModes(new osg::PolygonOffset(-2.0f, -4.0f));
  osg::ref_ptr<osg::Group> g = new osg::Group;
  g->addChild(asphalt_geode);
  g->addChild(line_geode);
  return g;
}

// Asphalt and markings of one road, as two geodes (markings drawn with a stronger polygon offset); their
// colour arrays go to `asphalt_colour` and `marking_colour` (SetConditions changes them).
osg::ref_ptr<osg::Group> BuildRoad(const road::Road& road, const SceneDef& def, osg::ref_ptr<osg::Vec4Array>& asphalt_colour,
                                   osg::ref_ptr<osg::Vec4Array>& marking_colour) {
  const double step = RoadStep(road, def);
  const double len = road.Length();
  osg::ref_ptr<osg::Geometry> asphalt = NewGeometry(def.asphalt);
  if (road.HasLaneProfile() || !road.Def().lane_offset.empty())
    return BuildProfiledRoad(road, def, step, asphalt, asphalt_colour, marking_colour);
  {
    osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
    osg::ref_ptr<osg::Vec3Array> n = new osg::Vec3Array;
    osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
    AddStrip(road, 0.0, len, road.RightEdgeOffset(), road.LeftEdgeOffset(), 0.0, step, *v, *n, *idx);
    asphalt->setVertexArray(v);
    asphalt->setNormalArray(n, osg::Array::BIND_PER_VERTEX);
    asphalt->addPrimitiveSet(idx);
  }
  osg::ref_ptr<osg::Geometry> lines = NewGeometry(def.marking);
  {
    osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
    osg::ref_ptr<osg::Vec3Array> n = new osg::Vec3Array;
    osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
    const double hw = 0.5 * def.marking_width_m;
    const double dz = def.marking_height_m;
    for (int b = -road.LanesRight(); b <= road.LanesLeft(); ++b) {
      const double t = road.BoundaryOffset(b);
      switch (road.BoundaryMarking(b)) {
        case road::Marking::kNone: break;
        case road::Marking::kSolid: AddStrip(road, 0.0, len, t - hw, t + hw, dz, step, *v, *n, *idx); break;
        case road::Marking::kDouble:
          AddStrip(road, 0.0, len, t - 3 * hw, t - hw, dz, step, *v, *n, *idx);
          AddStrip(road, 0.0, len, t + hw, t + 3 * hw, dz, step, *v, *n, *idx);
          break;
        case road::Marking::kDashed:
          for (double s = 0.0; s < len; s += def.dash_length_m + def.dash_gap_m)
            AddStrip(road, s, std::min(len, s + def.dash_length_m), t - hw, t + hw, dz, step, *v, *n, *idx);
          break;
        case road::Marking::kBottsDots:
          for (double s = 0.0; s < len; s += 1.2)
            AddStrip(road, s, std::min(len, s + 2 * hw), t - hw, t + hw, dz, step, *v, *n, *idx);
          break;
      }
    }
    lines->setVertexArray(v);
    lines->setNormalArray(n, osg::Array::BIND_PER_VERTEX);
    lines->addPrimitiveSet(idx);
  }
  asphalt_colour = static_cast<osg::Vec4Array*>(asphalt->getColorArray());
  marking_colour = static_cast<osg::Vec4Array*>(lines->getColorArray());
  osg::ref_ptr<osg::Geode> asphalt_geode = new osg::Geode;
  asphalt_geode->addDrawable(asphalt);
  asphalt_geode->getOrCreateStateSet()->setAttributeAndModes(new osg::PolygonOffset(-1.0f, -2.0f));
  osg::ref_ptr<osg::Geode> line_geode = new osg::Geode;
  line_geode->addDrawable(lines);
  line_geode->getOrCreateStateSet()->setAttributeAndModes(new osg::PolygonOffset(-2.0f, -4.0f));
  osg::ref_ptr<osg::Group> g = new osg::Group;
  g->addChild(asphalt_geode);
  g->addChild(line_geode);
  return g;
}

}  // namespace

SceneDef DefaultSceneDef() { return SceneDef{}; }

Rgb SurfaceAsphalt(const Rgb& asphalt, const world::SurfaceConditions& surface) {
  const auto f = static_cast<float>(surface.road_brightness);
  return Rgb{std::min(1.0f, asphalt.r * f), std::min(1.0f, asphalt.g * f), std::min(1.0f, asphalt.b * f)};
}

Rgb SurfaceMarking(const Rgb& asphalt, const Rgb& marking, const world::SurfaceConditions& surface) {
  const Rgb road = SurfaceAsphalt(asphalt, surface);
  const auto c = static_cast<float>(surface.marking_contrast);
  return Rgb{road.r + (marking.r - road.r) * c, road.g + (marking.g - road.g) * c, road.b + (marking.b - road.b) * c};
}

// Geometry of one shape at one box size, shared by every entity drawn so: the static parts (lit; per
// vertex roles that pick colours) and the lamps (unlit). Each entity's geometries share these vertex,
// normal and index arrays (and so their vertex buffers) and own only their colour arrays.
struct SceneGraph::ModelTemplate {
  VehicleModel model;
  osg::ref_ptr<osg::Geometry> parts, lamps;  // lamps: null when the model has none
  std::vector<PartRole> part_roles, lamp_roles;
  // The far model (BuildFarVehicleModel): null far_parts when the shape has none or the LOD is off.
  osg::ref_ptr<osg::Geometry> far_parts, far_lamps;
  std::vector<PartRole> far_part_roles, far_lamp_roles;
  osg::ref_ptr<osg::Vec3Array> bar_v, bar_n;  // wheel light bars about their wheel's centre
  osg::ref_ptr<osg::DrawElementsUInt> bar_idx;
};

// One entity's model: pose transform and one geode of at most three drawables: the static parts with
// per-vertex colours, the lamps and the light bars that show the wheels turning. With a far model, an
// osg::LOD between them picks by pixel size: the full geode or the far one (far parts and far lamps).
struct SceneGraph::Model {
  osg::ref_ptr<osg::MatrixTransform> root;
  std::shared_ptr<const ModelTemplate> tmpl;
  osg::ref_ptr<osg::Geometry> parts, lamps, spokes;
  osg::ref_ptr<osg::Geometry> far_parts, far_lamps;  // null without a far model
  protocol::EntityKind kind = protocol::EntityKind::kUnknown;
  Vec3 size_m = Vec3::Zero();
  double wheel_radius_m = 0.0;
  double wheel_angle_rad = 0.0;
  Vec3 last_position_m = Vec3::Zero();
  LampsLit lit;
};

void UseNearestFirstDrawOrder() {
  static const bool done = [] {
    const char* env = std::getenv("OSG_DEFAULT_BIN_SORT_MODE");
    if (!env || !*env) osgUtil::RenderBin::setDefaultRenderBinSortMode(osgUtil::RenderBin::SORT_FRONT_TO_BACK);
    return true;
  }();
  (void)done;
}

SceneGraph::SceneGraph(const SceneDef& def) : def_(def) {
  UseNearestFirstDrawOrder();
  root_ = new osg::Group;
  root_->setName("platoon scene");
  // Sun: one directional light fixed in the world (the light source's default, relative reference frame
  // puts it under the view matrix); the ambient term comes from the light so that the global
  // light-model ambient (0.2 by default) does not add to it.
  osg::ref_ptr<osg::Light> sun = new osg::Light(0);
  const Vec3 d = def_.sun_direction.normalized();
  sun->setPosition(osg::Vec4(static_cast<float>(d.x()), static_cast<float>(d.y()), static_cast<float>(d.z()), 0.0f));
  const auto a = static_cast<float>(def_.ambient), f = static_cast<float>(def_.diffuse);
  sun->setAmbient(osg::Vec4(a, a, a, 1));
  sun->setDiffuse(osg::Vec4(f, f, f, 1));
  sun->setSpecular(osg::Vec4(0, 0, 0, 1));
  osg::ref_ptr<osg::LightSource> sun_source = new osg::LightSource;
  sun_source->setLight(sun);
  root_->addChild(sun_source);
  osg::StateSet* ss = root_->getOrCreateStateSet();
  osg::ref_ptr<osg::LightModel> model = new osg::LightModel;
  model->setAmbientIntensity(osg::Vec4(0, 0, 0, 1));
  model->setTwoSided(true);
  ss->setAttributeAndModes(model);
  ss->setMode(GL_LIGHTING, osg::StateAttribute::ON);
  ss->setMode(GL_LIGHT0, osg::StateAttribute::ON);
  ss->setMode(GL_NORMALIZE, osg::StateAttribute::ON);
  osg::ref_ptr<osg::Material> material = new osg::Material;
  material->setColorMode(osg::Material::AMBIENT_AND_DIFFUSE);
  material->setSpecular(osg::Material::FRONT_AND_BACK, osg::Vec4(0, 0, 0, 1));
  ss->setAttributeAndModes(material);

  // Every surface is shaded per pixel (world_shading.cpp): the fixed light above stays for nodes that
  // switch the shaders off. Until SetConditions, the SceneDef's sun.
  sky_colour_ = def_.sky;
  shading_ = std::make_unique<world_shading::Shading>(*root_, def_.sun_direction, def_.ambient, def_.diffuse);

  // Lamps glow in their own colour, whatever the sun.
  lamp_state_ = new osg::StateSet;
  lamp_state_->setMode(GL_LIGHTING, osg::StateAttribute::OFF);
  world_shading::Shading::SetMode(*lamp_state_, world_shading::kModeUnlit);

  ground_group_ = new osg::Group;
  roads_ = new osg::Group;
  entities_ = new osg::Group;
  environment_ = new osg::Group;
  world_shading::Shading::SetSurface(*ground_group_->getOrCreateStateSet(), world_shading::kSurfaceGround);
  world_shading::Shading::SetSurface(*roads_->getOrCreateStateSet(), world_shading::kSurfaceRoad);
  root_->addChild(ground_group_);
  root_->addChild(roads_);
  root_->addChild(environment_);
  root_->addChild(entities_);

  // Sensor data: unlit, drawn with dynamic arrays refilled in place.
  sensors_ = new osg::Group;
  sensors_->getOrCreateStateSet()->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE);
  // Fixed function (an empty program): sensor data keeps its colours whatever the light and the fog.
  sensors_->getOrCreateStateSet()->setAttributeAndModes(new osg::Program, osg::StateAttribute::ON | osg::StateAttribute::OVERRIDE);
  sensors_->getOrCreateStateSet()->setMode(GL_FOG, osg::StateAttribute::OFF);
  root_->addChild(sensors_);
  root_->addChild(shading_->Rain());
  auto dynamic_geometry = [](GLenum mode) {
    osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
    g->setDataVariance(osg::Object::DYNAMIC);
    g->setUseDisplayList(false);
    g->setUseVertexBufferObjects(true);
    g->setVertexArray(new osg::Vec3Array);
    g->setColorArray(new osg::Vec4Array, osg::Array::BIND_PER_VERTEX);
    g->addPrimitiveSet(new osg::DrawArrays(mode, 0, 0));
    return g;
  };
  cloud_ = dynamic_geometry(GL_POINTS);
  cloud_->getOrCreateStateSet()->setAttributeAndModes(new osg::Point(2.0f));
  radar_ = dynamic_geometry(GL_TRIANGLES);
  osg::ref_ptr<osg::Geode> sensor_geode = new osg::Geode;
  sensor_geode->addDrawable(cloud_);
  sensor_geode->addDrawable(radar_);
  sensors_->addChild(sensor_geode);

  BuildGround(GroundExtent{0.0, 0.0, def_.ground_half_size_m, -def_.ground_depth_m});
}

SceneGraph::~SceneGraph() = default;

void SceneGraph::BuildGround(const GroundExtent& e) {
  ground_ = e;
  ground_group_->removeChildren(0, ground_group_->getNumChildren());
  // A grid, not one quad: the fixed-function pipeline computes fog per vertex (|eye z| at each corner),
  // and a quad whose corners lie kilometres away, some behind the eye, takes the fog colour everywhere,
  // the ground under the wheels included. Cells of at most 250 m (up to 64 a side) keep a near pixel's fog
  // distance within a cell's diagonal of its true one: nearer than the fog's start (300 m), so it shows
  // no fog, and a few thousand triangles cost a software renderer little; chunks of 16 x 16 cells are
  // culled on their own.
  constexpr double kCellM = 250.0;
  constexpr int kMaxCells = 64, kChunk = 16;
  const int n = std::clamp(static_cast<int>(std::ceil(2.0 * e.half_size_m / kCellM)), 1, kMaxCells);
  const double cell = 2.0 * e.half_size_m / n;
  const double x0 = e.centre_x_m - e.half_size_m, y0 = e.centre_y_m - e.half_size_m;
  const auto z = static_cast<float>(e.z_m);
  osg::ref_ptr<osg::Vec3Array> up = new osg::Vec3Array(1);
  (*up)[0] = osg::Vec3(0, 0, 1);
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  for (int ci = 0; ci < n; ci += kChunk)
    for (int cj = 0; cj < n; cj += kChunk) {
      const int ni = std::min(kChunk, n - ci), nj = std::min(kChunk, n - cj);
      osg::ref_ptr<osg::Geometry> g = NewGeometry(def_.ground);
      osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
      for (int j = 0; j <= nj; ++j)
        for (int i = 0; i <= ni; ++i)
          v->push_back(osg::Vec3(static_cast<float>(x0 + (ci + i) * cell), static_cast<float>(y0 + (cj + j) * cell), z));
      osg::ref_ptr<osg::DrawElementsUShort> idx = new osg::DrawElementsUShort(GL_TRIANGLES);
      for (int j = 0; j < nj; ++j)
        for (int i = 0; i < ni; ++i) {
          const auto k = static_cast<unsigned short>(j * (ni + 1) + i), above = static_cast<unsigned short>(k + ni + 1);
          for (unsigned short d : {k, static_cast<unsigned short>(k + 1), static_cast<unsigned short>(above + 1), k,
                                   static_cast<unsigned short>(above + 1), above})
            idx->push_back(d);
        }
      g->setVertexArray(v);
      g->setNormalArray(up, osg::Array::BIND_OVERALL);
      g->addPrimitiveSet(idx);
      geode->addDrawable(g);
    }
  ground_group_->addChild(geode);
}

void SceneGraph::SetRoads(const road::RoadNetwork& network) {
  roads_->removeChildren(0, roads_->getNumChildren());
  double x0 = std::numeric_limits<double>::infinity(), y0 = x0, z0 = x0;
  double x1 = -x0, y1 = -x0;
  road_colours_.clear();
  for (const auto& road : network.Roads()) {
    osg::ref_ptr<osg::Vec4Array> asphalt, marking;
    roads_->addChild(BuildRoad(road, def_, asphalt, marking));
    road_colours_.push_back({asphalt, marking});
    // Bounding box of the road, sampled along its reference line.
    const double pad = std::max(road.LeftEdgeOffset(), -road.RightEdgeOffset());
    for (double s = 0.0;; s = std::min(road.Length(), s + 10.0)) {
      const Vec3 p = road.ReferencePoint(s);
      x0 = std::min(x0, p.x() - pad);
      x1 = std::max(x1, p.x() + pad);
      y0 = std::min(y0, p.y() - pad);
      y1 = std::max(y1, p.y() + pad);
      z0 = std::min(z0, p.z());
      if (s >= road.Length()) break;
    }
  }
  ApplySurface();
  if (network.Roads().empty()) {
    BuildGround(GroundExtent{0.0, 0.0, def_.ground_half_size_m, -def_.ground_depth_m});
    return;
  }
  const double half = std::max(def_.ground_half_size_m, 0.5 * std::max(x1 - x0, y1 - y0) + def_.ground_margin_m);
  BuildGround(GroundExtent{0.5 * (x0 + x1), 0.5 * (y0 + y1), half, z0 - def_.ground_depth_m});
}

void SceneGraph::SetEnvironment(const std::vector<road::EnvObject>& objects) {
  environment_->removeChildren(0, environment_->getNumChildren());
  environment_->addChild(BuildEnvironment(objects, def_.environment));
  environment_count_ = objects.size();
  // Street lights shine from just under the top of their box (the lamp head).
  auto& lamps = shading_->StreetLamps();
  lamps.clear();
  for (const auto& o : objects)
    if (o.kind == road::ObjectKind::kStreetLight) lamps.push_back(o.position_m + Vec3(0, 0, 0.93 * o.size_m.z()));
  if (atmosphere_on_) return;
  atmosphere_on_ = true;
  EnsureDome();
  if (!conditions_set_) sky_colour_ = def_.atmosphere.horizon;
  // Clear air: a linear fade to the horizon colour hides the ground's edge (the weather's fog comes on top).
  if (def_.atmosphere.fog) shading_->SetHaze(def_.atmosphere.fog_start_m, def_.atmosphere.fog_end_m);
}

void SceneGraph::SetSigns(const std::vector<road::PlacedSign>& signs) {
  if (!signs_) {
    signs_ = new osg::Group;
    root_->addChild(signs_);
  }
  placed_signs_ = signs;
  // A variable sign shows what the session's conditions say now, not what the file placed.
  if (conditions_set_) road::ApplyVariableContents(placed_signs_, variable_signs_);
  signs_->removeChildren(0, signs_->getNumChildren());
  signs_->addChild(BuildSigns(placed_signs_));
  sign_count_ = placed_signs_.size();
}

void SceneGraph::EnsureDome() {
  if (dome_on_) return;
  dome_on_ = true;
  osg::ref_ptr<osg::Node> dome = BuildSkyDome(def_.atmosphere);
  shading_->ShadeSky(*dome);
  root_->insertChild(0, dome);
}

void SceneGraph::ApplySurface() {
  const Rgb a = SurfaceAsphalt(def_.asphalt, surface_);
  const Rgb m = SurfaceMarking(def_.asphalt, def_.marking, surface_);
  for (auto& [asphalt, marking] : road_colours_) {
    (*asphalt)[0] = ToOsg(a);
    asphalt->dirty();
    (*marking)[0] = ToOsg(m);
    marking->dirty();
  }
}

void SceneGraph::SetConditions(const world::WorldConditions& conditions) {
  if (!(conditions.surface == surface_)) {
    surface_ = conditions.surface;
    ApplySurface();
  }
  variable_signs_ = conditions.variable_signs;
  if (signs_ && road::ApplyVariableContents(placed_signs_, variable_signs_)) {
    signs_->removeChildren(0, signs_->getNumChildren());
    signs_->addChild(BuildSigns(placed_signs_));
  }
  look_ = LookOf(conditions);
  conditions_set_ = true;
  shading_->SetLook(look_);
  EnsureDome();
  // Clear colour (hidden by the dome, but cameras made from SkyColour start with it): the horizon, or the fog.
  const double t = look_.fog_extinction_1pm > 0.0 ? 1.0 - std::exp(-look_.fog_extinction_1pm * 3000.0) : 0.0;
  sky_colour_ = Rgb{static_cast<float>(look_.horizon.r + (look_.fog.r - look_.horizon.r) * t),
                    static_cast<float>(look_.horizon.g + (look_.fog.g - look_.horizon.g) * t),
                    static_cast<float>(look_.horizon.b + (look_.fog.b - look_.horizon.b) * t)};
}

Rgb SceneGraph::ColourOf(uint64_t id) const {
  const auto it = colours_.find(id);
  return it != colours_.end() ? it->second : EntityColour(id);
}

std::shared_ptr<const SceneGraph::ModelTemplate> SceneGraph::TemplateFor(protocol::EntityKind kind, const Vec3& size) {
  const VehicleShape shape = ShapeOf(kind, size);
  const auto key = std::make_tuple(static_cast<int>(shape), size.x(), size.y(), size.z());
  if (const auto it = templates_.find(key); it != templates_.end()) return it->second;
  // Sizes seen once (a session of many odd boxes) must not pile up: start afresh past a bound.
  if (templates_.size() >= 256) templates_.clear();
  auto t = std::make_shared<ModelTemplate>();
  t->model = BuildVehicleModel(kind, size, def_.layout);
  auto fill = [](osg::Geometry& g, osg::Vec3Array* v, osg::Vec3Array* n, osg::DrawElementsUInt* idx) {
    g.setUseDisplayList(false);
    g.setUseVertexBufferObjects(true);
    g.setVertexArray(v);
    g.setNormalArray(n, osg::Array::BIND_PER_VERTEX);
    g.addPrimitiveSet(idx);
  };
  // The static parts (with tyres) and the lamps of `model` as two geometries (lamps null if none).
  auto build = [&](const VehicleModel& model, osg::ref_ptr<osg::Geometry>& parts, std::vector<PartRole>& part_roles,
                   osg::ref_ptr<osg::Geometry>& lamps, std::vector<PartRole>& lamp_roles) {
    {
      osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array, n = new osg::Vec3Array;
      osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
      for (const Solid& part : model.parts)
        if (!IsLamp(part.role)) AddSolid(part, *v, *n, *idx, part_roles);
      for (const WheelSpec& w : model.wheels) AddTyre(w, *v, *n, *idx, part_roles);
      parts = new osg::Geometry;
      fill(*parts, v, n, idx);
    }
    osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array, n = new osg::Vec3Array;
    osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
    for (const Solid& part : model.parts)
      if (IsLamp(part.role)) AddSolid(part, *v, *n, *idx, lamp_roles);
    if (!v->empty()) {
      lamps = new osg::Geometry;
      fill(*lamps, v, n, idx);
    }
  };
  build(t->model, t->parts, t->part_roles, t->lamps, t->lamp_roles);
  if (def_.far_model_below_px > 0.0) {
    const VehicleModel far = BuildFarVehicleModel(t->model);
    if (!far.parts.empty()) build(far, t->far_parts, t->far_part_roles, t->far_lamps, t->far_lamp_roles);
  }
  t->bar_v = new osg::Vec3Array;
  t->bar_n = new osg::Vec3Array;
  t->bar_idx = new osg::DrawElementsUInt(GL_TRIANGLES);
  MakeSpokeBars(t->model.wheels, *t->bar_v, *t->bar_n, *t->bar_idx);
  templates_.emplace(key, t);
  return t;
}

namespace {

// A geometry that shares `shared`'s vertices, normals and triangles and has its own per-vertex colour
// array (in its own vertex buffer, so one entity's new colours upload only its own).
osg::ref_ptr<osg::Geometry> ShareGeometry(const osg::Geometry& shared, size_t vertices) {
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry(shared, osg::CopyOp::SHALLOW_COPY);
  osg::ref_ptr<osg::Vec4Array> colours = new osg::Vec4Array(static_cast<unsigned>(vertices));
  colours->setVertexBufferObject(new osg::VertexBufferObject);
  g->setColorArray(colours, osg::Array::BIND_PER_VERTEX);
  return g;
}

void PaintParts(osg::Geometry& g, const std::vector<PartRole>& roles, const Rgb& body) {
  auto* c = static_cast<osg::Vec4Array*>(g.getColorArray());
  for (size_t i = 0; i < roles.size(); ++i) (*c)[i] = PartColour(roles[i], body);
  c->dirty();
}

void PaintLamps(osg::Geometry& g, const std::vector<PartRole>& roles, const LampsLit& lit) {
  auto* c = static_cast<osg::Vec4Array*>(g.getColorArray());
  for (size_t i = 0; i < roles.size(); ++i) (*c)[i] = LampColour(roles[i], lit);
  c->dirty();
}

}  // namespace

std::unique_ptr<SceneGraph::Model> SceneGraph::MakeModel(const protocol::EntityState& e) {
  auto m = std::make_unique<Model>();
  m->kind = e.kind;
  m->size_m = e.box_size_m;
  m->tmpl = TemplateFor(e.kind, e.box_size_m);
  const ModelTemplate& t = *m->tmpl;
  m->root = new osg::MatrixTransform;
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  m->parts = ShareGeometry(*t.parts, t.part_roles.size());
  PaintParts(*m->parts, t.part_roles, ColourOf(e.id));
  geode->addDrawable(m->parts);
  if (t.lamps) {
    m->lamps = ShareGeometry(*t.lamps, t.lamp_roles.size());
    m->lamps->setStateSet(lamp_state_.get());
    PaintLamps(*m->lamps, t.lamp_roles, m->lit);
    geode->addDrawable(m->lamps);
  }
  if (!t.model.wheels.empty()) {
    m->wheel_radius_m = t.model.wheels.front().radius_m;
    m->spokes = NewGeometry(Rgb{0.75f, 0.75f, 0.75f});
    m->spokes->setDataVariance(osg::Object::DYNAMIC);
    const auto count = static_cast<unsigned>(t.bar_v->size());
    osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array(count), n = new osg::Vec3Array(count);
    PoseSpokes(t.model.wheels, *t.bar_v, *t.bar_n, 0.0, *v, *n);
    // Triangles shared by every entity of the template; only the posed vertices are the entity's own.
    osg::DrawElementsUInt* idx = t.bar_idx.get();
    m->spokes->setVertexArray(v);
    m->spokes->setNormalArray(n, osg::Array::BIND_PER_VERTEX);
    m->spokes->addPrimitiveSet(idx);
    geode->addDrawable(m->spokes);
  }
  if (t.far_parts) {
    osg::ref_ptr<osg::Geode> far_geode = new osg::Geode;
    m->far_parts = ShareGeometry(*t.far_parts, t.far_part_roles.size());
    PaintParts(*m->far_parts, t.far_part_roles, ColourOf(e.id));
    far_geode->addDrawable(m->far_parts);
    if (t.far_lamps) {
      m->far_lamps = ShareGeometry(*t.far_lamps, t.far_lamp_roles.size());
      m->far_lamps->setStateSet(lamp_state_.get());
      PaintLamps(*m->far_lamps, t.far_lamp_roles, m->lit);
      far_geode->addDrawable(m->far_lamps);
    }
    // By the pixel size of the model's bounding sphere in the view that draws it, so every camera (seat,
    // mirror, camera sensor) switches at the same size on its own screen.
    osg::ref_ptr<osg::LOD> lod = new osg::LOD;
    lod->setRangeMode(osg::LOD::PIXEL_SIZE_ON_SCREEN);
    const auto px = static_cast<float>(def_.far_model_below_px);
    lod->addChild(geode, px, std::numeric_limits<float>::max());
    lod->addChild(far_geode, 0.0f, px);
    m->root->addChild(lod);
  } else {
    m->root->addChild(geode);
  }
  m->last_position_m = e.kinematics.pose.position_m;
  return m;
}

bool SceneGraph::IndicatorLit(int64_t sim_ns) {
  // Whole periods in integer nanoseconds: the phase of a long session is as exact as at its start.
  constexpr int64_t kPeriodNs = static_cast<int64_t>(1e9 / kIndicatorHz + 0.5);
  const int64_t in_period = ((sim_ns % kPeriodNs) + kPeriodNs) % kPeriodNs;
  return in_period < kPeriodNs / 2;
}

void SceneGraph::Update(const std::vector<protocol::EntityState>& entities, int64_t sim_ns) {
  const bool blink_on = IndicatorLit(sim_ns);
  shading_->SetTime(static_cast<double>(sim_ns) * 1e-9);
  auto& heads = shading_->Headlights();
  heads.clear();
  // A vehicle lights its headlights with the session's (not pedestrians, not static objects): one source
  // for the pair, at the middle of the box's front, at lamp height.
  auto is_vehicle = [](protocol::EntityKind k) {
    return k != protocol::EntityKind::kPedestrian && k != protocol::EntityKind::kStaticObject && k != protocol::EntityKind::kUnknown;
  };
  auto add_headlight = [&](const protocol::EntityState& e) {
    const Pose& pose = e.kinematics.pose;
    const Vec3 forward = pose.orientation * Vec3::UnitX();
    const Vec3 front(0.8 * e.box_size_m.x(), 0.0, std::min(0.7, 0.45 * e.box_size_m.z()));
    heads.push_back(world_shading::Headlight{pose.orientation * front + pose.position_m,
                                             Vec3(forward.x(), forward.y(), 0.0).normalized(), look_.high_beam});
  };
  if (own_ && is_vehicle(own_->kind) && (own_->lights.headlights || look_.headlights)) add_headlight(*own_);
  // Drop models of entities that are gone.
  std::map<uint64_t, const protocol::EntityState*> present;
  for (const auto& e : entities) present[e.id] = &e;
  for (auto it = models_.begin(); it != models_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    entities_->removeChild(it->second->root);
    it = models_.erase(it);
  }
  for (const auto& [id, e] : present) {
    auto it = models_.find(id);
    // A changed size or kind needs new geometry.
    if (it != models_.end() && (it->second->kind != e->kind || it->second->size_m != e->box_size_m)) {
      entities_->removeChild(it->second->root);
      models_.erase(it);
      it = models_.end();
    }
    if (it == models_.end()) {
      it = models_.emplace(id, MakeModel(*e)).first;
      entities_->addChild(it->second->root);
    }
    Model& m = *it->second;
    const Pose& pose = e->kinematics.pose;
    m.root->setMatrix(PoseMatrix(pose));
    if (m.spokes) {
      // Wheels turn by the forward distance travelled since the last update.
      const Vec3 forward = pose.orientation * Vec3::UnitX();
      const double d = forward.dot(pose.position_m - m.last_position_m);
      if (std::abs(d) < 50.0 && d != 0.0) {
        m.wheel_angle_rad = std::fmod(m.wheel_angle_rad + d / m.wheel_radius_m, 2.0 * M_PI);
        auto* v = static_cast<osg::Vec3Array*>(m.spokes->getVertexArray());
        auto* n = static_cast<osg::Vec3Array*>(m.spokes->getNormalArray());
        PoseSpokes(m.tmpl->model.wheels, *m.tmpl->bar_v, *m.tmpl->bar_n, m.wheel_angle_rad, *v, *n);
        v->dirty();
        n->dirty();
        m.spokes->dirtyBound();
      }
    }
    const bool vehicle = is_vehicle(e->kind);
    const bool head_on = e->lights.headlights || (vehicle && look_.headlights);
    if (head_on && vehicle) add_headlight(*e);
    if (m.lamps) {
      const LampsLit lit{head_on, e->lights.brake, e->lights.reverse, e->lights.indicator_left && blink_on,
                         e->lights.indicator_right && blink_on};
      if (!(lit == m.lit)) {
        m.lit = lit;
        PaintLamps(*m.lamps, m.tmpl->lamp_roles, lit);
        if (m.far_lamps) PaintLamps(*m.far_lamps, m.tmpl->far_lamp_roles, lit);
      }
    }
    m.last_position_m = pose.position_m;
  }
}

void SceneGraph::SetEntityColour(uint64_t id, const Rgb& colour) {
  colours_[id] = colour;
  const auto it = models_.find(id);
  if (it == models_.end()) return;
  PaintParts(*it->second->parts, it->second->tmpl->part_roles, colour);
  if (it->second->far_parts) PaintParts(*it->second->far_parts, it->second->tmpl->far_part_roles, colour);
}

void SceneGraph::ClearEntityColour(uint64_t id) {
  colours_.erase(id);
  const auto it = models_.find(id);
  if (it == models_.end()) return;
  PaintParts(*it->second->parts, it->second->tmpl->part_roles, EntityColour(id));
  if (it->second->far_parts) PaintParts(*it->second->far_parts, it->second->tmpl->far_part_roles, EntityColour(id));
}

std::optional<double> SceneGraph::WheelAngle(uint64_t id) const {
  const auto it = models_.find(id);
  if (it == models_.end()) return std::nullopt;
  return it->second->wheel_angle_rad;
}

namespace {

// Refills a dynamic geometry's arrays (sized to the new content) and its single DrawArrays.
void Refill(osg::Geometry& g, size_t count) {
  auto* v = static_cast<osg::Vec3Array*>(g.getVertexArray());
  auto* c = static_cast<osg::Vec4Array*>(g.getColorArray());
  v->dirty();
  c->dirty();
  auto* d = static_cast<osg::DrawArrays*>(g.getPrimitiveSet(0));
  d->setCount(static_cast<GLsizei>(count));
  d->dirty();
  g.dirtyBound();
}

}  // namespace

void SceneGraph::SetPointCloud(const std::vector<WorldPoint>& points, PointColouring colouring, float size_px) {
  auto* v = static_cast<osg::Vec3Array*>(cloud_->getVertexArray());
  auto* c = static_cast<osg::Vec4Array*>(cloud_->getColorArray());
  v->resize(points.size());
  c->resize(points.size());
  const auto [lo, hi] = LogIntensityRange(points);
  for (size_t i = 0; i < points.size(); ++i) {
    (*v)[i] = ToOsg(points[i].position_m);
    (*c)[i] = ToOsg(colouring == PointColouring::kSource ? SourceColour(points[i].source)
                                                         : IntensityColour(points[i].intensity, lo, hi));
  }
  Refill(*cloud_, points.size());
  auto* point = static_cast<osg::Point*>(cloud_->getStateSet()->getAttribute(osg::StateAttribute::POINT));
  if (point && point->getSize() != size_px) point->setSize(size_px);
}

size_t SceneGraph::PointCount() const { return static_cast<const osg::Vec3Array*>(cloud_->getVertexArray())->size(); }

void SceneGraph::SetRadarMarkers(const std::vector<RadarMarker>& markers) {
  auto* v = static_cast<osg::Vec3Array*>(radar_->getVertexArray());
  auto* c = static_cast<osg::Vec4Array*>(radar_->getColorArray());
  v->clear();
  c->clear();
  constexpr double kHeight = 0.3, kLift = 0.05, kMinSize = 0.5;
  for (const auto& m : markers) {
    const double hl = 0.5 * std::max(m.length_m, kMinSize), hw = 0.5 * std::max(m.width_m, kMinSize);
    const double cy = std::cos(m.yaw_rad), sy = std::sin(m.yaw_rad);
    const Vec3 ax(cy, sy, 0), ay(-sy, cy, 0);
    const osg::Vec4 colour = m.false_positive ? osg::Vec4(0.6f, 0.6f, 0.6f, 1) : osg::Vec4(1.0f, 0.45f, 0.0f, 1);
    const osg::Vec4 top_colour = colour * 1.0f + osg::Vec4(0.0f, 0.2f, 0.2f, 0.0f);
    Vec3 corner[8];
    for (int k = 0; k < 8; ++k) {
      const double sx = (k & 1) ? hl : -hl, syy = (k & 2) ? hw : -hw, z = (k & 4) ? kLift + kHeight : kLift;
      corner[k] = m.position_m + sx * ax + syy * ay + Vec3(0, 0, z);
    }
    // Six faces as quads of corner indices, two triangles each.
    static constexpr int kFaces[6][4] = {{0, 1, 3, 2}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 3, 7, 6}, {0, 2, 6, 4}, {1, 3, 7, 5}};
    for (int f = 0; f < 6; ++f) {
      for (int t : {0, 1, 2, 0, 2, 3}) {
        v->push_back(ToOsg(corner[kFaces[f][t]]));
        c->push_back(f == 1 ? top_colour : colour);
      }
    }
  }
  radar_count_ = markers.size();
  Refill(*radar_, v->size());
}

}  // namespace platoon::viewer
