// Writes a session log for the ROS 2 export test (check_ros2.mjs) and prints, as one JSON object, what
// the bag exported from it must hold: every topic with its type, message count and header stamps, each
// sensor's mount (/tf_static), the vehicles' last poses, and the clouds' points.
//   ros2_log_sample lidar OUT.mcap             a lidar farm: two lidars of a real model (sensors::Scan)
//                                              over walls of known reflectance on one vehicle, a fused cloud
//   ros2_log_sample drivers OUT.mcap SESSION   configs/drivers.toml's vehicles (the session file recorded as
//                                              the recorder does): world states from before the start, IMU,
//                                              GNSS, radar (scan and tracks), objects and a camera (CameraInfo,
//                                              rgb8 frames as Image, PNG frames as CompressedImage) on the robot
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/scene.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace platoon;

namespace ros2_sample_detail {

std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// Expected content, per topic.
struct TopicExpect {
  std::string type;
  std::vector<int64_t> stamps;  // header stamps (Clock: the clock; TFMessage: the first transform's)
};

struct Expect {
  std::map<std::string, TopicExpect> topics;
  std::string mounts;   // JSON array
  std::string poses;    // JSON object: frame -> last pose
  std::string clouds;   // JSON object: topic -> array of clouds (arrays of points)
  std::string frames;   // JSON object: topic -> frame_id
  std::string objects;  // JSON object: topic -> the last message's detections
  std::string extra;    // more members of the top-level object (",\"key\":value...")
};

void Add(Expect& e, const std::string& topic, const std::string& type, int64_t stamp) {
  auto& t = e.topics[topic];
  t.type = type;
  t.stamps.push_back(stamp);
}

std::string MountJson(const std::string& parent, const std::string& child, const Pose& p) {
  return "{\"parent\":\"" + parent + "\",\"child\":\"" + child + "\",\"t\":[" + Num(p.position_m.x()) + "," +
         Num(p.position_m.y()) + "," + Num(p.position_m.z()) + "],\"q\":[" + Num(p.orientation.x()) + "," +
         Num(p.orientation.y()) + "," + Num(p.orientation.z()) + "," + Num(p.orientation.w()) + "]}";
}

std::string PointsJson(const std::vector<PointRecord>& points) {
  std::string out = "[";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    char b[200];
    std::snprintf(b, sizeof b, "%s[%.9g,%.9g,%.9g,%u,%u,%u,%.9g]", i ? "," : "", p.x_m, p.y_m, p.z_m,
                  unsigned(p.reflectivity), unsigned(p.return_type), unsigned(p.ring), p.time_offset_s);
    out += b;
  }
  return out + "]";
}

