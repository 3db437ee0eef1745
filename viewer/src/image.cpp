#include "platoon/viewer/image.hpp"

#include <osg/Image>
#include <osgDB/ReadFile>
#include <osgDB/Registry>
#include <osgDB/WriteFile>

#include <cstring>

namespace platoon::viewer {

std::string WritePng(const Image& image, const std::string& path) {
  if (image.width == 0 || image.height == 0 || image.rgb.size() != size_t{image.width} * image.height * 3)
    return "cannot write " + path + ": the image is empty or its buffer does not match its size";
  if (!osgDB::Registry::instance()->getReaderWriterForExtension("png"))
    return "cannot write " + path + ": OpenSceneGraph has no png plugin (osgdb_png, package libopenscenegraph161)";
  osg::ref_ptr<osg::Image> img = new osg::Image;
  img->allocateImage(static_cast<int>(image.width), static_cast<int>(image.height), 1, GL_RGB, GL_UNSIGNED_BYTE);
  // osg::Image rows run bottom-up, as OpenGL's do; the png writer flips them back.
  const size_t row = size_t{image.width} * 3;
  for (uint32_t j = 0; j < image.height; ++j)
    std::memcpy(img->data(0, static_cast<int>(image.height - 1 - j)), image.rgb.data() + j * row, row);
  if (!osgDB::writeImageFile(*img, path)) return "cannot write " + path + " (directory missing or not writable?)";
  return {};
}

std::string ReadImage(const std::string& path, Image* out) {
  osg::ref_ptr<osg::Image> img = osgDB::readRefImageFile(path);
  if (!img) return "cannot read image " + path;
  if (img->getPixelFormat() != GL_RGB && img->getPixelFormat() != GL_RGBA)
    return path + ": unsupported pixel format (want RGB or RGBA)";
  if (img->getDataType() != GL_UNSIGNED_BYTE) return path + ": unsupported data type (want 8-bit)";
  const int channels = img->getPixelFormat() == GL_RGBA ? 4 : 3;
  out->width = static_cast<uint32_t>(img->s());
  out->height = static_cast<uint32_t>(img->t());
  out->rgb.resize(size_t{out->width} * out->height * 3);
  for (uint32_t j = 0; j < out->height; ++j) {
    const unsigned char* src = img->data(0, static_cast<int>(out->height - 1 - j));
    for (uint32_t i = 0; i < out->width; ++i)
      for (int c = 0; c < 3; ++c) out->rgb[(size_t{j} * out->width + i) * 3 + c] = src[i * channels + c];
  }
  return {};
}

}  // namespace platoon::viewer
