// Force feedback (node/src/force_feedback.cpp, vehicle::FrontAligningTorqueNm, the seat's haptic feed in
// node/src/driver_seat.cpp): the torque follows the single-track model's aligning torque over a slalom,
// spring, damping and the limit, and zero on pause, stop, a lost server and exit, on a MockHaptic.
#include "../support/session_fixture.hpp"
#include "platoon/config/session.hpp"
#include "platoon/input/haptic.hpp"
#include "platoon/input/sdl_input.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/force_feedback.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <doctest/doctest.h>
#include <SDL.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <numbers>
#include <sstream>

using namespace platoon;
using namespace platoon::node;

namespace force_feedback_test_detail {

// A world stream that a test turns off (the server killed): `received` counts the broadcasts.
class WorldContext final : public ModuleContext {
 public:
  uint64_t received = 0;
  std::vector<RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& r, int64_t& max_gap_ns) const override { r = received, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
};

// Steering of the slalom: amplitude `amp` of full lock at `hz`.
double SlalomSteer(double t_s, double amp, double hz) { return amp * std::sin(2 * std::numbers::pi * hz * t_s); }

// The front axle's lateral force written out from docs/VEHICLES.md (V2)-(V4) for free rolling, in N.
double FrontForceByHand(const vehicle::VehicleDef& d, const vehicle::VehicleState& s) {
  const double vyf = s.vy_mps + d.cg_to_front_m * s.yaw_rate_radps;
  const double vlong = s.vx_mps * std::cos(s.steer_rad) + vyf * std::sin(s.steer_rad);
  const double vlat = -s.vx_mps * std::sin(s.steer_rad) + vyf * std::cos(s.steer_rad);
  const double alpha = std::atan(vlat / std::max(std::abs(vlong), 0.1));
  const double g = 9.80665;
  const double fz = (d.mass_kg * g * d.cg_to_rear_m - d.cg_height_m * d.mass_kg * s.ax_mps2) / d.WheelbaseM();
  const double ba = d.tyre_front.b * alpha;
  const double mf = d.tyre_front.d * std::sin(d.tyre_front.c * std::atan(ba - d.tyre_front.e * (ba - std::atan(ba))));
  return -d.mu * fz * mf;
}

std::shared_ptr<spdlog::logger> FfbQuietLog() {
  return std::make_shared<spdlog::logger>("ffb-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace force_feedback_test_detail

using namespace force_feedback_test_detail;

TEST_CASE("force feedback: the front aligning torque is the trail times the model's own front lateral force") {
  // 20 m/s coasting through a 0.5 Hz slalom: the force that aligns the wheel is the one the model's
  // Newton-Euler step applied (from the step's velocity changes), and Mz centres the wheel.
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  vehicle::VehicleState s;
  s.vx_mps = 20;
  int checked = 0, centring = 0, at_peaks = 0;
  double max_mz = 0;
  for (int k = 0; k < 6000; ++k) {
    const double t = k * 1e-3;
    const vehicle::VehicleInput in{SlalomSteer(t, 0.1, 0.5), 0, 0};
    const vehicle::VehicleState n = vehicle::Step(def, s, in, 1e-3);
    // The force the step applied, from its velocity changes (semi-implicit Euler, (V9)): the lateral force
    // sum m (vy' + r vx) and the yaw moment Iz r' give L Fy_front cos(delta) (no drive: Fx_front = 0).
    const double side_n = def.mass_kg * ((n.vy_mps - s.vy_mps) / 1e-3 + s.yaw_rate_radps * s.vx_mps);
    const double yaw_nm = def.yaw_inertia_kgm2 * (n.yaw_rate_radps - s.yaw_rate_radps) / 1e-3;
    const double fy_applied = (side_n * def.cg_to_rear_m + yaw_nm) / (def.WheelbaseM() * std::cos(n.steer_rad));
    // FrontAligningTorqueNm reads the state the step starts from, with the wheel angle of this step.
    vehicle::VehicleState at = s;
    at.steer_rad = n.steer_rad;
    const double fy = vehicle::FrontLateralForceN(def, at);
    CHECK(fy == doctest::Approx(FrontForceByHand(def, at)).epsilon(1e-9));
    const double mz = vehicle::FrontAligningTorqueNm(def, at);
    max_mz = std::max(max_mz, std::abs(mz));
    if (std::abs(fy) > 500) {
      ++checked;
      CHECK(fy_applied == doctest::Approx(fy).epsilon(1e-6));
      // Trail between the mechanical trail alone and the sum of both.
      const double trail = -mz / fy;
      CHECK(trail >= def.mechanical_trail_m - 1e-12);
      CHECK(trail <= def.mechanical_trail_m + def.pneumatic_trail_m + 1e-12);
      if (mz * n.steer_rad < 0) ++centring;
      if (std::abs(n.steer_rad) > 0.9 * 0.1 * def.max_steer_rad) {
        ++at_peaks;
        CHECK(mz * n.steer_rad < 0);
      }
    }
    s = n;
  }
  CHECK(checked > 3000);
  CHECK(at_peaks > 500);
  CHECK(centring > checked * 3 / 4);
  CHECK(max_mz > 50);  // a real torque: tens to hundreds of N m
  CHECK(max_mz < 1000);
}

TEST_CASE("force feedback: commanded torque has the aligning torque's sign and is proportional within 10 % over a slalom") {
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  ForceFeedbackDef ffb = DefaultForceFeedbackDef();
  ffb.spring = 0, ffb.damping = 0;  // the tyres' part alone
  ffb.max_torque = 1.0;
  vehicle::VehicleState s;
  s.vx_mps = 25;
  double last_steer = 0;
  int compared = 0;
  double worst = 0;
  for (int k = 0; k < 8000; ++k) {
    const double t = k * 1e-3;
    const vehicle::VehicleInput in{SlalomSteer(t, 0.12, 0.4), 0.2, 0};
    s = vehicle::Step(def, s, in, 1e-3);
    const double mz = vehicle::FrontAligningTorqueNm(def, s);
    const ForceFeedbackFeed feed{mz, in.steer, (in.steer - last_steer) / 1e-3};
    last_steer = in.steer;
    const ForceFeedbackOutput out = ForceFeedbackUpdate(ffb, feed, k * 1'000'000LL, k * 1'000'000LL, k * 1'000'000LL + 1);
    REQUIRE(out.zero_reason.empty());
    const double expected = ffb.gain_per_knm * mz / 1000.0;  // fraction of full scale per kN m
    if (std::abs(expected) < 0.02) continue;                  // noise floor: 2 % of full scale
    ++compared;
    CHECK((out.torque > 0) == (mz > 0));
    worst = std::max(worst, std::abs(out.torque / expected - 1.0));
  }
  CHECK(compared > 4000);
  CHECK(worst <= 0.10);
  MESSAGE("slalom: " << compared << " updates above the floor, worst ratio error " << worst);

  // With the defaults' spring and damping the tyres still set the sign at the slalom's steering peaks.
  const ForceFeedbackDef d = DefaultForceFeedbackDef();
  const ForceFeedbackFeed peak{-200.0, 0.12, 0.0};
  CHECK(ForceFeedbackTorque(d, peak) == doctest::Approx(d.gain_per_knm * -0.2 - d.spring * 0.12));
  CHECK(ForceFeedbackTorque(d, peak) < 0);
}

TEST_CASE("force feedback: spring damping and the torque limit") {
  ForceFeedbackDef d;
  d.gain_per_knm = 2.0, d.spring = 0.2, d.damping = 0.1, d.max_torque = 0.5;
  // Each term alone, with its sign: the spring and the damper oppose the wheel.
  CHECK(ForceFeedbackTorque(d, {100.0, 0, 0}) == doctest::Approx(0.2));
  CHECK(ForceFeedbackTorque(d, {0, 0.5, 0}) == doctest::Approx(-0.1));
  CHECK(ForceFeedbackTorque(d, {0, -0.5, 0}) == doctest::Approx(0.1));
  CHECK(ForceFeedbackTorque(d, {0, 0, 2.0}) == doctest::Approx(-0.2));
  CHECK(ForceFeedbackTorque(d, {50.0, 0.25, -1.0}) == doctest::Approx(0.1 - 0.05 + 0.1));
  // The limit, both ways; a non-finite feed commands nothing.
  CHECK(ForceFeedbackTorque(d, {1000.0, 0, 0}) == doctest::Approx(0.5));
  CHECK(ForceFeedbackTorque(d, {-1000.0, 0, 0}) == doctest::Approx(-0.5));
  CHECK(ForceFeedbackTorque(d, {std::nan(""), 0, 0}) == 0.0);
  CHECK(ValidateForceFeedbackDef(d).empty());
  d.max_torque = 0;
  CHECK(ValidateForceFeedbackDef(d).find("ffb_max_torque") == 0);
}

TEST_CASE("force feedback: zero once the dynamics stop or no world state came for 50 ms") {
  const ForceFeedbackDef d = DefaultForceFeedbackDef();
  const ForceFeedbackFeed feed{150.0, 0, 0};
  const double live = ForceFeedbackTorque(d, feed);
  REQUIRE(live > 0.1);
  const int64_t t0 = 10'000'000'000;
  CHECK(ForceFeedbackUpdate(d, feed, t0, t0, t0 + kForceFeedbackStaleNs).torque == doctest::Approx(live));
  // Paused or stopped: the dynamics no longer step.
  const auto paused = ForceFeedbackUpdate(d, feed, t0, t0 + kForceFeedbackStaleNs, t0 + kForceFeedbackStaleNs + 1);
  CHECK(paused.torque == 0.0);
  CHECK(paused.zero_reason == "no dynamics");
  // The server killed: steps go on, world states do not.
  const auto lost = ForceFeedbackUpdate(d, feed, t0 + 60'000'000, t0, t0 + kForceFeedbackLossNs + 1);
  CHECK(lost.torque == 0.0);
  CHECK(lost.zero_reason == "no world");
  // Nothing yet.
  CHECK(ForceFeedbackUpdate(d, feed, -1, t0, t0).torque == 0.0);
  CHECK(ForceFeedbackUpdate(d, feed, t0, -1, t0).torque == 0.0);
  CHECK(kForceFeedbackLossNs <= 60'000'000);
  CHECK(kForceFeedbackStaleNs <= 60'000'000);
}

TEST_CASE("force feedback: ffb keys are read and refused naming the key") {
  const auto load = [](const std::string& keys) {
    return config::LoadSessionText("[[node]]\nname = \"seat\"\nrole = \"driver\"\ninput = \"sdl\"\n" + keys, "seat.toml");
  };
  const config::SessionDef s = load("force_feedback = false\nffb_gain = 3\nffb_spring = 0.2\nffb_damping = 0.1\nffb_max_torque = 0.6\n");
  CHECK_FALSE(s.nodes[0].force_feedback);
  CHECK(s.nodes[0].ffb_gain == 3.0);
  CHECK(s.nodes[0].ffb_spring == 0.2);
  CHECK(s.nodes[0].ffb_damping == 0.1);
  CHECK(s.nodes[0].ffb_max_torque == 0.6);
  CHECK(load("").nodes[0].force_feedback);
  for (const char* bad_text : {"ffb_gain = -1", "ffb_spring = 2", "ffb_damping = -0.5", "ffb_max_torque = 0",
                                 "ffb_max_torque = 1.5", "force_feedback = 3"}) {
    const std::string bad = bad_text;
    CAPTURE(bad);
    std::string error;
    try {
      load(bad + "\n");
    } catch (const config::ConfigError& e) {
      error = e.what();
    }
    CHECK(error.find("seat.toml:5") != std::string::npos);
    CHECK(error.find(bad.substr(0, bad.find(' '))) != std::string::npos);
  }
  std::string error;
  try {
    config::LoadSessionText("[[node]]\nname = \"s\"\nrole = \"sensor\"\nffb_gain = 1\n", "s.toml");
  } catch (const config::ConfigError& e) {
    error = e.what();
  }
  CHECK(error.find("ffb_gain") != std::string::npos);
  CHECK(error.find("driver") != std::string::npos);
}

TEST_CASE("force feedback: the seat drives a mock wheel and zeroes it on pause and a lost server within 100 ms and at stop") {
  // A scripted slalom at speed; the seat's clock is sim time (1 ms steps), the wheel updated every 2 ms.
  platoon::testing::TempDir dir;
  std::ostringstream script;
  script << "time_s, steer, throttle, brake\n";
  for (int i = 0; i <= 200; ++i) {
    const double t = i * 0.05;
    script << t << ", " << (t < 2 ? 0.0 : SlalomSteer(t - 2, 0.15, 0.5)) << ", " << (t < 3 ? 0.8 : 0.25) << ", 0\n";
  }
  dir.Write("slalom.csv", script.str());
  const config::SessionDef session = config::LoadSession(
      dir.Write("s.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\ninput = \"scripted:slalom.csv\"\nheadless = true\n"
                          "ffb_spring = 0\nffb_damping = 0\n"));
  int64_t clock_ns = 0;
  auto mock = std::make_shared<input::MockHaptic>([&clock_ns] { return clock_ns; });
  WorldContext context;
  auto seat = std::make_unique<DriverSeatModule>(session, session.nodes[0], FfbQuietLog());
  seat->SetHapticDevice(mock, [&clock_ns] { return clock_ns; });
  const ForceFeedbackDef def = seat->ForceFeedback();

  // Runs `ms` milliseconds: steps while `running`, a world state every 16 ms while `server`, a tick every 2 ms.
  int64_t sim_ns = 1'000'000'000, last_world_ns = -1;
  int compared = 0;
  double worst = 0;
  const auto run = [&](int ms, bool running, bool server) {
    for (int i = 0; i < ms; ++i) {
      clock_ns += kDriverStepNs;
      if (server && clock_ns % 16'000'000 < kDriverStepNs) {
        ++context.received;
        last_world_ns = clock_ns;
      }
      if (running) {
        sim_ns += kDriverStepNs;
        seat->Step(StepInfo{sim_ns, kDriverStepNs}, context);
      }
      if (clock_ns % 2'000'000 == 0) {
        const ForceFeedbackOutput out = seat->ForceFeedbackTick();
        // While live: the model's aligning torque of the seat's state, scaled by the gain (no spring, damping).
        const double expected = def.gain_per_knm * vehicle::FrontAligningTorqueNm(vehicle::DefaultVehicleDef(), seat->State()) / 1000;
        if (running && server && out.zero_reason.empty() && std::abs(expected) > 0.02 && std::abs(expected) < def.max_torque) {
          ++compared;
          CHECK((out.torque > 0) == (expected > 0));
          worst = std::max(worst, std::abs(out.torque / expected - 1));
        }
      }
    }
  };
  // First zero sample at or after `from_ns`, and that every sample after it is zero.
  const auto zero_since = [&](int64_t from_ns) {
    int64_t first = -1;
    for (const auto& smp : mock->Samples()) {
      if (smp.t_ns <= from_ns) continue;
      if (smp.torque == 0 && first < 0) first = smp.t_ns;
      if (first >= 0) CHECK(smp.torque == 0.0);
    }
    return first;
  };

  run(8000, true, true);
  CHECK(compared > 1000);
  CHECK(worst <= 0.10);
  double max_abs = 0;
  for (const auto& smp : mock->Samples()) max_abs = std::max(max_abs, std::abs(smp.torque));
  CHECK(max_abs > 0.1);
  CHECK(max_abs <= def.max_torque);
  REQUIRE(mock->Samples().back().torque != 0.0);

  // Pause: sim time stands still, the module is not stepped; the wheel reaches zero within 100 ms.
  const int64_t paused_at = clock_ns;
  run(300, false, true);
  const int64_t zero_pause = zero_since(paused_at);
  REQUIRE(zero_pause > 0);
  CHECK(zero_pause - paused_at <= 100'000'000);
  CHECK(zero_pause - paused_at >= kForceFeedbackStaleNs);  // not before the timeout: no zero on a normal step gap
  MESSAGE("pause: zero " << (zero_pause - paused_at) / 1e6 << " ms after the last step");

  // Resume: live again.
  run(500, true, true);
  CHECK(mock->Samples().back().torque != 0.0);

  // The server killed: the seat steps on (sim time runs on its synced clock), no world state comes.
  run(1, true, true);
  const int64_t world_lost_at = last_world_ns;
  run(300, true, false);
  const int64_t zero_loss = zero_since(world_lost_at);
  REQUIRE(zero_loss > 0);
  CHECK(zero_loss - world_lost_at <= 100'000'000);
  MESSAGE("server lost: zero " << (zero_loss - world_lost_at) / 1e6 << " ms after the last world state");

  // Back, then the session stops and the node exits: the module's end stops the wheel.
  run(300, true, true);
  CHECK(mock->Samples().back().torque != 0.0);
  seat.reset();
  CHECK(mock->Samples().back().stop);
  CHECK(mock->Samples().back().torque == 0.0);
}

TEST_CASE("force feedback: a wheel without a force-feedback motor is one info line and a seat without force feedback") {
  // An SDL virtual wheel has no haptic device: OpenHaptic says why, and a headless seat on it logs one line.
  SDL_SetHint(SDL_HINT_JOYSTICK_ALLOW_BACKGROUND_EVENTS, "1");
  if (SDL_InitSubSystem(SDL_INIT_JOYSTICK) != 0) {
    MESSAGE("skipped: no SDL joystick subsystem here: " << SDL_GetError());
    return;
  }
  const int index = SDL_JoystickAttachVirtual(SDL_JOYSTICK_TYPE_WHEEL, 4, 2, 0);
  if (index < 0) {
    MESSAGE("skipped: no SDL virtual joystick here: " << SDL_GetError());
    SDL_QuitSubSystem(SDL_INIT_JOYSTICK);
    return;
  }
  {
    input::AxisMappingDef d = input::DefaultAxisMappingDef();
    d.device_name = "virtual";
    d.keyboard_fallback = false;
    std::string error, why;
    auto in = input::SdlInput::Open(d, &error);
    REQUIRE_MESSAGE(in, error);
    CHECK(in->OpenHaptic(&why) == nullptr);
    CHECK(why.find("force feedback") != std::string::npos);
    CHECK(why.find(in->DeviceName()) != std::string::npos);
  }
  {
    platoon::testing::TempDir dir;
    const config::SessionDef session = config::LoadSession(dir.Write(
        "s.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\ninput = \"sdl\"\nheadless = true\n"
                  "[node.input_mapping]\ndevice_name = \"virtual\"\nkeyboard_fallback = false\n"));
    std::ostringstream lines;
    auto log = std::make_shared<spdlog::logger>("ffb-seat", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines));
    log->set_pattern("%l %v");
    {
      DriverSeatModule seat(session, session.nodes[0], log);
      CHECK(seat.ForceFeedbackTick().torque == 0.0);  // no device, nothing fed
    }
    const std::string text = lines.str();
    CAPTURE(text);
    CHECK(text.find("info force feedback: none: \"Virtual") != std::string::npos);
    CHECK(text.find("force feedback:") == text.rfind("force feedback:"));  // one line
  }
  SDL_JoystickDetachVirtual(index);
  SDL_QuitSubSystem(SDL_INIT_JOYSTICK);
}
