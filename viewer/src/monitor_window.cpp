#include "platoon/viewer/monitor_window.hpp"

#include "platoon/viewer/viewer_app.hpp"

#include <SDL.h>
#include <SDL_opengl.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace platoon::viewer {

MonitorOrigin MonitorImageOrigin(uint32_t window_w, uint32_t window_h, uint32_t image_w, uint32_t image_h) {
  // Floor division of a possibly negative difference.
  const auto half = [](int64_t d) { return static_cast<int>(d >= 0 ? d / 2 : -((-d + 1) / 2)); };
  return MonitorOrigin{half(int64_t{window_w} - image_w), half(int64_t{window_h} - image_h)};
}

uint64_t MonitorDifferingPixels(const Image& frame, const Image& image) {
  const MonitorOrigin o = MonitorImageOrigin(frame.width, frame.height, image.width, image.height);
  uint64_t differing = 0;
  for (uint32_t y = 0; y < frame.height; ++y)
    for (uint32_t x = 0; x < frame.width; ++x) {
      const int64_t i = int64_t{x} - o.x_px, j = int64_t{y} - o.y_px;
      const bool inside = i >= 0 && j >= 0 && i < image.width && j < image.height;
      const std::array<uint8_t, 3> want =
          inside ? image.At(static_cast<uint32_t>(i), static_cast<uint32_t>(j)) : std::array<uint8_t, 3>{0, 0, 0};
      if (frame.At(x, y) != want) ++differing;
    }
  return differing;
}

struct MonitorWindow::Impl {
  bool video = false;  // SDL's video subsystem initialised by this window
  SDL_Window* window = nullptr;
  SDL_GLContext context = nullptr;
  std::string gl_info;
  std::vector<uint8_t> bottom_up;  // the image's rows in OpenGL order (bottom row first)

  void Release() {
    if (context) SDL_GL_DeleteContext(context);
    if (window) SDL_DestroyWindow(window);
    // Reference-counted by SDL: another SDL user of the process keeps its video subsystem.
    if (video) SDL_QuitSubSystem(SDL_INIT_VIDEO);
    context = nullptr;
    window = nullptr;
    video = false;
  }

  void Open(const MonitorWindowDef& def) {
    if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0)
      throw WindowError(std::string("cannot initialise SDL video for the monitor window: ") + SDL_GetError() +
                        " (no display? run under xvfb-run -a -s \"-screen 0 1920x1080x24\")");
    video = true;
    const int displays = SDL_GetNumVideoDisplays();
    if (def.display < 0 || def.display >= displays)
      throw WindowError("monitor display " + std::to_string(def.display) + " does not exist: SDL sees " +
                        std::to_string(displays) + " display(s), numbered from 0");
    // 8 bits per channel, or the screen could not show the image's values exactly. No depth buffer.
    SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1);
    SDL_GL_SetAttribute(SDL_GL_RED_SIZE, 8);
    SDL_GL_SetAttribute(SDL_GL_GREEN_SIZE, 8);
    SDL_GL_SetAttribute(SDL_GL_BLUE_SIZE, 8);
    SDL_GL_SetAttribute(SDL_GL_DEPTH_SIZE, 0);
    SDL_GL_SetAttribute(SDL_GL_STENCIL_SIZE, 0);
    SDL_GL_SetAttribute(SDL_GL_MULTISAMPLEBUFFERS, 0);
    // No HiDPI flag: one drawable pixel per window pixel. Fullscreen takes the desktop's mode, so the
    // display is not switched to another resolution that it would then scale.
    // The fullscreen window is also made at the display's bounds: a desktop without a window manager
    // (Xvfb, a kiosk X server) ignores the fullscreen request, and the window must cover the display anyway.
    Uint32 flags = SDL_WINDOW_OPENGL;
    int x = static_cast<int>(SDL_WINDOWPOS_CENTERED_DISPLAY(def.display)), y = x;
    int w = static_cast<int>(def.width_px), h = static_cast<int>(def.height_px);
    if (def.fullscreen) {
      SDL_Rect bounds;
      if (SDL_GetDisplayBounds(def.display, &bounds) != 0)
        throw WindowError("cannot read the bounds of monitor display " + std::to_string(def.display) + ": " + SDL_GetError());
      flags |= SDL_WINDOW_FULLSCREEN_DESKTOP | SDL_WINDOW_BORDERLESS;
      x = bounds.x, y = bounds.y, w = bounds.w, h = bounds.h;
    }
    window = SDL_CreateWindow(def.title.c_str(), x, y, w, h, flags);
    if (!window) throw WindowError(std::string("cannot create the monitor window: ") + SDL_GetError());
    context = SDL_GL_CreateContext(window);
    if (!context) throw WindowError(std::string("cannot create an OpenGL context for the monitor window: ") + SDL_GetError());
    SDL_GL_MakeCurrent(window, context);
    int r = 0, g = 0, b = 0;
    SDL_GL_GetAttribute(SDL_GL_RED_SIZE, &r);
    SDL_GL_GetAttribute(SDL_GL_GREEN_SIZE, &g);
    SDL_GL_GetAttribute(SDL_GL_BLUE_SIZE, &b);
    if (r < 8 || g < 8 || b < 8)
      throw WindowError("the monitor window's framebuffer has " + std::to_string(r) + "/" + std::to_string(g) + "/" +
                        std::to_string(b) + " bits per channel; 8 are needed to show the image exactly (X screen depth 24)");
    SDL_GL_SetSwapInterval(def.vsync ? 1 : 0);
    if (def.fullscreen) SDL_ShowCursor(SDL_DISABLE);  // no pointer on the filmed screen
    const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    const auto* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
    gl_info = std::string(renderer ? renderer : "?") + " / " + (version ? version : "?");

    // A fixed state for copying pixels exactly: no dithering, blending or per-fragment operation, identity
    // transforms (the raster position is placed through the viewport), tightly packed rows.
    glDisable(GL_DITHER);
    glDisable(GL_BLEND);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_LIGHTING);
    glDisable(GL_TEXTURE_2D);
    glDisable(GL_FOG);
    glMatrixMode(GL_PROJECTION);
    glLoadIdentity();
    glMatrixMode(GL_MODELVIEW);
    glLoadIdentity();
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glPixelZoom(1.0f, 1.0f);
    glClearColor(0.0f, 0.0f, 0.0f, 1.0f);
    // SDL believes its context stays current; another library's context (an OffscreenRenderer's) may be
    // made current on this thread in between, so the context is released after every use.
    SDL_GL_MakeCurrent(window, nullptr);
  }
};

