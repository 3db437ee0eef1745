#include "platoon/protocol/codec.hpp"

#include "platoon.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cmath>
#include <doctest/doctest.h>

#include <random>

using namespace platoon;
using namespace platoon::protocol;

namespace {

// Values a float holds exactly: the compact entity layout (protocol version 2) carries everything but the
// position and the ids as Float32 ("codec: the compact entity layout ..." checks arbitrary values).
EntityState SampleEntity(uint64_t id) {
  EntityState e;
  e.id = id;
  e.owner_node = 7;
  e.kind = EntityKind::kTruck;
  e.kinematics.stamp_ns = 123'456'789'012;
  e.kinematics.pose.position_m = Vec3(1.5, -2.25, 0.125);
  e.kinematics.pose.orientation = Quat(0.5, 0.5, -0.5, 0.5);
  e.kinematics.velocity_mps = Vec3(15, 0.5, 0);
  e.kinematics.acceleration_mps2 = Vec3(-1, 0.25, 0);
  e.kinematics.angular_velocity_radps = Vec3(0, 0, 0.375);
  e.box_size_m = Vec3(12, 2.5, 3.75);
  e.controls = Controls{0.25f, 0.5f, 0.0f};
  e.lights = Lights{true, false, true, false, false};
  e.stale = true;
  return e;
}

std::vector<Message> OneOfEach() {
  WorldState w;
  w.sequence = 42;
  w.server_time_ns = 5'000'000'000;
  w.sim_time_ns = 1'000'000;
  w.phase = SessionPhase::kRunning;
  w.keyframe = false;
  w.entities = {SampleEntity(1), SampleEntity(2)};
  w.removed_entities = {9, 10};
  w.sim_rate = 2.5;  // a replay at 2.5x
  w.keyframe_part = 7;  // slice 7 of a 60-slice rolling keyframe
  w.keyframe_parts = 60;
  w.kept_entities = {67, 127};  // version 3: unchanged ids of the slice, by id only
  w.events = {LoggedEvent{7, 1'000'000, LoggedEvent::Kind::kMarker, "ctl", "go", "", 0, 0}};
  w.nodes = {NodeInfo{3, "alpha", Role::kSensor, "pc-1", -1500, 80'000, 59.5f, 0.01f, 4'000'000'000, true,
                      {DataEndpoint{"lidar_front", StreamKind::kLidar, 41000, "10.0.0.5"}}, 777}};
  SensorHeader h{"lidar_front", StreamKind::kLidar, 3, 12, 1'000'000, 0xABCDEF, Vec3(3.7, 0, 1), Quat(0.5, 0.5, 0.5, 0.5), 99};
  PointCloud cloud{h, 100'000'000, 2, 4, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8), false};
  RadarScan radar{h, {RadarDetection{12.5f, 0.1f, -3, 10, 1, 42, false, 4.5f, 1.8f, 0.2f, 12.4f, 1.2f}}};
  ImuMeasurement imu{h, Vec3(0.01, 0.02, 0.3), Vec3(0.1, 0.2, -9.81)};
  GnssMeasurement gnss{h, 52.1, 10.5, 80.25, Vec3(1, 2, 0), 1.5, 3.0};
  CameraFrame camera{h, 1920, 1080, 969.7, 969.7, 960, 540,
                     {CameraRoi{42, 2, 10, 20, 110, 90, 25.5f, 0.25f, true}}, "rgb8", std::string(12, '\x7f')};
  FusedCloud fused{"fused", 5, 9, 2'000'000'000, 0xABCDEF,
                   {FusedSource{"lidar_front", 1'900'000'000, 2, SourceStatus::kOk, 99, 12},
                    FusedSource{"lidar_rear", 0, 0, SourceStatus::kMissing, 0, 0}},
                   1, 8, std::string(8, '\x01'), true};
  SensorHeader oh = h;
  oh.kind = StreamKind::kObjects;
  ObjectList objects{oh, {DetectedObject{42, 1, 1, Vec3(20, -1.5, 0.5), Vec3(10, 0, 0), Vec3(4.5, 1.8, 1.5)},
                          DetectedObject{0, 0, 0, Vec3(35, 2, 0), Vec3::Zero(), Vec3(1, 1, 1)}}};
  return {
      Join{"alpha", Role::kDriver, "pc-1", kProtocolVersion, 4242, SessionPhase::kPaused, 77, 88,
           {DataEndpoint{"imu", StreamKind::kImu, 41001, ""}}},
      Welcome{3, "demo", 250'000'000, 1'000'000'000, 77, 7401, 7402, 7403, 10'000'000, true, 0x1234567890abcdefull,
              "[session]\nname = \"demo\"\n", "/home/me/demo.toml"},
      Refuse{"name taken", kProtocolVersion},
      Leave{3, "shutdown"},
      Heartbeat{3, 99, -12, 80'000, -999'000},
      TimeRequest{3, 17, 123},
      TimeReply{17, 123, 456, 789},
      NodeState{3, 8, {SampleEntity(5)}, 4, 6, 0x1234567890abcdefull},
      w,
      SessionControl{SessionControl::Command::kSpeed, 10, 20, 4.0},
      SessionStatus{SessionPhase::kPaused, 1, 2, 3},
      ParamListRequest{"server.", 11},
      ParamList{{Parameter{"server.broadcast_hz", "60", true, "World-state rate", "float", "Hz", 1.0, 1000.0}},
                12,
                {"node.seat: no reply in 500 ms"}},
      ParamGet{"server.broadcast_hz", 13},
      ParamSet{"server.broadcast_hz", "30", 14},
      ParamReply{false, Parameter{"x", "1", false, ""}, "read-only", 15},
      StatusRequest{},
      cloud,
      radar,
      imu,
      gnss,
      camera,
      fused,
      objects,
      Mark{"participant 3 starts", 1'500'000'000, 16},
      EventsRequest{41, 17},
      EventList{{LoggedEvent{42, 2'000'000'000, LoggedEvent::Kind::kAction, "event:brake", "brake",
                             R"({"decel":6.0})", 3, 7}},
                18,
                "refused"},
      OperatorHello{"0123456789abcdef0123456789abcdef"},
  };
}

}  // namespace

TEST_CASE("codec: every message round-trips unchanged") {
  const auto messages = OneOfEach();
  REQUIRE(messages.size() == std::variant_size_v<Message>);
  for (const auto& m : messages) {
    INFO("message " << MessageName(m));
    const Decoded d = Decode(Encode(m));
    REQUIRE(d.error == DecodeError::kNone);
    REQUIRE(d.message.has_value());
    CHECK(d.peer_version == kProtocolVersion);
    CHECK(*d.message == m);
  }
}

TEST_CASE("codec: a restart keeps its reason and a refused command's status its error") {
  const std::vector<Message> messages = {
      SessionControl{SessionControl::Command::kRestart, 30, 40, 1.0, "scenario B after the warm-up"},
      SessionStatus{SessionPhase::kRunning, 4, 5, 6, "start refused: the session is already running"},
      OperatorHello{std::string(64, 'f')},
  };
  for (const auto& m : messages) {
    INFO("message " << MessageName(m));
    const Decoded d = Decode(Encode(m));
    REQUIRE(d.error == DecodeError::kNone);
    REQUIRE(d.message.has_value());
    CHECK(*d.message == m);
  }
  // A command number past kRestart is refused as this version cannot name it.
  const Decoded past = Decode(Encode(SessionControl{static_cast<SessionControl::Command>(7), 0, 0}));
  CHECK(past.error != DecodeError::kNone);
}

TEST_CASE("codec: the compact entity layout keeps the position and ids exactly, the rest to float precision, in 128 bytes") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  WorldState w;
  for (uint64_t i = 0; i < 100; ++i) {
    EntityState e;
    e.id = rng();
    e.owner_node = static_cast<uint32_t>(rng());
    e.kind = static_cast<EntityKind>(i % 7);
    e.kinematics.stamp_ns = static_cast<int64_t>(rng() >> 1);
    // 100 km from the origin (an endless road), to the nm.
    e.kinematics.pose.position_m = Vec3(1e5 * u(rng), 1e5 * u(rng), 100 * u(rng));
    e.kinematics.pose.orientation = Quat(u(rng), u(rng), u(rng), u(rng)).normalized();
    e.kinematics.velocity_mps = Vec3(60 * u(rng), 60 * u(rng), u(rng));
    e.kinematics.acceleration_mps2 = Vec3(10 * u(rng), 10 * u(rng), u(rng));
    e.kinematics.angular_velocity_radps = Vec3(u(rng), u(rng), 2 * u(rng));
    e.box_size_m = Vec3(4 + u(rng), 2 + u(rng), 1.5 + u(rng));
    e.controls = Controls{static_cast<float>(u(rng)), 0.5f, 0.125f};
    e.lights = Lights{i % 2 == 0, i % 3 == 0, i % 5 == 0, i % 7 == 0, i % 11 == 0};
    e.stale = i % 13 == 0;
    w.entities.push_back(e);
  }
  const std::string bytes = Encode(w);
  const Decoded d = Decode(bytes);
  REQUIRE(d.error == DecodeError::kNone);
  const auto& got = std::get<WorldState>(*d.message).entities;
  REQUIRE(got.size() == w.entities.size());
  auto near = [](const Vec3& a, const Vec3& b) { return (a - b).cwiseAbs().maxCoeff() <= 6e-8 * std::max(1.0, b.cwiseAbs().maxCoeff()); };
  for (size_t i = 0; i < got.size(); ++i) {
    const EntityState &a = got[i], &e = w.entities[i];
    INFO("entity " << i);
    CHECK(a.id == e.id);
    CHECK(a.owner_node == e.owner_node);
    CHECK(a.kind == e.kind);
    CHECK(a.kinematics.stamp_ns == e.kinematics.stamp_ns);
    CHECK(a.kinematics.pose.position_m == e.kinematics.pose.position_m);  // Float64: bit for bit
    CHECK(a.kinematics.pose.orientation.coeffs().isApprox(e.kinematics.pose.orientation.coeffs(), 1e-7));
    CHECK(near(a.kinematics.velocity_mps, e.kinematics.velocity_mps));
    CHECK(near(a.kinematics.acceleration_mps2, e.kinematics.acceleration_mps2));
    CHECK(near(a.kinematics.angular_velocity_radps, e.kinematics.angular_velocity_radps));
    CHECK(near(a.box_size_m, e.box_size_m));
    CHECK(a.controls == e.controls);
    CHECK(a.lights == e.lights);
    CHECK(a.stale == e.stale);
    // Float32 values come back as they are: a second round trip changes nothing (the server merges and
    // forwards what it decoded).
  }
  CHECK(std::get<WorldState>(*Decode(Encode(std::get<WorldState>(*d.message))).message) == std::get<WorldState>(*d.message));
  // 100 entities: 16 words each plus the list's tag word, and the envelope around them.
  const WorldState empty;
  CHECK(bytes.size() - Encode(empty).size() <= 100 * 128 + 8 + 8);
}

