#include "platoon/viewer/environment.hpp"

#include <osg/BlendFunc>
#include <osg/Depth>
#include <osg/Fog>
#include <osg/Geode>
#include <osg/Geometry>
#include <osg/LOD>
#include <osg/Material>
#include <osg/Transform>
#include <osgUtil/CullVisitor>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

namespace platoon::viewer {
namespace {

using road::ObjectKind;

osg::Vec4 Colour(const Rgb& c) { return osg::Vec4(c.r, c.g, c.b, 1.0f); }

// Triangles with per-vertex normals and colours, built on the CPU and turned into one osg::Geometry.
struct Mesh {
  std::vector<osg::Vec3> v, n;
  std::vector<osg::Vec4> c;
  std::vector<unsigned> idx;

  // An axis-aligned box between lo and hi (6 faces, 2 triangles each, outward normals), its corners
  // sent through `place` (a rigid-plus-scale map; normals through `turn`, renormalised).
  template <typename Place, typename Turn>
  void Box(const osg::Vec3& lo, const osg::Vec3& hi, const osg::Vec4& colour, Place place, Turn turn) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int side = 0; side < 2; ++side) {
        const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
        osg::Vec3 normal;
        normal[axis] = side ? 1.0f : -1.0f;
        const auto base = static_cast<unsigned>(v.size());
        const float uu[4] = {0, 1, 1, 0}, ww[4] = {0, 0, 1, 1};
        for (int k = 0; k < 4; ++k) {
          osg::Vec3 p;
          p[axis] = side ? hi[axis] : lo[axis];
          // Counter-clockwise seen from outside: swap the in-face axes on the negative side.
          const float su = side ? uu[k] : ww[k], sw = side ? ww[k] : uu[k];
          p[a1] = su ? hi[a1] : lo[a1];
          p[a2] = sw ? hi[a2] : lo[a2];
          v.push_back(place(p));
          osg::Vec3 nn = turn(normal);
          nn.normalize();
          n.push_back(nn);
          c.push_back(colour);
        }
        for (unsigned k : {0u, 1u, 2u, 0u, 2u, 3u}) idx.push_back(base + k);
      }
    }
  }
  void Box(const osg::Vec3& lo, const osg::Vec3& hi, const osg::Vec4& colour) {
    Box(lo, hi, colour, [](const osg::Vec3& p) { return p; }, [](const osg::Vec3& d) { return d; });
  }

  // A solid of revolution about the z axis through (0, 0): rings (z, radius) from bottom to top, `sides`
  // facets, smooth normals; a flat cap closes the bottom ring when its radius is not zero.
  void Lathe(const std::vector<std::pair<float, float>>& rings, int sides, const osg::Vec4& colour) {
    const size_t nr = rings.size();
    for (size_t r = 0; r + 1 < nr; ++r) {
      const auto [z0, r0] = rings[r];
      const auto [z1, r1] = rings[r + 1];
      // Normal of the cone segment: (dz, -dr) turned about the axis.
      osg::Vec2 slope(z1 - z0, r0 - r1);
      slope.normalize();
      const auto base = static_cast<unsigned>(v.size());
      for (int i = 0; i <= sides; ++i) {
        const float a = static_cast<float>(2.0 * M_PI * i / sides);
        const float ca = std::cos(a), sa = std::sin(a);
        v.emplace_back(r0 * ca, r0 * sa, z0);
        v.emplace_back(r1 * ca, r1 * sa, z1);
        n.emplace_back(slope.x() * ca, slope.x() * sa, slope.y());
        n.emplace_back(slope.x() * ca, slope.x() * sa, slope.y());
        c.push_back(colour);
        c.push_back(colour);
        if (i < sides) {
          const unsigned k = base + 2 * static_cast<unsigned>(i);
          for (unsigned d : {0u, 2u, 1u, 1u, 2u, 3u}) idx.push_back(k + d);
        }
      }
    }
    const auto [zb, rb] = rings.front();
    if (rb > 0.0f) {
      const auto centre = static_cast<unsigned>(v.size());
      v.emplace_back(0.0f, 0.0f, zb);
      n.emplace_back(0.0f, 0.0f, -1.0f);
      c.push_back(colour);
      for (int i = 0; i <= sides; ++i) {
        const float a = static_cast<float>(2.0 * M_PI * i / sides);
        v.emplace_back(rb * std::cos(a), rb * std::sin(a), zb);
        n.emplace_back(0.0f, 0.0f, -1.0f);
        c.push_back(colour);
      }
      for (int i = 0; i < sides; ++i) {
        idx.push_back(centre);
        idx.push_back(centre + 2 + static_cast<unsigned>(i));
        idx.push_back(centre + 1 + static_cast<unsigned>(i));
      }
    }
  }

  osg::ref_ptr<osg::Geometry> ToGeometry() const {
    osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
    g->setUseDisplayList(false);
    g->setUseVertexBufferObjects(true);
    g->setVertexArray(new osg::Vec3Array(v.begin(), v.end()));
    g->setNormalArray(new osg::Vec3Array(n.begin(), n.end()), osg::Array::BIND_PER_VERTEX);
    g->setColorArray(new osg::Vec4Array(c.begin(), c.end()), osg::Array::BIND_PER_VERTEX);
    g->addPrimitiveSet(new osg::DrawElementsUInt(GL_TRIANGLES, idx.begin(), idx.end()));
    return g;
  }
};

