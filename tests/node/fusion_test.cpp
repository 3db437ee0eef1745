// Fusion core: motion compensation on a curve, frame assembly (missing, late, stale, restarts), recording.
#include "platoon/dead_reckoning.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/pcd.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "../support/camera_context.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

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

TEST_CASE("fusion: transforms interpolated between knots 0.5 ms apart place every point within 0.1 mm of the exact per-column transform on a braking S-bend") {
  // An ego braking from 25 m/s at 6 m/s^2 through an S-bend (yaw swinging +-0.8 rad, yaw rate up to
  // 2.4 rad/s) while pitching and rolling, as a smooth analytic trajectory. Each call is counted.
  int pose_calls = 0;
  const auto pose = [&](int64_t t_ns) {
    ++pose_calls;
    const double t = static_cast<double>(t_ns) * 1e-9;
    Pose p;
    p.position_m = Vec3(25 * t - 3 * t * t, 4 * std::sin(3 * t), 0.1 * std::sin(7 * t));
    p.orientation = Eigen::AngleAxisd(0.8 * std::sin(3 * t), Vec3::UnitZ()) *
                    Eigen::AngleAxisd(0.03 * std::sin(9 * t), Vec3::UnitY()) *
                    Eigen::AngleAxisd(0.02 * std::cos(11 * t), Vec3::UnitX());
    return p;
  };
  // Points out to 120 m, columns of 8 at 2000 firing times over a 100 ms scan (an HDL-64E has about as many).
  constexpr uint32_t kColumns = 2000, kPerColumn = 8;
  const int64_t stamp = 3 * kPeriod + 12'345;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> range(1, 120), azimuth(-3.1f, 3.1f), elevation(-0.4f, 0.1f);
  std::vector<sensors::CloudPoint> pts;
  for (uint32_t c = 0; c < kColumns; ++c)
    for (uint32_t k = 0; k < kPerColumn; ++k) {
      sensors::CloudPoint p{};
      const float d = range(rng), az = azimuth(rng), el = elevation(rng);
      p.x_m = d * std::cos(el) * std::cos(az);
      p.y_m = d * std::cos(el) * std::sin(az);
      p.z_m = d * std::sin(el);
      p.time_offset_s = static_cast<float>(c) * 0.1f / kColumns;
      pts.push_back(p);
    }
  // Then the same times again out of order (knots far apart), and time offsets no scan has: NaN,
  // infinities, far beyond the scan (taken as 0, the scan's start).
  for (uint32_t k = 0; k < 400; ++k) {
    sensors::CloudPoint p = pts[(k * 7919) % pts.size()];
    p.time_offset_s = static_cast<float>((k * 7919) % kColumns) * 0.1f / kColumns;
    pts.push_back(p);
  }
  const float hostile[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 1e20f, -1e20f, 10.5f, -11.0f};
  const size_t first_hostile = pts.size();
  for (float h : hostile) {
    sensors::CloudPoint p = pts[17];
    p.time_offset_s = h;
    pts.push_back(p);
  }
  const auto mount = sensors::MountingFromRpy(Vec3(1.4, -0.9, 1.9), 0, 2, -90);
  protocol::PointCloud cloud = Cloud("right", stamp, 1, static_cast<uint32_t>(pts.size()));
  cloud.header.mount_position_m = mount.position_m;
  cloud.header.mount_orientation = mount.orientation;
  cloud.points = PackPoints(pts);
  const int64_t ref = stamp + kPeriod;

  std::vector<sensors::CloudPoint> out(pts.size());
  REQUIRE(FuseCloudInto(cloud, cloud.points, 1, ref, pose, true, reinterpret_cast<char*>(out.data())) == pts.size());
  // The ordered columns alone: the ego pose about once per knot (201 knots over the scan, and the
  // reference), not once per column.
  protocol::PointCloud ordered = cloud;
  ordered.point_count = kColumns * kPerColumn;
  ordered.points.resize(size_t{ordered.point_count} * sizeof(sensors::CloudPoint));
  pose_calls = 0;
  REQUIRE(FuseCloudInto(ordered, ordered.points, 1, ref, pose, true, reinterpret_cast<char*>(out.data())) ==
          ordered.point_count);
  const int calls = pose_calls;
  CHECK(calls <= 1 + 202);
  // The same columns in falling time order: as few evaluations.
  {
    std::vector<sensors::CloudPoint> reversed(pts.begin(), pts.begin() + kColumns * kPerColumn);
    std::reverse(reversed.begin(), reversed.end());
    protocol::PointCloud backwards = ordered;
    backwards.points = PackPoints(reversed);
    pose_calls = 0;
    REQUIRE(FuseCloudInto(backwards, backwards.points, 1, ref, pose, true, reinterpret_cast<char*>(out.data())) ==
            backwards.point_count);
    CHECK(pose_calls <= 1 + 202);
  }
  REQUIRE(FuseCloudInto(cloud, cloud.points, 1, ref, pose, true, reinterpret_cast<char*>(out.data())) == pts.size());

  // The exact transform of each point, composed in double at its own firing time (docs/FUSION.md, F1).
  const Pose at_ref = pose(ref);
  double worst = 0, worst_range = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    const double offset = i >= first_hostile ? 0.0 : static_cast<double>(pts[i].time_offset_s);
    const Pose at = pose(stamp + SToNs(offset));
    const Vec3 p_s(pts[i].x_m, pts[i].y_m, pts[i].z_m);
    const Vec3 world = at.position_m + at.orientation * (mount.position_m + mount.orientation * p_s);
    const Vec3 want = at_ref.orientation.inverse() * (world - at_ref.position_m);
    const double e = (Vec3(out[i].x_m, out[i].y_m, out[i].z_m) - want).norm();
    if (e > worst) worst = e, worst_range = p_s.norm();
    CHECK(out[i].source == 1);
  }
  MESSAGE("interpolated between knots " << kCompensationKnotNs / 1e6 << " ms apart: largest error " << worst * 1e3 << " mm (a point at " << worst_range
                                                            << " m); ego pose evaluated " << calls << " times for "
                                                            << kColumns << " columns");
  CHECK(worst < 1e-4);
}

namespace {
// A cloud of `n` random points with distinct firing times per column of 4, as received off the wire.
protocol::PointCloud RandomCloud(const std::string& id, int64_t stamp, uint32_t n, uint64_t seed, double yaw_deg) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> xyz(-40, 40);
  std::vector<sensors::CloudPoint> pts(n);
  for (uint32_t i = 0; i < n; ++i) {
    pts[i].x_m = xyz(rng);
    pts[i].y_m = xyz(rng);
    pts[i].z_m = xyz(rng) / 10;
    pts[i].time_offset_s = static_cast<float>(i / 4) * 0.1f / static_cast<float>(n / 4 + 1);
    pts[i].ring = static_cast<uint16_t>(i % 4);
    pts[i].entity_id = static_cast<uint32_t>(i);
  }
  const auto mount = sensors::MountingFromRpy(Vec3(1.5, 0.5, 1.8), 0, 0, yaw_deg);
  protocol::PointCloud c = Cloud(id, stamp, 1, n);
  c.header.mount_position_m = mount.position_m;
  c.header.mount_orientation = mount.orientation;
  c.points = PackPoints(pts);
  return c;
}