TEST_CASE("codec: a world or node state of protocol version 1 (EntityState lists) is still read") {
  // Built as a version 1 build wrote it: the nested EntityState layout in `entities`.
  const EntityState e = SampleEntity(5);
  auto v1 = [&](bool world) {
    capnp::MallocMessageBuilder builder;
    auto env = builder.initRoot<wire::Envelope>();
    env.setMagic(wire::MAGIC);
    env.setVersion(1);
    auto put = [&](wire::EntityState::Builder b) {
      b.setId(e.id);
      b.setOwnerNode(e.owner_node);
      b.setKind(wire::EntityKind::TRUCK);
      b.setStampNs(e.kinematics.stamp_ns);
      auto p = b.initPosition();
      p.setX(1.5);
      p.setY(-2.25);
      p.setZ(0.125);
      auto q = b.initOrientation();
      q.setW(0.5);
      q.setX(0.5);
      q.setY(-0.5);
      q.setZ(0.5);
      b.initVelocity().setX(15);
      b.getVelocity().setY(0.5);
      b.initAcceleration().setX(-1);
      b.getAcceleration().setY(0.25);
      b.initAngularVelocity().setZ(0.375);
      auto box = b.initBoxSize();
      box.setX(12);
      box.setY(2.5);
      box.setZ(3.75);
      auto c = b.initControls();
      c.setSteer(0.25f);
      c.setThrottle(0.5f);
      auto l = b.initLights();
      l.setHeadlights(true);
      l.setIndicatorLeft(true);
      b.setStale(true);
    };
    if (world) {
      auto w = env.initBody().initWorldState();
      w.setSequence(3);
      put(w.initEntities(1)[0]);
    } else {
      auto n = env.initBody().initNodeState();
      n.setNodeId(7);
      put(n.initEntities(1)[0]);
    }
    const auto words = capnp::messageToFlatArray(builder);
    const auto chars = words.asChars();
    return std::string(chars.begin(), chars.end());
  };
  const Decoded world = Decode(v1(true));
  REQUIRE(world.error == DecodeError::kNone);
  CHECK(world.peer_version == 1);
  REQUIRE(std::get<WorldState>(*world.message).entities.size() == 1);
  CHECK(std::get<WorldState>(*world.message).entities[0] == e);
  const Decoded node = Decode(v1(false));
  REQUIRE(node.error == DecodeError::kNone);
  REQUIRE(std::get<NodeState>(*node.message).entities.size() == 1);
  CHECK(std::get<NodeState>(*node.message).entities[0] == e);
  // Version 0 and versions after this build's are not read.
  CHECK(Decode(EncodeWithVersion(WorldState{}, 0)).error == DecodeError::kVersionMismatch);
  CHECK(Decode(EncodeWithVersion(WorldState{}, kProtocolVersion + 1)).error == DecodeError::kVersionMismatch);
}

