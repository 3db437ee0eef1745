// The built parts a session file reaches (docs/VEHICLES.md, docs/SENSORS.md, docs/BULLET_VEHICLE.md):
// an objects sensor on a sensor host, a Bullet driver seat that reverses, the controller layer (ABS,
// speed limiter) in driver seats and route traffic, route traffic following its path by pure pursuit,
// and pedestrians walking their paths. Each runs as a lock-step session in one process
// (tests/support/in_process_session.hpp) and is judged on what the world (or a sensor stream) shows;
// configs/parts.toml goes through `platoon check` and `platoon run` as processes.
#include "../support/in_process_session.hpp"
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/route_traffic.hpp"
#include "platoon/process/child.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace platoon::testing {
namespace {

using namespace std::chrono_literals;

// One entity as the world showed it at one step.
struct Seen {
  int64_t t_ns = 0;
  protocol::EntityState state;
};

// Runs `text` in-process (every state sent at every step) and returns each entity's states as the
// server broadcast them, in order.
std::map<uint64_t, std::vector<Seen>> RunAndWatch(const config::SessionDef& session, InProcessOptions options = {}) {
  std::map<uint64_t, std::vector<Seen>> seen;
  options.publish_every_step = true;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.entities) {
      auto& track = seen[e.id];
      if (track.empty() || track.back().t_ns < e.kinematics.stamp_ns) track.push_back(Seen{e.kinematics.stamp_ns, e});
    }
  };
  const InProcessResult r = RunInProcess(session, 1, options);
  REQUIRE(r.sim_time_ns == static_cast<int64_t>(session.step.end_s * 1e9 + 0.5));
  return seen;
}

config::SessionDef Load(const std::string& text, const std::string& name) {
  config::SessionDef s = config::LoadSessionText(text, name);
  config::ValidateSession(s);
  return s;
}

double YawOf(const Quat& q) {
  const Vec3 f = q * Vec3::UnitX();
  return std::atan2(f.y(), f.x());
}

double WrapAngle(double a) { return std::remainder(a, 2 * M_PI); }

