// Fusion core: motion compensation on a curve, frame assembly (missing, late, stale, restarts), recording.
#include "platoon/dead_reckoning.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace platoon;
using namespace platoon::node;

namespace {

constexpr uint32_t kPoleId = 77;
constexpr int64_t kPeriod = 100'000'000;  // 10 Hz scans

// The ego on a circle of radius 50 m about the origin at 20 m/s, counter-clockwise; heading +x at t = 0.
KinematicState EgoAtZero() {
  KinematicState k;
  k.pose.position_m = Vec3(0, -50, 0);
  k.velocity_mps = Vec3(20, 0, 0);
  k.angular_velocity_radps = Vec3(0, 0, 20.0 / 50.0);
  k.acceleration_mps2 = Vec3(0, 8, 0);  // centripetal v^2 / R towards the centre
  return k;
}

protocol::PointCloud ScanFrom(const sensors::Scene& scene, const EgoTrack& ego, const sensors::Mounting& mount,
                              const std::string& id, uint64_t seed) {
  sensors::LidarDef def = sensors::Vlp16Def();
  const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, EgoAtZero(), 0);
  const KinematicState m = sensors::MountPointKinematics(vehicle, mount);
  std::mt19937_64 rng(seed);
  const auto raw = sensors::Scan(scene, sensors::SensorPoseInWorld(ego.PoseAt(0), mount), m.velocity_mps,
                                 vehicle.angular_velocity_radps, def, rng);
  std::vector<sensors::CloudPoint> pts;
  for (const auto& p : raw) pts.push_back(sensors::ToCloudPoint(p, 0));
  protocol::PointCloud c;
  c.header.sensor_id = id;
  c.header.kind = protocol::StreamKind::kLidar;
  c.header.sequence = 1;
  c.header.stamp_ns = 0;
  c.header.mount_position_m = mount.position_m;
  c.header.mount_orientation = mount.orientation;
  c.duration_ns = kPeriod;
  c.point_count = static_cast<uint32_t>(pts.size());
  c.point_stride = sizeof(sensors::CloudPoint);
  c.points = PackPoints(pts);
  return c;
}

// Centroid (x, y) of the pole's points from one source.
Eigen::Vector2d PoleCentroid(const std::vector<sensors::CloudPoint>& pts, uint8_t source, int& count) {
  Eigen::Vector2d sum = Eigen::Vector2d::Zero();
  count = 0;
  for (const auto& p : pts)
    if (p.source == source && p.entity_id == kPoleId) {
      sum += Eigen::Vector2d(p.x_m, p.y_m);
      ++count;
    }
  return count ? Eigen::Vector2d(sum / count) : sum;
}

protocol::PointCloud Cloud(const std::string& id, int64_t stamp, uint64_t epoch = 1, uint32_t points = 10) {
  protocol::PointCloud c;
  c.header.sensor_id = id;
  c.header.stamp_ns = stamp;
  c.header.host_epoch = epoch;
  c.header.sequence = static_cast<uint64_t>(stamp / kPeriod + 1);
  c.duration_ns = kPeriod;
  c.point_count = points;
  c.point_stride = sizeof(sensors::CloudPoint);
  c.points.assign(points * sizeof(sensors::CloudPoint), '\0');
  return c;
}

}  // namespace

