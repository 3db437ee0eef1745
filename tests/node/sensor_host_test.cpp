// The sensor role's camera without a display (node/src/sensor_host.cpp): one clear warning, then
// ROIs only. (With a display: tests/node/sensor_host_render_test.cpp, under xvfb-run.)
#include "../support/camera_context.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/node/traffic.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <variant>

using namespace platoon;
using namespace platoon::node;

namespace {

// Unsets an environment variable for the scope.
class Unset {
 public:
  explicit Unset(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    unsetenv(name);
  }
  ~Unset() {
    if (old_) setenv(name_, old_->c_str(), 1);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// One host "cams" with a 10 Hz camera sending ROIs only, attached to "ego".
config::SessionDef SmallCameraSession() {
  return config::LoadSessionText(
      "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
      "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nimage_width_px = 64\nimage_height_px = 36\nrate_hz = 10\n"
      "position = [1.8, 0, 1.3]\nrender = \"none\"\n",
      "cams.toml");
}

}  // namespace

TEST_CASE("sensor host camera: without a display, render = \"png\" warns once and sends ROIs only") {
  Unset display("DISPLAY");
  const config::SessionDef session = config::LoadSessionText(
      "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
      "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nimage_width_px = 320\nimage_height_px = 180\nrate_hz = 10\n"
      "position = [1.8, 0, 1.3]\nrender = \"png\"\n",
      "cams.toml");
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto log = std::make_shared<spdlog::logger>("cams", sink);
  SensorHostModule host(session, session.nodes[0], log);
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0)),
                    testing::StandingCar(VehicleId("target", 0), Vec3(15, 0, 0))};
  for (int k = 0; k <= 3; ++k) host.Step(StepInfo{k * 100'000'000 + 1, 0}, context);
  REQUIRE(context.frames.size() == 3);
  for (const auto& f : context.frames) {
    CHECK(f.encoding.empty());
    CHECK(f.image.empty());
    CHECK(f.rois.size() == 1);
  }
  int warnings = 0;
  for (const auto& line : sink->last_formatted())
    if (line.find("camera 'front': cannot render images") != std::string::npos &&
        line.find("$DISPLAY is not set") != std::string::npos && line.find("sending ROIs only") != std::string::npos)
      ++warnings;
  CHECK(warnings == 1);
}

TEST_CASE("sensor config: camera render must be none, rgb8 or png") {
  auto error_of = [](const std::string& value) -> std::string {
    try {
      const auto s = config::LoadSessionText("[[node]]\nname = \"c\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
                                             "[[node.sensor]]\nid = \"f\"\ntype = \"camera\"\nrender = \"" + value + "\"\n",
                                             "cams.toml");
      // The sensor tables are read when the host is made.
      SensorHostModule host(s, s.nodes[0], spdlog::default_logger());
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("rgb8").empty());
  CHECK(error_of("png").empty());
  const std::string bad = error_of("jpeg");
  CHECK(bad.find("cams.toml:8") == 0);
  CHECK(bad.find("render") != std::string::npos);
  CHECK(bad.find("jpeg") != std::string::npos);
}

TEST_CASE("sensor host: a host more than a period late skips to the latest instant due and keeps its phase") {
  Unset display("DISPLAY");
  const config::SessionDef session = SmallCameraSession();
  SensorHostModule host(session, session.nodes[0], std::make_shared<spdlog::logger>("cams"));
  testing::CameraContext context;
  // No ego yet at 0.1 s and 0.2 s: nothing measured.
  for (int64_t t : {1'000'000, 100'000'001, 200'000'001}) host.Step(StepInfo{t, 0}, context);
  CHECK(context.frames.empty());
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0))};
  // The ego appears at 0.261 s; later a step 0.16 s late (0.405 -> 0.661 s), then on time again.
  for (int64_t t : {261'000'000, 300'000'500, 405'000'000, 661'000'000, 700'000'100, 800'000'100})
    host.Step(StepInfo{t, 0}, context);
  std::vector<int64_t> stamps;
  for (const auto& f : context.frames) stamps.push_back(f.header.stamp_ns);
  // Always on whole multiples of the 0.1 s period, never two for one step, never one instant twice.
  CHECK(stamps == std::vector<int64_t>{200'000'000, 300'000'000, 400'000'000, 600'000'000, 700'000'000, 800'000'000});
  std::vector<std::string> fields;
  host.Summarize(fields);
  REQUIRE(fields.size() == 1);
  // Skipped: 0.1 s (no ego until 0.261 s) and 0.5 s (the late step).
  CHECK(fields[0].find("\"skipped\":2") != std::string::npos);
}

TEST_CASE("sensor host: in lock-step no instant is skipped, the host catches up one instant a step") {
  Unset display("DISPLAY");
  const config::SessionDef session = SmallCameraSession();
  SensorHostModule host(session, session.nodes[0], std::make_shared<spdlog::logger>("cams"));
  testing::CameraContext context;
  context.step_ns = 10'000'000;
  host.Step(StepInfo{10'000'000, 0}, context);
  // The ego is seen only at 0.26 s (a fusion node may have seen it long before and awaits 0.1 s and 0.2 s).
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0))};
  for (int64_t t = 260'000'000; t <= 410'000'000; t += 10'000'000) host.Step(StepInfo{t, 10'000'000}, context);
  std::vector<int64_t> stamps;
  for (const auto& f : context.frames) stamps.push_back(f.header.stamp_ns);
  CHECK(stamps == std::vector<int64_t>{100'000'000, 200'000'000, 300'000'000, 400'000'000});
  std::vector<std::string> fields;
  host.Summarize(fields);
  CHECK(fields[0].find("\"skipped\":0") != std::string::npos);
}