// The message of the ConfigError that loading and validating `text` throws ("" when none).
std::string ConfigErrorOf(const std::string& text) {
  try {
    (void)Load(text, "parts.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("world parts: an objects sensor on a route vehicle reports the pedestrians ahead of it in its frame") {
  const char* text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 4

[[node]]
name = "cars"
role = "traffic"
traffic_model = "route"
vehicles = 1
speed_mps = 5
[node.route]
waypoints = [0, 0,  500, 0]

[[node]]
name = "walkers"
role = "traffic"
traffic_model = "pedestrians"
[[node.pedestrian]]            # crossing 40 m ahead
waypoints = [40, -4,  40, 4]
speed_mps = 1.2
[[node.pedestrian]]            # along the road, 60 m ahead, to the left
waypoints = [60, 6,  70, 6]
speed_mps = 1.4
[[node.pedestrian]]            # behind the car: never in its field of view
waypoints = [-30, 0,  -30, 5]

[[node]]
name = "probe"
role = "sensor"
attach_to = "cars:0"
[[node.sensor]]
id = "objects"
type = "objects"
position = [3.7, 0.0, 0.5]
rate_hz = 10
range_max_m = 150
fov_half_angle_deg = 45
detection_probability = 1.0
position_sigma_m = [0, 0, 0]
position_offset_sigma_m = [0, 0, 0]
velocity_sigma_mps = [0, 0, 0]
velocity_offset_sigma_mps = [0, 0, 0]
)";
  const config::SessionDef session = Load(text, "objects.toml");
  const config::NodeDef& walkers = *session.FindNode("walkers");
  std::vector<protocol::ObjectList> lists;
  InProcessOptions options;
  options.on_data = [&](const protocol::Message& m) {
    if (const auto* l = std::get_if<protocol::ObjectList>(&m)) lists.push_back(*l);
  };
  const auto seen = RunAndWatch(session, options);
  const uint64_t car = VehicleId("cars", 0);
  REQUIRE(seen.count(car));
  // 10 Hz for 4 s.
  CHECK(lists.size() >= 35);
  CHECK(lists.size() <= 41);
  size_t pedestrians_checked = 0;
  std::set<uint32_t> tracks;
  for (const auto& l : lists) {
    // The car's pose at the list's stamp, as the world had it.
    const Seen* at = nullptr;
    for (const auto& s : seen.at(car))
      if (s.t_ns == l.header.stamp_ns) at = &s;
    REQUIRE_MESSAGE(at, "no world state of the car at " << l.header.stamp_ns);
    const Pose& rear = at->state.kinematics.pose;
    const Vec3 sensor = rear.position_m + rear.orientation * Vec3(3.7, 0, 0.5);
    CHECK(l.objects.size() == 2);  // the two ahead; never the one behind
    for (const auto& o : l.objects) {
      tracks.insert(o.track_id);
      CHECK(o.truth_class == 5);   // pedestrian
      CHECK(o.object_class == 5);  // no class rule for pedestrians: the true class
      // The walker's box centre at the stamp, in the sensor frame (yaw ~0 on the straight path).
      const uint32_t index = o.track_id == static_cast<uint32_t>(VehicleId("walkers", 0)) ? 0 : 1;
      const protocol::EntityState w = node::PedestrianTruth(walkers, index, l.header.stamp_ns);
      const Vec3 centre = w.kinematics.pose.position_m + w.kinematics.pose.orientation * Vec3(0.3 * w.box_size_m.x(), 0, 0.5 * w.box_size_m.z());
      const Vec3 expected = rear.orientation.conjugate() * (centre - sensor);
      INFO("walker " << index << " at " << NsToS(l.header.stamp_ns) << " s");
      CHECK((o.position_m - expected).norm() < 0.05);
      ++pedestrians_checked;
    }
  }
  CHECK(pedestrians_checked >= 70);
  CHECK(tracks == std::set<uint32_t>{static_cast<uint32_t>(VehicleId("walkers", 0)), static_cast<uint32_t>(VehicleId("walkers", 1))});
}

TEST_CASE("world parts: a scripted Bullet driver seat drives forward then reverses and the world sees both") {
  TempDir dir;
  const std::string script = dir.Write("forward_back.csv",
                                       "time_s, steer, throttle, brake\n"
                                       "0, 0, 0.6, 0\n4, 0, 0.6, 0\n4.01, 0, 0, 1\n6, 0, 0, 1\n"
                                       "6.01, 0, -0.6, 0\n10, 0, -0.6, 0\n10.01, 0, 0, 1\n12, 0, 0, 1\n");
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 12

[[node]]
name = "bullet"
role = "driver"
vehicle_model = "bullet"
headless = true
input = "scripted:)" + script + R"("
)";
  const config::SessionDef session = Load(text, "bullet.toml");
  node::DriverSeatModule* seat = nullptr;
  InProcessOptions options;
  bool bullet = false;
  options.on_modules = [&](const config::NodeDef&, std::vector<std::unique_ptr<node::Module>>& modules) {
    seat = dynamic_cast<node::DriverSeatModule*>(modules.front().get());
  };
  // Read while the session runs: the modules are gone once RunAndWatch returns.
  options.on_poll = [&](server::WorldCore&, int64_t) {
    if (seat) bullet = seat->Bullet();
  };
  const auto seen = RunAndWatch(session, options);
  REQUIRE(seat);
  CHECK(bullet);
  const auto& track = seen.at(VehicleId("bullet", 0));
  REQUIRE(track.size() > 1000);
  // Progress along the start heading, as the world saw it.
  const Vec3 origin = track.front().state.kinematics.pose.position_m;
  const Vec3 heading = track.front().state.kinematics.pose.orientation * Vec3::UnitX();
  double max_forward = -1e9, min_speed = 0, max_speed = 0, max_abs_z = 0;
  bool reverse_light = false;
  for (const auto& s : track) {
    const auto& k = s.state.kinematics;
    max_forward = std::max(max_forward, (k.pose.position_m - origin).dot(heading));
    const double v = k.velocity_mps.dot(heading);
    min_speed = std::min(min_speed, v);
    max_speed = std::max(max_speed, v);
    max_abs_z = std::max(max_abs_z, std::abs(k.pose.position_m.z() - origin.z()));
    reverse_light = reverse_light || s.state.lights.reverse;
  }
  const double final_forward = (track.back().state.kinematics.pose.position_m - origin).dot(heading);
  MESSAGE("Bullet seat: forward ", max_forward, " m (top ", max_speed, " m/s), then back to ", final_forward,
          " m (", min_speed, " m/s)");
  CHECK(max_forward > 15.0);                  // ~4 s at 0.6 throttle
  CHECK(max_speed > 5.0);
  CHECK(min_speed < -3.0);                    // reversing
  CHECK(final_forward < max_forward - 10.0);  // and it came back a good way
  CHECK(reverse_light);
  CHECK(max_abs_z < 0.15);                    // on its wheels on the ground (pitch moves the rear-axle point a little)
  CHECK(std::abs(track.back().state.kinematics.velocity_mps.norm()) < 0.5);  // braked to rest at the end
}

