// Writes a small session log with point clouds for the cloud export test (check_clouds.py): three scans
// of a real lidar model (sensors::Scan) on stream "lidar_a" over walls of known reflectance (10 % at
// 15 m, 80 % at 30 m) and a retro-reflective sign, a fused cloud on "fused", a radar scan on "radar_a",
// an object list on "objects_a", a GNSS fix on "gnss_a", three IMU samples on "imu_a", and world states. Usage: cloud_log_sample OUT.mcap. Prints one JSON line with what it wrote.
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
      // Sensor streams with known values (check_clouds.py compares them with platoon.read_stream).
      protocol::RadarScan rs;
      rs.header.sensor_id = "radar_a";
      rs.header.kind = protocol::StreamKind::kRadar;
      rs.header.stamp_ns = t;
      rs.header.entity_id = ego;
      for (int i = 0; i < 2; ++i) {
        protocol::RadarDetection d;
        d.range_m = 20.0f + 5.0f * static_cast<float>(i), d.azimuth_rad = -0.1f + 0.2f * static_cast<float>(i);
        d.range_rate_mps = -3.5f, d.rcs_dbsm = 10.0f + static_cast<float>(i), d.object_class = 1;
        d.entity_id = i == 0 ? 77u : 0u, d.false_positive = i == 1;
        d.length_m = 4.5f, d.width_m = 1.8f, d.orientation_rad = 0.05f, d.x_m = 19.9f, d.y_m = -2.0f;
        rs.detections.push_back(d);
      }
      ok = ok && Put(*w, rs, "radar_a", t);
      protocol::ObjectList ol;
      ol.header.sensor_id = "objects_a";
      ol.header.kind = protocol::StreamKind::kObjects;
      ol.header.stamp_ns = t;
      protocol::DetectedObject ob;
      ob.track_id = 77, ob.object_class = 1, ob.truth_class = 1;
      ob.position_m = Vec3(20, -1, 0.7), ob.velocity_mps = Vec3(8, 0.5, 0), ob.size_m = Vec3(4.5, 1.8, 1.5);
      ol.objects.push_back(ob);
      ok = ok && Put(*w, ol, "objects_a", t);
      protocol::GnssMeasurement g;
      g.header.sensor_id = "gnss_a";
      g.header.kind = protocol::StreamKind::kGnss;
      g.header.stamp_ns = t;
      g.header.entity_id = ego;
      g.latitude_deg = 48.1372, g.longitude_deg = 11.5756, g.altitude_m = 519.25;
      g.velocity_enu_mps = Vec3(10, 2, 0), g.horizontal_sigma_m = 1.5, g.vertical_sigma_m = 3.0;
      ok = ok && Put(*w, g, "gnss_a", t);
    }
    protocol::ImuMeasurement imu;
    imu.header.sensor_id = "imu_a";
    imu.header.kind = protocol::StreamKind::kImu;
    imu.header.stamp_ns = t;
    imu.header.entity_id = ego;
    imu.angular_velocity_radps = Vec3(0.01 * k, 0.0, 0.2);
    imu.acceleration_mps2 = Vec3(1.0 + k, 0.1, 9.81);
    ok = ok && Put(*w, imu, "imu_a", t);
  }
  ok = ok && w->Close().Ok();
  if (!ok) {
    std::fprintf(stderr, "cloud_log_sample: %s\n", w->Error().c_str());
    return 1;
  }
  std::printf("{\"clouds\": 3, \"points\": %zu}\n", points);
  return 0;
}
