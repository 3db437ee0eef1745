#include "platoon/viewer/seat_window.hpp"

#include "cockpit_draw.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/seat_keys.hpp"
#include "platoon/viewer/viewer_app.hpp"
#include "sdl_window.hpp"

#include <GL/gl.h>
#include <imgui.h>
#include <imgui_impl_sdl.h>
#include <osg/Camera>
#include <osg/Texture2D>
#include <osgViewer/Viewer>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace platoon::viewer {

namespace seat_window_detail {

// A vehicle-frame pose as a body-to-vehicle transform: position, then yaw about z, then elevation.
Pose MirrorPose(const MirrorDef& m) {
  const double yaw = m.yaw_deg * M_PI / 180.0, pitch = m.pitch_deg * M_PI / 180.0;
  // Positive pitch looks up: a rotation about y by -pitch takes x towards +z.
  return Pose{m.position_m, Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()) * Eigen::AngleAxisd(-pitch, Vec3::UnitY()))};
}

Pose Compose(const Pose& a, const Pose& b) {
  return Pose{a.position_m + a.orientation * b.position_m, a.orientation * b.orientation};
}

// One mirror: a pre-render camera drawing the scene into a texture, shown left-right swapped.
struct Mirror {
  MirrorDef def;
  osg::ref_ptr<osg::Camera> camera;
  osg::ref_ptr<osg::Texture2D> texture;
};

}  // namespace seat_window_detail
using seat_window_detail::Mirror;

struct SeatWindow::Impl {
  SeatWindowDef def;
  std::unique_ptr<SdlGlWindow> window;
  osg::ref_ptr<osgViewer::Viewer> viewer;
  osg::ref_ptr<osgViewer::GraphicsWindowEmbedded> gw;
  int width = 0, height = 0;
  std::string gl_info;
  KeyCallback on_key;
  IndicatorCallback on_indicator;
  bool hud_visible = false;
  CockpitState cockpit_state;
  osg::ref_ptr<osg::Group> root;        // mirrors' cameras, the scene, the own car's camera
  osg::ref_ptr<osg::Camera> cockpit;    // post-render, vehicle frame as its world
  std::vector<Mirror> mirrors;

  // Where mirror `m` sits in the window now, in px.
  std::array<double, 4> Rect(const MirrorDef& d) const {
    return {d.screen[0] * width, d.screen[1] * height, d.screen[2] * width, d.screen[3] * height};
  }

