// ROS 2 message definitions and their CDR encoders (platoon/log/ros2.hpp). The .msg texts below are
// written out from the ROS 2 interface documentation (docs.ros.org, the packages' msg/ folders as the
// docs list them), comments left out, field types named in full ("pkg/Type") so no reader has to
// resolve package-relative names.
#include "platoon/log/ros2.hpp"

#include "platoon/log/cdr.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace platoon::ros2 {
namespace {

// One type's own .msg text, keyed by "pkg/msg/Type".
const std::map<std::string, std::string, std::less<>>& Definitions() {
  static const std::map<std::string, std::string, std::less<>> defs = {
      {"builtin_interfaces/msg/Time", "int32 sec\nuint32 nanosec\n"},
      {"std_msgs/msg/Header", "builtin_interfaces/Time stamp\nstring frame_id\n"},
      {"sensor_msgs/msg/PointField",
       "uint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\nuint8 INT32=5\nuint8 UINT32=6\n"
       "uint8 FLOAT32=7\nuint8 FLOAT64=8\n"
       "string name\nuint32 offset\nuint8 datatype\nuint32 count\n"},
      {"sensor_msgs/msg/PointCloud2",
       "std_msgs/Header header\nuint32 height\nuint32 width\nsensor_msgs/PointField[] fields\nbool is_bigendian\n"
       "uint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n"},
      {"geometry_msgs/msg/Vector3", "float64 x\nfloat64 y\nfloat64 z\n"},
      {"geometry_msgs/msg/Point", "float64 x\nfloat64 y\nfloat64 z\n"},
      {"geometry_msgs/msg/Quaternion", "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"},
      {"geometry_msgs/msg/Pose", "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"},
      {"geometry_msgs/msg/PoseWithCovariance", "geometry_msgs/Pose pose\nfloat64[36] covariance\n"},
      {"geometry_msgs/msg/Twist", "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"},
      {"geometry_msgs/msg/TwistWithCovariance", "geometry_msgs/Twist twist\nfloat64[36] covariance\n"},
      {"geometry_msgs/msg/Transform", "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n"},
      {"geometry_msgs/msg/TransformStamped",
       "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n"},
      {"tf2_msgs/msg/TFMessage", "geometry_msgs/TransformStamped[] transforms\n"},
      {"nav_msgs/msg/Odometry",
       "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\n"
       "geometry_msgs/TwistWithCovariance twist\n"},
      {"sensor_msgs/msg/Imu",
       "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\n"
       "geometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\n"
       "geometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance\n"},
      {"sensor_msgs/msg/NavSatStatus",
       "int8 STATUS_NO_FIX=-1\nint8 STATUS_FIX=0\nint8 STATUS_SBAS_FIX=1\nint8 STATUS_GBAS_FIX=2\nint8 status\n"
       "uint16 SERVICE_GPS=1\nuint16 SERVICE_GLONASS=2\nuint16 SERVICE_COMPASS=4\nuint16 SERVICE_GALILEO=8\n"
       "uint16 service\n"},
      {"sensor_msgs/msg/NavSatFix",
       "std_msgs/Header header\nsensor_msgs/NavSatStatus status\nfloat64 latitude\nfloat64 longitude\n"
       "float64 altitude\nfloat64[9] position_covariance\nuint8 COVARIANCE_TYPE_UNKNOWN=0\n"
       "uint8 COVARIANCE_TYPE_APPROXIMATED=1\nuint8 COVARIANCE_TYPE_DIAGONAL_KNOWN=2\nuint8 COVARIANCE_TYPE_KNOWN=3\n"
       "uint8 position_covariance_type\n"},
      {"rosgraph_msgs/msg/Clock", "builtin_interfaces/Time clock\n"},
      {"radar_msgs/msg/RadarReturn",
       "float32 range\nfloat32 azimuth\nfloat32 elevation\nfloat32 doppler_velocity\nfloat32 amplitude\n"},
      {"radar_msgs/msg/RadarScan", "std_msgs/Header header\nradar_msgs/RadarReturn[] returns\n"},
      {"vision_msgs/msg/ObjectHypothesis", "string class_id\nfloat64 score\n"},
      {"vision_msgs/msg/ObjectHypothesisWithPose",
       "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose\n"},
      {"vision_msgs/msg/BoundingBox3D", "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size\n"},
      {"vision_msgs/msg/Detection3D",
       "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\nvision_msgs/BoundingBox3D bbox\n"
       "string id\n"},
      {"vision_msgs/msg/Detection3DArray", "std_msgs/Header header\nvision_msgs/Detection3D[] detections\n"},
      {"unique_identifier_msgs/msg/UUID", "uint8[16] uuid\n"},
      {"radar_msgs/msg/RadarTrack",
       "uint16 NO_CLASSIFICATION=0\nuint16 STATIC=1\nuint16 DYNAMIC=2\n"
       "unique_identifier_msgs/UUID uuid\ngeometry_msgs/Point position\ngeometry_msgs/Vector3 velocity\n"
       "geometry_msgs/Vector3 acceleration\ngeometry_msgs/Vector3 size\nuint16 classification\n"
       "float32[6] position_covariance\nfloat32[6] velocity_covariance\nfloat32[6] acceleration_covariance\n"
       "float32[6] size_covariance\n"},
      {"radar_msgs/msg/RadarTracks", "std_msgs/Header header\nradar_msgs/RadarTrack[] tracks\n"},
      {"sensor_msgs/msg/RegionOfInterest",
       "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n"},
      {"sensor_msgs/msg/CameraInfo",
       "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\nfloat64[9] k\n"
       "float64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\nsensor_msgs/RegionOfInterest roi\n"},
      {"sensor_msgs/msg/Image",
       "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\n"
       "uint8[] data\n"},
      {"sensor_msgs/msg/CompressedImage", "std_msgs/Header header\nstring format\nuint8[] data\n"},
  };
  return defs;
}

// The "pkg/msg/Type" names of the complex field types of a .msg text, in field order (constants skipped).
std::vector<std::string> FieldTypes(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.find('=') != std::string::npos) continue;
    std::string type = line.substr(0, line.find(' '));
    type = type.substr(0, type.find('['));
    const size_t slash = type.find('/');
    if (slash == std::string::npos) continue;
    out.push_back(type.substr(0, slash) + "/msg/" + type.substr(slash + 1));
  }
  return out;
}

