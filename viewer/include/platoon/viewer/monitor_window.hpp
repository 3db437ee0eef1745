#pragma once
/// The monitor-HIL window (seed 004 §6.2): shows a camera sensor's rendered images 1:1 on a screen that a
/// physical camera films. Every image pixel is one screen pixel with its exact RGB value: no scaling, no
/// filtering, no colour management. When the window is larger than the image, the image sits in its
/// centre (MonitorImageOrigin) on black; when it is smaller, the image's centre part is shown.
/// Create, use and destroy on one thread (the sensor host's module thread): SDL and GL objects live there.
/// Between Present calls no GL context is left current, so an OffscreenRenderer may render on the same
/// thread.

#include "platoon/viewer/image.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace platoon::viewer {

/// Settings of a monitor window.
struct MonitorWindowDef {
  std::string title = "platoon monitor";  ///< Window title.
  uint32_t width_px = 1920;               ///< Window width in window mode, in px: the camera image's width.
  uint32_t height_px = 1080;              ///< Window height in window mode, in px: the camera image's height.
  bool fullscreen = false;                ///< Borderless fullscreen on `display` at the desktop's resolution.
  int display = 0;                        ///< SDL display index the window opens on (0: the first). Typical 0 or 1.
  bool vsync = true;                      ///< Swap with the display's refresh, so the filmed screen never tears.
};

/// Default monitor window: 1920 x 1080 window on display 0, vsync on.
inline MonitorWindowDef DefaultMonitorWindowDef() { return MonitorWindowDef{}; }

/// Top-left corner, in px of a `window_w` x `window_h` window (x right, y down), where an `image_w` x
/// `image_h` image is drawn: ((W - w) / 2, (H - h) / 2) rounded towards minus infinity (negative when the
/// image is larger than the window, which then shows the image's centre part).
struct MonitorOrigin {
  int x_px = 0;  ///< Column of the image's left edge, in px from the window's left edge.
  int y_px = 0;  ///< Row of the image's top edge, in px from the window's top edge.
};
MonitorOrigin MonitorImageOrigin(uint32_t window_w, uint32_t window_h, uint32_t image_w, uint32_t image_h);

/// Pixels in which `frame` (a Present capture) differs from what presenting `image` must show: the
/// image's visible part at MonitorImageOrigin and black elsewhere. 0 when the screen shows the image exactly.
uint64_t MonitorDifferingPixels(const Image& frame, const Image& image);

/// An open monitor window.
class MonitorWindow {
 public:
  /// Opens the window and its GL context; throws WindowError (viewer_app.hpp) naming the reason: no
  /// display, a display index that does not exist, or a framebuffer with less than 8 bits per channel
  /// (which could not show the image's values exactly).
  explicit MonitorWindow(const MonitorWindowDef& def);
  ~MonitorWindow();
  MonitorWindow(const MonitorWindow&) = delete;
  MonitorWindow& operator=(const MonitorWindow&) = delete;

  /// Shows `image` (RGB8, top row first) 1:1 at MonitorImageOrigin, black around it, and swaps. With
  /// `capture`, the whole finished frame (window size, top row first) is read back into it before the
  /// swap. Handles the window's pending events (the window stays responsive; closing it is ignored: it
  /// closes with its owner). Precondition: image.rgb holds width * height * 3 bytes.
  void Present(const Image& image, Image* capture = nullptr);

  /// Size of the window's drawable, in px (the display's resolution when fullscreen).
  uint32_t WidthPx() const;
  uint32_t HeightPx() const;  ///< See WidthPx.
  /// "GL_RENDERER / GL_VERSION" of the window's context.
  std::string GlInfo() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::viewer
