// Object lists on CAN (shared/src/can/object_frames.cpp): tests/data/can/objects_map.toml read, a list
// encoded as a header and one frame per object that decode back (DecodeMessage) to the objects within each
// signal's resolution, max_objects truncation, the cycle counter, consecutive identifiers, clamping, and
// the object mapping file's errors.
#include "platoon/can/dbc.hpp"
#include "platoon/can/object_frames.hpp"
#include "platoon/config/table.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

namespace can_object_frames_test_detail {

using namespace platoon;

const std::string kObjectsDir = std::string(PLATOON_SOURCE_DIR) + "/tests/data/can/";
const std::string kObjectsMap = kObjectsDir + "objects_map.toml";

// `n` objects with every field drawn inside the fixture's signal ranges.
std::vector<can::ObjectFrameInput> RandomObjects(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  std::vector<can::ObjectFrameInput> out;
  for (size_t i = 0; i < n; ++i) {
    can::ObjectFrameInput o;
    o.id = static_cast<uint32_t>(std::uniform_int_distribution<int>(0, 255)(rng));
    o.object_class = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 5)(rng));
    o.x_m = uniform(0.5, 200);
    o.y_m = uniform(-60, 60);
    o.vx_mps = uniform(-25, 25);  // the DBC's km/h signal holds +-28.4 m/s
    o.vy_mps = uniform(-20, 20);
    o.length_m = uniform(1, 12);
    o.width_m = uniform(0.5, 2.5);
    out.push_back(o);
  }
  return out;
}

// The mapping error of `objects_table` (the [objects] table's text) with the fixture's DBC ("" when it loads).
std::string ObjectMappingError(const std::string& objects_table) {
  try {
    can::ParseObjectMapping("dbc = \"objects.dbc\"\n" + objects_table, kObjectsDir + "inline_map.toml");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The physical value of `name` in a decoded frame; fails the test when the signal is absent.
double Decoded(const std::map<std::string, double>& values, const std::string& name) {
  const auto it = values.find(name);
  REQUIRE_MESSAGE(it != values.end(), "signal " << name << " missing");
  return it->second;
}

}  // namespace can_object_frames_test_detail

using namespace can_object_frames_test_detail;

TEST_CASE("can object frames: a list decodes back to its objects within each signal's resolution") {
  can::ObjectListEncoder encoder(can::LoadObjectMapping(kObjectsMap));
  const can::Database& dbc = encoder.Def().dbc;
  const can::Message* header = dbc.FindMessage("ObjectHeader");
  const can::Message* data = dbc.FindMessage("ObjectData");
  REQUIRE(header);
  REQUIRE(data);
  const auto objects = RandomObjects(17, 44);
  const int64_t sim_ns = 12'345'000'000;
  const auto frames = encoder.Encode(sim_ns, objects);

  // The header first, with the count, then one ObjectData frame per object in list order.
  REQUIRE(frames.size() == objects.size() + 1);
  for (const auto& f : frames) CHECK(f.sim_ns == sim_ns);
  CHECK(frames[0].frame.id == header->id);
  const auto h = can::DecodeMessage(*header, frames[0].frame);
  CHECK(Decoded(h, "NumObjects") == static_cast<double>(objects.size()));
  CHECK(Decoded(h, "CycleCounter") == 0);

  // Each field within half its resolution: the DBC factor times the mapping's factor (km/h -> m/s for vx).
  double worst = 0;  // largest error as a fraction of the half resolution
  auto check = [&](double got, double want, double resolution) {
    CHECK(std::abs(got - want) <= 0.5 * resolution * (1 + 1e-9));
    worst = std::max(worst, std::abs(got - want) / (0.5 * resolution));
  };
  for (size_t i = 0; i < objects.size(); ++i) {
    const can::Frame& f = frames[i + 1].frame;
    CHECK(f.id == data->id);
    CHECK_FALSE(f.extended);
    const auto v = can::DecodeMessage(*data, f);
    const can::ObjectFrameInput& o = objects[i];
    CHECK(Decoded(v, "ObjIndex") == static_cast<double>(i));
    CHECK(Decoded(v, "ObjId") == static_cast<double>(o.id));
    CHECK(Decoded(v, "ObjClass") == static_cast<double>(o.object_class));
    check(Decoded(v, "ObjDistX"), o.x_m, data->FindSignal("ObjDistX")->factor);
    check(Decoded(v, "ObjDistY"), o.y_m, data->FindSignal("ObjDistY")->factor);
    check(Decoded(v, "ObjVelX") / 3.6, o.vx_mps, data->FindSignal("ObjVelX")->factor / 3.6);
    check(Decoded(v, "ObjVelY"), o.vy_mps, data->FindSignal("ObjVelY")->factor);
  }
  MESSAGE("worst error: " << 100 * worst << " % of half a resolution");
  CHECK(encoder.Counters().lists == 1);
  CHECK(encoder.Counters().objects == objects.size());
  CHECK(encoder.Counters().frames == frames.size());
  CHECK(encoder.Counters().truncated == 0);
  CHECK(encoder.Counters().clamped == 0);
}

TEST_CASE("can object frames: objects past max_objects are left out and counted") {
  std::string map = R"(
[objects]
header = "ObjectHeader"
count_signal = "NumObjects"
object = "ObjectData"
index_signal = "ObjIndex"
max_objects = 4
[[objects.field]]
name = "ObjDistX"
variable = "x_m"
)";
  can::ObjectListEncoder encoder(can::ParseObjectMapping("dbc = \"objects.dbc\"\n" + map, kObjectsDir + "inline_map.toml"));
  const can::Message* header = encoder.Def().dbc.FindMessage("ObjectHeader");
  const can::Message* data = encoder.Def().dbc.FindMessage("ObjectData");
  const auto objects = RandomObjects(7, 3);
  const auto frames = encoder.Encode(0, objects);
  const size_t max = encoder.Def().max_objects;
  REQUIRE(frames.size() == max + 1);
  CHECK(Decoded(can::DecodeMessage(*header, frames[0].frame), "NumObjects") == static_cast<double>(max));
  // The first max_objects of the list, in its order.
  for (size_t i = 0; i < max; ++i) {
    const auto v = can::DecodeMessage(*data, frames[i + 1].frame);
    CHECK(Decoded(v, "ObjIndex") == static_cast<double>(i));
    CHECK(std::abs(Decoded(v, "ObjDistX") - objects[i].x_m) <= 0.5 * data->FindSignal("ObjDistX")->factor * (1 + 1e-9));
  }
  CHECK(encoder.Counters().truncated == objects.size() - max);
  CHECK(encoder.Counters().objects == max);
  // An empty list is a header with count 0.
  const auto empty = encoder.Encode(1, {});
  REQUIRE(empty.size() == 1);
  CHECK(Decoded(can::DecodeMessage(*header, empty[0].frame), "NumObjects") == 0);
  CHECK(encoder.Counters().truncated == objects.size() - max);
}