// Four hosts' clouds of one scan ending at `stamp`, looking forward, left, back and right, of `points` each.
std::vector<protocol::PointCloud> FourClouds(int64_t stamp, const std::array<uint32_t, 4>& points) {
  return {RandomCloud("a", stamp, points[0], 1, 0), RandomCloud("b", stamp, points[1], 2, 90),
          RandomCloud("c", stamp, points[2], 3, 180), RandomCloud("d", stamp, points[3], 4, -90)};
}

ReceivedCloud Received(const protocol::PointCloud& c) {
  auto r = DecodeReceivedCloud(protocol::Encode(c));
  REQUIRE(r.has_value());
  return std::move(*r);
}

// The blob of a finished frame as points.
std::vector<sensors::CloudPoint> ResultPoints(const FrameFuser::Result& r) {
  return UnpackPointRecords(std::string_view(r.blob, size_t{r.count} * point_record::kStride), r.count,
                            point_record::kStride);
}

// The blob's groups put in source order (the fuser lays them out in arrival order); each group checked to
// hold only its source's records, the groups to cover the blob exactly.
std::vector<sensors::CloudPoint> InSourceOrder(const FrameFuser::Result& r) {
  const auto all = ResultPoints(r);
  std::vector<sensors::CloudPoint> out;
  uint64_t covered = 0;
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const auto [first, count] = r.groups[i];
    REQUIRE(uint64_t{first} + count <= all.size());
    for (uint32_t k = first; k < first + count; ++k) {
      CHECK(all[k].source == i);
      out.push_back(all[k]);
    }
    covered += count;
  }
  CHECK(covered == all.size());
  return out;
}

bool SameBits(const std::vector<sensors::CloudPoint>& a, const std::vector<sensors::CloudPoint>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
}
}  // namespace

TEST_CASE("fusion on arrival: any arrival order, a replaced and a dropped cloud, and an off-phase scan give FuseClouds' records to the bit, grouped by source in arrival order") {
  EgoTrack ego;
  ego.Add(EgoAtZero());
  auto pose = [&](int64_t t) { return ego.PoseAt(t); };
  const int64_t t = 5 * kPeriod;
  const std::vector<protocol::PointCloud> c = FourClouds(t - kPeriod, {1001, 2000, 777, 1500});
  auto expected = [&](const std::vector<const protocol::PointCloud*>& in, int64_t ref, bool compensate) {
    std::vector<SourceCloud> src;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i]) src.push_back(SourceCloud{in[i], static_cast<uint8_t>(i)});
    return FuseClouds(src, ref, pose, compensate);
  };
  FrameFuser fuser(4);
  const std::vector<bool> all(4, true);

  // Arrival order d, b, a, c: each group where its cloud came, nothing fused before it moved.
  for (size_t i : {3u, 1u, 0u, 2u}) fuser.Add(i, Received(c[i]), pose, true);
  auto r = fuser.Finish(all, t, pose, true);
  const auto want = expected({&c[0], &c[1], &c[2], &c[3]}, t, true);
  CHECK(r.count == 1001 + 2000 + 777 + 1500);
  using Group = std::pair<uint32_t, uint32_t>;
  CHECK(r.groups == std::vector<Group>{{3500, 1001}, {1500, 2000}, {4501, 777}, {0, 1500}});
  CHECK(SameBits(InSourceOrder(r), want));
  CHECK(fuser.MovedBytes() == 0);
  CHECK(fuser.Refused() == 0);
  for (size_t i = 0; i < 4; ++i) {
    REQUIRE(r.clouds[i].has_value());
    CHECK(r.clouds[i]->Blob() == std::string_view(c[i].points));  // the source's own bytes, for PCD export
  }
  // In source order, the blob is FuseClouds' frame itself; the first buffer is still held (by `r`, as the
  // socket would), so a second one.
  for (size_t i = 0; i < 4; ++i) fuser.Add(i, Received(c[i]), pose, true);
  auto r2 = fuser.Finish(all, t, pose, true);
  CHECK(fuser.MovedBytes() == 0);
  CHECK(r2.buffer != r.buffer);
  CHECK(SameBits(ResultPoints(r2), want));
  // Released by the socket: the next frame reuses a buffer, none is allocated.
  const uint64_t allocated = fuser.BuffersAllocated();
  r = {};
  r2 = {};
  for (size_t i = 0; i < 4; ++i) fuser.Add(i, Received(c[i]), pose, true);
  r = fuser.Finish(all, t, pose, true);
  CHECK(fuser.BuffersAllocated() == allocated);
  r = {};

  // b is replaced by a newer cloud, c is dropped at Finish (the assembler found it stale), and d's scan
  // ended 30 ms after the others: it was fused at its own end and is re-fused at the frame's reference.
  auto b2 = RandomCloud("b", t - kPeriod + 10, 1800, 5, 90);
  auto d2 = RandomCloud("d", t - kPeriod + 30'000'000, 1600, 6, -90);
  fuser.Add(1, Received(c[1]), pose, true);
  fuser.Add(2, Received(c[2]), pose, true);
  fuser.Add(3, Received(d2), pose, true);
  fuser.Add(0, Received(c[0]), pose, true);
  fuser.Add(1, Received(b2), pose, true);
  const int64_t ref = t + 30'000'000;
  r = fuser.Finish({true, true, false, true}, ref, pose, true);
  CHECK_FALSE(r.clouds[2].has_value());
  CHECK(fuser.Refused() == 2);  // a and b were fused at t, not at the frame's reference
  // The groups after the replaced b (c, d, a) and after the dropped c (d, a) moved down; b2 came last.
  CHECK(fuser.MovedBytes() == (777 + 1600 + 1001) * point_record::kStride + (1600 + 1001 + 1800) * point_record::kStride);
  CHECK(r.groups == std::vector<Group>{{1600, 1001}, {2601, 1800}, {0, 0}, {0, 1600}});
  CHECK(SameBits(InSourceOrder(r), expected({&c[0], &b2, nullptr, &d2}, ref, true)));
  r = {};

  // Fused with compensation on arrival, but the frame has none (no ego yet at publish): re-fused plainly.
  fuser.Add(0, Received(c[0]), pose, true);
  fuser.Add(2, Received(c[2]), pose, false);
  r = fuser.Finish({true, false, true, false}, t, pose, false);
  CHECK(SameBits(InSourceOrder(r), expected({&c[0], nullptr, &c[2], nullptr}, t, false)));

  // A frame of no clouds is empty, and a cloud whose blob does not hold its points adds none.
  r = fuser.Finish(all, t, pose, true);
  CHECK(r.count == 0);
  ReceivedCloud bad = Received(c[0]);
  bad.blob_size = 100;  // shorter than 1001 records
  fuser.Add(0, std::move(bad), pose, true);
  fuser.Add(1, Received(c[1]), pose, true);
  r = fuser.Finish(all, t, pose, true);
  CHECK(r.count == 2000);
  CHECK(r.groups[0] == Group{0, 0});
  CHECK(SameBits(InSourceOrder(r), expected({nullptr, &c[1]}, t, true)));
}