// Depth-first: every type `type` needs, each once, in the order first met.
void Dependencies(const std::string& type, std::set<std::string>& seen, std::vector<std::string>& order) {
  for (const std::string& dep : FieldTypes(OwnDefinition(type))) {
    if (!seen.insert(dep).second) continue;
    order.push_back(dep);
    Dependencies(dep, seen, order);
  }
}

void PutTime(cdr::Writer& w, int64_t ns) {
  const Time t = TimeOfNs(ns);
  w.I32(t.sec);
  w.U32(t.nanosec);
}

void PutHeader(cdr::Writer& w, int64_t stamp_ns, std::string_view frame_id) {
  PutTime(w, stamp_ns);
  w.String(frame_id);
}

void PutVec3(cdr::Writer& w, const Vec3& v) {
  w.F64(v.x());
  w.F64(v.y());
  w.F64(v.z());
}

void PutQuat(cdr::Writer& w, const Quat& q) {
  w.F64(q.x());
  w.F64(q.y());
  w.F64(q.z());
  w.F64(q.w());
}

template <size_t N>
void PutZeros(cdr::Writer& w) {
  for (size_t i = 0; i < N; ++i) w.F64(0.0);
}

}  // namespace

std::string_view OwnDefinition(std::string_view type) {
  const auto it = Definitions().find(type);
  return it == Definitions().end() ? std::string_view() : std::string_view(it->second);
}

std::string FullDefinition(std::string_view type) {
  const std::string_view own = OwnDefinition(type);
  if (own.empty()) return {};
  std::string out(own);
  std::set<std::string> seen{std::string(type)};
  std::vector<std::string> order;
  Dependencies(std::string(type), seen, order);
  for (const std::string& dep : order) {
    // The section is named as the fields name the type ("pkg/Type"), as rosbag2 writes it and as readers
    // (Foxglove's among them) match fields to sections.
    const size_t msg = dep.find("/msg/");
    out += std::string(80, '=') + "\nMSG: " + dep.substr(0, msg) + "/" + dep.substr(msg + 5) + "\n";
    out += OwnDefinition(dep);
  }
  return out;
}

