#include "world_shading.hpp"

#include <osg/BlendFunc>
#include <osg/Depth>
#include <osg/Geometry>
#include <osg/Group>
#include <osg/Image>
#include <osg/Texture2D>
#include <osgUtil/CullVisitor>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace platoon::viewer::world_shading {
namespace {

// Every surface of the scene, per pixel: vertex colour times texture (a white 1 x 1 one unless a node binds
// its own), sun and ambient, headlights and street lights, wet sheen, then the clear-air haze and the fog.
// World position from the view's inverse (a per-view uniform: nested cameras such as mirrors have their own).
constexpr const char* kSceneVertex = R"(#version 120
uniform mat4 u_view_inverse;
varying vec3 v_world;
varying vec3 v_normal;
varying vec3 v_eye;
varying vec4 v_colour;
void main() {
  vec4 eye = gl_ModelViewMatrix * gl_Vertex;
  v_eye = eye.xyz / eye.w;
  v_world = (u_view_inverse * vec4(v_eye, 1.0)).xyz;
  v_normal = mat3(u_view_inverse) * (gl_NormalMatrix * gl_Normal);
  v_colour = gl_Color;
  gl_TexCoord[0] = gl_MultiTexCoord0;
  gl_Position = ftransform();
}
)";

constexpr const char* kSceneFragment = R"(#version 120
uniform sampler2D u_tex;
uniform int u_mode;
uniform int u_surface;
uniform vec3 u_sun_dir;
uniform vec3 u_sun_colour;
uniform vec3 u_ambient;
uniform vec3 u_horizon;
uniform vec3 u_fog_colour;
uniform float u_fog_sigma;
uniform float u_haze_start;
uniform float u_haze_end;
uniform float u_wetness;
uniform float u_street_on;
uniform float u_lamp_gain;
uniform vec3 u_eye_world;
uniform vec4 u_head_pos[8];
uniform vec3 u_head_dir[8];
uniform vec3 u_head_left[8];
uniform vec3 u_street_pos[8];
varying vec3 v_world;
varying vec3 v_normal;
varying vec3 v_eye;
varying vec4 v_colour;
const vec3 kHeadColour = vec3(1.0, 0.96, 0.88);
const vec3 kStreetColour = vec3(1.0, 0.84, 0.60);

// degrees(atan(u)) within 0.09 deg, without the exact atan a software renderer pays per pixel and lamp: on
// [0, 1] pi/4 t - t (t - 1)(0.2447 + 0.0663 t), beyond it 90 deg less the same of 1 / |u|.
float AtanDeg(float u) {
  float a = abs(u);
  float t = a > 1.0 ? 1.0 / a : a;
  float r = 0.7853982 * t - t * (t - 1.0) * (0.2447 + 0.0663 * t);
  return 57.29578 * sign(u) * (a > 1.0 ? 1.5707963 - r : r);
}

// Relative luminous intensity of a headlight pair towards unit direction L (lamp frame: fwd, left, up).
// Low beam: wide (14 deg), hot spot 1.3 deg below the horizontal, cut off above -0.6 deg so it does not
// dazzle; high beam adds a narrower, brighter lobe on the axis.
float Beam(vec3 L, vec3 fwd, vec3 left, float high) {
  float x = dot(L, fwd);
  float inv = 1.0 / max(x, 1e-6);
  float ah = AtanDeg(dot(L, left) * inv);
  float av = AtanDeg(L.z * inv);
  float h2 = ah * ah;
  float dv = av + 1.3;
  float low = exp(-h2 / 392.0) * (1.0 - smoothstep(-0.9, -0.3, av)) * (0.04 + exp(-dv * dv / 5.12));
  return step(0.0, x) * (low + high * 2.5 * exp(-h2 / 162.0 - av * av / 12.5));
}

