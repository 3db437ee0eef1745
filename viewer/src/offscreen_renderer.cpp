#include "platoon/viewer/offscreen_renderer.hpp"

#include <osg/Camera>
#include <osg/GraphicsContext>
#include <osg/Image>
#include <osgViewer/Viewer>

#include <cstdlib>
#include <cstring>

namespace platoon::viewer {
namespace {

// A pbuffer context; a 1 x 1 undecorated window when pbuffers are not available.
osg::ref_ptr<osg::GraphicsContext> MakeContext(uint32_t width, uint32_t height) {
  const char* display = std::getenv("DISPLAY");
  if (!display || !*display)
    throw RenderError("no X display: $DISPLAY is not set (run under xvfb-run -a -s \"-screen 0 1280x1024x24\")");
  for (bool pbuffer : {true, false}) {
    osg::ref_ptr<osg::GraphicsContext::Traits> traits = new osg::GraphicsContext::Traits;
    traits->readDISPLAY();
    traits->setUndefinedScreenDetailsToDefaultScreen();
    traits->x = 0;
    traits->y = 0;
    traits->width = pbuffer ? static_cast<int>(width) : 1;
    traits->height = pbuffer ? static_cast<int>(height) : 1;
    traits->red = traits->green = traits->blue = 8;
    traits->alpha = 8;
    traits->depth = 24;
    traits->windowDecoration = false;
    traits->doubleBuffer = !pbuffer;
    traits->pbuffer = pbuffer;
    traits->sharedContext = nullptr;
    traits->vsync = false;
    osg::ref_ptr<osg::GraphicsContext> gc = osg::GraphicsContext::createGraphicsContext(traits.get());
    if (gc && gc->valid()) return gc;
  }
  throw RenderError(std::string("cannot create an OpenGL context on display ") + display +
                    " (neither a GLX pbuffer nor a window): is GLX available (Mesa, libgl1-mesa-dri)?");
}

}  // namespace

struct OffscreenRenderer::Impl {
  uint32_t width = 0, height = 0;
  osg::ref_ptr<osgViewer::Viewer> viewer;
  osg::ref_ptr<osg::Image> target;
  std::string gl_info;
};

OffscreenRenderer::OffscreenRenderer(uint32_t width_px, uint32_t height_px) : impl_(std::make_unique<Impl>()) {
  if (width_px == 0 || height_px == 0 || width_px > 16384 || height_px > 16384)
    throw RenderError("image size must be in [1, 16384] px, got " + std::to_string(width_px) + " x " +
                      std::to_string(height_px));
  impl_->width = width_px;
  impl_->height = height_px;
  osg::ref_ptr<osg::GraphicsContext> gc = MakeContext(width_px, height_px);

  UseNearestFirstDrawOrder();
  impl_->viewer = new osgViewer::Viewer;
  osgViewer::Viewer& v = *impl_->viewer;
  v.setThreadingModel(osgViewer::Viewer::SingleThreaded);
  // The scene brings its own sun; the viewer's head light would add to it.
  v.setLightingMode(osg::View::NO_LIGHT);
  // The context is released after every frame, so the renderer may be destroyed on another thread
  // than the one that renders (a node's module thread renders; its main thread tears modules down).
  v.setReleaseContextAtEndOfFrameHint(true);
  osg::Camera* camera = v.getCamera();
  camera->setGraphicsContext(gc.get());
  camera->setViewport(0, 0, static_cast<int>(width_px), static_cast<int>(height_px));
  // The projection is the pinhole's, exactly: OSG must not move the near and far planes.
  camera->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
  camera->setCullingMode(camera->getCullingMode() & ~osg::CullSettings::SMALL_FEATURE_CULLING);
  camera->setClearMask(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  // Draw into a frame-buffer object of the image's size and read it back into `target`.
  camera->setRenderTargetImplementation(osg::Camera::FRAME_BUFFER_OBJECT);
  impl_->target = new osg::Image;
  impl_->target->allocateImage(static_cast<int>(width_px), static_cast<int>(height_px), 1, GL_RGB, GL_UNSIGNED_BYTE);
  camera->attach(osg::Camera::COLOR_BUFFER, impl_->target.get());
  v.setSceneData(new osg::Group);
  v.realize();
  if (!v.isRealized()) throw RenderError("the OpenGL context could not be realized");

  // Context description, for logs and benchmark reports.
  gc->makeCurrent();
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const auto* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  impl_->gl_info = std::string(renderer ? renderer : "?") + " / " + (version ? version : "?");
  gc->releaseContext();
}

OffscreenRenderer::~OffscreenRenderer() = default;

void OffscreenRenderer::SetScene(osg::Node* scene, const Rgb& clear) {
  impl_->viewer->setSceneData(scene);
  impl_->viewer->getCamera()->setClearColor(osg::Vec4(clear.r, clear.g, clear.b, 1.0f));
}

Image OffscreenRenderer::Render(const Pose& camera_world, const PinholeCamera& cam) {
  Image out;
  Render(camera_world, cam, &out);
  return out;
}

void OffscreenRenderer::Render(const Pose& camera_world, const PinholeCamera& cam, Image* out) {
  const std::string bad = ValidatePinholeCamera(cam);
  if (!bad.empty()) throw RenderError("bad camera: " + bad);
  if (cam.width_px != impl_->width || cam.height_px != impl_->height)
    throw RenderError("camera is " + std::to_string(cam.width_px) + " x " + std::to_string(cam.height_px) +
                      " px but the renderer was made for " + std::to_string(impl_->width) + " x " +
                      std::to_string(impl_->height));
  osg::Camera* camera = impl_->viewer->getCamera();
  camera->setProjectionMatrix(ProjectionMatrix(cam));
  camera->setViewMatrix(ViewMatrix(camera_world));
  impl_->viewer->frame();
  // OpenGL rows run bottom-up; the image runs top-down like v.
  out->width = impl_->width;
  out->height = impl_->height;
  const size_t row = size_t{impl_->width} * 3;
  out->rgb.resize(row * impl_->height);
  const osg::Image& src = *impl_->target;
  for (uint32_t j = 0; j < impl_->height; ++j)
    std::memcpy(out->rgb.data() + j * row, src.data(0, static_cast<int>(impl_->height - 1 - j)), row);
}

std::string OffscreenRenderer::GlInfo() const { return impl_->gl_info; }

}  // namespace platoon::viewer
