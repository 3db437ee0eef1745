// OpenSCENARIO files run as lock-step sessions in one process (the scenario system, road traffic's command
// execution): a linear speed action reaches its target at dv / a, a sinusoidal lane change ends on the target
// lane's centre after its duration, a cut-in fires at the analytic time and the same step in two runs, a lead
// car brakes at a headway condition, a driver seat takes Ego and the triggers react to its car. Fixtures in tests/data/scenarios/, figures computed in their comments.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/server/scenario_system.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace platoon::testing {
namespace osc_session_test_detail {

std::string Dir() { return std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios"; }

// A lock-step session at 100 Hz around one fixture, ending at `end_s`.
std::string SessionText(const std::string& fixture, double end_s) {
  return "[session]\nname = \"osc\"\nmode = \"lockstep\"\nstep_hz = 100\nend_s = " + std::to_string(end_s) +
         "\n[scenario]\nfile = \"" + Dir() + "/" + fixture + "\"\n";
}

struct Sample {
  int64_t sim_ns = 0;
  double speed_mps = 0;
  Vec3 position_m = Vec3::Zero();
};

struct OscRun {
  std::vector<server::ScenarioFiring> firings;
  std::map<uint64_t, protocol::LoggedEvent> events;
  std::map<uint64_t, std::vector<Sample>> tracks;  // per vehicle id, every step
  config::SessionDef session;
  uint64_t server_hash = 0;

  const server::ScenarioFiring* Fired(const std::string& name) const {
    for (const auto& f : firings)
      if (f.name == name) return &f;
    return nullptr;
  }
};

OscRun RunText(const std::string& text);

OscRun RunOsc(const std::string& fixture, double end_s) { return RunText(SessionText(fixture, end_s)); }

OscRun RunText(const std::string& text) {
  OscRun run;
  std::shared_ptr<server::ScenarioSystem> system;
  InProcessOptions options;
  options.publish_every_step = true;
  options.setup_core = [&](server::WorldCore& core) {
    system = server::InstallScenario(core, std::make_shared<spdlog::logger>("osc", std::make_shared<spdlog::sinks::null_sink_mt>()));
  };
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.events) run.events.emplace(e.sequence, e);
    if (w.step == 0) return;
    for (const auto& e : w.entities)
      run.tracks[e.id].push_back(Sample{e.kinematics.stamp_ns, e.kinematics.velocity_mps.norm(), e.kinematics.pose.position_m});
  };
  run.session = config::LoadSessionText(text, Dir() + "/session.toml");
  config::ValidateSession(run.session);
  run.server_hash = RunInProcess(run.session, 1, options).server_hash;
  REQUIRE(system);
  run.firings.assign(system->Firings().begin(), system->Firings().end());
  return run;
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace osc_session_test_detail

using namespace osc_session_test_detail;

TEST_CASE("osc session: a linear speed action of rate a reaches its target at dv over a within one step") {
  const OscRun run = RunOsc("linear_speed.xosc", 10);
  const auto* f = run.Fired("speed_up");
  REQUIRE(f);
  // SimulationTime > 2 s (rising): the first 10 ms step after 2 s.
  CHECK(Seconds(f->sim_time_ns) == doctest::Approx(2.01).epsilon(1e-9));
  const auto& car = run.tracks.at(VehicleId("Car", 0));
  // From 10 m/s to 72 / 3.6 = 20 m/s at 2 m/s^2: 5 s after the firing.
  const double expected_s = Seconds(f->sim_time_ns) + (20.0 - 10.0) / 2.0;
  double reached_s = -1;
  for (const auto& s : car)
    if (reached_s < 0 && std::abs(s.speed_mps - 20.0) < 1e-6) reached_s = Seconds(s.sim_ns);
  REQUIRE(reached_s > 0);
  CHECK(std::abs(reached_s - expected_s) <= 0.01 + 1e-9);
  // Half-way it is half-way: 15 m/s at 2.5 s after the firing, or one step (0.02 m/s) further: the node carries the
  // command out before it computes the step that ends at the firing's sim time.
  for (const auto& s : car)
    if (std::abs(Seconds(s.sim_ns) - (Seconds(f->sim_time_ns) + 2.5)) < 1e-6) {
      CHECK(s.speed_mps >= 15.0 - 1e-6);
      CHECK(s.speed_mps <= 15.02 + 1e-6);
    }
  // It holds the target afterwards.
  CHECK(car.back().speed_mps == doctest::Approx(20.0).epsilon(1e-6));
  // The event after it (completeState of speed_up) fires when its 5 s are over, and sets the parameter.
  const auto* after = run.Fired("after");
  REQUIRE(after);
  CHECK(std::abs(Seconds(after->sim_time_ns) - expected_s) <= 0.01 + 1e-9);
  bool param = false;
  for (const auto& [seq, e] : run.events)
    param = param || (e.kind == protocol::LoggedEvent::Kind::kParam && e.text == "scenario.Rate = 0.5");
  CHECK(param);
}

TEST_CASE("osc session: a sinusoidal lane change ends on the target lane's centre after its duration") {
  const OscRun run = RunOsc("lane_change.xosc", 7);
  const auto* f = run.Fired("change");
  REQUIRE(f);
  const road::Road road = road::SessionRoad(run.session.road);
  const double from = road.LaneCenterOffset(-1), to = road.LaneCenterOffset(-2);
  const auto& car = run.tracks.at(VehicleId("Car", 0));
  const double t0 = Seconds(f->sim_time_ns);
  // The first step on lane -2's centre: 4 s after the firing, within a step.
  double arrived_s = -1;
  for (const auto& s : car) {
    const double t = road.Project(s.position_m).t_m;
    if (arrived_s < 0 && std::abs(t - to) < 1e-6) arrived_s = Seconds(s.sim_ns);
  }
  REQUIRE(arrived_s > 0);
  CHECK(std::abs(arrived_s - (t0 + 4.0)) <= 0.01 + 1e-9);
  // It stays there, and a quarter of the way it has moved (1 - cos(pi / 4)) / 2 of the spacing (a cubic would be
  // 0.15625): the shape is the sinusoid, measured within the progress of one step.
  CHECK(std::abs(road.Project(car.back().position_m).t_m - to) < 1e-6);
  bool checked = false;
  for (const auto& s : car) {
    const double u = (Seconds(s.sim_ns) - t0) / 4.0;
    if (std::abs(u - 0.25) > 1e-6) continue;
    const double moved = (road.Project(s.position_m).t_m - from) / (to - from);
    // The node carries the command out before it computes the step that ends at the firing's sim time: the
    // state at t has moved along the shape to u or one step further.
    const double u_late = u + 0.01 / 4.0;
    const double lo = (1 - std::cos(M_PI * u)) / 2, hi = (1 - std::cos(M_PI * u_late)) / 2;
    CHECK(moved >= lo - 1e-6);
    CHECK(moved <= hi + 1e-6);
    checked = true;
  }
  CHECK(checked);
}

TEST_CASE("osc session: a cut-in fires at the analytic distance and at the same step in two runs") {
  const OscRun a = RunOsc("cut_in.xosc", 12);
  const OscRun b = RunOsc("cut_in.xosc", 12);
  const auto* fa = a.Fired("cut_in");
  const auto* fb = b.Fired("cut_in");
  REQUIRE(fa);
  REQUIRE(fb);
  CHECK(fa->sim_time_ns == fb->sim_time_ns);
  CHECK(fa->detail == fb->detail);
  CHECK(a.server_hash == b.server_hash);
  // 5 + 3 t > 15 m: t > 10 / 3 s; the first step after it (both cars drive free at their start speeds).
  CHECK(Seconds(fa->sim_time_ns) > 10.0 / 3.0);
  CHECK(Seconds(fa->sim_time_ns) <= 10.0 / 3.0 + 0.02 + 1e-9);
  // The cutter ends in Ego's lane, ahead of it, 3 s later; Ego, following it by IDM, slows down.
  const road::Road road = road::SessionRoad(a.session.road);
  const auto& cutter = a.tracks.at(VehicleId("Cutter", 0));
  const auto& ego = a.tracks.at(VehicleId("Ego", 0));
  const double done_s = Seconds(fa->sim_time_ns) + 3.0 + 0.02;
  for (size_t i = 0; i < cutter.size(); ++i) {
    if (Seconds(cutter[i].sim_ns) < done_s) continue;
    CHECK(road.Project(cutter[i].position_m).lane == -1);
    CHECK(std::abs(road.Project(cutter[i].position_m).t_m - road.LaneCenterOffset(-1)) < 1e-6);
    break;
  }
  CHECK(road.Project(ego.back().position_m).lane == -1);
  CHECK(ego.back().speed_mps < 25.0);
  // The cut-in's completion and Ego's headway below 2 s fire close_behind, which changes the parameter.
  const auto* close = a.Fired("close_behind");
  REQUIRE(close);
  CHECK(close->sim_time_ns >= fa->sim_time_ns + 3'000'000'000);
  bool param = false;
  for (const auto& [seq, e] : a.events)
    param = param || (e.kind == protocol::LoggedEvent::Kind::kParam && e.text == "scenario.EgoSpeed = 24");
  CHECK(param);
}

TEST_CASE("osc session: a lead car brakes at the rate of its speed action when the headway falls below its threshold") {
  const OscRun a = RunOsc("lead_brake.xosc", 25);
  const OscRun b = RunOsc("lead_brake.xosc", 25);
  const auto* f = a.Fired("lead_brakes");
  REQUIRE(f);
  REQUIRE(b.Fired("lead_brakes"));
  CHECK(f->sim_time_ns == b.Fired("lead_brakes")->sim_time_ns);
  // The headway that fired it: just below 2.5 s (it falls by less than 0.2 s per second: at most 5 m/s closing at
  // about 25 m/s, so by less than 0.002 s a step).
  const auto at = f->detail.find("\"time_headway_s\":");
  REQUIRE(at != std::string::npos);
  const double thw = std::atof(f->detail.c_str() + at + 17);
  CHECK(thw < 2.5);
  CHECK(thw > 2.49);
  // From then on the lead car loses 6 m/s each second (linear, rate 6 m/s^2) down to 5 m/s.
  const auto& lead = a.tracks.at(VehicleId("Lead", 0));
  double v_fire = -1;
  for (const auto& s : lead)
    if (s.sim_ns == f->sim_time_ns) v_fire = s.speed_mps;
  REQUIRE(v_fire > 0);
  for (const auto& s : lead) {
    const double dt = Seconds(s.sim_ns - f->sim_time_ns);
    if (std::abs(dt - 1.0) < 1e-6) CHECK(std::abs(s.speed_mps - (v_fire - 6.0)) <= 0.06 + 1e-9);
  }
  CHECK(lead.back().speed_mps == doctest::Approx(5.0).epsilon(1e-6));
}

TEST_CASE("osc session: a seat taking Ego is placed by Init and the cut-in reacts to the seat's car") {
  // A driver seat (the model driver stands in for a person: scripted, deterministic) takes Ego.
  const std::string text = SessionText("cut_in.xosc", 9) + R"(seats = ["Ego=driver"]

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
headless = true
[node.driver_model]
desired_speed_mps = 25
)";
  // [scenario] must come after the node it names: move it to the end.
  const auto at = text.find("[scenario]");
  const auto node = text.find("[[node]]");
  const std::string session = text.substr(0, at) + text.substr(node) + "\n" + text.substr(at, node - at);
  const OscRun a = RunText(session);
  const OscRun b = RunText(session);
  // The seat starts where Init puts Ego: lane -1 at s = 100 m, 25 m/s (x = s on the straight road).
  const auto& seat = a.tracks.at(VehicleId("driver", 0));
  REQUIRE_FALSE(seat.empty());
  CHECK(seat.front().position_m.x() == doctest::Approx(100.0).epsilon(0.01));
  CHECK(seat.front().position_m.y() == doctest::Approx(-1.75).epsilon(0.02));
  CHECK(seat.front().speed_mps == doctest::Approx(25.0).epsilon(0.02));
  CHECK(a.tracks.count(VehicleId("Ego", 0)) == 0);  // no traffic node for Ego
  // The cut-in fires on the distance to the seat's car, the same step in two runs, near 10 / 3 s.
  const auto* f = a.Fired("cut_in");
  REQUIRE(f);
  REQUIRE(b.Fired("cut_in"));
  CHECK(f->sim_time_ns == b.Fired("cut_in")->sim_time_ns);
  CHECK(f->detail.find("\"other\"") == std::string::npos);
  CHECK(Seconds(f->sim_time_ns) > 2.5);
  CHECK(Seconds(f->sim_time_ns) < 4.5);
  // The event after it waits for the seat's headway to the cutter: its condition names the seat's car.
  const auto* close = a.Fired("close_behind");
  REQUIRE(close);
  CHECK(close->detail.find("\"entity_name\":\"driver\"") != std::string::npos);
}


TEST_CASE("osc session: two vehicles synchronized to one point arrive within 10 ms of each other") {
  // synchronize.xosc: Ego at 20 m/s reaches x = 450 m at t = 20 s; Other, synchronized at 1 s, reaches x = 450 m in
  // lane -2 then, at Ego's speed. Run twice: the same firing and the same hash.
  const OscRun a = RunOsc("synchronize.xosc", 22);
  const OscRun b = RunOsc("synchronize.xosc", 22);
  const auto* f = a.Fired("go");
  REQUIRE(f);
  REQUIRE(b.Fired("go"));
  CHECK(f->sim_time_ns == b.Fired("go")->sim_time_ns);
  CHECK(a.server_hash == b.server_hash);
  CHECK(Seconds(f->sim_time_ns) == doctest::Approx(1.01).epsilon(1e-9));
  // When each crosses x = 450 m, interpolated between 10 ms samples.
  auto crossing = [](const std::vector<Sample>& track, double x, double* speed) {
    for (size_t i = 1; i < track.size(); ++i)
      if (track[i - 1].position_m.x() < x && track[i].position_m.x() >= x) {
        const double u = (x - track[i - 1].position_m.x()) / (track[i].position_m.x() - track[i - 1].position_m.x());
        *speed = track[i - 1].speed_mps + u * (track[i].speed_mps - track[i - 1].speed_mps);
        return Seconds(track[i - 1].sim_ns) + u * Seconds(track[i].sim_ns - track[i - 1].sim_ns);
      }
    return -1.0;
  };
  double v_ego = 0, v_other = 0;
  const double t_ego = crossing(a.tracks.at(VehicleId("Ego", 0)), 450.0, &v_ego);
  const double t_other = crossing(a.tracks.at(VehicleId("Other", 0)), 450.0, &v_other);
  REQUIRE(t_ego > 0);
  REQUIRE(t_other > 0);
  MESSAGE("Ego at x = 450 m at " << t_ego << " s, Other at " << t_other << " s (" << v_ego << " and " << v_other << " m/s)");
  CHECK(t_ego == doctest::Approx(20.0).epsilon(1e-3));  // 50 + 20 t = 450
  CHECK(std::abs(t_ego - t_other) < 0.010);
  // Other arrives at the master's speed (RelativeSpeedToMaster delta 0), in lane -2, and its plan went faster in
  // between (a middle speed of 2 d / T - (v0 + vf) / 2 = 27.24 m/s).
  CHECK(v_other == doctest::Approx(v_ego).epsilon(0.01));
  double top = 0;
  for (const auto& s : a.tracks.at(VehicleId("Other", 0))) top = std::max(top, s.speed_mps);
  CHECK(top == doctest::Approx(27.24).epsilon(0.01));
  const road::Road road = road::SessionRoad(a.session.road);
  CHECK(road.Project(a.tracks.at(VehicleId("Other", 0)).back().position_m).lane == -2);
}

TEST_CASE("osc session: a timed polyline trajectory passes each vertex at its time and ends on its lane") {
  // trajectory.xosc: from 1.01 s the car passes (100, -1.75), (144, -3.5), (182, -5.25), (262, -5.25) 1.5, 3.5, 5.5
  // and 9.5 s after the start of the action.
  const OscRun a = RunOsc("trajectory.xosc", 12);
  const auto* f = a.Fired("go");
  REQUIRE(f);
  const double t0 = Seconds(f->sim_time_ns);
  const auto& car = a.tracks.at(VehicleId("Car", 0));
  const double vx[] = {100, 144, 182, 262}, vy[] = {-1.75, -3.5, -5.25, -5.25}, vt[] = {1.5, 3.5, 5.5, 9.5};
  int passed = 0;
  for (int k = 0; k < 4; ++k)
    for (const auto& s : car)
      if (std::abs(Seconds(s.sim_ns) - (t0 + vt[k])) < 1e-6) {
        MESSAGE("vertex " << k << ": at " << s.position_m.x() << ", " << s.position_m.y() << " (want " << vx[k] << ", "
                          << vy[k] << ")");
        CHECK(std::abs(s.position_m.x() - vx[k]) < 0.05);
        CHECK(std::abs(s.position_m.y() - vy[k]) < 0.01);
        ++passed;
      }
  CHECK(passed == 4);
  // Between vertices it is on the straight segment joining them (linear in x on this straight road).
  for (const auto& s : car) {
    const double x = s.position_m.x();
    if (x <= vx[0] || x >= vx[3]) continue;
    int k = 0;
    while (x > vx[k + 1]) ++k;
    const double y = vy[k] + (x - vx[k]) / (vx[k + 1] - vx[k]) * (vy[k + 1] - vy[k]);
    CHECK(std::abs(s.position_m.y() - y) < 1e-6);
  }
  // Afterwards it stays on lane -2's centre, at the last piece's speed (80 m over 4 s).
  const road::Road road = road::SessionRoad(a.session.road);
  CHECK(road.Project(car.back().position_m).lane == -2);
  CHECK(std::abs(road.Project(car.back().position_m).t_m - road.LaneCenterOffset(-2)) < 1e-9);
  CHECK(car.back().speed_mps == doctest::Approx(20.0).epsilon(0.02));
}

}  // namespace platoon::testing

