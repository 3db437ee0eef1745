// Per-vehicle data of a recording (shared/src/data/recorded_tracks.cpp): recorded states by entity,
// the state at any sim time (exact at recorded stamps, Hermite/slerp between them, dead reckoning
// after the newest), existence across removals, the row grid k / rate, and the rows of the data write
// (headway, TTC) against hand computations.
#include "platoon/data/recorded_tracks.hpp"
#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/state_interpolation.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

using namespace platoon;
using namespace platoon::data;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

double YawOf(const Quat& q) {
  const Vec3 f = q * Vec3::UnitX();
  return std::atan2(f.y(), f.x());
}

protocol::EntityState Car(uint64_t id, int64_t stamp_ns, const Vec3& p, double yaw, const Vec3& v, const Vec3& a = Vec3::Zero(),
                          double yaw_rate = 0) {
  protocol::EntityState e;
  e.id = id;
  e.owner_node = 1;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = p;
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
  e.kinematics.velocity_mps = v;
  e.kinematics.acceleration_mps2 = a;
  e.kinematics.angular_velocity_radps = Vec3(0, 0, yaw_rate);
  return e;
}

// A car on a circle of radius R about (0, R), counter-clockwise at constant speed v from the origin.
constexpr double kR = 50.0, kV = 15.0;
protocol::EntityState OnCircle(uint64_t id, int64_t t_ns) {
  const double phi = kV * NsToS(t_ns) / kR;
  return Car(id, t_ns, Vec3(kR * std::sin(phi), kR - kR * std::cos(phi), 0), phi,
             Vec3(std::cos(phi), std::sin(phi), 0) * kV, Vec3(-std::sin(phi), std::cos(phi), 0) * (kV * kV / kR), kV / kR);
}

// Braking from 20 m/s at 8 m/s^2 along +x to a stop at 2.5 s, then standing.
constexpr double kV0 = 20.0, kDecel = 8.0;
protocol::EntityState Braking(uint64_t id, int64_t t_ns) {
  const double t_stop = kV0 / kDecel;
  const double t = std::min(NsToS(t_ns), t_stop);
  const bool moving = NsToS(t_ns) < t_stop;
  return Car(id, t_ns, Vec3(kV0 * t - 0.5 * kDecel * t * t, 0, 0), 0, Vec3(kV0 - kDecel * t, 0, 0),
             Vec3(moving ? -kDecel : 0.0, 0, 0));
}

// Largest position error of `tracks`' only track against `truth` at 1 ms steps over [from, to].
template <typename Truth>
double MaxError(const RecordedTracks& tracks, Truth truth, int64_t from_ns, int64_t to_ns, TrackMethod method,
                double* max_yaw_error = nullptr) {
  double worst = 0, worst_yaw = 0;
  for (int64_t t = from_ns; t <= to_ns; t += kMs) {
    const auto s = tracks.StateAt(0, t, method);
    REQUIRE(s.has_value());
    CHECK(s->kinematics.stamp_ns == t);
    const auto want = truth(1, t);
    worst = std::max(worst, (s->kinematics.pose.position_m - want.kinematics.pose.position_m).norm());
    worst_yaw = std::max(worst_yaw, std::abs(std::remainder(YawOf(s->kinematics.pose.orientation) -
                                                                YawOf(want.kinematics.pose.orientation), 2 * M_PI)));
  }
  if (max_yaw_error) *max_yaw_error = worst_yaw;
  return worst;
}

// Two lanes right, one left, 3.5 m each, reference line from the origin along +x, 1 km.
const road::RoadNetwork& Straight() {
  static const road::RoadNetwork n([] {
    road::RoadDef d = road::DefaultRoadDef();
    d.id = 7;
    d.sections = {road::LineSection(1000)};
    d.lane_widths_right_m = {3.5, 3.5};
    d.lane_widths_left_m = {3.5};
    return std::vector<road::RoadDef>{d};
  }());
  return n;
}

}  // namespace

