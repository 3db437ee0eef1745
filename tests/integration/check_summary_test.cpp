// `platoon check FILE` ends with a summary of what `platoon run FILE` sets up (tools/src/check_summary.cpp):
// the server, each node with its sensors and seat input, the scenario events, data writes, recorders and
// the timing, after the verdict `ok` that scripts look for.
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> CheckSummaryLines(const std::string& config) {
  auto check = process::Child::Spawn({BinDir() + "/platoon", "check", std::string(PLATOON_SOURCE_DIR) + "/configs/" + config});
  const auto status = RunToExit(check, 60s);
  REQUIRE(status == std::optional<int>(0));
  CheckNoErrorLines(check, "platoon check " + config);
  const auto& lines = check.Lines();
  // The verdict comes first, the summary after it.
  const auto ok = std::find(lines.begin(), lines.end(), "ok");
  REQUIRE(ok != lines.end());
  REQUIRE(ok + 1 != lines.end());
  CHECK((ok + 1)->find("summary: `platoon run ") == 0);
  return std::vector<std::string>(ok + 1, lines.end());
}

}  // namespace

TEST_CASE("check summary: server, nodes with seat input, events, data writes, recorders and timing follow the verdict") {
  const auto lines = CheckSummaryLines("headway_brake.toml");
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  INFO(all);
  for (const char* expected :
       {"server      bind 127.0.0.1, ports 7400 (control), 7401 (time), 7402 (world), 7403 (state)",
        "ctl and the viewer find it while it runs (discovery file in ", "nodes       3",
        "driver   driver    host localhost, seat input model:follow", "events      1",
        "lead_brakes: when time_headway of driver below 1.5: brake ahead, message \"Lead car brakes!\"",
        "data writes 1", "driver -> data/driver.csv at 100 Hz", "recorders   1",
        "recorder -> recordings/{session}-{time}.mcap, streams none (world and events only)",
        "timing      real time"})
    CHECK_MESSAGE(AnyLineContains(lines, expected), "the summary lacks: " << expected);

  const auto farm = CheckSummaryLines("lidar_farm.toml");
  CHECK(AnyLineContains(farm, "lidar_front sensor    host localhost, sensors lidar_front (lidar, 10 Hz)"));
  CHECK(AnyLineContains(farm, "ports 7410 (control)"));
  CHECK(AnyLineContains(farm, "events      0"));
}
