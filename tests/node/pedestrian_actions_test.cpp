// Pedestrians taken over by scenario actions (node::PedestrianModule): a speed profile's distance is its
// integral, exact at any step; stop brakes to a standstill in v^2 / 2a; resume walks on at the node's
// speed; remove ends the publishing; a walker that does not turn back stands at its path's end.
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/route_traffic.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <vector>

namespace platoon::testing {
namespace pedestrian_actions_test_detail {

constexpr int64_t kS = 1'000'000'000;

class WalkerContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState& truth) override { published.push_back(truth); }
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 3; }
  std::vector<protocol::EntityState> published;
};

// One walker from (0, 0) along +x for 20 m at 1.2 m/s, standing at the end.
config::NodeDef OneWalker() {
  config::NodeDef n;
  n.name = "walkers";
  n.role = protocol::Role::kTraffic;
  n.traffic_model = "pedestrians";
  config::PedestrianDef p;
  p.waypoints_m = {Vec3(0, 0, 0), Vec3(20, 0, 0)};
  p.speed_mps = 1.2;
  p.turn_back = false;
  n.pedestrians = {p};
  return n;
}

protocol::LoggedEvent Action(const std::string& text, const std::string& detail, int64_t sim_ns, uint64_t entity) {
  protocol::LoggedEvent e;
  e.kind = protocol::LoggedEvent::Kind::kAction;
  e.text = text;
  e.detail = detail;
  e.sim_time_ns = sim_ns;
  e.target_node = 3;
  e.entity_id = entity;
  return e;
}

}  // namespace pedestrian_actions_test_detail

using namespace pedestrian_actions_test_detail;

TEST_CASE("pedestrian actions: a profile's distance is its integral, and the last speed holds after it") {
  const std::vector<std::pair<double, double>> p = {{0.0, 0.0}, {1.0, 1.5}, {3.0, 0.5}};
  CHECK(node::ProfileDistance(p, 0.5) == doctest::Approx(0.5 * 0.75 * 0.5));  // 1.5 t^2 / 2
  CHECK(node::ProfileDistance(p, 1.0) == doctest::Approx(0.75));
  CHECK(node::ProfileDistance(p, 3.0) == doctest::Approx(0.75 + 2.0));       // mean 1.0 m/s over 2 s
  CHECK(node::ProfileDistance(p, 5.0) == doctest::Approx(2.75 + 2 * 0.5));  // held at 0.5 m/s
  CHECK(node::ProfileSpeed(p, 2.0) == doctest::Approx(1.0));
  CHECK(node::ProfileSpeed(p, 9.0) == doctest::Approx(0.5));
  CHECK(node::ProfileDistance(p, -1.0) == 0.0);
}

TEST_CASE("pedestrian actions: stop, resume and remove, and a walker that does not turn back stands at its end") {
  node::PedestrianModule m(OneWalker());
  WalkerContext ctx;
  const uint64_t id = VehicleId("walkers", 0);
  // Before any action: start_offset + speed t.
  CHECK(m.Truth(0, 2 * kS)->kinematics.pose.position_m.x() == doctest::Approx(2.4));
  // Stop at 4 s at 0.6 m/s^2: 1.2 / 0.6 = 2 s and 1.2^2 / 1.2 = 1.2 m later it stands.
  m.OnEvent(Action("stop", "{\"decel_mps2\":0.6}", 4 * kS, id), ctx);
  CHECK(m.Truth(0, 5 * kS)->kinematics.velocity_mps.x() == doctest::Approx(0.6));
  CHECK(m.Truth(0, 6 * kS)->kinematics.pose.position_m.x() == doctest::Approx(4.8 + 1.2));
  CHECK(m.Truth(0, 8 * kS)->kinematics.pose.position_m.x() == doctest::Approx(6.0));
  CHECK(m.Truth(0, 8 * kS)->kinematics.velocity_mps.norm() == doctest::Approx(0.0));
  // Resume at 10 s: its own 1.2 m/s again, from where it stood; at the path's end (20 m) it stands.
  m.OnEvent(Action("resume", "{}", 10 * kS, id), ctx);
  CHECK(m.Truth(0, 15 * kS)->kinematics.pose.position_m.x() == doctest::Approx(12.0));
  CHECK(m.Truth(0, 30 * kS)->kinematics.pose.position_m.x() == doctest::Approx(20.0));
  CHECK(m.Truth(0, 30 * kS)->kinematics.velocity_mps.norm() == doctest::Approx(0.0));
  // An action for another node's entity, or a profile going back in time, changes nothing.
  m.OnEvent(Action("stop", "{}", 12 * kS, VehicleId("other", 0)), ctx);
  m.OnEvent(Action("speed_profile", "{\"points\":[1.0,2.0,0.5,1.0]}", 12 * kS, id), ctx);
  CHECK(m.Truth(0, 15 * kS)->kinematics.pose.position_m.x() == doctest::Approx(12.0));
  // Remove: no longer published.
  m.OnEvent(Action("remove", "{}", 16 * kS, id), ctx);
  CHECK_FALSE(m.Truth(0, 17 * kS).has_value());
  node::StepInfo step;
  step.sim_ns = 17 * kS;
  m.Step(step, ctx);
  CHECK(ctx.published.empty());
  std::vector<std::string> fields;
  m.Summarize(fields);
  CHECK(fields.back() == "\"pedestrian_actions\":3,\"pedestrian_actions_refused\":2");
}

}  // namespace platoon::testing
