// `platoon export LOG --ros2 DIR`: a session log as a rosbag2 bag with MCAP storage (docs/RECORDING.md,
// "ROS 2"). Two passes through the log, each streaming (constant memory beyond one message):
//  1. what is in it: the session file (vehicle names), the nodes, every data stream with its vehicle and
//     mount, the first and last sim times;
//  2. the messages, converted as they come: /clock and /tf (map -> <vehicle>/base_link) and
//     /<vehicle>/odom from each world state, /tf_static (base_link -> each sensor's frame) once at the
//     start, the sensor streams (PointCloud2 in Autoware's PointXYZIRCAEDT, Imu, NavSatFix, RadarScan,
//     Detection3DArray).
// Then DIR/metadata.yaml as rosbag2 writes it (version 5), so `ros2 bag info/play DIR` accept the folder.
#include "ros2_export.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/geometry.hpp"
#include "platoon/log/mcap.hpp"
#include "platoon/log/ros2.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon export";
constexpr int kExitNothing = 1;
constexpr int kExitUsage = config::cli::kExitUsage;

// A data stream as pass 1 found it.
struct StreamInfo {
  protocol::StreamKind kind = protocol::StreamKind::kUnknown;
  uint64_t entity_id = 0;
  bool has_mount = false;  // a sensor with a SensorHeader (fused clouds have none: vehicle frame)
  Pose mount;
  std::string frame;       // "<vehicle>/<sensor>"
  std::string topic;       // "/<vehicle>/<sensor>/<points|imu|fix|scan>"; "" = not exported
  std::string type;        // ROS 2 type of `topic`
};

const protocol::SensorHeader* HeaderOf(const protocol::Message& m) {
  return std::visit(
      [](const auto& msg) -> const protocol::SensorHeader* {
        if constexpr (requires { msg.header.sensor_id; }) return &msg.header;
        return nullptr;
      },
      m);
}

// One bag channel: its id and how many messages went on it.
struct BagChannel {
  uint16_t id = 0;
  std::string type;
  bool latched = false;
  uint64_t count = 0;
};

// The bag being written: schemas and channels made on first use.
class Bag {
 public:
  explicit Bag(mcap::Sink& sink) : writer_(sink, Def()) {}

  mcap::Status Put(const std::string& topic, const std::string& type, bool latched, int64_t log_ns,
                   const std::vector<uint8_t>& cdr) {
    auto it = channels_.find(topic);
    if (it == channels_.end()) {
      auto schema = schemas_.find(type);
      if (schema == schemas_.end()) {
        const std::string def = ros2::FullDefinition(type);
        const uint16_t id = static_cast<uint16_t>(schemas_.size() + 1);
        if (auto s = writer_.AddSchema({id, type, std::string(ros2::kSchemaEncoding), {def.begin(), def.end()}}); !s.Ok())
          return s;
        schema = schemas_.emplace(type, id).first;
      }
      const uint16_t id = static_cast<uint16_t>(channels_.size() + 1);
      mcap::Channel c{id, schema->second, topic, std::string(ros2::kMessageEncoding),
                      {{"offered_qos_profiles", ros2::OfferedQosProfiles(latched)}}};
      if (auto s = writer_.AddChannel(c); !s.Ok()) return s;
      it = channels_.emplace(topic, BagChannel{id, type, latched, 0}).first;
    }
    BagChannel& c = it->second;
    const uint64_t t = static_cast<uint64_t>(std::max<int64_t>(0, log_ns));
    ++c.count;
    first_ns_ = std::min(first_ns_, t);
    last_ns_ = std::max(last_ns_, t);
    return writer_.WriteMessage({c.id, static_cast<uint32_t>(c.count), t, t}, cdr);
  }

  mcap::Status Close() { return writer_.Close(); }
  const std::map<std::string, BagChannel>& Channels() const { return channels_; }
  uint64_t Messages() const { return writer_.Stats().message_count; }
  uint64_t FirstNs() const { return Messages() ? first_ns_ : 0; }
  uint64_t LastNs() const { return Messages() ? last_ns_ : 0; }
  uint64_t Bytes() const { return writer_.BytesWritten(); }

