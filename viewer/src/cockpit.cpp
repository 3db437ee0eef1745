#include "platoon/viewer/cockpit.hpp"

#include "cockpit_draw.hpp"
#include "platoon/viewer/scene.hpp"

#include <osg/Geode>
#include <osg/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace platoon::viewer {

std::vector<MirrorDef> DefaultMirrors() {
  MirrorDef interior;  // the struct's defaults: top centre, straight back
  MirrorDef left;
  left.name = "left";
  left.position_m = Vec3(1.6, 0.98, 1.08);
  left.yaw_deg = 168.0;
  left.pitch_deg = -3.0;
  left.hfov_deg = 26.0;
  left.screen = {0.01, 0.47, 0.175, 0.66};
  MirrorDef right = left;
  right.name = "right";
  right.position_m.y() = -right.position_m.y();
  right.yaw_deg = -168.0;
  right.screen = {0.825, 0.47, 0.99, 0.66};
  return {interior, left, right};
}

std::string ValidateMirror(const MirrorDef& m) {
  std::ostringstream os;
  const std::string who = "mirror \"" + m.name + "\": ";
  const auto& s = m.screen;
  if (!m.position_m.allFinite()) os << who << "position must be finite";
  else if (!std::isfinite(m.yaw_deg)) os << who << "yaw_deg must be finite, got " << m.yaw_deg;
  else if (!(m.pitch_deg >= -89.0 && m.pitch_deg <= 89.0)) os << who << "pitch_deg must be in [-89, 89], got " << m.pitch_deg;
  else if (!(m.hfov_deg >= 5.0 && m.hfov_deg <= 150.0)) os << who << "hfov_deg must be in [5, 150], got " << m.hfov_deg;
  else if (!(s[0] >= 0 && s[1] >= 0 && s[2] <= 1 && s[3] <= 1 && s[2] - s[0] >= 0.01 && s[3] - s[1] >= 0.01))
    os << who << "screen must be [left, top, right, bottom] fractions with 0 <= left < right <= 1 and 0 <= top < bottom <= 1"
       << " (at least 0.01 apart), got [" << s[0] << ", " << s[1] << ", " << s[2] << ", " << s[3] << "]";
  return os.str();
}

namespace cockpit_detail {

// Both dials: 0 at 225 deg, full scale at -45 deg, 270 deg clockwise in between.
double DialAngleRad(double value, double full_scale) {
  const double f = std::clamp(value / full_scale, 0.0, 1.0);
  return (225.0 - 270.0 * f) * M_PI / 180.0;
}

}  // namespace cockpit_detail
using namespace cockpit_detail;

double SpeedometerNeedleAngleRad(double speed_kmh, double full_scale_kmh) { return DialAngleRad(speed_kmh, full_scale_kmh); }

double RevNeedleAngleRad(double rpm, double full_scale) { return DialAngleRad(rpm, full_scale); }

ClusterLayout InstrumentClusterLayout(int width_px, int height_px) {
  ClusterLayout l;
  const double w = std::max(width_px, 1), h = std::max(height_px, 1);
  l.radius_px = 0.085 * h;
  const double r = l.radius_px;
  l.speedo_v = l.rev_v = h - 1.12 * r;
  l.speedo_u = 0.5 * w - 1.6 * r;
  l.rev_u = 0.5 * w + 1.6 * r;
  l.panel_u0 = l.speedo_u - 1.18 * r;
  l.panel_u1 = l.rev_u + 1.18 * r;
  l.panel_v0 = l.speedo_v - 1.18 * r;
  l.panel_v1 = h;
  return l;
}

std::string GearLabel(int gear) {
  if (gear < 0) return "R";
  if (gear == 0) return "N";
  return "D" + std::to_string(std::min(gear, 9));
}

