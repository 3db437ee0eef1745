// Fusion benchmark: four HDL-64E clouds from the corners of an ego driving a 20 m/s curve through 300
// vehicles and a ground plane, merged by the fusion node's code (node::FuseClouds, FrameAssembler, the
// wire codec). Figures, all from this run:
//  - compute per frame: motion-compensated fusion against two baselines on the same clouds: plain
//    concatenation with one transform per cloud (no compensation; the cost floor) and a per-point
//    compensation that extrapolates the ego pose for every point (what the column cache avoids);
//  - latency on loopback from the last of the four clouds being sent to the fused frame being
//    published: four PUB sockets -> one SUB -> decode, assemble, fuse, encode -> PUB;
//  - bytes per lidar stream per second at 10 Hz.
// Results and the command: docs/BENCHMARKS.md.
#include "platoon/dead_reckoning.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/transport/channel.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

using namespace platoon;

namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Stats {
  double p50 = 0, p99 = 0, mean = 0;
};
Stats Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  return s;
}

KinematicState Ego() {
  KinematicState k;
  k.pose.position_m = Vec3(0, -60, 0);
  k.velocity_mps = Vec3(20, 0, 0);
  k.angular_velocity_radps = Vec3(0, 0, 20.0 / 60.0);
  return k;
}

