#include "platoon/viewer/seat_window.hpp"

#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/seat_keys.hpp"
#include "platoon/viewer/viewer_app.hpp"
#include "sdl_window.hpp"

#include <GL/gl.h>
#include <imgui.h>
#include <imgui_impl_sdl.h>
#include <osgViewer/Viewer>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace platoon::viewer {

struct SeatWindow::Impl {
  SeatWindowDef def;
  std::unique_ptr<SdlGlWindow> window;
  osg::ref_ptr<osgViewer::Viewer> viewer;
  osg::ref_ptr<osgViewer::GraphicsWindowEmbedded> gw;
  int width = 0, height = 0;
  std::string gl_info;
  KeyCallback on_key;
  bool hud_visible = false;

  // The pinhole of the window's current size (square pixels, centred principal point).
  void SetProjection() {
    PinholeCamera cam = CameraFromFov(static_cast<uint32_t>(std::max(width, 1)), static_cast<uint32_t>(std::max(height, 1)),
                                      def.hfov_deg * M_PI / 180.0);
    cam.near_m = 0.1;  // the eye sits inside the cabin: the bonnet is a metre away
    cam.far_m = 30000.0;
    viewer->getCamera()->setViewport(0, 0, width, height);
    viewer->getCamera()->setProjectionMatrix(ProjectionMatrix(cam));
  }
};

SeatWindow::SeatWindow(const SeatWindowDef& def, SceneGraph& scene) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.def = def;
  m.hud_visible = def.hud;
  // Without a display SDL may fall back to an invisible off-screen window: nobody would see it, so refuse.
  const char* x11 = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  const char* driver = std::getenv("SDL_VIDEODRIVER");
  if ((!x11 || !*x11) && (!wayland || !*wayland) && (!driver || !*driver))
    throw WindowError("no display: $DISPLAY and $WAYLAND_DISPLAY are unset (run under xvfb-run -a -s \"-screen 0 1280x1024x24\" to render off-screen)");
  m.window = std::make_unique<SdlGlWindow>(def.title, static_cast<int>(def.width_px), static_cast<int>(def.height_px),
                                           def.vsync);
  m.window->DrawableSize(&m.width, &m.height);
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const auto* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  m.gl_info = std::string(renderer ? renderer : "?") + " / " + (version ? version : "?");

  // OSG renders into the SDL window's context, which this thread keeps current.
  m.viewer = new osgViewer::Viewer;
  m.gw = m.viewer->setUpViewerAsEmbeddedInWindow(0, 0, m.width, m.height);
  m.viewer->setThreadingModel(osgViewer::Viewer::SingleThreaded);
  m.viewer->setLightingMode(osg::View::NO_LIGHT);  // the scene has its sun
  m.viewer->setKeyEventSetsDone(0);                // Esc is handled through SDL
  m.viewer->setSceneData(scene.Root());
  osg::Camera* camera = m.viewer->getCamera();
  camera->setClearColor(osg::Vec4(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b, 1.0f));
  camera->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
  m.SetProjection();
  m.viewer->realize();
}

SeatWindow::~SeatWindow() {
  // OSG's GL objects go while the context still exists.
  if (impl_->viewer) impl_->viewer->setSceneData(nullptr);
  impl_->viewer = nullptr;
  impl_->gw = nullptr;
  impl_->window.reset();
}

void SeatWindow::SetKeyCallback(KeyCallback on_key) { impl_->on_key = std::move(on_key); }

bool SeatWindow::PollEvents() {
  Impl& m = *impl_;
  bool open = true;
  SDL_Event ev;
  while (SDL_PollEvent(&ev)) {
    ImGui_ImplSDL2_ProcessEvent(&ev);
    if (ev.type == SDL_QUIT) open = false;
    if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_ESCAPE) open = false;
    // Tab shows or hides the debug text; it is no seat key, so it sends no marker.
    if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_TAB && ev.key.repeat == 0) m.hud_visible = !m.hud_visible;
    // A seat key: one call per press (SDL repeats a held key; those are dropped).
    if (ev.type == SDL_KEYDOWN && m.on_key)
      if (const std::string key = SeatKeyName(ev.key.keysym.sym, ev.key.repeat != 0); !key.empty()) m.on_key(key);
    if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_SIZE_CHANGED) {
      m.window->DrawableSize(&m.width, &m.height);
      m.gw->resized(0, 0, m.width, m.height);
      m.SetProjection();
    }
  }
  return open;
}

bool SeatWindow::HudVisible() const { return impl_->hud_visible; }

void SeatWindow::Render(const Pose& eye_world, const std::vector<std::string>& hud, const std::string& message,
                        Image* capture) {
  Impl& m = *impl_;
  m.viewer->getCamera()->setViewMatrix(ViewMatrix(eye_world));
  m.viewer->frame();
  constexpr ImGuiWindowFlags kTextBox = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                        ImGuiWindowFlags_NoInputs | ImGuiWindowFlags_NoSavedSettings |
                                        ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav;
  m.window->BeginUi();
  // The debug text, in a small translucent box at the top left.
  if (m.hud_visible && !hud.empty()) {
    ImGui::SetNextWindowPos(ImVec2(10, 10));
    ImGui::SetNextWindowBgAlpha(0.45f);
    ImGui::Begin("seat", nullptr, kTextBox);
    for (const auto& line : hud) ImGui::TextUnformatted(line.c_str());
    ImGui::End();
  }
  // A scenario's message for the participant: its own box, centred at the top, larger than the debug text.
  if (!message.empty()) {
    ImGui::SetNextWindowPos(ImVec2(0.5f * static_cast<float>(m.width), 0.08f * static_cast<float>(m.height)),
                            ImGuiCond_Always, ImVec2(0.5f, 0.0f));
    ImGui::SetNextWindowBgAlpha(0.6f);
    ImGui::Begin("seat message", nullptr, kTextBox);
    ImGui::SetWindowFontScale(1.8f);
    ImGui::TextUnformatted(message.c_str());
    ImGui::End();
  }
  m.window->EndUi();
  if (capture) {
    // The back buffer holds the finished frame until the swap; GL's rows run from the bottom.
    capture->width = static_cast<uint32_t>(std::max(m.width, 0));
    capture->height = static_cast<uint32_t>(std::max(m.height, 0));
    const size_t row = size_t{capture->width} * 3;
    std::vector<uint8_t> gl(row * capture->height);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, m.width, m.height, GL_RGB, GL_UNSIGNED_BYTE, gl.data());
    capture->rgb.resize(gl.size());
    for (uint32_t j = 0; j < capture->height; ++j)
      std::copy_n(gl.data() + (capture->height - 1 - j) * row, row, capture->rgb.data() + j * row);
  }
  m.window->Swap();
}

std::string SeatWindow::GlInfo() const { return impl_->gl_info; }

}  // namespace platoon::viewer
