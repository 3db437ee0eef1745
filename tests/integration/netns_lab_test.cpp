// The namespace lab end to end: scripts/netns-lab.sh runs the four-lidar farm with the server, each
// lidar host, the fusion node and the ego in network namespaces of their own, joined through a bridge.
// Where namespaces cannot be created (no root, no veth), the script says why and the test is skipped.
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>
#include <signal.h>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

TEST_CASE("netns lab: four lidar hosts, fusion, ego and server as separate hosts stream and fuse across namespaces") {
  auto lab = process::Child::Spawn({"/bin/bash", std::string(PLATOON_SOURCE_DIR) + "/scripts/netns-lab.sh", "--duration",
                                    "10", "--bin-dir", BinDir()});
  std::optional<int> status;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (!(status = lab.TryWait()) && std::chrono::steady_clock::now() < deadline) lab.ReadLine(100ms);
  while (lab.ReadLine(0ms)) {
  }
  if (!status) lab.Signal(SIGTERM);
  REQUIRE_MESSAGE(status.has_value(), "the lab script did not finish within 90 s");
  std::string out;
  for (const auto& l : lab.Lines()) out += l + "\n";
  if (*status == 77) {
    MESSAGE("SKIPPED: " << out);
    return;
  }
  INFO(out);
  CHECK(*status == 0);
  CHECK(AnyLineContains(lab.Lines(), "OK: fused frames from 4/4 lidar hosts across namespaces"));
  // The streams were found at the namespace addresses the server saw, not at loopback.
  CHECK(AnyLineContains(lab.Lines(), "publishes lidar stream 'lidar_left' at tcp://10.77."));
}
