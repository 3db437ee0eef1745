// The pose log (platoon-node --pose-log): what it writes, how it is read back, and that the view error
// it gives from two nodes' logs is the error against the owner's truth. Stadium traffic has a truth any
// process can compute (node::TrafficTruth), so the log-based figure is checked against it here; road
// traffic, which has none, is what traffic_bench --session measures with it.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"
#include "platoon/node/pose_log.hpp"
#include "platoon/node/traffic.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <sstream>
#include <thread>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

TEST_CASE("pose log: rows read back as written, and a bad row is named by file and line") {
  TempDir dir;
  auto logger = std::make_shared<spdlog::logger>("test");
  const std::string path = dir.Path() + "/poses.csv";
  {
    node::PoseLog log(path, 2, logger);
    protocol::EntityState e;
    e.id = VehicleId("n1", 4);
    e.kinematics.stamp_ns = 1'500'000'000;
    e.kinematics.pose.position_m = Vec3(10.25, -3.5, 0.125);
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(0.75, Vec3::UnitZ()));
    log.Own(e);
    e.id = VehicleId("n1", 3);  // index 3: not a multiple of 2, left out
    log.Own(e);
    node::RemoteEntity r{e, e.kinematics.pose};
    r.state.id = VehicleId("n1", 6);
    r.displayed.position_m = Vec3(1, 2, 3);
    log.View(2'000'000'000, r);
    r.state.stale = true;  // stale views are left out
    log.View(2'010'000'000, r);
    CHECK(log.Rows() == 3);
  }
  const auto rows = node::ReadPoseLog(path);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].source == node::PoseRow::Source::kOwn);
  CHECK(rows[0].sim_ns == 1'500'000'000);
  CHECK(rows[0].id == VehicleId("n1", 4));
  CHECK((rows[0].position_m - Vec3(10.25, -3.5, 0.125)).norm() < 1e-6);
  CHECK(rows[0].yaw_rad == doctest::Approx(0.75).epsilon(1e-6));
  CHECK(rows[1].source == node::PoseRow::Source::kView);
  CHECK(rows[1].sim_ns == 2'000'000'000);
  CHECK((rows[1].position_m - Vec3(1, 2, 3)).norm() < 1e-6);
  // The estimate: the received state (at 1.5 s, at rest) dead-reckoned to 2 s, without the display's blend.
  CHECK(rows[2].source == node::PoseRow::Source::kEstimate);
  CHECK((rows[2].position_m - Vec3(10.25, -3.5, 0.125)).norm() < 1e-6);

  const std::string bad = dir.Write("bad.csv", "source,sim_ns,id,x_m,y_m,z_m,yaw_rad\nown,1,2,0,0,0,0\nview,3,x,0,0,0,0\n");
  try {
    node::ReadPoseLog(bad);
    FAIL("a bad row was read");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(bad + ":3:") != std::string::npos);
  }
  const std::string nan = dir.Write("nan.csv", "source,sim_ns,id,x_m,y_m,z_m,yaw_rad\nown,1,2,nan,0,0,0\n");
  try {
    node::ReadPoseLog(nan);
    FAIL("a NaN row was read");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(nan + ":2:") != std::string::npos);
  }
  CHECK_THROWS_AS(node::ReadPoseLog(dir.Write("other.csv", "a,b\n")), std::runtime_error);
}