 private:
  static mcap::WriterDef Def() {
    mcap::WriterDef d = mcap::DefaultWriterDef();
    d.profile = std::string(ros2::kProfile);
    d.library = "platoon";
    return d;
  }
  mcap::Writer writer_;
  std::map<std::string, uint16_t> schemas_;
  std::map<std::string, BagChannel> channels_;
  uint64_t first_ns_ = UINT64_MAX, last_ns_ = 0;
};

// A YAML double-quoted scalar of `s`.
std::string YamlQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string MetadataYaml(const Bag& bag, const std::string& file) {
  const uint64_t duration = bag.LastNs() - bag.FirstNs();
  std::string y = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: mcap\n";
  y += fmt::format("  duration:\n    nanoseconds: {}\n", duration);
  y += fmt::format("  starting_time:\n    nanoseconds_since_epoch: {}\n", bag.FirstNs());
  y += fmt::format("  message_count: {}\n", bag.Messages());
  y += "  topics_with_message_count:\n";
  for (const auto& [topic, c] : bag.Channels()) {
    y += fmt::format("    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n",
                     topic, c.type);
    y += "        offered_qos_profiles: " + YamlQuote(ros2::OfferedQosProfiles(c.latched)) + "\n";
    y += fmt::format("      message_count: {}\n", c.count);
  }
  y += "  compression_format: \"\"\n  compression_mode: \"\"\n";
  y += "  relative_file_paths:\n    - " + file + "\n";
  y += "  files:\n    - path: " + file + "\n";
  y += fmt::format("      starting_time:\n        nanoseconds_since_epoch: {}\n", bag.FirstNs());
  y += fmt::format("      duration:\n        nanoseconds: {}\n", duration);
  y += fmt::format("      message_count: {}\n", bag.Messages());
  return y;
}

std::string_view TopicLeaf(protocol::StreamKind kind) {
  switch (kind) {
    case protocol::StreamKind::kLidar:
    case protocol::StreamKind::kFused: return "points";
    case protocol::StreamKind::kImu: return "imu";
    case protocol::StreamKind::kGnss: return "fix";
    case protocol::StreamKind::kRadar: return "scan";
    case protocol::StreamKind::kObjects: return "objects";
    default: return "";
  }
}

std::string_view TopicType(protocol::StreamKind kind) {
  switch (kind) {
    case protocol::StreamKind::kLidar:
    case protocol::StreamKind::kFused: return "sensor_msgs/msg/PointCloud2";
    case protocol::StreamKind::kImu: return "sensor_msgs/msg/Imu";
    case protocol::StreamKind::kGnss: return "sensor_msgs/msg/NavSatFix";
    case protocol::StreamKind::kRadar: return "radar_msgs/msg/RadarScan";
    case protocol::StreamKind::kObjects: return "vision_msgs/msg/Detection3DArray";
    default: return "";
  }
}

// The reported class of an object list entry (0 unclassified, 1 car, 2 truck, 3 motorbike, 4 bicycle,
// 5 pedestrian), as a vision_msgs class id.
std::string_view ObjectClassName(uint8_t c) {
  constexpr std::string_view kNames[] = {"unclassified", "car", "truck", "motorbike", "bicycle", "pedestrian"};
  return c < std::size(kNames) ? kNames[c] : kNames[0];
}

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

