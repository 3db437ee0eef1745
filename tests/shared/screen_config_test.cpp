// A driver seat's [[node.screen]] tables (shared/src/config/session.cpp, ReadDriverKeys): corners, display,
// window keys, and errors that name the file, the line and the key.
#include "platoon/config/session.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace platoon;

namespace screen_config_test_detail {

std::string ScSession(const std::string& node_extra) {
  return "[road]\ngenerate_length_m = 500\nseed = 1\nlanes = 2\n"
         "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\neye = [1.2, 0.35, 1.15]\n" +
         node_extra;
}

std::string ScError(const std::string& node_extra) {
  try {
    (void)config::LoadSessionText(ScSession(node_extra), "screens.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

// A 0.6 x 0.34 m screen 0.7 m ahead of the eye, facing it.
const char* kScFront =
    "[[node.screen]]\nlower_left = [1.9, 0.65, 0.98]\nlower_right = [1.9, 0.05, 0.98]\nupper_left = [1.9, 0.65, 1.32]\n";

}  // namespace screen_config_test_detail
using screen_config_test_detail::ScError;
using screen_config_test_detail::ScSession;
using screen_config_test_detail::kScFront;

TEST_CASE("screen config: tables give corners and window keys in file order") {
  const config::SessionDef plain = config::LoadSessionText(ScSession(""), "screens.toml");
  REQUIRE(plain.nodes.size() == 1);
  CHECK(plain.nodes[0].screen.empty());
  const config::SessionDef s = config::LoadSessionText(
      ScSession(std::string(kScFront) + "display = 1\nfullscreen = true\nmain = true\n" + kScFront +
                "width_px = 800\nheight_px = 450\nposition_px = [1920, 0]\n"),
      "screens.toml");
  const auto& sc = s.nodes[0].screen;
  REQUIRE(sc.size() == 2);
  CHECK(sc[0].lower_left_m.isApprox(Vec3(1.9, 0.65, 0.98)));
  CHECK(sc[0].lower_right_m.isApprox(Vec3(1.9, 0.05, 0.98)));
  CHECK(sc[0].upper_left_m.isApprox(Vec3(1.9, 0.65, 1.32)));
  CHECK(sc[0].display == 1);
  CHECK(sc[0].fullscreen);
  CHECK(sc[0].main);
  CHECK_FALSE(sc[1].main);
  CHECK(sc[1].width_px == 800);
  CHECK(sc[1].height_px == 450);
  REQUIRE(sc[1].position_px.has_value());
  CHECK((*sc[1].position_px)[0] == 1920);
  CHECK(sc[1].where.find("screens.toml:") == 0);
  CHECK(sc[1].where.find("screen[1]") != std::string::npos);
}

TEST_CASE("screen config: corners off a rectangle by more than 1 mm are refused naming upper_left") {
  // upper_left 2 mm along the bottom edge (y): not at right angles.
  const std::string e = ScError(
      "[[node.screen]]\nlower_left = [1.9, 0.65, 0.98]\nlower_right = [1.9, 0.05, 0.98]\nupper_left = [1.9, 0.648, 1.32]\n");
  CHECK(e.find("screens.toml:") == 0);
  CHECK(e.find("screen[0].upper_left") != std::string::npos);
  CHECK(e.find("rectangle") != std::string::npos);
  CHECK(e.find("2.0 mm") != std::string::npos);
  // Half a millimetre is a measuring error.
  CHECK(ScError("[[node.screen]]\nlower_left = [1.9, 0.65, 0.98]\nlower_right = [1.9, 0.05, 0.98]\n"
                "upper_left = [1.9, 0.6495, 1.32]\n")
            .empty());
}

TEST_CASE("screen config: an eye behind the screen plane is refused naming the screen") {
  // Left and right swapped: seen from the eye the corners run leftwards, so the eye is behind.
  const std::string e = ScError(
      "[[node.screen]]\nlower_left = [1.9, 0.05, 0.98]\nlower_right = [1.9, 0.65, 0.98]\nupper_left = [1.9, 0.05, 1.32]\n");
  CHECK(e.find("screen[0].lower_left") != std::string::npos);
  CHECK(e.find("behind") != std::string::npos);
  CHECK(e.find("0.700 m") != std::string::npos);
}

TEST_CASE("screen config: missing corners, two main screens and unknown keys are refused") {
  CHECK(ScError("[[node.screen]]\nlower_left = [1.9, 0.65, 0.98]\nlower_right = [1.9, 0.05, 0.98]\n").find("upper_left") !=
        std::string::npos);
  CHECK(ScError(std::string(kScFront) + "main = true\n" + kScFront + "main = true\n").find("main = true") != std::string::npos);
  CHECK(ScError(std::string(kScFront) + "bezel_mm = 12\n").find("bezel_mm") != std::string::npos);
  CHECK(ScError(std::string(kScFront) + "position_px = [10.5, 0]\n").find("whole pixels") != std::string::npos);
}