TEST_CASE("codec: a world state's sim rate is 1 on the wire's default and must be finite and positive") {
  WorldState w;
  CHECK(std::get<WorldState>(*Decode(Encode(w)).message).sim_rate == 1.0);
  for (double bad : {0.0, -1.0, std::nan(""), 1e9}) {
    w.sim_rate = bad;
    INFO("rate " << bad);
    // 0 on the wire means 1; every other bad rate is refused.
    if (bad == 0.0) CHECK(std::get<WorldState>(*Decode(Encode(w)).message).sim_rate == 1.0);
    else CHECK(Decode(Encode(w)).error == DecodeError::kUnknownBody);
  }
  SessionControl speed{SessionControl::Command::kSpeed, 0, 0, -2.0};
  CHECK(Decode(Encode(speed)).error == DecodeError::kUnknownBody);
  speed.speed = 2.0;
  CHECK(Decode(Encode(speed)).error == DecodeError::kNone);
}

TEST_CASE("codec: a point blob whose size disagrees with count x stride is refused") {
  PointCloud cloud;
  cloud.point_count = 3;
  cloud.point_stride = 36;
  cloud.points.assign(36 * 2, '\0');
  CHECK(Decode(Encode(cloud)).error == DecodeError::kUnknownBody);
  FusedCloud fused;
  fused.point_count = 1;
  fused.point_stride = 36;
  CHECK(Decode(Encode(fused)).error == DecodeError::kUnknownBody);
  fused.points.assign(36, '\0');
  CHECK(Decode(Encode(fused)).error == DecodeError::kNone);
}