namespace platoon::testing {
using namespace osc_session_test_detail;

TEST_CASE("osc session: an entity added at 5 s enters where AddEntityAction puts it, Ego leaves at 10 s, a MiscObject is a scene box") {
  const OscRun run = RunOsc("entities.xosc", 14);
  // The cone: a static box of the session's scene, on lane -2's centre at s = 300 m, its bounding box's size.
  REQUIRE(run.session.scene.boxes.size() == 1);
  const auto& box = run.session.scene.boxes.front();
  CHECK(box.position_m.x() == doctest::Approx(300.0));
  CHECK(box.position_m.y() == doctest::Approx(-5.25));
  CHECK(box.size_m.x() == doctest::Approx(0.4));
  CHECK(box.size_m.z() == doctest::Approx(0.7));
  CHECK(box.id == scenario::kOscBoxIdBase);
  const uint64_t ego = VehicleId("Ego", 0), late = VehicleId("Late", 0);
  REQUIRE(run.tracks.count(ego));
  REQUIRE(run.tracks.count(late));
  const auto& e = run.tracks.at(ego);
  const auto& l = run.tracks.at(late);
  MESSAGE("Ego from ", Seconds(e.front().sim_ns), " s to ", Seconds(e.back().sim_ns), " s; Late from ",
          Seconds(l.front().sim_ns), " s at x = ", l.front().position_m.x(), ", y = ", l.front().position_m.y(),
          " to ", Seconds(l.back().sim_ns), " s at ", l.back().speed_mps, " m/s");
  // Late is absent until the event at 5 s (within a step or two of it), then enters at s = 100 m of lane -2.
  CHECK(Seconds(l.front().sim_ns) > 5.0);
  CHECK(Seconds(l.front().sim_ns) < 5.05);
  CHECK(l.front().position_m.x() == doctest::Approx(100.0).epsilon(0.01));
  CHECK(l.front().position_m.y() == doctest::Approx(-5.25).epsilon(0.001));
  CHECK(Seconds(l.back().sim_ns) > 13.9);
  CHECK(l.back().speed_mps == doctest::Approx(12.0).epsilon(0.02));
  // Ego is there from the start and gone after the event at 10 s.
  CHECK(Seconds(e.front().sim_ns) < 0.05);
  CHECK(Seconds(e.back().sim_ns) > 9.95);
  CHECK(Seconds(e.back().sim_ns) < 10.1);
  REQUIRE(run.Fired("add_late"));
  REQUIRE(run.Fired("delete_ego"));
}


TEST_CASE("osc session: a pedestrian starts to cross when Ego comes within 40 m, walks its speed ramp and stops on the lane") {
  const OscRun run = RunOsc("pedestrian.xosc", 10);
  // Mapped: each pedestrian a pedestrians node, walking straight on from its start.
  const config::NodeDef* walker = run.session.FindNode("Walker");
  REQUIRE(walker);
  CHECK(walker->traffic_model == "pedestrians");
  REQUIRE(walker->pedestrians.size() == 1);
  const auto& w0 = walker->pedestrians.front().waypoints_m;
  CHECK(w0[0].x() == doctest::Approx(100.0));
  CHECK(w0[0].y() == doctest::Approx(1.75));
  CHECK(w0[1].y() < w0[0].y() - 100.0);  // facing -y, across the road
  CHECK(w0[1].x() == doctest::Approx(100.0).epsilon(1e-9));
  const uint64_t ped = VehicleId("Walker", 0), ego = VehicleId("Ego", 0), by = VehicleId("Bystander", 0);
  REQUIRE(run.tracks.count(ped));
  REQUIRE(run.tracks.count(ego));
  REQUIRE(run.tracks.count(by));
  // The start trigger at (80 - 10 t)^2 + 7^2 = 40^2: t = 4.0617 s, within the step it is seen in.
  const auto* walk = run.Fired("walk");
  REQUIRE(walk);
  const double t_f = Seconds(walk->sim_time_ns);
  const double expected = 8.0 - std::sqrt(1551.0) / 10.0;
  MESSAGE("walk fired at ", t_f, " s (analytic ", expected, " s)");
  CHECK(t_f >= expected - 1e-9);
  CHECK(t_f <= expected + 0.021);
  // Standing still before, then 0.75 tau^2 for tau <= 1 and 0.75 + 1.5 (tau - 1) after, until the stop.
  const auto* halt = run.Fired("halt");
  REQUIRE(halt);
  const double t_h = Seconds(halt->sim_time_ns);
  MESSAGE("halt fired ", t_h - t_f, " s after the walk (analytic 2.7 s)");
  CHECK(t_h - t_f == doctest::Approx(2.7).epsilon(0.01));
  int checked = 0;
  double worst = 0;
  for (const Sample& s : run.tracks.at(ped)) {
    const double t = Seconds(s.sim_ns);
    const double tau = t - t_f;
    if (t < t_f) {
      CHECK(s.position_m.y() == doctest::Approx(1.75));
      CHECK(s.speed_mps == doctest::Approx(0.0));
      continue;
    }
    if (t >= t_h - 1e-9) {  // stopped at once (a step shape) from the halt's instant on
      CHECK(s.speed_mps == doctest::Approx(0.0));
      continue;
    }
    const double walked = tau <= 1.0 ? 0.75 * tau * tau : 0.75 + 1.5 * (tau - 1.0);
    const double speed = tau <= 1.0 ? 1.5 * tau : 1.5;
    worst = std::max(worst, std::abs(s.position_m.y() - (1.75 - walked)));
    CHECK(s.speed_mps == doctest::Approx(speed).epsilon(1e-6));
    CHECK(s.position_m.x() == doctest::Approx(100.0));
    ++checked;
  }
  MESSAGE(checked, " samples while walking, worst error across the road ", worst, " m");
  CHECK(checked > 250);
  CHECK(worst < 1e-6);
  // It stands where the stop found it: within the 0.2 m of lane -1's centre it walked into.
  const Sample& last = run.tracks.at(ped).back();
  CHECK(Seconds(last.sim_ns) > 9.9);
  CHECK(last.position_m.y() == doctest::Approx(-1.75).epsilon(0.2 / 1.75));
  CHECK(last.position_m.y() > -1.75);
  // The bystander stands at (150, 8) and leaves at 6 s.
  const auto& b = run.tracks.at(by);
  CHECK(b.front().position_m.x() == doctest::Approx(150.0));
  CHECK(b.front().position_m.y() == doctest::Approx(8.0));
  CHECK(b.front().speed_mps == doctest::Approx(0.0));
  CHECK(Seconds(b.back().sim_ns) > 5.95);
  CHECK(Seconds(b.back().sim_ns) < 6.1);
  // The same firings at the same steps, and the same hash, a second time.
  const OscRun again = RunOsc("pedestrian.xosc", 10);
  REQUIRE(again.Fired("walk"));
  REQUIRE(again.Fired("halt"));
  CHECK(again.Fired("walk")->sim_time_ns == walk->sim_time_ns);
  CHECK(again.Fired("halt")->sim_time_ns == halt->sim_time_ns);
  CHECK(again.server_hash == run.server_hash);
}

}  // namespace platoon::testing