#ifdef LAMPS
// One headlight pair: pos.xyz where it stands, pos.w 0 (no lamp in this slot), 1 (low beam) or 2 (high beam too).
void HeadLight(vec4 pos, vec3 fwd, vec3 left, vec3 n, vec3 v, float wet, inout vec3 light, inout vec3 spec) {
  vec3 d = v_world - pos.xyz;
  float dist2 = max(dot(d, d), 1e-4);
  vec3 L = d * inversesqrt(dist2);
  float b = min(pos.w, 1.0) * Beam(L, fwd, left, max(pos.w - 1.0, 0.0));
  float e = 900.0 * u_lamp_gain * b * sqrt(sqrt(max(dot(n, -L), 0.0))) / (dist2 + 1.0);
  light += kHeadColour * e;
#ifdef WET
  spec += kHeadColour * e * pow(max(dot(n, normalize(v - L)), 0.0), 60.0) * wet;
#endif
}

// One street lamp (a slot without one stands far away and adds nothing).
void StreetLight(vec3 pos, vec3 n, vec3 v, float wet, inout vec3 light, inout vec3 spec) {
  vec3 d = v_world - pos;
  float dist2 = max(dot(d, d), 1e-4);
  vec3 L = d * inversesqrt(dist2);
  float e = 30.0 * u_lamp_gain * (0.25 + 0.75 * max(-L.z, 0.0)) * sqrt(max(dot(n, -L), 0.0)) / (dist2 + 1.0);
  light += kStreetColour * e;
#ifdef WET
  spec += kStreetColour * e * pow(max(dot(n, normalize(v - L)), 0.0), 40.0) * 3.0 * wet;
#endif
}
#endif

void main() {
  vec4 base = v_colour * texture2D(u_tex, gl_TexCoord[0].st);
  vec3 colour = base.rgb;
  if (u_mode != 1) {
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;
    vec3 v = normalize(u_eye_world - v_world);
    vec3 albedo = base.rgb;
    vec3 light = u_ambient + u_sun_colour * max(dot(n, u_sun_dir), 0.0);
    vec3 spec = vec3(0.0);
#ifdef WET
    float wet = u_surface == 1 ? u_wetness : (u_surface == 2 ? 0.4 * u_wetness : 0.0);
    albedo *= 1.0 - 0.45 * wet;
    spec += u_sun_colour * pow(max(dot(n, normalize(u_sun_dir + v)), 0.0), 80.0) * 2.0 * wet;
    spec += u_horizon * pow(1.0 - max(dot(n, v), 0.0), 5.0) * 0.6 * wet;
#endif
#ifdef LAMPS
    // Unrolled, so that every lamp's uniforms are read at a constant index (a software renderer gathers
    // an indexed uniform per pixel); a slot without a lamp adds nothing.
    float wet_lamps = 0.0;
#ifdef WET
    wet_lamps = wet;
#endif
    HeadLight(u_head_pos[0], u_head_dir[0], u_head_left[0], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[1], u_head_dir[1], u_head_left[1], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[2], u_head_dir[2], u_head_left[2], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[3], u_head_dir[3], u_head_left[3], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[4], u_head_dir[4], u_head_left[4], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[5], u_head_dir[5], u_head_left[5], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[6], u_head_dir[6], u_head_left[6], n, v, wet_lamps, light, spec);
    HeadLight(u_head_pos[7], u_head_dir[7], u_head_left[7], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[0], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[1], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[2], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[3], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[4], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[5], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[6], n, v, wet_lamps, light, spec);
    StreetLight(u_street_pos[7], n, v, wet_lamps, light, spec);
#endif
    colour = albedo * light + spec;
    if (u_mode == 2) colour = mix(colour, vec3(1.0, 0.93, 0.75), u_street_on);
  }
  float dist = length(v_eye);
  if (u_haze_end > u_haze_start)
    colour = mix(u_horizon, colour, clamp((u_haze_end - dist) / (u_haze_end - u_haze_start), 0.0, 1.0));
  colour = mix(u_fog_colour, colour, exp(-u_fog_sigma * dist));
  gl_FragColor = vec4(colour, base.a);
}
)";

// The sky dome (its vertices are directions about the eye): horizon-to-zenith gradient, the sun's disc
// and halo, and the fog layer (300 m deep) over it: looking up at angle e the light crosses 300 / sin e m.
constexpr const char* kSkyVertex = R"(#version 120
varying vec3 v_dir;
void main() {
  v_dir = gl_Vertex.xyz;
  gl_Position = ftransform();
}
)";