GearRpm AutomaticGearDisplay(double speed_mps, double throttle) {
  static constexpr double kRatios[] = {13.6, 8.4, 5.9, 4.6, 3.7, 3.1};
  constexpr double kWheelRadiusM = 0.31, kIdleRpm = 800.0;
  const double wheel_rpm = std::abs(speed_mps) / kWheelRadiusM * 60.0 / (2.0 * M_PI);
  GearRpm out;
  if (speed_mps < -0.1) {
    out.gear = -1;
    out.rpm = std::max(kIdleRpm, wheel_rpm * kRatios[0]);
    return out;
  }
  const double shift_rpm = 2000.0 + 3000.0 * std::clamp(throttle, 0.0, 1.0);
  out.gear = 1;
  while (out.gear < 6 && wheel_rpm * kRatios[out.gear - 1] > shift_rpm) ++out.gear;
  out.rpm = std::max(kIdleRpm, wheel_rpm * kRatios[out.gear - 1]);
  return out;
}

// --- The bonnet, dashboard and pillars in the vehicle frame ---

namespace cockpit_detail {

osg::Vec4 Shade(const Rgb& c, double f) {
  return osg::Vec4(static_cast<float>(std::min(1.0, c.r * f)), static_cast<float>(std::min(1.0, c.g * f)),
                   static_cast<float>(std::min(1.0, c.b * f)), 1.0f);
}

// Triangles with per-vertex colours, unlit.
struct CockpitMesh {
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec4Array> c = new osg::Vec4Array;
  osg::ref_ptr<osg::DrawElementsUInt> idx = new osg::DrawElementsUInt(GL_TRIANGLES);
  unsigned Add(const Vec3& p, const osg::Vec4& colour) {
    v->push_back(osg::Vec3(static_cast<float>(p.x()), static_cast<float>(p.y()), static_cast<float>(p.z())));
    c->push_back(colour);
    return static_cast<unsigned>(v->size() - 1);
  }
  void Quad(unsigned a, unsigned b, unsigned cc, unsigned d) {
    for (unsigned k : {a, b, cc, a, cc, d}) idx->push_back(k);
  }
};

}  // namespace cockpit_detail
using namespace cockpit_detail;

