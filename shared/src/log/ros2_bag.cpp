// platoon's messages as ROS 2 messages (platoon/log/ros2_bag.hpp): topics, frames and types, shared by the
// live recorder and `platoon export --ros2`.
#include "platoon/log/ros2_bag.hpp"

#include "platoon/log/ros2.hpp"
#include "platoon/point_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>
#include <variant>

namespace platoon::ros2 {
namespace {

// A YAML double-quoted scalar of `s`.
std::string BagYamlQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

// The reported class of an object list entry (0 unclassified, 1 car, 2 truck, 3 motorbike, 4 bicycle,
// 5 pedestrian), as a vision_msgs class id.
std::string_view BagObjectClassName(uint8_t c) {
  constexpr std::string_view kNames[] = {"unclassified", "car", "truck", "motorbike", "bicycle", "pedestrian"};
  return c < std::size(kNames) ? kNames[c] : kNames[0];
}

// A radar detection's class (1 car, 2 truck, 3 pedestrian, 4 motorcycle, 5 bicycle, 6 unknown) as a
// RadarTrack vendor classification, in the numbers Autoware's radar track converter reads (32000 unknown,
// 32001 car, 32002 truck, 32005 motorcycle, 32006 bicycle, 32007 pedestrian).
uint16_t BagRadarTrackClass(uint8_t c) {
  switch (c) {
    case 1: return 32001;
    case 2: return 32002;
    case 3: return 32007;
    case 4: return 32005;
    case 5: return 32006;
    default: return 32000;
  }
}

// The topic leaf of a stream kind with one topic ("" for camera and radar, which have their own).
std::string_view BagLeaf(protocol::StreamKind kind) {
  switch (kind) {
    case protocol::StreamKind::kLidar:
    case protocol::StreamKind::kFused: return "points";
    case protocol::StreamKind::kImu: return "imu";
    case protocol::StreamKind::kGnss: return "fix";
    case protocol::StreamKind::kObjects: return "objects";
    default: return "";
  }
}

const protocol::SensorHeader* BagHeaderOf(const protocol::Message& m) {
  return std::visit(
      [](const auto& msg) -> const protocol::SensorHeader* {
        if constexpr (requires { msg.header.sensor_id; }) return &msg.header;
        return nullptr;
      },
      m);
}

std::span<const uint8_t> BagBytesOf(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

std::string Ros2Name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const char k = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (k == '_' && !out.empty() && out.back() == '_') continue;
    out += k;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front()))) out.insert(out.begin(), 'v');
  return out;
}

// ---- BagTally ---------------------------------------------------------------------------------------

void BagTally::Add(const BagMessage& m) {
  Topic& t = topics_[m.topic];
  if (t.type.empty()) t.type = m.type, t.latched = m.latched;
  ++t.count;
  ++messages_;
  const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, m.log_ns));
  first_ns_ = std::min(first_ns_, ns);
  last_ns_ = std::max(last_ns_, ns);
}

std::string BagTally::MetadataYaml(const std::string& file) const {
  const uint64_t duration = LastNs() - FirstNs();
  std::string y = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: mcap\n";
  y += fmt::format("  duration:\n    nanoseconds: {}\n", duration);
  y += fmt::format("  starting_time:\n    nanoseconds_since_epoch: {}\n", FirstNs());
  y += fmt::format("  message_count: {}\n", messages_);
  y += "  topics_with_message_count:\n";
  for (const auto& [topic, c] : topics_) {
    y += fmt::format("    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n",
                     topic, c.type);
    y += "        offered_qos_profiles: " + BagYamlQuote(OfferedQosProfiles(c.latched)) + "\n";
    y += fmt::format("      message_count: {}\n", c.count);
  }
  y += "  compression_format: \"\"\n  compression_mode: \"\"\n";
  y += "  relative_file_paths:\n    - " + file + "\n";
  y += "  files:\n    - path: " + file + "\n";
  y += fmt::format("      starting_time:\n        nanoseconds_since_epoch: {}\n", FirstNs());
  y += fmt::format("      duration:\n        nanoseconds: {}\n", duration);
  y += fmt::format("      message_count: {}\n", messages_);
  return y;
}

// ---- Converter --------------------------------------------------------------------------------------

Converter::Converter(std::vector<NodeNaming> naming) : naming_(std::move(naming)) {
  for (const auto& n : naming_) nodes_.push_back(n.node);
}

void Converter::AddNode(const std::string& node_name) {
  if (std::find(nodes_.begin(), nodes_.end(), node_name) != nodes_.end()) return;
  nodes_.push_back(node_name);
  naming_.push_back(NodeNaming{node_name, false, {}});
}