constexpr const char* kSkyFragment = R"(#version 120
uniform vec3 u_horizon;
uniform vec3 u_zenith;
uniform vec3 u_sun_dir;
uniform vec3 u_fog_colour;
uniform float u_fog_sigma;
uniform float u_sun_glow;
varying vec3 v_dir;
void main() {
  vec3 d = normalize(v_dir);
  vec3 c = mix(u_horizon, u_zenith, pow(max(d.z, 0.0), 0.6));
  float cs = max(dot(d, u_sun_dir), 0.0);
  float low = 1.0 - clamp(u_sun_dir.z * 3.0, 0.0, 1.0);
  c += u_sun_glow * (vec3(1.0, 0.95, 0.85) * 2.0 * smoothstep(0.99985, 0.99992, cs) +
                     vec3(1.0, 0.9, 0.7) * 0.35 * pow(cs, 64.0) +
                     vec3(1.0, 0.6, 0.3) * 0.25 * low * pow(cs, 6.0));
  c = mix(u_fog_colour, c, exp(-u_fog_sigma * 300.0 / max(d.z, 0.015)));
  gl_FragColor = vec4(c, 1.0);
}
)";

// Rain streaks: fixed points in a 40 x 40 x 12 m box that wraps about the eye, falling by u_rain_phase
// (m, 0..12); texture coordinate x: 0 bottom, 1 top of a streak; y: the streak's rank 0..1 (drawn below
// the share u_rain_share).
constexpr const char* kRainVertex = R"(#version 120
uniform vec3 u_eye_world;
uniform float u_rain_phase;
uniform float u_rain_share;
void main() {
  vec3 p = gl_Vertex.xyz;
  vec3 rel;
  rel.xy = mod(p.xy - u_eye_world.xy, 40.0) - 20.0;
  rel.z = mod(p.z - u_rain_phase - u_eye_world.z, 12.0) - 4.0;
  vec3 w = u_eye_world + rel + gl_MultiTexCoord0.x * vec3(0.04, 0.02, 0.55);
  gl_Position = gl_MultiTexCoord0.y < u_rain_share ? gl_ModelViewProjectionMatrix * vec4(w, 1.0) : vec4(2.0, 2.0, 2.0, 1.0);
}
)";

constexpr const char* kRainFragment = R"(#version 120
uniform vec3 u_ambient;
uniform vec3 u_sun_colour;
void main() {
  vec3 c = clamp(0.15 + 0.8 * (u_ambient + 0.5 * u_sun_colour), 0.0, 1.0);
  gl_FragColor = vec4(c, 0.3);
}
)";

constexpr int kRainStreaks = 4000;

osg::ref_ptr<osg::Program> MakeProgram(const char* name, const char* vertex, const char* fragment) {
  osg::ref_ptr<osg::Program> p = new osg::Program;
  p->setName(name);
  p->addShader(new osg::Shader(osg::Shader::VERTEX, vertex));
  p->addShader(new osg::Shader(osg::Shader::FRAGMENT, fragment));
  return p;
}

osg::Vec3 ToOsg(const Vec3& v) { return osg::Vec3(static_cast<float>(v.x()), static_cast<float>(v.y()), static_cast<float>(v.z())); }
osg::Vec3 ToOsg(const Rgb& c) { return osg::Vec3(c.r, c.g, c.b); }

void SetVec3(osg::StateSet& ss, const char* name, const osg::Vec3& v) { ss.getOrCreateUniform(name, osg::Uniform::FLOAT_VEC3)->set(v); }
void SetFloat(osg::StateSet& ss, const char* name, double v) {
  ss.getOrCreateUniform(name, osg::Uniform::FLOAT)->set(static_cast<float>(v));
}

// Where a street lamp slot without a lamp stands: far enough to add nothing.
const osg::Vec3 kNoStreetLamp(0.0f, 0.0f, 1.0e6f);