osg::ref_ptr<osg::Node> BuildCockpitGeometry(const CockpitDef& def) {
  CockpitMesh mesh;
  // Light from above and a little ahead: the bonnet's crown is bright, its flanks fall off.
  const Vec3 light = Vec3(0.35, 0.15, 1.0).normalized();

  // Bonnet: a crowned surface from the windscreen to the front edge, narrowing and dropping towards the
  // front; the shade follows its normal.
  constexpr int kRows = 10, kCols = 16;
  auto bonnet_point = [&](double t, double s) {  // t 0..1 rear to front, s -1..1 right to left
    const double x = def.dash_front_x_m - 0.05 + t * (def.bonnet_front_x_m - def.dash_front_x_m + 0.05);
    const double hw = def.bonnet_half_width_m * (1.0 - 0.08 * t * t);
    const double crown = 0.045 * (1.0 - s * s);
    const double z = def.bonnet_rear_z_m + (def.bonnet_front_z_m - def.bonnet_rear_z_m) * t - 0.05 * t * t * t + crown -
                     0.06 * std::pow(std::abs(s), 6.0);
    return Vec3(x, s * hw, z);
  };
  const unsigned bonnet0 = static_cast<unsigned>(mesh.v->size());
  for (int i = 0; i <= kRows; ++i)
    for (int j = 0; j <= kCols; ++j) {
      const double t = static_cast<double>(i) / kRows, s = -1.0 + 2.0 * j / kCols;
      const double e = 1e-3;
      const Vec3 dt = bonnet_point(std::min(1.0, t + e), s) - bonnet_point(std::max(0.0, t - e), s);
      const Vec3 ds = bonnet_point(t, std::min(1.0, s + e)) - bonnet_point(t, std::max(-1.0, s - e));
      const Vec3 n = dt.cross(ds).normalized();
      const double lit = 0.45 + 0.75 * std::max(0.0, n.dot(light)) + 0.25 * std::pow(std::max(0.0, n.dot(light)), 40.0);
      mesh.Add(bonnet_point(t, s), Shade(def.body, lit * (1.0 - 0.25 * t)));
    }
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) {
      const unsigned k = bonnet0 + static_cast<unsigned>(i * (kCols + 1) + j);
      mesh.Quad(k, k + 1, k + kCols + 2, k + kCols + 1);
    }

  // Dashboard top: from behind the steering wheel to the windscreen, wider than the bonnet, lighter
  // towards the glass (daylight falls on it there).
  const double dash_rear_x = def.dash_front_x_m - 0.6, dash_hw = def.bonnet_half_width_m + 0.15;
  {
    constexpr int kSteps = 6;
    const unsigned d0 = static_cast<unsigned>(mesh.v->size());
    for (int i = 0; i <= kSteps; ++i) {
      const double t = static_cast<double>(i) / kSteps;
      const double x = dash_rear_x + t * (def.dash_front_x_m - dash_rear_x);
      const double z = def.dash_top_z_m - 0.03 + 0.03 * std::sin(t * M_PI * 0.5) - 0.02 * t * t;
      const osg::Vec4 c = Shade(def.dashboard, 0.8 + 0.5 * t);
      mesh.Add(Vec3(x, -dash_hw, z), c);
      mesh.Add(Vec3(x, dash_hw, z), c);
    }
    for (int i = 0; i < kSteps; ++i) {
      const unsigned k = d0 + 2 * static_cast<unsigned>(i);
      mesh.Quad(k, k + 1, k + 3, k + 2);
    }
  }

  // A-pillars: from the dashboard's outer corners up and back to the roof, a trim face towards the
  // driver and the body-coloured skin on the outside.
  for (int side = -1; side <= 1; side += 2) {
    const double y_base = side * (def.bonnet_half_width_m - 0.02), y_top = side * (def.bonnet_half_width_m - 0.12);
    const Vec3 base(def.dash_front_x_m, y_base, def.dash_top_z_m - 0.02), top(def.dash_front_x_m - 0.75, y_top, 1.50);
    const double w = def.pillar_width_m;
    // The pillar's width across the driver's line of sight (a real pillar is deeper than it is wide, so
    // from the seat it looks wider than its face).
    const Vec3 inward(0.6 * w, -side * 1.3 * w, 0.0);
    const osg::Vec4 trim = Shade(def.dashboard, 2.0), trim_dark = Shade(def.dashboard, 1.5), skin = Shade(def.body, 0.7);
    const unsigned a = mesh.Add(base, trim), b = mesh.Add(top, trim_dark);
    const unsigned c = mesh.Add(top + inward, trim_dark), d = mesh.Add(base + inward, trim);
    mesh.Quad(a, b, c, d);
    const Vec3 out(0.05, side * 0.03, 0.0);
    const unsigned e = mesh.Add(base, skin), f = mesh.Add(top, skin), g = mesh.Add(top + out, skin), h = mesh.Add(base + out, skin);
    mesh.Quad(e, f, g, h);
  }

  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  g->setUseDisplayList(false);
  g->setUseVertexBufferObjects(true);
  g->setVertexArray(mesh.v);
  g->setColorArray(mesh.c, osg::Array::BIND_PER_VERTEX);
  g->addPrimitiveSet(mesh.idx);
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(g);
  osg::StateSet* ss = geode->getOrCreateStateSet();
  ss->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_FOG, osg::StateAttribute::OFF | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_CULL_FACE, osg::StateAttribute::OFF);
  geode->setName("own car");
  return geode;
}

// --- The instrument cluster (Dear ImGui draw list) ---

