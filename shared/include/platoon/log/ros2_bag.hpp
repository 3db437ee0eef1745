#pragma once
/// platoon's messages as ROS 2 messages (docs/RECORDING.md, "ROS 2"): the one mapping of topics, frames and
/// types that the recorder (`ros2 = true`, live) and `platoon export LOG --ros2 DIR` (after the run) share,
/// and the metadata.yaml rosbag2 reads beside a bag file.
///
/// Topics (vehicle and sensor names made ROS 2 names by Ros2Name):
///   /clock                            rosgraph_msgs/msg/Clock            every world state
///   /tf                               tf2_msgs/msg/TFMessage             map -> <vehicle>/base_link, every world state
///   /tf_static                        tf2_msgs/msg/TFMessage             <vehicle>/base_link -> <vehicle>/<sensor> (mounts)
///   /<vehicle>/odom                   nav_msgs/msg/Odometry
///   /<vehicle>/<sensor>/points        sensor_msgs/msg/PointCloud2        lidar (Autoware PointXYZIRCAEDT), fused
///   /<vehicle>/<sensor>/imu           sensor_msgs/msg/Imu
///   /<vehicle>/<sensor>/fix           sensor_msgs/msg/NavSatFix
///   /<vehicle>/<sensor>/scan          radar_msgs/msg/RadarScan
///   /<vehicle>/<sensor>/tracks        radar_msgs/msg/RadarTracks
///   /<vehicle>/<sensor>/objects       vision_msgs/msg/Detection3DArray
///   /<vehicle>/<sensor>/camera_info   sensor_msgs/msg/CameraInfo         frame <vehicle>/<sensor>_optical
///   /<vehicle>/<sensor>/image_raw     sensor_msgs/msg/Image              frames with an rgb8 image
///   /<vehicle>/<sensor>/image_raw/compressed  sensor_msgs/msg/CompressedImage  frames with a PNG image
/// Stamps are sim time; nothing before sim time 0 (ROS 2 times cannot be negative).

#include "platoon/entity_id.hpp"
#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::ros2 {

/// ROS 2 name of an entity or sensor name: characters other than letters, digits and '_' become '_',
/// repeated '_' collapse, a leading digit gets a "v" before it ("robot:0" -> "robot_0").
std::string Ros2Name(const std::string& name);

/// The stream id (sensor id) of a data-stream message; empty for a message that is no data stream.
std::string DataStreamId(const protocol::Message& m);

/// One ROS 2 message to write.
struct BagMessage {
  std::string topic;          ///< e.g. "/ego/lidar_front/points".
  std::string type;           ///< e.g. "sensor_msgs/msg/PointCloud2".
  bool latched = false;       ///< /tf_static: transient-local QoS.
  int64_t log_ns = 0;         ///< Log time: the sim time of the message, in ns (>= 0).
  std::vector<uint8_t> cdr;   ///< The CDR payload.
};

/// What a bag holds per topic and in all, for metadata.yaml.
class BagTally {
 public:
  /// One topic's type, QoS and count.
  struct Topic {
    std::string type;
    bool latched = false;
    uint64_t count = 0;
  };
  /// Counts `m` (its log time widens the bag's time span).
  void Add(const BagMessage& m);
  uint64_t Messages() const { return messages_; }
  uint64_t FirstNs() const { return messages_ ? first_ns_ : 0; }  ///< Earliest log time, in ns.
  uint64_t LastNs() const { return messages_ ? last_ns_ : 0; }    ///< Latest log time, in ns.
  const std::map<std::string, Topic>& Topics() const { return topics_; }
  /// metadata.yaml as rosbag2 writes it (version 5, storage mcap) for a bag of the one file `file` (its
  /// name relative to the yaml's folder): every topic counted, with type, cdr and offered_qos_profiles.
  std::string MetadataYaml(const std::string& file) const;

 private:
  std::map<std::string, Topic> topics_;
  uint64_t messages_ = 0, first_ns_ = UINT64_MAX, last_ns_ = 0;
};

/// Converts world states and data-stream messages to ROS 2 messages. Pure: it keeps the streams it has
/// seen (for /tf_static) and the vehicle names it gave; no clock, no I/O.
class Converter {
 public:
  /// `naming`: how the session names its vehicles (config::SessionNaming); node names may be added later.
  explicit Converter(std::vector<NodeNaming> naming = {});
  /// A node whose vehicles may appear (its vehicles are "<node>_<index>" unless `naming` says otherwise).
  void AddNode(const std::string& node_name);
  /// Makes the stream of `first` known before its first OnData (the export's first pass), so that the
  /// first /tf_static holds its mount. False for a message that is no data stream.
  bool Declare(const protocol::Message& first);
  /// A world state: /tf_static when mounts are pending, /clock, /tf, /<vehicle>/odom. Nothing before sim time 0.
  void OnWorld(const protocol::WorldState& w, std::vector<BagMessage>& out);
  /// A data-stream message: /tf_static first when its stream is new (or mounts are pending), then its
  /// topics. Nothing for a stamp before 0 or a kind without a ROS 2 message.
  void OnData(const protocol::Message& m, std::vector<BagMessage>& out);

  /// The ROS 2 name of a vehicle: its session name made a ROS 2 name, or entity_<16 hex digits>.
  const std::string& VehicleName(uint64_t entity_id);
  uint64_t SkippedNegative() const { return skipped_negative_; }  ///< Messages before sim time 0, left out.
  uint64_t SkippedBad() const { return skipped_bad_; }            ///< Clouds whose records did not unpack.

 private:
  struct Stream {
    protocol::StreamKind kind = protocol::StreamKind::kUnknown;
    uint64_t entity_id = 0;
    bool has_mount = false;  // sensors (fused clouds have none: vehicle frame)
    Pose mount;
    std::string frame;       // "<vehicle>/<sensor>"
    std::string topic;       // "/<vehicle>/<sensor>" (the topics add a leaf)
  };
  Stream* Known(const protocol::Message& m, bool* fresh);
  void PutStatic(int64_t stamp_ns, std::vector<BagMessage>& out);

  std::vector<NodeNaming> naming_;
  std::vector<std::string> nodes_;
  std::map<uint64_t, std::string> vehicle_names_;
  std::map<std::string, Stream, std::less<>> streams_;
  bool static_pending_ = false;
  uint64_t skipped_negative_ = 0, skipped_bad_ = 0;
};

}  // namespace platoon::ros2