// The per-view uniforms: the view's inverse, its eye and the lights it picked.
osg::ref_ptr<osg::StateSet> MakeViewState() {
  osg::ref_ptr<osg::StateSet> ss = new osg::StateSet;
  ss->getOrCreateUniform("u_view_inverse", osg::Uniform::FLOAT_MAT4)->set(osg::Matrixf());
  ss->getOrCreateUniform("u_eye_world", osg::Uniform::FLOAT_VEC3)->set(osg::Vec3());
  // Slots without a lamp: a headlight with w = 0, a street lamp far away.
  osg::ref_ptr<osg::Uniform> head = new osg::Uniform(osg::Uniform::FLOAT_VEC4, "u_head_pos", kMaxHeadlights);
  osg::ref_ptr<osg::Uniform> street = new osg::Uniform(osg::Uniform::FLOAT_VEC3, "u_street_pos", kMaxStreetLights);
  for (unsigned k = 0; k < static_cast<unsigned>(kMaxHeadlights); ++k) head->setElement(k, osg::Vec4(0, 0, 0, 0));
  for (unsigned k = 0; k < static_cast<unsigned>(kMaxStreetLights); ++k) street->setElement(k, kNoStreetLamp);
  ss->addUniform(head);
  ss->addUniform(new osg::Uniform(osg::Uniform::FLOAT_VEC3, "u_head_dir", kMaxHeadlights));
  ss->addUniform(new osg::Uniform(osg::Uniform::FLOAT_VEC3, "u_head_left", kMaxHeadlights));
  ss->addUniform(street);
  return ss;
}

// Indices of the `n` points nearest `eye` among `count` (by `position(i)`).
template <typename Position>
std::vector<size_t> Nearest(size_t count, size_t n, const Vec3& eye, Position position) {
  std::vector<size_t> idx(count);
  std::iota(idx.begin(), idx.end(), size_t{0});
  n = std::min(n, count);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                    [&](size_t a, size_t b) { return (position(a) - eye).squaredNorm() < (position(b) - eye).squaredNorm(); });
  idx.resize(n);
  return idx;
}

}  // namespace

// Before the scene's children are culled for a camera: that camera's view inverse and its nearest lights,
// pushed as a state set of its own so the draw of every camera uses its own.
class ViewCallback final : public osg::NodeCallback {
 public:
  explicit ViewCallback(Shading* s) : s_(s) {}
  void operator()(osg::Node* node, osg::NodeVisitor* nv) override {
    auto* cv = dynamic_cast<osgUtil::CullVisitor*>(nv);
    if (!cv || !cv->getModelViewMatrix()) {
      traverse(node, nv);
      return;
    }
    const osg::Matrixd inv = osg::Matrixd::inverse(*cv->getModelViewMatrix());
    const osg::Vec3d e = inv.getTrans();
    const Vec3 eye(e.x(), e.y(), e.z());
    osg::ref_ptr<osg::StateSet> ss = s_->StateFor(cv->getCurrentCamera());
    ss->getUniform("u_view_inverse")->set(osg::Matrixf(inv));
    ss->getUniform("u_eye_world")->set(osg::Vec3(e));
    const auto& heads = s_->heads_;
    const std::vector<size_t> h =
        Nearest(heads.size(), kMaxHeadlights, eye, [&](size_t i) -> const Vec3& { return heads[i].position_m; });
    osg::Uniform* pos = ss->getUniform("u_head_pos");
    osg::Uniform* dir = ss->getUniform("u_head_dir");
    osg::Uniform* left = ss->getUniform("u_head_left");
    for (size_t k = 0; k < h.size(); ++k) {
      const Headlight& l = heads[h[k]];
      pos->setElement(static_cast<unsigned>(k), osg::Vec4(ToOsg(l.position_m), l.high_beam ? 2.0f : 1.0f));
      dir->setElement(static_cast<unsigned>(k), ToOsg(l.forward));
      // The lamp frame's left: horizontal, square to the forward direction.
      const Vec3 side = Vec3::UnitZ().cross(l.forward);
      left->setElement(static_cast<unsigned>(k), ToOsg(side.norm() > 1e-9 ? side.normalized() : Vec3::UnitY()));
    }
    for (size_t k = h.size(); k < static_cast<size_t>(kMaxHeadlights); ++k) pos->setElement(static_cast<unsigned>(k), osg::Vec4(0, 0, 0, 0));
    const auto& lamps = s_->lamps_;
    const std::vector<size_t> s =
        s_->street_lights_on ? Nearest(lamps.size(), kMaxStreetLights, eye, [&](size_t i) -> const Vec3& { return lamps[i]; })
                             : std::vector<size_t>{};
    osg::Uniform* spos = ss->getUniform("u_street_pos");
    for (size_t k = 0; k < s.size(); ++k) spos->setElement(static_cast<unsigned>(k), ToOsg(lamps[s[k]]));
    for (size_t k = s.size(); k < static_cast<size_t>(kMaxStreetLights); ++k) spos->setElement(static_cast<unsigned>(k), kNoStreetLamp);
    cv->pushStateSet(ss.get());
    traverse(node, nv);
    cv->popStateSet();
  }