TEST_CASE("codec: a fused frame's source groups round-trip, read as source order when not given, and a group past the blob is refused") {
  FusedCloud f;
  f.point_count = 5;
  f.point_stride = 36;
  f.points.assign(5 * 36, '\0');
  f.sources = {FusedSource{"a", 1, 3, SourceStatus::kOk, 1, 1, 2}, FusedSource{"b", 1, 2, SourceStatus::kOk, 1, 1, 0},
               FusedSource{"c", 0, 0, SourceStatus::kMissing, 0, 0, 0}};
  using Groups = std::vector<std::pair<uint32_t, uint32_t>>;
  auto d = Decode(Encode(f));
  REQUIRE(d.error == DecodeError::kNone);
  CHECK(std::get<FusedCloud>(*d.message) == f);
  CHECK(FusedGroups(f) == Groups{{2, 3}, {0, 2}, {0, 0}});
  // Not given (what a frame from before the field reads as: the default is its wire zero): source order.
  auto legacy = f;
  for (auto& s : legacy.sources) s.first_point = FusedSource::kInSourceOrder;
  d = Decode(Encode(legacy));
  REQUIRE(d.error == DecodeError::kNone);
  CHECK(FusedGroups(std::get<FusedCloud>(*d.message)) == Groups{{0, 3}, {3, 2}, {5, 0}});
  // A group reaching past the blob, or given for some sources only: refused.
  auto past = f;
  past.sources[0].first_point = 3;
  CHECK_FALSE(FusedGroups(past).has_value());
  CHECK(Decode(Encode(past)).error == DecodeError::kUnknownBody);
  auto mixed = f;
  mixed.sources[1].first_point = FusedSource::kInSourceOrder;
  CHECK(Decode(Encode(mixed)).error == DecodeError::kUnknownBody);
  auto huge = f;
  huge.sources[0].first_point = 0xfffffff0u;  // no wrap-around in the bound
  CHECK(Decode(Encode(huge)).error == DecodeError::kUnknownBody);
}

