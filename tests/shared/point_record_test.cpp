#include "platoon/entity_id.hpp"
#include "platoon/config/table.hpp"
#include "platoon/point_record.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace platoon;

namespace {

PointRecord Sample(int i) {
  PointRecord p;
  p.x_m = 1.5f * static_cast<float>(i);
  p.y_m = -2.25f;
  p.z_m = 0.125f;
  p.intensity_w = 3e-8f;
  p.snr = 12.5f;
  p.time_offset_s = 0.05f;
  p.ring = static_cast<uint16_t>(300 + i);
  p.echo = 1;
  p.source = static_cast<uint8_t>(i);
  p.entity_id = 0xA1B2C3D4u;
  p.class_id = 7;
  p.reflectivity = static_cast<uint8_t>(10 + i);
  p.return_type = 2;
  return p;
}

bool Same(const PointRecord& a, const PointRecord& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("point record: 36-byte stride, fields little-endian at their documented offsets") {
  CHECK(point_record::kStride == 36);
  CHECK(sizeof(PointRecord) == point_record::kStride);
  char bytes[point_record::kStride] = {};
  PointRecord p;
  p.x_m = 1.0f;               // 0x3f800000
  p.ring = 0x0102;
  p.source = 9;
  p.entity_id = 0x11223344u;
  WritePointRecord(p, bytes);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x00);
  CHECK(static_cast<unsigned char>(bytes[3]) == 0x3f);
  CHECK(static_cast<unsigned char>(bytes[2]) == 0x80);
  CHECK(static_cast<unsigned char>(bytes[point_record::kOffsetRing]) == 0x02);
  CHECK(static_cast<unsigned char>(bytes[point_record::kOffsetRing + 1]) == 0x01);
  CHECK(static_cast<unsigned char>(bytes[point_record::kOffsetSource]) == 9);
  CHECK(static_cast<unsigned char>(bytes[point_record::kOffsetEntity]) == 0x44);
  CHECK(point_record::Load<uint32_t>(bytes + point_record::kOffsetEntity) == 0x11223344u);
  CHECK(point_record::Load<float>(bytes + point_record::kOffsetX) == 1.0f);
  p.class_id = 0x0506;
  p.reflectivity = 201;
  p.return_type = 3;
  WritePointRecord(p, bytes);
  CHECK(static_cast<unsigned char>(bytes[32]) == 0x06);
  CHECK(static_cast<unsigned char>(bytes[33]) == 0x05);
  CHECK(static_cast<unsigned char>(bytes[34]) == 201);
  CHECK(static_cast<unsigned char>(bytes[35]) == 3);
}

TEST_CASE("point record: a layout-1 record (uint32 class at byte 32) reads with its class and reflectivity 0") {
  PointRecord p = Sample(4);
  p.reflectivity = 0, p.return_type = 0;
  char bytes[point_record::kStride] = {};
  WritePointRecord(p, bytes);
  // What a build before the reflectivity field wrote: the class as a little-endian uint32.
  const uint32_t old_class = 8;
  point_record::Store(bytes + 32, old_class);
  const PointRecord back = ReadPointRecord(bytes);
  CHECK(back.class_id == 8);
  CHECK(back.reflectivity == 0);
  CHECK(back.return_type == static_cast<uint8_t>(point_record::ReturnType::kUnknown));
  CHECK(back.entity_id == p.entity_id);
  CHECK(back.ring == p.ring);
}

TEST_CASE("point record: pack and unpack round-trip, also from an unaligned buffer") {
  std::vector<PointRecord> points;
  for (int i = 0; i < 5; ++i) points.push_back(Sample(i));
  const std::string blob = PackPointRecords(points);
  REQUIRE(blob.size() == 5 * point_record::kStride);
  const auto back = UnpackPointRecords(blob, 5, point_record::kStride);
  REQUIRE(back.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(Same(back[i], points[i]));

  // One byte in: the records start at an odd address; memcpy reads them all the same.
  const std::string shifted = "x" + blob;
  CHECK(Same(ReadPointRecord(shifted.data() + 1 + point_record::kStride), points[1]));

  // Appending keeps what was there.
  std::string out = "head";
  AppendPointRecords(points, out);
  CHECK(out.size() == 4 + blob.size());
  CHECK(out.substr(4) == blob);
  CHECK(PackPointRecords({}).empty());
}

TEST_CASE("point record: a wider stride skips appended bytes, a short blob or stride gives nothing") {
  std::vector<PointRecord> points = {Sample(1), Sample(2), Sample(3)};
  std::string wide;
  for (const auto& p : points) {
    char rec[point_record::kStride];
    WritePointRecord(p, rec);
    wide.append(rec, point_record::kStride);
    wide.append(8, '\x7f');  // fields a newer producer appended
  }
  const auto back = UnpackPointRecords(wide, 3, 44);
  REQUIRE(back.size() == 3);
  CHECK(Same(back[2], points[2]));

  const std::string blob = PackPointRecords(points);
  CHECK(UnpackPointRecords(blob, 4, point_record::kStride).empty());  // short blob
  CHECK(UnpackPointRecords(blob, 3, 28).empty());                     // stride below the record
  CHECK_FALSE(PointRecordsFit(blob, 4, point_record::kStride));
  CHECK(PointRecordsFit(blob, 3, point_record::kStride));
  CHECK(UnpackPointRecords("", 0, point_record::kStride).empty());
}

TEST_CASE("entity id: vehicle ids from node names, attach_to parsed as <node>[:<index>]") {
  CHECK(VehicleId("north", 2) == VehicleId("north", 2));
  CHECK(VehicleId("north", 2) != VehicleId("north", 1));
  CHECK((VehicleId("north", 2) & 0xffff) == 2);
  CHECK(AttachedVehicleId("ego") == VehicleId("ego", 0));
  CHECK(AttachedVehicleId("ego:3") == VehicleId("ego", 3));
  CHECK(AttachedVehicleId("a:b:1") == VehicleId("a:b", 1));
  CHECK_THROWS_WITH_AS(AttachedVehicleId("ego:x"), doctest::Contains("\"ego:x\""), config::ConfigError);
  CHECK_THROWS_WITH_AS(AttachedVehicleId("ego:70000"), doctest::Contains("0..65535"), config::ConfigError);
  CHECK_THROWS_WITH_AS(AttachedVehicleId("ego:"), doctest::Contains("ego:"), config::ConfigError);
  CHECK_THROWS_WITH_AS(AttachedVehicleId(":1"), doctest::Contains("node name is empty"), config::ConfigError);
}
