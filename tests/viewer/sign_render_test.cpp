// Traffic signs drawn (viewer/src/sign_textures.cpp through SceneGraph::SetSigns): a row of German and a row of
// UK signs in an offscreen frame; the speed limit's plate shows its red ring and black digits where the pinhole
// model puts it. With PLATOON_SIGNS_IMAGE set the frame is written there as PNG (docs/images/signs_set.png).
// Needs an X display (xvfb-run).
#include "platoon/config/session.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/session_scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace platoon;

namespace sign_render_test_detail {

// Two rows of signs beside a straight road at s = 40 (Germany, 2 m high) and s = 41 (UK, 3.4 m high).
std::string SignSetSession() {
  const char* types[] = {"speed_limit", "end_of_limit", "end_of_restrictions", "stop", "give_way", "no_overtaking",
                         "end_of_no_overtaking", "warning_curve_left", "warning_crossing", "warning_general", "direction"};
  std::string text = "[road]\nfile = \"\"\ngenerate_length_m = 200\nseed = 1\nlanes = 1\n";
  for (int row = 0; row < 2; ++row) {
    double lateral = 0.5;
    for (const char* t : types) {
      const std::string type = t;
      const bool wide = type == "direction";
      const double value = type == "direction" ? 12 : (row ? 30 : 50);
      text += "[[sign]]\ns_m = " + std::to_string(40 + row) + "\ntype = \"" + type + "\"\nvalue = " + std::to_string(value) +
              "\ncountry = \"" + (row ? "uk" : "de") + "\"\nlateral_m = " + std::to_string(lateral + (wide ? 0.6 : 0)) +
              "\nsize_m = 0.9\nheight_m = " + (row ? "3.4" : "2.0") + "\n";
      lateral += wide ? 2.4 : 1.2;
    }
  }
  return text;
}

}  // namespace sign_render_test_detail

TEST_CASE("sign render: a speed limit plate shows its red ring and black digits where the camera sees it") {
  const config::SessionDef session = config::LoadSessionText(sign_render_test_detail::SignSetSession(), "signs.toml");
  const viewer::SessionScene drawn = viewer::SessionSceneOf(session);
  REQUIRE(drawn.signs.size() == 22);
  viewer::SceneGraph scene;
  scene.SetRoads(drawn.roads);
  scene.SetSigns(drawn.signs);
  CHECK(scene.SignCount() == 22);
  const viewer::PinholeCamera cam = viewer::CameraFromFov(1200, 560, 72 * M_PI / 180);
  viewer::OffscreenRenderer renderer(cam.width_px, cam.height_px);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  // In the field 11 m before the rows, level with their middle, looking along the road (+x: the faces).
  const road::Road road = road::SessionRoad(session.road);
  const double y_mid = road.RightEdgeOffset() - 8.0;
  const Pose eye{Vec3(29, y_mid, 2.6), Quat(Eigen::AngleAxisd(0.0, Vec3::UnitZ()))};
  const viewer::Image img = renderer.Render(eye, cam);
  if (const char* path = std::getenv("PLATOON_SIGNS_IMAGE")) CHECK(viewer::WritePng(img, path).empty());

  // The German 50: sample its plate on a grid of the face's own coordinates.
  const road::PlacedSign* limit = nullptr;
  for (const auto& ps : drawn.signs)
    if (ps.sign.type == road::SignType::kSpeedLimit && ps.sign.country == road::SignCountry::kDe) limit = &ps;
  REQUIRE(limit);
  const double h = limit->sign.size_m;
  int red = 0, black = 0, ring_samples = 0, inner_samples = 0;
  for (int a = -20; a <= 20; ++a)
    for (int b = -20; b <= 20; ++b) {
      const double fx = a / 40.0, fz = b / 40.0, r = std::hypot(fx, fz);  // in plate heights, face centred
      if (r > 0.47) continue;
      // +w (the viewer's right on the face) is -y for a face looking towards -x.
      const Vec3 p = limit->pose.plate_m + Vec3(0.0, -fx * h, fz * h);
      Eigen::Vector2d uv;
      REQUIRE(viewer::ProjectPoint(cam, eye, p, &uv));
      REQUIRE(uv.x() >= 0);
      REQUIRE(uv.x() < img.width);
      REQUIRE(uv.y() >= 0);
      REQUIRE(uv.y() < img.height);
      const auto px = img.At(static_cast<uint32_t>(uv.x()), static_cast<uint32_t>(uv.y()));
      const bool is_red = px[0] > 140 && px[1] < 80 && px[2] < 80, is_black = px[0] < 70 && px[1] < 70 && px[2] < 70;
      if (r > 0.41 && r < 0.46) ring_samples += 1, red += is_red ? 1 : 0;
      if (r < 0.3) inner_samples += 1, black += is_black ? 1 : 0;
    }
  MESSAGE("ring: " << red << " of " << ring_samples << " samples red; digits: " << black << " of " << inner_samples
                   << " inner samples black");
  CHECK(red > 0.6 * ring_samples);
  CHECK(black > 0.08 * inner_samples);  // the digits' strokes
  CHECK(black < 0.6 * inner_samples);   // on white
}