TEST_CASE("recorded tracks: at a recorded stamp the state is the recorded one, bit for bit") {
  std::vector<protocol::EntityState> states;
  for (int64_t t = 0; t <= 2 * kS; t += 50 * kMs) states.push_back(OnCircle(1, t + 7 * kMs));
  const auto recorded = states;
  const RecordedTracks tracks(states, {}, 3 * kS);
  REQUIRE(tracks.Tracks().size() == 1);
  for (const auto& want : recorded)
    for (TrackMethod m : {TrackMethod::kInterpolate, TrackMethod::kDeadReckon}) {
      const auto got = tracks.StateAt(0, want.kinematics.stamp_ns, m);
      REQUIRE(got.has_value());
      CHECK(*got == want);
    }
}

TEST_CASE("recorded tracks: Hermite between 20 Hz and 2 Hz states of a car on a circle is within a micrometre and 0.1 mm") {
  for (const int64_t period : {50 * kMs, 500 * kMs}) {
    std::vector<protocol::EntityState> states;
    for (int64_t t = 0; t <= 10 * kS; t += period) states.push_back(OnCircle(1, t));
    const RecordedTracks tracks(states, {}, 10 * kS);
    double yaw_error = 0;
    const double hermite = MaxError(tracks, OnCircle, 0, 10 * kS, TrackMethod::kInterpolate, &yaw_error);
    // Cubic Hermite on a circle: error about h^4 v^4 / (384 R^3) (6.6e-9 m at 50 ms, 6.6e-5 m at 0.5 s).
    const double h = NsToS(period);
    const double bound = 2 * std::pow(h, 4) * std::pow(kV, 4) / (384 * std::pow(kR, 3));
    MESSAGE("circle R " << kR << " m at " << kV << " m/s, states every " << h * 1e3 << " ms: Hermite max error "
                        << hermite * 1e3 << " mm (bound " << bound * 1e3 << " mm), yaw " << yaw_error << " rad");
    CHECK(hermite < bound);
    CHECK(hermite < (period == 50 * kMs ? 1e-6 : 1e-4));
    CHECK(yaw_error < 1e-9);  // slerp at constant yaw rate is exact
  }
}

TEST_CASE("recorded tracks: braking to a stop inside an interval stays within a h^2 / 8 of the truth") {
  // Stamps 17 ms off the 50 ms grid, so the stop at 2.5 s falls between two states.
  std::vector<protocol::EntityState> states;
  for (int64_t t = 17 * kMs; t <= 4 * kS; t += 50 * kMs) states.push_back(Braking(1, t));
  const RecordedTracks tracks(states, {}, 4 * kS);
  const double h = 0.05;
  const double hermite = MaxError(tracks, Braking, 17 * kMs, 4 * kS, TrackMethod::kInterpolate);
  const double dead_reckoned = MaxError(tracks, Braking, 17 * kMs, 4 * kS, TrackMethod::kDeadReckon);
  MESSAGE("braking at " << kDecel << " m/s^2 to a stop, states every 50 ms: Hermite max error " << hermite * 1e3
                        << " mm, dead reckoning " << dead_reckoned * 1e3 << " mm");
  CHECK(hermite <= kDecel * h * h / 8);
  // Before the stop the motion is of constant deceleration: Hermite is exact there.
  CHECK(MaxError(tracks, Braking, 17 * kMs, 2467 * kMs, TrackMethod::kInterpolate) < 1e-9);
}

TEST_CASE("recorded tracks: between stamps the controls are the newer state's, yaw rate and accelerations blend linearly") {
  auto a = Car(1, 0, Vec3(0, 0, 0), 0, Vec3(10, 0, 0), Vec3(1, 0, 0), 0.1);
  auto b = Car(1, 100 * kMs, Vec3(1.005, 0, 0), 0, Vec3(10.1, 0, 0), Vec3(3, 0, 0), 0.3);
  a.controls.steer = 0.1;
  b.controls.steer = -0.2;
  b.controls.brake = 0.5;
  const RecordedTracks tracks({a, b}, {}, kS);
  const auto mid = tracks.StateAt(0, 25 * kMs, TrackMethod::kInterpolate);
  REQUIRE(mid.has_value());
  CHECK(mid->controls == b.controls);
  CHECK(mid->kinematics.angular_velocity_radps.z() == doctest::Approx(0.15));
  CHECK(mid->kinematics.acceleration_mps2.x() == doctest::Approx(1.5));
  CHECK(mid->kinematics.velocity_mps.x() == doctest::Approx(10.025));
  CHECK(tracks.StateAt(0, 0, TrackMethod::kInterpolate)->controls == a.controls);
  // Dead reckoning keeps the controls of the state it extrapolates.
  CHECK(tracks.StateAt(0, 25 * kMs, TrackMethod::kDeadReckon)->controls == a.controls);
}