TEST_CASE("fusion buffers: frames held by a stalled record are pooled, later frames reuse buffers, and the spare ones go back after the stall") {
  EgoTrack ego;
  ego.Add(EgoAtZero());
  auto pose = [&](int64_t t) { return ego.PoseAt(t); };
  const int64_t t = 5 * kPeriod;
  const std::vector<protocol::PointCloud> c = FourClouds(t - kPeriod, {1000, 1000, 1000, 1000});
  FrameFuser fuser(4);
  const std::vector<bool> all(4, true);
  auto frame = [&] {
    for (size_t i = 0; i < 4; ++i) fuser.Add(i, Received(c[i]), pose, true);
    return fuser.Finish(all, t, pose, true);
  };
  // Warm: frames let go at once (sent, not recorded) need one buffer, two at most.
  for (int k = 0; k < 5; ++k) frame();
  CHECK(fuser.BuffersAllocated() <= 2);
  // The disk stalls: the record's queue holds the next 20 frames, each needs a buffer of its own.
  std::vector<FrameFuser::Result> queued;
  for (int k = 0; k < 20; ++k) queued.push_back(frame());
  const uint64_t during = fuser.BuffersAllocated();
  CHECK(during <= 2 + 20);
  CHECK(fuser.BuffersPooled() >= 20);
  // The queue is full: later frames are left out of the record and let go once sent. They reuse a pooled
  // buffer: not one allocation in 100 frames.
  for (int k = 0; k < 100; ++k) frame();
  const uint64_t after = fuser.BuffersAllocated();
  CHECK(after <= during + 1);  // at most the one that keeps turning over
  // The disk is back: the queue is written and let go. The spare buffers go back at the next frame, two
  // stay, and the frames after that allocate nothing.
  queued.clear();
  auto held = frame();
  CHECK(fuser.BuffersPooled() <= FrameFuser::kFreeBuffersKept + 1);
  for (int k = 0; k < 10; ++k) frame();
  CHECK(fuser.BuffersAllocated() == after);
  CHECK(held.count == 4000);
}

TEST_CASE("fusion wire: a frame encoded in place in front of its blob decodes like Encode, and a cloud decodes in place") {
  EgoTrack ego;
  ego.Add(EgoAtZero());
  auto pose = [&](int64_t t) { return ego.PoseAt(t); };
  for (uint32_t n : {0u, 1u, 2u, 333u}) {  // odd counts: a blob that is not a whole number of words
    INFO("points " << n);
    const auto cloud = RandomCloud("front", 0, n, 9, 0);
    // Decode in place: the blob is viewed inside the received bytes, the message carries no copy.
    const std::string bytes = protocol::Encode(cloud);
    std::string_view blob;
    const auto d = protocol::DecodeInPlace(bytes, &blob);
    REQUIRE(d.message.has_value());
    const auto& got = std::get<protocol::PointCloud>(*d.message);
    CHECK(got.points.empty());
    CHECK(blob == cloud.points);
    CHECK((n == 0 || (blob.data() >= bytes.data() && blob.data() + blob.size() <= bytes.data() + bytes.size())));
    auto whole = got;
    whole.points = std::string(blob);
    CHECK(whole == cloud);

    FrameFuser fuser(1);
    fuser.Add(0, Received(cloud), pose, true);
    auto r = fuser.Finish({true}, kPeriod, pose, true);
    protocol::FusedCloud msg;
    msg.sensor_id = "fused";
    msg.node_id = 7;
    msg.sequence = 42;
    msg.reference_ns = kPeriod;
    msg.entity_id = 3;
    msg.sources = {protocol::FusedSource{"front", 0, n, protocol::SourceStatus::kOk, 5, 1}};
    msg.point_count = r.count;
    msg.point_stride = point_record::kStride;
    const size_t blob_bytes = size_t{r.count} * point_record::kStride;
    const auto wire = protocol::EncodeFusedInPlace(msg, r.blob, blob_bytes, protocol::kFusedHeadroomBytes);
    CHECK(wire.size() % 8 == 0);
    CHECK(wire.data() + wire.size() >= r.blob + blob_bytes);  // the blob is the tail of the wire bytes, not a copy
    CHECK(wire.data() < r.blob);
    const auto back = protocol::Decode(wire);
    REQUIRE(back.error == protocol::DecodeError::kNone);
    auto expect = msg;
    expect.points = std::string(r.blob, blob_bytes);
    CHECK(std::get<protocol::FusedCloud>(*back.message) == expect);
    // A headroom too small for the envelope is an error, never a write outside the buffer.
    CHECK_THROWS_AS(protocol::EncodeFusedInPlace(msg, r.blob, blob_bytes, 16), std::length_error);
    msg.points = "x";
    CHECK_THROWS_AS(protocol::EncodeFusedInPlace(msg, r.blob, blob_bytes, protocol::kFusedHeadroomBytes), std::invalid_argument);
  }
  // A received message that is no cloud, or unaligned bytes, is no ReceivedCloud.
  CHECK_FALSE(DecodeReceivedCloud(protocol::Encode(protocol::StatusRequest{})).has_value());
  CHECK_FALSE(DecodeReceivedCloud(std::string("garbage!")).has_value());
  const std::string bytes = " " + protocol::Encode(RandomCloud("front", 0, 5, 9, 0));
  std::string_view blob;
  const auto d = protocol::DecodeInPlace(std::string_view(bytes).substr(1), &blob);
  CHECK(d.error == protocol::DecodeError::kBadSize);
  CHECK(blob.empty());
}

