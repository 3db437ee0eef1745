#include "platoon/remote_world.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace platoon;
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

TEST_CASE("remote world: remote entities are dead-reckoned to the asked time, own entities are skipped") {
  RemoteWorld view;
  view.Apply(World(1, true, {Car(1, 2, 0, 0), Car(2, 7, 0, 100)}), 0, false, /*own_node=*/7);
  const auto entities = view.WithDisplayedPose(kS / 2);
  REQUIRE(entities.size() == 1);
  CHECK(entities[0].first.id == 1);
  CHECK(entities[0].second.position_m.x() == doctest::Approx(5.0));  // 10 m/s for 0.5 s
}

TEST_CASE("remote world: a jump in the sequence is reported as a gap") {
  RemoteWorld view;
  CHECK_FALSE(view.Apply(World(1, true, {Car(1, 2, 0, 0)}), 0, false, /*own_node=*/7).gap);
  CHECK_FALSE(view.Apply(World(2, false, {}), 0, false, /*own_node=*/7).gap);
  CHECK(view.Apply(World(5, false, {}), 0, false, /*own_node=*/7).gap);
  CHECK(view.LastSequence() == 5);
}

TEST_CASE("remote world: a sequence that goes back is a server restart, and entities survive it") {
  RemoteWorld view;
  view.Apply(World(100, true, {Car(1, 2, 0, 0)}), 0, false, /*own_node=*/7);
  const WorldApplyResult r = view.Apply(World(1, false, {}), 0, false, /*own_node=*/7);
  CHECK(r.reset);
  CHECK(view.Size() == 1);  // still dead-reckoned until a keyframe says otherwise
  CHECK(view.LastSequence() == 1);
}

TEST_CASE("remote world: a keyframe removes what it does not list, removed ids are dropped") {
  RemoteWorld view;
  view.Apply(World(1, true, {Car(1, 2, 0, 0), Car(2, 2, 0, 10), Car(3, 3, 0, 20)}), 0, false, /*own_node=*/7);
  CHECK(view.Size() == 3);
  WorldState delta = World(2, false, {});
  delta.removed_entities = {3};
  view.Apply(delta, 0, false, /*own_node=*/7);
  CHECK(view.Size() == 2);
  view.Apply(World(3, true, {Car(1, 2, kS, 10)}), kS, false, /*own_node=*/7);
  REQUIRE(view.Size() == 1);
  CHECK(view.WithDisplayedPose(kS)[0].first.id == 1);
}

TEST_CASE("remote world: an overtaken snapshot updates states but removes nothing") {
  RemoteWorld view;
  view.Apply(World(10, false, {Car(1, 2, 0, 0), Car(2, 2, 0, 10)}), 0, false, /*own_node=*/7);
  // Snapshot numbered 9 (older than the delta already applied) that lists only entity 1.
  const WorldApplyResult r = view.Apply(World(9, true, {Car(1, 2, kS, 10)}), kS, true, /*own_node=*/7);
  CHECK_FALSE(r.applied);
  CHECK(view.Size() == 2);
  CHECK(view.LastSequence() == 10);
}

TEST_CASE("remote world: older states never overwrite newer ones, the stale flag follows the newest broadcast") {
  RemoteWorld view;
  view.Apply(World(1, false, {Car(1, 2, 2 * kS, 20)}), 2 * kS, false, /*own_node=*/7);
  view.Apply(World(2, false, {Car(1, 2, kS, 999)}), 2 * kS, false, /*own_node=*/7);
  auto e = view.WithDisplayedPose(2 * kS);
  REQUIRE(e.size() == 1);
  CHECK(e[0].second.position_m.x() == doctest::Approx(20.0));
  EntityState stale = Car(1, 2, 2 * kS, 20);
  stale.stale = true;
  view.Apply(World(3, false, {stale}), 2 * kS, false, /*own_node=*/7);
  CHECK(view.WithDisplayedPose(2 * kS)[0].first.stale);
}

