// platoon's messages as ROS 2 messages (platoon/log/ros2_bag.hpp): which topics, types and frames each
// message gives, /tf_static when a sensor appears, nothing before sim time 0, radar tracks only for
// detections that follow an object, the camera's CameraInfo in its optical frame; the CDR bytes of the new
// messages (RadarTracks, CameraInfo, Image, CompressedImage) against layouts worked out by hand; and
// rosbag2's metadata.yaml of what was counted.
#include "platoon/entity_id.hpp"
#include "platoon/log/ros2.hpp"
#include "platoon/log/ros2_bag.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

namespace ros2_bag_test_detail {

using namespace platoon;

uint64_t LeOf(const std::vector<uint8_t>& b, size_t at, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(b.at(at + i)) << (8 * i);
  return v;
}
double F64Of(const std::vector<uint8_t>& b, size_t at) {
  const uint64_t bits = LeOf(b, at, 8);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

protocol::SensorHeader SensorOn(uint64_t entity, const std::string& id, protocol::StreamKind kind, int64_t t) {
  protocol::SensorHeader h;
  h.sensor_id = id;
  h.kind = kind;
  h.stamp_ns = t;
  h.entity_id = entity;
  h.mount_position_m = Vec3(1.5, 0.25, 1.0);
  return h;
}

std::vector<std::string> TopicsOf(const std::vector<ros2::BagMessage>& out) {
  std::vector<std::string> t;
  for (const auto& m : out) t.push_back(m.topic + " " + m.type);
  return t;
}

TEST_CASE("ros2 bag: a camera frame gives tf_static with its optical frame then CameraInfo and an Image for rgb8") {
  ros2::Converter convert({NodeNaming{"robot", true, {}}});
  protocol::CameraFrame c;
  c.header = SensorOn(VehicleId("robot", 0), "cam:1", protocol::StreamKind::kCamera, 250'000'000);
  c.width = 2, c.height = 2, c.fx = 3.5, c.fy = 3.25, c.cx = 1.0, c.cy = 0.75;
  c.encoding = "rgb8";
  c.image = std::string(12, '\x05');
  std::vector<ros2::BagMessage> out;
  convert.OnData(c, out);
  REQUIRE(out.size() == 3);
  CHECK(TopicsOf(out) == std::vector<std::string>{"/tf_static tf2_msgs/msg/TFMessage",
                                                  "/robot/cam_1/camera_info sensor_msgs/msg/CameraInfo",
                                                  "/robot/cam_1/image_raw sensor_msgs/msg/Image"});
  CHECK(out[0].latched);
  for (const auto& m : out) CHECK(m.log_ns == 250'000'000);
  // Two transforms: the mount and the optical frame (their child names are in the bytes).
  const std::string tf(out[0].cdr.begin(), out[0].cdr.end());
  CHECK(LeOf(out[0].cdr, 4, 4) == 2);
  CHECK(tf.find("robot/cam_1_optical") != std::string::npos);
  // CameraInfo: header (stamp 8, "robot/cam_1_optical" 4 + 20), height, width at 36 and 40.
  const auto& info = out[1].cdr;
  const std::string frame = "robot/cam_1_optical";
  CHECK(LeOf(info, 4 + 8, 4) == frame.size() + 1);
  const size_t after_frame = 4 + 8 + 4 + frame.size() + 1;  // 36: already 4-aligned from the payload start (32)
  CHECK(LeOf(info, after_frame, 4) == 2);                      // height
  CHECK(LeOf(info, after_frame + 4, 4) == 2);                  // width
  // The same image in a PNG frame goes to image_raw/compressed; no image: CameraInfo alone.
  c.encoding = "png";
  c.image = "\x89PNG....";
  out.clear();
  convert.OnData(c, out);
  CHECK(TopicsOf(out) == std::vector<std::string>{"/robot/cam_1/camera_info sensor_msgs/msg/CameraInfo",
                                                  "/robot/cam_1/image_raw/compressed sensor_msgs/msg/CompressedImage"});
  c.encoding.clear();
  c.image.clear();
  out.clear();
  convert.OnData(c, out);
  CHECK(TopicsOf(out) == std::vector<std::string>{"/robot/cam_1/camera_info sensor_msgs/msg/CameraInfo"});
}

TEST_CASE("ros2 bag: declared streams share one tf_static at the first message and nothing comes before sim time 0") {
  ros2::Converter convert({NodeNaming{"city", false, {}}});
  const uint64_t car = VehicleId("city", 3);
  protocol::ImuMeasurement imu;
  imu.header = SensorOn(car, "imu", protocol::StreamKind::kImu, 0);
  protocol::GnssMeasurement gnss;
  gnss.header = SensorOn(car, "gnss", protocol::StreamKind::kGnss, 0);
  CHECK(convert.Declare(imu));
  CHECK(convert.Declare(gnss));
  protocol::WorldState early;
  early.sim_time_ns = -50'000'000;
  std::vector<ros2::BagMessage> out;
  convert.OnWorld(early, out);
  CHECK(out.empty());
  CHECK(convert.SkippedNegative() == 1);
  protocol::WorldState w;
  w.sim_time_ns = 100'000'000;
  protocol::EntityState s;
  s.id = car;
  s.kinematics.stamp_ns = 95'000'000;
  w.entities.push_back(s);
  convert.OnWorld(w, out);
  CHECK(TopicsOf(out) == std::vector<std::string>{"/tf_static tf2_msgs/msg/TFMessage", "/clock rosgraph_msgs/msg/Clock",
                                                  "/city_3/odom nav_msgs/msg/Odometry", "/tf tf2_msgs/msg/TFMessage"});
  CHECK(LeOf(out[0].cdr, 4, 4) == 2);  // both mounts in the one message
  out.clear();
  convert.OnData(imu, out);  // a known stream: no second /tf_static
  CHECK(TopicsOf(out) == std::vector<std::string>{"/city_3/imu/imu sensor_msgs/msg/Imu"});
}

TEST_CASE("ros2 bag: radar false positives give returns but no tracks and tracks carry the entity id as uuid") {
  ros2::Converter convert;
  protocol::RadarScan scan;
  scan.header = SensorOn(0, "radar", protocol::StreamKind::kRadar, 10);
  protocol::RadarDetection ghost, car;
  ghost.false_positive = true;
  ghost.entity_id = 9;
  car.entity_id = 0x01020304;
  car.object_class = 2;  // truck
  car.x_m = 12.5f, car.y_m = -2.0f, car.length_m = 8.0f, car.width_m = 2.5f;
  scan.detections = {ghost, car};
  std::vector<ros2::BagMessage> out;
  convert.OnData(scan, out);
  REQUIRE(out.size() == 3);  // /tf_static (a mount on no vehicle: under map), scan, tracks
  CHECK(out[1].topic == "/radar/scan");
  CHECK(out[2].topic == "/radar/tracks");
  const auto& t = out[2].cdr;
  // Header: stamp 8, frame "radar" 4 + 6 -> 18; the sequence length at 20 (4-aligned), one track.
  CHECK(LeOf(t, 4 + 20, 4) == 1);
  CHECK(LeOf(t, 4 + 24, 8) == 0x01020304);  // uuid bytes 0..7, little-endian
  CHECK(LeOf(t, 4 + 32, 8) == 0);           // uuid bytes 8..15
  CHECK(F64Of(t, 4 + 40) == 12.5);          // position.x (40: 8-aligned)
  CHECK(F64Of(t, 4 + 48) == -2.0);
  CHECK(F64Of(t, 4 + 112) == 8.0);          // size.x after velocity (64) and acceleration (88)
  CHECK(LeOf(t, 4 + 136, 2) == 32002);      // classification: Autoware's truck
  CHECK(t.size() == 4 + 138 + 2 + 24 * 4);  // then four float32[6] covariances (4-aligned at 140)
}

TEST_CASE("ros2 bag: the optical frame looks along the camera x axis with image x right and y down") {
  const Quat q = ros2::OpticalToBody();
  CHECK((q * Vec3::UnitZ() - Vec3::UnitX()).norm() < 1e-15);   // optical z (forward) = body x
  CHECK((q * Vec3::UnitX() + Vec3::UnitY()).norm() < 1e-15);   // optical x (right) = body -y
  CHECK((q * Vec3::UnitY() + Vec3::UnitZ()).norm() < 1e-15);   // optical y (down) = body -z
  CHECK(q.w() > 0);
}

TEST_CASE("ros2 bag: CameraInfo carries K and P of the ideal pinhole and CompressedImage its format and bytes") {
  const auto info = ros2::EncodeCameraInfo(0, "c", ros2::CameraIntrinsics{640, 360, 500.0, 502.0, 320.5, 180.25});
  // Header 8 + 4 + 2 = 14; height at 16, width 20; "plumb_bob" (4 + 10) to 38; d: length at 40, 5 doubles from 48.
  CHECK(LeOf(info, 4 + 16, 4) == 360);
  CHECK(LeOf(info, 4 + 20, 4) == 640);
  CHECK(LeOf(info, 4 + 40, 4) == 5);
  const size_t k = 4 + 48 + 5 * 8;
  const double want_k[9] = {500.0, 0, 320.5, 0, 502.0, 180.25, 0, 0, 1};
  for (int i = 0; i < 9; ++i) CHECK(F64Of(info, k + 8 * i) == want_k[i]);
  const size_t p = k + 9 * 8 + 9 * 8;
  const double want_p[12] = {500.0, 0, 320.5, 0, 0, 502.0, 180.25, 0, 0, 0, 1, 0};
  for (int i = 0; i < 12; ++i) CHECK(F64Of(info, p + 8 * i) == want_p[i]);
  CHECK(info.size() == p + 12 * 8 + 4 + 4 + 16 + 1);

  const std::vector<uint8_t> file = {1, 2, 3};
  const auto img = ros2::EncodeCompressedImage(0, "c", "png", file);
  // Header 14; format: length at 16 (4), "png" + NUL to 24; data length at 24, bytes 28..30.
  CHECK(LeOf(img, 4 + 16, 4) == 4);
  CHECK(LeOf(img, 4 + 24, 4) == 3);
  CHECK(img.size() == 4 + 31);
  CHECK(img.back() == 3);
}

TEST_CASE("ros2 bag: an IMU at rest gives sensor_msgs/Imu the specific force, +g up, and its rates unchanged") {
  ros2::Converter c;
  protocol::ImuMeasurement imu;
  imu.header = SensorOn(VehicleId("ego", 0), "imu", protocol::StreamKind::kImu, 1'000'000'000);
  imu.angular_velocity_radps = Vec3(0.01, -0.02, 0.25);
  imu.acceleration_mps2 = Vec3(0.5, -0.125, -9.80665);  // platoon's convention: level at rest reads -g
  std::vector<ros2::BagMessage> out;
  c.OnData(imu, out);
  const ros2::BagMessage* m = nullptr;
  for (const auto& o : out)
    if (o.type == "sensor_msgs/msg/Imu") m = &o;
  REQUIRE(m != nullptr);
  // The message ends with angular_velocity, its covariance, linear_acceleration, its covariance (8-byte
  // aligned float64s): linear_acceleration starts 24 + 72 bytes before the end.
  const size_t accel = m->cdr.size() - (24 + 72);
  CHECK(F64Of(m->cdr, accel) == -0.5);
  CHECK(F64Of(m->cdr, accel + 8) == 0.125);
  CHECK(F64Of(m->cdr, accel + 16) == 9.80665);
  const size_t angular = accel - (24 + 72);
  CHECK(F64Of(m->cdr, angular) == 0.01);
  CHECK(F64Of(m->cdr, angular + 16) == 0.25);
}

TEST_CASE("ros2 bag: metadata.yaml counts every topic with its type and the time span") {
  ros2::BagTally tally;
  tally.Add({"/clock", "rosgraph_msgs/msg/Clock", false, 2'000'000'000, {}});
  tally.Add({"/clock", "rosgraph_msgs/msg/Clock", false, 3'500'000'000, {}});
  tally.Add({"/tf_static", "tf2_msgs/msg/TFMessage", true, 2'000'000'000, {}});
  const std::string y = tally.MetadataYaml("log.mcap");
  CHECK(y.find("  duration:\n    nanoseconds: 1500000000\n") != std::string::npos);
  CHECK(y.find("  starting_time:\n    nanoseconds_since_epoch: 2000000000\n") != std::string::npos);
  CHECK(y.find("  message_count: 3\n") != std::string::npos);
  CHECK(y.find("        name: /clock\n        type: rosgraph_msgs/msg/Clock\n") != std::string::npos);
  CHECK(y.find("      message_count: 2\n") != std::string::npos);
  CHECK(y.find("  relative_file_paths:\n    - log.mcap\n") != std::string::npos);
  CHECK(y.find("durability: 1") != std::string::npos);  // /tf_static: transient local
}

}  // namespace ros2_bag_test_detail
