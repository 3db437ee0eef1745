#pragma once
/// Renders an OSG scene into memory, with no window: a pbuffer GL context (a tiny hidden window when
/// the X server offers no pbuffer) and a frame-buffer object of the image's size. Works under Xvfb
/// with Mesa's llvmpipe. The render module's "grabbing the screen buffer" of seed 004 §4.3.
/// Not thread-safe: render from one thread at a time. The context is not left current between frames, so
/// the renderer may be destroyed on another thread than the one that rendered.

#include "platoon/geometry.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <osg/Node>

#include <memory>
#include <stdexcept>
#include <string>

namespace platoon::viewer {

/// Raised when no OpenGL context can be created (no X display, no GLX).
class RenderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Off-screen renderer of fixed image size.
class OffscreenRenderer {
 public:
  /// A renderer for `width_px` x `height_px` images; throws RenderError naming the cause when no GL
  /// context can be made (for example when $DISPLAY is unset: run under xvfb-run).
  OffscreenRenderer(uint32_t width_px, uint32_t height_px);
  ~OffscreenRenderer();
  OffscreenRenderer(const OffscreenRenderer&) = delete;
  OffscreenRenderer& operator=(const OffscreenRenderer&) = delete;

  /// The scene to draw (kept alive by the renderer), and the clear colour (the sky).
  void SetScene(osg::Node* scene, const Rgb& clear_colour);

  /// Renders one frame seen by a camera whose body frame C (x forward, y left, z up) is at `camera_world`,
  /// with intrinsics `cam` (its size must equal the renderer's). Returns the image, top row first.
  Image Render(const Pose& camera_world, const PinholeCamera& cam);

  /// Same, into `out` (reuses its buffer).
  void Render(const Pose& camera_world, const PinholeCamera& cam, Image* out);

  /// "GL_RENDERER / GL_VERSION" of the context, e.g. "llvmpipe (LLVM 15.0.6, 256 bits) / 4.5 (Compatibility ...)".
  std::string GlInfo() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::viewer