TEST_CASE("can object frames: the cycle counter counts lists and wraps at its bit length") {
  can::ObjectListEncoder encoder(can::LoadObjectMapping(kObjectsMap));
  const can::Message* header = encoder.Def().dbc.FindMessage("ObjectHeader");
  const uint64_t wrap = 1ull << encoder.Def().cycle_signal->length;
  const auto objects = RandomObjects(2, 5);
  for (uint64_t k = 0; k < wrap + 3; ++k) {
    const auto frames = encoder.Encode(static_cast<int64_t>(k) * 50'000'000, objects);
    CHECK(Decoded(can::DecodeMessage(*header, frames[0].frame), "CycleCounter") == static_cast<double>(k % wrap));
  }
  CHECK(encoder.Counters().lists == wrap + 3);
}

TEST_CASE("can object frames: objects on consecutive identifiers need no index signal") {
  const std::string map = R"(
[objects]
header = "ObjectHeader"
count_signal = "NumObjects"
object = "ObjectPlain"
id_step = 1
max_objects = 16
[[objects.field]]
name = "PlainDistX"
variable = "x_m"
[[objects.field]]
name = "PlainLength"
variable = "length_m"
[[objects.field]]
name = "PlainWidth"
variable = "width_m"
factor = 0.5     # the DBC's width counts half metres of our width: physical = width / 0.5
)";
  can::ObjectListEncoder encoder(can::ParseObjectMapping("dbc = \"objects.dbc\"\n" + map, kObjectsDir + "inline_map.toml"));
  const can::Message* plain = encoder.Def().dbc.FindMessage("ObjectPlain");
  REQUIRE(plain);
  auto objects = RandomObjects(9, 8);
  for (auto& o : objects) o.width_m = std::min(o.width_m, 12.0);
  const auto frames = encoder.Encode(7, objects);
  REQUIRE(frames.size() == objects.size() + 1);
  for (size_t i = 0; i < objects.size(); ++i) {
    const can::Frame& f = frames[i + 1].frame;
    CHECK(f.id == plain->id + i);
    // The database knows the object by its first identifier: decode it as that message.
    can::Frame as_first = f;
    as_first.id = plain->id;
    const auto v = can::DecodeMessage(*plain, as_first);
    CHECK(std::abs(Decoded(v, "PlainDistX") - objects[i].x_m) <= 0.5 * plain->FindSignal("PlainDistX")->factor * (1 + 1e-9));
    CHECK(std::abs(Decoded(v, "PlainLength") - objects[i].length_m) <= 0.5 * plain->FindSignal("PlainLength")->factor * (1 + 1e-9));
    CHECK(std::abs(Decoded(v, "PlainWidth") * 0.5 - objects[i].width_m) <=
          0.5 * 0.5 * plain->FindSignal("PlainWidth")->factor * (1 + 1e-9));
  }
}

