#pragma once
/// An RGB8 image in memory (top row first, as the camera sensor's v axis runs) and PNG output.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace platoon::viewer {

/// Tightly packed 8-bit RGB pixels, row 0 at the top; pixel (i, j) covers u in [i, i+1], v in [j, j+1].
struct Image {
  uint32_t width = 0;          ///< Width, in px.
  uint32_t height = 0;         ///< Height, in px.
  std::vector<uint8_t> rgb;    ///< width * height * 3 bytes, row-major from the top.

  /// Colour of pixel (i, j): column i from the left, row j from the top. Precondition: inside.
  std::array<uint8_t, 3> At(uint32_t i, uint32_t j) const {
    const size_t k = (static_cast<size_t>(j) * width + i) * 3;
    return {rgb[k], rgb[k + 1], rgb[k + 2]};
  }
};

/// Writes `image` as a PNG through OSG's png plugin. Returns an empty string on success, else a message
/// naming the file and the reason.
std::string WritePng(const Image& image, const std::string& path);

/// Reads a PNG (or any format OSG reads) into an RGB8 image; returns an empty string on success.
std::string ReadImage(const std::string& path, Image* out);

/// Encodes `image` as PNG bytes into `out` (for CameraFrame::image); returns an empty string on success.
std::string EncodePng(const Image& image, std::string* out);

/// Decodes PNG bytes (a CameraFrame's image with encoding "png") into an RGB8 image; returns an empty
/// string on success, else the reason.
std::string DecodePng(const std::string& bytes, Image* out);

}  // namespace platoon::viewer
