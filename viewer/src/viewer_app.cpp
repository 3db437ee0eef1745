#include "platoon/viewer/viewer_app.hpp"

#include "platoon/config/session.hpp"
#include "platoon/viewer/calibration_board.hpp"
#include "platoon/viewer/camera_manipulators.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/param_panel.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/plot_buffer.hpp"
#include "platoon/viewer/session_scene.hpp"
#include "sdl_window.hpp"

#include <GL/gl.h>
#include <imgui.h>
#include <imgui_impl_sdl.h>
#include <osgViewer/Viewer>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace platoon::viewer {
namespace {

using Ea = osgGA::GUIEventAdapter;

// Sensor data older than this (wall time since it arrived) is no longer drawn, in s.
constexpr double kSensorMaxAgeS = 2.0;

// SDL key to an osgGA key code: printable keys as their (lower-case) character.
int OsgKey(const SDL_Keysym& k) {
  if (k.sym >= 32 && k.sym < 127) return static_cast<int>(k.sym);
  switch (k.sym) {
    case SDLK_UP: return Ea::KEY_Up;
    case SDLK_DOWN: return Ea::KEY_Down;
    case SDLK_LEFT: return Ea::KEY_Left;
    case SDLK_RIGHT: return Ea::KEY_Right;
    default: return 0;
  }
}

// Forwards an SDL event to OSG unless ImGui wants it.
void ForwardEvent(const SDL_Event& ev, osgGA::EventQueue& q) {
  const ImGuiIO& io = ImGui::GetIO();
  switch (ev.type) {
    case SDL_MOUSEMOTION:
      if (!io.WantCaptureMouse) q.mouseMotion(static_cast<float>(ev.motion.x), static_cast<float>(ev.motion.y));
      break;
    case SDL_MOUSEBUTTONDOWN:
      if (!io.WantCaptureMouse)
        q.mouseButtonPress(static_cast<float>(ev.button.x), static_cast<float>(ev.button.y), ev.button.button);
      break;
    case SDL_MOUSEBUTTONUP:
      // Releases always go through, so a drag that ends over the panel does not stick.
      q.mouseButtonRelease(static_cast<float>(ev.button.x), static_cast<float>(ev.button.y), ev.button.button);
      break;
    case SDL_MOUSEWHEEL:
      if (!io.WantCaptureMouse && ev.wheel.y != 0) q.mouseScroll(ev.wheel.y > 0 ? Ea::SCROLL_UP : Ea::SCROLL_DOWN);
      break;
    case SDL_KEYDOWN:
    case SDL_KEYUP: {
      if (io.WantCaptureKeyboard) break;
      const int key = OsgKey(ev.key.keysym);
      if (!key) break;
      int mods = 0;
      if (ev.key.keysym.mod & KMOD_SHIFT) mods |= Ea::MODKEY_SHIFT;
      if (ev.key.keysym.mod & KMOD_CTRL) mods |= Ea::MODKEY_CTRL;
      q.getCurrentEventState()->setModKeyMask(mods);
      if (ev.type == SDL_KEYDOWN) q.keyPress(key, key);
      else q.keyRelease(key, key);
      break;
    }
    default: break;
  }
}

// The back buffer as an image (what the next swap shows).
Image ReadBackBuffer(int width, int height) {
  Image img;
  img.width = static_cast<uint32_t>(width);
  img.height = static_cast<uint32_t>(height);
  std::vector<uint8_t> rows(static_cast<size_t>(width) * height * 3);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rows.data());
  img.rgb.resize(rows.size());
  const size_t row = static_cast<size_t>(width) * 3;
  for (int j = 0; j < height; ++j)
    std::copy_n(rows.data() + static_cast<size_t>(height - 1 - j) * row, row, img.rgb.data() + static_cast<size_t>(j) * row);
  return img;
}

}  // namespace