TEST_CASE("world parts: ABS keeps a braking driver steerable on ice-like friction and the limiter caps speed") {
  TempDir dir;
  // Full brake from 0.5 s; the "turn" seats also steer half left while braking.
  const std::string straight = dir.Write("brake.csv", "0, 0, 0, 0\n0.5, 0, 0, 0\n0.51, 0, 0, 1\n20, 0, 0, 1\n");
  const std::string turn = dir.Write("brake_turn.csv", "0, 0, 0, 0\n0.5, 0, 0, 0\n0.51, 0.5, 0, 1\n20, 0.5, 0, 1\n");
  const std::string floor = dir.Write("floor.csv", "0, 0, 1, 0\n20, 0, 1, 0\n");
  auto seat = [](const std::string& name, double y, const std::string& script, const std::string& extra) {
    return "[[node]]\nname = \"" + name + "\"\nrole = \"driver\"\nheadless = true\ntrack_center = [0, " + std::to_string(y) +
           "]\ninput = \"scripted:" + script + "\"\n" + extra + "\n";
  };
  const std::string low_mu = "start_speed_mps = 20\ntyre_mu = 0.3\n";
  const std::string text = "[session]\nmode = \"lockstep\"\nstep_hz = 100\nend_s = 15\n\n" +
                           seat("locked", 0, straight, low_mu) +
                           seat("abs", 300, straight, low_mu + "[node.controller]\nabs = true\n") +
                           seat("locked_turn", 600, turn, low_mu) +
                           seat("abs_turn", 900, turn, low_mu + "[node.controller]\nabs = true\n") +
                           seat("limited", 1200, floor, "[node.controller]\nspeed_limit_mps = 15\n") +
                           seat("free", 1500, floor, "");
  const config::SessionDef session = Load(text, "controller.toml");
  std::map<std::string, node::DriverSeatModule*> seats;
  InProcessOptions options;
  options.on_modules = [&](const config::NodeDef& n, std::vector<std::unique_ptr<node::Module>>& modules) {
    seats[n.name] = dynamic_cast<node::DriverSeatModule*>(modules.front().get());
  };
  // Read while the session runs: the modules are gone once RunAndWatch returns.
  std::map<std::string, uint64_t> active_steps;
  options.on_poll = [&](server::WorldCore&, int64_t) {
    for (const auto& [name, seat] : seats)
      if (seat) active_steps[name] = seat->ControllerActiveSteps();
  };
  const auto seen = RunAndWatch(session, options);
  // Per seat: distance from the brake point to rest, heading change, top speed.
  struct Figures {
    double stop_m = 0, turn_rad = 0, top_mps = 0;
  };
  std::map<std::string, Figures> f;
  for (const char* name : {"locked", "abs", "locked_turn", "abs_turn", "limited", "free"}) {
    const auto& track = seen.at(VehicleId(name, 0));
    const Seen* brake_point = nullptr;
    for (const auto& s : track) {
      if (!brake_point && s.t_ns >= 510'000'000) brake_point = &s;
      f[name].top_mps = std::max(f[name].top_mps, s.state.kinematics.velocity_mps.norm());
    }
    REQUIRE(brake_point);
    const auto& end = track.back().state.kinematics;
    f[name].stop_m = (end.pose.position_m - brake_point->state.kinematics.pose.position_m).norm();
    f[name].turn_rad = std::abs(WrapAngle(YawOf(end.pose.orientation) - YawOf(brake_point->state.kinematics.pose.orientation)));
    MESSAGE(std::string(name), ": stop ", f[name].stop_m, " m, heading change ", f[name].turn_rad * 180 / M_PI, " deg, top ",
            f[name].top_mps, " m/s, controller active in ", active_steps[name], " steps");
  }
  // Everyone braking came to rest.
  for (const char* name : {"locked", "abs", "locked_turn", "abs_turn"})
    CHECK(seen.at(VehicleId(name, 0)).back().state.kinematics.velocity_mps.norm() < 0.1);
  // mu 0.3 from 20 m/s. Locked, both axles slide at 0.8 mu. With ABS the front axle brakes at its peak
  // friction and, with 75 % of the brake torque in front, the rear below its own: about the same distance
  // (the brake balance, not the ABS, sets it), never longer, never shorter than the friction allows.
  CHECK(f["abs"].stop_m < 1.02 * f["locked"].stop_m);
  CHECK(f["abs"].stop_m > 20.0 * 20.0 / (2 * 0.3 * 9.81) * 0.85);
  // Steering while braking: the locked front axle hardly steers the car, the ABS one does.
  CHECK(f["abs_turn"].turn_rad > 3 * f["locked_turn"].turn_rad);
  CHECK(f["abs_turn"].turn_rad > 0.25);
  CHECK(active_steps["abs"] > 100);
  CHECK(active_steps["locked"] == 0);
  // The limiter holds 15 m/s at full throttle; the free car goes well past it.
  CHECK(f["limited"].top_mps < 15.5);
  CHECK(f["limited"].top_mps > 14.0);
  CHECK(f["free"].top_mps > 25.0);
}

