// `platoon export LOG --ros2 DIR`: a session log as a rosbag2 bag with MCAP storage (docs/RECORDING.md,
// "ROS 2"). Two passes through the log, each streaming (constant memory beyond one message):
//  1. what is in it: the session file (vehicle names), the nodes, every data stream with its vehicle and
//     mount, the first and last sim times;
//  2. the messages, converted as they come by ros2::Converter (platoon/log/ros2_bag.hpp, the mapping the
//     live recorder uses too): /clock, /tf, /<vehicle>/odom from each world state, /tf_static (every
//     sensor mount) once at the start, the sensor streams (PointCloud2 in Autoware's PointXYZIRCAEDT, Imu,
//     NavSatFix, RadarScan and RadarTracks, Detection3DArray, CameraInfo with Image or CompressedImage).
// Then DIR/metadata.yaml as rosbag2 writes it (version 5), so `ros2 bag info/play DIR` accept the folder.
#include "ros2_export.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/geometry.hpp"
#include "platoon/log/mcap.hpp"
#include "platoon/log/ros2.hpp"
#include "platoon/log/ros2_bag.hpp"
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

// The bag being written: schemas and channels made on first use.
class Bag {
 public:
  explicit Bag(mcap::Sink& sink) : writer_(sink, Def()) {}

  mcap::Status Put(const ros2::BagMessage& m) {
    auto it = channels_.find(m.topic);
    if (it == channels_.end()) {
      auto schema = schemas_.find(m.type);
      if (schema == schemas_.end()) {
        const std::string def = ros2::FullDefinition(m.type);
        const uint16_t id = static_cast<uint16_t>(schemas_.size() + 1);
        if (auto s = writer_.AddSchema({id, m.type, std::string(ros2::kSchemaEncoding), {def.begin(), def.end()}}); !s.Ok())
          return s;
        schema = schemas_.emplace(m.type, id).first;
      }
      const uint16_t id = static_cast<uint16_t>(channels_.size() + 1);
      mcap::Channel c{id, schema->second, m.topic, std::string(ros2::kMessageEncoding),
                      {{"offered_qos_profiles", ros2::OfferedQosProfiles(m.latched)}}};
      if (auto s = writer_.AddChannel(c); !s.Ok()) return s;
      it = channels_.emplace(m.topic, id).first;
    }
    tally_.Add(m);
    const uint64_t t = static_cast<uint64_t>(std::max<int64_t>(0, m.log_ns));
    return writer_.WriteMessage({it->second, static_cast<uint32_t>(tally_.Topics().at(m.topic).count), t, t}, m.cdr);
  }

  mcap::Status Close() { return writer_.Close(); }
  const ros2::BagTally& Tally() const { return tally_; }
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
  std::map<std::string, uint16_t> channels_;
  ros2::BagTally tally_;
};

// Sim time of a data message (scan start, fused reference); nullopt for a message that is no data stream.
std::optional<int64_t> DataStamp(const protocol::Message& m) {
  return std::visit(
      [](const auto& msg) -> std::optional<int64_t> {
        if constexpr (requires { msg.header.stamp_ns; }) return msg.header.stamp_ns;
        else if constexpr (std::is_same_v<std::decay_t<decltype(msg)>, protocol::FusedCloud>) return msg.reference_ns;
        else return std::nullopt;
      },
      m);
}

}  // namespace

std::string Ros2Name(const std::string& name) { return ros2::Ros2Name(name); }