// Full-detail models, one per kind, in the unit box [-0.5, 0.5]^2 x [0, 1] (x along the object's length, y
// across, z up); every object bakes a copy scaled to its own box into its tile's geometry. One model per
// kind, built once; per tile one draw call per level (llvmpipe is bound by draw calls, not triangles).
struct KindModel {
  Mesh body;  // lit surfaces
  Mesh glow;  // emissive surfaces (lamp heads)
};
using KindModels = std::map<ObjectKind, KindModel>;

KindModels MakeKindModels(const EnvironmentLooks& l) {
  KindModels m;
  {
    Mesh& b = m[ObjectKind::kBuilding].body;
    b.Box(osg::Vec3(-0.5f, -0.5f, 0.0f), osg::Vec3(0.5f, 0.5f, 0.96f), Colour(l.building_wall));
    b.Box(osg::Vec3(-0.5f, -0.5f, 0.96f), osg::Vec3(0.5f, 0.5f, 1.0f), Colour(l.building_roof));
    // Window bands on the long sides, slightly proud of the walls; the middle of the wall stays brick.
    const osg::Vec4 glass = Colour(Rgb{0.22f, 0.26f, 0.32f});
    for (float z : {0.16f, 0.72f}) {
      b.Box(osg::Vec3(-0.42f, -0.505f, z), osg::Vec3(0.42f, -0.5f, z + 0.1f), glass);
      b.Box(osg::Vec3(-0.42f, 0.5f, z), osg::Vec3(0.42f, 0.505f, z + 0.1f), glass);
    }
  }
  {
    Mesh& t = m[ObjectKind::kTree].body;
    t.Lathe({{0.0f, 0.07f}, {0.32f, 0.06f}}, 5, Colour(l.tree_trunk));
    t.Lathe({{0.28f, 0.40f}, {0.45f, 0.5f}, {0.75f, 0.4f}, {1.0f, 0.0f}}, 8, Colour(l.tree_canopy));
  }
  {
    Mesh& r = m[ObjectKind::kGuardRail].body;
    r.Box(osg::Vec3(-0.5f, -0.5f, 0.55f), osg::Vec3(0.5f, 0.5f, 1.0f), Colour(l.metal));
    r.Box(osg::Vec3(-0.03f, -0.3f, 0.0f), osg::Vec3(0.03f, 0.3f, 0.55f), Colour(l.metal));  // the post
  }
  {
    KindModel& s = m[ObjectKind::kStreetLight];
    s.body.Lathe({{0.0f, 0.3f}, {0.93f, 0.2f}}, 6, Colour(l.metal));
    s.glow.Box(osg::Vec3(-0.5f, -0.5f, 0.93f), osg::Vec3(0.5f, 0.5f, 1.0f), Colour(l.lamp));
  }
  {
    Mesh& s = m[ObjectKind::kSign].body;
    s.Box(osg::Vec3(-0.3f, -0.05f, 0.0f), osg::Vec3(0.3f, 0.05f, 0.62f), Colour(l.metal));
    s.Box(osg::Vec3(-0.5f, -0.5f, 0.62f), osg::Vec3(0.5f, 0.5f, 1.0f), Colour(l.sign_plate));
  }
  return m;
}

