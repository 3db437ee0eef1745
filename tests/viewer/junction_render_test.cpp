// Traffic through a junction as people see it from above (docs/ROADS.md "Traffic through junctions"): the four-way
// junction of configs/roads/junctions.xodr with its connecting roads drawn as asphalt, its stop signs, and network
// traffic after a minute of driving, every vehicle on the asphalt. Picture as a PNG when PLATOON_WORLD_PICTURES names a folder.
// Needs an X display: part of platoon_render_tests, which ctest runs under xvfb-run.
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/lane_graph.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/vehicle/network_traffic.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace platoon;
using namespace platoon::viewer;

namespace junction_render_test_detail {

double JrLuma(const Image& img, const PinholeCamera& cam, const Pose& camera, const Vec3& p) {
  Eigen::Vector2d uv;
  REQUIRE(ProjectPoint(cam, camera, p, &uv));
  const auto px = img.At(static_cast<uint32_t>(std::floor(uv.x())), static_cast<uint32_t>(std::floor(uv.y())));
  return 0.2126 * px[0] + 0.7152 * px[1] + 0.0722 * px[2];
}

}  // namespace junction_render_test_detail
using namespace junction_render_test_detail;

TEST_CASE("junction render: the four-way junction's connecting roads are asphalt and its traffic drives on them") {
  const road::OpenDriveMap map = road::LoadOpenDriveMapFile(std::string(PLATOON_SOURCE_DIR) + "/configs/roads/junctions.xodr");
  const road::RoadNetwork network(map.roads);
  const road::LaneGraph graph(network, map.junctions);
  vehicle::NetworkTrafficDef def = vehicle::DefaultNetworkTrafficDef();
  def.vehicles = 120;
  def.idm.desired_speed_mps = 13.9;
  vehicle::NetworkTraffic traffic(graph, def);
  for (int k = 0; k < 1200; ++k) traffic.Step(0.05);
  std::vector<protocol::EntityState> cars;
  for (const auto& c : traffic.Cars()) {
    protocol::EntityState e;
    e.id = VehicleId("town", c.index);
    e.kind = protocol::EntityKind::kCar;
    e.kinematics = traffic.State(c, 60'000'000'000);
    cars.push_back(e);
  }
  SceneGraph scene;
  scene.SetRoads(network);
  // The map's stop signs (on the north and south arms), placed as a session places them.
  const config::SessionDef session = config::LoadSessionText(
      "[road]\nfile = \"" + std::string(PLATOON_SOURCE_DIR) + "/configs/roads/junctions.xodr\"\n", "junctions.toml");
  const auto signs = road::SessionPlacedSigns(session);
  CHECK(signs.size() == 2);
  scene.SetSigns(signs);
  world::WorldConditions conditions;
  conditions.light.sun_set_directly = true;
  conditions.light.sun_elevation_deg = 60.0;
  conditions.light.sun_azimuth_deg = 180.0;
  scene.SetConditions(conditions);
  scene.Update(cars, 60'000'000'000);
  // Straight down on J1 from 55 m, north up.
  const PinholeCamera cam = CameraFromFov(900, 900, 70.0 * M_PI / 180.0);
  Pose camera;
  camera.position_m = Vec3(0, 0, 55);
  camera.orientation = Quat(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()) * Eigen::AngleAxisd(M_PI / 2, Vec3::UnitY()));
  OffscreenRenderer renderer(900, 900);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  const Image img = renderer.Render(camera, cam);
  if (const char* folder = std::getenv("PLATOON_WORLD_PICTURES"))
    CHECK(WritePng(img, std::string(folder) + "/junction_four_way.png").empty());
  // Asphalt in the junction's middle and on each right-turn lane's middle (radius 9.75 m about the corner), ground
  // in the corners between the arms.
  const double ground = JrLuma(img, cam, camera, Vec3(-28, 28, 0));
  const double middle = JrLuma(img, cam, camera, Vec3(0, 0, 0));
  MESSAGE("luma: ground " << ground << ", junction middle " << middle);
  CHECK(std::abs(middle - ground) > 20.0);
  for (const auto& [cx, cy] : {std::pair{-15.0, -15.0}, {15.0, -15.0}, {15.0, 15.0}, {-15.0, 15.0}}) {
    const double r = 9.75 / std::sqrt(2.0);
    const double luma = JrLuma(img, cam, camera, Vec3(cx - std::copysign(r, cx), cy - std::copysign(r, cy), 0));
    CAPTURE(cx);
    CAPTURE(cy);
    CHECK(std::abs(luma - middle) < 25.0);
  }
  // Vehicles in view, and none where there is no lane (they are drawn where their lanes are).
  int in_view = 0;
  for (const auto& e : cars) {
    const Vec3 p = e.kinematics.pose.position_m;
    if (std::abs(p.x()) < 35 && std::abs(p.y()) < 35) ++in_view;
  }
  MESSAGE(in_view << " vehicles in view");
  CHECK(in_view >= 3);
}