int RunRos2Export(const ExportOptions& o) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  if (o.to_s < o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) is before --from (%.3f s)\n", kMe, o.to_s, o.from_s);
    return kExitUsage;
  }
  const int64_t from_ns = o.from_s <= -9e9 ? INT64_MIN : SToNs(o.from_s);
  const int64_t to_ns = o.to_s >= 9e9 ? INT64_MAX : SToNs(o.to_s);

  // 1. What the log holds: session, nodes, and the first message of every data stream (its mount).
  std::optional<session_log::SessionInfo> info;
  std::set<std::string> node_names;
  std::map<std::string, protocol::Message> first_of_stream;
  size_t world_states = 0;
  const mcap::ReadResult scan = session_log::Read(o.log_path, [&](const session_log::Entry& e) {
    if (e.topic == session_log::kSessionTopic) {
      if (!info) info = session_log::ParseSessionInfo({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
      return;
    }
    const bool world = e.topic == session_log::kWorldTopic;
    if (!world && !e.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const std::string id(world ? std::string_view() : e.topic.substr(session_log::kDataTopicPrefix.size()));
    if (!world && first_of_stream.contains(id)) return;
    protocol::Decoded d = protocol::Decode({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
    if (!d.message) return;
    if (world) {
      const auto* ws = std::get_if<protocol::WorldState>(&*d.message);
      if (!ws) return;
      ++world_states;
      for (const auto& n : ws->nodes) node_names.insert(n.name);
      return;
    }
    if (!DataStamp(*d.message)) return;
    // Only the header is needed: a cloud's points are let go.
    std::visit([](auto& m) { if constexpr (requires { m.points; }) m.points.clear(), m.point_count = 0; }, *d.message);
    first_of_stream.emplace(id, std::move(*d.message));
  });
  if (world_states == 0 && first_of_stream.empty()) {
    std::fprintf(stderr, "%s: %s is not a platoon session log%s%s\n", kMe, o.log_path.c_str(),
                 scan.problems.empty() ? "" : ": ", scan.problems.empty() ? "" : scan.problems.front().message.c_str());
    return kExitUsage;
  }
  for (const auto& p : scan.problems) std::fprintf(stderr, "%s: warning: %s\n", kMe, p.message.c_str());

  // Names: the session's vehicle names where the recorded session file loads, as the CSV export names them.
  std::vector<NodeNaming> naming;
  if (info && !info->config.empty()) {
    try {
      const config::SessionDef session = config::LoadSessionText(info->config, info->config_path.empty() ? o.log_path : info->config_path);
      naming = config::SessionNaming(session);
      for (const auto& n : session.nodes) node_names.insert(n.name);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "%s: warning: the recorded session file does not load (%s); vehicles go by <node>_<index>\n",
                   kMe, ex.what());
    }
  }
  ros2::Converter convert(std::move(naming));
  for (const auto& n : node_names) convert.AddNode(n);
  for (const auto& [id, m] : first_of_stream) convert.Declare(m);
  first_of_stream.clear();

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

  // 3. The messages, in --from/--to. /tf_static goes first, stamped at the first exported time.
  std::string write_error;
  size_t skipped_bad = 0;
  std::vector<ros2::BagMessage> out;
  const mcap::ReadResult read = session_log::Read(o.log_path, [&](const session_log::Entry& e) {
    if (!write_error.empty()) return;
    const bool world = e.topic == session_log::kWorldTopic;
    if (!world && !e.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const protocol::Decoded d = protocol::Decode({reinterpret_cast<const char*>(e.data.data()), e.data.size()});
    if (!d.message) {
      ++skipped_bad;
      return;
    }
    out.clear();
    if (world) {
      const auto* ws = std::get_if<protocol::WorldState>(&*d.message);
      if (!ws) return;
      if (ws->sim_time_ns >= 0 && (ws->sim_time_ns < from_ns || ws->sim_time_ns > to_ns)) return;
      convert.OnWorld(*ws, out);
    } else {
      const auto stamp = DataStamp(*d.message);
      if (!stamp) return;
      if (*stamp >= 0 && (*stamp < from_ns || *stamp > to_ns)) return;
      convert.OnData(*d.message, out);
    }
    for (const auto& m : out) {
      if (auto s = bag.Put(m); !s.Ok()) {
        write_error = s.error;
        return;
      }
    }
  });
  (void)read;  // its problems were reported by the first pass
  if (write_error.empty()) {
    if (auto s = bag.Close(); !s.Ok()) write_error = s.error;
  }
  if (!write_error.empty()) {
    std::fprintf(stderr, "%s: --ros2: %s\n", kMe, write_error.c_str());
    return kExitUsage;
  }
  const ros2::BagTally& tally = bag.Tally();
  if (tally.Messages() == 0) {
    fs::remove(mcap_path, ec);
    std::fprintf(stderr, "%s: %s has no world state or sensor message%s: no bag written\n", kMe,
                 o.log_path.c_str(), o.from_s > -9e9 || o.to_s < 9e9 ? " within --from/--to" : "");
    return kExitNothing;
  }
  const std::string yaml_path = (fs::path(o.ros2_dir) / "metadata.yaml").string();
  std::ofstream yaml(yaml_path, std::ios::binary | std::ios::trunc);
  yaml << tally.MetadataYaml(file);
  yaml.flush();
  if (!yaml) {
    std::fprintf(stderr, "%s: --ros2: cannot write %s\n", kMe, yaml_path.c_str());
    return kExitUsage;
  }
  if (convert.SkippedNegative())
    std::fprintf(stderr, "%s: %llu messages before sim time 0 left out (ROS 2 times cannot be negative)\n", kMe,
                 static_cast<unsigned long long>(convert.SkippedNegative()));
  if (skipped_bad + convert.SkippedBad())
    std::fprintf(stderr, "%s: warning: %llu messages could not be decoded and were skipped\n", kMe,
                 static_cast<unsigned long long>(skipped_bad + convert.SkippedBad()));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::fprintf(stderr, "%s: %llu ROS 2 messages on %zu topics (%.3f..%.3f s of sim time, %.1f MB) to %s in %.2f s\n", kMe,
               static_cast<unsigned long long>(tally.Messages()), tally.Topics().size(), tally.FirstNs() * 1e-9,
               tally.LastNs() * 1e-9, bag.Bytes() / 1e6, o.ros2_dir.c_str(), wall_s);
  return 0;
}

}  // namespace platoon::launcher
