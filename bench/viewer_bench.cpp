// Viewer frame-time benchmark: 200 vehicles driving on a four-lane road, rendered offscreen at 1280 x 720
// (viewer/offscreen_renderer.hpp) from a chase camera, every frame re-posing every model
// (SceneGraph::Update) and reading the image back. Baseline, same run and same camera path: the same road
// scene with no vehicles. The road's generated environment (road::GenerateEnvironment, rural and urban
// settings; SceneGraph::SetEnvironment: objects, sky dome, fog) is measured in the same run, with and
// without vehicles. Then the driver seat's own window (viewer/seat_window.hpp, 1280 x 720, swapped without
// vsync) from the driver's eye with the rural environment and the same vehicles: as it was before the own
// car (no cockpit, no mirrors), with the cockpit, and with the cockpit and its three mirrors, each of which
// renders the scene once more into a texture; and a seat on three 1280 x 720 screens (off-axis frustums,
// the own car and mirrors on the centre one). With --conditions instead: the world's conditions
// (SceneGraph::SetConditions: daylight, night with every vehicle's headlights and the street lights, fog,
// night in fog, rain) on the urban environment, for the camera (offscreen) and the seat, daylight first and
// last as the baseline. Needs an X display: run under xvfb-run (Mesa llvmpipe
// renders on the CPU).
#include "percentile.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/seat_window.hpp"
#include "platoon/viewer/viewer_app.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

using namespace platoon;
using namespace platoon::viewer;

