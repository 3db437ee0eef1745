#include "platoon/node/world_view.hpp"

#include <doctest/doctest.h>

using namespace platoon;
using namespace platoon::node;
using protocol::EntityState;
using protocol::WorldState;

namespace {

EntityState Car(uint64_t id, uint32_t owner, int64_t stamp_ns, double x, double vx = 10) {
  EntityState e;
  e.id = id;
  e.owner_node = owner;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(x, 0, 0);
  e.kinematics.velocity_mps = Vec3(vx, 0, 0);
  return e;
}

WorldState World(uint64_t seq, bool keyframe, std::vector<EntityState> entities) {
  WorldState w;
  w.sequence = seq;
  w.keyframe = keyframe;
  w.phase = protocol::SessionPhase::kRunning;
  w.entities = std::move(entities);
  return w;
}

constexpr int64_t kS = 1'000'000'000;

}  // namespace

TEST_CASE("world view: remote entities are dead-reckoned to the asked time; own entities are skipped") {
  WorldView view;
  view.Apply(World(1, true, {Car(1, 2, 0, 0), Car(2, 7, 0, 100)}), /*own_node=*/7, 0, false);
  const auto entities = view.Entities(kS / 2);
  REQUIRE(entities.size() == 1);
  CHECK(entities[0].state.id == 1);
  CHECK(entities[0].displayed.position_m.x() == doctest::Approx(5.0));  // 10 m/s for 0.5 s
}

TEST_CASE("world view: a jump in the sequence is reported as a gap") {
  WorldView view;
  CHECK_FALSE(view.Apply(World(1, true, {Car(1, 2, 0, 0)}), 7, 0, false).gap);
  CHECK_FALSE(view.Apply(World(2, false, {}), 7, 0, false).gap);
  CHECK(view.Apply(World(5, false, {}), 7, 0, false).gap);
  CHECK(view.LastSequence() == 5);
}

TEST_CASE("world view: a sequence that goes back is a server restart, and entities survive it") {
  WorldView view;
  view.Apply(World(100, true, {Car(1, 2, 0, 0)}), 7, 0, false);
  const ApplyResult r = view.Apply(World(1, false, {}), 7, 0, false);
  CHECK(r.reset);
  CHECK(view.Size() == 1);  // still dead-reckoned until a keyframe says otherwise
  CHECK(view.LastSequence() == 1);
}

TEST_CASE("world view: a keyframe removes what it does not list; removed ids are dropped") {
  WorldView view;
  view.Apply(World(1, true, {Car(1, 2, 0, 0), Car(2, 2, 0, 10), Car(3, 3, 0, 20)}), 7, 0, false);
  CHECK(view.Size() == 3);
  WorldState delta = World(2, false, {});
  delta.removed_entities = {3};
  view.Apply(delta, 7, 0, false);
  CHECK(view.Size() == 2);
  view.Apply(World(3, true, {Car(1, 2, kS, 10)}), 7, kS, false);
  REQUIRE(view.Size() == 1);
  CHECK(view.Entities(kS)[0].state.id == 1);
}

TEST_CASE("world view: an overtaken snapshot updates states but removes nothing") {
  WorldView view;
  view.Apply(World(10, false, {Car(1, 2, 0, 0), Car(2, 2, 0, 10)}), 7, 0, false);
  // Snapshot numbered 9 (older than the delta already applied) that lists only entity 1.
  const ApplyResult r = view.Apply(World(9, true, {Car(1, 2, kS, 10)}), 7, kS, true);
  CHECK_FALSE(r.applied);
  CHECK(view.Size() == 2);
  CHECK(view.LastSequence() == 10);
}

TEST_CASE("world view: older states never overwrite newer ones; the stale flag follows the newest broadcast") {
  WorldView view;
  view.Apply(World(1, false, {Car(1, 2, 2 * kS, 20)}), 7, 2 * kS, false);
  view.Apply(World(2, false, {Car(1, 2, kS, 999)}), 7, 2 * kS, false);
  auto e = view.Entities(2 * kS);
  REQUIRE(e.size() == 1);
  CHECK(e[0].displayed.position_m.x() == doctest::Approx(20.0));
  EntityState stale = Car(1, 2, 2 * kS, 20);
  stale.stale = true;
  view.Apply(World(3, false, {stale}), 7, 2 * kS, false);
  CHECK(view.Entities(2 * kS)[0].state.stale);
}