bool Put(session_log::Writer& w, const protocol::Message& m, std::string_view stream, int64_t t_ns) {
  const std::string bytes = protocol::Encode(m);
  return w.WriteEnvelope(session_log::DataTopic(stream), {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                         t_ns, t_ns)
      .Ok();
}

protocol::SensorHeader Header(const std::string& id, protocol::StreamKind kind, uint64_t entity, int64_t t,
                              const Pose& mount, uint64_t seq) {
  protocol::SensorHeader h;
  h.sensor_id = id;
  h.kind = kind;
  h.node_id = 5;
  h.sequence = seq;
  h.stamp_ns = t;
  h.entity_id = entity;
  h.mount_position_m = mount.position_m;
  h.mount_orientation = mount.orientation;
  return h;
}

protocol::NodeInfo Node(uint32_t id, const std::string& name) {
  protocol::NodeInfo n;
  n.node_id = id;
  n.name = name;
  return n;
}

// The world state as the log holds it (the wire quantizes orientations): what the bag must give back.
protocol::WorldState AsRecorded(const protocol::WorldState& ws) {
  const protocol::Decoded d = protocol::Decode(protocol::Encode(ws));
  return std::get<protocol::WorldState>(*d.message);
}

void PrintExpect(const Expect& e) {
  std::string out = "{\"topics\":{";
  bool first = true;
  for (const auto& [topic, t] : e.topics) {
    out += (first ? "\"" : ",\"") + topic + "\":{\"type\":\"" + t.type + "\",\"stamps\":[";
    for (size_t i = 0; i < t.stamps.size(); ++i) out += (i ? ",\"" : "\"") + std::to_string(t.stamps[i]) + "\"";
    out += "]}";
    first = false;
  }
  out += "},\"mounts\":" + e.mounts + ",\"poses\":{" + e.poses + "},\"clouds\":{" + e.clouds + "},\"frames\":{" +
         e.frames + "},\"objects\":{" + e.objects + "}" + e.extra + "}";
  std::printf("%s\n", out.c_str());
}

int Lidar(session_log::Writer& w) {
  Expect e;
  const uint64_t car = VehicleId("farm", 0);
  const std::string v = "farm_0";  // "<node>:<index>" with ':' as '_' (no session file: no vehicle_names)
  bool ok = w.WriteJson(session_log::kSessionTopic, "", "", session_log::SessionInfoJson({"farm", "", "", "rec"}), 0, 0).Ok();
  // Walls: 10 % at 15 m for y < 0, 80 % at 30 m for y > 0.
  sensors::LidarDef def = sensors::Vlp16Def();
  def.azimuth_min_rad = -0.5, def.azimuth_max_rad = 0.5;
  def.materials = {sensors::LidarMaterial{0.2}, sensors::LidarMaterial{0.1}, sensors::LidarMaterial{0.8}};
  sensors::Scene scene;
  scene.AddBox(Pose{Vec3(15.1, -20, 0), Quat::Identity()}, Vec3(0.1, 20, 20), sensors::SurfaceTag{1, 1, 3});
  scene.AddBox(Pose{Vec3(30.1, 20, 0), Quat::Identity()}, Vec3(0.1, 20, 20), sensors::SurfaceTag{2, 2, 3});
  scene.Commit();
  std::mt19937_64 rng(5);
  const Pose top{Vec3(1.25, 0.0, 1.95), Quat(Eigen::AngleAxisd(0.125, Vec3::UnitZ()))};
  const Pose rear{Vec3(-0.75, 0.25, 0.5), Quat(Eigen::AngleAxisd(0.5, Vec3(0.0, 0.6, 0.8)))};
  e.mounts = "[" + MountJson(v + "/base_link", v + "/lidar_rear", rear) + "," +
             MountJson(v + "/base_link", v + "/lidar_top", top) + "]";
  std::string top_clouds, fused_clouds;
  for (int k = 0; k < 3; ++k) {
    const int64_t t = 200'000'000 + k * 100'000'000;
    protocol::WorldState ws;
    ws.sequence = static_cast<uint64_t>(k + 1);
    ws.sim_time_ns = ws.server_time_ns = t;
    ws.phase = protocol::SessionPhase::kRunning;
    ws.nodes.push_back(Node(5, "farm"));
    protocol::EntityState s;
    s.id = car;
    s.kind = protocol::EntityKind::kCar;
    s.kinematics.stamp_ns = t - 5'000'000;
    s.kinematics.pose = Pose{Vec3(2.0 * k, 0.5, 0.0), Quat::Identity()};
    s.kinematics.velocity_mps = Vec3(20, 0, 0);
    ws.entities.push_back(s);
    ok = ok && w.WriteWorld(ws).Ok();
    Add(e, "/clock", "rosgraph_msgs/msg/Clock", t);
    Add(e, "/tf", "tf2_msgs/msg/TFMessage", s.kinematics.stamp_ns);
    Add(e, "/" + v + "/odom", "nav_msgs/msg/Odometry", s.kinematics.stamp_ns);
    if (k == 2)
      e.poses = "\"" + v + "/base_link\":" + MountJson("map", v + "/base_link", AsRecorded(ws).entities[0].kinematics.pose);
    for (const auto* sensor : {&top, &rear}) {
      const std::string id = sensor == &top ? "lidar_top" : "lidar_rear";
      const auto scan = sensors::Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
      protocol::PointCloud pc;
      pc.header = Header(id, protocol::StreamKind::kLidar, car, t, *sensor, static_cast<uint64_t>(k + 1));
      pc.duration_ns = 100'000'000;
      pc.point_count = static_cast<uint32_t>(scan.size());
      pc.point_stride = point_record::kStride;
      pc.points = sensors::PackLidarPoints(scan, 0);
      ok = ok && Put(w, pc, id, t);
      Add(e, "/" + v + "/" + id + "/points", "sensor_msgs/msg/PointCloud2", t);
      const auto records = UnpackPointRecords(pc.points, pc.point_count, pc.point_stride);
      if (sensor == &top) {
        top_clouds += (k ? "," : "") + PointsJson(records);
        if (k == 1) {
          protocol::FusedCloud fc;
          fc.sensor_id = "fused";
          fc.node_id = 6;
          fc.sequence = 1;
          fc.reference_ns = t;
          fc.entity_id = car;
          fc.point_count = pc.point_count;
          fc.point_stride = pc.point_stride;
          fc.points = pc.points;
          ok = ok && Put(w, fc, "fused", t);
          Add(e, "/" + v + "/fused/points", "sensor_msgs/msg/PointCloud2", t);
          fused_clouds = PointsJson(records);
        }
      }
    }
  }
  e.clouds = "\"/" + v + "/lidar_top/points\":[" + top_clouds + "],\"/" + v + "/fused/points\":[" + fused_clouds + "]";
  e.frames = "\"/" + v + "/lidar_top/points\":\"" + v + "/lidar_top\",\"/" + v + "/lidar_rear/points\":\"" + v +
             "/lidar_rear\",\"/" + v + "/fused/points\":\"" + v + "/base_link\"";
  e.topics["/tf_static"] = {"tf2_msgs/msg/TFMessage", {200'000'000}};
  ok = ok && w.Close().Ok();
  if (!ok) return 1;
  PrintExpect(e);
  return 0;
}

int Drivers(session_log::Writer& w, const std::string& session_path) {
  std::ifstream f(session_path);
  std::stringstream text;
  text << f.rdbuf();
  if (!f || text.str().empty()) {
    std::fprintf(stderr, "ros2_log_sample: cannot read %s\n", session_path.c_str());
    return 2;
  }
  Expect e;
  bool ok = w.WriteJson(session_log::kSessionTopic, "", "",
                        session_log::SessionInfoJson({"drivers", text.str(), session_path, "recorder"}), 0, 0)
                .Ok();
  // drivers.toml: driver seats "wheel" and "robot" (their cars go by the node's name), node "traffic".
  struct Car {
    uint64_t id;
    std::string name;
  };
  const std::vector<Car> cars = {{VehicleId("wheel", 0), "wheel"}, {VehicleId("robot", 0), "robot"},
                                 {VehicleId("traffic", 0), "traffic_0"}, {VehicleId("traffic", 1), "traffic_1"}};
  const Pose imu_mount{Vec3(1.5, 0.0, 0.25), Quat::Identity()};
  const Pose gnss_mount{Vec3(0.5, -0.25, 1.5), Quat(Eigen::AngleAxisd(-0.25, Vec3::UnitZ()))};
  const Pose radar_mount{Vec3(3.75, 0.0, 0.5), Quat(Eigen::AngleAxisd(0.0625, Vec3::UnitY()))};
  const Pose camera_mount{Vec3(1.75, 0.0, 1.25), Quat(Eigen::AngleAxisd(0.125, Vec3::UnitY()))};
  // REP 103's optical frame (z forward, x right, y down) in the camera's body frame: rpy (-90, 0, -90) deg.
  const Pose optical{Vec3::Zero(), Quat(0.5, -0.5, 0.5, -0.5)};
  e.mounts = "[" + MountJson("robot/base_link", "robot/camera", camera_mount) + "," +
             MountJson("robot/camera", "robot/camera_optical", optical) + "," +
             MountJson("robot/base_link", "robot/gnss", gnss_mount) + "," +
             MountJson("robot/base_link", "robot/imu", imu_mount) + "," +
             MountJson("robot/base_link", "robot/objects_front", radar_mount) + "," +
             MountJson("robot/base_link", "robot/radar_front", radar_mount) + "]";
  bool first_pose = true;
  int64_t first_t = -1;
  for (int k = -3; k <= 20; ++k) {
    const int64_t t = k * 50'000'000;  // k < 0: the countdown, before sim time 0
    protocol::WorldState ws;
    ws.sequence = static_cast<uint64_t>(k + 10);
    ws.sim_time_ns = ws.server_time_ns = t;
    ws.phase = k < 0 ? protocol::SessionPhase::kStarting : protocol::SessionPhase::kRunning;
    ws.nodes = {Node(1, "traffic"), Node(2, "wheel"), Node(3, "robot")};
    for (size_t i = 0; i < cars.size(); ++i) {
      protocol::EntityState s;
      s.id = cars[i].id;
      s.kind = protocol::EntityKind::kCar;
      s.kinematics.stamp_ns = t - static_cast<int64_t>(i) * 1'000'000;
      const double yaw = 0.01 * k + 0.5 * static_cast<double>(i);
      s.kinematics.pose = Pose{Vec3(10.0 * static_cast<double>(i) + 0.75 * k, 3.5 * static_cast<double>(i), 0.0),
                               Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()))};
      s.kinematics.velocity_mps = Vec3(15.0, 0.0, 0.0);
      ws.entities.push_back(s);
      if (t >= 0 && s.kinematics.stamp_ns >= 0) {
        Add(e, "/" + cars[i].name + "/odom", "nav_msgs/msg/Odometry", s.kinematics.stamp_ns);
        if (k == 20) {
          e.poses += (first_pose ? "\"" : ",\"") + cars[i].name + "/base_link\":" +
                     MountJson("map", cars[i].name + "/base_link", AsRecorded(ws).entities[i].kinematics.pose);
          first_pose = false;
        }
      }
    }
    ok = ok && w.WriteWorld(ws).Ok();
    if (t >= 0) {
      if (first_t < 0) first_t = t;
      Add(e, "/clock", "rosgraph_msgs/msg/Clock", t);
      Add(e, "/tf", "tf2_msgs/msg/TFMessage", t);  // the first transform is the wheel's, stamped t
    }
    const uint64_t robot = VehicleId("robot", 0);
    protocol::ImuMeasurement imu;
    imu.header = Header("imu", protocol::StreamKind::kImu, robot, t, imu_mount, static_cast<uint64_t>(k + 10));
    imu.angular_velocity_radps = Vec3(0.01, -0.02, 0.125 * k);
    imu.acceleration_mps2 = Vec3(0.5 * k, 0.25, 9.80665);
    ok = ok && Put(w, imu, "imu", t);
    if (t >= 0) Add(e, "/robot/imu/imu", "sensor_msgs/msg/Imu", t);
    if (k % 2 == 0) {
      protocol::GnssMeasurement g;
      g.header = Header("gnss", protocol::StreamKind::kGnss, robot, t, gnss_mount, static_cast<uint64_t>(k + 10));
      g.latitude_deg = 48.1 + 1e-6 * k, g.longitude_deg = 11.5, g.altitude_m = 520.0;
      g.horizontal_sigma_m = 1.5, g.vertical_sigma_m = 2.5;
      ok = ok && Put(w, g, "gnss", t);
      if (t >= 0) Add(e, "/robot/gnss/fix", "sensor_msgs/msg/NavSatFix", t);
      protocol::RadarScan rs;
      rs.header = Header("radar_front", protocol::StreamKind::kRadar, robot, t, radar_mount, static_cast<uint64_t>(k + 10));
      protocol::RadarDetection d;
      d.range_m = 25.0f, d.azimuth_rad = 0.125f, d.range_rate_mps = -2.5f, d.rcs_dbsm = 12.0f;
      // The second one follows an object (a car): a track; the first is a false positive: none.
      protocol::RadarDetection tracked = d;
      tracked.entity_id = 42, tracked.object_class = 1, tracked.x_m = 24.75f, tracked.y_m = 3.125f;
      tracked.length_m = 4.5f, tracked.width_m = 1.75f;
      d.false_positive = true;
      rs.detections = {d, tracked};
      ok = ok && Put(w, rs, "radar_front", t);
      if (t >= 0) {
        Add(e, "/robot/radar_front/scan", "radar_msgs/msg/RadarScan", t);
        Add(e, "/robot/radar_front/tracks", "radar_msgs/msg/RadarTracks", t);
      }
      protocol::ObjectList ol;
      ol.header = Header("objects_front", protocol::StreamKind::kObjects, robot, t, radar_mount, static_cast<uint64_t>(k + 10));
      protocol::DetectedObject car, ghost;
      car.track_id = 77, car.object_class = 1, car.truth_class = 1;
      car.position_m = Vec3(20.0 + k, -1.5, 0.75), car.size_m = Vec3(4.5, 1.8, 1.5);
      ghost.track_id = 0, ghost.object_class = 5, ghost.position_m = Vec3(8.0, 2.0, 0.875), ghost.size_m = Vec3(0.5, 0.5, 1.75);
      ol.objects = {car, ghost};
      ok = ok && Put(w, ol, "objects_front", t);
      if (t >= 0) {
        Add(e, "/robot/objects_front/objects", "vision_msgs/msg/Detection3DArray", t);
        // [class, centre, size, id] as vision_msgs carries them: classes by name, the track id as text.
        e.objects = "\"/robot/objects_front/objects\":[[\"car\",[" + Num(car.position_m.x()) + ",-1.5,0.75],[4.5,1.8,1.5],\"77\"],"
                    "[\"pedestrian\",[8,2,0.875],[0.5,0.5,1.75],\"\"]]";
      }
    }
  }
  // A camera at 20 Hz: intrinsics always, an rgb8 image (4 x 3 px) on even frames, a PNG file on odd ones.
  std::string rgb, png = "\x89PNG\r\n\x1a\n";
  for (int i = 0; i < 4 * 3 * 3; ++i) rgb += static_cast<char>(7 * i + 1);
  for (int i = 0; i < 40; ++i) png += static_cast<char>(200 - i);
  auto byte_sum = [](const std::string& b) {
    long sum = 0;
    for (char c : b) sum += static_cast<unsigned char>(c);
    return sum;
  };
  for (int k = 0; k <= 20; ++k) {
    const int64_t t = k * 50'000'000 + 10'000'000;
    protocol::CameraFrame c;
    c.header = Header("camera", protocol::StreamKind::kCamera, VehicleId("robot", 0), t, camera_mount, static_cast<uint64_t>(k + 1));
    c.width = 4, c.height = 3, c.fx = 4.5, c.fy = 4.25, c.cx = 2.0, c.cy = 1.5;
    c.encoding = k % 2 == 0 ? "rgb8" : "png";
    c.image = k % 2 == 0 ? rgb : png;
    ok = ok && Put(w, c, "camera", t);
    Add(e, "/robot/camera/camera_info", "sensor_msgs/msg/CameraInfo", t);
    Add(e, k % 2 == 0 ? "/robot/camera/image_raw" : "/robot/camera/image_raw/compressed",
        k % 2 == 0 ? "sensor_msgs/msg/Image" : "sensor_msgs/msg/CompressedImage", t);
  }
  e.extra = ",\"mount_tolerance\":1e-15,\"camera_info\":{\"/robot/camera/camera_info\":[4,3,4.5,4.25,2,1.5]},"
            "\"images\":{\"/robot/camera/image_raw\":{\"encoding\":\"rgb8\",\"width\":4,\"height\":3,\"step\":12,\"length\":36,"
            "\"sum\":" + std::to_string(byte_sum(rgb)) + "},\"/robot/camera/image_raw/compressed\":{\"format\":\"png\",\"length\":" +
            std::to_string(png.size()) + ",\"sum\":" + std::to_string(byte_sum(png)) + "}},"
            "\"tracks\":{\"/robot/radar_front/tracks\":[[\"42\",24.75,3.125,4.5,1.75,32001]]}";
  e.topics["/tf_static"] = {"tf2_msgs/msg/TFMessage", {first_t}};
  e.clouds = "";
  e.frames = "\"/robot/imu/imu\":\"robot/imu\",\"/robot/gnss/fix\":\"robot/gnss\",\"/robot/radar_front/scan\":"
             "\"robot/radar_front\",\"/robot/objects_front/objects\":\"robot/objects_front\",\"/wheel/odom\":\"map\","
             "\"/robot/radar_front/tracks\":\"robot/radar_front\",\"/robot/camera/camera_info\":\"robot/camera_optical\","
             "\"/robot/camera/image_raw\":\"robot/camera_optical\",\"/robot/camera/image_raw/compressed\":\"robot/camera_optical\"";
  ok = ok && w.Close().Ok();
  if (!ok) return 1;
  PrintExpect(e);
  return 0;
}

}  // namespace ros2_sample_detail

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[1] : "";
  if (!((mode == "lidar" && argc == 3) || (mode == "drivers" && argc == 4))) {
    std::fprintf(stderr, "usage: ros2_log_sample lidar OUT.mcap | ros2_log_sample drivers OUT.mcap SESSION.toml\n");
    return 2;
  }
  std::string error;
  auto w = session_log::Writer::Open(argv[2], &error);
  if (!w) {
    std::fprintf(stderr, "ros2_log_sample: %s\n", error.c_str());
    return 1;
  }
  return mode == "lidar" ? ros2_sample_detail::Lidar(*w) : ros2_sample_detail::Drivers(*w, argv[3]);
}