TEST_CASE("pose log: CompareViews interpolates the owner's truth, and sets teleports and unmatched rows apart") {
  using Source = node::PoseRow::Source;
  std::vector<node::PoseRow> owner;
  // 10 m/s along x, a row every 10 ms for 2 s; at 1 s the entity is moved 5 km on (a finite road's end).
  for (int k = 0; k <= 200; ++k) {
    const int64_t t = k * 10'000'000LL;
    owner.push_back({Source::kOwn, t, 7, Vec3(10.0 * t * 1e-9 + (t >= 1'000'000'000 ? 5000.0 : 0.0), 0, 0), 0});
  }
  const auto row = [](Source s, int64_t t, uint64_t id, double x, double y) { return node::PoseRow{s, t, id, Vec3(x, y, 0), 0}; };
  const std::vector<node::PoseRow> viewer = {
      row(Source::kView, 100'000'000, 7, 1.0, 0.5),         // before from_sim_ns: not judged at all
      row(Source::kView, 505'000'000, 7, 5.05 + 0.03, 0),   // between two rows: truth 5.05, error 3 cm
      row(Source::kEstimate, 505'000'000, 7, 5.05, 0.02),   // another source: not judged as a view
      row(Source::kView, 995'000'000, 7, 9.95, 0),          // in the step that teleports
      row(Source::kView, 1'200'000'000, 7, 12.0, 0),        // 0.2 s after it: still the old place
      row(Source::kView, 1'800'000'000, 7, 5018.0, 0.01),   // long after: error 1 cm
      row(Source::kView, 2'500'000'000, 7, 5025.0, 0),      // after the owner's last row
      row(Source::kView, 600'000'000, 8, 0, 0),             // an entity nobody owns here
  };
  const auto v = node::CompareViews(owner, viewer, 500'000'000, 25'000'000);
  REQUIRE(v.errors_m.size() == 2);
  CHECK(v.errors_m[0] == doctest::Approx(0.03).epsilon(1e-9));
  CHECK(v.errors_m[1] == doctest::Approx(0.01).epsilon(1e-9));
  CHECK(v.rows == std::vector<size_t>{1, 5});
  CHECK(v.after_jump == 2);
  CHECK(v.unmatched == 2);
  const auto e = node::CompareViews(owner, viewer, 500'000'000, 25'000'000, Source::kEstimate);
  REQUIRE(e.errors_m.size() == 1);
  CHECK(e.errors_m[0] == doctest::Approx(0.02).epsilon(1e-9));
  // Owner rows further apart than max_gap_ns do not bracket a view row (the rows at 0.505 s and 0.995 s,
  // which is now no longer within one step of the teleport); the row at 1.8 s lies on one.
  const auto tight = node::CompareViews(owner, viewer, 500'000'000, 5'000'000);
  CHECK(tight.rows == std::vector<size_t>{5});
  CHECK(tight.unmatched == 4);
  CHECK(tight.after_jump == 1);
}

TEST_CASE("pose log: a correction shown at once is a spike of roughness, one spread over a blend is not") {
  using Source = node::PoseRow::Source;
  std::vector<node::PoseRow> owner, snap, blend;
  for (int k = 0; k <= 100; ++k) {
    const int64_t t = k * 10'000'000LL;  // 10 m/s along x, a row every 10 ms
    owner.push_back({Source::kOwn, t, 7, Vec3(0.1 * k, 0, 0), 0});
    // The same motion shown 5 cm aside from 0.55 s on: at once, or over 0.1 s.
    const double at_once = k >= 55 ? 0.05 : 0.0;
    const double spread = 0.05 * std::clamp((k - 55) / 10.0, 0.0, 1.0);
    snap.push_back({Source::kView, t, 7, Vec3(0.1 * k, at_once, 0), 0});
    blend.push_back({Source::kView, t, 7, Vec3(0.1 * k, spread, 0), 0});
  }
  const auto s = node::CompareViews(owner, snap, 0, 25'000'000);
  REQUIRE(s.roughness_mps2.size() == 99);  // every three consecutive rows of 101
  // Second divided differences over 10 ms: 0.05 m / (0.01 s)^2 on each side of the step.
  CHECK(*std::max_element(s.roughness_mps2.begin(), s.roughness_mps2.end()) == doctest::Approx(500.0));
  CHECK(std::count_if(s.roughness_mps2.begin(), s.roughness_mps2.end(), [](double r) { return r > 1e-6; }) == 2);
  const auto b = node::CompareViews(owner, blend, 0, 25'000'000);
  REQUIRE(b.roughness_mps2.size() == 99);
  // Spread over ten rows: a change of slope of 0.5 m/s at each end of the blend, 50 m/s^2.
  CHECK(*std::max_element(b.roughness_mps2.begin(), b.roughness_mps2.end()) == doctest::Approx(50.0));
  // Rows further apart than max_spacing_ns give no roughness.
  CHECK(node::CompareViews(owner, snap, 0, 25'000'000, Source::kView, 500'000'000, 5'000'000).roughness_mps2.empty());
}

TEST_CASE("pose log: a full disk ends the log with an error naming the path, not the process") {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  {
    node::PoseLog log("/dev/full", 1, logger);
    protocol::EntityState e;
    for (int i = 0; i < 2000; ++i) {
      e.id = static_cast<uint64_t>(i);
      log.Own(e);
    }
    CHECK(log.Rows() < 2000);
  }
  CHECK(out.str().find("pose log '/dev/full': write failed") != std::string::npos);
}

TEST_CASE("pose log: the view error from an owner's and an observer's logs is the error against the owner's truth") {
  TempDir dir;
  const auto p = FreePorts(4);
  const std::string session = dir.Write(
      "session.toml", "[session]\nname = \"pose-log-test\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                          std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                          std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                          "\nstatus_interval_s = 0\n[[node]]\nname = \"n1\"\nrole = \"traffic\"\nvehicles = 4\n"
                          "monitor_rate_hz = 50\nstatus_interval_s = 0\n[[node]]\nname = \"obs\"\nrole = \"observer\"\n"
                          "monitor_rate_hz = 50\nstatus_interval_s = 0\n");
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  const std::string own_log = dir.Path() + "/n1.csv", view_log = dir.Path() + "/obs.csv";
  auto n1 = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "n1", "--pose-log", own_log});
  auto obs = process::Child::Spawn(
      {BinDir() + "/platoon-node", "--config", session, "--name", "obs", "--pose-log", view_log, "--pose-log-hz", "40"});
  // The observer sees the four vehicles, then reports 8 more views (4 s). Halfway the owner is stopped for
  // 150 ms, as a loaded machine may stop it: its truth has a gap there, and the view rows in it cannot be judged.
  REQUIRE(obs.WaitForLine("view: 4/4 live, 0 stale", 30s));
  for (int k = 0; k < 8; ++k) {
    REQUIRE(obs.WaitForLine("view: 4/4 live", 10s));
    if (k == 4) {
      n1.Signal(SIGSTOP);
      std::this_thread::sleep_for(150ms);
      n1.Signal(SIGCONT);
    }
  }
  for (auto* c : {&obs, &n1}) {
    c->Signal(SIGTERM);
    REQUIRE(c->WaitForLine("SUMMARY", 10s));
    CHECK(WaitForStopped(*c, c == &obs ? "obs" : "n1") == std::optional<int>(0));
  }
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  CHECK(WaitForStopped(server, "server") == std::optional<int>(0));
  CheckNoErrorLines(n1, "n1");
  CheckNoErrorLines(obs, "obs");

  const auto own = node::ReadPoseLog(own_log);
  const auto view = node::ReadPoseLog(view_log);
  config::NodeDef owner;
  owner.name = "n1";
  owner.role = protocol::Role::kTraffic;
  owner.vehicles = 4;
  // The owner's rows are its truth at its steps.
  size_t own_rows = 0;
  for (const auto& r : own) {
    if (r.source != node::PoseRow::Source::kOwn) continue;
    ++own_rows;
    const auto truth = node::TrafficTruth(owner, static_cast<uint32_t>(r.id & 0xffff), r.sim_ns);
    REQUIRE((r.position_m - truth.kinematics.pose.position_m).norm() < 1e-5);
  }
  CHECK(own_rows > 4 * 100 * 4);  // 4 vehicles at 100 Hz for more than 4 s
  REQUIRE_FALSE(view.empty());
  // The judged rows: from 2 s after the first view on, against the owner's rows no more than two steps apart.
  const int64_t from = view.front().sim_ns + 2'000'000'000;
  const auto judged = node::CompareViews(own, view, from, 25'000'000);
  size_t after = 0;
  double error_max = 0;
  for (const auto& r : view)
    if (r.source == node::PoseRow::Source::kView && r.sim_ns >= from) ++after;
  CHECK(after > 4 * 40 * 1);  // 4 vehicles at 40 Hz for more than a second
  // The observer stopped first, so every view row lies between two of the owner's steps; it is judged
  // unless those two steps are more than 25 ms apart (a real-time module late by more than one period
  // skips, so a loaded machine leaves such gaps in the owner's truth). Count those rows from the owner's log.
  std::map<uint64_t, std::vector<int64_t>> steps;
  for (const auto& r : own)
    if (r.source == node::PoseRow::Source::kOwn) steps[r.id].push_back(r.sim_ns);
  size_t in_gaps = 0;
  int64_t owner_gap_max = 0;
  for (auto& [id, t] : steps) {
    std::sort(t.begin(), t.end());
    for (size_t k = 1; k < t.size(); ++k)
      if (t[k] >= from) owner_gap_max = std::max(owner_gap_max, t[k] - t[k - 1]);
  }
  for (const auto& r : view) {
    if (r.source != node::PoseRow::Source::kView || r.sim_ns < from) continue;
    const auto& t = steps[r.id];
    const auto next = std::lower_bound(t.begin(), t.end(), r.sim_ns);
    REQUIRE(next != t.end());
    REQUIRE(next != t.begin());
    if (*next != r.sim_ns && *next - *(next - 1) > 25'000'000) ++in_gaps;
  }
  MESSAGE("the owner's longest step gap in the judged time: " << owner_gap_max / 1e6 << " ms; view rows in gaps over 25 ms: "
                                                              << in_gaps);
  CHECK(owner_gap_max >= 140'000'000);  // the stop
  CHECK(in_gaps >= 4 * 4);                // 4 vehicles at 40 Hz for 100 ms and more
  CHECK(judged.unmatched == in_gaps);
  CHECK(judged.errors_m.size() * 4 >= after * 3);  // the owner kept most of its steps
  REQUIRE(judged.errors_m.size() + judged.unmatched == after);
  // Each judged error equals the error against the computed truth, to the interpolation between two
  // 10 ms steps on the stadium's bends (v^2 dt^2 / (8 r) < 1 mm).
  double worst_difference = 0;
  for (size_t k = 0; k < judged.rows.size(); ++k) {
    const auto& r = view[judged.rows[k]];
    const auto truth = node::TrafficTruth(owner, static_cast<uint32_t>(r.id & 0xffff), r.sim_ns);
    const double direct = (r.position_m - truth.kinematics.pose.position_m).norm();
    worst_difference = std::max(worst_difference, std::abs(judged.errors_m[k] - direct));
    error_max = std::max(error_max, direct);
  }
  MESSAGE("judged " << judged.errors_m.size() << " view rows; largest difference to the computed truth "
                    << worst_difference * 1e3 << " mm; error max " << error_max * 100 << " cm");
  CHECK(worst_difference < 1e-3);
  // And the figure itself is the observer's usual one (the send threshold is 5 cm).
  CHECK(*std::max_element(judged.errors_m.begin(), judged.errors_m.end()) < 0.10);
}
