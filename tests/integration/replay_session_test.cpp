// A recorded drive re-measured: platoon replay --lockstep serves it to a real lidar host (platoon-node),
// twice; the host's clouds are identical both times (its SUMMARY data_hash), and differ when the
// recording differs.
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <thread>

namespace {

using namespace platoon;

constexpr int64_t kMs = 1'000'000;

// 4 s of an ego car weaving through three others, as a live server broadcast it (50 Hz, keyframe each s).
void WriteDrive(const std::string& path, double ego_weave_m) {
  std::string error;
  auto w = session_log::Writer::Open(path, &error);
  REQUIRE_MESSAGE(w, error);
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= 4000; ms += 20) {
    const double t = static_cast<double>(ms) / 1e3;
    protocol::WorldState world;
    world.sequence = ++sequence;
    world.server_time_ns = 5'000'000'000 + ms * kMs;
    world.sim_time_ns = ms * kMs;
    world.phase = protocol::SessionPhase::kRunning;
    world.keyframe = ms % 1000 == 0;
    for (int k = 0; k < 4; ++k) {
      protocol::EntityState e;
      e.id = k == 0 ? VehicleId("ego", 0) : VehicleId("traffic", static_cast<uint32_t>(k));
      e.owner_node = k == 0 ? 1 : 2;
      e.kind = protocol::EntityKind::kCar;
      e.kinematics.stamp_ns = ms * kMs;
      const double x = 15 * t + (k == 0 ? 0.0 : 12.0 * k);
      const double y = k == 0 ? ego_weave_m * std::sin(1.5 * t) : (k % 2 ? 3.5 : -3.5);
      const double yaw = k == 0 ? std::atan2(ego_weave_m * 1.5 * std::cos(1.5 * t), 15.0) : 0.0;
      e.kinematics.pose.position_m = Vec3(x, y, 0);
      e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
      e.kinematics.velocity_mps = Vec3(15, k == 0 ? ego_weave_m * 1.5 * std::cos(1.5 * t) : 0.0, 0);
      world.entities.push_back(e);
    }
    REQUIRE(w->WriteWorld(world).Ok());
  }
  REQUIRE(w->Close().Ok());
}

struct Measured {
  std::string data_hash;
  double messages = 0;
  double steps = 0;
};

// One lock-step replay of `log` with one lidar host joined; returns what the host measured.
Measured ReplayWithLidar(const testing::TempDir& dir, const std::string& log) {
  const auto p = testing::FreePorts(4);
  const std::string config = dir.Write("lidar_" + std::to_string(p[0]) + ".toml", R"(
[session]
name = "remeasure"
server_host = "127.0.0.1"
[server]
control_port = )" + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                                                         std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) + R"(
[scene]
ground = true
[[node]]
name = "lidar"
role = "sensor"
attach_to = "ego"
[[node.sensor]]
id = "lidar_front"
type = "lidar"
preset = "vlp16"
position = [3.7, 0.0, 1.0]
)");
  // The host first, so that it is a member from the first grant; the replay starts paused until it is in.
  auto node = process::Child::Spawn({testing::BinDir() + "/platoon-node", "--config", config, "--name", "lidar"});
  auto replay = process::Child::Spawn({testing::BinDir() + "/platoon", "replay", log, "--lockstep", "--config", config,
                                       "--from", "0.5", "--to", "2.5", "--step-hz", "100", "--wait-for", "lidar"});
  const auto replay_status = testing::RunToExit(replay, std::chrono::seconds(60));
  CHECK(replay_status == 0);
  ::kill(node.Pid(), SIGINT);
  CHECK(testing::RunToExit(node, std::chrono::seconds(15)) == 0);
  testing::CheckNoErrorLines(node.Lines());
  testing::CheckNoErrorLines(replay.Lines());
  Measured m;
  m.data_hash = testing::SummaryString(node.Lines(), "data_hash").value_or("");
  m.messages = testing::SummaryValue(node.Lines(), "data_messages").value_or(0);
  m.steps = testing::SummaryValue(replay.Lines(), "steps").value_or(0);
  return m;
}

}  // namespace

TEST_CASE("replay session: a lidar host on a lock-step replay measures identical clouds in two replays") {
  testing::TempDir dir;
  const std::string log = dir.Path() + "/drive.mcap";
  WriteDrive(log, 2.0);
  const Measured first = ReplayWithLidar(dir, log);
  const Measured second = ReplayWithLidar(dir, log);
  MESSAGE("lidar clouds: " << first.messages << " and " << second.messages << ", hash " << first.data_hash << " and "
                           << second.data_hash << ", steps " << first.steps);
  CHECK(first.steps == 201);           // 0.50 .. 2.50 s at 100 Hz
  CHECK(first.messages >= 19);         // VLP16 at 10 Hz over 2 s
  CHECK(first.messages == second.messages);
  CHECK_FALSE(first.data_hash.empty());
  CHECK(first.data_hash == second.data_hash);
  // A different drive gives different clouds: the hash sees what was measured.
  const std::string other = dir.Path() + "/other.mcap";
  WriteDrive(other, 0.5);
  const Measured third = ReplayWithLidar(dir, other);
  CHECK(third.messages == first.messages);
  CHECK(third.data_hash != first.data_hash);
}
