// The environment and the generated road as a session file sets them (docs/WORLD.md "Environment",
// docs/ROADS.md "Generated roads"): [scene] environment presets and the [scene.<kind>] tables, [road]'s
// lanes per direction, one-way roads and curviness distributions, and their errors.
#include "platoon/config/session.hpp"
#include "platoon/road/session_road.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace session_environment_test_detail {

using namespace platoon;

config::SessionDef EnvLoad(const std::string& text) {
  auto s = config::LoadSessionText(text, "env.toml");
  config::ValidateSession(s);
  return s;
}

std::string EnvLoadError(const std::string& text) {
  try {
    EnvLoad(text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

size_t EnvCountOf(const std::vector<road::EnvObject>& objects, road::ObjectKind kind) {
  return static_cast<size_t>(std::count_if(objects.begin(), objects.end(), [&](const auto& o) { return o.kind == kind; }));
}

const std::string kEnvRoad = "[road]\ngenerate_length_m = 2000\nseed = 3\n";

}  // namespace session_environment_test_detail


TEST_CASE("session environment: the urban preset places more buildings and street lights than the rural one, fewer trees") {
  using namespace session_environment_test_detail;
  const auto rural = road::SessionEnvironment(EnvLoad(kEnvRoad + "[scene]\nroad_environment = true\n"));
  const auto urban = road::SessionEnvironment(EnvLoad(kEnvRoad + "[scene]\nroad_environment = true\nenvironment = \"urban\"\n"));
  const auto b_r = EnvCountOf(rural, road::ObjectKind::kBuilding), b_u = EnvCountOf(urban, road::ObjectKind::kBuilding);
  const auto t_r = EnvCountOf(rural, road::ObjectKind::kTree), t_u = EnvCountOf(urban, road::ObjectKind::kTree);
  const auto l_r = EnvCountOf(rural, road::ObjectKind::kStreetLight), l_u = EnvCountOf(urban, road::ObjectKind::kStreetLight);
  MESSAGE("2 km: rural " << b_r << " buildings, " << t_r << " trees, " << l_r << " street lights; urban " << b_u
                         << " buildings, " << t_u << " trees, " << l_u << " street lights");
  CHECK(b_u > 2 * b_r);
  CHECK(t_u < t_r);
  CHECK(l_r == 0);
  CHECK(l_u > 20);
  CHECK(road::SessionEnvironment(EnvLoad(kEnvRoad + "[scene]\nenvironment = \"urban\"\n")).empty());  // road_environment off
}

TEST_CASE("session environment: a kind's table sets its sides, density and lateral range, the others keep the preset") {
  using namespace session_environment_test_detail;
  const auto s = EnvLoad(kEnvRoad +
                      "[scene]\nroad_environment = true\n[scene.trees]\nenabled = false\n"
                      "[scene.buildings]\ndensity_left_per_100m = 0\ndensity_right_per_100m = 4\nlateral_m = [20, 30]\n"
                      "size_min_m = [8, 8, 5]\nsize_max_m = [10, 10, 6]\n");
  const auto objects = road::SessionEnvironment(s);
  const road::Road road = road::SessionRoad(s.road);
  CHECK(EnvCountOf(objects, road::ObjectKind::kTree) == 0);
  CHECK(EnvCountOf(objects, road::ObjectKind::kGuardRail) > 0);  // the rural preset's
  size_t buildings = 0;
  for (const auto& o : objects) {
    if (o.kind != road::ObjectKind::kBuilding) continue;
    ++buildings;
    CHECK(o.side == -1);
    // Its near face: the centre's distance from the reference line, less half its width and the road's half.
    const double centre = std::hypot(o.position_m.x() - road.ReferencePoint(o.s_m).x(),
                                     o.position_m.y() - road.ReferencePoint(o.s_m).y());
    const double near = centre - 0.5 * o.size_m.y() + road.RightEdgeOffset();
    CHECK(near >= 20.0 - 1e-6);
    CHECK(near <= 30.0 + 1e-6);
    CHECK(o.size_m.x() >= 8.0);
    CHECK(o.size_m.z() <= 6.0);
  }
  MESSAGE(buildings << " buildings on the right over 2 km at 4 per 100 m asked (overlaps and tries cost some)");
  CHECK(buildings > 20);
  CHECK(EnvLoadError(kEnvRoad + "[scene.buildings]\nlateral_m = [30, 20]\n").find("env.toml:5: scene.buildings.lateral_m") !=
        std::string::npos);
  CHECK(EnvLoadError("[scene.trees]\nheight = 3\n").find("height") != std::string::npos);
  CHECK(EnvLoadError("[scene]\nenvironment = \"desert\"\n").find("rural") != std::string::npos);
  CHECK(EnvLoadError("[scene.street_lights]\nsize_min_m = [1, 1, 9]\nsize_max_m = [1, 1, 8]\n").find("size_max_m") !=
        std::string::npos);
}

TEST_CASE("session road: oncoming_lanes 0 makes a one-way road, lane_width_m every lane's width") {
  using namespace session_environment_test_detail;
  const auto one_way = road::SessionRoad(EnvLoad(kEnvRoad + "lanes = 3\noncoming_lanes = 0\nlane_width_m = 3.25\n").road);
  CHECK(one_way.LanesLeft() == 0);
  CHECK(one_way.LanesRight() == 3);
  CHECK(one_way.RightEdgeOffset() == doctest::Approx(-9.75));
  CHECK(one_way.LeftEdgeOffset() == doctest::Approx(0.0));
  const auto both = road::SessionRoad(EnvLoad(kEnvRoad + "lanes = 1\noncoming_lanes = 2\n").road);
  CHECK(both.LanesLeft() == 2);
  CHECK(both.LanesRight() == 1);
  CHECK(EnvLoadError(kEnvRoad + "oncoming_lanes = 9\n").find("road.oncoming_lanes") != std::string::npos);
}

TEST_CASE("session road: curve radii and the straight share shape the generated road") {
  using namespace session_environment_test_detail;
  // Only curves, radii 200-250 m: every arc's |k| within [1/250, 1/200], transitions between.
  const auto curvy = road::SessionRoad(EnvLoad(kEnvRoad + "straight_share = 0\ncurve_radius_m = [200, 250]\n").road);
  int arcs = 0;
  for (const auto& sec : curvy.Def().sections) {
    CHECK(std::abs(sec.curvature_start_1pm) <= 1.0 / 200 + 1e-12);
    CHECK(std::abs(sec.curvature_end_1pm) <= 1.0 / 200 + 1e-12);
    if (sec.curvature_start_1pm == sec.curvature_end_1pm && sec.curvature_start_1pm != 0) {
      ++arcs;
      CHECK(std::abs(sec.curvature_start_1pm) >= 1.0 / 250 - 1e-12);
    }
  }
  CHECK(arcs >= 5);
  // Only straights: a straight line.
  const auto straight = road::SessionRoad(EnvLoad(kEnvRoad + "straight_share = 1\n").road);
  for (const auto& sec : straight.Def().sections) CHECK(sec.curvature_end_1pm == 0.0);
  // Every curve turns left.
  const auto left = road::SessionRoad(EnvLoad(kEnvRoad + "left_turn_share = 1\n").road);
  for (const auto& sec : left.Def().sections) CHECK(sec.curvature_start_1pm + sec.curvature_end_1pm >= 0.0);
  CHECK(EnvLoadError(kEnvRoad + "curve_radius_m = [300, 100]\n").find("road.curve_radius_m: expected [min, max] with min <= max") !=
        std::string::npos);
  CHECK(EnvLoadError(kEnvRoad + "straight_length_m = [10]\n").find("road.straight_length_m") != std::string::npos);
}
