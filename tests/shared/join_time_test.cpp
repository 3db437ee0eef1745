// Join time: from a node's start to its clock within 100 us of the server's. A real
// platoon-server and a platoon-node whose oscillator drifts by 100 ppm (twice a real quartz's 50 ppm: an
// unset clock leaves the 100 us band after 1 s, so only a set, drift-corrected clock stays in it; the
// clock is set from 0.5 s on); the node measures its true
// error against CLOCK_MONOTONIC, the server's reference on this host, and logs when it is first within
// 100 us. Every wait is a handshake with a deadline.
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <regex>
#include <string>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

TEST_CASE("join time: a drifting node's clock is within 100 us of the server's well under 3 s after its start, and never steps after") {
  const TempDir dir;
  ServerProcess server = StartServer(dir);
  const auto started = std::chrono::steady_clock::now();
  auto node = process::Child::Spawn({BinDir() + "/platoon-node", "--name", "joiner", "--server", "127.0.0.1", "--port",
                                     std::to_string(server.control_port), "--drift-ppm", "100", "--truth-check",
                                     "--truth-warmup", "0", "--exit-after", "6", "--log-level", "info"});
  const auto synced = node.WaitForLine("clock synced within 100 us", 10s);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE_MESSAGE(synced.has_value(), "the node's clock was not within 100 us of the server's after 10 s");
  // The node's own figure, from its runtime's start (process start-up not included).
  std::smatch m;
  REQUIRE(std::regex_search(*synced, m, std::regex(R"(reference ([0-9.]+) s after start)")));
  const double node_s = std::stod(m[1]);
  std::string set_line;
  for (const auto& l : node.Lines())
    if (l.find("clock set") != std::string::npos) set_line = l;
  INFO("node: " << set_line);
  INFO("join to synced: " << wall_s << " s from spawn, " << node_s << " s by the node");
  CHECK(node_s <= wall_s);
  // The goal is 3 s; the join burst makes it about 0.6 s on an idle machine: 2.5 s leaves room for a loaded one.
  CHECK(wall_s < 2.5);

  // After the one step at join the clock only slews: it never runs backwards and never faster than the
  // slew bound allows, over the node's remaining seconds (its monitor checks every 1 ms tick).
  REQUIRE(RunToExit(node, 15s) == 0);
  CheckNoErrorLines(node, "joiner");
  const auto ticks = SummaryValue(node.Lines(), "ticks");
  const auto backwards = SummaryValue(node.Lines(), "backwards");
  const auto over_bound = SummaryValue(node.Lines(), "over_bound");
  REQUIRE(ticks.has_value());
  REQUIRE(backwards.has_value());
  REQUIRE(over_bound.has_value());
  INFO("true error after the set: p99 " << SummaryValue(node.Lines(), "error_p99_ns").value_or(-1) << " ns");
  CHECK(*ticks > 1000);
  CHECK(*backwards == 0);
  CHECK(*over_bound == 0);
  CheckNoErrorLines(server.child, "server");
}