osg::Matrixd ObjectMatrix(const road::EnvObject& o) {
  return osg::Matrixd::scale(o.size_m.x(), o.size_m.y(), o.size_m.z()) * osg::Matrixd::rotate(o.yaw_rad, osg::Vec3d(0, 0, 1)) *
         osg::Matrixd::translate(o.position_m.x(), o.position_m.y(), o.position_m.z());
}

// Appends `model` placed at object `o`: points through the object's matrix, normals through the inverse
// transpose of its scale and rotation (renormalised).
void Bake(const Mesh& model, const road::EnvObject& o, Mesh& out) {
  const osg::Matrixd m = ObjectMatrix(o);
  const osg::Matrixd nm = osg::Matrixd::scale(1.0 / o.size_m.x(), 1.0 / o.size_m.y(), 1.0 / o.size_m.z()) *
                          osg::Matrixd::rotate(o.yaw_rad, osg::Vec3d(0, 0, 1));
  const auto base = static_cast<unsigned>(out.v.size());
  for (size_t i = 0; i < model.v.size(); ++i) {
    out.v.push_back(osg::Vec3(osg::Vec3d(model.v[i]) * m));
    osg::Vec3 n(osg::Vec3d(model.n[i]) * nm);
    n.normalize();
    out.n.push_back(n);
    out.c.push_back(model.c[i]);
  }
  for (unsigned k : model.idx) out.idx.push_back(base + k);
}

bool IsLarge(ObjectKind k) { return k == ObjectKind::kBuilding || k == ObjectKind::kTree; }

osg::ref_ptr<osg::Geode> GeodeOf(const Mesh& mesh, osg::StateSet* state = nullptr) {
  osg::ref_ptr<osg::Geode> g = new osg::Geode;
  osg::ref_ptr<osg::Geometry> geometry = mesh.ToGeometry();
  if (state) geometry->setStateSet(state);
  g->addDrawable(geometry);
  return g;
}

// One tile: its objects.
struct Tile {
  std::vector<const road::EnvObject*> objects;
};