const std::string& Converter::VehicleName(uint64_t id) {
  auto it = vehicle_names_.find(id);
  if (it != vehicle_names_.end()) return it->second;
  const std::string name = ::platoon::VehicleName(id, nodes_).empty() ? fmt::format("entity_{:016x}", id)
                                                                      : Ros2Name(EntityDisplayName(id, naming_));
  return vehicle_names_.emplace(id, name).first->second;
}

std::string DataStreamId(const protocol::Message& m) {
  if (const auto* h = BagHeaderOf(m)) return h->sensor_id;
  if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) return f->sensor_id;
  return {};
}

Converter::Stream* Converter::Known(const protocol::Message& m, bool* fresh) {
  std::string id;
  Stream s;
  if (const auto* h = BagHeaderOf(m)) {
    id = h->sensor_id;
    s.kind = std::holds_alternative<protocol::PointCloud>(m) ? protocol::StreamKind::kLidar : h->kind;
    s.entity_id = h->entity_id;
    s.has_mount = true;
    s.mount = Pose{h->mount_position_m, h->mount_orientation};
  } else if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) {
    id = f->sensor_id;
    s.kind = protocol::StreamKind::kFused;
    s.entity_id = f->entity_id;
  } else {
    return nullptr;
  }
  auto it = streams_.find(id);
  *fresh = it == streams_.end();
  if (!*fresh) return &it->second;
  const std::string prefix = s.entity_id ? VehicleName(s.entity_id) + "/" : "";
  s.frame = prefix + Ros2Name(id);
  s.topic = "/" + s.frame;
  if (s.has_mount) static_pending_ = true;
  return &streams_.emplace(id, std::move(s)).first->second;
}

bool Converter::Declare(const protocol::Message& first) {
  bool fresh = false;
  return Known(first, &fresh) != nullptr;
}

void Converter::PutStatic(int64_t stamp_ns, std::vector<BagMessage>& out) {
  // Every mount known so far in one message: a late subscriber (depth 1, transient local) gets them all.
  static_pending_ = false;
  std::vector<Transform> mounts;
  for (const auto& [id, s] : streams_) {
    if (!s.has_mount) continue;
    const std::string parent = s.entity_id ? VehicleName(s.entity_id) + "/base_link" : "map";
    mounts.push_back({stamp_ns, parent, s.frame, s.mount});
    if (s.kind == protocol::StreamKind::kCamera)
      mounts.push_back({stamp_ns, s.frame, s.frame + "_optical", Pose{Vec3::Zero(), OpticalToBody()}});
  }
  if (!mounts.empty()) out.push_back({"/tf_static", "tf2_msgs/msg/TFMessage", true, stamp_ns, EncodeTfMessage(mounts)});
}

void Converter::OnWorld(const protocol::WorldState& w, std::vector<BagMessage>& out) {
  for (const auto& n : w.nodes) AddNode(n.name);
  // ROS 2 times cannot be negative: the countdown before the start is left out.
  if (w.sim_time_ns < 0) {
    ++skipped_negative_;
    return;
  }
  const int64_t t = w.sim_time_ns;
  if (static_pending_) PutStatic(t, out);
  out.push_back({"/clock", "rosgraph_msgs/msg/Clock", false, t, EncodeClock(t)});
  std::vector<Transform> poses;
  for (const auto& s : w.entities) {
    const int64_t stamp = s.kinematics.stamp_ns;
    if (stamp < 0) continue;
    const std::string& vehicle = VehicleName(s.id);
    const std::string base = vehicle + "/base_link";
    poses.push_back({stamp, "map", base, s.kinematics.pose});
    out.push_back({"/" + vehicle + "/odom", "nav_msgs/msg/Odometry", false, t,
                   EncodeOdometry(stamp, "map", base, s.kinematics.pose, s.kinematics.velocity_mps,
                                  s.kinematics.angular_velocity_radps)});
  }
  if (!poses.empty()) out.push_back({"/tf", "tf2_msgs/msg/TFMessage", false, t, EncodeTfMessage(poses)});
}

