// An objects sensor with can_bus/can_map (node/src/sensor_host.cpp, docs/CAN.md "Object lists"): every
// object list it publishes also goes on the bus as a header frame and one frame per object. Here the bus is the
// UDP transport on loopback and the test is the ECU: it decodes what arrives with the team's DBC fixture and
// compares it with the lists the host published.
#include "platoon/can/dbc.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/transport/channel.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace objects_can_test_detail {

using namespace platoon;

// A ModuleContext serving a fixed world and keeping every object list published.
class ObjectsContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> remote;
  std::vector<protocol::ObjectList> lists;
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return remote; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
  void PublishData(const protocol::Message& m) override {
    if (const auto* l = std::get_if<protocol::ObjectList>(&m)) lists.push_back(*l);
  }
};

node::RemoteEntity Car(uint64_t id, const Vec3& position, const Vec3& velocity) {
  node::RemoteEntity r;
  r.state.id = id;
  r.state.kind = protocol::EntityKind::kCar;
  r.state.kinematics.pose = Pose{position, Quat::Identity()};
  r.state.kinematics.velocity_mps = velocity;
  r.state.box_size_m = Vec3(4.6, 1.8, 1.5);
  r.displayed = r.state.kinematics.pose;
  return r;
}

}  // namespace objects_can_test_detail

TEST_CASE("sensor host objects: each list goes on CAN as a header and one frame per object that decode to the published list") {
  using namespace objects_can_test_detail;
  const uint16_t ecu_port = transport::FreeLoopbackPorts(1).at(0);
  can::UdpBus ecu("127.0.0.1", ecu_port, "127.0.0.1", 9);
  const std::string source = PLATOON_SOURCE_DIR;
  const config::SessionDef session = config::LoadSessionText(
      fmt::format("[[node]]\nname = \"objs\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
                  "[[node.sensor]]\nid = \"radar\"\ntype = \"objects\"\nrate_hz = 10\nposition = [3.7, 0.0, 0.5]\n"
                  "range_max_m = 150\nfov_half_angle_deg = 45\ndetection_probability = 1.0\n"
                  "can_bus = \"udp:127.0.0.1:0>127.0.0.1:{}\"\ncan_map = \"{}/tests/data/can/objects_map.toml\"\n",
                  ecu_port, source),
      "objs.toml");
  auto log = std::make_shared<spdlog::logger>("objs", std::make_shared<spdlog::sinks::null_sink_mt>());
  node::SensorHostModule host(session, session.nodes[0], log);
  ObjectsContext context;
  // Two cars ahead in the field of view (one moving at 10 m/s, one at -2 m/s laterally) and one behind.
  context.remote = {Car(VehicleId("ego", 0), Vec3(0, 0, 0), Vec3::Zero()),
                    Car(VehicleId("lead", 0), Vec3(24, 2.5, 0), Vec3(10, 0, 0)),
                    Car(VehicleId("lead", 1), Vec3(51, -6.2, 0), Vec3(0, -2, 0)),
                    Car(VehicleId("behind", 0), Vec3(-30, 0, 0), Vec3::Zero())};
  // 10 Hz over 0.6 s of 10 ms steps: a list at each 100 ms instant after the first step.
  for (int k = 0; k <= 60; ++k) host.Step(node::StepInfo{k * 10'000'000 + 1, k == 0 ? 0 : 10'000'000}, context);
  REQUIRE(context.lists.size() >= 5);

  const can::Database dbc = can::LoadDbc(source + "/tests/data/can/objects.dbc");
  const can::Message* header = dbc.FindMessage("ObjectHeader");
  const can::Message* object = dbc.FindMessage("ObjectData");
  REQUIRE(header);
  REQUIRE(object);
  size_t expected = 0;
  for (const auto& l : context.lists) expected += 1 + l.objects.size();
  std::vector<can::Frame> frames;
  for (int i = 0; i < 200 && frames.size() < expected; ++i) {
    while (auto f = ecu.Receive()) frames.push_back(*f);
    if (frames.size() < expected) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(frames.size() == expected);

  size_t at = 0;
  double worst_x = 0, worst_vx = 0;
  int cycle_before = -1;
  for (const auto& list : context.lists) {
    CAPTURE(list.header.stamp_ns);
    REQUIRE(list.objects.size() == 2);  // the two ahead; the car behind is outside the field of view
    const can::Frame& h = frames.at(at++);
    REQUIRE(h.id == header->id);
    const auto hv = can::DecodeMessage(*header, h);
    CHECK(hv.at("NumObjects") == static_cast<double>(list.objects.size()));
    const int cycle = static_cast<int>(hv.at("CycleCounter"));
    if (cycle_before >= 0) CHECK(cycle == (cycle_before + 1) % 16);
    cycle_before = cycle;
    for (size_t j = 0; j < list.objects.size(); ++j) {
      const auto& o = list.objects[j];
      const can::Frame& f = frames.at(at++);
      REQUIRE(f.id == object->id);
      const auto v = can::DecodeMessage(*object, f);
      CHECK(v.at("ObjIndex") == static_cast<double>(j));
      CHECK(v.at("ObjId") == static_cast<double>(o.track_id % 256));
      CHECK(v.at("ObjClass") == static_cast<double>(o.object_class));
      // Within half of each signal's resolution: x 0.05 m, y 0.1 m, vx 0.1 km/h.
      CHECK(std::abs(v.at("ObjDistX") - o.position_m.x()) <= 0.025 + 1e-9);
      CHECK(std::abs(v.at("ObjDistY") - o.position_m.y()) <= 0.05 + 1e-9);
      CHECK(std::abs(v.at("ObjVelX") / 3.6 - o.velocity_mps.x()) <= 0.05 / 3.6 + 1e-9);
      worst_x = std::max(worst_x, std::abs(v.at("ObjDistX") - o.position_m.x()));
      worst_vx = std::max(worst_vx, std::abs(v.at("ObjVelX") / 3.6 - o.velocity_mps.x()));
    }
  }
  MESSAGE(fmt::format("{} lists, {} frames; worst x {:.4f} m (half resolution 0.025), worst vx {:.4f} m/s", context.lists.size(),
                      frames.size(), worst_x, worst_vx));
  CHECK(ecu.Counters().rejected == 0);
}