osg::ref_ptr<osg::Node> BuildTile(const Tile& tile, const KindModels& models, const EnvironmentLooks& l, osg::StateSet* glow) {
  // Bounding sphere: centre of the footprints' extent, radius reaching every box corner.
  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300, z0 = 1e300, z1 = -1e300;
  for (const auto* o : tile.objects) {
    const double r = 0.5 * std::hypot(o->size_m.x(), o->size_m.y());
    x0 = std::min(x0, o->position_m.x() - r), x1 = std::max(x1, o->position_m.x() + r);
    y0 = std::min(y0, o->position_m.y() - r), y1 = std::max(y1, o->position_m.y() + r);
    z0 = std::min(z0, o->position_m.z()), z1 = std::max(z1, o->position_m.z() + o->size_m.z());
  }
  const osg::Vec3 centre(static_cast<float>(0.5 * (x0 + x1)), static_cast<float>(0.5 * (y0 + y1)), static_cast<float>(0.5 * (z0 + z1)));
  const float radius = static_cast<float>(0.5 * std::sqrt((x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0) + (z1 - z0) * (z1 - z0)));

  Mesh near_large, near_small, near_glow, far;
  for (const auto* o : tile.objects) {
    const KindModel& model = models.at(o->kind);
    Bake(model.body, *o, IsLarge(o->kind) ? near_large : near_small);
    if (!model.glow.v.empty()) Bake(model.glow, *o, near_glow);
    if (!IsLarge(o->kind)) continue;
    // Far level: the wall box of a building, the canopy of a tree.
    Mesh box;
    if (o->kind == ObjectKind::kBuilding)
      box.Box(osg::Vec3(-0.5f, -0.5f, 0.0f), osg::Vec3(0.5f, 0.5f, 1.0f), Colour(l.building_wall));
    else
      box.Box(osg::Vec3(-0.4f, -0.4f, 0.3f), osg::Vec3(0.4f, 0.4f, 1.0f), Colour(l.tree_canopy));
    Bake(box, *o, far);
  }
  osg::ref_ptr<osg::LOD> lod = new osg::LOD;
  lod->setCenterMode(osg::LOD::USER_DEFINED_CENTER);
  lod->setCenter(centre);
  lod->setRadius(radius);
  const auto detail = static_cast<float>(l.detail_range_m) + radius;
  if (!near_large.v.empty()) {
    lod->addChild(GeodeOf(near_large), 0.0f, detail);
    lod->addChild(GeodeOf(far), detail, static_cast<float>(l.far_range_m) + radius);
  }
  if (!near_small.v.empty()) {
    osg::ref_ptr<osg::Geode> small = GeodeOf(near_small);
    if (!near_glow.v.empty()) {
      osg::ref_ptr<osg::Geometry> lamps = near_glow.ToGeometry();
      lamps->setStateSet(glow);
      small->addDrawable(lamps);
    }
    lod->addChild(small, 0.0f, static_cast<float>(l.small_range_m) + radius);
  }
  return lod;
}

// Places its child at the eye point of every cull traversal (the sky never comes nearer).
class FollowEye final : public osg::Transform {
 public:
  bool computeLocalToWorldMatrix(osg::Matrix& matrix, osg::NodeVisitor* nv) const override {
    if (auto* cv = dynamic_cast<osgUtil::CullVisitor*>(nv)) matrix.preMultTranslate(cv->getEyeLocal());
    return true;
  }
  bool computeWorldToLocalMatrix(osg::Matrix& matrix, osg::NodeVisitor* nv) const override {
    if (auto* cv = dynamic_cast<osgUtil::CullVisitor*>(nv)) matrix.postMultTranslate(-cv->getEyeLocal());
    return true;
  }
};

}  // namespace

EnvironmentLooks DefaultEnvironmentLooks() { return EnvironmentLooks{}; }

Rgb KindColour(const EnvironmentLooks& l, ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kBuilding: return l.building_wall;
    case ObjectKind::kTree: return l.tree_canopy;
    case ObjectKind::kGuardRail: return l.metal;
    case ObjectKind::kStreetLight: return l.metal;
    case ObjectKind::kSign: return l.sign_plate;
  }
  return l.metal;
}

osg::ref_ptr<osg::Group> BuildEnvironment(const std::vector<road::EnvObject>& objects, const EnvironmentLooks& looks) {
  osg::ref_ptr<osg::Group> root = new osg::Group;
  root->setName("environment");
  // Closed models: back faces are never seen, and a software renderer need not shade them.
  root->getOrCreateStateSet()->setMode(GL_CULL_FACE, osg::StateAttribute::ON);
  if (objects.empty()) return root;
  const KindModels models = MakeKindModels(looks);
  // Lamp heads glow: one state set shared by every tile.
  osg::ref_ptr<osg::StateSet> glow = new osg::StateSet;
  osg::ref_ptr<osg::Material> emissive = new osg::Material;
  emissive->setColorMode(osg::Material::AMBIENT_AND_DIFFUSE);
  emissive->setEmission(osg::Material::FRONT_AND_BACK, Colour(looks.lamp) * 0.8f);
  glow->setAttributeAndModes(emissive);
  // The scene's shader (world_shading.cpp, mode 2): lit like the pole by day, glowing while street lights are on.
  glow->getOrCreateUniform("u_mode", osg::Uniform::INT)->set(2);
  const double t = std::max(looks.tile_m, 1.0);
  std::map<std::pair<long long, long long>, Tile> tiles;
  for (const auto& o : objects)
    tiles[{static_cast<long long>(std::floor(o.position_m.x() / t)), static_cast<long long>(std::floor(o.position_m.y() / t))}]
        .objects.push_back(&o);
  for (const auto& [key, tile] : tiles) root->addChild(BuildTile(tile, models, looks, glow.get()));
  return root;
}