int RunRos2Export(const ExportOptions& o) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  if (o.to_s < o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) is before --from (%.3f s)\n", kMe, o.to_s, o.from_s);
    return kExitUsage;
  }
  const int64_t from_ns = o.from_s <= -9e9 ? INT64_MIN : SToNs(o.from_s);
  const int64_t to_ns = o.to_s >= 9e9 ? INT64_MAX : SToNs(o.to_s);

  // 1. What the log holds: session, nodes, entities, streams.
  std::optional<session_log::SessionInfo> info;
  std::map<uint32_t, std::string> node_names;
  std::set<uint64_t> entity_ids;
  std::map<std::string, StreamInfo> streams;
  size_t world_states = 0;
  const mcap::ReadResult scan = session_log::Read(o.log_path, [&](const session_log::Entry& e) {
    if (e.topic == session_log::kSessionTopic) {
      if (!info) info = session_log::ParseSessionInfo({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
      return;
    }
    const bool world = e.topic == session_log::kWorldTopic;
    if (!world && !e.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const std::string id(world ? std::string_view() : e.topic.substr(session_log::kDataTopicPrefix.size()));
    if (!world && streams.contains(id)) return;
    const protocol::Decoded d = protocol::Decode({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
    if (!d.message) return;
    if (world) {
      const auto* ws = std::get_if<protocol::WorldState>(&*d.message);
      if (!ws) return;
      ++world_states;
      for (const auto& n : ws->nodes) node_names.emplace(n.node_id, n.name);
      for (const auto& s : ws->entities) entity_ids.insert(s.id);
      return;
    }
    StreamInfo s;
    if (const auto* h = HeaderOf(*d.message)) {
      s.kind = h->kind;
      s.entity_id = h->entity_id;
      s.has_mount = true;
      s.mount = Pose{h->mount_position_m, h->mount_orientation};
      if (std::holds_alternative<protocol::PointCloud>(*d.message)) s.kind = protocol::StreamKind::kLidar;
    } else if (const auto* f = std::get_if<protocol::FusedCloud>(&*d.message)) {
      s.kind = protocol::StreamKind::kFused;
      s.entity_id = f->entity_id;
    } else {
      return;
    }
    streams.emplace(id, s);
  });
  if (world_states == 0 && streams.empty()) {
    std::fprintf(stderr, "%s: %s is not a platoon session log%s%s\n", kMe, o.log_path.c_str(),
                 scan.problems.empty() ? "" : ": ", scan.problems.empty() ? "" : scan.problems.front().message.c_str());
    return kExitUsage;
  }
  for (const auto& p : scan.problems) std::fprintf(stderr, "%s: warning: %s\n", kMe, p.message.c_str());

  // Names: the session's vehicle names where the recorded session file loads, as the CSV export names them.
  std::vector<std::string> nodes;
  for (const auto& [id, name] : node_names) nodes.push_back(name);
  std::vector<NodeNaming> naming;
  if (info && !info->config.empty()) {
    try {
      const config::SessionDef session = config::LoadSessionText(info->config, info->config_path.empty() ? o.log_path : info->config_path);
      naming = config::SessionNaming(session);
      for (const auto& n : session.nodes) nodes.push_back(n.name);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "%s: warning: the recorded session file does not load (%s); vehicles go by <node>_<index>\n",
                   kMe, ex.what());
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (const auto& n : nodes) naming.push_back(NodeNaming{n, false, {}});
  std::map<uint64_t, std::string> vehicle_names;  // entity id -> ROS 2 name
  auto vehicle = [&](uint64_t id) -> const std::string& {
    auto it = vehicle_names.find(id);
    if (it != vehicle_names.end()) return it->second;
    const std::string name = VehicleName(id, nodes).empty() ? fmt::format("entity_{:016x}", id)
                                                            : Ros2Name(EntityDisplayName(id, naming));
    return vehicle_names.emplace(id, name).first->second;
  };
  for (auto& [id, s] : streams) {
    const std::string prefix = s.entity_id ? vehicle(s.entity_id) + "/" : "";
    s.frame = prefix + Ros2Name(id);
    if (!TopicLeaf(s.kind).empty()) {
      s.topic = "/" + prefix + Ros2Name(id) + "/" + std::string(TopicLeaf(s.kind));
      s.type = std::string(TopicType(s.kind));
    }
  }

  // 2. The bag folder: DIR/<DIR name>_0.mcap, as rosbag2 names its first file.
  std::error_code ec;
  fs::create_directories(o.ros2_dir, ec);
  if (ec || !fs::is_directory(o.ros2_dir)) {
    std::fprintf(stderr, "%s: --ros2: cannot create the bag directory %s: %s\n", kMe, o.ros2_dir.c_str(),
                 ec ? ec.message().c_str() : "not a directory");
    return kExitUsage;
  }
  std::string bag_name = fs::absolute(o.ros2_dir).lexically_normal().filename().string();
  if (bag_name.empty()) bag_name = fs::absolute(o.ros2_dir).lexically_normal().parent_path().filename().string();
  if (bag_name.empty()) bag_name = "bag";
  const std::string file = bag_name + "_0.mcap";
  const std::string mcap_path = (fs::path(o.ros2_dir) / file).string();
  std::string error;
  auto sink = mcap::FileSink::Open(mcap_path, &error);
  if (!sink) {
    std::fprintf(stderr, "%s: --ros2: %s\n", kMe, error.c_str());
    return kExitUsage;
  }
  Bag bag(*sink);

  // 3. The messages. /tf_static goes first, stamped at the first exported time.
  std::string write_error;
  bool static_done = false;
  size_t skipped_negative = 0, skipped_bad = 0;
  auto put = [&](const std::string& topic, const std::string& type, bool latched, int64_t log_ns,
                 const std::vector<uint8_t>& cdr) {
    if (!write_error.empty()) return;
    if (auto s = bag.Put(topic, type, latched, log_ns, cdr); !s.Ok()) write_error = s.error;
  };
  auto put_static = [&](int64_t t_ns) {
    if (static_done) return;
    static_done = true;
    std::vector<ros2::Transform> mounts;
    for (const auto& [id, s] : streams)
      if (s.has_mount) mounts.push_back({t_ns, s.entity_id ? vehicle(s.entity_id) + "/base_link" : "map", s.frame, s.mount});
    if (!mounts.empty()) put("/tf_static", "tf2_msgs/msg/TFMessage", true, t_ns, ros2::EncodeTfMessage(mounts));
  };
  const mcap::ReadResult read = session_log::Read(o.log_path, [&](const session_log::Entry& e) {
    if (!write_error.empty()) return;
    const bool world = e.topic == session_log::kWorldTopic;
    if (!world && !e.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const protocol::Decoded d = protocol::Decode({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
    if (!d.message) {
      ++skipped_bad;
      return;
    }
    const int64_t log_ns = static_cast<int64_t>(e.log_time_ns);
    if (world) {
      const auto* ws = std::get_if<protocol::WorldState>(&*d.message);
      if (!ws) return;
      // ROS 2 times cannot be negative: the countdown before the start is left out.
      if (ws->sim_time_ns < 0) {
        ++skipped_negative;
        return;
      }
      if (ws->sim_time_ns < from_ns || ws->sim_time_ns > to_ns) return;
      put_static(ws->sim_time_ns);
      put("/clock", "rosgraph_msgs/msg/Clock", false, ws->sim_time_ns, ros2::EncodeClock(ws->sim_time_ns));
      std::vector<ros2::Transform> poses;
      for (const auto& s : ws->entities) {
        const int64_t stamp = s.kinematics.stamp_ns;
        if (stamp < 0) continue;
        const std::string base = vehicle(s.id) + "/base_link";
        poses.push_back({stamp, "map", base, s.kinematics.pose});
        put("/" + vehicle(s.id) + "/odom", "nav_msgs/msg/Odometry", false, ws->sim_time_ns,
            ros2::EncodeOdometry(stamp, "map", base, s.kinematics.pose, s.kinematics.velocity_mps,
                                 s.kinematics.angular_velocity_radps));
      }
      if (!poses.empty()) put("/tf", "tf2_msgs/msg/TFMessage", false, ws->sim_time_ns, ros2::EncodeTfMessage(poses));
      return;
    }
    const std::string id(e.topic.substr(session_log::kDataTopicPrefix.size()));
    const auto it = streams.find(id);
    if (it == streams.end() || it->second.topic.empty()) return;
    const StreamInfo& s = it->second;
    std::visit(
        [&](const auto& m) {
          using M = std::decay_t<decltype(m)>;
          int64_t stamp = 0;
          if constexpr (requires { m.header.stamp_ns; }) stamp = m.header.stamp_ns;
          else if constexpr (std::is_same_v<M, protocol::FusedCloud>) stamp = m.reference_ns;
          else return;
          if (stamp < 0) {
            ++skipped_negative;
            return;
          }
          if (stamp < from_ns || stamp > to_ns) return;
          put_static(std::max<int64_t>(0, log_ns));
          if constexpr (std::is_same_v<M, protocol::PointCloud>) {
            const auto points = UnpackPointRecords(m.points, m.point_count, m.point_stride);
            if (points.size() != m.point_count) return void(++skipped_bad);
            const std::string frame = m.vehicle_frame && s.entity_id ? vehicle(s.entity_id) + "/base_link" : s.frame;
            put(s.topic, s.type, false, log_ns, ros2::EncodePointCloud2(stamp, frame, points));
          } else if constexpr (std::is_same_v<M, protocol::FusedCloud>) {
            const auto points = UnpackPointRecords(m.points, m.point_count, m.point_stride);
            if (points.size() != m.point_count) return void(++skipped_bad);
            const std::string frame = s.entity_id ? vehicle(s.entity_id) + "/base_link" : "map";
            put(s.topic, s.type, false, log_ns, ros2::EncodePointCloud2(stamp, frame, points));
          } else if constexpr (std::is_same_v<M, protocol::ImuMeasurement>) {
            put(s.topic, s.type, false, log_ns, ros2::EncodeImu(stamp, s.frame, m.angular_velocity_radps, m.acceleration_mps2));
          } else if constexpr (std::is_same_v<M, protocol::GnssMeasurement>) {
            put(s.topic, s.type, false, log_ns,
                ros2::EncodeNavSatFix(stamp, s.frame, m.latitude_deg, m.longitude_deg, m.altitude_m,
                                      m.horizontal_sigma_m, m.vertical_sigma_m));
          } else if constexpr (std::is_same_v<M, protocol::RadarScan>) {
            std::vector<ros2::RadarReturn> returns;
            returns.reserve(m.detections.size());
            for (const auto& r : m.detections)
              returns.push_back({r.range_m, r.azimuth_rad, 0.0f, r.range_rate_mps, r.rcs_dbsm});
            put(s.topic, s.type, false, log_ns, ros2::EncodeRadarScan(stamp, s.frame, returns));
          } else if constexpr (std::is_same_v<M, protocol::ObjectList>) {
            std::vector<ros2::Detection> detections;
            detections.reserve(m.objects.size());
            for (const auto& ob : m.objects)
              detections.push_back({std::string(ObjectClassName(ob.object_class)), 1.0, ob.position_m, ob.size_m,
                                    ob.track_id ? std::to_string(ob.track_id) : std::string()});
            put(s.topic, s.type, false, log_ns, ros2::EncodeDetection3DArray(stamp, s.frame, detections));
          }
        },
        *d.message);
  });
  (void)read;  // its problems were reported by the first pass
  if (write_error.empty()) {
    if (auto s = bag.Close(); !s.Ok()) write_error = s.error;
  }
  if (!write_error.empty()) {
    std::fprintf(stderr, "%s: --ros2: %s\n", kMe, write_error.c_str());
    return kExitUsage;
  }
  if (bag.Messages() == 0) {
    fs::remove(mcap_path, ec);
    std::fprintf(stderr, "%s: %s has no world state or sensor message%s: no bag written\n", kMe,
                 o.log_path.c_str(), o.from_s > -9e9 || o.to_s < 9e9 ? " within --from/--to" : "");
    return kExitNothing;
  }
  const std::string yaml_path = (fs::path(o.ros2_dir) / "metadata.yaml").string();
  std::ofstream yaml(yaml_path, std::ios::binary | std::ios::trunc);
  yaml << MetadataYaml(bag, file);
  yaml.flush();
  if (!yaml) {
    std::fprintf(stderr, "%s: --ros2: cannot write %s\n", kMe, yaml_path.c_str());
    return kExitUsage;
  }
  if (skipped_negative)
    std::fprintf(stderr, "%s: %zu messages before sim time 0 left out (ROS 2 times cannot be negative)\n", kMe, skipped_negative);
  if (skipped_bad)
    std::fprintf(stderr, "%s: warning: %zu messages could not be decoded and were skipped\n", kMe, skipped_bad);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::fprintf(stderr, "%s: %llu ROS 2 messages on %zu topics (%.3f..%.3f s of sim time, %.1f MB) to %s in %.2f s\n", kMe,
               static_cast<unsigned long long>(bag.Messages()), bag.Channels().size(), bag.FirstNs() * 1e-9,
               bag.LastNs() * 1e-9, bag.Bytes() / 1e6, o.ros2_dir.c_str(), wall_s);
  return 0;
}

}  // namespace platoon::launcher
