// Sign faces drawn in code (viewer/src/sign_textures.cpp): shapes, colours and the digits of the stroke font,
// checked on the CPU raster (no GL context needed).
#include "platoon/viewer/sign_textures.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::viewer;

namespace sign_face_test_detail {

bool IsBlack(const std::array<uint8_t, 4>& p) { return p[3] > 200 && p[0] < 70 && p[1] < 70 && p[2] < 70; }
bool IsRed(const std::array<uint8_t, 4>& p) { return p[3] > 200 && p[0] > 150 && p[1] < 60 && p[2] < 60; }
bool IsWhite(const std::array<uint8_t, 4>& p) { return p[3] > 200 && p[0] > 230 && p[1] > 230 && p[2] > 230; }

struct Counts {
  int black_left = 0, black_right = 0, red_ring = 0, ring = 0, outside_opaque = 0, inner = 0, inner_white = 0;
};

// Pixel classes of a round face by radius (in units of the face height) and side.
Counts Classify(const SignFace& f) {
  Counts c;
  for (uint32_t j = 0; j < f.height; ++j)
    for (uint32_t i = 0; i < f.width; ++i) {
      const double x = (i + 0.5) / f.width - 0.5, y = 0.5 - (j + 0.5) / f.height, r = std::hypot(x, y);
      const auto p = f.At(i, j);
      if (r > 0.5) c.outside_opaque += p[3] > 0 ? 1 : 0;
      if (r > 0.41 && r < 0.47) {
        ++c.ring;
        c.red_ring += IsRed(p) ? 1 : 0;
      }
      if (r < 0.36) {
        ++c.inner;
        c.inner_white += IsWhite(p) ? 1 : 0;
        if (IsBlack(p)) (x < 0 ? c.black_left : c.black_right) += 1;
      }
    }
  return c;
}

}  // namespace sign_face_test_detail

using sign_face_test_detail::Classify;

TEST_CASE("sign faces: a speed limit shows its two digits in black inside a red ring on white") {
  const SignFace f = DrawSignFace(road::SignType::kSpeedLimit, 50, road::SignCountry::kDe, false, 128);
  REQUIRE(f.width == 128);
  REQUIRE(f.height == 128);
  const auto c = Classify(f);
  MESSAGE("ring red " << c.red_ring << "/" << c.ring << ", digits " << c.black_left << " + " << c.black_right
                      << " px, inner white " << c.inner_white << "/" << c.inner);
  CHECK(c.outside_opaque == 0);              // transparent outside the disc
  CHECK(c.red_ring > 0.9 * c.ring);          // the red ring
  CHECK(c.black_left > 150);                 // the "5"
  CHECK(c.black_right > 150);                // the "0"
  CHECK(c.inner_white > 0.5 * c.inner);      // on a white field
  // Another number, other digit pixels: the digits come from the value.
  const SignFace g = DrawSignFace(road::SignType::kSpeedLimit, 80, road::SignCountry::kDe, false, 128);
  int differ = 0;
  for (size_t k = 0; k < f.rgba.size(); k += 4) differ += (f.rgba[k] < 70) != (g.rgba[k] < 70) ? 1 : 0;
  CHECK(differ > 200);
  // Three digits fit inside the ring too.
  const auto h = Classify(DrawSignFace(road::SignType::kSpeedLimit, 120, road::SignCountry::kDe, false, 128));
  CHECK(h.black_left > 100);
  CHECK(h.black_right > 100);
}

TEST_CASE("sign faces: country designs differ where their signs differ") {
  // The UK's national-limit disc ends a limit with one black band; Germany strikes the number through in grey.
  const SignFace uk = DrawSignFace(road::SignType::kEndOfLimit, 50, road::SignCountry::kUk, false, 128);
  const SignFace de = DrawSignFace(road::SignType::kEndOfLimit, 50, road::SignCountry::kDe, false, 128);
  CHECK(sign_face_test_detail::IsBlack(uk.At(64, 64)));
  int uk_black = 0, de_black = 0;
  for (size_t k = 0; k < uk.rgba.size(); k += 4) {
    uk_black += sign_face_test_detail::IsBlack({uk.rgba[k], uk.rgba[k + 1], uk.rgba[k + 2], uk.rgba[k + 3]}) ? 1 : 0;
    de_black += sign_face_test_detail::IsBlack({de.rgba[k], de.rgba[k + 1], de.rgba[k + 2], de.rgba[k + 3]}) ? 1 : 0;
  }
  CHECK(uk_black > de_black);
  // A stop sign: red octagon (corners transparent), white letters in the red.
  const SignFace stop = DrawSignFace(road::SignType::kStop, 0, road::SignCountry::kDe, false, 128);
  CHECK(stop.At(1, 1)[3] == 0);
  CHECK(sign_face_test_detail::IsRed(stop.At(64, 20)));
  int white_inside = 0;
  for (uint32_t j = 50; j < 78; ++j)
    for (uint32_t i = 20; i < 108; ++i) white_inside += sign_face_test_detail::IsWhite(stop.At(i, j)) ? 1 : 0;
  CHECK(white_inside > 150);
  // A direction board is wide: 2.2 times its height.
  CHECK(DrawSignFace(road::SignType::kDirection, 12, road::SignCountry::kDe, false, 100).width == 220);
}

TEST_CASE("sign faces: the stroke font has every digit and the letters signs use") {
  for (char c : std::string("0123456789STOPGIVEWAYKM")) {
    CAPTURE(c);
    const auto& g = GlyphStrokes(c);
    REQUIRE(!g.empty());
    for (const auto& line : g) {
      CHECK(line.size() >= 2);
      for (const auto& p : line) {
        CHECK(p[0] >= 0.0f);
        CHECK(p[0] <= 0.6f);
        CHECK(p[1] >= 0.0f);
        CHECK(p[1] <= 1.0f);
      }
    }
  }
  CHECK(GlyphStrokes('#').empty());
}
