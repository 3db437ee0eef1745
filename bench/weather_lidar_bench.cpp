// Lidar model cost with weather beside without (docs/BENCHMARKS.md "Lidar in weather"): the same scans on a
// street of vehicle boxes, buildings and a ground plane, alternately in clear air (the baseline, same run)
// and in fog with rain (Koschmieder and Carbonneau extinction, soft echoes from the drops), one thread.
// Prints the median ms per frame of each, the ratio and the points and soft echoes per frame.
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/weather.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

double WeatherBenchNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Ground, 40 buildings and `vehicles` cars in six lanes over +-150 m.
Scene WeatherBenchStreet(int vehicles, uint64_t seed) {
  Scene scene;
  const double g = 500.0;
  const std::vector<Vec3> ground{{-g, -g, 0}, {g, -g, 0}, {g, g, 0}, {-g, g, 0}};
  const std::vector<std::array<uint32_t, 3>> tris{{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tris, SurfaceTag{1, 0, 1});
  for (int i = 0; i < 40; ++i) {
    Pose p;
    const Vec3 half(9.0, 6.0, 6.0 + (i % 5) * 3.0);
    p.position_m = Vec3(-190.0 + (i / 2) * 20.0, (i % 2 ? 1 : -1) * 20.0, half.z());
    scene.AddBox(p, half, SurfaceTag{2, static_cast<uint32_t>(1000 + i), 3});
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> along(-150.0, 150.0);
  for (int i = 0; i < vehicles; ++i) {
    Pose p;
    p.position_m = Vec3(along(rng), (i % 6 - 2.5) * 3.5, 0.75);
    scene.AddBox(p, Vec3(2.3, 0.9, 0.75), SurfaceTag{3, static_cast<uint32_t>(1 + i), 2});
  }
  scene.Commit();
  return scene;
}

struct WeatherBenchFigures {
  double median_ms = 0;
  double points = 0, soft = 0;  // per frame
};

WeatherBenchFigures WeatherBenchMedian(std::vector<double> ms, double points, double soft, int frames) {
  std::sort(ms.begin(), ms.end());
  return WeatherBenchFigures{ms[ms.size() / 2], points / frames, soft / frames};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lidar model cost with fog and rain beside clear air, same run"};
  int frames = 40, vehicles = 150;
  double visibility_m = 100.0, rain_mm_h = 10.0;
  app.add_option("--frames", frames, "Frames per condition and preset")->check(CLI::Range(3, 100000));
  app.add_option("--vehicles", vehicles, "Vehicle boxes on the street")->check(CLI::Range(0, 100000));
  app.add_option("--visibility", visibility_m, "Fog visibility in m")->check(CLI::Range(1.0, 1e5));
  app.add_option("--rain", rain_mm_h, "Rain rate in mm/h")->check(CLI::Range(0.0, 300.0));
  CLI11_PARSE(app, argc, argv);

  // The models' figures for docs/WORLD.md: a 10 % target's range by visibility (VLP-16, noon and night), the
  // radar's range by rain rate (ARS 408-like, 76.5 GHz, 70 m in clear air) and the soft echoes per beam.
  std::printf("lidar (vlp16), 10 %% target at normal incidence: maximum range in m\n");
  std::printf("%12s %10s %10s %12s %14s\n", "visibility", "noon", "night", "alpha 1/m", "soft p/beam");
  for (double v : {0.0, 1000.0, 500.0, 200.0, 100.0, 50.0, 25.0}) {
    world::WorldConditions noon, night;
    noon.weather.fog_visibility_m = night.weather.fog_visibility_m = v;
    night.light.sun_set_directly = true;
    night.light.sun_elevation_deg = -20.0;
    const LidarDef a = LidarInConditions(Vlp16Def(), noon), b = LidarInConditions(Vlp16Def(), night);
    std::printf("%12s %10.1f %10.1f %12.5f %14.4f\n", v > 0 ? std::to_string(static_cast<int>(v)).c_str() : "clear",
                MaxDetectionRangeM(a, 0.1, 0.0), MaxDetectionRangeM(b, 0.1, 0.0), a.extinction_coefficient_per_m,
                MeanSoftEcho(a).detection_probability);
  }
  std::printf("lidar (vlp16) in rain, noon: maximum range in m of a 10 %% target\n");
  for (double r : {0.0, 2.5, 10.0, 25.0, 50.0, 100.0}) {
    world::WorldConditions c;
    c.weather.rain_mm_h = r;
    const LidarDef a = LidarInConditions(Vlp16Def(), c);
    std::printf("%8.1f mm/h %10.1f m  alpha %.5f 1/m  soft p/beam %.4f\n", r, MaxDetectionRangeM(a, 0.1, 0.0),
                a.extinction_coefficient_per_m, MeanSoftEcho(a).detection_probability);
  }
  std::printf("radar (76.5 GHz, horizontal), range of the 70 m sector in rain\n");
  for (double r : {0.0, 2.5, 10.0, 25.0, 50.0, 100.0}) {
    world::WorldConditions c;
    c.weather.rain_mm_h = r;
    const RadarDef d = RadarInConditions(DefaultRadarDef(), c);
    std::printf("%8.1f mm/h %8.2f dB/km %8.2f m\n", r, d.rain_attenuation_db_per_km, d.MaxRangeM(0.0));
  }

  const Scene scene = WeatherBenchStreet(vehicles, 7);
  world::WorldConditions weather;
  weather.weather.fog_visibility_m = visibility_m;
  weather.weather.rain_mm_h = rain_mm_h;
  Pose sensor;
  sensor.position_m = Vec3(0, 0, 1.8);
  std::printf("weather_lidar_bench: %d frames each, %d vehicles, fog %.0f m, rain %.1f mm/h, 1 thread\n", frames,
              vehicles, visibility_m, rain_mm_h);
  std::printf("%-8s %10s %10s %7s %12s %7s %10s %10s %10s\n", "preset", "clear ms", "weather ms", "ratio",
              "no-soft ms", "ratio", "clear pts", "wet pts", "soft");
  struct Preset {
    const char* name;
    LidarDef def;
  };
  for (const Preset& p : {Preset{"vlp16", Vlp16Def()}, Preset{"hdl64", Hdl64Def()}, Preset{"ibeo_lux", IbeoLuxDef()}}) {
    const LidarDef clear = LidarInConditions(p.def, world::WorldConditions{});
    const LidarDef wet = LidarInConditions(p.def, weather);
    LidarDef dim = wet;  // the same extinction without the soft echoes: the cost of the attenuation alone
    dim.backscatter_per_m_sr = 0.0;
    std::vector<double> clear_ms, wet_ms, dim_ms;
    double clear_pts = 0, wet_pts = 0, soft = 0;
    std::mt19937_64 rng(1);
    // Each case keeps its own point vector from scan to scan, as a sensor host does (ScanInto).
    std::vector<LidarPoint> a, b, d;
    // Interleaved, so that a change of the machine's load hits both alike; one warm-up frame each.
    for (int f = -1; f < frames; ++f) {
      double t0 = WeatherBenchNow();
      ScanInto(scene, sensor, Vec3(15, 0, 0), Vec3(0, 0, 0.1), clear, rng, a);
      double t1 = WeatherBenchNow();
      ScanInto(scene, sensor, Vec3(15, 0, 0), Vec3(0, 0, 0.1), wet, rng, b);
      double t2 = WeatherBenchNow();
      ScanInto(scene, sensor, Vec3(15, 0, 0), Vec3(0, 0, 0.1), dim, rng, d);
      double t3 = WeatherBenchNow();
      if (f < 0) continue;
      dim_ms.push_back(1e3 * (t3 - t2));
      clear_ms.push_back(1e3 * (t1 - t0));
      wet_ms.push_back(1e3 * (t2 - t1));
      clear_pts += static_cast<double>(a.size());
      wet_pts += static_cast<double>(b.size());
      for (const LidarPoint& pt : b) soft += pt.class_id == kWeatherClassId ? 1 : 0;
    }
    const WeatherBenchFigures c = WeatherBenchMedian(clear_ms, clear_pts, 0, frames);
    const WeatherBenchFigures w = WeatherBenchMedian(wet_ms, wet_pts, soft, frames);
    const WeatherBenchFigures n = WeatherBenchMedian(dim_ms, 0, 0, frames);
    std::printf("%-8s %10.3f %10.3f %6.2fx %12.3f %6.2fx %10.0f %10.0f %10.0f\n", p.name, c.median_ms, w.median_ms,
                w.median_ms / c.median_ms, n.median_ms, n.median_ms / c.median_ms, c.points, w.points, w.soft);
  }
  return 0;
}