MonitorWindow::MonitorWindow(const MonitorWindowDef& def) : impl_(std::make_unique<Impl>()) {
  // What was made before a failing step is released in reverse order.
  try {
    impl_->Open(def);
  } catch (...) {
    impl_->Release();
    throw;
  }
}

MonitorWindow::~MonitorWindow() { impl_->Release(); }

uint32_t MonitorWindow::WidthPx() const {
  int w = 0, h = 0;
  SDL_GL_GetDrawableSize(impl_->window, &w, &h);
  return static_cast<uint32_t>(std::max(w, 0));
}

uint32_t MonitorWindow::HeightPx() const {
  int w = 0, h = 0;
  SDL_GL_GetDrawableSize(impl_->window, &w, &h);
  return static_cast<uint32_t>(std::max(h, 0));
}

std::string MonitorWindow::GlInfo() const { return impl_->gl_info; }

void MonitorWindow::Present(const Image& image, Image* capture) {
  assert(image.rgb.size() == size_t{image.width} * image.height * 3);
  Impl& m = *impl_;
  // The sensor host's process has no other SDL user: pending events (moves, exposures, a close request)
  // are taken and dropped, which keeps the window responsive.
  SDL_PumpEvents();
  SDL_FlushEvents(SDL_FIRSTEVENT, SDL_LASTEVENT);

  SDL_GL_MakeCurrent(m.window, m.context);
  int W = 0, H = 0;
  SDL_GL_GetDrawableSize(m.window, &W, &H);
  glViewport(0, 0, W, H);
  glClear(GL_COLOR_BUFFER_BIT);

  // The part of the image inside the window: columns [x0, x0 + cw) and rows [y0, y0 + ch) of the window
  // (top-down), from column sx and row sy of the image (top-down).
  const MonitorOrigin o = MonitorImageOrigin(static_cast<uint32_t>(W), static_cast<uint32_t>(H), image.width, image.height);
  const int w = static_cast<int>(image.width), h = static_cast<int>(image.height);
  const int x0 = std::max(0, o.x_px), y0 = std::max(0, o.y_px);
  const int cw = std::min(W, o.x_px + w) - x0, ch = std::min(H, o.y_px + h) - y0;
  const int sx = x0 - o.x_px, sy = y0 - o.y_px;
  if (cw > 0 && ch > 0) {
    // OpenGL's rows run bottom-up: flip the image once, then copy the visible rectangle. The raster position
    // (-1, -1) with identity transforms is the viewport's bottom-left corner, an exact window pixel corner.
    const size_t row = size_t{image.width} * 3;
    m.bottom_up.resize(image.rgb.size());
    for (int j = 0; j < h; ++j)
      std::memcpy(m.bottom_up.data() + static_cast<size_t>(j) * row,
                  image.rgb.data() + static_cast<size_t>(h - 1 - j) * row, row);
    glViewport(x0, H - (y0 + ch), cw, ch);
    glRasterPos2f(-1.0f, -1.0f);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, w);
    glPixelStorei(GL_UNPACK_SKIP_PIXELS, sx);
    glPixelStorei(GL_UNPACK_SKIP_ROWS, h - sy - ch);
    glDrawPixels(cw, ch, GL_RGB, GL_UNSIGNED_BYTE, m.bottom_up.data());
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glPixelStorei(GL_UNPACK_SKIP_PIXELS, 0);
    glPixelStorei(GL_UNPACK_SKIP_ROWS, 0);
  }

  // The finished frame, read from the back buffer before it is shown.
  if (capture) {
    capture->width = static_cast<uint32_t>(W);
    capture->height = static_cast<uint32_t>(H);
    const size_t row = static_cast<size_t>(W) * 3;
    m.bottom_up.resize(row * static_cast<size_t>(H));
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, W, H, GL_RGB, GL_UNSIGNED_BYTE, m.bottom_up.data());
    capture->rgb.resize(m.bottom_up.size());
    for (int j = 0; j < H; ++j)
      std::memcpy(capture->rgb.data() + static_cast<size_t>(j) * row,
                  m.bottom_up.data() + static_cast<size_t>(H - 1 - j) * row, row);
  }
  SDL_GL_SwapWindow(m.window);
  SDL_GL_MakeCurrent(m.window, nullptr);
}

}  // namespace platoon::viewer