TEST_CASE("remote world: a rolling keyframe's slice drops the unlisted ids it covers and no others") {
  RemoteWorld view;
  // Ids 10..13 known; 4 slices: 10 % 4 = 2, 11 % 4 = 3, 12 % 4 = 0, 13 % 4 = 1.
  view.Apply(World(1, true, {Car(10, 2, 0, 0), Car(11, 2, 0, 0), Car(12, 2, 0, 0), Car(13, 2, 0, 0)}), 0, false, 7);
  REQUIRE(view.Size() == 4);
  // The removal of 10 and 12 was lost. Slice 2 lists nothing: 10 is gone, 12 (slice 0) stays.
  WorldState slice2 = World(2, false, {Car(11, 2, kS / 10, 1)});  // a changed entity of another slice rides along
  slice2.keyframe_part = 2;
  slice2.keyframe_parts = 4;
  view.Apply(slice2, kS / 10, false, 7);
  CHECK(view.Size() == 3);
  CHECK(view.Track(10) == nullptr);
  CHECK(view.Track(11) != nullptr);
  CHECK(view.Track(12) != nullptr);
  // Slice 0 lists nothing either: 12 goes; 13 (slice 1, unlisted) stays.
  WorldState slice0 = World(3, false, {});
  slice0.keyframe_parts = 4;
  view.Apply(slice0, kS / 5, false, 7);
  CHECK(view.Track(12) == nullptr);
  CHECK(view.Track(13) != nullptr);
  // A plain delta drops nothing.
  view.Apply(World(4, false, {}), kS / 4, false, 7);
  CHECK(view.Size() == 2);
}

TEST_CASE("remote world: slices, deltas and keyframes in any order keep exactly what a sweep of every id would") {
  // RemoteWorld sweeps only the ids a slice covers (an index by id % P); a reference set here sweeps every
  // id. 2000 random world states: new and re-sent entities, removals, whole keyframes, and slices of 3, 4
  // and 60 parts (the server's count may change), each listing a random part of what it covers.
  RemoteWorld view;
  std::map<uint64_t, bool> held;  // the reference: the ids that must be held
  uint64_t state = 12345;
  auto rnd = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (uint64_t seq = 1; seq <= 2000; ++seq) {
    const int64_t t = static_cast<int64_t>(seq) * kS / 100;
    WorldState w = World(seq, false, {});
    const uint64_t kind = rnd(10);
    if (kind == 0) {
      w.keyframe = true;
    } else if (kind <= 4) {
      const uint16_t parts_of[3] = {3, 4, 60};
      w.keyframe_parts = parts_of[rnd(seq < 1000 ? 2 : 3)];
      w.keyframe_part = static_cast<uint16_t>(rnd(w.keyframe_parts));
    }
    std::set<uint64_t> listed, kept;
    // A slice or keyframe lists most of what it covers; some ids (their removal lost) it leaves out. A
    // slice lists some by id only (version 3's kept ids), and may name an id this view does not hold.
    if (protocol::HasKeyframe(w))
      for (const auto& [id, h] : held)
        if (protocol::KeyframeCovers(w, id) && rnd(5) != 0) (!w.keyframe && rnd(2) == 0 ? kept : listed).insert(id);
    for (int k = 0; k < 3; ++k) listed.insert(1 + rnd(300));  // changed or new entities ride along
    if (!w.keyframe && w.keyframe_parts > 1) kept.insert(w.keyframe_part + w.keyframe_parts * (301 + rnd(10)));
    for (uint64_t id : kept) listed.erase(id);
    for (uint64_t id : listed) w.entities.push_back(Car(id, 2, t, static_cast<double>(id)));
    w.kept_entities.assign(kept.begin(), kept.end());
    if (rnd(3) == 0) w.removed_entities.push_back(1 + rnd(300));
    view.Apply(w, t, false, 7);
    // The reference: listed ids held, kept ids stay as they were (covered, so not dropped), covered
    // unlisted ones dropped, then the removals.
    for (uint64_t id : listed) held[id] = true;
    listed.insert(kept.begin(), kept.end());
    if (protocol::HasKeyframe(w))
      for (auto it = held.begin(); it != held.end();)
        it = protocol::KeyframeCovers(w, it->first) && !listed.count(it->first) ? held.erase(it) : std::next(it);
    for (uint64_t id : w.removed_entities) held.erase(id);
    REQUIRE(view.Size() == held.size());
    for (const auto& [id, h] : held) REQUIRE(view.Track(id) != nullptr);
  }
  CHECK(held.size() > 20);  // the run kept a world to sweep
  CHECK(view.Track(301 * 3) == nullptr);  // a kept id never held is not made up (ids past 300 are kept-only)
}