 private:
  Shading* s_;
};

Shading::Shading(osg::Group& root, const Vec3& sun_direction, double ambient, double diffuse) {
  root_ss_ = root.getOrCreateStateSet();
  osg::StateSet& ss = *root_ss_;
  const std::string fragment(kSceneFragment);
  const size_t body = fragment.find('\n') + 1;  // after #version
  for (int wet = 0; wet < 2; ++wet)
    for (int lamps = 0; lamps < 2; ++lamps) {
      const std::string defines = std::string(wet ? "#define WET 1\n" : "") + (lamps ? "#define LAMPS 1\n" : "");
      programs_[wet][lamps] =
          MakeProgram(wet ? (lamps ? "platoon scene, wet, lamps" : "platoon scene, wet") : (lamps ? "platoon scene, lamps" : "platoon scene"),
                      kSceneVertex, (fragment.substr(0, body) + defines + fragment.substr(body)).c_str());
    }
  program_ = programs_[0][0].get();
  ss.setAttributeAndModes(programs_[0][0]);
  // A white texel on unit 0: untextured surfaces sample 1; a node that binds its own texture replaces it.
  osg::ref_ptr<osg::Image> white = new osg::Image;
  white->allocateImage(1, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE);
  std::fill(white->data(), white->data() + 4, static_cast<unsigned char>(255));
  osg::ref_ptr<osg::Texture2D> tex = new osg::Texture2D(white.get());
  // Nearest texel, repeated: OSG's default GL_CLAMP with linear filtering would blend the black border in.
  tex->setFilter(osg::Texture::MIN_FILTER, osg::Texture::NEAREST);
  tex->setFilter(osg::Texture::MAG_FILTER, osg::Texture::NEAREST);
  tex->setWrap(osg::Texture::WRAP_S, osg::Texture::REPEAT);
  tex->setWrap(osg::Texture::WRAP_T, osg::Texture::REPEAT);
  ss.setTextureAttribute(0, tex.get());
  ss.getOrCreateUniform("u_tex", osg::Uniform::SAMPLER_2D)->set(0);
  ss.getOrCreateUniform("u_mode", osg::Uniform::INT)->set(kModeLit);
  ss.getOrCreateUniform("u_surface", osg::Uniform::INT)->set(kSurfaceOther);
  // Per-view defaults (the cull callback overrides them for every camera).
  osg::ref_ptr<osg::StateSet> view = MakeViewState();
  for (const auto& [name, pair] : view->getUniformList()) ss.addUniform(pair.first.get());
  // The SceneDef's sun until conditions are set.
  WorldLook look;
  look.sun_direction = sun_direction.normalized();
  const auto a = static_cast<float>(ambient), d = static_cast<float>(diffuse);
  look.ambient = Rgb{a, a, a};
  look.sun = Rgb{d, d, d};
  look.sun_glow = 0.0;
  SetLook(look);
  SetHaze(0.0, 0.0);
  SetTime(0.0);
  root.setCullCallback(new ViewCallback(this));

  // The rain streaks: lines blended over the scene, behind whatever is nearer.
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  g->setUseDisplayList(false);
  g->setUseVertexBufferObjects(true);
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec2Array> t = new osg::Vec2Array;
  uint32_t state = 0x9e3779b9u;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
  };
  for (int i = 0; i < kRainStreaks; ++i) {
    const osg::Vec3 p(40.0f * next(), 40.0f * next(), 12.0f * next());
    const float rank = (static_cast<float>(i) + 0.5f) / kRainStreaks;
    for (float end : {0.0f, 1.0f}) {
      v->push_back(p);
      t->push_back(osg::Vec2(end, rank));
    }
  }
  g->setVertexArray(v);
  g->setTexCoordArray(0, t, osg::Array::BIND_PER_VERTEX);
  g->addPrimitiveSet(new osg::DrawArrays(GL_LINES, 0, static_cast<GLsizei>(v->size())));
  g->setCullingActive(false);
  rain_ = new osg::Geode;
  rain_->setName("rain");
  rain_->addDrawable(g);
  rain_->setCullingActive(false);
  osg::StateSet* rs = rain_->getOrCreateStateSet();
  rs->setAttributeAndModes(MakeProgram("platoon rain", kRainVertex, kRainFragment));
  rs->setAttributeAndModes(new osg::BlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA));
  rs->setAttributeAndModes(new osg::Depth(osg::Depth::LESS, 0.0, 1.0, false));
  rs->setRenderingHint(osg::StateSet::TRANSPARENT_BIN);
  rain_->setNodeMask(0);
}