namespace {

using platoon::bench::Percentile;

double NowMs() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// A 2 km road, two lanes each way: straight, a long left bend, straight.
road::Road MakeRoad() {
  road::RoadDef def = road::DefaultRoadDef();
  def.sections = {road::LineSection(400), road::ClothoidSection(60, 0, 0.004), road::ArcSection(600, 0.004),
                  road::ClothoidSection(60, 0.004, 0), road::LineSection(900)};
  def.lane_widths_left_m = {3.5, 3.5};
  def.lane_widths_right_m = {3.5, 3.5};
  def.markings = road::DefaultMarkings(2, 2);
  return road::Road(def);
}

// `n` vehicles spread over the four lanes, 600 m ahead of s0, at sim time t_s (right lanes drive
// forward at 25 m/s, left lanes towards the camera at 22 m/s).
std::vector<protocol::EntityState> Traffic(const road::Road& road, int n, double s0, double t_s) {
  std::vector<protocol::EntityState> out;
  const int lanes[4] = {-1, -2, 1, 2};
  for (int i = 0; i < n; ++i) {
    const int lane = lanes[i % 4];
    const bool forward = lane < 0;
    const double slot = 600.0 * (i / 4) / std::max(1, (n + 3) / 4);
    const double s = std::fmod(s0 + slot + (forward ? 25.0 : -22.0) * t_s + 2000.0, road.Length());
    const road::RoadPoint p = road.Evaluate(s);
    protocol::EntityState e;
    e.id = 1000 + static_cast<uint64_t>(i);
    e.kind = i % 10 == 9 ? protocol::EntityKind::kTruck : protocol::EntityKind::kCar;
    if (e.kind == protocol::EntityKind::kTruck) e.box_size_m = Vec3(12.0, 2.5, 3.6);
    e.kinematics.pose.position_m = road.LaneCenter(s, lane);
    const double heading = p.heading_rad + (forward ? 0.0 : M_PI);
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
    e.lights.brake = (i % 7) == 0;
    e.lights.headlights = true;
    out.push_back(e);
  }
  return out;
}

struct Stats {
  std::vector<double> frame_ms, update_ms;
};

Stats Run(OffscreenRenderer& renderer, const road::Road& road, int vehicles, int frames, int warmup,
          const std::vector<road::EnvObject>* environment = nullptr, bool fog = true,
          const world::WorldConditions* conditions = nullptr) {
  SceneDef def = DefaultSceneDef();
  def.atmosphere.fog = fog;
  SceneGraph scene(def);
  scene.SetRoads(road::RoadNetwork({road.Def()}));
  if (environment) scene.SetEnvironment(*environment);
  if (conditions) scene.SetConditions(*conditions);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  const PinholeCamera cam = CameraFromFov(1280, 720, 70.0 * M_PI / 180.0);
  Stats st;
  Image img;
  for (int f = -warmup; f < frames; ++f) {
    const double t_s = (f + warmup) / 60.0;
    // Chase camera 10 m behind a point driving the right lane at 25 m/s, 3.5 m up, looking 5 deg down.
    const double s_cam = 50.0 + 25.0 * t_s;
    const road::RoadPoint p = road.Evaluate(s_cam);
    Pose camera;
    camera.position_m = road.LaneCenter(s_cam, -1) + Vec3(-10.0 * std::cos(p.heading_rad), -10.0 * std::sin(p.heading_rad), 3.5);
    camera.orientation = Quat(Eigen::AngleAxisd(p.heading_rad, Vec3::UnitZ()) * Eigen::AngleAxisd(5.0 * M_PI / 180.0, Vec3::UnitY()));
    const double t0 = NowMs();
    scene.Update(Traffic(road, vehicles, 60.0, t_s), static_cast<int64_t>(t_s * 1e9));
    const double t1 = NowMs();
    renderer.Render(camera, cam, &img);
    const double t2 = NowMs();
    if (f >= 0) {
      st.frame_ms.push_back(t2 - t0);
      st.update_ms.push_back(t1 - t0);
    }
  }
  return st;
}

// Three 16:9 monitors (0.6 x 0.3375 m image areas, 1280 x 720 px each) around the default eye: the centre
// one 0.7 m ahead, the side ones turned 50 deg towards the eye, 30 mm of bezel between image areas.
std::vector<SeatScreen> ThreeScreens() {
  const Vec3 eye = CockpitState{}.eye_in_vehicle.position_m;
  const double w = 0.6, h = 0.3375, d = 0.7, gap = 0.03, yaw = 50.0 * M_PI / 180.0;
  const Vec3 up(0, 0, h), lo(0, 0, eye.z() - 0.5 * h);
  ScreenCorners c{Vec3(eye.x() + d, eye.y() + 0.5 * w, 0) + lo, Vec3(eye.x() + d, eye.y() - 0.5 * w, 0) + lo, Vec3()};
  c.upper_left_m = c.lower_left_m + up;
  const Vec3 lr(std::sin(yaw), -std::cos(yaw), 0), rr(-std::sin(yaw), -std::cos(yaw), 0);
  ScreenCorners l, r;
  l.lower_right_m = c.lower_left_m - gap * lr, l.lower_left_m = l.lower_right_m - w * lr, l.upper_left_m = l.lower_left_m + up;
  r.lower_left_m = c.lower_right_m + gap * rr, r.lower_right_m = r.lower_left_m + w * rr, r.upper_left_m = r.lower_left_m + up;
  std::vector<SeatScreen> out;
  // Side by side on one X screen of 3840 px or more (overlapping windows would copy fewer pixels).
  int x = 0;
  for (const ScreenCorners& k : {l, c, r}) {
    out.push_back(SeatScreen{k, 0, false, 1280, 720, std::array<int, 2>{x, 0}, false, "screen"});
    x += 1280;
  }
  out[1].main = true;
  return out;
}

// The seat window at the driver's eye (1.2 m up, in the right lane at 25 m/s), with `vehicles` around it;
// with `three_screens`, on the three monitors of ThreeScreens (the own car and mirrors on the centre one).
Stats RunSeat(const road::Road& road, int vehicles, int frames, int warmup, const std::vector<road::EnvObject>& environment,
              bool cockpit, bool mirrors, bool three_screens = false, bool lod = true,
              const world::WorldConditions* conditions = nullptr) {
  SceneDef scene_def = DefaultSceneDef();
  if (!lod) scene_def.far_model_below_px = 0.0;  // every vehicle in full at any distance
  SceneGraph scene(scene_def);
  scene.SetRoads(road::RoadNetwork({road.Def()}));
  scene.SetEnvironment(environment);
  if (conditions) scene.SetConditions(*conditions);
  SeatWindowDef def = DefaultSeatWindowDef();
  def.cockpit = cockpit;
  if (!mirrors) def.mirrors.clear();
  if (three_screens) def.screens = ThreeScreens();
  SeatWindow window(def, scene);
  CockpitState st;
  Stats out;
  for (int f = -warmup; f < frames; ++f) {
    const double t_s = (f + warmup) / 60.0;
    const double s_eye = 50.0 + 25.0 * t_s;
    const road::RoadPoint p = road.Evaluate(s_eye);
    const Quat heading(Eigen::AngleAxisd(p.heading_rad, Vec3::UnitZ()));
    const Pose body{road.LaneCenter(s_eye, -1), heading};
    const Pose eye{body.position_m + heading * st.eye_in_vehicle.position_m, heading};
    st.speed_mps = 25.0;
    st.sim_ns = static_cast<int64_t>(t_s * 1e9);
    const GearRpm g = AutomaticGearDisplay(st.speed_mps, 0.3);
    st.gear = g.gear;
    st.rpm = g.rpm;
    const double t0 = NowMs();
    window.PollEvents();
    if (conditions) {
      // The own car is not drawn (the cockpit is), but its headlights light the road.
      protocol::EntityState own;
      own.id = 1;
      own.kind = protocol::EntityKind::kCar;
      own.kinematics.pose = body;
      scene.SetOwnVehicle(own);
    }
    scene.Update(Traffic(road, vehicles, 60.0, t_s), st.sim_ns);
    const double t1 = NowMs();
    window.SetCockpit(st);
    window.Render(eye, {}, {});
    const double t2 = NowMs();
    if (f >= 0) {
      out.frame_ms.push_back(t2 - t0);
      out.update_ms.push_back(t1 - t0);
    }
  }
  return out;
}

void Print(const char* name, const Stats& s) {
  double sum = 0, usum = 0;
  for (double x : s.frame_ms) sum += x;
  for (double x : s.update_ms) usum += x;
  const double n = static_cast<double>(s.frame_ms.size());
  std::printf("%-22s frame mean %7.2f ms  p50 %7.2f ms  p99 %7.2f ms  (%.1f fps; scene update mean %.3f ms)\n", name,
              sum / n, Percentile(s.frame_ms, 50), Percentile(s.frame_ms, 99), 1000.0 * n / sum, usum / n);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"viewer_bench: offscreen frame time with 200 vehicles and with the road's environment against the same\n"
               "road alone.\n"
               "Run under xvfb-run -a -s \"-screen 0 1280x1024x24\" when there is no display."};
  int frames = 200, warmup = 10, vehicles = 200;
  app.add_option("--frames", frames, "Frames measured per scene")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--warmup", warmup, "Frames rendered first and not measured")->check(CLI::Range(0, 10000))->capture_default_str();
  app.add_option("--vehicles", vehicles, "Vehicles in the loaded scene")->check(CLI::Range(1, 100000))->capture_default_str();
  bool no_lod_baseline = false;
  app.add_flag("--no-lod", no_lod_baseline,
               "Also run the seat with cockpit and mirrors with every vehicle's full model at any distance (no far model)");
  bool conditions_only = false;
  app.add_flag("--conditions", conditions_only,
               "Only compare the world's conditions (daylight, night lights, fog, night in fog, rain) for the camera and the seat");
  CLI11_PARSE(app, argc, argv);