TEST_CASE("remote world: a hold shows each entity where its estimate was, standing still and stale, the next world state ends it") {
  RemoteWorld view;
  // A car turning (yaw rate 0.5 rad/s) and speeding up (1 m/s^2): dead-reckoned without news, it would
  // circle and gather speed for ever. And one on a straight.
  EntityState turning = Car(1, 2, 0, 0);
  turning.kinematics.angular_velocity_radps = Vec3(0, 0, 0.5);
  turning.kinematics.acceleration_mps2 = Vec3(1, 0, 0);
  view.Apply(World(1, true, {turning, Car(2, 3, 0, 50)}), 0, false, /*own_node=*/7);
  const auto at_hold = view.Displayed(2 * kS);
  const auto before = view.Displayed(kS);
  view.Hold(2 * kS);
  view.Hold(5 * kS);  // a second call keeps the first instant
  REQUIRE(view.HeldAt() == 2 * kS);

  // Before the hold instant, the estimates as ever.
  const auto early = view.Displayed(kS);
  REQUIRE(early.size() == 2);
  for (size_t i = 0; i < early.size(); ++i) {
    CHECK(early[i].kinematics.pose.position_m.isApprox(before[i].kinematics.pose.position_m));
    CHECK_FALSE(early[i].stale);
  }
  // Past it: where the estimate was at 2 s, standing still, flagged stale; both ways of reading the view.
  const auto late = view.Displayed(10 * kS);
  const auto late_poses = view.WithDisplayedPose(10 * kS);
  REQUIRE(late.size() == 2);
  REQUIRE(late_poses.size() == 2);
  for (size_t i = 0; i < late.size(); ++i) {
    INFO("entity " << late[i].id);
    CHECK((late[i].kinematics.pose.position_m - at_hold[i].kinematics.pose.position_m).norm() < 1e-9);
    CHECK(late[i].kinematics.velocity_mps.norm() == 0);
    CHECK(late[i].kinematics.acceleration_mps2.norm() == 0);
    CHECK(late[i].kinematics.angular_velocity_radps.norm() == 0);
    CHECK(late[i].kinematics.stamp_ns == 2 * kS);
    CHECK(late[i].stale);
    const auto& [state, pose] = late_poses[i];
    CHECK((pose.position_m - at_hold[i].kinematics.pose.position_m).norm() < 1e-9);
    CHECK(state.stale);
    CHECK(state.kinematics.velocity_mps.norm() == 0);
    // A sensor host extrapolates the state it is handed to its render time: a held one stays put.
    const Pose later = dr::Extrapolate(dr::Model::kCca, state.kinematics, 12 * kS);
    CHECK((later.position_m - pose.position_m).norm() < 1e-9);
  }
  // The unheld estimate of the turning car at 10 s is far from the held pose (it went on round its circle).
  CHECK((dr::Extrapolate(dr::Model::kCca, turning.kinematics, 10 * kS).position_m - late[0].kinematics.pose.position_m)
            .norm() > 10);

  // A world state ends the hold: the car it brings news of follows that; the other runs on from its
  // newest state, as if there had been no hold.
  view.Apply(World(2, false, {Car(2, 3, 9 * kS, 140)}), 10 * kS, false, /*own_node=*/7);
  CHECK_FALSE(view.HeldAt());
  const auto after = view.Displayed(10 * kS);
  REQUIRE(after.size() == 2);
  CHECK((after[0].kinematics.pose.position_m - dr::Extrapolate(dr::Model::kCca, turning.kinematics, 10 * kS).position_m)
            .norm() < 1e-6);
  CHECK(after[1].kinematics.pose.position_m.x() == doctest::Approx(150.0));
  CHECK_FALSE(after[0].stale);
  CHECK_FALSE(after[1].stale);
}