namespace cockpit_detail {

ImU32 Rgba(int r, int g, int b, int a = 255) { return IM_COL32(r, g, b, a); }

// A point at `angle` (counter-clockwise, screen up positive) and `radius` from a dial's centre.
ImVec2 OnDial(double u, double v, double angle, double radius) {
  return ImVec2(static_cast<float>(u + radius * std::cos(angle)), static_cast<float>(v - radius * std::sin(angle)));
}

// A line between two points in continuous pixel coordinates (ImDrawList::AddLine moves its ends by half a
// pixel so that integer coordinates hit pixel centres; undone here, so the needle's axis passes through
// the dial's centre exactly).
void Line(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 colour, float thickness) {
  dl->AddLine(ImVec2(a.x - 0.5f, a.y - 0.5f), ImVec2(b.x - 0.5f, b.y - 0.5f), colour, thickness);
}

// Text sizes in whole multiples of the font's own size: Dear ImGui's default font is a bitmap font, sharp
// only at its native size and its integer multiples.
float FontPx(double wanted) {
  const float native = ImGui::GetFont()->FontSize;
  return native * std::max(1.0f, std::round(static_cast<float>(wanted) / native));
}

void CentredText(ImDrawList* dl, double u, double v, float size, ImU32 colour, const std::string& text) {
  ImFont* font = ImGui::GetFont();
  size = FontPx(size);
  const ImVec2 ext = font->CalcTextSizeA(size, 1e6f, 0.0f, text.c_str());
  dl->AddText(font, size, ImVec2(static_cast<float>(u) - 0.5f * ext.x, static_cast<float>(v) - 0.5f * ext.y), colour, text.c_str());
}

// One dial: face, ticks every `minor`, longer ones with numbers every `major` (the number is value / `label_div`),
// an optional red zone from `red`, the needle at `angle`.
void Dial(ImDrawList* dl, double u, double v, double r, double full, double minor, double major, double label_div,
          double red, const char* unit, double needle_angle) {
  const ImVec2 c(static_cast<float>(u), static_cast<float>(v));
  const auto rf = static_cast<float>(r);
  dl->AddCircleFilled(c, rf, Rgba(12, 11, 10), 64);
  dl->AddCircle(c, rf, Rgba(110, 106, 100), 64, std::max(1.5f, 0.03f * rf));
  if (red < full) {
    dl->PathClear();
    // ImGui's arcs run clockwise on the screen with angles measured downward: the negated dial angles.
    dl->PathArcTo(c, 0.9f * rf, static_cast<float>(-DialAngleRad(red, full)), static_cast<float>(-DialAngleRad(full, full)), 24);
    dl->PathStroke(Rgba(200, 30, 20), 0, std::max(2.0f, 0.09f * rf));
  }
  for (int k = 0; k * minor <= full + 1e-9; ++k) {
    const double value = k * minor, a = DialAngleRad(value, full);
    const bool is_major = std::fmod(value + 1e-9, major) < 1e-6;
    Line(dl, OnDial(u, v, a, (is_major ? 0.78 : 0.87) * r), OnDial(u, v, a, 0.97 * r), Rgba(235, 232, 225),
                is_major ? std::max(1.5f, 0.035f * rf) : std::max(1.0f, 0.018f * rf));
    if (is_major) {
      char text[16];
      std::snprintf(text, sizeof text, "%.0f", value / label_div);
      const ImVec2 p = OnDial(u, v, a, 0.58 * r);
      CentredText(dl, p.x, p.y, std::max(9.0f, 0.2f * rf), Rgba(235, 232, 225), text);
    }
  }
  CentredText(dl, u, v + 0.62 * r, std::max(8.0f, 0.15f * rf), Rgba(160, 155, 148), unit);
  // The needle: a slim orange-red bar through the centre, a little tail behind the hub.
  Line(dl, OnDial(u, v, needle_angle + M_PI, 0.16 * r), OnDial(u, v, needle_angle, 0.86 * r), Rgba(255, 70, 20),
              std::max(2.0f, 0.045f * rf));
  dl->AddCircleFilled(c, 0.11f * rf, Rgba(70, 66, 62), 24);
}

// A turn-signal tell-tale: a green arrow pointing left (dir -1) or right (+1); dim when not lit.
void Arrow(ImDrawList* dl, double u, double v, double size, int dir, bool lit) {
  const ImU32 col = lit ? Rgba(40, 230, 70) : Rgba(22, 44, 26);
  const auto s = static_cast<float>(size), x = static_cast<float>(u), y = static_cast<float>(v);
  const float d = static_cast<float>(dir);
  dl->AddTriangleFilled(ImVec2(x + d * 0.5f * s, y), ImVec2(x, y - 0.45f * s), ImVec2(x, y + 0.45f * s), col);
  dl->AddRectFilled(ImVec2(std::min(x, x - d * 0.5f * s), y - 0.18f * s), ImVec2(std::max(x, x - d * 0.5f * s), y + 0.18f * s), col);
}

}  // namespace cockpit_detail
using namespace cockpit_detail;

