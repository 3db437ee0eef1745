// Sensor data placed in the world for display (viewer/src/sensor_data.cpp): fused-cloud records read
// with the documented 36-byte layout (docs/PROTOCOL.md, "Data streams") and radar objects via the mount pose.
#include "platoon/viewer/sensor_data.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numbers>

using namespace platoon;
using namespace platoon::viewer;

namespace {

constexpr double kHalfPi = std::numbers::pi / 2;

Quat Yaw(double yaw) { return Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ())); }

// One 36-byte record as docs/PROTOCOL.md lays it out.
void AppendRecord(std::string& blob, float x, float y, float z, float intensity, uint8_t source) {
  char rec[36] = {};
  std::memcpy(rec + 0, &x, 4);
  std::memcpy(rec + 4, &y, 4);
  std::memcpy(rec + 8, &z, 4);
  std::memcpy(rec + 12, &intensity, 4);
  const float snr = 42.0f, t = 0.05f;
  std::memcpy(rec + 16, &snr, 4);
  std::memcpy(rec + 20, &t, 4);
  rec[26] = 1;  // echo
  rec[27] = static_cast<char>(source);
  blob.append(rec, sizeof rec);
}

void CheckNear(const Vec3& a, const Vec3& b) {
  CHECK(a.x() == doctest::Approx(b.x()).epsilon(1e-6));
  CHECK(a.y() == doctest::Approx(b.y()).epsilon(1e-6));
  CHECK(a.z() == doctest::Approx(b.z()).epsilon(1e-6));
}

}  // namespace

TEST_CASE("sensor data: fused points go from the ego vehicle frame into the world with the ego pose") {
  protocol::FusedCloud cloud;
  cloud.entity_id = 42;
  AppendRecord(cloud.points, 1.0f, 0.0f, 0.5f, 1e-9f, 0);
  AppendRecord(cloud.points, 0.0f, 2.0f, 1.0f, 2e-8f, 3);
  AppendRecord(cloud.points, -4.0f, -1.0f, 0.0f, 0.0f, 255);
  cloud.point_count = 3;
  cloud.point_stride = 36;

  Pose ego;
  ego.position_m = Vec3(10.0, 5.0, 0.2);
  ego.orientation = Yaw(kHalfPi);  // facing +y: vehicle x -> world y, vehicle y -> world -x
  const std::vector<WorldPoint> p = FusedPointsInWorld(cloud, ego);
  REQUIRE(p.size() == 3);
  CheckNear(p[0].position_m, Vec3(10.0, 6.0, 0.7));
  CheckNear(p[1].position_m, Vec3(8.0, 5.0, 1.2));
  CheckNear(p[2].position_m, Vec3(11.0, 1.0, 0.2));
  CHECK(p[0].intensity == 1e-9f);
  CHECK(p[1].intensity == 2e-8f);
  CHECK(p[0].source == 0);
  CHECK(p[1].source == 3);
  CHECK(p[2].source == 255);

  // The identity pose leaves the points where they are.
  const std::vector<WorldPoint> same = FusedPointsInWorld(cloud, Pose{});
  REQUIRE(same.size() == 3);
  CheckNear(same[1].position_m, Vec3(0.0, 2.0, 1.0));

  // A larger stride (appended fields) still reads the first 28 bytes of each record.
  std::string wide;
  for (size_t i = 0; i < 3; ++i) {
    wide.append(cloud.points, i * 36, 36);
    wide.append(4, '\0');
  }
  const std::vector<WorldPoint> w = ReadPoints(wide, 3, 40, ego);
  REQUIRE(w.size() == 3);
  CheckNear(w[2].position_m, p[2].position_m);
  CHECK(w[1].source == 3);
}

TEST_CASE("sensor data: malformed blobs give no points") {
  std::string blob;
  AppendRecord(blob, 1, 2, 3, 1e-9f, 0);
  CHECK(ReadPoints(blob, 2, 36, Pose{}).empty());   // short blob
  CHECK(ReadPoints(blob, 1, 20, Pose{}).empty());   // stride below the source field
  CHECK(ReadPoints(blob, 1, 36, Pose{}).size() == 1);
  CHECK(ReadPoints("", 0, 36, Pose{}).empty());
}

TEST_CASE("sensor data: radar objects are placed via the mount pose and the ego pose") {
  protocol::RadarScan scan;
  scan.header.entity_id = 42;
  scan.header.mount_position_m = Vec3(3.7, 0.0, 0.5);
  scan.header.mount_orientation = Yaw(0.0);
  protocol::RadarDetection d;
  d.x_m = 10.0f;
  d.y_m = 2.0f;
  d.orientation_rad = 0.1f;
  d.length_m = 4.5f;
  d.width_m = 1.8f;
  scan.detections.push_back(d);

  Pose ego;
  ego.position_m = Vec3(10.0, 5.0, 0.0);
  ego.orientation = Yaw(kHalfPi);
  std::vector<RadarMarker> m = RadarMarkersInWorld(scan, ego);
  REQUIRE(m.size() == 1);
  // Sensor origin: ego + R(90 deg) (3.7, 0, 0.5) = (10, 8.7, 0.5); detection: + R(90 deg) (10, 2, 0) = (-2, 10, 0).
  CheckNear(m[0].position_m, Vec3(8.0, 18.7, 0.5));
  CHECK(m[0].yaw_rad == doctest::Approx(kHalfPi + 0.1));
  CHECK(m[0].length_m == doctest::Approx(4.5));

  // A rear radar (mounted facing backwards): sensor x points to the vehicle's -x.
  scan.header.mount_position_m = Vec3(-0.9, 0.0, 0.5);
  scan.header.mount_orientation = Yaw(std::numbers::pi);
  m = RadarMarkersInWorld(scan, Pose{});
  REQUIRE(m.size() == 1);
  CheckNear(m[0].position_m, Vec3(-10.9, -2.0, 0.5));
}

TEST_CASE("sensor data: point colours") {
  const std::vector<WorldPoint> pts = {{Vec3::Zero(), 1e-10f, 0}, {Vec3::Zero(), 1e-7f, 1}, {Vec3::Zero(), 0.0f, 2}};
  const auto [lo, hi] = LogIntensityRange(pts);
  CHECK(lo == doctest::Approx(-10.0));
  CHECK(hi == doctest::Approx(-7.0));
  const Rgb dim = IntensityColour(1e-10f, lo, hi), bright = IntensityColour(1e-7f, lo, hi);
  CHECK(bright.r + bright.g > dim.r + dim.g);  // brighter towards yellow
  CHECK(IntensityColour(1e-3f, lo, hi) == bright);  // clamped
  CHECK(LogIntensityRange({}).first == doctest::Approx(-12.0));
  CHECK(!(SourceColour(0) == SourceColour(1)));
  CHECK(SourceColour(8) == SourceColour(0));
}