TEST_CASE("recorded tracks: an entity exists from its first state to its removal or the end, and not across a removal") {
  // Car 1: states at 0..1 s, removed at 1.5 s, back at 3 s (a respawn far away), states to 4 s.
  // Car 2: one state at 0.5 s, never removed: it exists (dead-reckoned) until the recording ends at 5 s.
  std::vector<protocol::EntityState> states;
  for (int64_t t = 0; t <= kS; t += 100 * kMs) states.push_back(Car(1, t, Vec3(10 * NsToS(t), 0, 0), 0, Vec3(10, 0, 0)));
  for (int64_t t = 3 * kS; t <= 4 * kS; t += 100 * kMs)
    states.push_back(Car(1, t, Vec3(500 + 10 * NsToS(t), 0, 0), 0, Vec3(10, 0, 0)));
  states.push_back(Car(2, 500 * kMs, Vec3(0, 20, 0), 0, Vec3(5, 0, 0)));
  const std::vector<TrackRemoval> removals = {{1, 1500 * kMs}, {99, 2 * kS}};  // 99: never recorded
  const RecordedTracks tracks(states, removals, 5 * kS);
  REQUIRE(tracks.Tracks().size() == 2);
  const size_t one = *tracks.Find(1), two = *tracks.Find(2);
  CHECK_FALSE(tracks.Find(99).has_value());
  const Track& t1 = tracks.Tracks()[one];
  CHECK(t1.removed_ns == std::vector<int64_t>{1500 * kMs});
  CHECK(t1.end_ns == 5 * kS);  // not removed after its newest state
  CHECK(tracks.Tracks()[two].end_ns == 5 * kS);

  CHECK_FALSE(tracks.ExistsAt(one, -1));
  CHECK(tracks.ExistsAt(one, 1400 * kMs));  // after its newest state of the first stretch, before the removal
  CHECK_FALSE(tracks.ExistsAt(one, 1500 * kMs));
  CHECK_FALSE(tracks.ExistsAt(one, 2999 * kMs));
  CHECK(tracks.ExistsAt(one, 3 * kS));
  CHECK(tracks.ExistsAt(one, 5 * kS));
  CHECK_FALSE(tracks.ExistsAt(one, 5 * kS + 1));
  // Between the removal's sides nothing is interpolated: dead reckoning from 1 s.
  const auto before_removal = tracks.StateAt(one, 1200 * kMs, TrackMethod::kInterpolate);
  REQUIRE(before_removal.has_value());
  CHECK(before_removal->kinematics.pose.position_m.x() == doctest::Approx(12.0));
  // Car 2 after its only state: dead-reckoned at 5 m/s.
  CHECK_FALSE(tracks.ExistsAt(two, 499 * kMs));
  CHECK(tracks.StateAt(two, 4500 * kMs, TrackMethod::kInterpolate)->kinematics.pose.position_m.x() == doctest::Approx(20.0));
}

TEST_CASE("recorded tracks: a jump between two states (a respawn) is dead-reckoned, not interpolated") {
  const auto a = Car(1, 0, Vec3(0, 0, 0), 0, Vec3(10, 0, 0));
  const auto b = Car(1, 100 * kMs, Vec3(300, 0, 0), 0, Vec3(10, 0, 0));
  CHECK(IsJump(a.kinematics, b.kinematics));
  const RecordedTracks tracks({a, b}, {}, kS);
  CHECK(tracks.StateAt(0, 50 * kMs, TrackMethod::kInterpolate)->kinematics.pose.position_m.x() == doctest::Approx(0.5));
}

