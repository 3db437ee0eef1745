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
#include <osg/Program>
#include <osg/Uniform>
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

// Reads the current context's back buffer (the finished frame, before the swap) into `out`, top row first.
void ReadBackBuffer(int width, int height, Image* out) {
  out->width = static_cast<uint32_t>(std::max(width, 0));
  out->height = static_cast<uint32_t>(std::max(height, 0));
  const size_t row = size_t{out->width} * 3;
  std::vector<uint8_t> gl(row * out->height);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, gl.data());
  out->rgb.resize(gl.size());
  for (uint32_t j = 0; j < out->height; ++j) std::copy_n(gl.data() + (out->height - 1 - j) * row, row, out->rgb.data() + j * row);
}

// Places an SDL window as a screen asks: on its display (which must exist), at its position, or borderless
// over the whole display. Made at the display's bounds too: a desktop without a window manager (Xvfb, a
// kiosk X server) ignores the fullscreen request.
void PlaceScreenWindow(SDL_Window* w, const SeatScreen& s) {
  const int displays = SDL_GetNumVideoDisplays();
  if (s.display < 0 || s.display >= displays)
    throw WindowError(s.name + ".display: display " + std::to_string(s.display) + " does not exist: SDL sees " +
                      std::to_string(displays) + " display(s), numbered from 0");
  if (s.fullscreen) {
    SDL_Rect bounds;
    if (SDL_GetDisplayBounds(s.display, &bounds) != 0)
      throw WindowError(s.name + ".display: cannot read the bounds of display " + std::to_string(s.display) + ": " + SDL_GetError());
    SDL_SetWindowBordered(w, SDL_FALSE);
    SDL_SetWindowSize(w, bounds.w, bounds.h);
    SDL_SetWindowPosition(w, bounds.x, bounds.y);
    SDL_SetWindowFullscreen(w, SDL_WINDOW_FULLSCREEN_DESKTOP);
  } else if (s.position_px) {
    SDL_SetWindowPosition(w, (*s.position_px)[0], (*s.position_px)[1]);
  } else {
    SDL_SetWindowPosition(w, static_cast<int>(SDL_WINDOWPOS_CENTERED_DISPLAY(s.display)),
                          static_cast<int>(SDL_WINDOWPOS_CENTERED_DISPLAY(s.display)));
  }
}

// The eye kept at least 1 cm in front of the screen (head tracking may carry it past the plane).
Vec3 EyeInFront(const ScreenCorners& c, const Vec3& eye) {
  const double d = EyeDistanceToScreen(c, eye);
  if (d >= 0.01) return eye;
  const Vec3 n = (c.lower_right_m - c.lower_left_m).cross(c.upper_left_m - c.lower_left_m).normalized();
  return eye + (0.01 - d) * n;
}