TEST_CASE("sign render: a blank variable message sign shows the limit the conditions set, redrawn live") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 300\nstraight_share = 1\nlanes = 2\n"
      "[[sign]]\ns_m = 60\ntype = \"blank\"\nmount = \"gantry\"\nvariable = true\n",
      "vms.toml");
  const viewer::SessionScene drawn = viewer::SessionSceneOf(session);
  REQUIRE(drawn.signs.size() == 1);
  viewer::SceneGraph scene;
  scene.SetRoads(drawn.roads);
  scene.SetSigns(drawn.signs);
  const viewer::PinholeCamera cam = viewer::CameraFromFov(800, 600, 60 * M_PI / 180);
  viewer::OffscreenRenderer renderer(cam.width_px, cam.height_px);
  const road::PlacedSign& vms = drawn.signs.front();
  const Pose eye{vms.pose.plate_m - Vec3(12.0, 0.0, 0.0), Quat(Eigen::AngleAxisd(0.0, Vec3::UnitZ()))};
  // Red pixels on the plate's ring (0.41..0.46 plate heights from its centre).
  auto red_ring = [&]() {
    renderer.SetScene(scene.Root(), scene.SkyColour());
    const viewer::Image img = renderer.Render(eye, cam);
    const double h = vms.sign.size_m;
    int red = 0, samples = 0;
    for (int a = 0; a < 72; ++a) {
      const double angle = a * 2 * M_PI / 72, r = 0.435;
      const Vec3 p = vms.pose.plate_m + Vec3(0.0, -r * h * std::cos(angle), r * h * std::sin(angle));
      Eigen::Vector2d uv;
      REQUIRE(viewer::ProjectPoint(cam, eye, p, &uv));
      const auto px = img.At(static_cast<uint32_t>(uv.x()), static_cast<uint32_t>(uv.y()));
      ++samples;
      red += px[0] > 140 && px[1] < 80 && px[2] < 80 ? 1 : 0;
    }
    return static_cast<double>(red) / samples;
  };
  const double blank = red_ring();
  world::WorldConditions c;
  c.variable_signs = {{1, static_cast<uint8_t>(road::SignType::kSpeedLimit), 80}};
  scene.SetConditions(c);  // as the broadcast brings signs.vms_1 = "speed_limit 80"
  const double limit = red_ring();
  c.variable_signs = {{1, static_cast<uint8_t>(road::SignType::kBlank), 0}};
  scene.SetConditions(c);
  const double blank_again = red_ring();
  MESSAGE("red ring samples: blank " << blank << ", speed_limit 80 " << limit << ", blank again " << blank_again);
  CHECK(blank < 0.05);
  CHECK(limit > 0.6);
  CHECK(blank_again < 0.05);
  CHECK(scene.SignCount() == 1);
}