TEST_CASE("recorded tracks: rows fall on k / rate exactly, within each entity's span") {
  CHECK(RowTimeNs(3, 100) == 30 * kMs);
  CHECK(RowTimeNs(-7, 100) == -70 * kMs);
  CHECK(RowTimeNs(1, 30) == 33'333'333);
  CHECK(RowTimeNs(2, 30) == 66'666'667);
  CHECK(RowTimeNs(3'000'000'000LL, 1000) == 3'000'000 * kS);  // no rounding on a whole-ns period
  CHECK(RowTimeNs(100'000'001, 30) == 3'333'333'366'666'667LL);
  CHECK(FirstRowAtOrAfter(0, 100) == 0);
  CHECK(FirstRowAtOrAfter(1, 100) == 1);
  CHECK(FirstRowAtOrAfter(10 * kMs, 100) == 1);
  CHECK(FirstRowAtOrAfter(-15 * kMs, 100) == -1);
  CHECK(FirstRowAtOrAfter(33'333'333, 30) == 1);
  CHECK(FirstRowAtOrAfter(33'333'334, 30) == 2);

  // A car from 0.017 s to 2.003 s (its end: the recording's last world state), rows at 30 Hz.
  std::vector<protocol::EntityState> states;
  for (int64_t t = 17 * kMs; t <= 2003 * kMs; t += 50 * kMs) states.push_back(OnCircle(1, t));
  const RecordedTracks tracks(states, {}, 2003 * kMs);
  ExportDef def = DefaultExportDef();
  def.rate_hz = 30;
  const auto span = RowSpan(tracks.Tracks()[0], def);
  REQUIRE(span.has_value());
  CHECK(span->first == 1);   // 0.0333 s
  CHECK(span->second == 60); // 2.0 s
  std::vector<double> times;
  const size_t sel[] = {0};
  const uint64_t rows = ExportRows(tracks, sel, road::RoadNetwork(), def, [&](size_t i, const MetricsRow& r) {
    CHECK(i == 0);
    times.push_back(r[Column::kSimTime]);
  });
  CHECK(rows == 60);
  REQUIRE(times.size() == 60);
  for (size_t k = 0; k < times.size(); ++k) CHECK(times[k] == NsToS(RowTimeNs(static_cast<int64_t>(k) + 1, 30)));
  // --from / --to cut the span.
  def.from_ns = 500 * kMs;
  def.to_ns = kS;
  CHECK(RowSpan(tracks.Tracks()[0], def) == std::make_pair(int64_t{15}, int64_t{30}));
  def.from_ns = 3 * kS;
  def.to_ns = 4 * kS;
  CHECK_FALSE(RowSpan(tracks.Tracks()[0], def).has_value());
}

TEST_CASE("recorded tracks: headway, time headway and TTC between two recorded cars in one lane equal the hand computation") {
  // Lane -1 (centre y = -1.75 m) of a straight road along +x. Follower F (id 1) 0.15 m left of the lane
  // centre at 15 m/s from x = 30 m, stamped every 50 ms; leader L (id 2) at 12 m/s from x = 60 m,
  // stamped 25 ms later. Both 4.5 m long: the gap is (x_L - x_F) - 0.8 L - 0.2 L = 25.5 - 3 t m.
  std::vector<protocol::EntityState> states;
  for (int64_t t = 0; t <= 5 * kS; t += 50 * kMs) {
    states.push_back(Car(1, t, Vec3(30 + 15 * NsToS(t), -1.60, 0), 0, Vec3(15, 0, 0)));
    states.push_back(Car(2, t + 25 * kMs, Vec3(60 + 12 * NsToS(t + 25 * kMs), -1.75, 0), 0, Vec3(12, 0, 0)));
  }
  const RecordedTracks tracks(states, {}, 5 * kS);
  ExportDef def = DefaultExportDef();
  def.rate_hz = 10;
  std::map<size_t, std::vector<MetricsRow>> rows;
  const size_t sel[] = {0, 1};
  ExportRows(tracks, sel, Straight(), def, [&](size_t i, const MetricsRow& r) { rows[i].push_back(r); });
  const auto& f = rows[*tracks.Find(1)];
  const auto& l = rows[*tracks.Find(2)];
  REQUIRE(f.size() == 51);  // 0 .. 5 s
  REQUIRE(l.size() == 50);  // 0.1 .. 5 s (its first state is at 0.025 s)
  // At 0 s the leader was not there yet.
  CHECK(std::isnan(f[0][Column::kHeadway]));
  for (size_t k = 1; k < f.size(); ++k) {
    const double t = 0.1 * static_cast<double>(k);
    INFO("t = " << t << " s");
    const auto& r = f[k];
    CHECK(r[Column::kSimTime] == doctest::Approx(t).epsilon(1e-12));
    CHECK(r[Column::kRoadId] == 7);
    CHECK(r[Column::kLane] == -1);
    CHECK(r[Column::kS] == doctest::Approx(30 + 15 * t).epsilon(1e-9));
    CHECK(r[Column::kLaneOffset] == doctest::Approx(0.15).epsilon(1e-9));
    CHECK(r[Column::kHeadway] == doctest::Approx(25.5 - 3 * t).epsilon(1e-9));
    CHECK(r[Column::kTimeHeadway] == doctest::Approx((25.5 - 3 * t) / 15).epsilon(1e-9));
    CHECK(r[Column::kTtc] == doctest::Approx((25.5 - 3 * t) / 3).epsilon(1e-9));
    CHECK(r[Column::kSpeed] == doctest::Approx(15));
  }
  for (const auto& r : l) CHECK(std::isnan(r[Column::kHeadway]));  // nobody ahead of the leader
  CHECK(l.front()[Column::kSimTime] == doctest::Approx(0.1));
  // The same row as ComputeMetrics gives on the two states at that time: one function for both.
  const int64_t t = 2300 * kMs;
  const auto own = *tracks.StateAt(*tracks.Find(1), t, TrackMethod::kInterpolate);
  const VehicleSample others[] = {SampleOf(*tracks.StateAt(*tracks.Find(2), t, TrackMethod::kInterpolate))};
  const MetricsRow direct = ComputeMetrics(t, SampleOf(own), others, Straight());
  for (size_t c = 0; c < kColumnCount; ++c) {
    const double a = direct.value[c], b = f[23].value[c];
    CHECK(((std::isnan(a) && std::isnan(b)) || a == b));
  }
  // Without a leader column no leader is searched.
  def.metrics.leader = false;
  std::vector<MetricsRow> plain;
  ExportRows(tracks, sel, Straight(), def, [&](size_t i, const MetricsRow& r) {
    if (i == *tracks.Find(1)) plain.push_back(r);
  });
  REQUIRE(plain.size() == 51);
  CHECK(std::isnan(plain[10][Column::kHeadway]));
  CHECK(plain[10][Column::kLaneOffset] == doctest::Approx(0.15));
}

TEST_CASE("recorded tracks: the rows and their order do not depend on the number of threads") {
  // 60 cars in the two right lanes of the straight road, 20 Hz states, some removed half-way.
  std::vector<protocol::EntityState> states;
  std::vector<TrackRemoval> removals;
  for (uint64_t id = 1; id <= 60; ++id) {
    const double y = id % 2 ? -1.75 : -5.25, x0 = 12.0 * static_cast<double>(id), v = 10 + static_cast<double>(id % 7);
    for (int64_t t = static_cast<int64_t>(id) * kMs; t <= 3 * kS; t += 50 * kMs)
      states.push_back(Car(id, t, Vec3(x0 + v * NsToS(t), y + 0.01 * static_cast<double>(id % 5), 0), 0, Vec3(v, 0, 0)));
    if (id % 9 == 0) removals.push_back({id, 1500 * kMs});
  }
  const RecordedTracks tracks(states, removals, 3 * kS);
  std::vector<size_t> sel(tracks.Tracks().size());
  for (size_t i = 0; i < sel.size(); ++i) sel[i] = i;
  auto run = [&](int threads) {
    ExportDef def = DefaultExportDef();
    def.threads = threads;
    std::vector<std::pair<size_t, MetricsRow>> out;
    ExportRows(tracks, sel, Straight(), def, [&](size_t i, const MetricsRow& r) { out.emplace_back(i, r); });
    return out;
  };
  const auto one = run(1), four = run(4);
  REQUIRE(one.size() == four.size());
  size_t with_leader = 0;
  for (size_t n = 0; n < one.size(); ++n) {
    CHECK(one[n].first == four[n].first);
    for (size_t c = 0; c < kColumnCount; ++c) {
      const double a = one[n].second.value[c], b = four[n].second.value[c];
      CHECK(((std::isnan(a) && std::isnan(b)) || a == b));
    }
    with_leader += std::isfinite(one[n].second[Column::kHeadway]) ? 1 : 0;
  }
  CHECK(with_leader > one.size() / 2);
}

TEST_CASE("recorded tracks: vehicle names from node names, variables checked as the data write checks them") {
  const std::vector<std::string> nodes = {"traffic", "robot"};
  CHECK(VehicleName(VehicleId("robot", 0), nodes) == "robot:0");
  CHECK(VehicleName(VehicleId("traffic", 17), nodes) == "traffic:17");
  CHECK(VehicleName(VehicleId("wheel", 0), nodes) == "");
  CHECK(VehicleName(12345, nodes) == "");

  std::vector<Column> cols;
  CHECK(ColumnsFromVariables(std::vector<std::string>{"speed", "lane_offset_m", "sim_time"}, cols) == "");
  CHECK(cols == std::vector<Column>{Column::kSimTime, Column::kSpeed, Column::kLaneOffset});
  CHECK(ColumnsFromVariables(std::vector<std::string>{"gear"}, cols).find("unknown variable \"gear\" (known: sim_time, x,") == 0);
  CHECK(ColumnsFromVariables(std::vector<std::string>{"x", "x_m"}, cols) == "\"x_m\" is listed twice");
  CHECK(ColumnsFromVariables(std::vector<std::string>{}, cols).find("expected at least one variable") == 0);
  CHECK(AllColumns().size() == kColumnCount);
  CHECK(TrackMethodFromName("dead_reckon") == TrackMethod::kDeadReckon);
  CHECK(TrackMethodName(TrackMethod::kInterpolate) == "interpolate");
  CHECK_FALSE(TrackMethodFromName("linear").has_value());
}

TEST_CASE("recorded tracks: between two states 5 s apart around a stop, the states' own dead reckoning holds where a cubic misses") {
  // What a threshold send policy records of a car braking at 5 m/s^2 from 15 m/s to a stop at 3 s and
  // standing: the state at 0 s and the next at 5 s (its dead reckoning never drifted in between).
  auto state_at = [](int64_t t_ns) {
    const double t = std::min(NsToS(t_ns), 3.0);
    auto e = Car(1, t_ns, Vec3(15 * t - 2.5 * t * t, 0, 0), 0, Vec3(15 - 5 * t, 0, 0),
                 Vec3(t < 3.0 ? -5.0 : 0.0, 0, 0), 0);
    return e;
  };
  const auto a = state_at(0), b = state_at(5 * kS);
  double worst_dr = 0, worst_cubic = 0;
  for (int64_t t = 0; t <= 5 * kS; t += 10 * kMs) {
    const Vec3 truth = state_at(t).kinematics.pose.position_m;
    const auto k = InterpolateKinematics(a.kinematics, b.kinematics, t, dr::ModelForKind(a.kind));
    worst_dr = std::max(worst_dr, (k.pose.position_m - truth).norm());
    worst_cubic = std::max(worst_cubic, (InterpolateKinematics(a.kinematics, b.kinematics, t).pose.position_m - truth).norm());
  }
  MESSAGE("braking to a stop between states 5 s apart: dead reckoning + correction max error " << worst_dr * 1e3
                                                                                              << " mm, cubic " << worst_cubic << " m");
  CHECK(worst_cubic > 0.5);  // the hard case: a cubic through both states cannot stop and stand
  CHECK(worst_dr < 1e-3);
}