std::vector<std::string> KnownTypes() {
  std::vector<std::string> out;
  for (const auto& [name, text] : Definitions()) out.push_back(name);
  return out;
}

Time TimeOfNs(int64_t ns) {
  int64_t sec = ns / 1'000'000'000;
  int64_t rest = ns % 1'000'000'000;
  if (rest < 0) {
    rest += 1'000'000'000;
    sec -= 1;
  }
  return Time{static_cast<int32_t>(sec), static_cast<uint32_t>(rest)};
}

std::string OfferedQosProfiles(bool latched) {
  // rmw enums: history 1 keep_last; reliability 1 reliable; durability 1 transient_local, 2 volatile;
  // liveliness 1 automatic. Durations "infinite" as rmw writes RMW_DURATION_INFINITE.
  constexpr const char* kInfinite = "    sec: 9223372036\n    nsec: 854775807\n";
  std::string y = "- history: 1\n";
  y += latched ? "  depth: 1\n" : "  depth: 10\n";
  y += "  reliability: 1\n";
  y += latched ? "  durability: 1\n" : "  durability: 2\n";
  y += std::string("  deadline:\n") + kInfinite;
  y += std::string("  lifespan:\n") + kInfinite;
  y += "  liveliness: 1\n";
  y += std::string("  liveliness_lease_duration:\n") + kInfinite;
  y += "  avoid_ros_namespace_conventions: false";
  return y;
}

std::vector<PointField> AutowarePointFields() {
  using T = PointFieldType;
  return {{"x", 0, T::kFloat32, 1},          {"y", 4, T::kFloat32, 1},         {"z", 8, T::kFloat32, 1},
          {"intensity", 12, T::kUint8, 1},   {"return_type", 13, T::kUint8, 1}, {"channel", 14, T::kUint16, 1},
          {"azimuth", 16, T::kFloat32, 1},   {"elevation", 20, T::kFloat32, 1}, {"distance", 24, T::kFloat32, 1},
          {"time_stamp", 28, T::kUint32, 1}};
}

void WriteAutowarePoint(const PointRecord& p, uint8_t* out) {
  using point_record::Store;
  char* o = reinterpret_cast<char*>(out);
  const double x = p.x_m, y = p.y_m, z = p.z_m;
  const double horizontal = std::hypot(x, y);
  const double t_ns = std::round(static_cast<double>(p.time_offset_s) * 1e9);
  Store(o + 0, p.x_m);
  Store(o + 4, p.y_m);
  Store(o + 8, p.z_m);
  Store(o + 12, p.reflectivity);
  Store(o + 13, p.return_type);
  Store(o + 14, p.ring);
  Store(o + 16, static_cast<float>(std::atan2(y, x)));
  Store(o + 20, static_cast<float>(std::atan2(z, horizontal)));
  Store(o + 24, static_cast<float>(std::sqrt(horizontal * horizontal + z * z)));
  Store(o + 28, static_cast<uint32_t>(std::clamp(std::isfinite(t_ns) ? t_ns : 0.0, 0.0, 4294967295.0)));
}

std::vector<uint8_t> EncodeClock(int64_t ns) {
  cdr::Writer w(8);
  PutTime(w, ns);
  return w.Take();
}