void Shading::SetLook(const WorldLook& look) {
  osg::StateSet& ss = *root_ss_;
  SetVec3(ss, "u_sun_dir", ToOsg(look.sun_direction.normalized()));
  SetVec3(ss, "u_sun_colour", ToOsg(look.sun));
  SetVec3(ss, "u_ambient", ToOsg(look.ambient));
  SetVec3(ss, "u_horizon", ToOsg(look.horizon));
  SetVec3(ss, "u_zenith", ToOsg(look.zenith));
  SetVec3(ss, "u_fog_colour", ToOsg(look.fog));
  SetFloat(ss, "u_fog_sigma", look.fog_extinction_1pm);
  SetFloat(ss, "u_sun_glow", look.sun_glow);
  SetFloat(ss, "u_wetness", look.wetness);
  osg::Program* program = programs_[look.wetness > 0.0][look.lamp_gain > 0.0].get();
  if (program != program_) {
    program_ = program;
    ss.setAttributeAndModes(program);
  }
  SetFloat(ss, "u_street_on", look.street_lights ? 1.0 : 0.0);
  SetFloat(ss, "u_lamp_gain", look.lamp_gain);
  SetFloat(ss, "u_rain_share", look.rain_streaks);
  street_lights_on = look.street_lights;
  if (rain_) rain_->setNodeMask(look.rain_streaks > 0.0 ? ~0u : 0u);
}

void Shading::SetHaze(double start_m, double end_m) {
  SetFloat(*root_ss_, "u_haze_start", start_m);
  SetFloat(*root_ss_, "u_haze_end", end_m);
}

void Shading::SetSurface(osg::StateSet& ss, int kind) { ss.getOrCreateUniform("u_surface", osg::Uniform::INT)->set(kind); }

void Shading::SetMode(osg::StateSet& ss, int mode) { ss.getOrCreateUniform("u_mode", osg::Uniform::INT)->set(mode); }

void Shading::ShadeSky(osg::Node& dome) {
  dome.getOrCreateStateSet()->setAttributeAndModes(MakeProgram("platoon sky", kSkyVertex, kSkyFragment));
}

void Shading::SetTime(double t_s) {
  // Drops fall at 8 m/s; the phase wraps at the box's 12 m height.
  SetFloat(*root_ss_, "u_rain_phase", std::fmod(std::max(0.0, t_s) * 8.0, 12.0));
}

osg::ref_ptr<osg::StateSet> Shading::StateFor(const void* camera) {
  auto it = views_.find(camera);
  if (it != views_.end()) return it->second;
  if (views_.size() >= 64) views_.clear();
  return views_.emplace(camera, MakeViewState()).first->second;
}

}  // namespace platoon::viewer::world_shading