  // The pinhole of the window's current size (square pixels, centred principal point).
  void SetProjection() {
    PinholeCamera cam = CameraFromFov(static_cast<uint32_t>(std::max(width, 1)), static_cast<uint32_t>(std::max(height, 1)),
                                      def.hfov_deg * M_PI / 180.0);
    cam.near_m = 0.1;  // the eye sits inside the cabin: the bonnet is a metre away
    cam.far_m = 30000.0;
    viewer->getCamera()->setViewport(0, 0, width, height);
    viewer->getCamera()->setProjectionMatrix(ProjectionMatrix(cam));
    if (cockpit) cockpit->setProjectionMatrix(ProjectionMatrix(cam));
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
  // The mirrors render the scene into textures before the view; the own car is drawn after it, over
  // everything, with a fresh depth buffer (nothing outside can come between the eye and the dashboard).
  m.root = new osg::Group;
  const osg::Vec4 sky(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b, 1.0f);
  for (const MirrorDef& d : def.mirrors) {
    if (const std::string e = ValidateMirror(d); !e.empty()) throw WindowError(e);
    Mirror mirror;
    mirror.def = d;
    const auto r = m.Rect(d);
    const int tw = std::max(16, static_cast<int>(std::lround(r[2] - r[0]))), th = std::max(16, static_cast<int>(std::lround(r[3] - r[1])));
    mirror.texture = new osg::Texture2D;
    mirror.texture->setTextureSize(tw, th);
    mirror.texture->setInternalFormat(GL_RGB);
    mirror.texture->setFilter(osg::Texture::MIN_FILTER, osg::Texture::LINEAR);
    mirror.texture->setFilter(osg::Texture::MAG_FILTER, osg::Texture::LINEAR);
    mirror.texture->setWrap(osg::Texture::WRAP_S, osg::Texture::CLAMP_TO_EDGE);
    mirror.texture->setWrap(osg::Texture::WRAP_T, osg::Texture::CLAMP_TO_EDGE);
    mirror.camera = new osg::Camera;
    mirror.camera->setName("mirror " + d.name);
    mirror.camera->setRenderOrder(osg::Camera::PRE_RENDER);
    mirror.camera->setRenderTargetImplementation(osg::Camera::FRAME_BUFFER_OBJECT);
    mirror.camera->attach(osg::Camera::COLOR_BUFFER, mirror.texture.get());
    mirror.camera->setReferenceFrame(osg::Transform::ABSOLUTE_RF);
    mirror.camera->setViewport(0, 0, tw, th);
    mirror.camera->setClearColor(sky);
    mirror.camera->setClearMask(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    mirror.camera->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
    PinholeCamera pin = CameraFromFov(static_cast<uint32_t>(tw), static_cast<uint32_t>(th), d.hfov_deg * M_PI / 180.0);
    pin.near_m = 0.1;
    pin.far_m = 30000.0;
    mirror.camera->setProjectionMatrix(ProjectionMatrix(pin));
    mirror.camera->addChild(scene.Root());
    m.root->addChild(mirror.camera);
    m.mirrors.push_back(std::move(mirror));
  }
  m.root->addChild(scene.Root());
  if (def.cockpit) {
    m.cockpit = new osg::Camera;
    m.cockpit->setName("own car");
    m.cockpit->setRenderOrder(osg::Camera::POST_RENDER);
    m.cockpit->setReferenceFrame(osg::Transform::ABSOLUTE_RF);
    m.cockpit->setClearMask(GL_DEPTH_BUFFER_BIT);
    m.cockpit->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
    m.cockpit->addChild(BuildCockpitGeometry(def.cockpit_def));
    m.root->addChild(m.cockpit);
  }
  m.viewer->setSceneData(m.root);
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

void SeatWindow::SetIndicatorCallback(IndicatorCallback on_indicator) { impl_->on_indicator = std::move(on_indicator); }

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
    // "," and "." work the turn indicators (no seat keys: no marker).
    if (ev.type == SDL_KEYDOWN && m.on_indicator)
      if (const int side = IndicatorKeySide(ev.key.keysym.sym, ev.key.repeat != 0); side != 0) m.on_indicator(side);
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
  // The vehicle where the eye says it is: body = eye * (eye in vehicle)^-1.
  const Pose& ev = m.cockpit_state.eye_in_vehicle;
  const Quat body_q = eye_world.orientation * ev.orientation.conjugate();
  const Pose body{eye_world.position_m - body_q * ev.position_m, body_q};
  for (Mirror& mirror : m.mirrors) mirror.camera->setViewMatrix(ViewMatrix(seat_window_detail::Compose(body, seat_window_detail::MirrorPose(mirror.def))));
  if (m.cockpit) m.cockpit->setViewMatrix(ViewMatrix(ev));
  m.viewer->frame();
  constexpr ImGuiWindowFlags kTextBox = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                        ImGuiWindowFlags_NoInputs | ImGuiWindowFlags_NoSavedSettings |
                                        ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav;
  m.window->BeginUi();
  ImDrawList* back = ImGui::GetBackgroundDrawList();
  // The mirrors: their textures in dark frames, swapped left-right as a mirror shows the world (GL's
  // texture rows run from the bottom, so v is turned too).
  const unsigned context = m.gw->getState()->getContextID();
  for (const Mirror& mirror : m.mirrors) {
    const auto r = m.Rect(mirror.def);
    const float frame = std::max(2.0f, 0.006f * static_cast<float>(m.height));
    // A mirror hanging from the top edge gets its mount.
    if (r[1] < 0.05 * m.height) {
      const float c = 0.5f * static_cast<float>(r[0] + r[2]), half = 0.012f * static_cast<float>(m.width);
      back->AddRectFilled(ImVec2(c - half, 0.0f), ImVec2(c + half, static_cast<float>(r[1])), IM_COL32(40, 37, 34, 255));
    }
    back->AddRectFilled(ImVec2(static_cast<float>(r[0]) - frame, static_cast<float>(r[1]) - frame),
                        ImVec2(static_cast<float>(r[2]) + frame, static_cast<float>(r[3]) + frame), IM_COL32(22, 20, 18, 255),
                        2.0f * frame);
    if (osg::Texture::TextureObject* to = mirror.texture->getTextureObject(context))
      back->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(to->id())),
                     ImVec2(static_cast<float>(r[0]), static_cast<float>(r[1])), ImVec2(static_cast<float>(r[2]), static_cast<float>(r[3])),
                     ImVec2(1, 1), ImVec2(0, 0));
  }
  if (m.def.cockpit)
    DrawInstrumentCluster(back, InstrumentClusterLayout(m.width, m.height), m.def.cockpit_def, m.cockpit_state);
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
    // Below a mirror that hangs at the top centre.
    double top = 0.08 * m.height;
    for (const Mirror& mirror : m.mirrors) {
      const auto r = m.Rect(mirror.def);
      if (r[0] < 0.5 * m.width && r[2] > 0.5 * m.width && r[1] < top) top = std::max(top, r[3] + 0.015 * m.height);
    }
    ImGui::SetNextWindowPos(ImVec2(0.5f * static_cast<float>(m.width), static_cast<float>(top)),
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

void SeatWindow::SetCockpit(const CockpitState& state) { impl_->cockpit_state = state; }

std::array<double, 4> SeatWindow::MirrorRect(size_t i) const { return impl_->Rect(impl_->mirrors.at(i).def); }

std::string SeatWindow::GlInfo() const { return impl_->gl_info; }

}  // namespace platoon::viewer