std::vector<uint8_t> EncodePointCloud2(int64_t stamp_ns, std::string_view frame_id, std::span<const PointRecord> points) {
  const size_t body = points.size() * kAutowarePointStep;
  cdr::Writer w(body + 512);
  PutHeader(w, stamp_ns, frame_id);
  w.U32(1);                                      // height: one unordered row
  w.U32(static_cast<uint32_t>(points.size()));   // width
  const auto fields = AutowarePointFields();
  w.SequenceLength(fields.size());
  for (const PointField& f : fields) {
    w.String(f.name);
    w.U32(f.offset);
    w.U8(static_cast<uint8_t>(f.datatype));
    w.U32(f.count);
  }
  w.Bool(false);  // is_bigendian
  w.U32(kAutowarePointStep);
  w.U32(static_cast<uint32_t>(body));  // row_step
  w.SequenceLength(body);
  uint8_t* data = w.Grow(body);
  for (size_t i = 0; i < points.size(); ++i) WriteAutowarePoint(points[i], data + i * kAutowarePointStep);
  w.Bool(true);  // is_dense
  return w.Take();
}

std::vector<uint8_t> EncodeImu(int64_t stamp_ns, std::string_view frame_id, const Vec3& angular_velocity_radps,
                               const Vec3& linear_acceleration_mps2) {
  cdr::Writer w(360);
  PutHeader(w, stamp_ns, frame_id);
  PutQuat(w, Quat::Identity());
  w.F64(-1.0);  // orientation_covariance[0] = -1: no orientation estimate
  PutZeros<8>(w);
  PutVec3(w, angular_velocity_radps);
  PutZeros<9>(w);
  PutVec3(w, linear_acceleration_mps2);
  PutZeros<9>(w);
  return w.Take();
}

std::vector<uint8_t> EncodeNavSatFix(int64_t stamp_ns, std::string_view frame_id, double latitude_deg,
                                     double longitude_deg, double altitude_m, double horizontal_sigma_m,
                                     double vertical_sigma_m) {
  cdr::Writer w(160);
  PutHeader(w, stamp_ns, frame_id);
  w.I8(0);   // status: STATUS_FIX
  w.U16(1);  // service: SERVICE_GPS
  w.F64(latitude_deg);
  w.F64(longitude_deg);
  w.F64(altitude_m);
  const double h2 = horizontal_sigma_m * horizontal_sigma_m, v2 = vertical_sigma_m * vertical_sigma_m;
  const double cov[9] = {h2, 0, 0, 0, h2, 0, 0, 0, v2};
  for (double c : cov) w.F64(c);
  w.U8(2);  // COVARIANCE_TYPE_DIAGONAL_KNOWN
  return w.Take();
}

std::vector<uint8_t> EncodeTfMessage(std::span<const Transform> transforms) {
  cdr::Writer w(16 + transforms.size() * 120);
  w.SequenceLength(transforms.size());
  for (const Transform& t : transforms) {
    PutHeader(w, t.stamp_ns, t.parent);
    w.String(t.child);
    PutVec3(w, t.pose.position_m);
    PutQuat(w, t.pose.orientation);
  }
  return w.Take();
}

std::vector<uint8_t> EncodeOdometry(int64_t stamp_ns, std::string_view frame_id, std::string_view child_frame,
                                    const Pose& pose, const Vec3& velocity_parent_mps,
                                    const Vec3& angular_velocity_parent_radps) {
  cdr::Writer w(720);
  PutHeader(w, stamp_ns, frame_id);
  w.String(child_frame);
  PutVec3(w, pose.position_m);
  PutQuat(w, pose.orientation);
  PutZeros<36>(w);
  const Quat to_child = pose.orientation.conjugate();
  PutVec3(w, to_child * velocity_parent_mps);
  PutVec3(w, to_child * angular_velocity_parent_radps);
  PutZeros<36>(w);
  return w.Take();
}

std::vector<uint8_t> EncodeRadarScan(int64_t stamp_ns, std::string_view frame_id, std::span<const RadarReturn> returns) {
  cdr::Writer w(64 + returns.size() * 20);
  PutHeader(w, stamp_ns, frame_id);
  w.SequenceLength(returns.size());
  for (const RadarReturn& r : returns) {
    w.F32(r.range_m);
    w.F32(r.azimuth_rad);
    w.F32(r.elevation_rad);
    w.F32(r.doppler_velocity_mps);
    w.F32(r.amplitude);
  }
  return w.Take();
}

