// libFuzzer target: the road-file loader (road::LoadRoadText, the same path as LoadRoadFile), then what
// road users do with a loaded network: evaluate each road along its length, project a point, check links.
// Bad input must give a ConfigError with a message; any other exception or a crash is a bug.
#include "platoon/road/road_file.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const road::RoadNetwork network = road::LoadRoadText(text, "fuzz_road.toml");
    for (const auto& r : network.Roads()) {
      for (int i = 0; i <= 8; ++i) {
        const double s = r.Length() * i / 8.0;
        (void)r.Evaluate(s);
        (void)r.Curvature(s);
        for (int lane = -r.LanesRight(); lane <= r.LanesLeft(); ++lane)
          if (lane != 0) (void)r.LaneCenter(s, lane);
      }
    }
    (void)network.Project(Vec3(10, 5, 0));
    (void)network.CheckLinks();
  } catch (const config::ConfigError& e) {
    if (std::string(e.what()).empty()) {
      std::fprintf(stderr, "fuzz_road: ConfigError without a message\n");
      std::abort();
    }
  }
  return 0;
}