TEST_CASE("world parts: route vehicles follow a road lane and a closed waypoint route within a lateral bound") {
  // A ring of 72 waypoints (radius 60 m) and the right lane of a generated curvy road.
  std::string ring;
  for (int k = 0; k < 72; ++k)
    ring += (k ? ",  " : "") + std::to_string(400 + 60 * std::cos(k * M_PI / 36)) + ", " + std::to_string(60 * std::sin(k * M_PI / 36));
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 40

[road]
generate_length_m = 1500
seed = 3
lanes = 2

[[node]]
name = "lane"
role = "traffic"
traffic_model = "route"
vehicles = 3
speed_mps = 15
[node.route]
lane = -1
from_s_m = 50
spacing_m = 30

[[node]]
name = "ring"
role = "traffic"
traffic_model = "route"
vehicles = 2
speed_mps = 12
[node.route]
waypoints = [)" + ring + R"(]
loop = true
spacing_m = 100
[node.controller]
speed_limit_mps = 9
)";
  const config::SessionDef session = Load(text, "route.toml");
  const auto seen = RunAndWatch(session);
  for (const char* name : {"lane", "ring"}) {
    const config::NodeDef& n = *session.FindNode(name);
    const node::Polyline path = node::RoutePath(session, n);
    for (int i = 0; i < n.vehicles; ++i) {
      const auto& track = seen.at(VehicleId(name, static_cast<uint32_t>(i)));
      double max_lateral = 0, travelled = 0, top = 0;
      for (size_t k = 1; k < track.size(); ++k) {
        const auto& kin = track[k].state.kinematics;
        travelled += (kin.pose.position_m - track[k - 1].state.kinematics.pose.position_m).head<2>().norm();
        top = std::max(top, kin.velocity_mps.norm());
        if (track[k].t_ns >= 5'000'000'000) max_lateral = std::max(max_lateral, std::abs(path.Project(kin.pose.position_m).lateral_m));
      }
      MESSAGE(std::string(name), ":", i, " travelled ", travelled, " m, top ", top, " m/s, max lateral error ", max_lateral, " m");
      // Measured: 0.23 .. 0.27 m on the lane (clothoids, 13 m look-ahead at 15 m/s), 0.12 m on the ring.
      CHECK(max_lateral < (std::string(name) == "lane" ? 0.4 : 0.2));
      if (std::string(name) == "lane") {
        CHECK(travelled > 0.85 * 15 * 40);
      } else {
        CHECK(top < 9.5);  // the controller layer's limiter, not the route's 12 m/s
        CHECK(travelled > 0.85 * 9 * 40);
      }
    }
  }
}

