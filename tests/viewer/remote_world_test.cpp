// The dead-reckoned copy of the world (shared/src/remote_world.cpp) and its plot buffers
// (viewer/src/plot_buffer.cpp).
#include "platoon/viewer/plot_buffer.hpp"
#include "platoon/remote_world.hpp"

#include <doctest/doctest.h>

using namespace platoon;
using namespace platoon::viewer;

namespace {

constexpr int64_t kMs = 1'000'000;

protocol::EntityState Moving(uint64_t id, double x, int64_t stamp_ns) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(x, 0, 0);
  e.kinematics.velocity_mps = Vec3(10, 0, 0);
  return e;
}

protocol::WorldState World(uint64_t seq, bool keyframe, std::vector<protocol::EntityState> entities) {
  protocol::WorldState w;
  w.sequence = seq;
  w.keyframe = keyframe;
  w.entities = std::move(entities);
  return w;
}

}  // namespace

TEST_CASE("remote world: entities are dead-reckoned to the display time and keyframes remove the unlisted") {
  RemoteWorld world;
  CHECK_FALSE(world.Apply(World(1, true, {Moving(1, 0.0, 0), Moving(2, 50.0, 0)}), 0, false).gap);
  auto shown = world.Displayed(100 * kMs);
  REQUIRE(shown.size() == 2);
  CHECK(shown[0].kinematics.pose.position_m.x() == doctest::Approx(1.0));  // 10 m/s for 0.1 s
  CHECK(shown[1].kinematics.pose.position_m.x() == doctest::Approx(51.0));
  // A delta changes one entity and keeps the other; a skipped sequence number is a gap.
  CHECK(world.Apply(World(3, false, {Moving(1, 1.0, 100 * kMs)}), 100 * kMs, false).gap);
  CHECK(world.Size() == 2);
  // A keyframe that lists only entity 2 removes entity 1.
  world.Apply(World(4, true, {Moving(2, 52.0, 200 * kMs)}), 200 * kMs, false);
  shown = world.Displayed(200 * kMs);
  REQUIRE(shown.size() == 1);
  CHECK(shown[0].id == 2);
  // A sequence that goes back is a restarted server.
  CHECK(world.Apply(World(1, true, {Moving(2, 0.0, 300 * kMs)}), 300 * kMs, false).reset);
}

TEST_CASE("plot buffers: a ring keeps the newest samples in order and the recorder samples at its rate") {
  RingBuffer ring(3);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f}) ring.Push(v);
  CHECK(ring.Ordered() == std::vector<float>{3.f, 4.f, 5.f});

  PlotRecorder rec(10.0, 100);  // every 100 ms
  rec.SetEntity(7);
  std::vector<protocol::EntityState> es = {Moving(7, 0.0, 0)};
  int taken = 0;
  for (int64_t t = 0; t <= 1000 * kMs; t += 16 * kMs) taken += rec.Record(t, es) ? 1 : 0;
  CHECK(taken == 10);  // one per 100 ms over ~1 s of 60 Hz frames (the last due at 1000 ms falls between frames)
  CHECK(rec.Buffer(PlotVariable::kSpeed).At(0) == doctest::Approx(10.0));
  // Sim time that stands still (paused) records nothing; time that goes back starts afresh.
  CHECK(rec.Record(1000 * kMs, es));
  CHECK_FALSE(rec.Record(1000 * kMs, es));
  CHECK(rec.Buffer(PlotVariable::kSpeed).Size() == 11);
  CHECK(rec.Record(5 * kMs, es));
  CHECK(rec.Buffer(PlotVariable::kSpeed).Size() == 1);
}