// 300 vehicles scattered over a 300 m x 300 m square around the ego's circle, a ground plane.
sensors::Scene MakeScene(uint64_t seed) {
  sensors::Scene scene;
  const std::vector<Vec3> g = {Vec3(-400, -400, 0), Vec3(400, -400, 0), Vec3(400, 400, 0), Vec3(-400, 400, 0)};
  const std::vector<std::array<uint32_t, 3>> tri = {{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(g, tri, sensors::SurfaceTag{1, 0, 1});
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> xy(-150, 150), heading(-M_PI, M_PI);
  for (uint32_t i = 1; i <= 300; ++i) {
    Vec3 p(xy(rng), xy(rng), 0.75);
    if (std::abs(p.head<2>().norm() - 60.0) < 4.0) p.x() += 10.0;  // keep the ego's lane clear
    scene.AddBox(Pose{p, Quat(Eigen::AngleAxisd(heading(rng), Vec3::UnitZ()))}, Vec3(2.3, 0.9, 0.75),
                 sensors::SurfaceTag{3, i, 2});
  }
  scene.Commit();
  return scene;
}

protocol::PointCloud MakeCloud(const sensors::Scene& scene, const sensors::Mounting& mount, const std::string& id,
                               uint64_t seed) {
  const KinematicState ego = Ego();
  const KinematicState m = sensors::MountPointKinematics(ego, mount);
  std::mt19937_64 rng(seed);
  const auto raw = sensors::Scan(scene, sensors::SensorPoseInWorld(ego.pose, mount), m.velocity_mps,
                                 ego.angular_velocity_radps, sensors::Hdl64Def(), rng);
  std::vector<sensors::CloudPoint> pts;
  pts.reserve(raw.size());
  for (const auto& p : raw) pts.push_back(sensors::ToCloudPoint(p, 0));
  protocol::PointCloud c;
  c.header.sensor_id = id;
  c.header.kind = protocol::StreamKind::kLidar;
  c.header.mount_position_m = mount.position_m;
  c.header.mount_orientation = mount.orientation;
  c.header.host_epoch = seed;
  c.duration_ns = 100'000'000;
  c.point_count = static_cast<uint32_t>(pts.size());
  c.point_stride = sizeof(sensors::CloudPoint);
  c.points = node::PackPoints(pts);
  return c;
}

// Baseline: the ego pose extrapolated for every point (no per-column cache).
std::vector<sensors::CloudPoint> PerPointCompensation(const std::vector<node::SourceCloud>& in, int64_t ref,
                                                      const node::EgoTrack& ego) {
  std::vector<sensors::CloudPoint> out;
  const Pose r = ego.PoseAt(ref);
  for (const auto& c : in) {
    auto pts = node::UnpackPoints(c.cloud->points, c.cloud->point_stride);
    const Pose mount{c.cloud->header.mount_position_m, c.cloud->header.mount_orientation};
    for (auto& p : pts) {
      const Pose e = ego.PoseAt(c.cloud->header.stamp_ns + SToNs(p.time_offset_s));
      const Vec3 w = e.position_m + e.orientation * (mount.position_m + mount.orientation * Vec3(p.x_m, p.y_m, p.z_m));
      const Vec3 v = r.orientation.inverse() * (w - r.position_m);
      p.x_m = static_cast<float>(v.x());
      p.y_m = static_cast<float>(v.y());
      p.z_m = static_cast<float>(v.z());
      p.source = c.source;
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fusion_bench: fusion compute, loopback latency and stream bytes for four HDL-64E clouds"};
  int frames = 50, latency_frames = 50;
  app.add_option("--frames", frames, "Compute repetitions per variant")->check(CLI::Range(3, 100000));
  app.add_option("--latency-frames", latency_frames, "Frames sent over loopback")->check(CLI::Range(3, 100000));
  CLI11_PARSE(app, argc, argv);

  std::printf("building the scene and four HDL-64E scans on a 20 m/s curve (radius 60 m)...\n");
  const auto scene = MakeScene(7);
  const std::vector<std::pair<std::string, sensors::Mounting>> mounts = {
      {"front", sensors::MountingFromRpy(Vec3(3.7, 0, 1.9), 0, 0, 0)},
      {"rear", sensors::MountingFromRpy(Vec3(-0.9, 0, 1.9), 0, 0, 180)},
      {"left", sensors::MountingFromRpy(Vec3(1.4, 0.9, 1.9), 0, 0, 90)},
      {"right", sensors::MountingFromRpy(Vec3(1.4, -0.9, 1.9), 0, 0, -90)}};
  std::vector<protocol::PointCloud> clouds;
  for (size_t i = 0; i < mounts.size(); ++i) clouds.push_back(MakeCloud(scene, mounts[i].second, mounts[i].first, i + 1));
  std::vector<node::SourceCloud> in;
  size_t total = 0;
  for (size_t i = 0; i < clouds.size(); ++i) {
    in.push_back(node::SourceCloud{&clouds[i], static_cast<uint8_t>(i)});
    total += clouds[i].point_count;
  }
  node::EgoTrack ego;
  ego.Add(Ego());
  auto pose = [&](int64_t t) { return ego.PoseAt(t); };
  const int64_t ref = 100'000'000;

  std::vector<double> fused_ms, concat_ms, naive_ms;
  for (int i = 0; i < frames; ++i) {
    auto t0 = Clock::now();
    auto a = node::FuseClouds(in, ref, pose, true);
    fused_ms.push_back(MsSince(t0));
    t0 = Clock::now();
    auto b = node::FuseClouds(in, ref, pose, false);
    concat_ms.push_back(MsSince(t0));
    if (i < std::max(3, frames / 10)) {
      t0 = Clock::now();
      auto c = PerPointCompensation(in, ref, ego);
      naive_ms.push_back(MsSince(t0));
      if (c.size() != a.size()) return 1;
    }
    if (a.size() != total || b.size() != total) return 1;
  }
  const auto f = Summarise(fused_ms), c = Summarise(concat_ms), n = Summarise(naive_ms);
  std::printf("\n4 x HDL-64E: %zu points per fused frame (%u %u %u %u)\n", total, clouds[0].point_count,
              clouds[1].point_count, clouds[2].point_count, clouds[3].point_count);
  std::printf("%-52s %9s %9s %9s\n", "compute per frame, one core", "p50 ms", "p99 ms", "mean ms");
  std::printf("%-52s %9.3f %9.3f %9.3f\n", "motion-compensated fusion (FuseClouds)", f.p50, f.p99, f.mean);
  std::printf("%-52s %9.3f %9.3f %9.3f\n", "baseline: concatenation, one transform per cloud", c.p50, c.p99, c.mean);
  std::printf("%-52s %9.3f %9.3f %9.3f\n", "baseline: compensation with a pose per point", n.p50, n.p99, n.mean);
  std::printf("goal <= 3 ms: %s; compensation costs %.2fx concatenation; column cache %.1fx faster than per point\n",
              f.p50 <= 3.0 ? "met" : "NOT met", f.p50 / c.p50, n.p50 / f.p50);

  // --- Loopback latency: last cloud sent -> fused frame published ---
  zmq::context_t ctx(1);
  transport::ChannelDef def{.send_hwm = 100, .receive_hwm = 100};
  std::vector<std::unique_ptr<transport::Channel>> pubs;
  transport::Channel sub(ctx, transport::Pattern::kSub, def), out(ctx, transport::Pattern::kPub, def),
      sink(ctx, transport::Pattern::kSub, def);
  for (size_t i = 0; i < clouds.size(); ++i) {
    pubs.push_back(std::make_unique<transport::Channel>(ctx, transport::Pattern::kPub, def));
    sub.Connect(pubs.back()->Bind("tcp://127.0.0.1:*"));
  }
  sink.Connect(out.Bind("tcp://127.0.0.1:*"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // slow joiner: let the SUBs connect
  std::vector<std::string> names;
  for (const auto& cl : clouds) names.push_back(cl.header.sensor_id);
  std::atomic<int64_t> last_sent_ns{0};
  std::atomic<bool> done{false};
  std::vector<double> latency_ms, arrival_ms, fuse_part_ms, encode_part_ms, send_part_ms;
  uint64_t bytes_per_cloud = 0;
  std::thread fusion([&] {
    node::FrameAssembler fa(names, 100'000'000, 50'000'000);
    while (!done.load()) {
      auto p = sub.Receive(std::chrono::milliseconds(20));
      if (!p) continue;
      const auto d = protocol::Decode(p->data);
      auto* cloud = d.message ? std::get_if<protocol::PointCloud>(&*d.message) : nullptr;
      if (!cloud) continue;
      const int64_t now = transport::MonotonicNowNs();
      fa.Offer(std::move(*cloud), now);
      if (!fa.Due(now)) continue;
      arrival_ms.push_back(static_cast<double>(now - last_sent_ns.load()) / 1e6);
      auto frame = fa.Take();
      std::vector<node::SourceCloud> src;
      for (size_t i = 0; i < frame.clouds.size(); ++i)
        if (frame.clouds[i]) src.push_back(node::SourceCloud{&*frame.clouds[i], static_cast<uint8_t>(i)});
      auto t_fuse = Clock::now();
      auto pts = node::FuseClouds(src, frame.reference_ns, pose, true);
      fuse_part_ms.push_back(MsSince(t_fuse));
      auto t_enc = Clock::now();
      protocol::FusedCloud msg;
      msg.sources = frame.meta;
      msg.reference_ns = frame.reference_ns;
      msg.point_count = static_cast<uint32_t>(pts.size());
      msg.point_stride = sizeof(sensors::CloudPoint);
      msg.points = node::PackPoints(pts);
      const std::string bytes = protocol::Encode(msg);
      encode_part_ms.push_back(MsSince(t_enc));
      auto t_send = Clock::now();
      out.Send(bytes);
      send_part_ms.push_back(MsSince(t_send));
      latency_ms.push_back(static_cast<double>(transport::MonotonicNowNs() - last_sent_ns.load()) / 1e6);
    }
  });
  std::vector<std::string> wire;
  for (int frame = 0; frame < latency_frames; ++frame) {
    wire.clear();
    for (auto cl : clouds) {
      cl.header.stamp_ns = frame * 100'000'000LL;
      cl.header.sequence = static_cast<uint64_t>(frame + 1);
      wire.push_back(protocol::Encode(cl));
    }
    bytes_per_cloud = wire[0].size();
    for (size_t i = 0; i < wire.size(); ++i) {
      if (i + 1 == wire.size()) last_sent_ns.store(transport::MonotonicNowNs());
      pubs[i]->Send(wire[i]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    while (sink.TryReceive()) {
    }
  }
  done.store(true);
  fusion.join();
  if (latency_ms.size() < 3) {
    std::printf("latency: only %zu fused frames came back\n", latency_ms.size());
    return 1;
  }
  const auto l = Summarise(latency_ms), a = Summarise(arrival_ms);
  std::printf("\nloopback latency, last cloud sent -> fused frame published (%zu frames): p50 %.3f ms, p99 %.3f ms; "
              "goal <= 5 ms: %s\n", latency_ms.size(), l.p50, l.p99, l.p50 <= 5.0 ? "met" : "NOT met");
  std::printf("  of which transfer and decode of the four clouds: p50 %.3f ms; assemble, fuse, encode, publish: p50 %.3f ms\n",
              a.p50, l.p50 - a.p50);
  std::printf("  p50 parts: fuse %.3f ms, pack + encode %.3f ms, send %.3f ms\n", Summarise(fuse_part_ms).p50,
              Summarise(encode_part_ms).p50, Summarise(send_part_ms).p50);
  std::printf("anchor: Autoware's point-cloud concatenation, about 24 ms typical with a 0.2 s timeout\n");
  std::printf("stream: %.0f bytes per HDL-64E cloud, %.1f MB/s per lidar at 10 Hz\n", static_cast<double>(bytes_per_cloud),
              static_cast<double>(bytes_per_cloud) * 10 / 1e6);
  return 0;
}
