// What the recorder's ROS 2 channels (ros2 = true) cost beside its Foxglove (JSON) channels, measured in one
// run through the recorder's own core (node::RecordingWriter, the code the writer thread runs):
//   1. the four-lidar farm: four VLP-16-sized clouds (28,800 point records) at 10 Hz and the ego's world
//      state at 60 Hz;
//   2. a drivers session's sensors: 20 vehicles at 60 Hz, IMU 100 Hz, GNSS 10 Hz, radar 20 Hz (16
//      detections), an object list 20 Hz (8 objects), a camera's intrinsics 10 Hz;
// each recorded twice, with ros2 = false (baseline: platoon's channels and Foxglove's) and ros2 = true.
// Figures per sim second: MB written (the whole file, and the ROS 2 and Foxglove payloads alone), the writer
// thread's CPU (as a share of one core at real time) in all and spent making and writing the ROS 2 and the
// Foxglove messages (the recorder's SUMMARY counts the same: ros2_cpu_s, foxglove_cpu_s).
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/node/recorder.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

namespace {

using namespace platoon;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

protocol::SensorHeader SensorOn(uint64_t entity, const std::string& id, protocol::StreamKind kind, int64_t t) {
  protocol::SensorHeader h;
  h.sensor_id = id;
  h.kind = kind;
  h.stamp_ns = t;
  h.entity_id = entity;
  h.mount_position_m = Vec3(1.5, 0.0, 1.2);
  return h;
}

struct Figures {
  double cpu_s = 0;
  double bytes = 0;
  node::RecorderStats stats;
};

// `seconds` of sim time of one case through a RecordingWriter into `path`.
Figures Run(bool farm, bool ros2, double seconds, const std::string& path) {
  config::RecorderDef def;
  def.streams = {"*"};
  def.ros2 = ros2;
  std::string error;
  auto log = session_log::Writer::Open(path, &error);
  if (!log) throw std::runtime_error(error);
  const std::vector<NodeNaming> naming = {NodeNaming{"ego", true, {}}, NodeNaming{"traffic", false, {}}};
  node::RecordingWriter w(def, std::move(log), path, nullptr, naming);
  w.Begin(session_log::SessionInfo{"bench", "", "", "recorder"});

  // A VLP-16-sized cloud of plausible records (ranges 2..80 m around the sensor, 16 rings).
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<PointRecord> records(28'800);
  for (size_t i = 0; i < records.size(); ++i) {
    const double az = 2 * M_PI * u(rng), r = 2 + 78 * u(rng), el = (static_cast<double>(i % 16) - 7.5) * 0.035;
    PointRecord& p = records[i];
    p.x_m = static_cast<float>(r * std::cos(el) * std::cos(az));
    p.y_m = static_cast<float>(r * std::cos(el) * std::sin(az));
    p.z_m = static_cast<float>(r * std::sin(el));
    p.reflectivity = static_cast<uint8_t>(rng());
    p.ring = static_cast<uint16_t>(i % 16);
    p.time_offset_s = static_cast<float>(0.1 * static_cast<double>(i) / static_cast<double>(records.size()));
  }
  const std::string cloud_points = PackPointRecords(records);
  const uint64_t ego = VehicleId("ego", 0);

  auto put = [&](node::RecordItem::Kind kind, const protocol::Message& m) {
    w.Write(node::RecordItem{kind, protocol::Encode(m), 0});
  };
  const double cpu0 = ThreadCpuSeconds();
  const int64_t end_ms = static_cast<int64_t>(seconds * 1000);
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= end_ms; ++ms) {
    const int64_t t = ms * 1'000'000;
    if (ms % 17 == 0) {  // ~60 Hz broadcasts
      protocol::WorldState ws;
      ws.sequence = ++sequence;
      ws.sim_time_ns = ws.server_time_ns = t;
      ws.keyframe = ms % 1000 < 17;
      const int vehicles = farm ? 1 : 20;
      for (int i = 0; i < vehicles; ++i) {
        protocol::EntityState e;
        e.id = i == 0 ? ego : VehicleId("traffic", static_cast<uint32_t>(i));
        e.kind = protocol::EntityKind::kCar;
        e.kinematics.stamp_ns = t;
        e.kinematics.pose.position_m = Vec3(20.0 * static_cast<double>(ms) * 1e-3 + 10.0 * i, 3.5 * (i % 3), 0);
        e.kinematics.velocity_mps = Vec3(20, 0, 0);
        ws.entities.push_back(e);
      }
      put(node::RecordItem::Kind::kWorld, ws);
    }
    if (farm && ms % 100 == 0) {
      for (int k = 0; k < 4; ++k) {
        protocol::PointCloud c;
        c.header = SensorOn(ego, "lidar_" + std::to_string(k), protocol::StreamKind::kLidar, t);
        c.point_count = static_cast<uint32_t>(records.size());
        c.point_stride = point_record::kStride;
        c.points = cloud_points;
        put(node::RecordItem::Kind::kData, c);
      }
    }
    if (!farm) {
      if (ms % 10 == 0) {
        protocol::ImuMeasurement imu;
        imu.header = SensorOn(ego, "imu", protocol::StreamKind::kImu, t);
        imu.acceleration_mps2 = Vec3(0.1, 0, 9.81);
        put(node::RecordItem::Kind::kData, imu);
      }
      if (ms % 100 == 0) {
        protocol::GnssMeasurement g;
        g.header = SensorOn(ego, "gnss", protocol::StreamKind::kGnss, t);
        g.latitude_deg = 52.1, g.longitude_deg = 10.5, g.horizontal_sigma_m = 1.5, g.vertical_sigma_m = 3;
        put(node::RecordItem::Kind::kData, g);
        protocol::CameraFrame cam;
        cam.header = SensorOn(ego, "camera", protocol::StreamKind::kCamera, t);
        cam.width = 640, cam.height = 360, cam.fx = cam.fy = 323.2, cam.cx = 320, cam.cy = 180;
        put(node::RecordItem::Kind::kData, cam);
      }
      if (ms % 50 == 0) {
        protocol::RadarScan r;
        r.header = SensorOn(ego, "radar", protocol::StreamKind::kRadar, t);
        for (int i = 0; i < 16; ++i) {
          protocol::RadarDetection d;
          d.range_m = 5.0f + 4.0f * static_cast<float>(i), d.azimuth_rad = 0.05f * static_cast<float>(i - 8);
          d.entity_id = i % 4 == 0 ? 0 : static_cast<uint32_t>(i), d.false_positive = i % 4 == 0;
          r.detections.push_back(d);
        }
        put(node::RecordItem::Kind::kData, r);
        protocol::ObjectList ol;
        ol.header = SensorOn(ego, "objects", protocol::StreamKind::kObjects, t);
        for (int i = 0; i < 8; ++i) {
          protocol::DetectedObject o;
          o.track_id = static_cast<uint32_t>(i + 1), o.object_class = 1;
          o.position_m = Vec3(10.0 + 5 * i, 1.5, 0.8), o.size_m = Vec3(4.5, 1.8, 1.5);
          ol.objects.push_back(o);
        }
        put(node::RecordItem::Kind::kData, ol);
      }
    }
    if (ms % 50 == 0) (void)w.FlushDue(t);  // the recorder's 50 ms timer (its clock: here sim time)
  }
  w.Finish();
  Figures f;
  f.cpu_s = ThreadCpuSeconds() - cpu0;
  if (w.Failed()) throw std::runtime_error(w.Error());
  f.bytes = static_cast<double>(w.Log().BytesWritten());
  f.stats = w.Stats();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ros2_record_bench: the recorder's ROS 2 channels (ros2 = true) beside its Foxglove channels, in one "
               "run through node::RecordingWriter: MB per sim second and writer CPU.\n\n"
               "  build/bin/ros2_record_bench                 20 s of sim time per case, files in /tmp"};
  double seconds = 20;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--seconds", seconds, "Sim seconds per case")->check(CLI::Range(1.0, 600.0))->capture_default_str();
  app.add_option("--dir", dir, "Where the logs are written (and removed)")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  std::printf("ros2_record_bench: %.0f s of sim time per case, logs in %s\n\n", seconds, dir.c_str());
  std::printf("%-34s %9s %9s %9s %9s %11s %11s %11s %9s\n", "case", "MB/sim s", "ROS2 MB/s", "Fox MB/s", "ROS2 msg/s",
              "writer CPU%", "ROS2 CPU%", "Fox CPU%", "x real");
  const std::string path = dir + "/ros2_record_bench.mcap";
  // One warm-up second of each configuration (allocator, page cache), not counted.
  for (const bool ros2 : {false, true}) Run(true, ros2, 1.0, path);
  for (const bool farm : {true, false}) {
    for (const bool ros2 : {false, true}) {
      const Figures f = Run(farm, ros2, seconds, path);
      std::filesystem::remove(path);
      const std::string name = std::string(farm ? "four-lidar farm" : "drivers sensors") + (ros2 ? ", ros2 = true" : ", ros2 = false");
      std::printf("%-34s %9.2f %9.2f %9.2f %9.0f %10.1f%% %10.1f%% %10.1f%% %9.1f\n", name.c_str(), f.bytes / 1e6 / seconds,
                  static_cast<double>(f.stats.ros2_bytes) / 1e6 / seconds,
                  static_cast<double>(f.stats.foxglove_bytes) / 1e6 / seconds,
                  static_cast<double>(f.stats.ros2_messages) / seconds, 100.0 * f.cpu_s / seconds,
                  100.0 * static_cast<double>(f.stats.ros2_cpu_ns) * 1e-9 / seconds,
                  100.0 * static_cast<double>(f.stats.foxglove_cpu_ns) * 1e-9 / seconds, seconds / f.cpu_s);
    }
  }
  return 0;
}