TEST_CASE("fusion: a fused point keeps every field but its position and source, for any record stride") {
  // Distinct values in every field, records of 36 and of 40 bytes (4 bytes the reader must skip), and
  // guard bytes after the output that must stay untouched.
  const auto mount = sensors::MountingFromRpy(Vec3(1.5, -0.5, 1.8), 0, 0, 90);
  const Eigen::Matrix3d rot = mount.orientation.toRotationMatrix();
  EgoTrack still;  // the ego at rest: compensation changes nothing
  KinematicState rest;
  still.Add(rest);
  auto pose = [&](int64_t t) { return still.PoseAt(t); };
  for (uint16_t stride : {uint16_t{36}, uint16_t{40}}) {
    for (bool compensate : {false, true}) {
      INFO("stride " << stride << ", compensate " << compensate);
      constexpr uint32_t kN = 37;  // not a multiple of any block size
      std::string blob(size_t{kN} * stride, '\x5a');
      for (uint32_t i = 0; i < kN; ++i) {
        PointRecord p;
        p.x_m = 1.0f + static_cast<float>(i);
        p.y_m = -2.0f * static_cast<float>(i);
        p.z_m = 0.25f * static_cast<float>(i % 7);
        p.intensity_w = 1e-7f * static_cast<float>(i + 1);
        p.snr = 5.5f + static_cast<float>(i);
        p.time_offset_s = 0.001f * static_cast<float>(i / 3);
        p.ring = static_cast<uint16_t>(1000 + i);
        p.echo = static_cast<uint8_t>(i % 3);
        p.source = 200;  // replaced by the fused source index
        p.entity_id = 0xA0000000u + i;
        p.class_id = 7 + i;
        WritePointRecord(p, blob.data() + size_t{i} * stride);
      }
      protocol::PointCloud cloud = Cloud("side", 0, 1, kN);
      cloud.point_stride = stride;
      cloud.header.mount_position_m = mount.position_m;
      cloud.header.mount_orientation = mount.orientation;
      std::string out(size_t{kN} * point_record::kStride + 64, '\x11');
      REQUIRE(FuseCloudInto(cloud, blob, 3, kPeriod, pose, compensate, out.data()) == kN);
      for (uint32_t i = 0; i < kN; ++i) {
        const PointRecord in = ReadPointRecord(blob.data() + size_t{i} * stride);
        const PointRecord got = ReadPointRecord(out.data() + size_t{i} * point_record::kStride);
        const Eigen::Vector3d want = rot * Eigen::Vector3d(in.x_m, in.y_m, in.z_m) + mount.position_m;
        CHECK(got.x_m == doctest::Approx(want.x()).epsilon(1e-5));
        CHECK(got.y_m == doctest::Approx(want.y()).epsilon(1e-5));
        CHECK(got.z_m == doctest::Approx(want.z()).epsilon(1e-5));
        CHECK(got.intensity_w == in.intensity_w);
        CHECK(got.snr == in.snr);
        CHECK(got.time_offset_s == in.time_offset_s);
        CHECK(got.ring == in.ring);
        CHECK(got.echo == in.echo);
        CHECK(got.source == 3);
        CHECK(got.entity_id == in.entity_id);
        CHECK(got.class_id == in.class_id);
      }
      CHECK(out.substr(size_t{kN} * point_record::kStride) == std::string(64, '\x11'));
    }
  }
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

namespace {
protocol::FusedCloud RecordFrame(int i) {
  protocol::FusedCloud f;
  f.sensor_id = "fused";
  f.sequence = static_cast<uint64_t>(i);
  f.reference_ns = i * kPeriod;
  f.sources = {protocol::FusedSource{"a", i * kPeriod - kPeriod, 10, protocol::SourceStatus::kOk, 1, 1}};
  f.point_count = 2;
  f.point_stride = sizeof(sensors::CloudPoint);
  f.points.assign(2 * sizeof(sensors::CloudPoint), static_cast<char>(i));
  return f;
}

// A file that accepts `budget` bytes, then fails like a full disk.
class FillingDisk final : public mcap::Sink {
 public:
  FillingDisk(const std::string& path, size_t budget) : path_(path), budget_(budget) {
    std::string error;
    file_ = mcap::FileSink::Open(path, &error);
    REQUIRE_MESSAGE(file_, error);
  }
  bool Write(const void* data, size_t size) override {
    if (size > budget_) return false;
    budget_ -= size;
    return file_->Write(data, size);
  }
  bool Flush() override { return file_->Flush(); }
  std::string Name() const override { return path_; }
  std::string Error() const override { return "No space left on device"; }

 private:
  std::string path_;
  size_t budget_;
  std::unique_ptr<mcap::FileSink> file_;
};
}  // namespace

TEST_CASE("fusion: the frame record keeps every whole frame, survives cuts and damage, and never appends") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fused_rec_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "fused.mcap").string();
  {
    FusedRecorder rec(path);
    CHECK(rec.Path() == path);
    for (int i = 1; i <= 3; ++i) CHECK(rec.Write(RecordFrame(i)));
    CHECK(rec.Frames() == 3);
  }
  bool truncated = true;
  std::vector<std::string> problems;
  auto frames = ReadFusedRecord(path, &truncated, &problems);
  REQUIRE(frames.size() == 3);
  CHECK_FALSE(truncated);
  CHECK(problems.empty());
  CHECK(frames[2].sequence == 3);
  CHECK(frames[1].points[0] == 2);

  // A restarted fusion node does not append to (or truncate) the earlier run's record.
  const auto size_before = fs::file_size(path);
  {
    FusedRecorder again(path);
    CHECK(again.Path() == (dir / "fused.1.mcap").string());
    CHECK(again.Write(RecordFrame(9)));
  }
  CHECK(fs::file_size(path) == size_before);
  CHECK(ReadFusedRecord((dir / "fused.1.mcap").string()).at(0).sequence == 9);

  // A crash mid-write leaves a cut file: every frame before the cut is there.
  const std::string cut = (dir / "cut.mcap").string();
  fs::copy_file(path, cut);
  fs::resize_file(cut, fs::file_size(cut) - 60);  // into the summary: the frames are intact
  frames = ReadFusedRecord(cut, &truncated);
  CHECK(frames.size() == 3);
  CHECK(truncated);
  {
    // What kill -9 mid-frame leaves: the earlier frames' chunks on disk, no summary, half a chunk.
    FusedRecorder live((dir / "live.mcap").string());
    for (int i = 1; i <= 3; ++i) CHECK(live.Write(RecordFrame(i)));
    const std::string killed = (dir / "killed.mcap").string();
    fs::copy_file(dir / "live.mcap", killed);  // before the recorder closes: as a killed process left it
    fs::resize_file(killed, fs::file_size(killed) - 100);
    frames = ReadFusedRecord(killed, &truncated);
    CHECK(frames.size() == 2);
    CHECK(truncated);
  }
  // One damaged byte inside the first frame's points: that frame is skipped and named, the others stay.
  {
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    const auto at = bytes.find(std::string(2 * sizeof(sensors::CloudPoint), '\x01'));
    REQUIRE(at != std::string::npos);
    bytes[at + 5] ^= 0x40;
    const std::string damaged = (dir / "damaged.mcap").string();
    std::ofstream(damaged, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    problems.clear();
    frames = ReadFusedRecord(damaged, &truncated, &problems);
    CHECK(frames.size() == 2);
    CHECK(frames[0].sequence == 2);
    REQUIRE_FALSE(problems.empty());
    CHECK(problems.front().find("damaged chunk") != std::string::npos);
  }
  // Garbage (or a record in the old length-prefixed format) is an error naming the file.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write("\x10\x00\x00\x00garbagegarbage!!", 20);
  }
  CHECK_THROWS_WITH_AS(ReadFusedRecord(path), doctest::Contains(path.c_str()), std::runtime_error);
  fs::remove_all(dir);
}

