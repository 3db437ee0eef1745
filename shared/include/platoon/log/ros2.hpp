#pragma once
/// ROS 2 messages for rosbag2's MCAP storage (docs/RECORDING.md, "ROS 2"): the message definitions,
/// written out from the ROS 2 interface documentation, in rosbag2's "ros2msg" schema form, and CDR
/// encoders (platoon/log/cdr.hpp) of the messages platoon exports: builtin_interfaces/Time,
/// std_msgs/Header, sensor_msgs/PointCloud2 in Autoware's PointXYZIRCAEDT layout, sensor_msgs/Imu,
/// sensor_msgs/NavSatFix, tf2_msgs/TFMessage, nav_msgs/Odometry, rosgraph_msgs/Clock,
/// radar_msgs/RadarScan, radar_msgs/RadarTracks, vision_msgs/Detection3DArray, sensor_msgs/Image,
/// sensor_msgs/CompressedImage and sensor_msgs/CameraInfo.
///
/// Frames follow REP 103 (x forward, y left, z up; right-handed) and REP 105: "map" is the world,
/// "<vehicle>/base_link" a vehicle (platoon's vehicle frame: rear-axle centre), "<vehicle>/<sensor id>"
/// a sensor. Stamps are sim time.

#include "platoon/geometry.hpp"
#include "platoon/point_record.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::ros2 {

/// Schema encoding of rosbag2's MCAP channels.
inline constexpr std::string_view kSchemaEncoding = "ros2msg";
/// Message encoding of rosbag2's MCAP channels.
inline constexpr std::string_view kMessageEncoding = "cdr";
/// MCAP header profile rosbag2 writes.
inline constexpr std::string_view kProfile = "ros2";

/// The complete "ros2msg" definition of `type` ("sensor_msgs/msg/Imu"): its .msg text first, then every
/// type it uses (recursively, each once) after a line of 80 '=' and a line "MSG: pkg/Type" (the name the
/// fields use).
/// Empty for a type platoon does not define.
std::string FullDefinition(std::string_view type);
/// The .msg text of one type without its dependencies; empty when unknown.
std::string_view OwnDefinition(std::string_view type);
/// Every type FullDefinition knows, sorted.
std::vector<std::string> KnownTypes();

/// builtin_interfaces/msg/Time of sim time `ns`: sec = floor(ns / 1e9), nanosec = the rest (0..999999999).
struct Time {
  int32_t sec = 0;       ///< Whole seconds, rounded towards minus infinity.
  uint32_t nanosec = 0;  ///< 0..999'999'999.
};
/// The Time of `ns` (negative times have sec < 0 and nanosec >= 0).
Time TimeOfNs(int64_t ns);

/// rosbag2's offered_qos_profiles channel metadata (a YAML list of one profile) for a publisher that is
/// reliable and volatile with keep-last depth 10, or, `latched`, transient-local depth 1 (/tf_static).
std::string OfferedQosProfiles(bool latched);

// ---------------------------------------------------------------------------------------------
// Autoware's lidar point layout
// ---------------------------------------------------------------------------------------------

/// sensor_msgs/msg/PointField datatypes.
enum class PointFieldType : uint8_t { kInt8 = 1, kUint8 = 2, kInt16 = 3, kUint16 = 4, kInt32 = 5, kUint32 = 6, kFloat32 = 7, kFloat64 = 8 };

/// One sensor_msgs/msg/PointField.
struct PointField {
  std::string name;        ///< e.g. "x".
  uint32_t offset = 0;     ///< Bytes from the start of the point.
  PointFieldType datatype = PointFieldType::kFloat32;
  uint32_t count = 1;      ///< Elements of the field.
};

/// Autoware's PointXYZIRCAEDT: x, y, z float32 (m); intensity uint8 (0..255 reflectivity); return_type
/// uint8; channel uint16 (ring); azimuth, elevation float32 (rad); distance float32 (m); time_stamp
/// uint32 (ns after the header stamp). 32 bytes, no padding.
std::vector<PointField> AutowarePointFields();
/// Bytes of one PointXYZIRCAEDT point.
inline constexpr uint32_t kAutowarePointStep = 32;

/// Writes `p` as one PointXYZIRCAEDT point into the kAutowarePointStep bytes at `out`: azimuth =
/// atan2(y, x), elevation = atan2(z, hypot(x, y)), distance = |(x, y, z)| (all in the cloud's frame),
/// intensity = reflectivity, channel = ring, return_type as recorded, time_stamp = round(time_offset_s
/// * 1e9) clamped to 0..UINT32_MAX.
void WriteAutowarePoint(const PointRecord& p, uint8_t* out);

// ---------------------------------------------------------------------------------------------
// Messages (each returns the CDR payload, encapsulation header included)
// ---------------------------------------------------------------------------------------------

/// rosgraph_msgs/msg/Clock at sim time `ns`.
std::vector<uint8_t> EncodeClock(int64_t ns);

/// sensor_msgs/msg/PointCloud2 of `points` in PointXYZIRCAEDT: height 1, width = points, little-endian,
/// dense (every recorded point is a return).
std::vector<uint8_t> EncodePointCloud2(int64_t stamp_ns, std::string_view frame_id, std::span<const PointRecord> points);

/// sensor_msgs/msg/Imu: rates and specific force in the sensor frame; orientation unknown
/// (orientation_covariance[0] = -1, as the message's documentation asks); other covariances 0 (unknown).
std::vector<uint8_t> EncodeImu(int64_t stamp_ns, std::string_view frame_id, const Vec3& angular_velocity_radps,
                               const Vec3& linear_acceleration_mps2);

