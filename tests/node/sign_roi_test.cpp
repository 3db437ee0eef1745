// Camera ROI ground truth of traffic signs (docs/WORLD.md "Signs"): the sensor host's scene holds every sign's
// plate as a box of class sign whose detail carries the sign's type and value, and a camera's ROIs copy them.
#include "platoon/config/session.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace platoon;

TEST_CASE("sign roi: a camera ROI of a sign in view has the sign class and its type and value") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 1000\nseed = 3\nlanes = 1\n"
      "# ids in file order: 1 the limit, 2 the stop, 3 the give way (entity ids 0xD0000000 + id)\n[[sign]]\ns_m = 160\ntype = \"speed_limit\"\nvalue = 70\n"
      "[[sign]]\ns_m = 400\ntype = \"stop\"\n"
      "[[sign]]\ns_m = 140\ntype = \"give_way\"\nside = \"left\"\n",
      "roi.toml");
  const road::Road road = road::SessionRoad(session.road);
  sensors::Scene rays;
  node::AddStaticScene(session, rays);
  rays.Commit();
  const uint32_t sign_class = static_cast<uint32_t>(sensors::SemanticClass::kSign);
  const auto targets = sensors::StaticTargets(rays, {sign_class});
  REQUIRE(targets.size() == 3);  // one plate per sign
  // A camera 1.3 m up in the right lane, 40 m before the speed limit, looking along the road.
  const double s0 = 120;
  const Pose camera{road.LaneCenter(s0, -1) + Vec3(0, 0, 1.3), Quat(Eigen::AngleAxisd(road.Heading(s0), Vec3::UnitZ()))};
  sensors::CameraDef def;
  const auto rois = sensors::GroundTruth(targets, &rays, camera, def);
  const auto limit = std::find_if(rois.begin(), rois.end(), [](const sensors::RoiBox& r) { return r.entity_id == 0xD0000001u; });
  REQUIRE(limit != rois.end());
  CHECK(limit->class_id == sign_class);
  CHECK(road::SignDetailType(limit->detail) == road::SignType::kSpeedLimit);
  CHECK(road::SignDetailValue(limit->detail) == 70);
  // About 40 m ahead (the plate stands beside the lane), on the right half of the image.
  CHECK(limit->depth_m == doctest::Approx(40).epsilon(0.1));
  CHECK(0.5 * (limit->u_min_px + limit->u_max_px) > 0.5 * def.image_width_px);
  // The give-way sign on the left faces the other way but is still in view: its own type, no value.
  const auto give = std::find_if(rois.begin(), rois.end(), [](const sensors::RoiBox& r) { return r.entity_id == 0xD0000003u; });
  if (give != rois.end()) CHECK(road::SignDetailType(give->detail) == road::SignType::kGiveWay);
  // The stop sign 280 m ahead: type stop, value 0.
  const auto stop = std::find_if(rois.begin(), rois.end(), [](const sensors::RoiBox& r) { return r.entity_id == 0xD0000002u; });
  REQUIRE(stop != rois.end());
  CHECK(road::SignDetailType(stop->detail) == road::SignType::kStop);
  CHECK(road::SignDetailValue(stop->detail) == 0);
}

TEST_CASE("sign roi: a variable message sign's ROI has what the conditions say it shows, from its next measurement on") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 1000\nseed = 3\nlanes = 1\n"
      "[[sign]]\ns_m = 160\ntype = \"speed_limit\"\nvalue = 100\nmount = \"gantry\"\nvariable = true\n",
      "vms.toml");
  const road::Road road = road::SessionRoad(session.road);
  node::SensorWorld world(session, 0x1234);
  const uint32_t sign_class = static_cast<uint32_t>(sensors::SemanticClass::kSign);
  const double s0 = 120;
  const Pose camera{road.LaneCenter(s0, -1) + Vec3(0, 0, 1.3), Quat(Eigen::AngleAxisd(road.Heading(s0), Vec3::UnitZ()))};
  sensors::CameraDef def;
  auto plate_detail = [&] {
    const sensors::Scene& scene = world.SceneAt(0);
    const auto rois = sensors::GroundTruth(sensors::StaticTargets(scene, {sign_class}), &scene, camera, def);
    const auto plate = std::find_if(rois.begin(), rois.end(), [](const sensors::RoiBox& r) { return r.entity_id == 0xD0000001u; });
    REQUIRE(plate != rois.end());
    return plate->detail;
  };
  CHECK(plate_detail() == road::SignDetail(road::SignType::kSpeedLimit, 100));  // as placed
  world::WorldConditions c = session.conditions;
  c.variable_signs = {{1, static_cast<uint8_t>(road::SignType::kSpeedLimit), 60.0}};
  world.SetConditions(c);
  CHECK(plate_detail() == road::SignDetail(road::SignType::kSpeedLimit, 60));
  c.variable_signs = {{1, static_cast<uint8_t>(road::SignType::kBlank), 0.0}};
  world.SetConditions(c);
  CHECK(road::SignDetailType(plate_detail()) == road::SignType::kBlank);
  // A type number out of range changes nothing.
  c.variable_signs = {{1, 200, 0.0}};
  world.SetConditions(c);
  CHECK(road::SignDetailType(plate_detail()) == road::SignType::kBlank);
  // The posts and the beam keep their own class and no detail.
  const auto poles = sensors::StaticTargets(world.SceneAt(0), {static_cast<uint32_t>(sensors::SemanticClass::kPole)});
  for (const auto& p : poles)
    if (p.entity_id == 0xD0000001u) CHECK(p.detail == 0);
}