std::vector<uint8_t> EncodeDetection3DArray(int64_t stamp_ns, std::string_view frame_id,
                                            std::span<const Detection> detections) {
  cdr::Writer w(64 + detections.size() * 760);
  PutHeader(w, stamp_ns, frame_id);
  w.SequenceLength(detections.size());
  for (const Detection& d : detections) {
    PutHeader(w, stamp_ns, frame_id);
    w.SequenceLength(1);  // one hypothesis: the reported class
    w.String(d.class_id);
    w.F64(d.score);
    PutVec3(w, d.centre_m);
    PutQuat(w, Quat::Identity());
    PutZeros<36>(w);
    PutVec3(w, d.centre_m);  // bbox centre
    PutQuat(w, Quat::Identity());
    PutVec3(w, d.size_m);
    w.String(d.id);
  }
  return w.Take();
}

std::vector<uint8_t> EncodeRadarTracks(int64_t stamp_ns, std::string_view frame_id, std::span<const RadarTrack> tracks) {
  cdr::Writer w(64 + tracks.size() * 224);
  PutHeader(w, stamp_ns, frame_id);
  w.SequenceLength(tracks.size());
  for (const RadarTrack& t : tracks) {
    for (int i = 0; i < 16; ++i) w.U8(i < 8 ? static_cast<uint8_t>(t.id >> (8 * i)) : 0);  // uuid
    PutVec3(w, t.position_m);
    PutVec3(w, t.velocity_mps);
    PutVec3(w, Vec3::Zero());  // acceleration: not measured
    PutVec3(w, t.size_m);
    w.U16(t.classification);
    for (int i = 0; i < 24; ++i) w.F32(0.0f);  // four float32[6] covariances: unknown
  }
  return w.Take();
}

std::vector<uint8_t> EncodeCameraInfo(int64_t stamp_ns, std::string_view frame_id, const CameraIntrinsics& k) {
  cdr::Writer w(512);
  PutHeader(w, stamp_ns, frame_id);
  w.U32(k.height_px);
  w.U32(k.width_px);
  w.String("plumb_bob");
  w.SequenceLength(5);  // d: k1 k2 t1 t2 k3 of a camera without distortion
  for (int i = 0; i < 5; ++i) w.F64(0.0);
  const double K[9] = {k.fx, 0, k.cx, 0, k.fy, k.cy, 0, 0, 1};
  for (double v : K) w.F64(v);
  const double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  for (double v : R) w.F64(v);
  const double P[12] = {k.fx, 0, k.cx, 0, 0, k.fy, k.cy, 0, 0, 0, 1, 0};
  for (double v : P) w.F64(v);
  w.U32(0);  // binning_x
  w.U32(0);  // binning_y
  for (int i = 0; i < 4; ++i) w.U32(0);  // roi: the full image
  w.Bool(false);
  return w.Take();
}

std::vector<uint8_t> EncodeImage(int64_t stamp_ns, std::string_view frame_id, uint32_t width_px, uint32_t height_px,
                                 std::string_view encoding, uint32_t step_bytes, std::span<const uint8_t> data) {
  cdr::Writer w(data.size() + 128);
  PutHeader(w, stamp_ns, frame_id);
  w.U32(height_px);
  w.U32(width_px);
  w.String(encoding);
  w.U8(0);  // is_bigendian
  w.U32(step_bytes);
  w.ByteSequence(data);
  return w.Take();
}

std::vector<uint8_t> EncodeCompressedImage(int64_t stamp_ns, std::string_view frame_id, std::string_view format,
                                           std::span<const uint8_t> data) {
  cdr::Writer w(data.size() + 96);
  PutHeader(w, stamp_ns, frame_id);
  w.String(format);
  w.ByteSequence(data);
  return w.Take();
}

Quat OpticalToBody() {
  // The rotation whose matrix has as columns the optical x (right), y (down) and z (forward) axes in the
  // body frame, (0, -1, 0), (0, 0, -1), (1, 0, 0): trace 0, so w = 1/2, and x, y, z from the off-diagonal
  // differences; written with w > 0 (rpy -90, 0, -90 deg), as tf2 tools print it.
  return Quat(0.5, -0.5, 0.5, -0.5);
}

}  // namespace platoon::ros2