TEST_CASE("world parts: route vehicles lap a circuit lane with loop = true") {
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 90

[road]
file = ")" + std::string(PLATOON_SOURCE_DIR) + R"(/configs/roads/ring.toml"

[[node]]
name = "circuit"
role = "traffic"
traffic_model = "route"
vehicles = 2
speed_mps = 15
[node.route]
lane = -1
loop = true
spacing_m = 500
)";
  const config::SessionDef session = Load(text, "circuit.toml");
  const node::Polyline path = node::RoutePath(session, *session.FindNode("circuit"));
  CHECK(path.Loop());
  CHECK(path.Length() == doctest::Approx(1128.3).epsilon(0.01));
  const auto seen = RunAndWatch(session);
  for (uint32_t i = 0; i < 2; ++i) {
    const auto& track = seen.at(VehicleId("circuit", i));
    double travelled = 0, max_lateral = 0;
    for (size_t k = 1; k < track.size(); ++k) {
      const Vec3& p = track[k].state.kinematics.pose.position_m;
      travelled += (p - track[k - 1].state.kinematics.pose.position_m).head<2>().norm();
      if (track[k].t_ns >= 5'000'000'000) max_lateral = std::max(max_lateral, std::abs(path.Project(p).lateral_m));
    }
    MESSAGE("circuit:", i, " travelled ", travelled, " m, max lateral error ", max_lateral, " m");
    CHECK(travelled > 1.1 * path.Length());  // past the closing point and on round
    CHECK(max_lateral < 0.4);                 // measured 0.29 m (the clothoids into the 100 m turns)
  }
}