TEST_CASE("fusion: a pole seen by two overlapping lidars on a 20 m/s curve lands in one place only with compensation") {
  // Scene: ground and a pole ahead of the ego at the middle of the scan.
  sensors::Scene scene;
  const std::vector<Vec3> ground = {Vec3(-500, -500, 0), Vec3(500, -500, 0), Vec3(500, 500, 0), Vec3(-500, 500, 0)};
  const std::vector<std::array<uint32_t, 3>> tri = {{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tri, sensors::SurfaceTag{1, 0, 1});
  EgoTrack ego;
  ego.Add(EgoAtZero());
  const Pose mid = ego.PoseAt(kPeriod / 2);
  const Vec3 pole = mid.position_m + mid.orientation * Vec3(22, 1.0, 0);
  scene.AddBox(Pose{pole + Vec3(0, 0, 1.5), Quat::Identity()}, Vec3(0.1, 0.1, 1.5), sensors::SurfaceTag{2, kPoleId, 5});
  scene.Commit();

  // Two lidars at the front corners, yawed apart: the pole is at a different azimuth for each, so each
  // fires at it at a different time within the scan.
  const auto left = sensors::MountingFromRpy(Vec3(3.6, 0.8, 1.2), 0, 0, 40);
  const auto right = sensors::MountingFromRpy(Vec3(3.6, -0.8, 1.2), 0, 0, -40);
  const auto a = ScanFrom(scene, ego, left, "left", 1);
  const auto b = ScanFrom(scene, ego, right, "right", 2);
  const std::vector<SourceCloud> in = {{&a, 0}, {&b, 1}};
  auto pose_fn = [&](int64_t t) { return ego.PoseAt(t); };

  const auto fused = FuseClouds(in, kPeriod, pose_fn, true);
  const auto raw = FuseClouds(in, kPeriod, pose_fn, false);
  REQUIRE(fused.size() == a.point_count + b.point_count);
  int na = 0, nb = 0, ra = 0, rb = 0;
  const Eigen::Vector2d ca = PoleCentroid(fused, 0, na), cb = PoleCentroid(fused, 1, nb);
  const Eigen::Vector2d ua = PoleCentroid(raw, 0, ra), ub = PoleCentroid(raw, 1, rb);
  REQUIRE(na >= 10);
  REQUIRE(nb >= 10);
  const double compensated = (ca - cb).norm(), uncompensated = (ua - ub).norm();
  // Where the pole really is in the vehicle frame at the reference time (centre of its near faces: within 0.1 m).
  const Pose ref = ego.PoseAt(kPeriod);
  const Vec3 truth = ref.orientation.inverse() * (pole - ref.position_m);
  MESSAGE("pole points " << na << " + " << nb << "; disagreement compensated " << compensated * 100
                         << " cm, uncompensated " << uncompensated * 100 << " cm; compensated error vs truth "
                         << (ca - truth.head<2>()).norm() * 100 << " cm");
  CHECK(compensated < 0.05);
  CHECK(uncompensated > 0.25);
  CHECK(uncompensated > 5 * compensated);
  CHECK((ca - truth.head<2>()).norm() < 0.15);
  CHECK((ua - truth.head<2>()).norm() > 0.5);  // without compensation the pole is also in the wrong place
}

TEST_CASE("fusion: a frame waits for every source, or publishes after the timeout with the missing ones flagged") {
  FrameAssembler fa({"a", "b", "c"}, kPeriod, 50'000'000);
  const int64_t t = 10 * kPeriod;
  CHECK(fa.Offer(Cloud("a", t - kPeriod), t + 1'000'000));
  CHECK(fa.Offer(Cloud("b", t - kPeriod), t + 2'000'000));
  CHECK_FALSE(fa.Due(t + 3'000'000));
  CHECK(fa.Offer(Cloud("c", t - kPeriod), t + 4'000'000));
  CHECK(fa.Due(t + 4'000'000));  // complete: no need to wait for the timeout
  auto f = fa.Take();
  CHECK(f.reference_ns == t);
  for (const auto& m : f.meta) CHECK(m.status == protocol::SourceStatus::kOk);

  // Next cycle: c is silent.
  CHECK(fa.Offer(Cloud("a", t), t + kPeriod + 1'000'000));
  CHECK(fa.Offer(Cloud("b", t), t + kPeriod + 1'500'000));
  CHECK_FALSE(fa.Due(t + kPeriod + 50'000'000));
  CHECK(fa.Due(t + kPeriod + 51'000'000));
  f = fa.Take();
  CHECK(f.meta[2].status == protocol::SourceStatus::kMissing);
  CHECK_FALSE(f.clouds[2].has_value());
  CHECK(f.meta[0].status == protocol::SourceStatus::kOk);

  // c's cloud of that cycle arrives after the frame went out: it never joins a newer frame.
  CHECK_FALSE(fa.Offer(Cloud("c", t), t + kPeriod + 60'000'000));
  CHECK(fa.Stale() == 1);
  CHECK(fa.Offer(Cloud("a", t + kPeriod), t + 2 * kPeriod + 1'000'000));
  CHECK(fa.Offer(Cloud("b", t + kPeriod), t + 2 * kPeriod + 1'000'000));
  CHECK(fa.Due(t + 2 * kPeriod + 52'000'000));
  f = fa.Take();
  CHECK(f.meta[2].status == protocol::SourceStatus::kLate);
}

TEST_CASE("fusion: a restarted source is taken again, and an old cloud never mixes into a newer frame") {
  FrameAssembler fa({"a", "b"}, kPeriod, 50'000'000);
  int64_t t = 20 * kPeriod;
  fa.Offer(Cloud("a", t, 1), t + kPeriod);
  fa.Offer(Cloud("b", t, 7), t + kPeriod);
  auto f = fa.Take();
  CHECK(f.meta[1].host_epoch == 7);
  // b restarts (new epoch, sequence from 1) while a goes on; b's first new cloud is two cycles later.
  t += kPeriod;
  fa.Offer(Cloud("a", t, 1), t + kPeriod);
  f = fa.Take();
  CHECK(f.meta[1].status == protocol::SourceStatus::kMissing);
  t += kPeriod;
  auto restarted = Cloud("b", t, 8);
  restarted.header.sequence = 1;
  CHECK(fa.Offer(restarted, t + kPeriod));
  // A straggler of the old run (an older cycle) arrives now: refused.
  CHECK_FALSE(fa.Offer(Cloud("b", t - 2 * kPeriod, 7), t + kPeriod));
  CHECK(fa.Offer(Cloud("a", t, 1), t + kPeriod));
  f = fa.Take();
  CHECK(f.meta[1].status == protocol::SourceStatus::kOk);
  CHECK(f.meta[1].host_epoch == 8);
  CHECK(f.clouds[1]->header.stamp_ns == t);
  // A pending cloud from an older cycle than the frame's newest is dropped at take time.
  t += kPeriod;
  fa.Offer(Cloud("a", t + kPeriod, 1), t + 2 * kPeriod);
  CHECK(fa.Offer(Cloud("b", t, 8), t + 2 * kPeriod));
  f = fa.Take();
  CHECK(f.reference_ns == t + 2 * kPeriod);
  CHECK_FALSE(f.clouds[1].has_value());
  CHECK(f.meta[1].status == protocol::SourceStatus::kLate);
}

TEST_CASE("fusion: the frame record keeps every whole frame and names the file when corrupt") {
  const std::string path = (std::filesystem::temp_directory_path() / ("fused_" + std::to_string(getpid()) + ".rec")).string();
  std::filesystem::remove(path);
  {
    FusedRecorder rec(path);
    for (int i = 1; i <= 3; ++i) {
      protocol::FusedCloud f;
      f.sensor_id = "fused";
      f.sequence = static_cast<uint64_t>(i);
      f.reference_ns = i * kPeriod;
      f.sources = {protocol::FusedSource{"a", i * kPeriod - kPeriod, 10, protocol::SourceStatus::kOk, 1, 1}};
      f.point_count = 2;
      f.point_stride = sizeof(sensors::CloudPoint);
      f.points.assign(2 * sizeof(sensors::CloudPoint), static_cast<char>(i));
      rec.Write(f);
    }
    CHECK(rec.Frames() == 3);
  }
  bool truncated = true;
  auto frames = ReadFusedRecord(path, &truncated);
  REQUIRE(frames.size() == 3);
  CHECK_FALSE(truncated);
  CHECK(frames[2].sequence == 3);
  CHECK(frames[1].points[0] == 2);
  // A crash mid-write leaves a partial last frame: the whole frames are still there.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 7);
  frames = ReadFusedRecord(path, &truncated);
  CHECK(frames.size() == 2);
  CHECK(truncated);
  // Garbage is an error naming the file.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write("\x10\x00\x00\x00garbagegarbage!!", 20);
  }
  CHECK_THROWS_WITH_AS(ReadFusedRecord(path), doctest::Contains(path.c_str()), std::runtime_error);
  std::filesystem::remove(path);
}

