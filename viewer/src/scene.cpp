#include "platoon/viewer/scene.hpp"

#include <osg/CullFace>
#include <osg/Geode>
#include <osg/Geometry>
#include <osg/Light>
#include <osg/LightModel>
#include <osg/LightSource>
#include <osg/Material>
#include <osg/Point>
#include <osg/PolygonOffset>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

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

// An axis-aligned box between two corners, as 12 triangles with face normals.
osg::ref_ptr<osg::Geometry> MakeBox(const LocalBox& box, const Rgb& colour) {
  osg::ref_ptr<osg::Geometry> g = NewGeometry(colour);
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec3Array> n = new osg::Vec3Array;
  osg::ref_ptr<osg::DrawElementsUShort> idx = new osg::DrawElementsUShort(GL_TRIANGLES);
  const Vec3& a = box.min_m;
  const Vec3& b = box.max_m;
  for (int axis = 0; axis < 3; ++axis) {
    for (int side = 0; side < 2; ++side) {
      const int u = (axis + 1) % 3, w = (axis + 2) % 3;
      Vec3 normal = Vec3::Zero();
      normal[axis] = side ? 1.0 : -1.0;
      const auto base = static_cast<unsigned short>(v->size());
      // Corners in counter-clockwise order seen from outside.
      const double uu[4] = {0, 1, 1, 0}, ww[4] = {0, 0, 1, 1};
      for (int k = 0; k < 4; ++k) {
        Vec3 p;
        p[axis] = side ? b[axis] : a[axis];
        const double su = side ? uu[k] : ww[k], sw = side ? ww[k] : uu[k];
        p[u] = su ? b[u] : a[u];
        p[w] = sw ? b[w] : a[w];
        v->push_back(ToOsg(p));
        n->push_back(ToOsg(normal));
      }
      for (unsigned short k : {0, 1, 2, 0, 2, 3}) idx->push_back(static_cast<unsigned short>(base + k));
    }
  }
  g->setVertexArray(v);
  g->setNormalArray(n, osg::Array::BIND_PER_VERTEX);
  g->addPrimitiveSet(idx);
  return g;
}

// A wheel: a cylinder about the y axis, centred at the origin, plus a light bar across its faces
// that shows the rotation.
osg::ref_ptr<osg::Geode> MakeWheel(double radius, double width) {
  osg::ref_ptr<osg::Geometry> tyre = NewGeometry(Rgb{0.07f, 0.07f, 0.07f});
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec3Array> n = new osg::Vec3Array;
  osg::ref_ptr<osg::DrawElementsUShort> idx = new osg::DrawElementsUShort(GL_TRIANGLES);
  constexpr int kSegments = 20;
  const float r = static_cast<float>(radius);
  const float hw = static_cast<float>(0.5 * width - 0.01);
  // Tread: quads around the circumference.
  for (int i = 0; i <= kSegments; ++i) {
    const float a = static_cast<float>(2.0 * M_PI * i / kSegments);
    const osg::Vec3 radial(std::cos(a), 0.0f, std::sin(a));
    v->push_back(radial * r + osg::Vec3(0, -hw, 0));
    v->push_back(radial * r + osg::Vec3(0, hw, 0));
    n->push_back(radial);
    n->push_back(radial);
    if (i < kSegments) {
      const auto k = static_cast<unsigned short>(2 * i);
      for (unsigned short d : {0, 1, 2, 1, 3, 2}) idx->push_back(static_cast<unsigned short>(k + d));
    }
  }
  // Side discs as triangle fans around a centre vertex.
  for (int side = -1; side <= 1; side += 2) {
    const auto centre = static_cast<unsigned short>(v->size());
    v->push_back(osg::Vec3(0, side * hw, 0));
    n->push_back(osg::Vec3(0, static_cast<float>(side), 0));
    for (int i = 0; i <= kSegments; ++i) {
      const float a = static_cast<float>(2.0 * M_PI * i / kSegments);
      v->push_back(osg::Vec3(r * std::cos(a), side * hw, r * std::sin(a)));
      n->push_back(osg::Vec3(0, static_cast<float>(side), 0));
    }
    for (int i = 0; i < kSegments; ++i) {
      idx->push_back(centre);
      idx->push_back(static_cast<unsigned short>(centre + 1 + (side > 0 ? i + 1 : i)));
      idx->push_back(static_cast<unsigned short>(centre + 1 + (side > 0 ? i : i + 1)));
    }
  }
  tyre->setVertexArray(v);
  tyre->setNormalArray(n, osg::Array::BIND_PER_VERTEX);
  tyre->addPrimitiveSet(idx);
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(tyre);
  const double bar = 0.18 * radius;
  geode->addDrawable(MakeBox(LocalBox{Vec3(-0.8 * radius, -0.5 * width, -bar), Vec3(0.8 * radius, 0.5 * width, bar)},
                             Rgb{0.75f, 0.75f, 0.75f}));
  return geode;
}

