#include "platoon/viewer/sign_textures.hpp"

#include <osg/AlphaFunc>
#include <osg/Geode>
#include <osg/Geometry>
#include <osg/Image>
#include <osg/Program>
#include <osg/StateSet>
#include <osg/Texture2D>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>

namespace platoon::viewer {
namespace sign_textures_detail {

using FaceColour = std::array<float, 4>;
using FaceLine = std::vector<std::array<float, 2>>;

constexpr FaceColour kWhite = {1, 1, 1, 1}, kBlack = {0.05f, 0.05f, 0.05f, 1}, kRed = {0.78f, 0.07f, 0.10f, 1},
               kYellow = {0.98f, 0.80f, 0.10f, 1}, kGreen = {0.0f, 0.40f, 0.22f, 1}, kGrey = {0.55f, 0.55f, 0.55f, 1};

// A face being painted: coordinates x in [-aspect/2, aspect/2], y in [-1/2, 1/2] (y up), the plate's height 1.
struct Canvas {
  uint32_t w, h;
  double aspect;
  std::vector<float> px;  // w * h * 4, premultiplied-free straight RGBA
  Canvas(uint32_t width, uint32_t height, double a) : w(width), h(height), aspect(a), px(size_t(width) * height * 4, 0.0f) {}

  // Paints `colour` where `inside(x, y)` holds, with 4 x 4 samples a pixel for smooth edges.
  void Fill(const std::function<bool(double, double)>& inside, const FaceColour& colour) {
    for (uint32_t j = 0; j < h; ++j)
      for (uint32_t i = 0; i < w; ++i) {
        int hits = 0;
        for (int sj = 0; sj < 4; ++sj)
          for (int si = 0; si < 4; ++si) {
            const double x = ((i + (si + 0.5) / 4.0) / w - 0.5) * aspect;
            const double y = 0.5 - (j + (sj + 0.5) / 4.0) / h;
            hits += inside(x, y) ? 1 : 0;
          }
        if (!hits) continue;
        const float c = static_cast<float>(hits) / 16.0f;
        float* p = &px[(size_t(j) * w + i) * 4];
        for (int k = 0; k < 3; ++k) p[k] = p[k] * (1 - c) + colour[k] * c;
        p[3] = p[3] + (1 - p[3]) * c;
      }
  }
};

double SegmentDistance(double x, double y, double ax, double ay, double bx, double by) {
  const double dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
  const double t = l2 > 0 ? std::clamp(((x - ax) * dx + (y - ay) * dy) / l2, 0.0, 1.0) : 0.0;
  return std::hypot(x - ax - t * dx, y - ay - t * dy);
}

// Whether (x, y) is within `half_width` of any of the polylines (already in face coordinates).
bool OnStrokes(const std::vector<FaceLine>& lines, double x, double y, double half_width) {
  for (const auto& l : lines)
    for (size_t k = 0; k + 1 < l.size(); ++k)
      if (SegmentDistance(x, y, l[k][0], l[k][1], l[k + 1][0], l[k + 1][1]) <= half_width) return true;
  return false;
}

// Text centred at (cx, cy) with glyphs `height` tall, as polylines in face coordinates.
std::vector<FaceLine> TextStrokes(std::string_view text, double cx, double cy, double height) {
  const double advance = 0.6 * height + 0.22 * height;
  const double total = advance * static_cast<double>(text.size()) - 0.22 * height;
  std::vector<FaceLine> out;
  for (size_t k = 0; k < text.size(); ++k) {
    const double x0 = cx - 0.5 * total + advance * static_cast<double>(k), y0 = cy - 0.5 * height;
    for (const auto& l : GlyphStrokes(text[k])) {
      FaceLine p;
      for (const auto& q : l) p.push_back({static_cast<float>(x0 + q[0] * height), static_cast<float>(y0 + q[1] * height)});
      out.push_back(std::move(p));
    }
  }
  return out;
}

// Regular shapes, centred at the origin.
bool InDisc(double x, double y, double r) { return x * x + y * y <= r * r; }
// An equilateral triangle of circumradius r pointing up (down when `down`).
bool InTriangle(double x, double y, double r, bool down) {
  if (down) y = -y;
  // Edges: bottom y >= -r/2, and the two sides.
  const double s3 = std::sqrt(3.0);
  return y >= -0.5 * r && (s3 * x + y) <= r && (-s3 * x + y) <= r;
}
// A regular octagon with inradius r (flat sides at |x| = r, |y| = r and on the diagonals).
bool InOctagon(double x, double y, double r) {
  const double a = std::abs(x), b = std::abs(y);
  return a <= r && b <= r && a + b <= r * std::sqrt(2.0);
}
bool InRect(double x, double y, double hw, double hh) { return std::abs(x) <= hw && std::abs(y) <= hh; }

std::string Number(double value) {
  const long v = std::lround(std::max(0.0, value));
  return std::to_string(v);
}

// The diagonal stripes of an end sign: `n` thin black lines from lower left to upper right within radius r.
std::function<bool(double, double)> Stripes(int n, double r, double half_width) {
  return [=](double x, double y) {
    if (!InDisc(x, y, r)) return false;
    // Distance from the line x - y = c for offsets c spread across the disc.
    for (int k = 0; k < n; ++k) {
      const double c = n == 1 ? 0.0 : (-0.16 + 0.32 * k / (n - 1));
      if (std::abs((y - x) / std::sqrt(2.0) - c) <= half_width) return true;
    }
    return false;
  };
}

// Two cars seen from behind (the no-overtaking symbol): left one `left`, right one `right`.
void Cars(Canvas& c, const FaceColour& left, const FaceColour& right) {
  for (int side : {-1, 1}) {
    const double cx = 0.14 * side;
    const FaceColour& col = side < 0 ? left : right;
    c.Fill([=](double x, double y) { return InRect(x - cx, y + 0.02, 0.09, 0.06) || InRect(x - cx, y - 0.07, 0.06, 0.045); }, col);
    c.Fill([=](double x, double y) { return InRect(x - cx - 0.065, y + 0.1, 0.018, 0.03) || InRect(x - cx + 0.065, y + 0.1, 0.018, 0.03); }, col);
  }
}

}  // namespace sign_textures_detail

const std::vector<std::vector<std::array<float, 2>>>& GlyphStrokes(char c) {
  using L = std::vector<std::array<float, 2>>;
  // Glyphs in a box 0.6 wide, 1 tall; points (x, y), y up. Written for this project.
  static const std::map<char, std::vector<L>> font = {
      {'0', {{{0.0f, 0.18f}, {0.0f, 0.82f}, {0.15f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.82f}, {0.6f, 0.18f}, {0.45f, 0.0f}, {0.15f, 0.0f}, {0.0f, 0.18f}}}},
      {'1', {{{0.12f, 0.78f}, {0.36f, 1.0f}, {0.36f, 0.0f}}}},
      {'2', {{{0.0f, 0.8f}, {0.15f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.82f}, {0.6f, 0.62f}, {0.0f, 0.0f}, {0.6f, 0.0f}}}},
      {'3', {{{0.0f, 0.88f}, {0.15f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.85f}, {0.6f, 0.65f}, {0.45f, 0.52f}, {0.22f, 0.52f}},
             {{0.45f, 0.52f}, {0.6f, 0.4f}, {0.6f, 0.15f}, {0.45f, 0.0f}, {0.15f, 0.0f}, {0.0f, 0.12f}}}},
      {'4', {{{0.48f, 0.0f}, {0.48f, 1.0f}, {0.0f, 0.3f}, {0.6f, 0.3f}}}},
      {'5', {{{0.6f, 1.0f}, {0.06f, 1.0f}, {0.0f, 0.55f}, {0.42f, 0.6f}, {0.6f, 0.42f}, {0.6f, 0.15f}, {0.45f, 0.0f}, {0.15f, 0.0f}, {0.0f, 0.12f}}}},
      {'6', {{{0.55f, 1.0f}, {0.2f, 1.0f}, {0.0f, 0.72f}, {0.0f, 0.15f}, {0.15f, 0.0f}, {0.45f, 0.0f}, {0.6f, 0.15f}, {0.6f, 0.45f}, {0.45f, 0.6f}, {0.15f, 0.6f}, {0.0f, 0.45f}}}},
      {'7', {{{0.0f, 1.0f}, {0.6f, 1.0f}, {0.2f, 0.0f}}}},
      {'8', {{{0.15f, 0.53f}, {0.0f, 0.68f}, {0.0f, 0.86f}, {0.15f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.86f}, {0.6f, 0.68f}, {0.45f, 0.53f}, {0.15f, 0.53f}, {0.0f, 0.38f}, {0.0f, 0.14f}, {0.15f, 0.0f}, {0.45f, 0.0f}, {0.6f, 0.14f}, {0.6f, 0.38f}, {0.45f, 0.53f}}}},
      {'9', {{{0.05f, 0.0f}, {0.4f, 0.0f}, {0.6f, 0.28f}, {0.6f, 0.85f}, {0.45f, 1.0f}, {0.15f, 1.0f}, {0.0f, 0.85f}, {0.0f, 0.55f}, {0.15f, 0.4f}, {0.45f, 0.4f}, {0.6f, 0.55f}}}},
      {'S', {{{0.6f, 0.85f}, {0.45f, 1.0f}, {0.15f, 1.0f}, {0.0f, 0.85f}, {0.0f, 0.62f}, {0.15f, 0.52f}, {0.45f, 0.48f}, {0.6f, 0.38f}, {0.6f, 0.15f}, {0.45f, 0.0f}, {0.15f, 0.0f}, {0.0f, 0.15f}}}},
      {'T', {{{0.0f, 1.0f}, {0.6f, 1.0f}}, {{0.3f, 1.0f}, {0.3f, 0.0f}}}},
      {'O', {{{0.0f, 0.18f}, {0.0f, 0.82f}, {0.15f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.82f}, {0.6f, 0.18f}, {0.45f, 0.0f}, {0.15f, 0.0f}, {0.0f, 0.18f}}}},
      {'P', {{{0.0f, 0.0f}, {0.0f, 1.0f}, {0.45f, 1.0f}, {0.6f, 0.86f}, {0.6f, 0.62f}, {0.45f, 0.48f}, {0.0f, 0.48f}}}},
      {'G', {{{0.6f, 0.85f}, {0.45f, 1.0f}, {0.15f, 1.0f}, {0.0f, 0.82f}, {0.0f, 0.18f}, {0.15f, 0.0f}, {0.45f, 0.0f}, {0.6f, 0.18f}, {0.6f, 0.45f}, {0.32f, 0.45f}}}},
      {'I', {{{0.3f, 0.0f}, {0.3f, 1.0f}}, {{0.12f, 1.0f}, {0.48f, 1.0f}}, {{0.12f, 0.0f}, {0.48f, 0.0f}}}},
      {'V', {{{0.0f, 1.0f}, {0.3f, 0.0f}, {0.6f, 1.0f}}}},
      {'E', {{{0.6f, 1.0f}, {0.0f, 1.0f}, {0.0f, 0.0f}, {0.6f, 0.0f}}, {{0.0f, 0.5f}, {0.45f, 0.5f}}}},
      {'W', {{{0.0f, 1.0f}, {0.12f, 0.0f}, {0.3f, 0.65f}, {0.48f, 0.0f}, {0.6f, 1.0f}}}},
      {'A', {{{0.0f, 0.0f}, {0.3f, 1.0f}, {0.6f, 0.0f}}, {{0.1f, 0.35f}, {0.5f, 0.35f}}}},
      {'Y', {{{0.0f, 1.0f}, {0.3f, 0.5f}, {0.6f, 1.0f}}, {{0.3f, 0.5f}, {0.3f, 0.0f}}}},
      {'K', {{{0.0f, 0.0f}, {0.0f, 1.0f}}, {{0.6f, 1.0f}, {0.0f, 0.42f}}, {{0.18f, 0.58f}, {0.6f, 0.0f}}}},
      {'M', {{{0.0f, 0.0f}, {0.0f, 1.0f}, {0.3f, 0.45f}, {0.6f, 1.0f}, {0.6f, 0.0f}}}},
  };
  static const std::vector<L> none;
  const auto it = font.find(c);
  return it == font.end() ? none : it->second;
}

double SignAspect(road::SignType type) { return type == road::SignType::kDirection ? 2.2 : 1.0; }

SignFace DrawSignFace(road::SignType type, double value, road::SignCountry country, bool variable, uint32_t height_px) {
  using namespace sign_textures_detail;
  using road::SignType;
  height_px = std::max<uint32_t>(16, height_px);
  const double aspect = SignAspect(type);
  const auto width_px = static_cast<uint32_t>(std::lround(height_px * aspect));
  Canvas c(width_px, height_px, aspect);
  const bool uk = country == road::SignCountry::kUk;
  // A variable message sign: light symbols on a black square board.
  const FaceColour ink = variable ? kWhite : kBlack, ring = kRed;
  if (variable || type == SignType::kBlank) c.Fill([](double x, double y) { return InRect(x, y, 0.5, 0.5); }, kBlack);
  const double ring_outer = 0.48, ring_inner = uk ? 0.40 : 0.385;
  auto round_sign = [&](const FaceColour& field, bool red_ring) {
    if (!variable) c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer); }, field);
    if (red_ring) c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer) && !InDisc(x, y, ring_inner); }, ring);
  };
  auto text = [&](const std::string& t, double cy, double h, double stroke, const FaceColour& colour) {
    const auto lines = TextStrokes(t, 0, cy, h);
    c.Fill([&](double x, double y) { return OnStrokes(lines, x, y, 0.5 * stroke); }, colour);
  };
  auto number_size = [&](const std::string& t) { return t.size() >= 3 ? 0.27 : 0.36; };
  switch (type) {
    case SignType::kSpeedLimit: {
      round_sign(kWhite, true);
      const std::string t = Number(value);
      text(t, 0, number_size(t), uk ? 0.075 : 0.065, ink);
      break;
    }
    case SignType::kEndOfLimit: {
      if (uk) {  // the national speed limit disc
        round_sign(kWhite, false);
        c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer) && !InDisc(x, y, ring_outer - 0.03); }, ink);
        c.Fill(Stripes(1, ring_outer, 0.07), ink);
      } else {  // the number in grey, struck through
        round_sign(kWhite, false);
        c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer) && !InDisc(x, y, ring_outer - 0.025); }, kGrey);
        const std::string t = Number(value);
        text(t, 0, number_size(t), 0.06, kGrey);
        c.Fill(Stripes(5, ring_outer, 0.012), ink);
      }
      break;
    }
    case SignType::kEndOfRestrictions:
      round_sign(kWhite, false);
      c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer) && !InDisc(x, y, ring_outer - 0.025); }, uk ? ink : kGrey);
      c.Fill(uk ? Stripes(1, ring_outer, 0.07) : Stripes(5, ring_outer, 0.012), ink);
      break;
    case SignType::kStop:
      c.Fill([](double x, double y) { return InOctagon(x, y, 0.49); }, kWhite);
      c.Fill([](double x, double y) { return InOctagon(x, y, 0.45); }, kRed);
      text("STOP", 0, 0.22, 0.05, kWhite);
      break;
    case SignType::kGiveWay:
      c.Fill([](double x, double y) { return InTriangle(x, y + 0.08, 0.56, true); }, kRed);
      c.Fill([](double x, double y) { return InTriangle(x, y + 0.08, 0.40, true); }, kWhite);
      if (uk) text("GIVE WAY", 0.02, 0.05, 0.012, kBlack);
      break;
    case SignType::kNoOvertaking:
      round_sign(kWhite, true);
      Cars(c, kRed, ink);
      break;
    case SignType::kEndOfNoOvertaking:
      round_sign(kWhite, false);
      c.Fill([&](double x, double y) { return InDisc(x, y, ring_outer) && !InDisc(x, y, ring_outer - 0.025); }, kGrey);
      Cars(c, kGrey, kGrey);
      c.Fill(Stripes(5, ring_outer, 0.012), ink);
      break;
    case SignType::kWarningCurveLeft:
    case SignType::kWarningCurveRight:
    case SignType::kWarningCrossing:
    case SignType::kWarningGeneral: {
      // Red-bordered triangle pointing up (both countries), the symbol in black.
      if (!uk && !variable) c.Fill([](double x, double y) { return InTriangle(x, y + 0.08, 0.6, false); }, kWhite);
      c.Fill([](double x, double y) { return InTriangle(x, y + 0.08, 0.56, false); }, kRed);
      c.Fill([](double x, double y) { return InTriangle(x, y + 0.08, 0.40, false); }, variable ? kBlack : kWhite);
      const double sx = type == SignType::kWarningCurveRight ? -1 : 1;
      std::vector<FaceLine> sym;
      if (type == SignType::kWarningCrossing) sym = {{{0.0f, -0.2f}, {0.0f, 0.12f}}, {{-0.13f, -0.05f}, {0.13f, -0.05f}}};
      else if (type == SignType::kWarningGeneral) sym = {{{0.0f, -0.02f}, {0.0f, 0.12f}}, {{0.0f, -0.17f}, {0.0f, -0.15f}}};
      else
        sym = {{{static_cast<float>(sx * 0.05), -0.2f}, {static_cast<float>(sx * 0.05), -0.06f},
                {static_cast<float>(-sx * 0.06), 0.06f}, {static_cast<float>(-sx * 0.06), 0.12f}},
               {{static_cast<float>(-sx * 0.12), 0.07f}, {static_cast<float>(-sx * 0.06), 0.14f}, {0.0f, 0.07f}}};
      c.Fill([&](double x, double y) { return OnStrokes(sym, x, y, 0.03); }, ink);
      break;
    }
    case SignType::kDirection: {
      const FaceColour field = uk ? kGreen : kYellow, fg = uk ? kWhite : kBlack;
      const double hw = 0.5 * aspect - 0.02;
      c.Fill([&](double x, double y) { return InRect(x, y, hw, 0.46); }, fg);
      c.Fill([&](double x, double y) { return InRect(x, y, hw - 0.04, 0.42); }, field);
      // An arrow ahead on the left, the distance in km (UK: miles are not drawn; km as on the German board).
      const std::vector<FaceLine> arrow = {{{-0.75f, -0.3f}, {-0.75f, 0.28f}}, {{-0.88f, 0.12f}, {-0.75f, 0.28f}, {-0.62f, 0.12f}}};
      c.Fill([&](double x, double y) { return OnStrokes(arrow, x, y, 0.04); }, fg);
      text(Number(value) + (uk ? "" : "KM"), 0.15, 0.3, 0.055, fg);
      break;
    }
    case SignType::kBlank: {
      // Dark, with the pixel grid of an unlit display.
      if (!variable) break;
      c.Fill([](double x, double y) {
        return std::fmod(std::abs(x) + 0.5, 0.05) < 0.012 && std::fmod(std::abs(y) + 0.5, 0.05) < 0.012 && InRect(x, y, 0.45, 0.45);
      }, {0.18f, 0.16f, 0.10f, 1});
      break;
    }
  }
  SignFace face;
  face.width = c.w;
  face.height = c.h;
  face.rgba.resize(c.px.size());
  for (size_t k = 0; k < c.px.size(); ++k)
    face.rgba[k] = static_cast<uint8_t>(std::lround(std::clamp(c.px[k], 0.0f, 1.0f) * 255.0f));
  return face;
}