int RunViewerApp(const ViewerAppDef& def, SceneGraph& scene, WorldClient& client, spdlog::logger& log,
                 const std::atomic<bool>& stop) {
  const bool screenshot = !def.screenshot_path.empty();
  SdlGlWindow window(def.title, static_cast<int>(def.width_px), static_cast<int>(def.height_px),
                     def.vsync && !screenshot);
  int width = 0, height = 0;
  window.DrawableSize(&width, &height);
  log.info("OpenGL: {} / {}", reinterpret_cast<const char*>(glGetString(GL_RENDERER)),
           reinterpret_cast<const char*>(glGetString(GL_VERSION)));

  // OSG renders into the SDL window's context, which this thread keeps current.
  UseNearestFirstDrawOrder();
  osg::ref_ptr<osgViewer::Viewer> viewer = new osgViewer::Viewer;
  osg::ref_ptr<osgViewer::GraphicsWindowEmbedded> gw = viewer->setUpViewerAsEmbeddedInWindow(0, 0, width, height);
  gw->getEventQueue()->getCurrentEventState()->setMouseYOrientation(Ea::Y_INCREASING_DOWNWARDS);
  viewer->setThreadingModel(osgViewer::Viewer::SingleThreaded);
  viewer->setLightingMode(osg::View::NO_LIGHT);  // the scene has its sun
  viewer->setKeyEventSetsDone(0);                // Esc is handled here, through SDL
  viewer->setSceneData(scene.Root());
  osg::Camera* camera = viewer->getCamera();
  camera->setClearColor(osg::Vec4(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b, 1.0f));
  camera->setComputeNearFarMode(osg::CullSettings::DO_NOT_COMPUTE_NEAR_FAR);
  auto set_projection = [&] {
    PinholeCamera cam = CameraFromFov(static_cast<uint32_t>(std::max(width, 1)), static_cast<uint32_t>(std::max(height, 1)),
                                      def.hfov_deg * M_PI / 180.0);
    cam.near_m = 0.3;
    cam.far_m = 30000.0;
    camera->setViewport(0, 0, width, height);
    camera->setProjectionMatrix(ProjectionMatrix(cam));
  };
  set_projection();
  world::WorldConditions default_conditions;  // what a session without [light]/[weather] sends
  world::UpdateDerived(default_conditions.light);
  std::optional<world::WorldConditions> shown_conditions;  // the live conditions the scene draws

  osg::ref_ptr<FreeManipulator> free_cam = new FreeManipulator;
  osg::ref_ptr<ChaseManipulator> chase_cam = new ChaseManipulator;
  osg::ref_ptr<TopManipulator> top_cam = new TopManipulator;
  const GroundExtent& g = scene.Ground();
  if (def.has_home) free_cam->LookAt(def.home_eye_m, def.home_target_m);
  else free_cam->LookAt(Vec3(g.centre_x_m - 60, g.centre_y_m - 60, 40), Vec3(g.centre_x_m, g.centre_y_m, 0));
  top_cam->SetCentre(Vec3(g.centre_x_m, g.centre_y_m, 0));
  UiState ui;
  ParamPanelModel param_model;
  ParamPanelState param_state;
  ui.camera = def.camera;
  ui.selected = def.follow;
  ui.point_size_px = def.point_size_px;
  ui.colour_by_source = def.colour_by_source;
  auto apply_camera = [&] {
    osgGA::CameraManipulator* m = ui.camera == CameraMode::kChase ? static_cast<osgGA::CameraManipulator*>(chase_cam.get())
                                  : ui.camera == CameraMode::kTop ? static_cast<osgGA::CameraManipulator*>(top_cam.get())
                                                                  : free_cam.get();
    viewer->setCameraManipulator(m, false);
  };
  apply_camera();
  viewer->realize();

  PlotRecorder plots(ui.plot_rate_hz, static_cast<size_t>(ui.plot_rate_hz * ui.plot_seconds));
  const auto start = std::chrono::steady_clock::now();
  auto last_frame = start;
  int frame = 0;
  int exit_code = 0;
  bool quit = false;
  bool served_scene_done = !def.scene_from_server;
  bool naming_done = false;
  std::vector<protocol::EntityState> boxes = def.boxes, drawn;
  // Calibration boards: the world's where they stand, a camera's on its vehicle every frame.
  auto boards = std::make_unique<CalibrationBoards>(def.calibration_boards);
  scene.Root()->addChild(boards->Root());
  std::vector<BoardCamera> board_cameras = def.board_cameras;
  while (!quit && !viewer->done() && !stop.load(std::memory_order_relaxed)) {
    // System events first (seed 004 §2.2), then the display.
    SDL_Event ev;
    while (SDL_PollEvent(&ev)) {
      ImGui_ImplSDL2_ProcessEvent(&ev);
      if (ev.type == SDL_QUIT) quit = true;
      if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_ESCAPE && !ImGui::GetIO().WantCaptureKeyboard) quit = true;
      if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_SIZE_CHANGED) {
        window.DrawableSize(&width, &height);
        gw->resized(0, 0, width, height);
        gw->getEventQueue()->windowResize(0, 0, width, height);
        set_projection();
      }
      ForwardEvent(ev, *gw->getEventQueue());
    }

    // The world at this frame's sim time: copies from the network thread, dead-reckoned here.
    const WorldSnapshot snap = client.Snapshot();
    // Without -c or --road: the road and scene of the session file the server's Welcome carried, once.
    if (!served_scene_done && snap.joined) {
      served_scene_done = true;
      const auto [text, path] = client.SessionFile();
      if (text.empty()) {
        log.info("the server sent no session file: no road drawn (give -c SESSION.toml or --road FILE)");
      } else {
        try {
          const SessionScene served = SessionSceneFromText(text, path);
          scene.SetRoads(served.roads);
          if (!served.environment.empty()) scene.SetEnvironment(served.environment);
          scene.SetSigns(served.signs);
          if (served.conditions) scene.SetConditions(*served.conditions);
          scene.Root()->removeChild(boards->Root());
          boards = std::make_unique<CalibrationBoards>(served.calibration_boards);
          scene.Root()->addChild(boards->Root());
          board_cameras = served.board_cameras;
          boxes = served.boxes;
          const GroundExtent& ground = scene.Ground();
          top_cam->SetCentre(Vec3(ground.centre_x_m, ground.centre_y_m, 0));
          if (served.has_home) free_cam->LookAt(served.home_eye_m, served.home_target_m);
          log.info("drawing the road and scene of the server's session file {} ({} road(s), {} environment objects, "
                   "{} scene boxes)",
                   path.empty() ? std::string("(no path)") : path, served.roads.Roads().size(),
                   served.environment.size(), served.boxes.size());
        } catch (const config::ConfigError& e) {
          log.warn("the server's session file does not load here, so no road is drawn: {}", e.what());
        }
      }
    }
    // The vehicles' names of the session file the server sent ([[node]] vehicle_names), once joined.
    if (!naming_done && snap.joined) {
      naming_done = true;
      const auto [naming_text, naming_path] = client.SessionFile();
      if (!naming_text.empty()) {
        try {
          ui.session_naming = config::SessionNaming(config::LoadSessionText(naming_text, naming_path));
        } catch (const config::ConfigError&) {
          // Logged above when the scene came from it; the node names still name the vehicles.
        }
      }
    }
    const std::vector<protocol::EntityState> entities = snap.world.Displayed(snap.sim_time_ns);
    // The session's static boxes are drawn with them (they are no entities of the world).
    drawn = boxes;
    drawn.insert(drawn.end(), entities.begin(), entities.end());
    // Live light and weather (ctl, events, variators): drawn once they differ from the defaults, which a
    // session without [light]/[weather] keeps and the scene draws as its fixed daylight.
    if (const auto c = client.Conditions(); c && (shown_conditions ? *shown_conditions != *c : *c != default_conditions)) {
      scene.SetConditions(*c);
      shown_conditions = *c;
    }
    scene.Update(drawn, snap.sim_time_ns);
    boards->Follow(board_cameras, entities);
    auto selected = std::find_if(entities.begin(), entities.end(), [&](const auto& e) { return e.id == ui.selected; });
    if (selected == entities.end() && ui.camera != CameraMode::kFree && !entities.empty() && def.follow == 0) {
      selected = entities.begin();  // follow something rather than nothing
      ui.selected = selected->id;
    }
    if (selected != entities.end()) {
      chase_cam->SetTarget(selected->kinematics.pose);
      top_cam->SetCentre(selected->kinematics.pose.position_m);
    }
    // Sensor data: the newest fused clouds and radar scans, placed with their ego's pose at the data's
    // own time (the cloud's reference time, the scan's stamp), so what was measured stays where it was
    // in the world while the ego drives on.
    {
      Pose ego_at;
      auto ego_pose = [&](uint64_t id, int64_t t_ns) -> const Pose* {
        const dr::RemoteTrack* track = snap.world.Track(id);
        if (!track || !track->HasState()) return nullptr;
        ego_at = track->At(t_ns);
        return &ego_at;
      };
      auto fresh = [&](const std::string& id) {
        const auto it = std::find_if(snap.streams.begin(), snap.streams.end(), [&](const auto& st) { return st.stream_id == id; });
        return it == snap.streams.end() || (it->age_s >= 0 && it->age_s < kSensorMaxAgeS);
      };
      std::vector<WorldPoint> points;
      if (ui.show_cloud) {
        for (const auto& [id, cloud] : snap.fused) {
          const Pose* ego = ego_pose(cloud->entity_id, cloud->reference_ns);
          if (!ego || !fresh(id)) continue;
          std::vector<WorldPoint> p = FusedPointsInWorld(*cloud, *ego);
          points.insert(points.end(), p.begin(), p.end());
        }
      }
      std::vector<RadarMarker> markers;
      if (ui.show_radar) {
        for (const auto& [id, scan] : snap.radar) {
          const Pose* ego = ego_pose(scan->header.entity_id, scan->header.stamp_ns);
          if (!ego || !fresh(id)) continue;
          std::vector<RadarMarker> m = RadarMarkersInWorld(*scan, *ego);
          markers.insert(markers.end(), m.begin(), m.end());
        }
      }
      scene.SetPointCloud(points, ui.colour_by_source ? PointColouring::kSource : PointColouring::kIntensity, ui.point_size_px);
      scene.SetRadarMarkers(markers);
      ui.points_drawn = points.size();
      ui.radar_drawn = markers.size();
    }
    plots.SetEntity(ui.selected);
    plots.Record(snap.sim_time_ns, entities);

    viewer->frame();

    window.BeginUi();
    const UiActions actions = DrawPanel(ui, snap, entities, plots);
    // The parameter panel: answers first (every frame, so none pile up), then what the user asked.
    for (const auto& reply : client.TakeReplies()) {
      // A refused session command (the session stays joined and as it was): its reason in the panel.
      if (const auto* st = std::get_if<protocol::SessionStatus>(&reply); st && !st->error.empty()) {
        if (st->error != ui.command_error) log.warn("session command refused: {}", st->error);
        ui.command_error = st->error;
        continue;
      }
      param_model.OnReply(reply);
    }
    param_state.open = ui.show_params;
    const ParamPanelActions param_actions = DrawParamPanel(param_state, param_model);
    ui.show_params = param_state.open;
    window.EndUi();
    if (param_actions.request) client.SendRequest(*param_actions.request);
    if (actions.session) {
      protocol::SessionControl c;
      c.command = *actions.session;
      c.sim_t0_ns = c.command == protocol::SessionControl::Command::kSeek ? static_cast<int64_t>(actions.seek_to_s * 1e9) : 0;
      c.speed = actions.speed;
      client.SendControl(c);
    }
    if (actions.camera_changed) apply_camera();
    if (actions.plot_config_changed)
      plots.Configure(ui.plot_rate_hz, static_cast<size_t>(std::max(1.0f, ui.plot_rate_hz * static_cast<float>(ui.plot_seconds))));

    ++frame;
    if (screenshot && frame >= def.frames) {
      glFinish();
      const std::string error = WritePng(ReadBackBuffer(width, height), def.screenshot_path);
      if (error.empty()) {
        log.info("wrote {} ({} x {} px, frame {}, {} entities, {} points, {} radar objects)", def.screenshot_path, width,
                 height, frame, entities.size(), ui.points_drawn, ui.radar_drawn);
      } else {
        log.error("{}", error);
        exit_code = 1;
      }
      quit = true;
    }
    window.Swap();

    const auto now = std::chrono::steady_clock::now();
    ui.frame_ms = std::chrono::duration<float, std::milli>(now - last_frame).count();
    last_frame = now;
    if (def.exit_after_s > 0 && std::chrono::duration<double>(now - start).count() >= def.exit_after_s) quit = true;
  }
  // OSG's GL objects go while the context still exists.
  viewer->setSceneData(nullptr);
  viewer = nullptr;
  return exit_code;
}

}  // namespace platoon::viewer