TEST_CASE("world parts: pedestrians walk their paths and the world holds them as pedestrians") {
  const char* text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 30

[[node]]
name = "walkers"
role = "traffic"
traffic_model = "pedestrians"
[[node.pedestrian]]          # open: 20 m to the end, then back
waypoints = [0, 0,  10, 0,  10, 10]
speed_mps = 1.0
[[node.pedestrian]]          # closed square, 40 m round
waypoints = [50, 0,  60, 0,  60, 10,  50, 10]
loop = true
speed_mps = 1.5
start_offset_m = 5
)";
  const config::SessionDef session = Load(text, "walkers.toml");
  const auto seen = RunAndWatch(session);
  const config::NodeDef& n = *session.FindNode("walkers");
  REQUIRE(seen.size() == 2);
  for (uint32_t i = 0; i < 2; ++i) {
    const auto& track = seen.at(VehicleId("walkers", i));
    const node::Polyline path(n.pedestrians[i].waypoints_m, n.pedestrians[i].loop);
    double max_lateral = 0;
    for (const auto& s : track) {
      CHECK(s.state.kind == protocol::EntityKind::kPedestrian);
      max_lateral = std::max(max_lateral, std::abs(path.Project(s.state.kinematics.pose.position_m).lateral_m));
      CHECK(std::abs(s.state.kinematics.velocity_mps.norm() - n.pedestrians[i].speed_mps) < 1e-9);
    }
    CHECK(max_lateral < 1e-6);
    CHECK(track.back().t_ns == 30'000'000'000);
  }
  // The open path: at 25 s the walker is on the way back, 5 m from the end (at (10, 5), heading -y).
  const auto& open = seen.at(VehicleId("walkers", 0));
  for (const auto& s : open)
    if (s.t_ns == 25'000'000'000) {
      CHECK((s.state.kinematics.pose.position_m - Vec3(10, 5, 0)).norm() < 1e-6);
      CHECK(s.state.kinematics.velocity_mps.y() < -0.99);
    }
  // The square: 5 m + 1.5 m/s * 20 s = 35 m round from (50, 0): on the last side, at (50, 5).
  for (const auto& s : seen.at(VehicleId("walkers", 1)))
    if (s.t_ns == 20'000'000'000) CHECK((s.state.kinematics.pose.position_m - Vec3(50, 5, 0)).norm() < 1e-6);
}

TEST_CASE("world parts: a route path projects and wraps by arc length, near a hint too") {
  // A 10 m square, closed: 40 m round.
  const node::Polyline square({Vec3(0, 0, 0), Vec3(10, 0, 0), Vec3(10, 10, 0), Vec3(0, 10, 0)}, true);
  CHECK(square.Length() == doctest::Approx(40));
  CHECK((square.PointAt(15) - Vec3(10, 5, 0)).norm() < 1e-12);
  CHECK((square.PointAt(-5) - Vec3(0, 5, 0)).norm() < 1e-12);  // wrapped
  CHECK((square.PointAt(45) - Vec3(5, 0, 0)).norm() < 1e-12);
  CHECK((square.DirectionAt(25) - Vec3(-1, 0, 0)).norm() < 1e-12);
  // Inside the square is left of the direction of travel (counter-clockwise).
  const auto p = square.Project(Vec3(5, 1, 0));
  CHECK(p.s_m == doctest::Approx(5));
  CHECK(p.lateral_m == doctest::Approx(1));
  CHECK(square.Project(Vec3(5, -2, 0)).lateral_m == doctest::Approx(-2));
  // Near a hint across the closing point (s = 38 .. 2 m): the same answer as the full search.
  const auto near = square.ProjectNear(Vec3(1, -0.5, 0), 39.0, 3.0);
  CHECK(near.s_m == doctest::Approx(1));
  CHECK(near.lateral_m == doctest::Approx(-0.5));
  // An open path clamps; the hint keeps the search on its own part of a path that comes back near itself.
  const node::Polyline hairpin({Vec3(0, 0, 0), Vec3(100, 0, 0), Vec3(100, 1, 0), Vec3(0, 1, 0)}, false);
  CHECK((hairpin.PointAt(500) - Vec3(0, 1, 0)).norm() < 1e-12);
  CHECK(hairpin.ProjectNear(Vec3(50, 0.6, 0), 50.0, 20.0).s_m == doctest::Approx(50));   // the outbound leg
  CHECK(hairpin.ProjectNear(Vec3(50, 0.6, 0), 151.0, 20.0).s_m == doctest::Approx(151)); // the way back
  CHECK_THROWS_AS(node::Polyline({Vec3(0, 0, 0)}, false), config::ConfigError);
}

TEST_CASE("world parts: a session with every part gives the same world hash run to run and across threads") {
  TempDir dir;
  const std::string script = dir.Write("drive.csv", "0, 0, 0.5, 0\n3, 0.2, 0.5, 0\n3.01, 0, -0.4, 0\n6, 0, 0, 1\n");
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 6

[[node]]
name = "cars"
role = "traffic"
traffic_model = "route"
vehicles = 2
speed_mps = 10
[node.route]
waypoints = [0, 100,  200, 100,  260, 160]
spacing_m = 20
[node.controller]
abs = true

[[node]]
name = "walkers"
role = "traffic"
traffic_model = "pedestrians"
[[node.pedestrian]]
waypoints = [30, 95,  30, 105]

[[node]]
name = "seat"
role = "driver"
vehicle_model = "bullet"
headless = true
input = "scripted:)" + script + R"("
[node.controller]
speed_limit_mps = 8

[[node]]
name = "probe"
role = "sensor"
attach_to = "cars:0"
[[node.sensor]]
id = "objects"
type = "objects"
)";
  const config::SessionDef session = Load(text, "hash.toml");
  const InProcessResult a = RunInProcess(session, 1);
  const InProcessResult b = RunInProcess(session, 1);
  const InProcessResult c = RunInProcess(session, 2);
  CHECK(a.entities == 4);  // 2 cars, 1 pedestrian, 1 seat
  CHECK(a.data_messages > 0);
  CHECK(a.server_hash == b.server_hash);
  CHECK(a.server_hash == c.server_hash);
  CHECK(a.data_hash == b.data_hash);
  CHECK(a.data_hash == c.data_hash);
}