osg::ref_ptr<osg::Node> BuildSkyDome(const AtmosphereDef& def) {
  // A sphere of 50 m about the eye; rings by elevation, the horizon colour up to 0 deg, then a gradient
  // (steeper near the horizon) to the zenith colour.
  constexpr float kRadius = 50.0f;
  constexpr int kSides = 32;
  const float elev_deg[] = {-90, -10, 0, 4, 10, 20, 35, 55, 90};
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec4Array> c = new osg::Vec4Array;
  osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
  const osg::Vec4 h = Colour(def.horizon), z = Colour(def.zenith);
  const int rings = static_cast<int>(std::size(elev_deg));
  for (int r = 0; r < rings; ++r) {
    const float e = elev_deg[r] * static_cast<float>(M_PI / 180.0);
    const float f = e <= 0.0f ? 0.0f : std::pow(std::sin(e), 0.6f);
    const osg::Vec4 colour = h * (1.0f - f) + z * f;
    for (int i = 0; i <= kSides; ++i) {
      const float a = static_cast<float>(2.0 * M_PI * i / kSides);
      v->push_back(osg::Vec3(std::cos(e) * std::cos(a), std::cos(e) * std::sin(a), std::sin(e)) * kRadius);
      c->push_back(colour);
      if (r + 1 < rings && i < kSides) {
        const auto k = static_cast<unsigned>(r * (kSides + 1) + i), up = k + kSides + 1;
        for (unsigned d : {k, k + 1, up, up, k + 1, up + 1}) idx->push_back(d);
      }
    }
  }
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  g->setUseDisplayList(false);
  g->setUseVertexBufferObjects(true);
  g->setVertexArray(v);
  g->setColorArray(c, osg::Array::BIND_PER_VERTEX);
  g->addPrimitiveSet(idx);
  g->setCullingActive(false);
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(g);
  osg::StateSet* ss = geode->getOrCreateStateSet();
  ss->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_FOG, osg::StateAttribute::OFF | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_CULL_FACE, osg::StateAttribute::OFF);
  // Drawn after the opaque scene at the far plane's depth, without depth writes: only pixels nothing else
  // covered are shaded (a software renderer's fill rate is the cost of a sky).
  ss->setAttributeAndModes(new osg::Depth(osg::Depth::LEQUAL, 1.0, 1.0, false),
                           osg::StateAttribute::ON | osg::StateAttribute::PROTECTED);
  ss->setRenderBinDetails(5, "RenderBin");
  osg::ref_ptr<FollowEye> follow = new FollowEye;
  follow->setCullingActive(false);
  follow->addChild(geode);
  follow->setName("sky dome");
  return follow;
}

void ApplyFog(osg::StateSet& stateset, const AtmosphereDef& def) {
  osg::ref_ptr<osg::Fog> fog = new osg::Fog;
  fog->setMode(osg::Fog::LINEAR);
  fog->setStart(static_cast<float>(def.fog_start_m));
  fog->setEnd(static_cast<float>(def.fog_end_m));
  fog->setColor(Colour(def.horizon));
  fog->setFogCoordinateSource(osg::Fog::FRAGMENT_DEPTH);
  stateset.setAttributeAndModes(fog, osg::StateAttribute::ON);
}

}  // namespace platoon::viewer