namespace sign_textures_detail {

osg::ref_ptr<osg::Texture2D> Texture(const SignFace& face) {
  osg::ref_ptr<osg::Image> img = new osg::Image;
  img->allocateImage(static_cast<int>(face.width), static_cast<int>(face.height), 1, GL_RGBA, GL_UNSIGNED_BYTE);
  // OSG images start at the bottom row.
  for (uint32_t j = 0; j < face.height; ++j)
    std::copy_n(&face.rgba[size_t(face.height - 1 - j) * face.width * 4], face.width * 4, img->data(0, static_cast<int>(j)));
  osg::ref_ptr<osg::Texture2D> tex = new osg::Texture2D(img.get());
  tex->setFilter(osg::Texture::MIN_FILTER, osg::Texture::LINEAR_MIPMAP_LINEAR);
  tex->setFilter(osg::Texture::MAG_FILTER, osg::Texture::LINEAR);
  tex->setWrap(osg::Texture::WRAP_S, osg::Texture::CLAMP_TO_EDGE);
  tex->setWrap(osg::Texture::WRAP_T, osg::Texture::CLAMP_TO_EDGE);
  tex->setResizeNonPowerOfTwoHint(false);  // direction boards are 2.2 : 1
  return tex;
}

// A box between lo and hi in the frame (origin, u along the face normal, w across, up z), as 12 triangles.
void AddBox(osg::Vec3Array& v, osg::Vec4Array& col, const osg::Vec3& o, const osg::Vec3& u, const osg::Vec3& w,
            const osg::Vec3& lo, const osg::Vec3& hi, const osg::Vec4& colour) {
  const osg::Vec3 z(0, 0, 1);
  auto P = [&](int a, int b, int c) {
    return o + u * (a ? hi.x() : lo.x()) + w * (b ? hi.y() : lo.y()) + z * (c ? hi.z() : lo.z());
  };
  const int faces[6][4][3] = {{{0, 0, 0}, {0, 1, 0}, {0, 1, 1}, {0, 0, 1}}, {{1, 0, 0}, {1, 0, 1}, {1, 1, 1}, {1, 1, 0}},
                              {{0, 0, 0}, {0, 0, 1}, {1, 0, 1}, {1, 0, 0}}, {{0, 1, 0}, {1, 1, 0}, {1, 1, 1}, {0, 1, 1}},
                              {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}}, {{0, 0, 1}, {0, 1, 1}, {1, 1, 1}, {1, 0, 1}}};
  for (const auto& f : faces)
    for (int k : {0, 1, 2, 0, 2, 3}) {
      v.push_back(P(f[k][0], f[k][1], f[k][2]));
      col.push_back(colour);
    }
}

}  // namespace sign_textures_detail