// A screen other than the main one: its own SDL window, GL context and OSG viewer of the scene alone.
struct ExtraScreen {
  SeatScreen def;
  SDL_Window* window = nullptr;
  SDL_GLContext context = nullptr;
  osg::ref_ptr<osgViewer::Viewer> viewer;
  osg::ref_ptr<osgViewer::GraphicsWindowEmbedded> gw;
  int width = 0, height = 0;
  ScreenFrustum frustum;
};

}  // namespace seat_window_detail
using seat_window_detail::ExtraScreen;
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
  osg::ref_ptr<osg::Uniform> interior_light;  // the cockpit's colour scale (CockpitState::interior_light)
  std::vector<Mirror> mirrors;
  // With screens: the main screen's corners (in the SdlGlWindow above) and where it sits in the screens'
  // order; the others in their own windows, in order without the main one.
  std::optional<SeatScreen> main_screen;
  size_t main_index = 0;
  ScreenFrustum main_frustum;
  std::vector<std::unique_ptr<ExtraScreen>> extras;
  SDL_GLContext main_context = nullptr;
  bool extras_drawn = false;  // RenderScreens drew them for this frame

  // Draws the screens other than the main one from the eye of cockpit_state, the vehicle at `body`.
  void DrawExtras(const Pose& body, std::vector<Image>* captures);

  ~Impl() {
    // Each screen's OSG objects go while its context is current, then its window.
    for (auto& e : extras) {
      if (e->context) SDL_GL_MakeCurrent(e->window, e->context);
      if (e->viewer) e->viewer->setSceneData(nullptr);
      e->viewer = nullptr;
      e->gw = nullptr;
      if (e->context) SDL_GL_DeleteContext(e->context);
      if (e->window) SDL_DestroyWindow(e->window);
    }
    extras.clear();
    if (window && main_context) SDL_GL_MakeCurrent(window->Window(), main_context);
  }

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
  // Screens: the one marked main (else the first) takes the SdlGlWindow with the own car and the texts.
  for (size_t i = 0; i < def.screens.size(); ++i) {
    if (const std::string e = ValidateScreenCorners(def.screens[i].corners); !e.empty())
      throw WindowError(def.screens[i].name + ": " + e);
    if (def.screens[i].main && !m.main_screen) m.main_screen = def.screens[i], m.main_index = i;
  }
  if (!def.screens.empty() && !m.main_screen) m.main_screen = def.screens.front(), m.main_index = 0;
  const std::string title0 = def.screens.size() > 1 ? def.title + " (screen " + std::to_string(m.main_index) + ")" : def.title;
  m.window = std::make_unique<SdlGlWindow>(title0, static_cast<int>(m.main_screen ? m.main_screen->width_px : def.width_px),
                                           static_cast<int>(m.main_screen ? m.main_screen->height_px : def.height_px), def.vsync);
  m.main_context = SDL_GL_GetCurrentContext();
  if (m.main_screen) seat_window_detail::PlaceScreenWindow(m.window->Window(), *m.main_screen);
  m.window->DrawableSize(&m.width, &m.height);
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const auto* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  m.gl_info = std::string(renderer ? renderer : "?") + " / " + (version ? version : "?");

  // OSG renders into the SDL window's context, which this thread keeps current.
  UseNearestFirstDrawOrder();
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
    // Its baked colours scaled by the light outside: a dark interior at night.
    osg::ref_ptr<osg::Program> program = new osg::Program;
    program->addShader(new osg::Shader(osg::Shader::VERTEX, R"(#version 120
void main() {
  gl_Position = ftransform();
  gl_FrontColor = gl_Color;
}
)"));
    program->addShader(new osg::Shader(osg::Shader::FRAGMENT, R"(#version 120
uniform float u_interior_light;
void main() { gl_FragColor = vec4(gl_Color.rgb * u_interior_light, gl_Color.a); }
)"));
    m.interior_light = new osg::Uniform("u_interior_light", 1.0f);
    m.cockpit->getOrCreateStateSet()->setAttributeAndModes(program, osg::StateAttribute::ON);
    m.cockpit->getOrCreateStateSet()->addUniform(m.interior_light);
    m.root->addChild(m.cockpit);
  }
  m.viewer->setSceneData(m.root);
  osg::Camera* camera = m.viewer->getCamera();
  camera->setClearColor(osg::Vec4(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b, 1.0f));
  camera->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
  m.SetProjection();
  m.viewer->realize();

  // The other screens: a window, context and viewer each, drawing the scene alone.
  for (size_t i = 0; i < def.screens.size(); ++i) {
    if (i == m.main_index) continue;
    auto e = std::make_unique<ExtraScreen>();
    ExtraScreen& x = *e;
    m.extras.push_back(std::move(e));
    x.def = def.screens[i];
    const std::string title = def.title + " (screen " + std::to_string(i) + ")";
    x.window = SDL_CreateWindow(title.c_str(), SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, static_cast<int>(x.def.width_px),
                                static_cast<int>(x.def.height_px), SDL_WINDOW_OPENGL | SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    if (!x.window) throw WindowError(x.def.name + ": cannot create the screen's window: " + SDL_GetError());
    seat_window_detail::PlaceScreenWindow(x.window, x.def);
    x.context = SDL_GL_CreateContext(x.window);
    if (!x.context) throw WindowError(x.def.name + ": cannot create an OpenGL context: " + SDL_GetError());
    SDL_GL_MakeCurrent(x.window, x.context);
    SDL_GL_SetSwapInterval(def.vsync ? 1 : 0);
    SDL_GL_GetDrawableSize(x.window, &x.width, &x.height);
    UseNearestFirstDrawOrder();
    x.viewer = new osgViewer::Viewer;
    x.gw = x.viewer->setUpViewerAsEmbeddedInWindow(0, 0, x.width, x.height);
    x.viewer->setThreadingModel(osgViewer::Viewer::SingleThreaded);
    x.viewer->setLightingMode(osg::View::NO_LIGHT);
    x.viewer->setKeyEventSetsDone(0);
    x.viewer->setSceneData(scene.Root());
    x.viewer->getCamera()->setClearColor(sky);
    x.viewer->getCamera()->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
    x.viewer->getCamera()->setViewport(0, 0, x.width, x.height);
    x.viewer->realize();
  }
  if (!m.extras.empty()) SDL_GL_MakeCurrent(m.window->Window(), m.main_context);
}

SeatWindow::~SeatWindow() {
  // The other screens first (their windows and contexts), then the main one's OSG objects while its
  // context still exists.
  for (auto& e : impl_->extras) {
    SDL_GL_MakeCurrent(e->window, e->context);
    e->viewer->setSceneData(nullptr);
    e->viewer = nullptr;
    e->gw = nullptr;
    SDL_GL_DeleteContext(e->context);
    SDL_DestroyWindow(e->window);
  }
  impl_->extras.clear();
  if (impl_->main_context) SDL_GL_MakeCurrent(impl_->window->Window(), impl_->main_context);
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
    // Closing any one screen's window ends the seat, as closing the only window does.
    if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_CLOSE) open = false;
    if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_SIZE_CHANGED)
      for (auto& x : m.extras)
        if (SDL_GetWindowID(x->window) == ev.window.windowID) {
          SDL_GL_GetDrawableSize(x->window, &x->width, &x->height);
          x->gw->resized(0, 0, x->width, x->height);
          x->viewer->getCamera()->setViewport(0, 0, x->width, x->height);
        }
    if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_ESCAPE) open = false;
    // Tab shows or hides the debug text; it is no seat key, so it sends no marker.
    if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_TAB && ev.key.repeat == 0) m.hud_visible = !m.hud_visible;
    // A seat key: one call per press (SDL repeats a held key; those are dropped).
    if (ev.type == SDL_KEYDOWN && m.on_key)
      if (const std::string key = SeatKeyName(ev.key.keysym.sym, ev.key.repeat != 0); !key.empty()) m.on_key(key);
    // "," and "." work the turn indicators (no seat keys: no marker).
    if (ev.type == SDL_KEYDOWN && m.on_indicator)
      if (const int side = IndicatorKeySide(ev.key.keysym.sym, ev.key.repeat != 0); side != 0) m.on_indicator(side);
    if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_SIZE_CHANGED &&
        ev.window.windowID == SDL_GetWindowID(m.window->Window())) {
      m.window->DrawableSize(&m.width, &m.height);
      m.gw->resized(0, 0, m.width, m.height);
      m.SetProjection();
    }
  }
  return open;
}

