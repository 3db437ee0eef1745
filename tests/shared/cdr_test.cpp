// The CDR encoder (platoon/log/cdr.hpp) and the ROS 2 message encoders (platoon/log/ros2.hpp) against
// byte layouts worked out by hand from the OMG CDR rules: 4-byte CDR_LE header, each primitive aligned
// to its size counted from the byte after the header, strings with a uint32 length that counts the NUL.
#include "platoon/log/cdr.hpp"
#include "platoon/log/ros2.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

namespace cdr_test_detail {

using Bytes = std::vector<uint8_t>;

// The payload after the 4-byte encapsulation header.
Bytes PayloadOf(const Bytes& all) { return Bytes(all.begin() + 4, all.end()); }

// A little-endian value at payload offset `at` (decoded here byte by byte, independently of the encoder).
uint64_t LeAt(const Bytes& p, size_t at, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(p.at(at + i)) << (8 * i);
  return v;
}
double F64At(const Bytes& p, size_t at) {
  const uint64_t bits = LeAt(p, at, 8);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
float F32At(const Bytes& p, size_t at) {
  const uint32_t bits = static_cast<uint32_t>(LeAt(p, at, 4));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// A CDR string at `at`: its text and the offset after its NUL.
std::pair<std::string, size_t> StringAt(const Bytes& p, size_t at) {
  const size_t n = LeAt(p, at, 4);
  REQUIRE(n >= 1);
  REQUIRE(p.at(at + 4 + n - 1) == 0);
  return {std::string(p.begin() + at + 4, p.begin() + at + 4 + n - 1), at + 4 + n};
}
size_t Align(size_t at, size_t n) { return (at + n - 1) / n * n; }

namespace cdr = platoon::cdr;
namespace ros2 = platoon::ros2;

TEST_CASE("cdr: a payload starts with the CDR_LE encapsulation header") {
  cdr::Writer w;
  CHECK(w.Bytes() == Bytes{0x00, 0x01, 0x00, 0x00});
  CHECK(w.PayloadSize() == 0);
}

TEST_CASE("cdr: primitives are aligned to their size from the byte after the header") {
  cdr::Writer w;
  w.U8(0xAB);            // payload 0
  w.U32(0x11223344);     // pad 1..3, payload 4..7
  w.U8(0x01);            // 8
  w.U16(0xBEEF);         // pad 9, 10..11
  w.F64(1.0);            // pad 12..15, 16..23
  w.I8(-2);              // 24
  w.I64(-3);             // pad 25..31, 32..39
  const Bytes expected = {0xAB, 0, 0, 0, 0x44, 0x33, 0x22, 0x11, 0x01, 0, 0xEF, 0xBE, 0, 0, 0, 0,
                          0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0xFE, 0, 0, 0, 0, 0, 0, 0,
                          0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  CHECK(PayloadOf(w.Bytes()) == expected);
}

TEST_CASE("cdr: a string carries its length with the NUL and the next field aligns after it") {
  cdr::Writer w;
  w.String("ab");   // 03 00 00 00 'a' 'b' 00 -> payload 0..6
  w.U16(7);         // pad 7, 8..9
  w.String("");     // pad 10..11, 01 00 00 00 00 -> 12..16
  w.Bool(true);     // 17
  const Bytes expected = {3, 0, 0, 0, 'a', 'b', 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  CHECK(PayloadOf(w.Bytes()) == expected);
}

TEST_CASE("cdr: a sequence is a uint32 count then its elements and a fixed array has no count") {
  cdr::Writer w;
  w.SequenceLength(2);
  w.U16(1);
  w.U16(2);
  w.ByteSequence(Bytes{9, 8, 7});
  w.Array(std::array<float, 2>{1.0f, -2.0f});  // pad 15, 16..23
  const Bytes expected = {2, 0, 0, 0, 1, 0, 2, 0, 3, 0, 0, 0, 9, 8, 7, 0, 0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0};
  CHECK(PayloadOf(w.Bytes()) == expected);
}

TEST_CASE("ros2: a time splits sim nanoseconds into floor seconds and a non-negative rest") {
  CHECK(ros2::TimeOfNs(1'500'000'000).sec == 1);
  CHECK(ros2::TimeOfNs(1'500'000'000).nanosec == 500'000'000u);
  CHECK(ros2::TimeOfNs(-1).sec == -1);
  CHECK(ros2::TimeOfNs(-1).nanosec == 999'999'999u);
  CHECK(ros2::TimeOfNs(0).sec == 0);
  CHECK(ros2::TimeOfNs(0).nanosec == 0u);
}

TEST_CASE("ros2: a clock message is the time's two 32-bit fields") {
  const Bytes p = PayloadOf(ros2::EncodeClock(2'000'000'007));
  REQUIRE(p.size() == 8);
  CHECK(LeAt(p, 0, 4) == 2u);
  CHECK(LeAt(p, 4, 4) == 7u);
}

TEST_CASE("ros2: an imu message lays out header then quaternion and covariances on 8-byte bounds") {
  const platoon::Vec3 w(0.1, -0.2, 0.3), a(1.0, 2.0, 9.81);
  const Bytes p = PayloadOf(ros2::EncodeImu(3'000'000'000, "ego/imu", w, a));
  // Header: time 0..7, "ego/imu" length 8 at 8..11, text and NUL 12..19.
  CHECK(LeAt(p, 0, 4) == 3u);
  const auto [frame, after] = StringAt(p, 8);
  CHECK(frame == "ego/imu");
  const size_t q = Align(after, 8);
  CHECK(F64At(p, q + 24) == 1.0);               // orientation w (identity)
  CHECK(F64At(p, q + 32) == -1.0);              // orientation_covariance[0]: orientation unknown
  const size_t angular = q + 32 + 9 * 8;
  CHECK(F64At(p, angular) == w.x());
  CHECK(F64At(p, angular + 8) == w.y());
  CHECK(F64At(p, angular + 16) == w.z());
  const size_t accel = angular + 24 + 9 * 8;
  CHECK(F64At(p, accel) == a.x());
  CHECK(F64At(p, accel + 16) == a.z());
  CHECK(p.size() == accel + 24 + 9 * 8);
}

TEST_CASE("ros2: a navsatfix pads the int8 status before the uint16 service") {
  const Bytes p = PayloadOf(ros2::EncodeNavSatFix(0, "gps", 48.5, 11.25, 500.0, 2.0, 3.0));
  const auto [frame, after] = StringAt(p, 8);
  CHECK(frame == "gps");
  CHECK(after == 16);
  CHECK(p.at(16) == 0);               // STATUS_FIX
  CHECK(LeAt(p, 18, 2) == 1u);        // SERVICE_GPS at the next 2-byte bound
  CHECK(F64At(p, 24) == 48.5);        // latitude at the next 8-byte bound
  CHECK(F64At(p, 32) == 11.25);
  CHECK(F64At(p, 40) == 500.0);
  CHECK(F64At(p, 48) == 4.0);         // sigma_h^2
  CHECK(F64At(p, 48 + 4 * 8) == 4.0);
  CHECK(F64At(p, 48 + 8 * 8) == 9.0); // sigma_v^2
  CHECK(p.at(48 + 9 * 8) == 2);       // COVARIANCE_TYPE_DIAGONAL_KNOWN
  CHECK(p.size() == 48 + 9 * 8 + 1);
}

TEST_CASE("ros2: a point cloud carries Autoware's PointXYZIRCAEDT fields and the derived point values") {
  platoon::PointRecord r;
  r.x_m = 3.0f, r.y_m = 4.0f, r.z_m = 12.0f;
  r.reflectivity = 80, r.return_type = 2, r.ring = 7, r.time_offset_s = 0.0125f;
  const platoon::PointRecord points[] = {r};
  const Bytes p = PayloadOf(ros2::EncodePointCloud2(1'000, "ego/lidar", points));
  auto [frame, at] = StringAt(p, 8);
  CHECK(frame == "ego/lidar");
  at = Align(at, 4);
  CHECK(LeAt(p, at, 4) == 1u);      // height
  CHECK(LeAt(p, at + 4, 4) == 1u);  // width
  const size_t field_count = LeAt(p, at + 8, 4);
  at += 12;
  // Autoware's layout, as its point type declares it (name, offset, datatype).
  const std::vector<std::tuple<std::string, uint32_t, uint8_t>> autoware = {
      {"x", 0, 7}, {"y", 4, 7}, {"z", 8, 7}, {"intensity", 12, 2}, {"return_type", 13, 2}, {"channel", 14, 4},
      {"azimuth", 16, 7}, {"elevation", 20, 7}, {"distance", 24, 7}, {"time_stamp", 28, 6}};
  REQUIRE(field_count == autoware.size());
  for (const auto& [name, offset, type] : autoware) {
    auto [got, after] = StringAt(p, Align(at, 4));
    CHECK(got == name);
    at = Align(after, 4);
    CHECK(LeAt(p, at, 4) == offset);
    CHECK(p.at(at + 4) == type);
    at = Align(at + 5, 4);
    CHECK(LeAt(p, at, 4) == 1u);  // count
    at += 4;
  }
  CHECK(p.at(at) == 0);  // is_bigendian
  at = Align(at + 1, 4);
  CHECK(LeAt(p, at, 4) == 32u);  // point_step
  CHECK(LeAt(p, at + 4, 4) == 32u);  // row_step
  CHECK(LeAt(p, at + 8, 4) == 32u);  // data length
  const size_t d = at + 12;
  CHECK(F32At(p, d) == 3.0f);
  CHECK(F32At(p, d + 8) == 12.0f);
  CHECK(p.at(d + 12) == 80);
  CHECK(p.at(d + 13) == 2);
  CHECK(LeAt(p, d + 14, 2) == 7u);
  CHECK(F32At(p, d + 16) == doctest::Approx(std::atan2(4.0, 3.0)).epsilon(1e-6));
  CHECK(F32At(p, d + 20) == doctest::Approx(std::atan2(12.0, 5.0)).epsilon(1e-6));
  CHECK(F32At(p, d + 24) == doctest::Approx(13.0).epsilon(1e-6));
  CHECK(LeAt(p, d + 28, 4) == 12'500'000u);
  CHECK(p.at(d + 32) == 1);  // is_dense
  CHECK(p.size() == d + 33);
}

TEST_CASE("ros2: odometry states the twist in the child frame") {
  const platoon::Pose pose{platoon::Vec3(10, 20, 0),
                           platoon::Quat(Eigen::AngleAxisd(std::numbers::pi / 2, platoon::Vec3::UnitZ()))};
  const Bytes p = PayloadOf(ros2::EncodeOdometry(0, "map", "ego/base_link", pose, platoon::Vec3(0, 5, 0),
                                                 platoon::Vec3(0, 0, 0.5)));
  auto [frame, at] = StringAt(p, 8);
  CHECK(frame == "map");
  auto [child, after] = StringAt(p, Align(at, 4));
  CHECK(child == "ego/base_link");
  const size_t pos = Align(after, 8);
  CHECK(F64At(p, pos) == 10.0);
  CHECK(F64At(p, pos + 8) == 20.0);
  const size_t twist = pos + 7 * 8 + 36 * 8;
  CHECK(F64At(p, twist) == doctest::Approx(5.0));       // heading north at 5 m/s: forward in base_link
  CHECK(F64At(p, twist + 8) == doctest::Approx(0.0));
  CHECK(F64At(p, twist + 40) == doctest::Approx(0.5));  // yaw rate about z
  CHECK(p.size() == twist + 48 + 36 * 8);
}

TEST_CASE("ros2: a full definition lists each dependency once after its separator") {
  const std::string def = ros2::FullDefinition("sensor_msgs/msg/Imu");
  CHECK(def.starts_with(std::string(ros2::OwnDefinition("sensor_msgs/msg/Imu"))));
  const std::string sep = std::string(80, '=') + "\nMSG: ";
  size_t count = 0;
  for (size_t at = def.find(sep); at != std::string::npos; at = def.find(sep, at + 1)) ++count;
  CHECK(count == 4);  // Header, Time, Quaternion, Vector3
  for (const char* dep : {"std_msgs/Header", "builtin_interfaces/Time", "geometry_msgs/Quaternion",
                          "geometry_msgs/Vector3"}) {
    const std::string header = sep + dep + "\n";
    CHECK(def.find(header) != std::string::npos);
    CHECK(def.find(header) == def.rfind(header));
  }
  CHECK(ros2::FullDefinition("sensor_msgs/msg/LaserScan").empty());
}

TEST_CASE("ros2: every type a known definition uses is itself defined") {
  for (const std::string& type : ros2::KnownTypes()) {
    const std::string def = ros2::FullDefinition(type);
    REQUIRE(!def.empty());
    // Each "pkg/Type" field of any section must have its own section (or be the top type).
    size_t pos = 0;
    while ((pos = def.find('/', pos)) != std::string::npos) {
      const size_t start = def.rfind('\n', pos) == std::string::npos ? 0 : def.rfind('\n', pos) + 1;
      const std::string line = def.substr(start, def.find('\n', pos) - start);
      pos = def.find('\n', pos);
      if (line.starts_with("MSG: ")) continue;
      const std::string t = line.substr(0, line.find_first_of(" ["));
      const std::string full = t.substr(0, t.find('/')) + "/msg/" + t.substr(t.find('/') + 1);
      CHECK_MESSAGE((full == type || def.find("MSG: " + t + "\n") != std::string::npos), type, " lacks ", t);
    }
  }
}

TEST_CASE("ros2: the offered qos profile of a latched topic is transient local with depth 1") {
  const std::string latched = ros2::OfferedQosProfiles(true), normal = ros2::OfferedQosProfiles(false);
  CHECK(latched.starts_with("- history: 1\n"));
  CHECK(latched.find("  durability: 1\n") != std::string::npos);
  CHECK(latched.find("  depth: 1\n") != std::string::npos);
  CHECK(normal.find("  durability: 2\n") != std::string::npos);
  CHECK(normal.find("  reliability: 1\n") != std::string::npos);
}

TEST_CASE("ros2: a detection array repeats the header per detection and ends each with its id") {
  const ros2::Detection d{"car", 1.0, platoon::Vec3(20, -1.5, 0.75), platoon::Vec3(4.5, 1.8, 1.5), "77"};
  const Bytes p = PayloadOf(ros2::EncodeDetection3DArray(5, "r", std::vector<ros2::Detection>{d}));
  // Array header: time 0..7, "r" 8..13; count at 16; the detection's header: time 20..27, "r" 28..33.
  CHECK(LeAt(p, 16, 4) == 1u);
  CHECK(LeAt(p, 24, 4) == 5u);  // nanosec of the detection's own stamp
  CHECK(StringAt(p, 28).first == "r");
  CHECK(LeAt(p, 36, 4) == 1u);  // one hypothesis
  const auto [cls, after] = StringAt(p, 40);
  CHECK(cls == "car");
  const size_t score = Align(after, 8);
  CHECK(F64At(p, score) == 1.0);
  CHECK(F64At(p, score + 8) == 20.0);                     // hypothesis pose: the centre
  const size_t bbox = score + 8 + 7 * 8 + 36 * 8;
  CHECK(F64At(p, bbox) == 20.0);                          // bbox centre
  CHECK(F64At(p, bbox + 16) == 0.75);
  CHECK(F64At(p, bbox + 7 * 8) == 4.5);                   // size
  CHECK(F64At(p, bbox + 9 * 8) == 1.5);
  CHECK(StringAt(p, bbox + 10 * 8).first == "77");
  CHECK(p.size() == bbox + 10 * 8 + 4 + 3);
}

}  // namespace cdr_test_detail