TEST_CASE("world parts: bad keys of the parts name the file, line and key") {
  const std::string head = "[session]\nmode = \"lockstep\"\nend_s = 1\n";
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"o\"\nvehicle_model = \"bullet\"\n"),
                 "parts.toml:6: node[0].vehicle_model: is a driver key: it needs role = \"driver\", got role \"observer\""));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"d\"\nrole = \"driver\"\nvehicle_model = \"tank\"\n"), "vehicle_model"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"d\"\nrole = \"driver\"\nvehicle_model = \"bullet\"\nstart_speed_mps = 5\n"),
                 "starts at rest"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"t\"\nrole = \"traffic\"\n[node.controller]\nabs = true\n"),
                 "node[0].controller: needs role = \"driver\" or a traffic node with traffic_model = \"route\""));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"d\"\nrole = \"driver\"\n[node.controller]\nabs = 1\n"), "node[0].controller.abs"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"d\"\nrole = \"driver\"\n[node.controller]\nlimit = 3\n"),
                 "node[0].controller.limit: unknown key"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\n"),
                 "needs a [node.route] table"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\n[node.route]\nwaypoints = [0, 0, 10]\n"),
                 "node[0].route.waypoints: expected at least 2 points as a flat array of x, y pairs"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\n[node.route]\nlane = -1\n"),
                 "the session has no [road]"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\nvehicles = 5\n"
                                      "[node.route]\nwaypoints = [0, 0, 50, 0]\n"),
                 "5 vehicles 25 m apart need 100 m, but the route is 50 m long"));
  CHECK(Contains(ConfigErrorOf(head + "[road]\nlanes = 2\n[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\nvehicles = 1\n"
                                      "[node.route]\nlane = -3\n"),
                 "route.lane: lane -3 is not on the road"));
  CHECK(Contains(ConfigErrorOf(head + "[road]\nlanes = 2\n[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\nvehicles = 1\n"
                                      "[node.route]\nlane = -1\nloop = true\n"),
                 "route.loop: lane -1 from s 0.0 to "));
  CHECK(Contains(ConfigErrorOf(head + "[road]\nlanes = 2\n[[node]]\nname = \"r\"\nrole = \"traffic\"\ntraffic_model = \"route\"\nvehicles = 1\n"
                                      "[node.route]\nlane = -1\nloop = true\n"),
                 "so it is no closed route (loop = true needs a circuit)"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"p\"\nrole = \"traffic\"\ntraffic_model = \"pedestrians\"\n"),
                 "needs at least one [[node.pedestrian]]"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"p\"\nrole = \"traffic\"\n[[node.pedestrian]]\nwaypoints = [0, 0, 1, 0]\n"),
                 "[[node.pedestrian]] needs role = \"traffic\" and traffic_model = \"pedestrians\""));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"p\"\nrole = \"traffic\"\ntraffic_model = \"pedestrians\"\n"
                                      "[[node.pedestrian]]\nwaypoints = [0, 0, 0, 0]\n"),
                 "point 1 (0, 0) repeats the point before it"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"p\"\nrole = \"traffic\"\ntraffic_model = \"pedestrians\"\n"
                                      "[[node.pedestrian]]\nwaypoints = [0, 0, 1, 0]\nspeed = 2\n"),
                 "node[0].pedestrian[0].speed: unknown key"));
  CHECK(Contains(ConfigErrorOf(head + "[[node]]\nname = \"p\"\nrole = \"traffic\"\ntraffic_model = \"pedestrians\"\nspeed_mps = 2\n"
                                      "[[node.pedestrian]]\nwaypoints = [0, 0, 1, 0]\n"),
                 "parts.toml:8: node[0].speed_mps: a pedestrians node has no speed of its own"));
}

