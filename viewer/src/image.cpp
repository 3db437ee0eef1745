#include "platoon/viewer/image.hpp"

#include <osg/Image>
#include <osgDB/ReadFile>
#include <osgDB/Registry>
#include <osgDB/WriteFile>

#include <cstring>
#include <sstream>

namespace platoon::viewer {

namespace {

// An osg::Image (rows bottom-up, as OpenGL's) holding `image`; the png plugin flips rows on the way out.
osg::ref_ptr<osg::Image> ToOsgImage(const Image& image) {
  osg::ref_ptr<osg::Image> img = new osg::Image;
  img->allocateImage(static_cast<int>(image.width), static_cast<int>(image.height), 1, GL_RGB, GL_UNSIGNED_BYTE);
  const size_t row = size_t{image.width} * 3;
  for (uint32_t j = 0; j < image.height; ++j)
    std::memcpy(img->data(0, static_cast<int>(image.height - 1 - j)), image.rgb.data() + j * row, row);
  return img;
}

bool Consistent(const Image& image) {
  return image.width != 0 && image.height != 0 && image.rgb.size() == size_t{image.width} * image.height * 3;
}

osgDB::ReaderWriter* PngPlugin() { return osgDB::Registry::instance()->getReaderWriterForExtension("png"); }
const char* kNoPngPlugin = "OpenSceneGraph has no png plugin (osgdb_png, package libopenscenegraph161)";

// RGB8, top row first, from an 8-bit RGB or RGBA osg::Image; "" or the reason, prefixed by `what`.
std::string FromOsg(const osg::Image& img, const std::string& what, Image* out) {
  if (img.getPixelFormat() != GL_RGB && img.getPixelFormat() != GL_RGBA)
    return what + ": unsupported pixel format (want RGB or RGBA)";
  if (img.getDataType() != GL_UNSIGNED_BYTE) return what + ": unsupported data type (want 8-bit)";
  const int channels = img.getPixelFormat() == GL_RGBA ? 4 : 3;
  out->width = static_cast<uint32_t>(img.s());
  out->height = static_cast<uint32_t>(img.t());
  out->rgb.resize(size_t{out->width} * out->height * 3);
  for (uint32_t j = 0; j < out->height; ++j) {
    const unsigned char* src = img.data(0, static_cast<int>(out->height - 1 - j));
    for (uint32_t i = 0; i < out->width; ++i)
      for (int c = 0; c < 3; ++c) out->rgb[(size_t{j} * out->width + i) * 3 + c] = src[i * channels + c];
  }
  return {};
}

}  // namespace

std::string WritePng(const Image& image, const std::string& path) {
  if (!Consistent(image)) return "cannot write " + path + ": the image is empty or its buffer does not match its size";
  if (!PngPlugin()) return "cannot write " + path + ": " + kNoPngPlugin;
  if (!osgDB::writeImageFile(*ToOsgImage(image), path)) return "cannot write " + path + " (directory missing or not writable?)";
  return {};
}

std::string EncodePng(const Image& image, std::string* out) {
  if (!Consistent(image)) return "cannot encode PNG: the image is empty or its buffer does not match its size";
  osgDB::ReaderWriter* rw = PngPlugin();
  if (!rw) return std::string("cannot encode PNG: ") + kNoPngPlugin;
  std::ostringstream os(std::ios::binary);
  const auto r = rw->writeImage(*ToOsgImage(image), os);
  if (!r.success()) return "cannot encode PNG: " + r.message();
  *out = std::move(os).str();
  return {};
}

std::string DecodePng(const std::string& bytes, Image* out) {
  osgDB::ReaderWriter* rw = PngPlugin();
  if (!rw) return std::string("cannot decode PNG: ") + kNoPngPlugin;
  std::istringstream is(bytes, std::ios::binary);
  auto r = rw->readImage(is);
  if (!r.validImage()) return "cannot decode PNG (" + std::to_string(bytes.size()) + " bytes): " + r.message();
  return FromOsg(*r.getImage(), "PNG", out);
}

std::string ReadImage(const std::string& path, Image* out) {
  osg::ref_ptr<osg::Image> img = osgDB::readRefImageFile(path);
  if (!img) return "cannot read image " + path;
  return FromOsg(*img, path, out);
}

}  // namespace platoon::viewer
