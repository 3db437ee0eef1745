// The seat window's mirror keys of a driver node (shared/src/config/session.cpp, ReadDriverKeys): mirrors,
// cockpit and [[node.mirror]] tables, with errors that name the file, the line and the key.
#include "platoon/config/session.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace platoon;

namespace {

std::string MirrorSession(const std::string& node_extra) {
  return "[road]\ngenerate_length_m = 500\nseed = 1\nlanes = 2\n"
         "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n" +
         node_extra;
}

std::string MirrorConfigError(const std::string& node_extra) {
  try {
    (void)config::LoadSessionText(MirrorSession(node_extra), "mirrors.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("seat mirror config: defaults on and tables change only the keys they give") {
  const config::SessionDef plain = config::LoadSessionText(MirrorSession(""), "mirrors.toml");
  REQUIRE(plain.nodes.size() == 1);
  CHECK(plain.nodes[0].cockpit);
  CHECK(plain.nodes[0].mirrors);
  CHECK(plain.nodes[0].mirror.empty());

  const config::SessionDef s = config::LoadSessionText(
      MirrorSession("mirrors = true\ncockpit = false\n"
                    "[[node.mirror]]\nname = \"left\"\nhfov_deg = 31\n"
                    "[[node.mirror]]\nname = \"right\"\nenabled = false\n"
                    "[[node.mirror]]\nname = \"spot\"\nposition = [1.5, 1.0, 1.1]\nyaw_deg = 130\nscreen = [0.0, 0.3, 0.1, 0.4]\n"),
      "mirrors.toml");
  const config::NodeDef& n = s.nodes[0];
  CHECK_FALSE(n.cockpit);
  REQUIRE(n.mirror.size() == 3);
  CHECK(n.mirror[0].name == "left");
  CHECK(n.mirror[0].hfov_deg == 31.0);
  CHECK_FALSE(n.mirror[0].yaw_deg.has_value());
  CHECK_FALSE(n.mirror[0].screen.has_value());
  CHECK_FALSE(n.mirror[1].enabled);
  CHECK(n.mirror[2].position_m == Vec3(1.5, 1.0, 1.1));
  CHECK(n.mirror[2].yaw_deg == 130.0);
  CHECK(n.mirror[2].screen == std::array<double, 4>{0.0, 0.3, 0.1, 0.4});
}

TEST_CASE("seat mirror config: bad tables are refused naming the line and key") {
  // The line of the bad key, counted in the text itself.
  const std::string bad_fov = "[[node.mirror]]\nname = \"left\"\nhfov_deg = 200\n";
  const std::string text = MirrorSession(bad_fov);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find("hfov_deg")), '\n');
  const std::string fov_error = MirrorConfigError(bad_fov);
  MESSAGE(fov_error);
  CHECK(fov_error.find("mirrors.toml:" + std::to_string(line) + ": node[0].mirror[0].hfov_deg") != std::string::npos);
  const std::string new_without_pose = MirrorConfigError("[[node.mirror]]\nname = \"spot\"\nhfov_deg = 30\n");
  CHECK(new_without_pose.find("needs position, yaw_deg and screen") != std::string::npos);
  CHECK(MirrorConfigError("[[node.mirror]]\nname = \"left\"\nscreen = [0.5, 0.1, 0.4, 0.2]\n").find("left < right") !=
        std::string::npos);
  CHECK(MirrorConfigError("[[node.mirror]]\nname = \"left\"\n[[node.mirror]]\nname = \"left\"\n").find("given twice") !=
        std::string::npos);
  CHECK(MirrorConfigError("[[node.mirror]]\nname = \"left\"\ncolour = 3\n").find("colour: unknown key") != std::string::npos);
  CHECK(MirrorConfigError("[[node.mirror]]\nhfov_deg = 30\n").find("name") != std::string::npos);
}