TEST_CASE("fusion: a full disk stops the frame record with an error naming the path and keeps the frames before") {
  namespace fs = std::filesystem;
  const std::string path = (fs::temp_directory_path() / ("fused_full_" + std::to_string(getpid()) + ".mcap")).string();
  fs::remove(path);
  uint64_t written = 0;
  {
    FillingDisk disk(path, 30'000);  // the embedded schema takes ~16 KB, each frame ~0.5 KB
    FusedRecorder rec(disk);
    int i = 1;
    while (i < 1000 && rec.Write(RecordFrame(i))) ++i;
    CHECK(i < 1000);
    written = rec.Frames();
    CHECK(written >= 3);
    CHECK(rec.Error().find(path) != std::string::npos);
    CHECK(rec.Error().find("No space left on device") != std::string::npos);
    CHECK_FALSE(rec.Write(RecordFrame(i + 1)));  // stopped: no further write, no throw
  }
  bool truncated = false;
  const auto frames = ReadFusedRecord(path, &truncated);
  CHECK(frames.size() == written);
  CHECK(truncated);
  fs::remove(path);
}

namespace {
// A file whose writes wait while the disk is stalled (a journal commit on a busy disk), counting those done.
class StallingDisk final : public mcap::Sink {
 public:
  explicit StallingDisk(const std::string& path) : path_(path) {
    std::string error;
    file_ = mcap::FileSink::Open(path, &error);
    REQUIRE_MESSAGE(file_, error);
  }
  bool Write(const void* data, size_t size) override {
    std::unique_lock lock(mutex_);
    resumed_.wait(lock, [&] { return !stalled_; });
    ++writes_;
    return file_->Write(data, size);
  }
  bool Flush() override { return file_->Flush(); }
  std::string Name() const override { return path_; }
  std::string Error() const override { return file_->Error(); }
  void Stall(bool stalled) {
    {
      std::lock_guard lock(mutex_);
      stalled_ = stalled;
    }
    resumed_.notify_all();
  }
  int Writes() const {
    std::lock_guard lock(mutex_);
    return writes_;
  }

 private:
  std::string path_;
  std::unique_ptr<mcap::FileSink> file_;
  mutable std::mutex mutex_;
  std::condition_variable resumed_;
  bool stalled_ = false;
  int writes_ = 0;
};
}  // namespace

TEST_CASE("fusion: the record's own thread takes frames while the disk stalls, leaves out and counts those past its queue, and writes the rest in order") {
  namespace fs = std::filesystem;
  const std::string path = (fs::temp_directory_path() / ("fused_stall_" + std::to_string(getpid()) + ".mcap")).string();
  fs::remove(path);
  std::vector<std::shared_ptr<const std::string>> wires;
  for (int i = 1; i <= 10; ++i) wires.push_back(std::make_shared<const std::string>(protocol::Encode(RecordFrame(i))));
  {
    StallingDisk disk(path);
    disk.Stall(true);
    // Room for three frames: the one being written stays counted until it is written.
    FusedRecordThread rec(std::make_unique<FusedRecorder>(disk), 3 * wires[0]->size() + 16);
    int accepted = 0;
    for (const auto& w : wires) accepted += rec.Push(*w, w, "fused", 0) ? 1 : 0;
    // Every Push returned while the disk had written nothing: none of them waited for it.
    CHECK(disk.Writes() == 0);
    CHECK(accepted == 3);
    CHECK(rec.Dropped() == 7);
    CHECK(rec.Frames() == 0);
    CHECK(wires[0].use_count() == 2);  // queued frames keep their bytes alive ...
    CHECK(wires[5].use_count() == 1);  // ... a frame left out is let go at once
    disk.Stall(false);
    REQUIRE(rec.WaitWritten(std::chrono::seconds(30)));
    CHECK(rec.Frames() == 3);
    CHECK(rec.Error().empty());
    CHECK(rec.PeakBytes() == 3 * wires[0]->size());
    CHECK(wires[0].use_count() == 1);  // written: the buffer goes back to its owner
    // The queue has room again.
    CHECK(rec.Push(*wires[9], wires[9], "fused", 0));
  }
  bool truncated = true;
  const auto frames = ReadFusedRecord(path, &truncated);
  CHECK_FALSE(truncated);
  REQUIRE(frames.size() == 4);
  CHECK(frames[0].sequence == 1);
  CHECK(frames[1].sequence == 2);
  CHECK(frames[2].sequence == 3);
  CHECK(frames[3].sequence == 10);

  // At exit on a stalled disk: the frames still queued after the wait are left out and counted, only the
  // frame being written is waited for. A frame larger than the whole queue still goes in when it is empty.
  fs::remove(path);
  {
    StallingDisk disk(path);
    disk.Stall(true);
    FusedRecordThread rec(std::make_unique<FusedRecorder>(disk), wires[0]->size() / 2);
    CHECK(rec.Push(*wires[0], wires[0], "fused", 0));  // alone, though larger than the queue
    CHECK_FALSE(rec.Push(*wires[1], wires[1], "fused", 0));
    CHECK(rec.Dropped() == 1);
    disk.Stall(false);
    REQUIRE(rec.WaitWritten(std::chrono::seconds(30)));
    CHECK(rec.Frames() == 1);
  }
  fs::remove(path);
  uint64_t left_out = 0;
  {
    StallingDisk disk(path);
    disk.Stall(true);
    FusedRecordThread rec(std::make_unique<FusedRecorder>(disk), 3 * wires[0]->size() + 16);
    for (int i = 0; i < 3; ++i) CHECK(rec.Push(*wires[i], wires[i], "fused", 0));
    CHECK_FALSE(rec.Finish(std::chrono::milliseconds(50)));
    left_out = rec.Dropped();
    CHECK((left_out == 2 || left_out == 3));  // all but the one being written (if the thread has taken it)
    CHECK(wires[2].use_count() == 1);
    disk.Stall(false);
    REQUIRE(rec.WaitWritten(std::chrono::seconds(30)));
    CHECK(rec.Frames() == 3 - left_out);
  }
  if (left_out == 2) CHECK(ReadFusedRecord(path).size() == 1);

  // A full disk stops the record on its thread: the error names the path, and nothing more is taken.
  fs::remove(path);
  {
    FillingDisk disk(path, 30'000);
    FusedRecordThread rec(std::make_unique<FusedRecorder>(disk));
    for (int i = 1; i < 1000 && rec.Error().empty(); ++i) {
      const auto w = std::make_shared<const std::string>(protocol::Encode(RecordFrame(i)));
      rec.Push(*w, w, "fused", 0);
      rec.WaitWritten(std::chrono::seconds(30));
    }
    CHECK(rec.Error().find(path) != std::string::npos);
    CHECK(rec.Error().find("No space left on device") != std::string::npos);
    CHECK(rec.Frames() >= 3);
    const auto w = std::make_shared<const std::string>(protocol::Encode(RecordFrame(2000)));
    CHECK_FALSE(rec.Push(*w, w, "fused", 0));
    CHECK(rec.Dropped() == 0);  // stopped, not full
  }
  fs::remove(path);
}

TEST_CASE("fusion: a cloud whose scan end would overflow (hostile stamp or duration) is no cloud") {
  protocol::PointCloud c = Cloud("a", kPeriod);
  CHECK(DecodeReceivedCloud(protocol::Encode(c)).has_value());
  for (const auto& [stamp, duration] : std::vector<std::pair<int64_t, int64_t>>{
           {std::numeric_limits<int64_t>::max(), kPeriod}, {std::numeric_limits<int64_t>::min(), kPeriod},
           {kPeriod, std::numeric_limits<int64_t>::max()}, {kPeriod, -1}, {(int64_t{1} << 62) + 1, 0}}) {
    c.header.stamp_ns = stamp;
    c.duration_ns = duration;
    CHECK_FALSE(DecodeReceivedCloud(protocol::Encode(c)).has_value());
  }
  c.header.stamp_ns = -(int64_t{1} << 62);  // the limits themselves are times
  c.duration_ns = 3'600'000'000'000;
  CHECK(DecodeReceivedCloud(protocol::Encode(c)).has_value());
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

// --- Lock-step: the fusion module against a node table and clouds in flight ---

namespace {

const char* kFarmSources[] = {"lidar_front", "lidar_rear", "lidar_left", "lidar_right"};
constexpr int64_t kStep = 10'000'000;  // 100 Hz lock-step

// Four lidar hosts (10 Hz) and a fusion node that waits at most 50 ms (sim) after a frame's first cloud.
config::SessionDef LockstepFarm(const std::string& fusion_extra = "") {
  std::string s = "[session]\nmode = \"lockstep\"\nstep_deadline_s = 0.2\n";
  for (const char* id : kFarmSources)
    s += std::string("[[node]]\nname = \"") + id + "\"\nrole = \"sensor\"\nattach_to = \"ego\"\n[[node.sensor]]\nid = \"" + id +
         "\"\ntype = \"lidar\"\npreset = \"vlp16\"\nrate_hz = 10\n";
  s += "[[node]]\nname = \"fusion\"\nrole = \"fusion\"\nattach_to = \"ego\"\n[node.fusion]\n"
       "sources = [\"lidar_front\", \"lidar_rear\", \"lidar_left\", \"lidar_right\"]\nperiod_s = 0.1\ntimeout_s = 0.05\n"
       "motion_compensation = false\n" + fusion_extra;
  return config::LoadSessionText(s, "farm.toml");
}

// What a fusion node sees of a lock-step session: the node table, a standing ego, and the clouds on the
// wire. A cloud shows up to a plain poll only `lag` steps after its host published it (a slow TCP stream
// in a session whose sim time runs as fast as the acknowledgements), but a receiver that waits gets the
// oldest cloud in flight: it is on its way and comes within the wait.
class LockstepWire final : public ModuleContext {
 public:
  struct InFlight {
    std::string bytes;
    int64_t visible_ns;  // sim time from which a plain poll sees it
  };
  int64_t step_ns = kStep;
  int64_t now_ns = 0;
  std::vector<protocol::NodeInfo> nodes;
  std::vector<RemoteEntity> remote;
  std::deque<InFlight> wire;
  struct Published {
    protocol::FusedCloud frame;
    int64_t at_ns;
  };
  std::vector<Published> fused;
  int blocking_receives = 0;  // receives with a wait that got a cloud

  std::vector<RemoteEntity> RemoteEntities(int64_t) const override { return remote; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 6; }
  std::vector<protocol::NodeInfo> Nodes() const override { return nodes; }
  int64_t StepNs() const override { return step_ns; }
  void PublishData(const protocol::Message& m) override {
    if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) fused.push_back(Published{*f, now_ns});
  }
  std::optional<transport::SharedBytes> ReceiveData(int64_t wait_ns) override {
    for (auto it = wire.begin(); it != wire.end(); ++it)
      if (it->visible_ns <= now_ns) {
        std::string b = std::move(it->bytes);
        wire.erase(it);
        return b;
      }
    if (wait_ns <= 0) return std::nullopt;
    if (wire.empty()) {
      // Nothing on its way: the wait runs out, as a socket's would.
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
      return std::nullopt;
    }
    ++blocking_receives;
    std::string b = std::move(wire.front().bytes);
    wire.pop_front();
    return b;
  }

  // Host `i` (node id i + 2) publishes its cloud finished at `end_ns`, seen by polls `lag` steps later.
  void Send(int i, int64_t end_ns, int lag) {
    wire.push_back(InFlight{protocol::Encode(protocol::Message{Cloud(kFarmSources[i], end_ns - kPeriod)}), end_ns + lag * kStep});
  }
};

std::vector<protocol::NodeInfo> FarmHosts() {
  std::vector<protocol::NodeInfo> nodes;
  for (uint32_t i = 0; i < 4; ++i) {
    protocol::NodeInfo n;
    n.node_id = i + 2;
    n.name = kFarmSources[i];
    n.role = protocol::Role::kSensor;
    n.pid = 1000 + i;
    n.endpoints = {protocol::DataEndpoint{kFarmSources[i], protocol::StreamKind::kLidar, static_cast<uint16_t>(7500 + i), "127.0.0.1"}};
    nodes.push_back(n);
  }
  return nodes;
}

std::string FusionSummary(const FusionModule& m) {
  std::vector<std::string> fields;
  m.Summarize(fields);
  return fields.empty() ? std::string() : fields[0];
}

bool SummaryHas(const std::string& summary, const std::string& fragment) {
  return summary.find(fragment) != std::string::npos;
}

// The four-host farm for `steps` steps of 10 ms (step_ns 0: real time): host i's clouds are seen by plain
// polls lag[i] steps after it published them. Returns the wire (with the fused frames) and the SUMMARY.
// `before_summary` runs after the last step, before the module's SUMMARY is taken.
std::pair<LockstepWire, std::string> RunFarm(const config::SessionDef& session, std::shared_ptr<spdlog::logger> log,
                                             const int (&lag)[4], int64_t step_ns, int64_t steps,
                                             const std::function<void()>& before_summary = {}) {
  FusionModule fusion(session, session.nodes[4], std::move(log));
  LockstepWire wire;
  wire.step_ns = step_ns;
  wire.nodes = FarmHosts();
  wire.remote = {testing::StandingCar(AttachedVehicleId("ego"), Vec3(0, 0, 0))};
  for (int64_t j = 0; j <= steps; ++j) {
    wire.now_ns = j * kStep;
    // Hosts finish their scans at whole multiples of the period and publish before acknowledging.
    if (wire.now_ns > 0 && wire.now_ns % kPeriod == 0)
      for (int i = 0; i < 4; ++i) wire.Send(i, wire.now_ns, lag[i]);
    fusion.Step(StepInfo{wire.now_ns, j == 0 ? 0 : kStep}, wire);
  }
  if (before_summary) before_summary();
  return std::make_pair(std::move(wire), FusionSummary(fusion));
}

}  // namespace

TEST_CASE("fusion in lock-step: clouds that reach the node several steps after they were measured still make complete frames of their own cycle") {
  const auto session = LockstepFarm();
  auto log = std::make_shared<spdlog::logger>("fusion", std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100));
  // Plain polls see front's cloud in the step it was measured, rear's 2 steps later, left's 6 and right's
  // 9: beyond the 5-step (50 ms) timeout, so a fusion that only polls publishes frames without them.
  const int lag[] = {0, 2, 6, 9};
  auto run = [&](int64_t step_ns) { return RunFarm(session, log, lag, step_ns, 101); };

  const auto [wire, summary] = run(kStep);
  INFO(summary);
  // Scans end at 0.1 .. 1.0 s: ten frames, each published at the step after its scans ended.
  REQUIRE(wire.fused.size() == 10);
  for (size_t c = 0; c < wire.fused.size(); ++c) {
    const auto& f = wire.fused[c];
    const int64_t end = static_cast<int64_t>(c + 1) * kPeriod;
    CHECK(f.frame.reference_ns == end);
    CHECK(f.at_ns == end + kStep);
    REQUIRE(f.frame.sources.size() == 4);
    for (const auto& s : f.frame.sources) {
      INFO("frame " << c + 1 << " source " << s.sensor_id);
      CHECK(s.status == protocol::SourceStatus::kOk);
      CHECK(s.stamp_ns == end - kPeriod);  // the cycle's own cloud, never an older or newer one
    }
  }
  CHECK(wire.blocking_receives > 0);  // it had to wait for clouds in flight
  CHECK(SummaryHas(summary, "\"lockstep_wait_expired\":0"));
  CHECK(SummaryHas(summary, "\"stale\":0"));

  // The same wire in real time (no step period: nothing is waited for) loses the slow sources.
  const auto [rt, rt_summary] = run(0);
  INFO(rt_summary);
  size_t complete = 0;
  for (const auto& f : rt.fused) {
    size_t ok = 0;
    for (const auto& s : f.frame.sources) ok += s.status == protocol::SourceStatus::kOk;
    complete += ok == 4;
  }
  CHECK(rt.fused.size() > 0);
  CHECK(complete == 0);
}

TEST_CASE("fusion groups: in real time each source's points lie where its cloud arrived, in lock-step in source order whatever the network did") {
  const auto session = LockstepFarm();
  auto log = std::make_shared<spdlog::logger>("fusion", std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100));
  const int lag[] = {3, 2, 1, 0};  // right's cloud comes first, front's last
  auto run = [&](int64_t step_ns) { return std::move(RunFarm(session, log, lag, step_ns, 61).first.fused); };
  using Groups = std::vector<std::pair<uint32_t, uint32_t>>;
  for (const int64_t step_ns : {kStep, int64_t{0}}) {
    INFO((step_ns ? "lock-step" : "real time"));
    const auto fused = run(step_ns);
    REQUIRE(fused.size() >= 5);
    for (const auto& f : fused) {
      REQUIRE(f.frame.sources.size() == 4);
      CHECK(f.frame.point_count == 40);
      // Lock-step: source order. Real time: right, left, rear, front, as they came.
      const Groups want = step_ns ? Groups{{0, 10}, {10, 10}, {20, 10}, {30, 10}} : Groups{{30, 10}, {20, 10}, {10, 10}, {0, 10}};
      CHECK(protocol::FusedGroups(f.frame) == want);
    }
  }
  // Voxel downsampling reads the groups in source order: the 40 points (all at the origin) make one
  // voxel, whose labels come from its first member, front's, not from right's, which came first.
  const auto voxel_session = LockstepFarm("voxel_m = 0.5\n");
  const auto voxel = RunFarm(voxel_session, log, lag, 0, 61).first.fused;
  REQUIRE(voxel.size() >= 5);
  for (const auto& f : voxel) {
    REQUIRE(f.frame.point_count == 1);
    CHECK(UnpackPointRecords(f.frame.points, 1, f.frame.point_stride)[0].source == 0);
    CHECK(protocol::FusedGroups(f.frame) == Groups{{0, 1}, {0, 0}, {0, 0}, {0, 0}});
  }
}

