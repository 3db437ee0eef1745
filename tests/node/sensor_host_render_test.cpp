// Camera images of the sensor role (node/src/sensor_host.cpp, render = "rgb8" | "png"): the rendered
// vehicle lies inside the ROI the same frame publishes for it. Needs an X display: part of
// platoon_render_tests, which ctest runs under xvfb-run (tests/CMakeLists.txt).
#include "../support/camera_context.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/viewer/image.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

using namespace platoon;
using namespace platoon::node;

namespace {

// The frame's image as RGB8, whatever its encoding.
viewer::Image Decode(const protocol::CameraFrame& f) {
  viewer::Image img;
  if (f.encoding == "png") {
    const std::string error = viewer::DecodePng(f.image, &img);
    REQUIRE_MESSAGE(error.empty(), error);
  } else {
    REQUIRE(f.encoding == "rgb8");
    REQUIRE(f.image.size() == size_t{f.width} * f.height * 3);
    img.width = f.width;
    img.height = f.height;
    img.rgb.assign(f.image.begin(), f.image.end());
  }
  REQUIRE(img.width == f.width);
  REQUIRE(img.height == f.height);
  return img;
}

}  // namespace

TEST_CASE("sensor host camera: the rendered vehicle's pixels lie inside its published ROI (rgb8 and png)") {
  // Two cameras on one host, one per encoding, off-centre mounting, yawed and pitched a little.
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 500\nseed = 2\nlanes = 2\n"
      "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
      "[[node.sensor]]\nid = \"raw\"\ntype = \"camera\"\nimage_width_px = 640\nimage_height_px = 360\nrate_hz = 10\n"
      "position = [1.8, 0.3, 1.3]\nrpy_deg = [0, 3, -4]\nrender = \"rgb8\"\n"
      "[[node.sensor]]\nid = \"png\"\ntype = \"camera\"\nimage_width_px = 640\nimage_height_px = 360\nrate_hz = 10\n"
      "position = [1.8, 0.3, 1.3]\nrpy_deg = [0, 3, -4]\nrender = \"png\"\n",
      "cams.toml");
  SensorHostModule host(session, session.nodes[0],
                        std::make_shared<spdlog::logger>("cams", std::make_shared<spdlog::sinks::null_sink_mt>()));
  testing::CameraContext context;
  const uint64_t target = VehicleId("target", 0);
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0), 0.0),
                    testing::StandingCar(target, Vec3(18, -1.0, 0), 0.3)};

  // Frames are taken at whole multiples of 100 ms: one with the target, one without.
  host.Step(StepInfo{50'000'000, 0}, context);
  host.Step(StepInfo{100'000'000, 0}, context);
  REQUIRE(context.frames.size() == 2);
  context.remote.pop_back();
  host.Step(StepInfo{200'000'000, 0}, context);
  REQUIRE(context.frames.size() == 4);

  for (int cam = 0; cam < 2; ++cam) {
    const protocol::CameraFrame& with = context.frames[cam];
    const protocol::CameraFrame& without = context.frames[2 + cam];
    CAPTURE(with.header.sensor_id);
    CHECK(with.encoding == (cam == 0 ? "rgb8" : "png"));
    const auto roi = std::find_if(with.rois.begin(), with.rois.end(),
                                  [&](const protocol::CameraRoi& r) { return r.entity_id == (target & 0xffffffffu); });
    REQUIRE(roi != with.rois.end());
    CHECK(without.rois.empty());
    const viewer::Image a = Decode(with), b = Decode(without);
    // The vehicle is what differs between the two frames.
    double u0 = std::numeric_limits<double>::infinity(), v0 = u0, u1 = -u0, v1 = -u0;
    size_t changed = 0;
    for (uint32_t j = 0; j < a.height; ++j)
      for (uint32_t i = 0; i < a.width; ++i) {
        if (a.At(i, j) == b.At(i, j)) continue;
        ++changed;
        u0 = std::min<double>(u0, i);
        u1 = std::max<double>(u1, i + 1.0);
        v0 = std::min<double>(v0, j);
        v1 = std::max<double>(v1, j + 1.0);
      }
    MESSAGE(with.header.sensor_id << ": ROI [" << roi->u_min << ", " << roi->u_max << "] x [" << roi->v_min << ", "
                                  << roi->v_max << "], vehicle pixels [" << u0 << ", " << u1 << "] x [" << v0 << ", " << v1
                                  << "], " << changed << " px");
    const double w = roi->u_max - roi->u_min, h = roi->v_max - roi->v_min;
    CHECK(w > 40);
    CHECK(changed > 0.5 * w * h);  // the car fills most of its box's projection
    // Every vehicle pixel inside the ROI (1 px for rasterisation at the edges) ...
    CHECK(u0 >= roi->u_min - 1.0);
    CHECK(u1 <= roi->u_max + 1.0);
    CHECK(v0 >= roi->v_min - 1.0);
    CHECK(v1 <= roi->v_max + 1.0);
    // ... and the ROI tight around them: the box drawn is the box projected. Only the tyres reach the
    // box's bottom face, and they sit inside its corners, so the lowest pixels are a little higher.
    CHECK(u0 <= roi->u_min + 0.05 * w);
    CHECK(u1 >= roi->u_max - 0.05 * w);
    CHECK(v0 <= roi->v_min + 0.05 * h);
    CHECK(v1 >= roi->v_max - 0.12 * h);
  }
  // Both encodings carry the same picture.
  CHECK(Decode(context.frames[0]).rgb == Decode(context.frames[1]).rgb);
}