osg::ref_ptr<osg::Group> BuildSigns(const std::vector<road::PlacedSign>& signs) {
  using namespace sign_textures_detail;
  osg::ref_ptr<osg::Group> group = new osg::Group;
  group->setName("signs");
  if (signs.empty()) return group;
  // Posts and beams: one geometry for all, plain colour.
  osg::ref_ptr<osg::Vec3Array> mv = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec4Array> mc = new osg::Vec4Array;
  const osg::Vec4 metal(0.55f, 0.57f, 0.60f, 1.0f);
  // Plates: one geometry per distinct face (shared texture), quads in the sign's frame.
  struct Plates {
    osg::ref_ptr<osg::Vec3Array> front = new osg::Vec3Array, back = new osg::Vec3Array;
    osg::ref_ptr<osg::Vec2Array> front_uv = new osg::Vec2Array, back_uv = new osg::Vec2Array;
  };
  std::map<std::tuple<int, long, int, bool>, Plates> plates;
  for (const auto& ps : signs) {
    const road::Sign& g = ps.sign;
    const road::SignPose& p = ps.pose;
    const osg::Vec3 u(static_cast<float>(std::cos(p.facing_rad)), static_cast<float>(std::sin(p.facing_rad)), 0);
    const osg::Vec3 w(-u.y(), u.x(), 0);  // across the face, to the face's left as seen from the front... (right-handed)
    const float post = 0.05f, ph = static_cast<float>(p.post_height_m);
    for (const auto& f : p.posts_m)
      AddBox(*mv, *mc, osg::Vec3(f.x(), f.y(), f.z()), u, w, osg::Vec3(-post, -post, 0), osg::Vec3(post, post, ph), metal);
    if (p.beam_width_m > 0) {
      const Vec3 mid = 0.5 * (p.posts_m[0] + p.posts_m[1]);
      const float hb = 0.5f * static_cast<float>(p.beam_width_m);
      AddBox(*mv, *mc, osg::Vec3(mid.x(), mid.y(), mid.z()), u, w, osg::Vec3(-0.12f, -hb, ph - 0.4f), osg::Vec3(0.12f, hb, ph), metal);
    }
    // The plate: a quad just in front of the post (or beam) facing u; the back a grey quad of the same shape.
    const double aspect = SignAspect(g.type);
    const float hh = 0.5f * static_cast<float>(g.size_m), hw = hh * static_cast<float>(aspect);
    const osg::Vec3 centre(p.plate_m.x(), p.plate_m.y(), p.plate_m.z());
    const osg::Vec3 front = centre + u * (g.mount == road::SignMount::kGantry ? 0.15f : 0.0f);
    const osg::Vec3 z(0, 0, 1);
    // Seen from the front (looking along -u), +w is to the viewer's right: texture u runs along +w... left to right.
    const osg::Vec3 left = w * -hw, right = w * hw;
    const auto key = std::make_tuple(static_cast<int>(g.type), std::lround(g.value), static_cast<int>(g.country), g.variable);
    Plates& slot = plates[key];
    const osg::Vec3 q[4] = {front + left - z * hh, front + right - z * hh, front + right + z * hh, front + left + z * hh};
    const osg::Vec2 t[4] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
    for (int k : {0, 1, 2, 0, 2, 3}) {
      slot.front->push_back(q[k]);
      slot.front_uv->push_back(t[k]);
    }
    // The back: the same outline (the face's alpha) in grey, 2 cm behind.
    const osg::Vec3 back = front - u * 0.02f;
    const osg::Vec3 b[4] = {back + left - z * hh, back + right - z * hh, back + right + z * hh, back + left + z * hh};
    for (int k : {0, 2, 1, 0, 3, 2}) {
      slot.back->push_back(b[k]);
      slot.back_uv->push_back(t[k]);
    }
  }
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  {
    osg::ref_ptr<osg::Geometry> m = new osg::Geometry;
    m->setVertexArray(mv.get());
    m->setColorArray(mc.get(), osg::Array::BIND_PER_VERTEX);
    m->addPrimitiveSet(new osg::DrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(mv->size())));
    geode->addDrawable(m.get());
  }
  for (auto& [key, arrays] : plates) {
    const auto [type, value, country, variable] = key;
    const SignFace face = DrawSignFace(static_cast<road::SignType>(type), static_cast<double>(value),
                                       static_cast<road::SignCountry>(country), variable, 128);
    SignFace back = face;
    for (size_t k = 0; k < back.rgba.size(); k += 4) back.rgba[k] = back.rgba[k + 1] = back.rgba[k + 2] = 118;
    auto quads = [&](osg::Vec3Array* v, osg::Vec2Array* uv, const SignFace& image) {
      osg::ref_ptr<osg::Geometry> gq = new osg::Geometry;
      gq->setVertexArray(v);
      gq->setTexCoordArray(0, uv);
      osg::ref_ptr<osg::Vec4Array> white = new osg::Vec4Array;
      white->push_back(osg::Vec4(1, 1, 1, 1));
      gq->setColorArray(white.get(), osg::Array::BIND_OVERALL);
      gq->addPrimitiveSet(new osg::DrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(v->size())));
      osg::StateSet* ss = gq->getOrCreateStateSet();
      ss->setTextureAttributeAndModes(0, Texture(image).get(), osg::StateAttribute::ON | osg::StateAttribute::OVERRIDE |
                                                                     osg::StateAttribute::PROTECTED);
      ss->setAttributeAndModes(new osg::AlphaFunc(osg::AlphaFunc::GREATER, 0.5f), osg::StateAttribute::ON);
      geode->addDrawable(gq.get());
    };
    quads(arrays.front.get(), arrays.front_uv.get(), face);
    quads(arrays.back.get(), arrays.back_uv.get(), back);
  }
  // Retroreflective film and painted metal: their own colours, fixed function (the scene's shaders would
  // ignore the texture), no culling of the plate's sides.
  osg::StateSet* ss = geode->getOrCreateStateSet();
  ss->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_CULL_FACE, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  ss->setAttributeAndModes(new osg::Program, osg::StateAttribute::ON | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  group->addChild(geode.get());
  return group;
}

}  // namespace platoon::viewer
