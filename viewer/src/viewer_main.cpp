// platoon-viewer: watch a platoon session (and steer it) in a 3D view with a control panel.
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/process/memory.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/session/discovery.hpp"
#include "platoon/transport/fault_injector.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/session_scene.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/viewer/viewer_app.hpp"
#include "platoon/viewer/world_client.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

}  // namespace

int main(int argc, char** argv) {
  // Megabyte messages (clouds, fused frames, keyframes) reuse freed heap instead of new mappings.
  platoon::process::KeepLargeAllocations();
  using namespace platoon;
  CLI::App app{"platoon-viewer: a 3D view of a platoon session with a control panel. Joins the sync server as an\n"
               "observer, shows every vehicle dead-reckoned between broadcasts, the node table and live plots,\n"
               "and starts, pauses and stops the session. Mouse: left drag turns, right drag pans, wheel zooms;\n"
               "free camera keys W/A/S/D/Q/E (Shift: faster); Esc quits."};
  std::string config_path, server, log_level = "info", road_path, camera = "free", screenshot, fault_spec, key_file;
  std::string name = "viewer", session_name;
  int port = -1;
  viewer::ViewerAppDef def;
  app.add_option("--key", key_file,
                 "Client secret key file (CURVE) when the session has CURVE on (default: the -c file's [security] key)")
      ->check(CLI::ExistingFile);
  auto* config_option =
      app.add_option("-c,--config", config_path, "Session file (TOML): server address and ports, [road], [clock], [faults]")
          ->check(CLI::ExistingFile);
  auto* server_option = app.add_option(
      "-s,--server", server,
      "Server address, or HOST:PORT with its control port (overrides [session] server_host). Without -s, --port "
      "and -c: $PLATOON_SERVER (HOST:PORT), else the session running on this machine (its session file as with -c), "
      "else 127.0.0.1:7400");
  auto* port_option = app.add_option("--port", port, "Server control port (overrides [server] control_port; default 7400)")
                          ->check(CLI::Range(1, 65535));
  app.add_option("--session", session_name,
                 "The running session of this name (platoon run on this machine announces it), when several run")
      ->excludes(config_option)
      ->excludes(server_option)
      ->excludes(port_option);
  app.add_option("-n,--name", name, "Name in the session's node table")->capture_default_str();
  app.add_option("--road", road_path, "Road file to draw instead of the session's [road]")->check(CLI::ExistingFile);
  app.add_option("--camera", camera, "Initial camera: free, chase or top")
      ->check(CLI::IsMember({"free", "chase", "top"}))
      ->capture_default_str();
  app.add_option("--follow", def.follow, "Entity id to select and follow (default: the first one seen)");
  app.add_option("--width", def.width_px, "Window width, px")->check(CLI::Range(64, 8192))->capture_default_str();
  app.add_option("--height", def.height_px, "Window height, px")->check(CLI::Range(64, 8192))->capture_default_str();
  app.add_option("--fov", def.hfov_deg, "Horizontal field of view, deg")
      ->check(config::cli::Finite())
      ->check(CLI::Range(10.0, 150.0))->capture_default_str();
  app.add_option("--screenshot", screenshot, "Render --frames frames, write this PNG and exit (works under xvfb-run)");
  app.add_option("--frames", def.frames, "Frames rendered before the screenshot")->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--exit-after", def.exit_after_s, "Exit after this many seconds")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")->capture_default_str();
  app.add_option("--fault", fault_spec, "Receive-path faults, e.g. drop=0.1,delay_ms=5 (see platoon-server --help)");
  bool no_sensor_data = false, lidar = false;
  app.add_flag("--no-sensor-data", no_sensor_data, "Do not subscribe to the fused and radar streams of the node table");
  app.add_flag("--lidar", lidar, "Also connect to raw lidar streams (counted in the Sensors panel, not drawn)");
  app.add_option("--point-size", def.point_size_px, "Point size of the fused cloud, px")
      ->check(config::cli::Finite())
      ->check(CLI::Range(1.0, 8.0))
      ->capture_default_str();
  app.add_flag("--colour-by-source", def.colour_by_source, "Colour fused points by source lidar instead of intensity");
  app.add_flag("!--no-vsync", def.vsync, "Render as fast as possible instead of at the display's refresh rate");
  if (auto code = config::cli::Parse(app, argc, argv)) return *code;

  config::SessionDef session;
  std::optional<transport::CurveDef> curve;  // CURVE keys when the session has it on
  viewer::SessionScene drawn;  // the road, environment and boxes drawn besides the entities
  std::shared_ptr<spdlog::logger> log;
  session::ResolvedServer found;  // where the server is, and which source said so
  std::vector<std::string> notes;
  try {
    log::ParseLevel(log_level);
    if (!config_path.empty()) session = config::LoadSession(config_path);
    // The server (session::FindServer's order): -s HOST[:PORT] and --port, -c, --session, PLATOON_SERVER, the
    // one session running here, 127.0.0.1:7400.
    session::ServerQuery query;
    query.server_flag = server;
    query.port_flag = port > 0 ? port : 0;
    query.port_optional = true;
    query.session_flag = session_name;
    if (!config_path.empty()) {
      query.config = session::ServerEndpoint{session.server_host, session.server.control_port};
      query.config_path = config_path;
    }
    found = session::FindServer(query);
    notes = found.notes;
    // A running session found here: its file, as if given with -c (road, clock, faults, keys).
    if (found.session && config_path.empty()) {
      try {
        session = config::LoadSession(found.session->session_file);
        config_path = found.session->session_file;
      } catch (const config::ConfigError& e) {
        notes.push_back(std::string("the running session's file no longer loads; drawing no road: ") + e.what());
      }
    }
    session.server_host = found.endpoint.host;
    session.server.control_port = found.endpoint.port;
    if (!fault_spec.empty()) session.faults = transport::ParseFaultSpec(fault_spec, session.faults);
    curve = config::LoadClientCurve(session, key_file);
    // What is drawn besides the entities: --road alone, else the session's road (none without [road]),
    // environment and scene boxes (only when a session file was given).
    if (!road_path.empty()) drawn = viewer::SceneOfRoads(road::LoadRoadFile(road_path));
    else if (!config_path.empty()) drawn = viewer::SessionSceneOf(session);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "platoon-viewer: %s\n", e.what());
    return kExitUsage;
  } catch (const session::DiscoveryError& e) {
    std::fprintf(stderr, "platoon-viewer: %s\n", e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "platoon-viewer: %s\n", e.what());
    return kExitUsage;
  }
  viewer::ParseCameraMode(camera, &def.camera);
  def.has_home = drawn.has_home;
  def.home_eye_m = drawn.home_eye_m;
  def.home_target_m = drawn.home_target_m;
  def.boxes = drawn.boxes;
  def.calibration_boards = drawn.calibration_boards;
  def.board_cameras = drawn.board_cameras;
  def.screenshot_path = screenshot;
  // No session file here: draw the road and scene of the one the server sends (a replay's is the recorded).
  def.scene_from_server = config_path.empty() && road_path.empty();
  def.title = "platoon viewer - " + session.name;
  log = log::MakeLogger("viewer", log_level);
  log->info("server {} {}", found.endpoint.Text(), found.from);
  for (const auto& note : notes) log->warn("{}", note);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  viewer::WorldClientDef client_def;
  client_def.server_host = session.server_host;
  client_def.control_port = session.server.control_port;
  client_def.name = name;
  client_def.clock = session.clock;
  client_def.faults = session.faults;
  client_def.sensor_data = !no_sensor_data;
  client_def.subscribe_lidar = lidar;
  client_def.curve = curve;
  client_def.server_silence_s = 3.0 * session.server.lost_timeout_s;
  client_def.world_hold_s = session.server.lost_timeout_s + session.server.stale_grace_s;
  try {
    viewer::SceneGraph scene;
    scene.SetRoads(drawn.roads);
    if (!drawn.environment.empty()) scene.SetEnvironment(drawn.environment);
    if (!drawn.signs.empty()) scene.SetSigns(drawn.signs);
    if (drawn.conditions) scene.SetConditions(*drawn.conditions);  // [light], [weather] (docs/WORLD.md)
    viewer::WorldClient client(client_def, log);
    client.Start();
    const int code = viewer::RunViewerApp(def, scene, client, *log, g_stop);
    client.Stop();
    return code == 0 ? kExitOk : kExitRuntime;
  } catch (const viewer::WindowError& e) {
    log->error("{}", e.what());
    return kExitRuntime;
  }
}