  try {
    std::optional<OffscreenRenderer> renderer_holder(std::in_place, 1280, 720);
    OffscreenRenderer& renderer = *renderer_holder;
    const road::Road road = MakeRoad();
    std::printf("viewer_bench: 1280 x 720, %d frames after %d warm-up, GL %s\n", frames, warmup, renderer.GlInfo().c_str());
    // Baseline first and last, so drift of the machine's load shows up as a difference between them.
    road::EnvironmentDef rural_def = road::DefaultEnvironmentDef(), urban_def = road::UrbanEnvironmentDef();
    rural_def.seed = urban_def.seed = 1;
    const std::vector<road::EnvObject> rural = road::GenerateEnvironment(road, rural_def);
    const std::vector<road::EnvObject> urban = road::GenerateEnvironment(road, urban_def);
    std::printf("environment: rural %zu objects, urban %zu objects on the %.0f m road\n", rural.size(), urban.size(),
                road.Length());
    if (conditions_only) {
      // Daylight first and last (the baseline), night with every vehicle's headlights and the street lights
      // (the nearest 8 of each light each view), fog of 150 m, both, rain; urban environment, all vehicles.
      world::WorldConditions day, night, fog, night_fog, rain;
      night.light.sun_elevation_deg = night_fog.light.sun_elevation_deg = -20.0;
      night.light.headlights = night.light.street_lights = night_fog.light.headlights = night_fog.light.street_lights = true;
      fog.weather.fog_visibility_m = night_fog.weather.fog_visibility_m = 150.0;
      rain.weather.rain_mm_h = 10.0;
      rain.weather.road_wetness = 0.8;
      const std::pair<const char*, const world::WorldConditions*> cases[] = {
          {"daylight", &day}, {"night lights", &night}, {"fog 150 m", &fog}, {"night lights + fog", &night_fog}, {"rain 10 mm/h", &rain}, {"daylight again", &day}};
      std::vector<double> camera_mean, seat_mean;
      std::printf("camera (offscreen 1280 x 720), urban environment, %d vehicles:\n", vehicles);
      for (const auto& [name, c] : cases) {
        const Stats st = Run(renderer, road, vehicles, frames, warmup, &urban, true, c);
        Print(name, st);
        camera_mean.push_back(std::accumulate(st.frame_ms.begin(), st.frame_ms.end(), 0.0) / static_cast<double>(st.frame_ms.size()));
      }
      renderer_holder.reset();
      std::printf("seat window (1280 x 720, cockpit and mirrors), urban environment, %d vehicles:\n", vehicles);
      for (const auto& [name, c] : cases) {
        const Stats st = RunSeat(road, vehicles, frames, warmup, urban, true, true, false, true, c);
        Print(name, st);
        seat_mean.push_back(std::accumulate(st.frame_ms.begin(), st.frame_ms.end(), 0.0) / static_cast<double>(st.frame_ms.size()));
      }
      for (const auto& [what, m] : {std::pair{"camera", &camera_mean}, std::pair{"seat", &seat_mean}}) {
        const double base_ms = 0.5 * ((*m)[0] + (*m)[5]);
        std::printf("%s: against daylight %.2f ms: night lights %+.1f %%, fog %+.1f %%, night lights + fog %+.1f %%, rain %+.1f %%\n",
                    what, base_ms, 100.0 * ((*m)[1] / base_ms - 1.0), 100.0 * ((*m)[2] / base_ms - 1.0),
                    100.0 * ((*m)[3] / base_ms - 1.0), 100.0 * ((*m)[4] / base_ms - 1.0));
      }
      return 0;
    }
    const Stats base = Run(renderer, road, 0, frames, warmup);
    const Stats env_rural = Run(renderer, road, 0, frames, warmup, &rural);
    const Stats env_rural_clear = Run(renderer, road, 0, frames, warmup, &rural, false);
    const Stats env_urban = Run(renderer, road, 0, frames, warmup, &urban);
    const Stats loaded = Run(renderer, road, vehicles, frames, warmup);
    const Stats loaded_env = Run(renderer, road, vehicles, frames, warmup, &rural);
    const Stats base2 = Run(renderer, road, 0, frames, warmup);
    Print("baseline (0 vehicles)", base);
    Print("rural environment", env_rural);
    Print("rural, no fog", env_rural_clear);
    Print("urban environment", env_urban);
    char name[64];
    std::snprintf(name, sizeof name, "%d vehicles", vehicles);
    Print(name, loaded);
    std::snprintf(name, sizeof name, "%d vehicles + rural", vehicles);
    Print(name, loaded_env);
    Print("baseline again", base2);
    double b = 0, l = 0;
    for (double x : base.frame_ms) b += x;
    for (double x : base2.frame_ms) b += x;
    for (double x : loaded.frame_ms) l += x;
    b /= static_cast<double>(base.frame_ms.size() + base2.frame_ms.size());
    l /= static_cast<double>(loaded.frame_ms.size());
    std::printf("vehicles add %.2f ms per frame (%.2fx the baseline mean, %.3f ms per vehicle)\n", l - b, l / b,
                (l - b) / vehicles);

    // The seat's own window, after the offscreen renderer's context is gone.
    renderer_holder.reset();
    const Stats seat = RunSeat(road, vehicles, frames, warmup, rural, false, false);
    const Stats seat_cockpit = RunSeat(road, vehicles, frames, warmup, rural, true, false);
    const Stats seat_mirrors = RunSeat(road, vehicles, frames, warmup, rural, true, true);
    const Stats seat2 = RunSeat(road, vehicles, frames, warmup, rural, false, false);
    const Stats seat3 = RunSeat(road, vehicles, frames, warmup, rural, true, true, true);
    std::printf("seat window, driver's eye, rural environment, %d vehicles:\n", vehicles);
    Print("seat as before", seat);
    Print("seat + cockpit", seat_cockpit);
    Print("seat + cockpit+mirrors", seat_mirrors);
    Print("seat as before again", seat2);
    Print("3 screens+cockpit+mirr", seat3);
    if (no_lod_baseline) {
      const Stats seat_no_lod = RunSeat(road, vehicles, frames, warmup, rural, true, true, false, false);
      const Stats seat_lod = RunSeat(road, vehicles, frames, warmup, rural, true, true, false, true);
      Print("cockpit+mirrors no LOD", seat_no_lod);
      Print("cockpit+mirrors LOD", seat_lod);
    }
  } catch (const WindowError& e) {
    std::fprintf(stderr, "viewer_bench: seat window: %s\n", e.what());
    return 1;
  } catch (const RenderError& e) {
    std::fprintf(stderr, "viewer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