bool SeatWindow::HudVisible() const { return impl_->hud_visible; }

void SeatWindow::RenderScreens(const Pose& eye_world, const std::vector<std::string>& hud, const std::string& message,
                               std::vector<Image>* captures) {
  Impl& m = *impl_;
  if (captures) captures->assign(ScreenCount(), Image{});
  Image* main_capture = captures ? &(*captures)[m.main_screen ? m.main_index : 0] : nullptr;
  const Pose& ev = m.cockpit_state.eye_in_vehicle;
  const Quat body_q = eye_world.orientation * ev.orientation.conjugate();
  m.DrawExtras(Pose{eye_world.position_m - body_q * ev.position_m, body_q}, captures);
  m.extras_drawn = true;
  Render(eye_world, hud, message, main_capture);
}

// The other screens, each in its own context, then the main one's context made current again.
void SeatWindow::Impl::DrawExtras(const Pose& body, std::vector<Image>* captures) {
  Impl& m = *this;
  const Pose& ev = m.cockpit_state.eye_in_vehicle;
  for (size_t k = 0; k < m.extras.size(); ++k) {
    ExtraScreen& x = *m.extras[k];
    SDL_GL_MakeCurrent(x.window, x.context);
    const Vec3 eye = seat_window_detail::EyeInFront(x.def.corners, ev.position_m);
    x.frustum = OffAxisFrustum(x.def.corners, eye, 0.1);
    const double far_m = 30000.0 * x.frustum.near_m / 0.1;
    x.viewer->getCamera()->setProjectionMatrix(
        osg::Matrixd::frustum(x.frustum.left_m, x.frustum.right_m, x.frustum.bottom_m, x.frustum.top_m, x.frustum.near_m, far_m));
    x.viewer->getCamera()->setViewMatrix(ViewMatrix(seat_window_detail::Compose(body, Pose{eye, x.frustum.orientation})));
    x.viewer->frame();
    if (captures) {
      // Index in SeatWindowDef::screens: the extras skip the main one.
      const size_t index = k < m.main_index ? k : k + 1;
      seat_window_detail::ReadBackBuffer(x.width, x.height, &(*captures)[index]);
    }
    SDL_GL_SwapWindow(x.window);
  }
  if (!m.extras.empty()) SDL_GL_MakeCurrent(m.window->Window(), m.main_context);
}

