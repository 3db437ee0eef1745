// Writes a small session log with point clouds for the cloud export test (check_clouds.py): three scans
// of a real lidar model (sensors::Scan) on stream "lidar_a" over walls of known reflectance (10 % at
// 15 m, 80 % at 30 m) and a retro-reflective sign, a fused cloud on "fused", a radar scan on "radar_a",
// and world states. Usage: cloud_log_sample OUT.mcap. Prints one JSON line with what it wrote.
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/scene.hpp"

#include <cstdio>
#include <random>
#include <string>

using namespace platoon;

namespace {

bool Put(session_log::Writer& w, const protocol::Message& m, std::string_view stream, int64_t t_ns) {
  const std::string bytes = protocol::Encode(m);
  return w.WriteEnvelope(session_log::DataTopic(stream),
                         {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, t_ns, t_ns)
      .Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cloud_log_sample OUT.mcap\n");
    return 2;
  }
  std::string error;
  auto w = session_log::Writer::Open(argv[1], &error);
  if (!w) {
    std::fprintf(stderr, "cloud_log_sample: %s\n", error.c_str());
    return 1;
  }
  bool ok = w->WriteJson(session_log::kSessionTopic, "", "",
                         session_log::SessionInfoJson({"clouds", "", "", "cloud_log_sample"}), 0, 0)
                .Ok();

  // The scene: entity 1 a 10 % wall (material 1) at x = 15 m for y < 0, entity 2 an 80 % wall (material 2)
  // at x = 30 m for y > 0, entity 3 a retro-reflective sign (material 3) at x = 10 m, y 2..3 m.
  sensors::LidarDef def = sensors::Vlp16Def();
  def.azimuth_min_rad = -0.6, def.azimuth_max_rad = 0.6;
  def.materials = {sensors::LidarMaterial{0.2}, sensors::LidarMaterial{0.1}, sensors::LidarMaterial{0.8},
                   sensors::LidarMaterial{0.95, 1.0, 0.0, 100.0}};
  sensors::Scene scene;
  scene.AddBox(Pose{Vec3(15.1, -20, 0), Quat::Identity()}, Vec3(0.1, 20, 20), sensors::SurfaceTag{1, 1, 3});
  scene.AddBox(Pose{Vec3(30.1, 20, 0), Quat::Identity()}, Vec3(0.1, 20, 20), sensors::SurfaceTag{2, 2, 3});
  scene.AddBox(Pose{Vec3(10.05, 2.5, 0.5), Quat::Identity()}, Vec3(0.05, 0.5, 0.5), sensors::SurfaceTag{3, 3, 6});
  scene.Commit();
  std::mt19937_64 rng(11);
  const uint64_t ego = 0x1234;
  size_t points = 0;
  for (int k = 0; k < 3; ++k) {
    const int64_t t = 100'000'000 + k * 100'000'000;
    protocol::WorldState ws;
    ws.sequence = static_cast<uint64_t>(k + 1);
    ws.sim_time_ns = t;
    ws.server_time_ns = t;
    ws.phase = protocol::SessionPhase::kRunning;
    ok = ok && w->WriteWorld(ws).Ok();
    const auto scan = sensors::Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
    protocol::PointCloud pc;
    pc.header.sensor_id = "lidar_a";
    pc.header.kind = protocol::StreamKind::kLidar;
    pc.header.node_id = 3;
    pc.header.sequence = static_cast<uint64_t>(k + 1);
    pc.header.stamp_ns = t;
    pc.header.entity_id = ego;
    pc.header.mount_position_m = Vec3(1.5, 0.0, 1.8);
    pc.header.mount_orientation = Quat(Eigen::AngleAxisd(0.25, Vec3::UnitZ()));
    pc.duration_ns = 100'000'000;
    pc.point_count = static_cast<uint32_t>(scan.size());
    pc.point_stride = point_record::kStride;
    pc.points = sensors::PackLidarPoints(scan, 0);
    ok = ok && Put(*w, pc, "lidar_a", t);
    points += scan.size();
    if (k == 1) {
      protocol::FusedCloud fc;
      fc.sensor_id = "fused";
      fc.node_id = 4;
      fc.sequence = 1;
      fc.reference_ns = t;
      fc.entity_id = ego;
      fc.point_count = pc.point_count;
      fc.point_stride = pc.point_stride;
      fc.points = pc.points;
      ok = ok && Put(*w, fc, "fused", t);
      protocol::RadarScan rs;
      rs.header.sensor_id = "radar_a";
      rs.header.kind = protocol::StreamKind::kRadar;
      rs.header.stamp_ns = t;
      ok = ok && Put(*w, rs, "radar_a", t);
    }
  }
  ok = ok && w->Close().Ok();
  if (!ok) {
    std::fprintf(stderr, "cloud_log_sample: %s\n", w->Error().c_str());
    return 1;
  }
  std::printf("{\"clouds\": 3, \"points\": %zu}\n", points);
  return 0;
}