TEST_CASE("fusion: config errors name the key") {
  auto t = config::Table::ParseText("[f]\nsources = []\n", "farm.toml");
  CHECK_THROWS_WITH_AS(ReadFusionDef(*t.Sub("f")), doctest::Contains("farm.toml:2"), config::ConfigError);
  t = config::Table::ParseText("[f]\nsources = [\"a\", \"a\"]\n", "farm.toml");
  CHECK_THROWS_WITH_AS(ReadFusionDef(*t.Sub("f")), doctest::Contains("listed twice"), config::ConfigError);
  t = config::Table::ParseText("[f]\nsources = [\"a\"]\ntimeout = 3\n", "farm.toml");
  CHECK_THROWS_WITH_AS(ReadFusionDef(*t.Sub("f")), doctest::Contains("timeout"), config::ConfigError);
  t = config::Table::ParseText("[f]\nsources = [\"a\"]\ntimeout_s = 0.08\nvoxel_m = 0.2\n", "farm.toml");
  const auto d = ReadFusionDef(*t.Sub("f"));
  CHECK(d.timeout_s == doctest::Approx(0.08));
  CHECK(d.voxel_m == doctest::Approx(0.2));
  CHECK_THROWS_WITH_AS(AttachedVehicleId("ego:x"), doctest::Contains("ego:x"), config::ConfigError);
  CHECK(AttachedVehicleId("ego") == AttachedVehicleId("ego:0"));
  CHECK(AttachedVehicleId("ego:1") != AttachedVehicleId("ego:0"));
}

