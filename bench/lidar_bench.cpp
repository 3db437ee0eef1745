// Lidar benchmark: ray casts per second on one core through the Embree scene (sensors/scene.hpp) on a
// street of 300 vehicle boxes, a ground plane and buildings; baseline, same run and same rays: a plain
// Bullet btCollisionWorld::rayTest loop over the same geometry. Then the cost of re-posing all vehicles,
// and ms per IBEO LUX and HDL-64E frame (divergence sub-rays, SNR, echoes and noise) with 1 and 2
// threads, each against a bare rtcIntersect16 loop over exactly the same ray packets on the same Embree
// scene (the floor the model cannot go below), and a check that 1 and 2 threads give the same points.
#include "platoon/process/memory.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/scene.hpp"

#include <CLI/CLI.hpp>
#include <BulletCollision/NarrowPhaseCollision/btRaycastCallback.h>
#include <btBulletCollisionCommon.h>
#include <embree3/rtcore.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>
#include <random>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct BoxSpec {
  Pose pose;  // centre
  Vec3 half_m;
};

// The street: vehicles in 6 lanes along x over +-150 m around the sensor, buildings on both sides.
struct Street {
  std::vector<BoxSpec> vehicles, buildings;
  double ground_half_m = 500.0;
};

Street MakeStreet(int vehicles, uint64_t seed) {
  Street s;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> along(-150.0, 150.0), jitter(-0.3, 0.3), yaw(-0.05, 0.05);
  for (int i = 0; i < vehicles; ++i) {
    const int lane = i % 6;
    BoxSpec b;
    b.half_m = Vec3(2.3, 0.9, 0.75);
    b.pose.position_m = Vec3(along(rng), (lane - 2.5) * 3.5 + jitter(rng), 0.75);
    b.pose.orientation = Quat(Eigen::AngleAxisd(yaw(rng), Vec3::UnitZ()));
    s.vehicles.push_back(b);
  }
  for (int i = 0; i < 40; ++i) {
    BoxSpec b;
    b.half_m = Vec3(9.0, 6.0, 6.0 + (i % 5) * 3.0);
    b.pose.position_m = Vec3(-190.0 + (i / 2) * 20.0, (i % 2 ? 1 : -1) * 20.0, b.half_m.z());
    s.buildings.push_back(b);
  }
  return s;
}