void DrawInstrumentCluster(ImDrawList* dl, const ClusterLayout& l, const CockpitDef& def, const CockpitState& s) {
  const double r = l.radius_px;
  // The cluster's backing: a warm dark grey (not the sky's blue-grey), rounded at the top.
  dl->AddRectFilled(ImVec2(static_cast<float>(l.panel_u0), static_cast<float>(l.panel_v0)),
                    ImVec2(static_cast<float>(l.panel_u1), static_cast<float>(l.panel_v1)), Rgba(30, 27, 24),
                    static_cast<float>(0.45 * r), ImDrawFlags_RoundCornersTop);
  const double kmh = std::abs(s.speed_mps) * 3.6;
  Dial(dl, l.speedo_u, l.speedo_v, r, def.speed_max_kmh, 10.0, 40.0, 1.0, def.speed_max_kmh + 1.0, "km/h",
       SpeedometerNeedleAngleRad(kmh, def.speed_max_kmh));
  Dial(dl, l.rev_u, l.rev_v, r, def.rpm_max, 500.0, 1000.0, 1000.0, def.rpm_red, "x1000/min",
       RevNeedleAngleRad(s.rpm, def.rpm_max));
  // Speed as digits under the speedometer's hub, the gear between the dials.
  char digits[16];
  std::snprintf(digits, sizeof digits, "%.0f", kmh);
  CentredText(dl, l.speedo_u, l.speedo_v + 0.36 * r, static_cast<float>(0.22 * r), Rgba(235, 232, 225), digits);
  const double mid = 0.5 * (l.speedo_u + l.rev_u);
  CentredText(dl, mid, l.speedo_v + 0.05 * r, static_cast<float>(0.42 * r), Rgba(235, 232, 225), GearLabel(s.gear));
  // Tell-tales: turn signals blink in the scene's phase; headlights, parking brake, warning.
  const bool blink = SceneGraph::IndicatorLit(s.sim_ns);
  Arrow(dl, mid - 0.32 * r, l.speedo_v - 0.62 * r, 0.34 * r, -1, s.indicator_left && blink);
  Arrow(dl, mid + 0.32 * r, l.speedo_v - 0.62 * r, 0.34 * r, +1, s.indicator_right && blink);
  const ImVec2 lamp(static_cast<float>(mid), static_cast<float>(l.speedo_v - 0.95 * r));
  const ImU32 head = s.headlights ? Rgba(40, 200, 80) : Rgba(22, 44, 26);
  dl->AddCircleFilled(ImVec2(lamp.x + 0.05f * static_cast<float>(r), lamp.y), 0.09f * static_cast<float>(r), head, 12);
  for (int k = -1; k <= 1; ++k)
    dl->AddLine(ImVec2(lamp.x - 0.06f * static_cast<float>(r), lamp.y + 0.06f * k * static_cast<float>(r)),
                ImVec2(lamp.x - 0.2f * static_cast<float>(r), lamp.y + 0.07f * k * static_cast<float>(r)), head, 1.5f);
  const float y_low = static_cast<float>(l.speedo_v + 0.62 * r), tt = static_cast<float>(0.13 * r);
  const ImVec2 p_brake(static_cast<float>(mid - 0.3 * r), y_low), p_warn(static_cast<float>(mid + 0.3 * r), y_low);
  const ImU32 brake = s.hand_brake ? Rgba(235, 40, 30) : Rgba(55, 22, 18);
  dl->AddCircle(p_brake, tt, brake, 16, 1.5f);
  CentredText(dl, p_brake.x, p_brake.y, 1.4f * tt, brake, "P");
  const ImU32 warn = s.warning ? Rgba(255, 170, 0) : Rgba(60, 44, 14);
  dl->AddTriangle(ImVec2(p_warn.x, p_warn.y - tt), ImVec2(p_warn.x - tt, p_warn.y + 0.8f * tt), ImVec2(p_warn.x + tt, p_warn.y + 0.8f * tt), warn, 1.5f);
  CentredText(dl, p_warn.x, p_warn.y + 0.1f * tt, 1.2f * tt, warn, "!");
}

}  // namespace platoon::viewer