TEST_CASE("can object frames: values past a signal's range go clamped and counted and track ids wrap") {
  can::ObjectListEncoder encoder(can::LoadObjectMapping(kObjectsMap));
  const can::Message* data = encoder.Def().dbc.FindMessage("ObjectData");
  auto objects = RandomObjects(3, 9);
  objects[0].x_m = 1000;  // over ObjDistX's 409.55 m
  objects[1].y_m = -500;  // under ObjDistY's -102.4 m
  objects[2].id = 0x1234;  // an 8-bit id: 0x34
  const auto frames = encoder.Encode(0, objects);
  REQUIRE(frames.size() == 4);
  const can::Signal* dx = data->FindSignal("ObjDistX");
  const can::Signal* dy = data->FindSignal("ObjDistY");
  CHECK(Decoded(can::DecodeMessage(*data, frames[1].frame), "ObjDistX") == doctest::Approx(dx->maximum));
  CHECK(Decoded(can::DecodeMessage(*data, frames[2].frame), "ObjDistY") == doctest::Approx(dy->minimum));
  CHECK(Decoded(can::DecodeMessage(*data, frames[3].frame), "ObjId") == static_cast<double>(0x1234 % 256));
  CHECK(encoder.Counters().clamped == 2);
}

TEST_CASE("can object frames: mapping file errors name the file line and what was expected") {
  const std::string head = "[objects]\nheader = \"ObjectHeader\"\ncount_signal = \"NumObjects\"\n";
  const std::string field = "[[objects.field]]\nname = \"ObjDistX\"\nvariable = \"x_m\"\n";
  const std::string data = "object = \"ObjectData\"\nindex_signal = \"ObjIndex\"\n";
  // A good one loads.
  CHECK(ObjectMappingError(head + data + field) == "");
  // Each fault, with where it is and what was expected.
  CHECK(ObjectMappingError("").find("inline_map.toml") != std::string::npos);
  CHECK(ObjectMappingError("").find("[objects]") != std::string::npos);
  const std::string unknown = ObjectMappingError("[objects]\nheader = \"Nope\"\ncount_signal = \"NumObjects\"\n" + data + field);
  CHECK(unknown.find("inline_map.toml:3") != std::string::npos);
  CHECK(unknown.find("ObjectHeader, ObjectData, ObjectPlain") != std::string::npos);
  CHECK(ObjectMappingError(head + "object = \"ObjectData\"\nindex_signal = \"Idx\"\n" + field).find("ObjIndex, ObjId") != std::string::npos);
  CHECK(ObjectMappingError(head + "object = \"ObjectData\"\n" + field).find("index_signal") != std::string::npos);
  const std::string too_many = ObjectMappingError(head + data + "max_objects = 300\n" + field);
  CHECK(too_many.find("inline_map.toml:7") != std::string::npos);
  CHECK(too_many.find("up to 255") != std::string::npos);
  const std::string bad_var = ObjectMappingError(head + data + "[[objects.field]]\nname = \"ObjDistX\"\nvariable = \"speed\"\n");
  CHECK(bad_var.find("expected an object field (id, class, x_m") != std::string::npos);
  CHECK(ObjectMappingError(head + data + field + "factor = 0\n").find("non-zero factor") != std::string::npos);
  CHECK(ObjectMappingError(head + data + field + field).find("mapped twice") != std::string::npos);
  CHECK(ObjectMappingError(head + data + "[[objects.field]]\nname = \"ObjIndex\"\nvariable = \"id\"\n").find("plain signal") !=
        std::string::npos);
  CHECK(ObjectMappingError(head + data + field + "unit = \"m\"\n").find("unit") != std::string::npos);
  CHECK(ObjectMappingError(head + "object = \"ObjectPlain\"\nid_step = 16\nmax_objects = 200\n" + field).find("11-bit") !=
        std::string::npos);
  // A missing DBC names the mapping line and the DBC.
  try {
    can::ParseObjectMapping("dbc = \"missing.dbc\"\n" + head, kObjectsDir + "inline_map.toml");
    FAIL("a missing DBC loaded");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()).find("inline_map.toml:1") != std::string::npos);
    CHECK(std::string(e.what()).find("missing.dbc") != std::string::npos);
  }
}
