// Determinism (STYLE §9, Box2D's test_determinism): a reference lock-step session, run in-process with
// the server's world core, a session client per node and the nodes' real modules (road traffic, a test
// track, a sensor host with a lidar and a radar, an observer), gives the same session hash twice and
// the same across 1 and 2 worker threads.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/session/world_hash.hpp"

#include <doctest/doctest.h>

namespace platoon::testing {
namespace {

const char* kReference = R"(
[session]
name = "reference"
mode = "lockstep"
step_hz = 100
end_s = 4

[road]
generate_length_m = 800
seed = 7
lanes = 2
speed_limit_kmh = 60

[scene]
ground = true
[[scene.box]]
id = 101
position = [50.0, 0.0, 0.0]
size = [0.2, 0.2, 3.0]

[[node]]
name = "city"
role = "traffic"
traffic_model = "road"
vehicles = 12

[[node]]
name = "ring"
role = "traffic"
vehicles = 3
speed_mps = 12

[[node]]
name = "sensors"
role = "sensor"
attach_to = "ring"
[[node.sensor]]
id = "top"
type = "lidar"
preset = "vlp16"
position = [1.5, 0.0, 1.8]
[[node.sensor]]
id = "front"
type = "radar"
position = [3.7, 0.0, 0.5]

[[node]]
name = "obs"
role = "observer"
)";

config::SessionDef Reference() { return config::LoadSessionText(kReference, "reference.toml"); }

TEST_CASE("determinism: a lock-step reference session gives the same hash twice and on 1 and 2 threads") {
  const InProcessResult a = RunInProcess(Reference(), 1);
  const InProcessResult b = RunInProcess(Reference(), 1);
  const InProcessResult c = RunInProcess(Reference(), 2);
  MESSAGE("steps ", a.steps, ", sim ", a.sim_time_ns / 1e9, " s, entities ", a.entities, ", sensor messages ",
          a.data_messages, ", server hash ", session::HashHex(a.server_hash), ", data hash ", session::HashHex(a.data_hash));
  // The session really ran: every step granted, every vehicle merged, the sensors measured.
  CHECK(a.steps == 401);
  CHECK(a.sim_time_ns == 4'000'000'000);
  CHECK(a.entities == 15);
  CHECK(a.data_messages >= 40 + 4 * 13);  // lidar at 10 Hz, radar at about 13-20 Hz, over 4 s
  // Same hash, run after run and whatever the thread count.
  CHECK(a.server_hash == b.server_hash);
  CHECK(a.server_hash == c.server_hash);
  CHECK(a.data_hash == b.data_hash);
  CHECK(a.data_hash == c.data_hash);
  CHECK(a.node_hash == b.node_hash);
  CHECK(a.node_hash == c.node_hash);
  // An observer owns nothing and sees everything the server merged, as the server merged it.
  CHECK(a.node_hash.at("obs") == a.server_hash);
}

TEST_CASE("determinism: the session hash sees a changed seed") {
  config::SessionDef other = Reference();
  other.road.seed = 8;
  const InProcessResult a = RunInProcess(Reference(), 1);
  const InProcessResult b = RunInProcess(other, 1);
  CHECK(a.steps == b.steps);
  CHECK(a.server_hash != b.server_hash);
}

}  // namespace
}  // namespace platoon::testing