Scene BuildEmbree(const Street& s, std::vector<DynamicId>* ids) {
  Scene scene;
  const double g = s.ground_half_m;
  const std::vector<Vec3> ground{{-g, -g, 0}, {g, -g, 0}, {g, g, 0}, {-g, g, 0}};
  const std::vector<std::array<uint32_t, 3>> tris{{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tris, SurfaceTag{1, 0, 0});
  for (size_t i = 0; i < s.buildings.size(); ++i)
    scene.AddBox(s.buildings[i].pose, s.buildings[i].half_m, SurfaceTag{2, static_cast<uint32_t>(1000 + i), 2});
  for (size_t i = 0; i < s.vehicles.size(); ++i)
    ids->push_back(scene.AddDynamicBox(s.vehicles[i].half_m, SurfaceTag{3, static_cast<uint32_t>(1 + i), 1},
                                       s.vehicles[i].pose));
  scene.Commit();
  return scene;
}

// Plain Bullet collision world holding the same boxes (the ground as a 1 m slab with its top at z = 0).
struct BulletWorld {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher{&config};
  btDbvtBroadphase broadphase;
  btCollisionWorld world{&dispatcher, &broadphase, &config};
  std::vector<std::unique_ptr<btBoxShape>> shapes;
  std::unique_ptr<btStaticPlaneShape> ground;
  std::vector<std::unique_ptr<btCollisionObject>> objects;

  void Add(const Pose& pose, const Vec3& half) {
    shapes.push_back(std::make_unique<btBoxShape>(btVector3(btScalar(half.x()), btScalar(half.y()), btScalar(half.z()))));
    shapes.back()->setMargin(0);
    auto obj = std::make_unique<btCollisionObject>();
    obj->setCollisionShape(shapes.back().get());
    const Quat& q = pose.orientation;
    obj->setWorldTransform(btTransform(btQuaternion(btScalar(q.x()), btScalar(q.y()), btScalar(q.z()), btScalar(q.w())),
                                       btVector3(btScalar(pose.position_m.x()), btScalar(pose.position_m.y()),
                                                 btScalar(pose.position_m.z()))));
    world.addCollisionObject(obj.get());
    objects.push_back(std::move(obj));
  }
  explicit BulletWorld(const Street& s) {
    // Ground: an infinite plane z = 0 (ray vs. plane is exact; a 1 km box is not, see docs/LIDAR.md).
    ground = std::make_unique<btStaticPlaneShape>(btVector3(0, 0, 1), btScalar(0));
    auto obj = std::make_unique<btCollisionObject>();
    obj->setCollisionShape(ground.get());
    world.addCollisionObject(obj.get());
    objects.push_back(std::move(obj));
    for (const auto& b : s.buildings) Add(b.pose, b.half_m);
    for (const auto& b : s.vehicles) Add(b.pose, b.half_m);
    world.updateAabbs();
  }
  ~BulletWorld() {
    for (auto& o : objects) world.removeCollisionObject(o.get());
  }
};

// Exact reference: brute-force ray vs. plane z = 0 and slab test against every oriented box, in double.
double ExactDistance(const Street& s, const Ray& r) {
  const Vec3 d = r.direction.normalized();
  double best = r.tmax_m;
  bool hit = false;
  if (d.z() < 0.0) {
    const double t = -r.origin_m.z() / d.z();
    if (t >= 0.0 && t <= best) best = t, hit = true;
  }
  auto slab = [&](const BoxSpec& b) {
    const Quat qi = b.pose.orientation.conjugate();
    const Vec3 o = qi * (r.origin_m - b.pose.position_m), v = qi * d;
    double t0 = 0.0, t1 = best;
    for (int k = 0; k < 3; ++k) {
      if (std::abs(v[k]) < 1e-15) {
        if (std::abs(o[k]) > b.half_m[k]) return;
        continue;
      }
      double a = (-b.half_m[k] - o[k]) / v[k], c = (b.half_m[k] - o[k]) / v[k];
      if (a > c) std::swap(a, c);
      t0 = std::max(t0, a);
      t1 = std::min(t1, c);
      if (t0 > t1) return;
    }
    if (t0 <= best) best = t0, hit = true;
  };
  for (const auto& b : s.vehicles) slab(b);
  for (const auto& b : s.buildings) slab(b);
  return hit ? best : -1.0;
}

// The rays of one frame of `def` from `pose`, sub-rays included, as Scan() casts them (no motion).
std::vector<Ray> FrameRays(const LidarDef& def, const Pose& pose) {
  std::vector<Ray> rays;
  const double ha = 0.5 * def.beam_divergence_h_rad, he = 0.5 * def.beam_divergence_v_rad;
  std::vector<std::pair<double, double>> offsets{{0, 0}};
  if (def.divergence_sampling == DivergenceSampling::kElevationPair || def.divergence_sampling == DivergenceSampling::kCross)
    offsets.insert(offsets.end(), {{0, he}, {0, -he}});
  if (def.divergence_sampling == DivergenceSampling::kAzimuthPair || def.divergence_sampling == DivergenceSampling::kCross)
    offsets.insert(offsets.end(), {{ha, 0}, {-ha, 0}});
  for (int c = 0; c < def.ColumnCount(); ++c)
    for (double el : def.channel_elevations_rad)
      for (const auto& [da, de] : offsets) {
        const double a = def.ColumnAzimuthRad(c) + da, e = el + de;
        rays.push_back({pose.position_m, pose.orientation * Vec3(std::cos(e) * std::cos(a), std::cos(e) * std::sin(a), std::sin(e)),
                        def.max_range_m});
      }
  return rays;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lidar_bench: Embree ray casts per second on one core against a Bullet btCollisionWorld::rayTest\n"
               "loop on the same street (measured in the same run), ms per IBEO LUX frame with divergence\n"
               "sub-rays, and the HDL-64E real-time factor on one core."};
  int vehicles = 300;
  int frames = 20;
  int bullet_rays = 60000;
  uint64_t seed = 1;
  app.add_option("--vehicles", vehicles, "Vehicle boxes on the street")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--frames", frames, "Lidar frames per timing")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--bullet-rays", bullet_rays, "Rays cast through Bullet (the slow baseline)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "Seed of the street layout and the lidar noise")->capture_default_str();
  bool default_malloc = false;
  app.add_flag("--default-malloc", default_malloc,
               "Leave the C library's allocator as it is (platoon-node keeps large freed blocks: "
               "process::KeepLargeAllocations)");
  CLI11_PARSE(app, argc, argv);
  if (!default_malloc) platoon::process::KeepLargeAllocations();

  const Street street = MakeStreet(vehicles, seed);
  std::vector<DynamicId> ids;
  double t0 = Now();
  Scene scene = BuildEmbree(street, &ids);
  const double embree_build_ms = (Now() - t0) * 1e3;
  BulletWorld bullet(street);
  std::printf("lidar_bench: %d vehicles, %zu buildings, ground %.0f m square; Embree build %.1f ms; allocator: %s\n",
              vehicles, street.buildings.size(), 2 * street.ground_half_m, embree_build_ms,
              default_malloc ? "C library default" : "as platoon-node (large blocks kept)");

  // --- 1. Ray casts per second: HDL-64E rays (all directions, ground to horizon) from the street centre.
  const Pose sensor{Vec3(0.0, 1.75, 1.9), Quat::Identity()};
  const std::vector<Ray> rays = FrameRays(Hdl64Def(), sensor);
  std::vector<Hit> hits(rays.size());
  scene.IntersectBatch(rays, hits);  // warm-up
  int reps = 0;
  t0 = Now();
  do {
    scene.IntersectBatch(rays, hits);
    ++reps;
  } while (Now() - t0 < 1.0);
  const double embree_rps = static_cast<double>(rays.size()) * reps / (Now() - t0);
  reps = 0;
  t0 = Now();
  size_t single_hits = 0;
  do {
    for (const Ray& r : rays) single_hits += scene.Intersect(r.origin_m, r.direction, r.tmax_m).valid;
    ++reps;
  } while (Now() - t0 < 1.0);
  const double embree1_rps = static_cast<double>(rays.size()) * reps / (Now() - t0);

  const size_t nb = std::min(rays.size(), static_cast<size_t>(bullet_rays));
  const size_t stride = rays.size() / nb;
  // One Bullet ray test, as the baseline casts it.
  auto bullet_cast = [&bullet](const Ray& r) {
    const Vec3 to = r.origin_m + r.direction.normalized() * r.tmax_m;
    const btVector3 bf(btScalar(r.origin_m.x()), btScalar(r.origin_m.y()), btScalar(r.origin_m.z()));
    const btVector3 bt(btScalar(to.x()), btScalar(to.y()), btScalar(to.z()));
    btCollisionWorld::ClosestRayResultCallback cb(bf, bt);
    bullet.world.rayTest(bf, bt, cb);
    return cb;
  };
  size_t exact_embree = 0, exact_bullet = 0;
  size_t agree = 0, agree_10cm = 0, same_hit = 0, bullet_hits = 0, bullet_done = 0;
  t0 = Now();
  for (size_t k = 0; k < nb; ++k) {
    const Ray& r = rays[k * stride];
    const auto cb = bullet_cast(r);
    ++bullet_done;
    const Hit& e = hits[k * stride];
    const bool bh = cb.hasHit();
    bullet_hits += bh;
    const double bd = bh ? double(cb.m_closestHitFraction) * r.tmax_m : 0.0;
    same_hit += bh == e.valid;
    const double x = ExactDistance(street, r);
    exact_embree += (x < 0.0) == !e.valid && (x < 0.0 || std::abs(x - e.distance_m) < 0.001);
    exact_bullet += (x < 0.0) == !bh && (x < 0.0 || std::abs(x - bd) < 0.001);
    if (bh == e.valid && (!bh || std::abs(bd - e.distance_m) < 0.01)) ++agree;
    if (bh == e.valid && (!bh || std::abs(bd - e.distance_m) < 0.10)) ++agree_10cm;
  }
  // The exact reference runs inside the Bullet loop; time Bullet alone again without it.
  t0 = Now();
  for (size_t k = 0; k < nb; ++k) {
    const Ray& r = rays[k * stride];
    const auto cb = bullet_cast(r);
  }
  const double bullet_rps = static_cast<double>(bullet_done) / (Now() - t0);
  std::printf("\nray casts, one core, %zu HDL-64E rays (%zu through Bullet):\n", rays.size(), bullet_done);
  std::printf("  %-28s %12.0f rays/s  %8.1f ns/ray\n", "Embree batch (rtcIntersect16)", embree_rps, 1e9 / embree_rps);
  std::printf("  %-28s %12.0f rays/s  %8.1f ns/ray  (%zu hits)\n", "Embree single (rtcIntersect1)", embree1_rps,
              1e9 / embree1_rps, single_hits / static_cast<size_t>(reps));
  std::printf("  %-28s %12.0f rays/s  %8.1f ns/ray\n", "Bullet rayTest (baseline)", bullet_rps, 1e9 / bullet_rps);
  std::printf("  Embree / Bullet speed-up: %.1fx batch, %.1fx single\n", embree_rps / bullet_rps, embree1_rps / bullet_rps);
  // Bullet's default subsimplex ray-vs-convex cast stops a few cm short of box faces; Embree is exact
  // to float precision (tests/sensors/lidar_test.cpp checks box distances to 1e-6).
  std::printf("  vs. exact ray/box slab test (double): Embree within 1 mm on %.2f %%, Bullet on %.2f %% of rays\n",
              100.0 * exact_embree / bullet_done, 100.0 * exact_bullet / bullet_done);
  std::printf("  Bullet vs. Embree: hit/miss %.2f %%, distance within 1 cm %.2f %%, within 10 cm %.2f %% (%zu Bullet hits)\n",
              100.0 * same_hit / bullet_done, 100.0 * agree / bullet_done, 100.0 * agree_10cm / bullet_done, bullet_hits);

  // --- 2. Re-posing every vehicle and recommitting, once per frame.
  std::mt19937_64 rng(seed);
  t0 = Now();
  for (int f = 0; f < frames; ++f) {
    for (size_t i = 0; i < ids.size(); ++i) {
      Pose p = street.vehicles[i].pose;
      p.position_m.x() += 0.05 * (f + 1);
      scene.SetDynamicPose(ids[i], p);
    }
    scene.Commit();
  }
  const double repose_ms = (Now() - t0) * 1e3 / frames;

  // --- 3. Full lidar frames: rays + sub-rays + SNR + echo merging + noise, sensor moving at 15 m/s,
  // against a bare rtcIntersect16 loop over exactly the same ray packets on the same Embree scene.
  const Vec3 velocity(15, 0, 0), yaw_rate(0, 0, 0.1);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Per-frame times in ms; reports the median and the fastest frame.
  struct Timing {
    double median_ms, min_ms;
  };
  auto time_scan = [&](LidarDef def, int threads, size_t* points) {
    def.threads = threads;
    Scan(scene, sensor, velocity, yaw_rate, def, rng);  // warm-up
    std::vector<double> ms;
    for (int f = 0; f < frames; ++f) {
      const double s = Now();
      *points = Scan(scene, sensor, velocity, yaw_rate, def, rng).size();
      ms.push_back((Now() - s) * 1e3);
    }
    return Timing{median(ms), *std::min_element(ms.begin(), ms.end())};
  };
  auto* const rtc_scene = static_cast<RTCScene>(scene.EmbreeSceneHandle());
  auto time_bare = [&](const LidarDef& def, size_t* rays_cast) {
    const std::vector<RayPacket16> packets = ScanRayPackets(sensor, velocity, yaw_rate, def);
    struct alignas(64) Valid16 {
      int lane[16];
    };
    std::vector<RTCRayHit16> rh(packets.size());  // RTC_ALIGN(64): over-aligned new
    std::vector<Valid16> valid(packets.size());
    *rays_cast = 0;
    for (size_t p = 0; p < packets.size(); ++p) {
      *rays_cast += packets[p].count;
      for (int i = 0; i < 16; ++i) {
        const bool on = i < packets[p].count;
        valid[p].lane[i] = on ? -1 : 0;
        rh[p].ray.org_x[i] = packets[p].org_x[i], rh[p].ray.org_y[i] = packets[p].org_y[i];
        rh[p].ray.org_z[i] = packets[p].org_z[i];
        rh[p].ray.dir_x[i] = on ? packets[p].dir_x[i] : 1.0f, rh[p].ray.dir_y[i] = packets[p].dir_y[i];
        rh[p].ray.dir_z[i] = packets[p].dir_z[i];
        rh[p].ray.tnear[i] = 0.0f, rh[p].ray.time[i] = 0.0f, rh[p].ray.mask[i] = 0xFFFFFFFFu;
        rh[p].ray.id[i] = static_cast<unsigned>(i), rh[p].ray.flags[i] = 0;
      }
    }
    std::vector<double> ms;
    size_t n_hits = 0;
    for (int f = 0; f <= frames; ++f) {
      const double s = Now();
      for (size_t p = 0; p < packets.size(); ++p) {
        for (int i = 0; i < 16; ++i) {
          rh[p].ray.tfar[i] = packets[p].tmax_m[i];
          rh[p].hit.geomID[i] = RTC_INVALID_GEOMETRY_ID;
          rh[p].hit.instID[0][i] = RTC_INVALID_GEOMETRY_ID;
        }
        RTCIntersectContext ctx;
        rtcInitIntersectContext(&ctx);
        ctx.flags = RTC_INTERSECT_CONTEXT_FLAG_COHERENT;
        rtcIntersect16(valid[p].lane, rtc_scene, &ctx, &rh[p]);
      }
      if (f > 0) ms.push_back((Now() - s) * 1e3);  // frame 0 warms up
      n_hits = 0;
      for (size_t p = 0; p < packets.size(); ++p)
        for (int i = 0; i < packets[p].count; ++i) n_hits += rh[p].hit.geomID[i] != RTC_INVALID_GEOMETRY_ID;
    }
    std::printf("    (bare loop: %zu of %zu rays hit)\n", n_hits, *rays_cast);
    return Timing{median(ms), *std::min_element(ms.begin(), ms.end())};
  };
  // The same seed must give bit-identical points with 1 and 2 threads.
  auto same_with_threads = [&](LidarDef def) {
    std::mt19937_64 a(seed), b(seed);
    def.threads = 1;
    const auto p1 = Scan(scene, sensor, velocity, yaw_rate, def, a);
    def.threads = 2;
    const auto p2 = Scan(scene, sensor, velocity, yaw_rate, def, b);
    return p1.size() == p2.size() && std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(LidarPoint)) == 0;
  };

  std::printf("\nlidar frames (%d frames each, median / fastest; sensor at 15 m/s turning 0.1 rad/s):\n", frames);
  std::printf("  re-pose %zu vehicles + commit: %8.3f ms per frame\n", ids.size(), repose_ms);
  for (const LidarDef& def : {IbeoLuxDef(), Hdl64Def()}) {
    const char* name = def.channel_elevations_rad.size() == 4 ? "IBEO LUX" : "HDL-64E";
    size_t rays_cast = 0, points1 = 0, points2 = 0;
    std::printf("  %s: %d beams x %d rays\n", name, def.BeamCount(), def.RaysPerBeam());
    const Timing bare = time_bare(def, &rays_cast);
    const Timing one = time_scan(def, 1, &points1);
    const Timing two = time_scan(def, 2, &points2);
    const double period_ms = 1e3 / def.rotation_rate_hz;
    std::printf("    bare rtcIntersect16 loop, same %zu rays: %8.3f / %8.3f ms  (%.1f ns/ray)\n", rays_cast,
                bare.median_ms, bare.min_ms, 1e6 * bare.median_ms / rays_cast);
    std::printf("    full model, 1 thread:  %8.3f / %8.3f ms  %.2fx the bare loop, %zu points, %.1f %% of the %.0f ms "
                "period, real-time factor %.2f\n",
                one.median_ms, one.min_ms, one.median_ms / bare.median_ms, points1, 100.0 * one.median_ms / period_ms,
                period_ms, period_ms / one.median_ms);
    std::printf("    full model, 2 threads: %8.3f / %8.3f ms  scaling 1 -> 2 threads %.2fx, real-time factor %.2f\n",
                two.median_ms, two.min_ms, one.median_ms / two.median_ms, period_ms / two.median_ms);
    std::printf("    points identical with 1 and 2 threads: %s\n", same_with_threads(def) ? "yes" : "NO");
    // What a sensor host does with the scan before it goes on the wire (sensors/src/kinds/lidar_sensor.cpp):
    // the echoes as packed point records, then the encoded PointCloud. Baseline, same run: the records
    // through a CloudPoint vector (ToCloudPoint, then PackPointRecords), as before 2026-11-26.
    {
      const std::vector<LidarPoint> scan = Scan(scene, sensor, velocity, yaw_rate, def, rng);
      std::vector<double> via_ms, direct_ms, encode_ms;
      size_t wire_bytes = 0;
      for (int f = 0; f < frames; ++f) {
        double s = Now();
        std::vector<CloudPoint> pts;
        pts.reserve(scan.size());
        for (const auto& p : scan) pts.push_back(ToCloudPoint(p, 0));
        const std::string via = PackPointRecords(pts);
        via_ms.push_back((Now() - s) * 1e3);
        s = Now();
        protocol::PointCloud msg;
        msg.point_count = static_cast<uint32_t>(scan.size());
        msg.point_stride = point_record::kStride;
        msg.points = PackLidarPoints(scan, 0);
        direct_ms.push_back((Now() - s) * 1e3);
        if (msg.points != via) {
          std::printf("    PackLidarPoints differs from ToCloudPoint + PackPointRecords\n");
          return 1;
        }
        s = Now();
        wire_bytes = protocol::Encode(msg).size();
        encode_ms.push_back((Now() - s) * 1e3);
      }
      std::printf("    as a sensor host sends it: records %.3f ms (through CloudPoint: %.3f ms), encode %.3f ms "
                  "(%.2f MB)\n",
                  median(direct_ms), median(via_ms), median(encode_ms), wire_bytes / 1e6);
    }
  }
  return 0;
}
