// The marker stream through a whole session (server/src/marker_publisher.cpp, installed by platoon-server from
// [markers] publish): a recorder subscribed before `platoon run` starts receives every scenario marker of a
// lock-step session, once, in order, with its sim time.
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <zmq.hpp>

#include <atomic>
#include <filesystem>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace marker_stream_session_detail {

// Member `key` of a flat JSON object as text (strings unquoted, escapes left as they are).
std::string Member(const std::string& json, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const auto at = json.find(tag);
  if (at == std::string::npos) return "<missing>";
  const size_t from = at + tag.size();
  if (json[from] == '"') return json.substr(from + 1, json.find('"', from + 1) - from - 1);
  return json.substr(from, json.find_first_of(",}", from) - from);
}

}  // namespace marker_stream_session_detail

TEST_CASE("marker stream: a recorder receives every marker of a lock-step session on the stream with its sim time") {
  using namespace marker_stream_session_detail;
  TempDir dir;
  // configs/drivers.toml's server and road traffic on free ports, the stream on another, and 20 scenario
  // markers at 1.00, 1.25, ... 5.75 s of sim time.
  const uint16_t port = FreePorts(1).at(0);
  const std::string endpoint = fmt::format("tcp://127.0.0.1:{}", port);
  std::string extra = fmt::format("\n[markers]\npublish = \"{}\"\n", endpoint);
  const int kMarkers = 20;
  std::vector<double> at_s;
  for (int k = 0; k < kMarkers; ++k) {
    at_s.push_back(1.0 + 0.25 * k);
    extra += fmt::format("\n[[event]]\nname = \"m{}\"\nwhen = {{ sim_time = {:.2f} }}\ndo = [ {{ action = \"mark\", text = \"marker {}\" }} ]\n",
                         k, at_s.back(), k);
  }
  const std::string session = ConfigOnFreePorts(dir, "drivers.toml", 7400, extra);
  // The robot seat's input script, which the session loader checks although the robot is not run.
  std::filesystem::create_directories(dir.Path() + "/inputs");
  std::filesystem::copy_file(std::string(PLATOON_SOURCE_DIR) + "/configs/inputs/lane_change.csv", dir.Path() + "/inputs/lane_change.csv");

  // The recorder: subscribed to the markers before the server binds (ZeroMQ connects when it does).
  zmq::context_t context;
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "{\"kind\":\"marker\"");
  sub.set(zmq::sockopt::rcvtimeo, 200);
  sub.set(zmq::sockopt::reconnect_ivl, 20);
  sub.connect(endpoint);
  std::vector<std::string> received;
  std::atomic<bool> run_done{false};
  std::thread listener([&] {
    // Until the run is over and nothing more comes for a second.
    auto quiet_since = std::chrono::steady_clock::now();
    while (!run_done || std::chrono::steady_clock::now() - quiet_since < 1s) {
      zmq::message_t m;
      if (sub.recv(m)) {
        received.push_back(m.to_string());
        quiet_since = std::chrono::steady_clock::now();
      } else if (!run_done) {
        quiet_since = std::chrono::steady_clock::now();
      }
    }
  });
  auto run = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--only", "server,traffic", "--lockstep", "--duration", "7"});
  const auto status = RunToExit(run, 90s);
  run_done = true;
  listener.join();
  std::string run_log;
  for (const auto& l : run.Lines()) run_log += l + "\n";
  REQUIRE_MESSAGE(status == std::optional<int>(0), run_log.substr(run_log.size() > 6000 ? run_log.size() - 6000 : 0));
  CheckNoErrorLines(run.Lines());

  // Every marker once, in order, at its event's sim time (lock-step steps of 10 ms: within one step).
  MESSAGE("received " << received.size() << " of " << kMarkers << " markers on " << endpoint);
  REQUIRE(received.size() == kMarkers);
  for (int k = 0; k < kMarkers; ++k) {
    INFO(received[k]);
    CHECK(Member(received[k], "text") == fmt::format("marker {}", k));
    CHECK(Member(received[k], "source") == fmt::format("event:m{}", k));
    const double sim = std::stod(Member(received[k], "sim_time_s"));
    CHECK(sim >= at_s[k] - 1e-9);
    CHECK(sim <= at_s[k] + 0.01 + 1e-9);
    if (k > 0) CHECK(std::stoull(Member(received[k], "sequence")) > std::stoull(Member(received[k - 1], "sequence")));
  }
}