// Lamp state sets: lamps that are on glow (emission), lamps that are off are dull.
osg::ref_ptr<osg::StateSet> LampState(const osg::Vec4& emission) {
  osg::ref_ptr<osg::StateSet> s = new osg::StateSet;
  osg::ref_ptr<osg::Material> m = new osg::Material;
  m->setColorMode(osg::Material::AMBIENT_AND_DIFFUSE);
  m->setEmission(osg::Material::FRONT_AND_BACK, emission);
  s->setAttributeAndModes(m, osg::StateAttribute::ON);
  return s;
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

// Tessellation step of a road: chords stay within `sagitta` of the curve (s^2 |k| / 8 <= sagitta).
double RoadStep(const road::Road& road, const SceneDef& def) {
  double k_max = 0.0;
  for (const auto& sec : road.Def().sections)
    k_max = std::max({k_max, std::abs(sec.curvature_start_1pm), std::abs(sec.curvature_end_1pm)});
  if (k_max < 1e-9) return def.road_max_step_m;
  return std::clamp(std::sqrt(8.0 * def.road_sagitta_m / k_max), 0.25, def.road_max_step_m);
}

// Asphalt and markings of one road, as two geodes (markings drawn with a stronger polygon offset).
osg::ref_ptr<osg::Group> BuildRoad(const road::Road& road, const SceneDef& def) {
  const double step = RoadStep(road, def);
  const double len = road.Length();
  osg::ref_ptr<osg::Geometry> asphalt = NewGeometry(def.asphalt);
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

// One entity's model: pose transform, body (recoloured on demand), spinning wheels, lamps.
struct SceneGraph::Model {
  osg::ref_ptr<osg::MatrixTransform> root;
  osg::ref_ptr<osg::Geometry> body;
  std::vector<osg::ref_ptr<osg::MatrixTransform>> wheels;  // spin transforms
  std::vector<Vec3> wheel_centres;
  osg::ref_ptr<osg::Geode> headlamps, brakelamps;
  std::array<osg::ref_ptr<osg::Geode>, 2> indicators;  // right (y < 0), left (y > 0): front and rear corner each
  protocol::EntityKind kind = protocol::EntityKind::kUnknown;
  Vec3 size_m = Vec3::Zero();
  double wheel_radius_m = 0.0;
  double wheel_angle_rad = 0.0;
  Vec3 last_position_m = Vec3::Zero();
  bool lit_head = false, lit_brake = false;
  std::array<bool, 2> lit_indicator = {false, false};
};

SceneGraph::SceneGraph(const SceneDef& def) : def_(def) {
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

  lamp_off_ = LampState(osg::Vec4(0, 0, 0, 1));
  headlamp_on_ = LampState(osg::Vec4(0.9f, 0.9f, 0.75f, 1));
  brake_on_ = LampState(osg::Vec4(0.9f, 0.0f, 0.0f, 1));
  indicator_on_ = LampState(osg::Vec4(1.0f, 0.55f, 0.0f, 1));

  ground_group_ = new osg::Group;
  roads_ = new osg::Group;
  entities_ = new osg::Group;
  environment_ = new osg::Group;
  root_->addChild(ground_group_);
  root_->addChild(roads_);
  root_->addChild(environment_);
  root_->addChild(entities_);

  // Sensor data: unlit, drawn with dynamic arrays refilled in place.
  sensors_ = new osg::Group;
  sensors_->getOrCreateStateSet()->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE);
  root_->addChild(sensors_);
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
  for (const auto& road : network.Roads()) {
    roads_->addChild(BuildRoad(road, def_));
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
  if (atmosphere_on_) return;
  atmosphere_on_ = true;
  root_->insertChild(0, BuildSkyDome(def_.atmosphere));
  if (def_.atmosphere.fog) ApplyFog(*root_->getOrCreateStateSet(), def_.atmosphere);
  // Sensor data keeps its colours at any distance.
  sensors_->getOrCreateStateSet()->setMode(GL_FOG, osg::StateAttribute::OFF);
}

Rgb SceneGraph::ColourOf(uint64_t id) const {
  const auto it = colours_.find(id);
  return it != colours_.end() ? it->second : EntityColour(id);
}

std::unique_ptr<SceneGraph::Model> SceneGraph::MakeModel(const protocol::EntityState& e) {
  auto m = std::make_unique<Model>();
  m->kind = e.kind;
  m->size_m = e.box_size_m;
  m->root = new osg::MatrixTransform;
  osg::ref_ptr<osg::Geode> body = new osg::Geode;
  m->body = MakeBox(BodyBox(e.box_size_m, e.kind, def_.layout), ColourOf(e.id));
  body->addDrawable(m->body);
  m->root->addChild(body);
  if (HasWheels(e.kind)) {
    const LocalBox whole = EntityBox(e.box_size_m, def_.layout);
    const LocalBox bodybox = BodyBox(e.box_size_m, e.kind, def_.layout);
    // Wheels.
    m->wheel_radius_m = WheelRadius(e.box_size_m, def_.layout);
    const double width = std::min(def_.layout.wheel_width_m, 0.25 * e.box_size_m.y());
    osg::ref_ptr<osg::Geode> wheel = MakeWheel(m->wheel_radius_m, width);
    for (int i = 0; i < 4; ++i) {
      osg::ref_ptr<osg::MatrixTransform> place = new osg::MatrixTransform(
          osg::Matrixd::translate(ToOsg(WheelCentre(e.box_size_m, def_.layout, i))));
      osg::ref_ptr<osg::MatrixTransform> spin = new osg::MatrixTransform;
      spin->addChild(wheel);
      place->addChild(spin);
      m->root->addChild(place);
      m->wheels.push_back(spin);
    }
    // Lamps fill the space between the body's ends and the box's ends.
    const double h = e.box_size_m.z(), w = e.box_size_m.y();
    const double lamp_w = 0.22 * w, lamp_h = 0.1 * h, lamp_z = 0.55 * h;
    m->headlamps = new osg::Geode;
    m->brakelamps = new osg::Geode;
    for (int side = -1; side <= 1; side += 2) {
      const double yc = side * (0.5 * w - 0.05 - 0.5 * lamp_w - def_.layout.wheel_inset_m);
      const Vec3 lo(0, yc - 0.5 * lamp_w, lamp_z - 0.5 * lamp_h), hi(0, yc + 0.5 * lamp_w, lamp_z + 0.5 * lamp_h);
      m->headlamps->addDrawable(MakeBox(LocalBox{Vec3(bodybox.max_m.x(), lo.y(), lo.z()),
                                                 Vec3(whole.max_m.x(), hi.y(), hi.z())},
                                        Rgb{0.85f, 0.85f, 0.8f}));
      m->brakelamps->addDrawable(MakeBox(LocalBox{Vec3(whole.min_m.x(), lo.y(), lo.z()),
                                                  Vec3(bodybox.min_m.x(), hi.y(), hi.z())},
                                         Rgb{0.45f, 0.02f, 0.02f}));
    }
    m->headlamps->setStateSet(lamp_off_.get());
    m->brakelamps->setStateSet(lamp_off_.get());
    m->root->addChild(m->headlamps);
    m->root->addChild(m->brakelamps);
    // Turn indicators: amber, front and rear on each side, right below the outer half of the head and
    // brake lamps.
    for (int k = 0; k < 2; ++k) {
      const double side = k == 0 ? -1.0 : 1.0;
      const double y_outer = side * (0.5 * w - 0.05 - def_.layout.wheel_inset_m), y_mid = y_outer - side * 0.5 * lamp_w;
      const Vec3 lo(0, std::min(y_outer, y_mid), lamp_z - 1.5 * lamp_h), hi(0, std::max(y_outer, y_mid), lamp_z - 0.5 * lamp_h);
      m->indicators[k] = new osg::Geode;
      m->indicators[k]->addDrawable(MakeBox(LocalBox{Vec3(bodybox.max_m.x(), lo.y(), lo.z()),
                                                     Vec3(whole.max_m.x(), hi.y(), hi.z())},
                                            Rgb{0.45f, 0.28f, 0.05f}));
      m->indicators[k]->addDrawable(MakeBox(LocalBox{Vec3(whole.min_m.x(), lo.y(), lo.z()),
                                                     Vec3(bodybox.min_m.x(), hi.y(), hi.z())},
                                            Rgb{0.45f, 0.28f, 0.05f}));
      m->indicators[k]->setStateSet(lamp_off_.get());
      m->root->addChild(m->indicators[k]);
    }
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
    if (!m.wheels.empty()) {
      // Wheels turn by the forward distance travelled since the last update.
      const Vec3 forward = pose.orientation * Vec3::UnitX();
      const double d = forward.dot(pose.position_m - m.last_position_m);
      if (std::abs(d) < 50.0) m.wheel_angle_rad = std::fmod(m.wheel_angle_rad + d / m.wheel_radius_m, 2.0 * M_PI);
      for (auto& w : m.wheels) w->setMatrix(osg::Matrixd::rotate(m.wheel_angle_rad, osg::Vec3(0, 1, 0)));
      if (m.lit_head != e->lights.headlights) {
        m.lit_head = e->lights.headlights;
        m.headlamps->setStateSet(m.lit_head ? headlamp_on_.get() : lamp_off_.get());
      }
      if (m.lit_brake != e->lights.brake) {
        m.lit_brake = e->lights.brake;
        m.brakelamps->setStateSet(m.lit_brake ? brake_on_.get() : lamp_off_.get());
      }
      const std::array<bool, 2> indicator = {e->lights.indicator_right && blink_on, e->lights.indicator_left && blink_on};
      for (int k = 0; k < 2; ++k)
        if (m.lit_indicator[k] != indicator[k]) {
          m.lit_indicator[k] = indicator[k];
          m.indicators[k]->setStateSet(indicator[k] ? indicator_on_.get() : lamp_off_.get());
        }
    }
    m.last_position_m = pose.position_m;
  }
}

void SceneGraph::SetEntityColour(uint64_t id, const Rgb& colour) {
  colours_[id] = colour;
  const auto it = models_.find(id);
  if (it == models_.end()) return;
  auto* c = static_cast<osg::Vec4Array*>(it->second->body->getColorArray());
  (*c)[0] = ToOsg(colour);
  c->dirty();
}

void SceneGraph::ClearEntityColour(uint64_t id) {
  colours_.erase(id);
  const auto it = models_.find(id);
  if (it == models_.end()) return;
  auto* c = static_cast<osg::Vec4Array*>(it->second->body->getColorArray());
  (*c)[0] = ToOsg(EntityColour(id));
  c->dirty();
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