TEST_CASE("world parts: configs/parts.toml passes platoon check and runs every part as processes") {
  const std::string config = std::string(PLATOON_SOURCE_DIR) + "/configs/parts.toml";
  auto check = process::Child::Spawn({BinDir() + "/platoon", "check", config});
  const auto checked = RunToExit(check, 60s);
  INFO("last line: " << (check.Lines().empty() ? std::string() : check.Lines().back()));
  REQUIRE(checked.has_value());
  CHECK(*checked == 0);

  // A short lock-step run: each part's SUMMARY says it ran.
  TempDir dir;
  const std::string session = ConfigOnFreePorts(dir, "parts.toml", 7460);
  // The files it names, next to the copy.
  for (const char* file : {"inputs/forward_reverse.csv", "roads/ring.toml"}) {
    std::filesystem::create_directories(std::filesystem::path(dir.Path() + "/" + file).parent_path());
    std::filesystem::copy_file(std::string(PLATOON_SOURCE_DIR) + "/configs/" + file, dir.Path() + "/" + file);
  }
  auto run = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--lockstep", "--duration", "4"});
  const auto status = RunToExit(run, 150s);
  if (!status) run.Signal(SIGTERM);
  const auto& lines = run.Lines();
  INFO("last line: " << (lines.empty() ? "" : lines.back()));
  REQUIRE_MESSAGE(status.has_value(), "platoon run did not finish within 150 s");
  CHECK(*status == 0);
  CheckNoErrorLines(lines);
  CHECK(SummaryValue(LinesOf(lines, "route"), "route_vehicles").value_or(0) >= 1);
  CHECK(SummaryValue(LinesOf(lines, "walkers"), "pedestrians").value_or(0) >= 1);
  CHECK(SummaryString(LinesOf(lines, "reverser"), "driver_vehicle_model") == "bullet");
  CHECK(SummaryValue(LinesOf(lines, "reverser"), "driver_distance_m").value_or(0) > 1.0);
  CHECK(AnyLineContains(LinesOf(lines, "abs"), "driver controller layer: speed_limiter, abs"));
  CHECK(SummaryValue(LinesOf(lines, "probe"), "frames").value_or(0) >= 70);  // 20 Hz for 4 s
  CHECK(SummaryValue(LinesOf(lines, "probe"), "items").value_or(0) > 0);     // objects reported
}

}  // namespace platoon::testing