TEST_CASE("fusion PCD export: every n-th frame and its sources as PCD files, the fused points in source order whatever the arrival order") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fused_pcd_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const auto session = LockstepFarm("pcd_dir = \"" + dir.string() + "\"\npcd_every = 2\n");
  auto log = std::make_shared<spdlog::logger>("fusion", std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100));
  const int lag[] = {3, 2, 1, 0};  // right's cloud comes first, front's last
  const auto [wire, summary] = RunFarm(session, log, lag, 0, 61);
  INFO(summary);
  const size_t frames = wire.fused.size();
  REQUIRE(frames >= 4);
  CHECK(SummaryHas(summary, "\"pcd_frames\":" + std::to_string(frames / 2) + ","));
  CHECK(SummaryHas(summary, "\"pcd_dropped\":0,"));
  CHECK(SummaryHas(summary, "\"pcd_error\":\"\""));
  for (size_t seq = 1; seq <= frames; ++seq) {
    const std::string n = fmt::format("{:06d}", seq);
    INFO("frame " << seq);
    CHECK(fs::exists(dir / ("fused_" + n + ".pcd")) == (seq % 2 == 0));
    if (seq % 2) continue;
    const auto fused = sensors::ReadPcd((dir / ("fused_" + n + ".pcd")).string());
    REQUIRE(fused.size() == 40);
    for (size_t k = 0; k < fused.size(); ++k) CHECK(fused[k].source == k / 10);  // front, rear, left, right
    for (const char* id : kFarmSources) CHECK(sensors::ReadPcd((dir / (std::string(id) + "_" + n + ".pcd")).string()).size() == 10);
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".pcd";
  CHECK(files == 5 * (frames / 2));
  fs::remove_all(dir);
}