void Converter::OnData(const protocol::Message& m, std::vector<BagMessage>& out) {
  bool fresh = false;
  Stream* known = Known(m, &fresh);
  if (!known) return;
  const Stream& s = *known;
  std::visit(
      [&](const auto& msg) {
        using M = std::decay_t<decltype(msg)>;
        int64_t stamp = 0;
        if constexpr (requires { msg.header.stamp_ns; }) stamp = msg.header.stamp_ns;
        else if constexpr (std::is_same_v<M, protocol::FusedCloud>) stamp = msg.reference_ns;
        else return;
        if (stamp < 0) {
          ++skipped_negative_;
          return;
        }
        if (static_pending_) PutStatic(stamp, out);
        auto put = [&](std::string_view leaf, std::string_view type, std::vector<uint8_t> cdr) {
          out.push_back({s.topic + "/" + std::string(leaf), std::string(type), false, stamp, std::move(cdr)});
        };
        const std::string base = s.entity_id ? VehicleName(s.entity_id) + "/base_link" : "map";
        if constexpr (std::is_same_v<M, protocol::PointCloud> || std::is_same_v<M, protocol::FusedCloud>) {
          const auto points = UnpackPointRecords(msg.points, msg.point_count, msg.point_stride);
          if (points.size() != msg.point_count) return void(++skipped_bad_);
          std::string frame = base;  // a fused cloud, or a scan in the vehicle frame
          if constexpr (std::is_same_v<M, protocol::PointCloud>)
            if (!msg.vehicle_frame) frame = s.frame;
          put(BagLeaf(s.kind), "sensor_msgs/msg/PointCloud2", EncodePointCloud2(stamp, frame, points));
        } else if constexpr (std::is_same_v<M, protocol::ImuMeasurement>) {
          // sensor_msgs/Imu carries what an accelerometer senses, the specific force (+g up at rest, REP 145);
          // platoon's measurement is kinematic acceleration plus the gravity vector (-g up at rest,
          // sensors/imu.hpp): its negative.
          put("imu", "sensor_msgs/msg/Imu", EncodeImu(stamp, s.frame, msg.angular_velocity_radps, -msg.acceleration_mps2));
        } else if constexpr (std::is_same_v<M, protocol::GnssMeasurement>) {
          put("fix", "sensor_msgs/msg/NavSatFix",
              EncodeNavSatFix(stamp, s.frame, msg.latitude_deg, msg.longitude_deg, msg.altitude_m,
                              msg.horizontal_sigma_m, msg.vertical_sigma_m));
        } else if constexpr (std::is_same_v<M, protocol::RadarScan>) {
          // Returns as measured; tracks for the detections that follow an object (false positives have no
          // track), with the range rate along the line of sight as their velocity.
          std::vector<RadarReturn> returns;
          std::vector<RadarTrack> tracks;
          returns.reserve(msg.detections.size());
          for (const auto& r : msg.detections) {
            returns.push_back({r.range_m, r.azimuth_rad, 0.0f, r.range_rate_mps, r.rcs_dbsm});
            if (r.false_positive || r.entity_id == 0) continue;
            const Vec3 los(std::cos(r.azimuth_rad), std::sin(r.azimuth_rad), 0.0);
            tracks.push_back({r.entity_id, Vec3(r.x_m, r.y_m, 0.0), los * r.range_rate_mps,
                              Vec3(r.length_m, r.width_m, 0.0), BagRadarTrackClass(r.object_class)});
          }
          put("scan", "radar_msgs/msg/RadarScan", EncodeRadarScan(stamp, s.frame, returns));
          put("tracks", "radar_msgs/msg/RadarTracks", EncodeRadarTracks(stamp, s.frame, tracks));
        } else if constexpr (std::is_same_v<M, protocol::ObjectList>) {
          std::vector<Detection> detections;
          detections.reserve(msg.objects.size());
          for (const auto& ob : msg.objects)
            detections.push_back({std::string(BagObjectClassName(ob.object_class)), 1.0, ob.position_m, ob.size_m,
                                  ob.track_id ? std::to_string(ob.track_id) : std::string()});
          put("objects", "vision_msgs/msg/Detection3DArray", EncodeDetection3DArray(stamp, s.frame, detections));
        } else if constexpr (std::is_same_v<M, protocol::CameraFrame>) {
          const std::string optical = s.frame + "_optical";
          put("camera_info", "sensor_msgs/msg/CameraInfo",
              EncodeCameraInfo(stamp, optical, CameraIntrinsics{msg.width, msg.height, msg.fx, msg.fy, msg.cx, msg.cy}));
          if (msg.encoding == "rgb8" && msg.image.size() == size_t{msg.width} * msg.height * 3)
            put("image_raw", "sensor_msgs/msg/Image",
                EncodeImage(stamp, optical, msg.width, msg.height, "rgb8", msg.width * 3, BagBytesOf(msg.image)));
          else if (msg.encoding == "png" && !msg.image.empty())
            put("image_raw/compressed", "sensor_msgs/msg/CompressedImage",
                EncodeCompressedImage(stamp, optical, "png", BagBytesOf(msg.image)));
        }
      },
      m);
}

}  // namespace platoon::ros2
