#pragma once
/// Traffic-sign faces drawn in code (docs/WORLD.md "Signs"): circles, rings, triangles, octagons, boards and
/// digits and letters of a small built-in stroke font, rasterised with 4 x 4 supersampling into RGBA
/// images, per country design ("de", "uk"); and the OSG subgraph of a session's signs: posts or gantries
/// with a textured plate facing the traffic, its back grey. The rasteriser needs no GL context.

#include "platoon/road/signs.hpp"

#include <osg/Group>
#include <osg/ref_ptr>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace platoon::viewer {

/// An RGBA image, row-major from the top; alpha 0 outside the plate's shape.
struct SignFace {
  uint32_t width = 0;             ///< Width, in px.
  uint32_t height = 0;            ///< Height, in px.
  std::vector<uint8_t> rgba;      ///< width * height * 4 bytes.
  /// Pixel (i, j): column i from the left, row j from the top. Precondition: inside.
  std::array<uint8_t, 4> At(uint32_t i, uint32_t j) const {
    const size_t k = (static_cast<size_t>(j) * width + i) * 4;
    return {rgba[k], rgba[k + 1], rgba[k + 2], rgba[k + 3]};
  }
};

/// Width over height of a sign's plate: 2.2 for direction boards, 1 for the rest.
double SignAspect(road::SignType type);

/// The face of a sign of `type` showing `value` in `country`'s design, `height_px` tall (typical 128;
/// at least 16). `variable`: a variable message sign's face (light on black). Deterministic.
SignFace DrawSignFace(road::SignType type, double value, road::SignCountry country, bool variable = false,
                      uint32_t height_px = 128);

/// The polylines of a glyph of the stroke font ('0'-'9', 'A'-'Z' as far as signs need them: S T O P G I V E W A Y
/// K M; others give none) in a box 0.6 wide and 1 tall (x right, y up), in glyph units.
const std::vector<std::vector<std::array<float, 2>>>& GlyphStrokes(char c);

/// The signs' subgraph: per sign its post(s) (and a gantry's beam) in grey metal and its plate, a textured
/// quad facing the traffic (alpha-tested to its shape), unlit like printed retroreflective film.
osg::ref_ptr<osg::Group> BuildSigns(const std::vector<road::PlacedSign>& signs);

}  // namespace platoon::viewer