namespace sensor_host_light_detail {

// Mean luma (0..255) of the image's rows [row0, row1).
double MeanLuma(const viewer::Image& img, uint32_t row0, uint32_t row1) {
  double sum = 0;
  for (uint32_t v = row0; v < row1; ++v)
    for (uint32_t u = 0; u < img.width; ++u) {
      const uint8_t* p = &img.rgb[3 * (size_t{v} * img.width + u)];
      sum += 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    }
  return sum / (double(row1 - row0) * img.width);
}

// One rgb8 frame of a camera on `ego` in the session `light_weather` ([light]/[weather] text), with the
// server's conditions `live` (none: nothing received yet).
viewer::Image CameraFrameIn(const std::string& light_weather, const std::optional<world::WorldConditions>& live) {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 500\nseed = 2\nlanes = 2\n" + light_weather +
          "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
          "[[node.sensor]]\nid = \"raw\"\ntype = \"camera\"\nimage_width_px = 320\nimage_height_px = 180\nrate_hz = 10\n"
          "position = [1.8, 0, 1.3]\nrender = \"rgb8\"\n",
      "light.toml");
  SensorHostModule host(session, session.nodes[0],
                        std::make_shared<spdlog::logger>("cams", std::make_shared<spdlog::sinks::null_sink_mt>()));
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0), 0.0)};
  context.conditions = live;
  host.Step(StepInfo{50'000'000, 0}, context);  // the first step schedules, the frame comes at 100 ms
  host.Step(StepInfo{100'000'000, 0}, context);
  REQUIRE(context.frames.size() == 1);
  return Decode(context.frames[0]);
}

}  // namespace sensor_host_light_detail

TEST_CASE("sensor host camera: images are drawn in the session's light and follow a live change of it") {
  using namespace sensor_host_light_detail;
  world::WorldConditions noon;
  world::UpdateDerived(noon.light);
  world::WorldConditions night = noon;
  night.light.time_of_day_h = 0.5;
  world::UpdateDerived(night.light);
  REQUIRE(night.light.sun_elevation_deg < -10);
  // The sky: the top quarter of the image.
  const double day_sky = MeanLuma(CameraFrameIn("", noon), 0, 45);
  const double night_file = MeanLuma(CameraFrameIn("[light]\ntime_of_day_h = 0.5\n", night), 0, 45);
  // A day session whose server has since set the night (ctl, an event, a variator).
  const double night_live = MeanLuma(CameraFrameIn("", night), 0, 45);
  MESSAGE("sky luma: day " << day_sky << ", night from the file " << night_file << ", night set live " << night_live);
  CHECK(day_sky > 100);
  CHECK(night_file < 0.25 * day_sky);
  CHECK(night_live < 0.25 * day_sky);
  // Fog given in the file greys the far road: the image's middle rows lose contrast against the sky.
  world::WorldConditions fog = noon;
  fog.weather.fog_visibility_m = 30;
  const viewer::Image foggy = CameraFrameIn("[weather]\nfog_visibility_m = 30\n", fog);
  const viewer::Image clear = CameraFrameIn("", noon);
  const double clear_gap = std::abs(MeanLuma(clear, 0, 45) - MeanLuma(clear, 100, 180));
  const double fog_gap = std::abs(MeanLuma(foggy, 0, 45) - MeanLuma(foggy, 100, 180));
  MESSAGE("sky-to-ground luma gap: clear " << clear_gap << ", fog 30 m " << fog_gap);
  CHECK(fog_gap < clear_gap);
}
