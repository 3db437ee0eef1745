// What the viewer draws of a session from its file's text (viewer/src/session_scene.cpp): the text a
// server's Welcome carries gives the road and scenery the file gives, a relative road file found beside
// the path the server names.
#include "platoon/viewer/session_scene.hpp"

#include "platoon/road/road_file.hpp"
#include "platoon/road/session_road.hpp"

#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

TEST_CASE("session scene: a session file's text gives its generated road, its scenery and a camera home above the road") {
  const std::string text =
      "[session]\nname = \"scene\"\n\n[road]\ngenerate_length_m = 600\nseed = 3\nlanes = 2\n\n[scene]\nroad_environment = true\n";
  const platoon::viewer::SessionScene scene = platoon::viewer::SessionSceneFromText(text, "");
  const platoon::config::SessionDef def = platoon::config::LoadSessionText(text, "scene.toml");
  const platoon::road::RoadNetwork want = platoon::road::SessionRoadNetwork(def.road);
  REQUIRE(scene.roads.Roads().size() == want.Roads().size());
  REQUIRE_FALSE(scene.roads.Roads().empty());
  const platoon::road::Road& r = scene.roads.Roads().front();
  CHECK(r.Length() == doctest::Approx(want.Roads().front().Length()));
  CHECK(scene.environment.size() == platoon::road::SessionEnvironment(def).size());
  CHECK_FALSE(scene.environment.empty());
  REQUIRE(scene.has_home);
  CHECK(scene.home_eye_m.z() == doctest::Approx(r.PointAt(0, 0).z() + 12.0));
  CHECK((scene.home_target_m - r.PointAt(40, 0)).norm() < 1e-9);
  // Without road_environment: the road, no scenery.
  const platoon::viewer::SessionScene bare = platoon::viewer::SessionSceneFromText("[road]\ngenerate_length_m = 600\n", "");
  CHECK_FALSE(bare.roads.Roads().empty());
  CHECK(bare.environment.empty());
}

TEST_CASE("session scene: a relative road file is read beside the path the server names, and a missing one is an error") {
  platoon::testing::TempDir dir;
  std::ifstream ring(std::string(PLATOON_SOURCE_DIR) + "/configs/roads/ring.toml");
  REQUIRE(ring.good());
  std::stringstream ring_text;
  ring_text << ring.rdbuf();
  const std::string ring_path = dir.Write("ring.toml", ring_text.str());
  const std::string text = "[session]\nname = \"ring\"\n\n[road]\nfile = \"ring.toml\"\n";
  const platoon::viewer::SessionScene scene = platoon::viewer::SessionSceneFromText(text, dir.Path() + "/session.toml");
  const platoon::road::RoadNetwork want = platoon::road::LoadRoadFile(ring_path);
  REQUIRE_FALSE(want.Roads().empty());
  CHECK(scene.roads.Roads().size() == want.Roads().size());
  CHECK(scene.roads.Roads().front().Length() == doctest::Approx(want.Roads().front().Length()));
  // Named beside a folder without the file: the error names the road file.
  platoon::testing::TempDir elsewhere;
  try {
    (void)platoon::viewer::SessionSceneFromText(text, elsewhere.Path() + "/session.toml");
    FAIL("a missing road file was not reported");
  } catch (const platoon::config::ConfigError& e) {
    CHECK(std::string(e.what()).find("ring.toml") != std::string::npos);
  }
}

TEST_CASE("session scene: a session without [road] draws no road, and its scene boxes stand where the file puts them") {
  const std::string text =
      "[session]\nname = \"farm\"\n\n[scene]\n"
      "[[scene.box]]\nid = 7\nposition = [30, 40, 0]\nsize = [0.4, 0.4, 3]\n"
      "[[scene.box]]\nid = 8\nposition = [-10, 20, 0]\nsize = [20, 0.5, 2]\nyaw_deg = 90\n";
  const platoon::viewer::SessionScene scene = platoon::viewer::SessionSceneFromText(text, "");
  CHECK(scene.roads.Roads().empty());
  CHECK(scene.environment.empty());
  REQUIRE(scene.boxes.size() == 2);
  const platoon::config::SessionDef def = platoon::config::LoadSessionText(text, "farm.toml");
  REQUIRE(def.scene.boxes.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const auto& e = scene.boxes[k];
    const auto& b = def.scene.boxes[k];
    CHECK(e.id == b.id);
    CHECK(e.kind == platoon::protocol::EntityKind::kStaticObject);
    CHECK(e.box_size_m == b.size_m);
    // The box's footprint centre (the entity's origin moved by BoxCentreInBody along its heading) is the
    // file's position.
    const platoon::Vec3 centre = e.kinematics.pose.position_m +
                                 e.kinematics.pose.orientation * platoon::Vec3(platoon::BoxCentreInBody(e.box_size_m).x(), 0, 0);
    CHECK((centre - b.position_m).norm() < 1e-9);
  }
  // The camera's home looks at the boxes' centre from above.
  REQUIRE(scene.has_home);
  CHECK((scene.home_target_m - platoon::Vec3(10, 30, 0)).norm() < 1e-9);
  CHECK(scene.home_eye_m.z() > 10);
  // A road given alone (the viewer's --road) has its home at the road.
  const platoon::viewer::SessionScene road_only = platoon::viewer::SceneOfRoads(
      platoon::road::SessionRoadNetwork(platoon::config::LoadSessionText("[road]\ngenerate_length_m = 300\n", "r.toml").road));
  REQUIRE(road_only.has_home);
  CHECK(road_only.boxes.empty());
}

TEST_CASE("session scene: the light and weather are drawn only when the file gives them") {
  const auto plain = config::LoadSessionText("[road]\ngenerate_length_m = 300\n", "plain.toml");
  CHECK_FALSE(viewer::GivenConditions(plain).has_value());
  CHECK_FALSE(viewer::SessionSceneOf(plain).conditions.has_value());
  const auto night = config::LoadSessionText("[road]\ngenerate_length_m = 300\n[light]\ntime_of_day_h = 23\n", "night.toml");
  const auto given = viewer::GivenConditions(night);
  REQUIRE(given.has_value());
  CHECK(given->light.time_of_day_h == doctest::Approx(23));
  CHECK(given->light.sun_elevation_deg < 0);
  CHECK(viewer::SessionSceneOf(night).conditions == given);
  const auto fog = config::LoadSessionText("[weather]\nfog_visibility_m = 80\n", "fog.toml");
  REQUIRE(viewer::GivenConditions(fog).has_value());
  CHECK(viewer::GivenConditions(fog)->weather.fog_visibility_m == doctest::Approx(80));
}