TEST_CASE("sensor config: presets, mounting and errors naming file, line and key") {
  auto t = config::Table::ParseText(
      "[[s]]\nid = \"lf\"\ntype = \"lidar\"\npreset = \"hdl64\"\nposition = [1.0, 0.5, 2.0]\nrpy_deg = [0, 0, 90]\n",
      "host.toml");
  const auto spec = sensors::ReadSensorSpec(t.TableArray("s")[0]);
  CHECK(spec.kind == protocol::StreamKind::kLidar);
  CHECK(spec.lidar.channel_elevations_rad.size() == 64);
  CHECK(spec.rate_hz == doctest::Approx(10));
  CHECK((spec.mounting.orientation * Vec3::UnitX() - Vec3::UnitY()).norm() < 1e-12);
  t = config::Table::ParseText("[[s]]\nid = \"lf\"\ntype = \"lidar\"\npreset = \"hdl65\"\n", "host.toml");
  CHECK_THROWS_WITH_AS(sensors::ReadSensorSpec(t.TableArray("s")[0]), doctest::Contains("host.toml:4"), config::ConfigError);
  t = config::Table::ParseText("[[s]]\nid = \"r\"\ntype = \"radar\"\nrange_resolutoin_m = 1\n", "host.toml");
  CHECK_THROWS_WITH_AS(sensors::ReadSensorSpec(t.TableArray("s")[0]), doctest::Contains("range_resolutoin_m"), config::ConfigError);
  t = config::Table::ParseText("[[s]]\nid = \"i\"\ntype = \"imu\"\nposition = [1, 2]\n", "host.toml");
  CHECK_THROWS_WITH_AS(sensors::ReadSensorSpec(t.TableArray("s")[0]), doctest::Contains("expected 3 numbers"), config::ConfigError);
}
