// Foxglove JSON of a known entity and cloud: field names, frames, poses, colours, base64.
#include "platoon/log/foxglove.hpp"

#include "platoon/point_record.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace {

using namespace platoon;

foxglove::SceneEntity Truck() {
  foxglove::SceneEntity e;
  e.id = 7;
  e.kind = protocol::EntityKind::kTruck;
  // At (100, 20, 0), heading north (yaw 90 deg).
  e.pose.position_m = Vec3(100, 20, 0);
  e.pose.orientation = Quat(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()));
  e.box_size_m = Vec3(10, 2.5, 3.5);
  e.owner_node = 2;
  e.owner_name = "traffic";
  e.owner_role = protocol::Role::kTraffic;
  return e;
}

}  // namespace

TEST_CASE("foxglove: a scene update replaces the whole scene with one frame-locked cube per entity at its box centre in its own frame") {
  const auto e = Truck();
  const std::string json = foxglove::SceneUpdateJson(std::span(&e, 1), 1'500'000'000);
  // Everything earlier on the topic goes first, then the entity with every field Foxglove requires.
  CHECK(json.rfind(R"({"deletions":[{"timestamp":{"sec":1,"nsec":500000000},"type":1,"id":""}],"entities":[{)", 0) == 0);
  CHECK(json.find(R"("frame_id":"vehicle_7","id":"entity/7","lifetime":{"sec":0,"nsec":0},"frame_locked":true,)") != std::string::npos);
  CHECK(json.find(R"({"key":"kind","value":"truck"},{"key":"owner","value":"traffic"},{"key":"owner_node","value":"2"},)"
                  R"({"key":"stale","value":"false"})") != std::string::npos);
  for (const char* field : {"\"arrows\":[]", "\"spheres\":[]", "\"cylinders\":[]", "\"lines\":[]", "\"triangles\":[]",
                            "\"texts\":[]", "\"models\":[]"})
    CHECK(json.find(field) != std::string::npos);
  // The body frame's origin is the rear axle: the box centre is 0.3 x length ahead of it, half its height up.
  CHECK(json.find(R"("cubes":[{"pose":{"position":{"x":3.000,"y":0.000,"z":1.750},)"
                  R"("orientation":{"x":0.000000,"y":0.000000,"z":0.000000,"w":1.000000}},"size":{"x":10.000,"y":2.500,"z":3.500},)") !=
        std::string::npos);
  CHECK(foxglove::SceneUpdateJson({}, 0) == R"({"deletions":[{"timestamp":{"sec":0,"nsec":0},"type":1,"id":""}],"entities":[]})");
  // Negative sim time (the countdown before the start) is shown at 0.
  CHECK(foxglove::SceneUpdateJson({}, -5) == foxglove::SceneUpdateJson({}, 0));
  // What a scene shows, apart from where: the transforms' business.
  auto moved = e;
  moved.pose.position_m.x() += 5;
  CHECK(moved.SameLook(e));
  moved.stale = true;
  CHECK_FALSE(moved.SameLook(e));
}

TEST_CASE("foxglove: transforms put each vehicle frame at its pose in the world frame") {
  const auto e = Truck();
  CHECK(foxglove::FrameTransformsJson(std::span(&e, 1), 2'000'000'001) ==
        R"({"transforms":[{"timestamp":{"sec":2,"nsec":1},"parent_frame_id":"world","child_frame_id":"vehicle_7",)"
        R"("translation":{"x":100.000,"y":20.000,"z":0.000},"rotation":{"x":0.000000,"y":0.000000,"z":0.707107,"w":0.707107}}]})");
}

TEST_CASE("foxglove: colours by owner role and kind, pale when stale, always within [0, 1]") {
  using protocol::EntityKind;
  using protocol::Role;
  const auto driver = foxglove::EntityColour(EntityKind::kCar, Role::kDriver, 3, false);
  const auto traffic = foxglove::EntityColour(EntityKind::kCar, Role::kTraffic, 3, false);
  CHECK(driver.r > driver.b);    // drivers orange
  CHECK(traffic.b > traffic.r);  // traffic blue
  CHECK(foxglove::EntityColour(EntityKind::kCar, Role::kTraffic, 4, false) != traffic);  // a shade per owner
  CHECK(foxglove::EntityColour(EntityKind::kCar, Role::kTraffic, 3, true).a < traffic.a);
  CHECK(foxglove::EntityColour(EntityKind::kStaticObject, Role::kTraffic, 3, false) == foxglove::Rgba{0.6, 0.6, 0.6, 0.9});
  for (uint32_t owner = 0; owner < 50; ++owner)
    for (auto role : {Role::kDriver, Role::kTraffic, Role::kSensor, Role::kUnknown}) {
      const auto c = foxglove::EntityColour(EntityKind::kCar, role, owner, owner % 2 == 0);
      for (double v : {c.r, c.g, c.b, c.a}) CHECK((v >= 0 && v <= 1));
    }
}

TEST_CASE("foxglove: a point cloud carries x y z time ring intensity 0-255 and source of each record at its mount pose") {
  PointRecord p[2];
  p[0].x_m = 1, p[0].y_m = 2, p[0].z_m = 3, p[0].intensity_w = 4e-7f, p[0].ring = 0x0109, p[0].time_offset_s = 0.0625f;
  p[0].reflectivity = 80, p[0].source = 2, p[0].snr = 99;
  p[1].x_m = -1, p[1].y_m = 0.5f, p[1].z_m = 0, p[1].intensity_w = 1e-6f, p[1].ring = 31, p[1].time_offset_s = 0.099f;
  p[1].reflectivity = 203, p[1].source = 3;
  const std::string blob = PackPointRecords(std::span<const PointRecord>(p, 2));
  foxglove::CloudView view{"vehicle_7", Pose{Vec3(3.7, 0, 1), Quat::Identity()}, 100'000'000, blob, 2, point_record::kStride};
  const std::string json = foxglove::PointCloudJson(view);
  CHECK(json.find(R"("frame_id":"vehicle_7","pose":{"position":{"x":3.700,"y":0.000,"z":1.000},)") != std::string::npos);
  CHECK(json.find(R"("point_stride":20,"fields":[{"name":"x","offset":0,"type":7},{"name":"y","offset":4,"type":7},)"
                  R"({"name":"z","offset":8,"type":7},{"name":"time","offset":12,"type":7},)"
                  R"({"name":"ring","offset":16,"type":3},{"name":"intensity","offset":18,"type":1},)"
                  R"({"name":"source","offset":19,"type":1}])") != std::string::npos);
  // The expected bytes built field by field, little-endian.
  std::string packed;
  for (const auto& r : p) {
    char row[20];
    point_record::Store(row, r.x_m);
    point_record::Store(row + 4, r.y_m);
    point_record::Store(row + 8, r.z_m);
    point_record::Store(row + 12, r.time_offset_s);
    point_record::Store(row + 16, r.ring);
    point_record::Store(row + 18, r.reflectivity);
    point_record::Store(row + 19, r.source);
    packed.append(row, 20);
  }
  CHECK(packed.size() == 2 * foxglove::kCloudStride);
  CHECK(json.find("\"data\":\"" + foxglove::Base64(packed) + "\"}") != std::string::npos);
  // A blob shorter than count x stride gives no points rather than a read past its end.
  view.point_count = 3;
  CHECK(foxglove::PointCloudJson(view).find("\"data\":\"\"") != std::string::npos);
  // So does a stride below the record's.
  view.point_count = 1;
  view.point_stride = 16;
  CHECK(foxglove::PointCloudJson(view).find("\"data\":\"\"") != std::string::npos);
}

TEST_CASE("foxglove: base64 as RFC 4648 section 10") {
  CHECK(foxglove::Base64("") == "");
  CHECK(foxglove::Base64("f") == "Zg==");
  CHECK(foxglove::Base64("fo") == "Zm8=");
  CHECK(foxglove::Base64("foo") == "Zm9v");
  CHECK(foxglove::Base64("foob") == "Zm9vYg==");
  CHECK(foxglove::Base64("fooba") == "Zm9vYmE=");
  CHECK(foxglove::Base64("foobar") == "Zm9vYmFy");
  CHECK(foxglove::Base64(std::string("\xff\x00\xfe", 3)) == "/wD+");
}