size_t SeatWindow::ScreenCount() const { return impl_->main_screen ? 1 + impl_->extras.size() : 1; }

ScreenFrustum SeatWindow::LastFrustum(size_t i) const {
  const Impl& m = *impl_;
  if (!m.main_screen) return {};
  if (i == m.main_index) return m.main_frustum;
  return m.extras.at(i < m.main_index ? i : i - 1)->frustum;
}

void SeatWindow::Render(const Pose& eye_world, const std::vector<std::string>& hud, const std::string& message,
                        Image* capture) {
  Impl& m = *impl_;
  // The vehicle where the eye says it is: body = eye * (eye in vehicle)^-1.
  const Pose& ev = m.cockpit_state.eye_in_vehicle;
  const Quat body_q = eye_world.orientation * ev.orientation.conjugate();
  const Pose body{eye_world.position_m - body_q * ev.position_m, body_q};
  // The other screens first (unless RenderScreens drew them), the main one last, in its context.
  if (!m.extras_drawn) m.DrawExtras(body, nullptr);
  m.extras_drawn = false;
  if (m.main_screen) {
    // The view through the main screen: the eye's position only (the screen does not turn with the head).
    const Vec3 eye = seat_window_detail::EyeInFront(m.main_screen->corners, ev.position_m);
    m.main_frustum = OffAxisFrustum(m.main_screen->corners, eye, 0.1);
    const ScreenFrustum& f = m.main_frustum;
    const osg::Matrixd projection = osg::Matrixd::frustum(f.left_m, f.right_m, f.bottom_m, f.top_m, f.near_m, 30000.0);
    m.viewer->getCamera()->setProjectionMatrix(projection);
    m.viewer->getCamera()->setViewMatrix(ViewMatrix(seat_window_detail::Compose(body, Pose{eye, f.orientation})));
    if (m.cockpit) {
      m.cockpit->setProjectionMatrix(projection);
      m.cockpit->setViewMatrix(ViewMatrix(Pose{eye, f.orientation}));
    }
  } else {
    m.viewer->getCamera()->setViewMatrix(ViewMatrix(eye_world));
    if (m.cockpit) m.cockpit->setViewMatrix(ViewMatrix(ev));
  }
  for (Mirror& mirror : m.mirrors) mirror.camera->setViewMatrix(ViewMatrix(seat_window_detail::Compose(body, seat_window_detail::MirrorPose(mirror.def))));
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
  // The back buffer holds the finished frame until the swap; GL's rows run from the bottom.
  if (capture) seat_window_detail::ReadBackBuffer(m.width, m.height, capture);
  m.window->Swap();
}

void SeatWindow::SetCockpit(const CockpitState& state) {
  impl_->cockpit_state = state;
  if (impl_->interior_light) impl_->interior_light->set(static_cast<float>(state.interior_light));
}

std::array<double, 4> SeatWindow::MirrorRect(size_t i) const { return impl_->Rect(impl_->mirrors.at(i).def); }

std::string SeatWindow::GlInfo() const { return impl_->gl_info; }

}  // namespace platoon::viewer
