// The recorder's ROS 2 channels, written live (issue 41 item 1; docs/RECORDING.md, "ROS 2"): a lidar farm
// (configs/lidar_farm.toml) and a drivers session with radar, camera, IMU, GNSS and an object list
// (tests/ros2_reader/drivers_sensors.toml) run in lock-step with a recorder that has ros2 = true. The
// independent reader (tests/ros2_reader/check_ros2.mjs: @mcap/core, @foxglove/rosmsg and
// @foxglove/rosmsg2-serialization from the lock file) decodes every ROS 2 message of each log and compares
// it with what this test expects, worked out from the log's own platoon channels and the session file:
// topics and types, header stamps equal to the recorded sim times, frames, /tf_static equal to the
// position and rpy_deg of each sensor in the session file, the first cloud of each lidar point by point in
// Autoware's PointXYZIRCAEDT layout, the camera's intrinsics, the radar's tracks, and metadata.yaml.
// Waits are handshakes (process exits) with deadlines; nothing sleeps.
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ros2_live_detail {

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

const std::string kSourceDir = PLATOON_SOURCE_DIR;
const std::string kRos2ReaderDir = (std::filesystem::path(PLATOON_MCAP_READER_DIR).parent_path() / "ros2_reader").string();

std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// A ROS 2 name as the docs define it for frames and topics: other characters than [A-Za-z0-9_] become '_'.
std::string RosName(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string MountJson(const std::string& parent, const std::string& child, const Vec3& t, const Quat& q) {
  return "{\"parent\":\"" + parent + "\",\"child\":\"" + child + "\",\"t\":[" + Num(t.x()) + "," + Num(t.y()) + "," +
         Num(t.z()) + "],\"q\":[" + Num(q.x()) + "," + Num(q.y()) + "," + Num(q.z()) + "," + Num(q.w()) + "]}";
}

struct TopicExpect {
  std::string type;
  std::vector<int64_t> stamps;
};

// What the ROS 2 channels of the log at `log` must hold, as check_ros2.mjs reads it; `sensors` counts the
// session file's sensors, `clouds_checked` the clouds whose points are compared.
struct Expectation {
  std::string json;
  size_t sensors = 0, world_states = 0, data_messages = 0;
  std::map<std::string, size_t> per_topic;
};

Expectation Expect(const std::string& session_path, const std::string& log, const std::string& file_name) {
  Expectation out;
  // The session file: node roles (a driver seat's car goes by the node's name, another node's vehicles
  // by "<node>_<index>"), and every sensor's mount as written there.
  const config::SessionDef session = config::LoadSession(session_path);
  std::map<std::string, std::string> roles;
  std::vector<std::string> node_names;
  std::string mounts;
  std::set<std::string> session_sensors, cameras;
  auto vehicle_of = [&](const std::string& node_and_index) {
    const auto colon = node_and_index.find(':');
    const std::string node = node_and_index.substr(0, colon);
    const std::string index = colon == std::string::npos ? "0" : node_and_index.substr(colon + 1);
    return roles[node] == "driver" && index == "0" ? RosName(node) : RosName(node + "_" + index);
  };
  for (const auto& n : session.nodes) {
    roles[n.name] = std::string(protocol::RoleName(n.role));
    node_names.push_back(n.name);
  }
  for (const auto& n : session.nodes) {
    if (n.sensors.empty()) continue;
    const std::string vehicle = vehicle_of(n.attach_to);
    for (const auto& st : n.sensors) {
      const std::string id = st.GetString("id", "");
      const auto p = st.GetDoubleArray("position", {0, 0, 0}, 3);
      const auto r = st.GetDoubleArray("rpy_deg", {0, 0, 0}, 3);
      const Vec3 pos(p[0], p[1], p[2]);
      // REP 103 fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll).
      const double d = M_PI / 180.0;
      const Quat q = Eigen::AngleAxisd(r[2] * d, Vec3::UnitZ()) * Eigen::AngleAxisd(r[1] * d, Vec3::UnitY()) *
                     Eigen::AngleAxisd(r[0] * d, Vec3::UnitX());
      mounts += (mounts.empty() ? "" : ",") + MountJson(vehicle + "/base_link", vehicle + "/" + RosName(id), pos, q);
      if (st.GetString("type", "") == "camera") {
        // The optical frame (z forward, x right, y down) in the camera frame: rpy (-90, 0, -90) deg.
        mounts += "," + MountJson(vehicle + "/" + RosName(id), vehicle + "/" + RosName(id) + "_optical", Vec3::Zero(),
                                  Quat(0.5, -0.5, 0.5, -0.5));
        cameras.insert(id);
      }
      session_sensors.insert(id);
      ++out.sensors;
    }
  }

  // The log's platoon channels: world states and data messages as recorded.
  std::map<std::string, TopicExpect> topics;
  auto add = [&](const std::string& topic, const std::string& type, int64_t stamp) {
    auto& t = topics[topic];
    t.type = type;
    t.stamps.push_back(stamp);
  };
  std::map<uint64_t, std::string> names;
  auto name_of = [&](uint64_t id) -> const std::string& {
    auto it = names.find(id);
    if (it == names.end()) it = names.emplace(id, vehicle_of(VehicleName(id, node_names))).first;
    return it->second;
  };
  std::string poses, clouds, frames, camera_info, tracks;
  std::map<std::string, std::string> last_pose;
  std::map<std::string, std::string> last_tracks;
  std::set<std::string> cloud_done, framed;
  const auto read = session_log::Read(log, [&](const session_log::Entry& e) {
    const bool world = e.topic == session_log::kWorldTopic;
    if (!world && !e.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const auto d = protocol::Decode({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
    REQUIRE(d.message.has_value());
    if (world) {
      const auto& ws = std::get<protocol::WorldState>(*d.message);
      ++out.world_states;
      if (ws.sim_time_ns < 0) return;
      add("/clock", "rosgraph_msgs/msg/Clock", ws.sim_time_ns);
      bool first = true;
      for (const auto& s : ws.entities) {
        if (s.kinematics.stamp_ns < 0) continue;
        const std::string& v = name_of(s.id);
        if (first) add("/tf", "tf2_msgs/msg/TFMessage", s.kinematics.stamp_ns);
        first = false;
        add("/" + v + "/odom", "nav_msgs/msg/Odometry", s.kinematics.stamp_ns);
        last_pose[v + "/base_link"] = MountJson("map", v + "/base_link", s.kinematics.pose.position_m, s.kinematics.pose.orientation);
      }
      return;
    }
    ++out.data_messages;
    const std::string id(e.topic.substr(session_log::kDataTopicPrefix.size()));
    std::visit(
        [&](const auto& m) {
          using M = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<M, protocol::FusedCloud>) {
            if (m.reference_ns < 0) return;
            const std::string v = name_of(m.entity_id);
            add("/" + v + "/" + RosName(id) + "/points", "sensor_msgs/msg/PointCloud2", m.reference_ns);
            if (framed.insert(id).second) frames += ",\"/" + v + "/" + RosName(id) + "/points\":\"" + v + "/base_link\"";
          } else if constexpr (requires { m.header.stamp_ns; }) {
            if (m.header.stamp_ns < 0) return;
            const std::string v = name_of(m.header.entity_id);
            const std::string base = "/" + v + "/" + RosName(id) + "/";
            const std::string frame = v + "/" + RosName(id);
            const int64_t t = m.header.stamp_ns;
            // A stream no session sensor defines (the fusion node's objects): its mount as its header gives it.
            if (!session_sensors.contains(id) && framed.insert(id + "#mount").second) {
              mounts += "," + MountJson(v + "/base_link", frame, m.header.mount_position_m, m.header.mount_orientation);
              session_sensors.insert(id);
            }
            std::string leaf;
            if constexpr (std::is_same_v<M, protocol::PointCloud>) {
              leaf = "points";
              add(base + leaf, "sensor_msgs/msg/PointCloud2", t);
              if (cloud_done.insert(id).second) {
                // The first cloud of each lidar, point by point.
                const auto points = UnpackPointRecords(m.points, m.point_count, m.point_stride);
                std::string json;
                for (const auto& p : points) {
                  char b[200];
                  std::snprintf(b, sizeof b, "%s[%.9g,%.9g,%.9g,%u,%u,%u,%.9g]", json.empty() ? "" : ",", p.x_m, p.y_m,
                                p.z_m, unsigned(p.reflectivity), unsigned(p.return_type), unsigned(p.ring), p.time_offset_s);
                  json += b;
                }
                clouds += (clouds.empty() ? "\"" : ",\"") + base + leaf + "\":[[" + json + "]]";
              }
            } else if constexpr (std::is_same_v<M, protocol::ImuMeasurement>) {
              leaf = "imu";
              add(base + leaf, "sensor_msgs/msg/Imu", t);
            } else if constexpr (std::is_same_v<M, protocol::GnssMeasurement>) {
              leaf = "fix";
              add(base + leaf, "sensor_msgs/msg/NavSatFix", t);
            } else if constexpr (std::is_same_v<M, protocol::ObjectList>) {
              leaf = "objects";
              add(base + leaf, "vision_msgs/msg/Detection3DArray", t);
            } else if constexpr (std::is_same_v<M, protocol::RadarScan>) {
              leaf = "scan";
              add(base + leaf, "radar_msgs/msg/RadarScan", t);
              add(base + "tracks", "radar_msgs/msg/RadarTracks", t);
              // Tracks: the detections that follow an object, classes in Autoware's radar numbers.
              const std::map<int, int> kClass = {{1, 32001}, {2, 32002}, {3, 32007}, {4, 32005}, {5, 32006}};
              std::string list;
              for (const auto& r : m.detections) {
                if (r.false_positive || r.entity_id == 0) continue;
                const auto c = kClass.find(r.object_class);
                list += (list.empty() ? "[\"" : ",[\"") + std::to_string(r.entity_id) + "\"," + Num(r.x_m) + "," +
                        Num(r.y_m) + "," + Num(r.length_m) + "," + Num(r.width_m) + "," +
                        std::to_string(c == kClass.end() ? 32000 : c->second) + "]";
              }
              last_tracks[base + "tracks"] = "[" + list + "]";
              if (framed.insert(id + "#tracks").second) frames += ",\"" + base + "tracks\":\"" + frame + "\"";
            } else if constexpr (std::is_same_v<M, protocol::CameraFrame>) {
              leaf = "camera_info";
              add(base + leaf, "sensor_msgs/msg/CameraInfo", t);
              if (framed.insert(id).second) {
                frames += ",\"" + base + leaf + "\":\"" + frame + "_optical\"";
                camera_info += (camera_info.empty() ? "\"" : ",\"") + base + leaf + "\":[" + std::to_string(m.width) + "," +
                               std::to_string(m.height) + "," + Num(m.fx) + "," + Num(m.fy) + "," + Num(m.cx) + "," +
                               Num(m.cy) + "]";
              }
              return;
            }
            if (!leaf.empty() && framed.insert(id).second) {
              const bool vehicle_frame = [&] {
                if constexpr (std::is_same_v<M, protocol::PointCloud>) return m.vehicle_frame;
                return false;
              }();
              frames += ",\"" + base + leaf + "\":\"" + (vehicle_frame ? v + "/base_link" : frame) + "\"";
            }
          }
        },
        *d.message);
  });
  REQUIRE_MESSAGE(read.problems.empty(), "the log has problems: " << read.problems.front().message);
  for (const auto& [frame, pose] : last_pose) poses += (poses.empty() ? "\"" : ",\"") + frame + "\":" + pose;
  for (const auto& [topic, list] : last_tracks) tracks += (tracks.empty() ? "\"" : ",\"") + topic + "\":" + list;
  topics["/tf_static"].type = "tf2_msgs/msg/TFMessage";
  std::string json = "{\"live\":true,\"file\":\"" + file_name + "\",\"free_stamps\":[\"/tf_static\"],\"mount_tolerance\":1e-12,\"topics\":{";
  bool first = true;
  for (const auto& [topic, t] : topics) {
    json += (first ? "\"" : ",\"") + topic + "\":{\"type\":\"" + t.type + "\",\"stamps\":[";
    for (size_t i = 0; i < t.stamps.size(); ++i) json += (i ? ",\"" : "\"") + std::to_string(t.stamps[i]) + "\"";
    json += "]}";
    first = false;
    out.per_topic[topic] = t.stamps.size();
  }
  json += "},\"mounts\":[" + mounts + "],\"poses\":{" + poses + "},\"clouds\":{" + clouds + "},\"frames\":{" +
          (frames.empty() ? "" : frames.substr(1)) + "},\"objects\":{}";
  if (!camera_info.empty()) json += ",\"camera_info\":{" + camera_info + "}";
  if (!tracks.empty()) json += ",\"tracks\":{" + tracks + "}";
  out.json = json + "}";
  return out;
}

// Runs `session` in lock-step for `sim_s`, then has the independent reader check the recording in `bag_dir`.
void RecordAndRead(const TempDir& dir, const std::string& session, double sim_s, const std::string& bag_dir,
                   const std::vector<std::string>& must_have,
                   const std::string& compression) {
  auto install = process::Child::Spawn({"/bin/bash", kSourceDir + "/tests/ros2_reader/install.sh",
                                        kSourceDir + "/tests/ros2_reader", kRos2ReaderDir});
  const auto installed = RunToExit(install, 300s);
  REQUIRE_MESSAGE(installed.has_value(), "installing the npm readers took over 300 s");
  if (*installed == 77) {
    MESSAGE("skipped: " << (install.Lines().empty() ? "" : install.Lines().back()));
    return;
  }
  REQUIRE(*installed == 0);

  const auto t0 = std::chrono::steady_clock::now();
  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--lockstep", "--duration", Num(sim_s)});
  const auto status = RunToExit(launcher, 150s);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!status) launcher.Signal(SIGTERM);
  const auto& lines = launcher.Lines();
  INFO("last line: " << (lines.empty() ? "" : lines.back()));
  REQUIRE_MESSAGE(status.has_value(), "platoon run did not finish within 150 s");
  CHECK(*status == 0);
  CheckNoErrorLines(lines);
  const auto recorder = LinesOf(lines, "recorder");
  const auto ros2_messages = SummaryValue(recorder, "ros2_messages");
  REQUIRE(ros2_messages.has_value());

  const std::string log = bag_dir + "/log.mcap";
  REQUIRE(std::filesystem::exists(bag_dir + "/metadata.yaml"));
  const Expectation e = Expect(session, log, "log.mcap");
  for (const auto& topic : must_have) {
    INFO("topic " << topic);
    const auto it = e.per_topic.find(topic);
    CHECK(it != e.per_topic.end());
    if (it != e.per_topic.end()) CHECK(it->second > 0);
  }
  std::ofstream(dir.Path() + "/expect.json") << e.json;

  auto reader = process::Child::Spawn({"/usr/bin/env", "node", kRos2ReaderDir + "/check_ros2.mjs", bag_dir, dir.Path() + "/expect.json"});
  const auto read = RunToExit(reader, 120s);
  std::string said;
  for (const auto& l : reader.Lines()) said += l + "\n";
  INFO("check_ros2.mjs: " << said);
  REQUIRE(read.has_value());
  CHECK(*read == 0);
  CHECK(said.find("PASS") != std::string::npos);
  // The chunks as the recorder's compression names them, read back by the reader's own decoder.
  CHECK(said.find("\"compressions\":[\"" + compression + "\"]") != std::string::npos);
  MESSAGE(session << ": " << sim_s << " sim s in " << wall_s << " wall s; " << e.world_states << " world states, "
                  << e.data_messages << " data messages, " << *ros2_messages << " ROS 2 messages on " << e.per_topic.size()
                  << " topics; reader: " << (reader.Lines().empty() ? "" : reader.Lines().front()));
}

}  // namespace ros2_live_detail

TEST_CASE("ros2 live: a lock-step lidar farm recorded with ros2 = true is decoded by the independent reader with Autoware point fields and the session file mounts") {
  using namespace ros2_live_detail;
  TempDir dir;
  const std::string bag = dir.Path() + "/farm";
  const std::string session = ConfigOnFreePorts(
      dir, "lidar_farm.toml", 7410,
      "[[node]]\nname = \"recorder\"\nrole = \"recorder\"\npath = \"" + bag + "/log.mcap\"\nstreams = [\"*\"]\nros2 = true\n"
      "compression = \"lz4\"\n"
      "status_interval_s = 5\n");
  RecordAndRead(dir, session, 1.0, bag,
                {"/clock", "/tf", "/ego_0/odom", "/ego_0/lidar_front/points", "/ego_0/lidar_rear/points",
                 "/ego_0/lidar_left/points", "/ego_0/lidar_right/points"},
                "lz4");
}

TEST_CASE("ros2 live: a lock-step drivers session with radar camera IMU GNSS and objects recorded with ros2 = true is decoded by the independent reader") {
  using namespace ros2_live_detail;
  TempDir dir;
  std::ifstream in(kSourceDir + "/tests/ros2_reader/drivers_sensors.toml");
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const auto p = FreePorts(4);
  const std::string ports = "control_port = " + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                            "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]);
  REQUIRE(s.find("control_port = 7470") != std::string::npos);
  s.replace(s.find("control_port = 7470"), std::string("control_port = 7470").size(), ports);
  REQUIRE(s.find("{dir}") != std::string::npos);
  for (size_t at; (at = s.find("{dir}")) != std::string::npos;) s.replace(at, 5, dir.Path());
  const std::string session = dir.Write("drivers_sensors.toml", s);
  RecordAndRead(dir, session, 2.0, dir.Path() + "/drivers",
                {"/clock", "/tf", "/robot/odom", "/robot/radar_front/scan", "/robot/radar_front/tracks",
                 "/robot/camera_front/camera_info", "/robot/imu/imu", "/robot/gnss/fix", "/robot/objects/objects"},
                "zstd");  // the recorder's default
}