TEST_CASE("codec: a join of another version is readable so it can be refused clearly") {
  const Decoded d = Decode(EncodeWithVersion(Join{"old", Role::kObserver, "pc", 0, 1}, kProtocolVersion + 1));
  CHECK(d.error == DecodeError::kVersionMismatch);
  CHECK(d.peer_version == kProtocolVersion + 1);
  REQUIRE(d.message.has_value());
  CHECK(std::holds_alternative<Join>(*d.message));
  CHECK(d.detail.find("version") != std::string::npos);
}

TEST_CASE("codec: other messages of another version are refused") {
  const Decoded d = Decode(EncodeWithVersion(Heartbeat{1, 2, 3, 4, 5}, kProtocolVersion + 1));
  CHECK(d.error == DecodeError::kVersionMismatch);
  CHECK_FALSE(d.message.has_value());
}

TEST_CASE("codec: garbage bytes are reported, never crash") {
  std::mt19937_64 rng(5);
  int errors = 0;
  const int n = 20'000;
  for (int i = 0; i < n; ++i) {
    std::string bytes(rng() % 256, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    const Decoded d = Decode(bytes);
    if (d.error != DecodeError::kNone) ++errors;
    CHECK((d.error == DecodeError::kNone) == d.message.has_value());
  }
  // Random bytes that form a valid envelope with the right magic are essentially impossible.
  CHECK(errors == n);
}

TEST_CASE("codec: every truncation of a valid message is reported, never crashes") {
  WorldState w;
  w.entities = {SampleEntity(1), SampleEntity(2), SampleEntity(3)};
  const std::string bytes = Encode(w);
  for (size_t len = 0; len < bytes.size(); ++len) {
    const Decoded d = Decode(std::string_view(bytes).substr(0, len));
    CHECK(d.error != DecodeError::kNone);
  }
}

TEST_CASE("codec: bit flips are either rejected or decode to a well-formed message") {
  const std::string bytes = Encode(NodeState{3, 8, {SampleEntity(5)}});
  std::mt19937 rng(9);
  for (int i = 0; i < 5000; ++i) {
    std::string corrupt = bytes;
    corrupt[rng() % corrupt.size()] ^= static_cast<char>(1u << (rng() % 8));
    const Decoded d = Decode(corrupt);
    CHECK((d.error == DecodeError::kNone) == d.message.has_value());
  }
}

TEST_CASE("codec: a valid Cap'n Proto message that is not a platoon envelope is bad magic") {
  std::string bytes = Encode(StatusRequest{});
  // The magic is the first data word of the root struct, right after the 8-byte segment table and root pointer.
  bytes[16] ^= 0x01;
  CHECK(Decode(bytes).error == DecodeError::kBadMagic);
}

TEST_CASE("codec: a rolling keyframe's slice index past its slice count is no slice") {
  WorldState w;
  w.keyframe = false;
  w.keyframe_part = 60;
  w.keyframe_parts = 60;
  const auto bad = std::get<WorldState>(*Decode(Encode(w)).message);
  CHECK(bad.keyframe_parts == 0);
  CHECK(bad.keyframe_part == 0);
  // No slice covers anything: a receiver drops nothing on its word.
  CHECK_FALSE(protocol::HasKeyframe(bad));
  CHECK_FALSE(protocol::KeyframeCovers(bad, 0));
  w.keyframe_part = 59;
  const auto good = std::get<WorldState>(*Decode(Encode(w)).message);
  CHECK(protocol::KeyframeCovers(good, 59));
  CHECK(protocol::KeyframeCovers(good, 119));
  CHECK_FALSE(protocol::KeyframeCovers(good, 58));
}