TEST_CASE("fusion PCD export: a full disk stops the export with an error naming the file, fusion goes on") {
  namespace fs = std::filesystem;
  if (!fs::exists("/dev/full")) return;
  const fs::path dir = fs::temp_directory_path() / ("fused_pcd_full_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The second export's fused file is written through /dev/full: every write to it fails with ENOSPC.
  fs::create_symlink("/dev/full", dir / "fused_000004.pcd.tmp");
  const auto session = LockstepFarm("pcd_dir = \"" + dir.string() + "\"\npcd_every = 2\n");
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto log = std::make_shared<spdlog::logger>("fusion", sink);
  const int lag[] = {0, 0, 0, 0};
  const auto [wire, summary] = RunFarm(session, log, lag, kStep, 101);
  INFO(summary);
  CHECK(wire.fused.size() == 10);  // every frame fused and published
  CHECK(SummaryHas(summary, "\"frames\":10,"));
  CHECK(SummaryHas(summary, "\"pcd_frames\":1,"));
  CHECK(SummaryHas(summary, "fused_000004.pcd"));
  CHECK(SummaryHas(summary, std::strerror(ENOSPC)));
  CHECK(fs::exists(dir / "fused_000002.pcd"));
  CHECK_FALSE(fs::exists(dir / "fused_000004.pcd"));
  CHECK_FALSE(fs::exists(dir / "fused_000006.pcd"));  // stopped: nothing more is written
  bool logged = false;
  for (const auto& line : sink->last_formatted()) logged |= line.find("PCD export stopped") != std::string::npos;
  CHECK(logged);
  fs::remove_all(dir);
}

TEST_CASE("fusion PCD export: a disk that does not take a write holds up no fused frame") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fused_pcd_stall_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto session = LockstepFarm("pcd_dir = \"" + dir.string() + "\"\npcd_every = 2\n");
  auto log = std::make_shared<spdlog::logger>("fusion", std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100));
  // The first export's fused file is a FIFO nobody reads: opening it for writing waits, as a write held
  // up by the disk does, until the reader below opens it.
  const fs::path fifo = dir / "fused_000002.pcd.tmp";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::mutex m;
  std::condition_variable cv;
  bool steps_done = false, reader_opened = false;
  std::atomic<bool> finished{false};
  std::atomic<int> open_errno{0};
  std::thread reader([&] {
    {
      std::unique_lock lock(m);
      // A fusion that waited for the disk would not finish its steps: after 20 s the reader opens anyway, so
      // that such a regression fails below instead of hanging.
      cv.wait_for(lock, std::chrono::seconds(20), [&] { return steps_done; });
      reader_opened = true;
    }
    // Read and write (never blocks on a FIFO), held open and drained until the test is done, so the writer
    // never writes into a FIFO without a reader.
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    if (fd < 0) {
      open_errno = errno;
      return;
    }
    char buf[4096];
    while (!finished) {
      if (::read(fd, buf, sizeof buf) <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::close(fd);
  });
  // Whatever happens below, the reader is released and joined (a joinable thread must not be destroyed).
  struct Release {
    std::function<void()> fn;
    ~Release() { fn(); }
  } release{[&] {
    {
      std::lock_guard lock(m);
      steps_done = true;
    }
    cv.notify_all();
    finished = true;
    if (reader.joinable()) reader.join();
  }};
  const int lag[] = {0, 0, 0, 0};
  bool stalled_through = false;
  const auto [wire, summary] = RunFarm(session, log, lag, kStep, 101, [&] {
    std::lock_guard lock(m);
    stalled_through = !reader_opened;  // every step ran while the export's first write was still held up
    steps_done = true;
    cv.notify_all();
  });
  release.fn();
  INFO(summary);
  CHECK(open_errno == 0);
  CHECK(stalled_through);
  CHECK(wire.fused.size() == 10);
  // The FIFO took the file's bytes but cannot be synced to a disk: that export stops with an error naming the
  // file; the frames queued behind it are let go.
  CHECK(SummaryHas(summary, "fused_000002.pcd"));
  CHECK(SummaryHas(summary, "\"pcd_frames\":0,"));
  fs::remove_all(dir);
}

TEST_CASE("fusion in lock-step: a gone or lost host is not waited for, a live silent one costs one bounded wait until it sends again") {
  const auto session = LockstepFarm();  // step_deadline_s = 0.2: the fusion waits at most 0.1 s per step
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto log = std::make_shared<spdlog::logger>("fusion", sink);
  FusionModule fusion(session, session.nodes[4], log);
  LockstepWire wire;
  wire.nodes = FarmHosts();
  wire.nodes[3].lost = true;                 // lidar_right: lost
  wire.nodes.erase(wire.nodes.begin() + 2);  // lidar_left: not in the table
  wire.remote = {testing::StandingCar(AttachedVehicleId("ego"), Vec3(0, 0, 0))};
  // lidar_front sends every cycle; lidar_rear is silent until its scan ending at 0.5 s, then every cycle.
  // Everything reaches plain polls only 3 steps late, so each frame needs the waits.
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t j = 0; j <= 107; ++j) {  // frames with sources missing go out 50 ms after they open
    wire.now_ns = j * kStep;
    if (wire.now_ns > 0 && wire.now_ns % kPeriod == 0) {
      wire.Send(0, wire.now_ns, 3);
      if (wire.now_ns >= 5 * kPeriod) wire.Send(1, wire.now_ns, 3);
    }
    fusion.Step(StepInfo{wire.now_ns, j == 0 ? 0 : kStep}, wire);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string summary = FusionSummary(fusion);
  INFO(summary);
  // One wait ran out (rear's first cycle, 0.1 s); had every step waited for it, 40 of them would have.
  CHECK(SummaryHas(summary, "\"lockstep_wait_expired\":1"));
  CHECK(wall_s < 2.0);
  int warned = 0;
  for (const auto& line : sink->last_formatted())
    warned += line.find("lock-step: no cloud from 'lidar_rear'") != std::string::npos;
  CHECK(warned == 1);
  REQUIRE(wire.fused.size() == 10);
  for (size_t c = 0; c < wire.fused.size(); ++c) {
    const auto& src = wire.fused[c].frame.sources;
    INFO("frame " << c + 1);
    CHECK(wire.fused[c].frame.reference_ns == static_cast<int64_t>(c + 1) * kPeriod);
    CHECK(src[0].status == protocol::SourceStatus::kOk);
    // rear: missing until it sends; from then on awaited again, so ok in every frame.
    CHECK(src[1].status == (c + 1 >= 5 ? protocol::SourceStatus::kOk : protocol::SourceStatus::kMissing));
    CHECK(src[2].status == protocol::SourceStatus::kMissing);
    CHECK(src[3].status == protocol::SourceStatus::kMissing);
  }
}

TEST_CASE("fusion in lock-step: the newest scan end at or before a step is a whole multiple of the period") {
  CHECK(LastScanEndNs(0, kPeriod) == 0);
  CHECK(LastScanEndNs(kPeriod - 1, kPeriod) == 0);
  CHECK(LastScanEndNs(kPeriod, kPeriod) == kPeriod);
  CHECK(LastScanEndNs(37 * kStep, kPeriod) == 3 * kPeriod);
  CHECK(LastScanEndNs(-kStep, kPeriod) == -kPeriod);  // before sim time 0: no scan has ended
}