/// sensor_msgs/msg/NavSatFix: status STATUS_FIX with SERVICE_GPS, covariance diagonal (sigma_h^2,
/// sigma_h^2, sigma_v^2) of type COVARIANCE_TYPE_DIAGONAL_KNOWN.
std::vector<uint8_t> EncodeNavSatFix(int64_t stamp_ns, std::string_view frame_id, double latitude_deg,
                                     double longitude_deg, double altitude_m, double horizontal_sigma_m,
                                     double vertical_sigma_m);

/// One geometry_msgs/msg/TransformStamped: `child` in `parent`.
struct Transform {
  int64_t stamp_ns = 0;   ///< Sim time, in ns.
  std::string parent;     ///< header.frame_id, e.g. "map".
  std::string child;      ///< child_frame_id, e.g. "ego/base_link".
  Pose pose;              ///< The child frame's origin and orientation in the parent frame.
};
/// tf2_msgs/msg/TFMessage of `transforms`.
std::vector<uint8_t> EncodeTfMessage(std::span<const Transform> transforms);

/// nav_msgs/msg/Odometry: pose of `child_frame` in `frame_id`; the twist in the child frame's axes
/// (velocities given in the parent frame are rotated into it); covariances 0.
std::vector<uint8_t> EncodeOdometry(int64_t stamp_ns, std::string_view frame_id, std::string_view child_frame,
                                    const Pose& pose, const Vec3& velocity_parent_mps,
                                    const Vec3& angular_velocity_parent_radps);

/// One radar_msgs/msg/RadarReturn.
struct RadarReturn {
  float range_m = 0;              ///< Range, in m.
  float azimuth_rad = 0;          ///< Azimuth, in rad (counter-clockwise from x).
  float elevation_rad = 0;        ///< Elevation, in rad.
  float doppler_velocity_mps = 0; ///< Range rate, in m/s (negative approaching).
  float amplitude = 0;            ///< Platoon writes the RCS in dBsm.
};
/// radar_msgs/msg/RadarScan of `returns`.
std::vector<uint8_t> EncodeRadarScan(int64_t stamp_ns, std::string_view frame_id, std::span<const RadarReturn> returns);

/// One vision_msgs/msg/Detection3D (vision_msgs 4, ROS 2 Humble and later).
struct Detection {
  std::string class_id;       ///< The reported class ("car", "pedestrian", ...).
  double score = 1.0;         ///< Its probability; platoon's object lists report one class: 1.
  Vec3 centre_m = Vec3::Zero();  ///< Box centre (the object's reference point) in the header frame, in m.
  Vec3 size_m = Vec3::Zero(); ///< Length, width, height, in m.
  std::string id;             ///< Track id ("" for a false positive).
};
/// vision_msgs/msg/Detection3DArray of `detections`: each with the array's header, one hypothesis whose
/// pose is the centre, and an axis-aligned box in the header frame (platoon's objects carry no heading).
std::vector<uint8_t> EncodeDetection3DArray(int64_t stamp_ns, std::string_view frame_id,
                                            std::span<const Detection> detections);

/// One radar_msgs/msg/RadarTrack.
struct RadarTrack {
  uint64_t id = 0;                   ///< Track id; the UUID's first 8 bytes hold it little-endian, the rest 0.
  Vec3 position_m = Vec3::Zero();    ///< Centroid in the header frame, in m.
  Vec3 velocity_mps = Vec3::Zero();  ///< Velocity in the header frame, in m/s.
  Vec3 size_m = Vec3::Zero();        ///< Length, width, height, in m.
  uint16_t classification = 0;       ///< 0 none, 1 static, 2 dynamic; 32000.. vendor classes (Autoware: 32001 car ...).
};
/// radar_msgs/msg/RadarTracks of `tracks`: accelerations and every covariance 0 (unknown).
std::vector<uint8_t> EncodeRadarTracks(int64_t stamp_ns, std::string_view frame_id, std::span<const RadarTrack> tracks);

/// A pinhole camera's intrinsics, in px.
struct CameraIntrinsics {
  uint32_t width_px = 0, height_px = 0;  ///< Image size, in px.
  double fx = 0, fy = 0, cx = 0, cy = 0; ///< Focal lengths and principal point, in px.
};
/// sensor_msgs/msg/CameraInfo of an ideal pinhole camera: distortion_model "plumb_bob" with d = 0 (5
/// zeros), K = [fx 0 cx; 0 fy cy; 0 0 1], R = identity, P = [K | 0], binning 0, an empty ROI. `frame_id`
/// is the camera's optical frame (z forward, x right, y down).
std::vector<uint8_t> EncodeCameraInfo(int64_t stamp_ns, std::string_view frame_id, const CameraIntrinsics& k);
/// sensor_msgs/msg/Image of raw rows: `encoding` ("rgb8"), step = `step_bytes`, little-endian.
std::vector<uint8_t> EncodeImage(int64_t stamp_ns, std::string_view frame_id, uint32_t width_px, uint32_t height_px,
                                 std::string_view encoding, uint32_t step_bytes, std::span<const uint8_t> data);
/// sensor_msgs/msg/CompressedImage: `format` ("png", "jpeg") and the file's bytes.
std::vector<uint8_t> EncodeCompressedImage(int64_t stamp_ns, std::string_view frame_id, std::string_view format,
                                           std::span<const uint8_t> data);

/// Rotation from a camera's optical frame (z forward, x right, y down; REP 103's "_optical" frames) to its
/// body frame (x forward, y left, z up): p_body = q * p_optical.
Quat OpticalToBody();

}  // namespace platoon::ros2
