// CAN meets the driver seat (docs/CAN.md): an ECU in another process (tests/can/can_rig_ecu.cpp) reads
// the seat's SimMotion and SimPose frames of configs/can/rig.dbc over the UDP transport and drives the
// seat (input = "can") round configs/roads/ring.toml with EcuCommand frames; when the ECU falls silent the
// seat brakes to a stop after can_timeout_s. Also: a seat without CAN input transmits its signals into a
// candump log that decode back to its state, frames over UDP set and report the seat's live parameters
// (configs/can/rig_params_map.toml), and the seat's CAN config errors.
#include "../support/session_fixture.hpp"
#include "platoon/can/candump.hpp"
#include "platoon/can/dbc.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <map>
#include <cmath>
#include <fmt/format.h>

namespace can_closed_loop_test_detail {

using namespace platoon;
using namespace platoon::node;

class CanQuietContext final : public ModuleContext {
 public:
  std::vector<RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
  // The node's parameters, as the runtime's registry holds them (none: the defaults refuse).
  protocol::ParamReply GetParam(const std::string& path) const override {
    return registry ? registry->Get(path) : ModuleContext::GetParam(path);
  }
  protocol::ParamReply SetParam(const std::string& path, const std::string& text) override {
    return registry ? registry->Set(path, text) : ModuleContext::SetParam(path, text);
  }
  void Mark(const std::string& text) override { marks.push_back(text); }
  config::ParamRegistry* registry = nullptr;
  std::vector<std::string> marks;
};

std::shared_ptr<spdlog::logger> CanQuietLog() {
  return std::make_shared<spdlog::logger>("can-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

const std::string kCanDir = std::string(PLATOON_SOURCE_DIR) + "/configs/can";
const std::string kRing = std::string(PLATOON_SOURCE_DIR) + "/configs/roads/ring.toml";

}  // namespace can_closed_loop_test_detail

using namespace can_closed_loop_test_detail;

TEST_CASE("can seat: an ECU process keeps the car on configs/roads/ring.toml within 0.3 m lateral RMS over UDP and the seat brakes to a stop when it falls silent") {
  const auto ports = transport::FreeLoopbackPorts(2);
  const uint16_t seat_port = ports[0], ecu_port = ports[1];
  constexpr double kTimeoutS = 0.25;
  const config::SessionDef session = config::LoadSessionText(
      "[road]\nfile = \"" + kRing + "\"\n[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"can\"\n" +
          fmt::format("can_bus = \"udp:127.0.0.1:{}>127.0.0.1:{}\"\ncan_map = \"{}/rig_map.toml\"\ncan_timeout_s = {}\n", seat_port,
                      ecu_port, kCanDir, kTimeoutS) +
          "start_s_m = 20\nstart_lane = -1\nstart_speed_mps = 5\n",
      "can-ring.toml");
  DriverSeatModule seat(session, session.nodes[0], CanQuietLog());
  CanQuietContext context;
  const road::Road road = road::SessionRoad(session.road);
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  const double lane_t = road.LaneCenterOffset(-1);

  // The ECU: 40 s of commands at 100 Hz, one per SimPose frame, then silence.
  constexpr long kCommands = 4000;
  process::Child ecu = process::Child::Spawn(
      {testing::BinDir() + "/can_rig_ecu", "--bus", fmt::format("udp:127.0.0.1:{}>127.0.0.1:{}", ecu_port, seat_port), "--dbc",
       kCanDir + "/rig.dbc", "--road", kRing, "--lane", "-1", "--speed", "12", "--wheelbase", fmt::format("{}", def.WheelbaseM()),
       "--max-steer-rad", fmt::format("{}", def.max_steer_rad), "--commands", std::to_string(kCommands)});
  REQUIRE(ecu.WaitForLine("ecu: ready", std::chrono::seconds(10)));

  // Lock-step on the sim clock: every 10 ms the seat sends SimMotion and SimPose; it is stepped at the
  // same sim time until the ECU's answer is taken, then 10 ms on. The ECU sees each state once.
  constexpr int64_t kPeriodNs = 10'000'000;
  const int64_t t0 = 1'000'000'000;
  int64_t sim_ns = t0;
  seat.Step(StepInfo{sim_ns, 0}, context);
  double sum_sq = 0, max_abs = 0;
  uint64_t samples = 0;
  const auto wall0 = std::chrono::steady_clock::now();
  for (long k = 1; k <= kCommands; ++k) {
    const auto asked = std::chrono::steady_clock::now();
    while (seat.Can().rx_frames < static_cast<uint64_t>(k)) {
      REQUIRE(std::chrono::steady_clock::now() - asked < std::chrono::seconds(5));
      seat.Step(StepInfo{sim_ns, 0}, context);
    }
    for (int64_t t = kDriverStepNs; t <= kPeriodNs; t += kDriverStepNs) seat.Step(StepInfo{sim_ns + t, kDriverStepNs}, context);
    sim_ns += kPeriodNs;
    // Lateral offset of the rear axle from the lane centre, after a 5 s warm-up (speed up to 12 m/s).
    const vehicle::VehicleState& x = seat.State();
    const Vec3 rear = Vec3(x.x_m, x.y_m, 0) - def.cg_to_rear_m * Vec3(std::cos(x.yaw_rad), std::sin(x.yaw_rad), 0);
    if (sim_ns - t0 > 5'000'000'000) {
      const double lateral = road.Project(rear).t_m - lane_t;
      sum_sq += lateral * lateral;
      max_abs = std::max(max_abs, std::abs(lateral));
      ++samples;
    }
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double rms = std::sqrt(sum_sq / static_cast<double>(samples));
  const double distance_m = seat.State().distance_m;
  const DriverSeatModule::CanStats s = seat.Can();
  MESSAGE("CAN closed loop on the ring: " << kCommands << " commands over " << (sim_ns - t0) / 1e9 << " s of sim time ("
                                          << wall_s << " s wall), " << distance_m << " m driven, lateral RMS " << rms
                                          << " m (max " << max_abs << " m) after a 5 s warm-up; seat sent " << s.sent
                                          << " frames, received " << s.received);
  CHECK(samples == static_cast<uint64_t>(kCommands - 500));
  CHECK(rms < 0.3);
  CHECK(max_abs < 1.0);
  CHECK(distance_m > 400);  // round the first turn and beyond
  CHECK(std::abs(seat.State().vx_mps - 12.0) < 1.0);
  CHECK(s.rx_frames == static_cast<uint64_t>(kCommands));
  CHECK(s.received >= s.rx_frames);
  CHECK(s.rejected == 0);
  CHECK(s.send_errors == 0);
  CHECK(s.timeouts == 0);
  CHECK(s.active);
  // The seat sent SimMotion and SimPose every 10 ms (plus SimDriver on change).
  CHECK(s.sent >= 2 * static_cast<uint64_t>(kCommands));
  REQUIRE(ecu.WaitForLine("ecu: done", std::chrono::seconds(10)));
  CHECK(ecu.WaitFor(std::chrono::seconds(10)) == 0);

  // The ECU is silent: the commands stay live for can_timeout_s of sim time, then throttle 0 and full
  // brake until the car stands.
  const int64_t last_command_ns = sim_ns - kPeriodNs;  // the last answer was taken at the state 10 ms back
  const double v0 = seat.State().vx_mps;
  int64_t timeout_ns = -1, stop_ns = -1;
  while (stop_ns < 0 && sim_ns - last_command_ns < 30'000'000'000) {
    sim_ns += kDriverStepNs;
    seat.Step(StepInfo{sim_ns, kDriverStepNs}, context);
    if (timeout_ns < 0 && seat.Can().timeouts > 0) timeout_ns = sim_ns;
    if (timeout_ns >= 0 && std::abs(seat.State().vx_mps) < 0.05) stop_ns = sim_ns;
  }
  REQUIRE(timeout_ns > 0);
  REQUIRE(stop_ns > 0);
  // Full brake decelerates at most by the brake force (or the tyres' grip) plus drag and rolling resistance.
  const double brake_decel = std::min(def.max_brake_torque_nm / def.wheel_radius_m / def.mass_kg, def.mu * 9.81);
  const double timeout_after_s = (timeout_ns - last_command_ns) / 1e9;
  const double stop_after_s = (stop_ns - last_command_ns) / 1e9;
  MESSAGE("CAN silent at " << v0 << " m/s: timeout after " << timeout_after_s << " s of sim time, stopped after " << stop_after_s
                           << " s (" << (stop_ns - timeout_ns) / 1e9 << " s of braking; " << v0 / brake_decel
                           << " s at the brake's " << brake_decel << " m/s^2)");
  // Live for exactly the timeout; the first 1 ms dynamics step past it brakes (that step ends 2 ms later).
  CHECK(timeout_after_s > kTimeoutS);
  CHECK(timeout_after_s <= kTimeoutS + 0.0025);
  CHECK((stop_ns - timeout_ns) / 1e9 >= 0.8 * v0 / brake_decel);
  CHECK((stop_ns - timeout_ns) / 1e9 <= 2.0 * v0 / brake_decel + 0.1);
  CHECK(seat.LastInput().brake == 1.0);
  CHECK(seat.LastInput().throttle == 0.0);
  CHECK(seat.Can().timeouts == 1);
  CHECK_FALSE(seat.Can().active);
  std::vector<std::string> fields;
  seat.Summarize(fields);
  bool summarized = false;
  for (const auto& f : fields) summarized |= f.find(fmt::format("\"can_rx_frames\":{}", kCommands)) != std::string::npos;
  CHECK(summarized);
}

TEST_CASE("can seat: a scripted seat with can_bus and can_map writes its signals to a candump log that decodes back to its state") {
  const testing::TempDir dir;
  const std::string script = dir.Write("drive.csv", "0.0, 0.0, 0.6, 0.0\n2.0, 0.3, 0.6, 0.0\n4.0, 0.3, 0.0, 0.5\n");
  const std::string session_file = dir.Write(
      "seat.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"scripted:drive.csv\"\n"
                   "can_bus = \"candump:>seat.log\"\ncan_map = \"" + kCanDir + "/rig_map.toml\"\n");
  const config::SessionDef session = config::LoadSession(session_file);
  const can::Database dbc = can::LoadDbc(kCanDir + "/rig.dbc");
  const can::Message* motion = dbc.FindMessage("SimMotion");
  const can::Message* pose = dbc.FindMessage("SimPose");
  std::map<int64_t, vehicle::VehicleState> states;  // the state at each 10 ms instant
  {
    DriverSeatModule seat(session, session.nodes[0], CanQuietLog());
    CanQuietContext context;
    for (int64_t t = 2'000'000'000; t <= 6'000'000'000; t += kDriverStepNs) {
      seat.Step(StepInfo{t, kDriverStepNs}, context);
      if (t % 10'000'000 == 0) states[t] = seat.State();
    }
    CHECK(seat.Can().sent > 800);
    CHECK(seat.Can().received == 0);
  }  // the bus flushes its log
  const auto log = can::ReadCandumpLog(dir.Path() + "/seat.log");
  size_t checked = 0;
  for (const auto& l : log) {
    const auto it = states.find(l.time_ns);
    if (it == states.end()) continue;
    const vehicle::VehicleState& x = it->second;
    if (l.frame.id == motion->id) {
      const auto v = can::DecodeMessage(*motion, l.frame);
      CHECK(std::abs(v.at("Speed") / 3.6 - x.vx_mps) <= 0.005 / 3.6 + 1e-9);
      CHECK(std::abs(v.at("YawRate") * M_PI / 180 - x.yaw_rate_radps) <= 0.005 * M_PI / 180 + 1e-9);
      CHECK(std::abs(v.at("AccelX") - x.ax_mps2) <= 0.0005 + 1e-9);
      ++checked;
    } else if (l.frame.id == pose->id) {
      const auto v = can::DecodeMessage(*pose, l.frame);
      const double rear_x = x.x_m - vehicle::DefaultVehicleDef().cg_to_rear_m * std::cos(x.yaw_rad);
      CHECK(std::abs(v.at("PosX") - rear_x) <= 0.0005 + 1e-9);
      CHECK(std::abs(v.at("Yaw") - x.yaw_rad) <= 0.00005 + 1e-9);
      ++checked;
    }
  }
  // 4 s at 100 Hz, two messages each instant (the first instant at 2.000 s too).
  CHECK(checked == 2 * 401);
}

TEST_CASE("can seat: a missing map, an unknown signal or variable and a bad bus give clear errors") {
  const testing::TempDir dir;
  const auto error_of = [&](const std::string& keys) -> std::string {
    try {
      const std::string file = dir.Write("seat.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n" + keys);
      const config::SessionDef session = config::LoadSession(file);
      DriverSeatModule seat(session, session.nodes[0], CanQuietLog());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  const std::string map = "can_map = \"" + kCanDir + "/rig_map.toml\"\n";
  CHECK(error_of("input = \"can\"\n").find("input = \"can\" needs can_bus") != std::string::npos);
  CHECK(error_of("can_bus = \"candump:>x.log\"\n").find("can_bus and can_map go together") != std::string::npos);
  CHECK(error_of("input = \"can\"\ncan_bus = \"usb:0\"\n" + map).find("seat.toml:6: node[0].can_bus: bus spec \"usb:0\"") !=
        std::string::npos);
  CHECK(error_of("input = \"sdl\"\ncan_timeout_s = 0.5\n").find("can_timeout_s: is for input = \"can\"") != std::string::npos);
  const std::string missing = error_of("input = \"can\"\ncan_bus = \"candump:>x.log\"\ncan_map = \"nowhere.toml\"\n");
  CHECK(missing.find("seat.toml:7: node[0].can_map: ") != std::string::npos);
  CHECK(missing.find("nowhere.toml") != std::string::npos);
  dir.Write("rig.dbc", "BU_: Seat Ecu\nBO_ 256 M: 8 Seat\n SG_ A : 0|16@1+ (0.01,0) [0|0] \"\" Ecu\n");
  dir.Write("bad_signal.toml", "dbc = \"rig.dbc\"\n[[message]]\nname = \"M\"\ndirection = \"rx\"\n[[message.signal]]\nname = \"B\"\nvariable = \"steer\"\n");
  CHECK(error_of("input = \"can\"\ncan_bus = \"candump:>x.log\"\ncan_map = \"bad_signal.toml\"\n")
            .find("bad_signal.toml:6: message[0].signal[0].name: expected a signal of message M (A), got \"B\"") != std::string::npos);
  dir.Write("bad_var.toml", "dbc = \"rig.dbc\"\n[[message]]\nname = \"M\"\ndirection = \"tx\"\nperiod_ms = 10\n[[message.signal]]\nname = \"A\"\nvariable = \"rpm\"\n");
  CHECK(error_of("can_bus = \"candump:>x.log\"\ncan_map = \"bad_var.toml\"\n").find("bad_var.toml:8: message[0].signal[0].variable: expected a simulator variable") !=
        std::string::npos);
  // input = "can" with a mapping that receives nothing.
  CHECK(error_of("input = \"can\"\ncan_bus = \"candump:>x.log\"\ncan_map = \"bad_var.toml\"\n").find("bad_var.toml") != std::string::npos);
  dir.Write("tx_only.toml", "dbc = \"rig.dbc\"\n[[message]]\nname = \"M\"\ndirection = \"tx\"\nperiod_ms = 10\n[[message.signal]]\nname = \"A\"\nvariable = \"speed_mps\"\n");
  CHECK(error_of("input = \"can\"\ncan_bus = \"candump:>x.log\"\ncan_map = \"tx_only.toml\"\n").find("needs an rx message") != std::string::npos);
  CHECK(error_of("input = \"can\"\ncan_bus = \"socketcan:nocan7\"\n" + map).find("socketcan:nocan7: ") != std::string::npos);
  CHECK(error_of("can_bus = \"candump:>x.log\"\ncan_map = \"tx_only.toml\"\n") == "");
}

TEST_CASE("can seat: EcuParams frames over UDP set the seat's tyre_mu once per change and SimParams carries it back within its resolution") {
  const auto ports = transport::FreeLoopbackPorts(2);
  const uint16_t seat_port = ports[0], ecu_port = ports[1];
  const testing::TempDir dir;
  dir.Write("drive.csv", "0.0, 0.0, 0.3, 0.0\n30.0, 0.0, 0.3, 0.0\n");
  const std::string session_file = dir.Write(
      "seat.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"scripted:drive.csv\"\n" +
                       fmt::format("can_bus = \"udp:127.0.0.1:{}>127.0.0.1:{}\"\ncan_map = \"{}/rig_params_map.toml\"\n", seat_port,
                                   ecu_port, kCanDir));
  const config::SessionDef session = config::LoadSession(session_file);
  DriverSeatModule seat(session, session.nodes[0], CanQuietLog());
  // The node's registry as the runtime builds it for this seat.
  config::ParamRegistry registry;
  seat.Params(registry, "node.seat.");
  CanQuietContext context;
  context.registry = &registry;
  const double mass_kg = std::stod(registry.Get("node.seat.vehicle_mass_kg").param.value);
  const double mu0 = std::stod(registry.Get("node.seat.tyre_mu").param.value);

  // The ECU's end of the bus, in this process.
  const auto ecu = can::OpenBus(fmt::format("udp:127.0.0.1:{}>127.0.0.1:{}", ecu_port, seat_port));
  const can::Database dbc = can::LoadDbc(kCanDir + "/rig.dbc");
  const can::Message* cmd = dbc.FindMessage("EcuParams");
  const can::Message* report = dbc.FindMessage("SimParams");
  REQUIRE(cmd);
  REQUIRE(report);
  std::vector<std::map<std::string, double>> reports;  // SimParams frames the ECU received, in order
  const auto drain = [&] {
    while (const auto f = ecu->Receive())
      if (f->id == report->id && !f->extended) reports.push_back(can::DecodeMessage(*report, *f));
  };
  // Steps the seat 10 ms of sim time at a time, the ECU sending `mu` (physical; < 0: nothing) each 10 ms,
  // for `steps` steps and until `done` (a wall-clock bound: UDP on loopback needs no retries, only time).
  int64_t sim_ns = 1'000'000'000;
  seat.Step(StepInfo{sim_ns, 0}, context);
  const auto run = [&](double mu, int steps, const std::function<bool()>& done) {
    const auto asked = std::chrono::steady_clock::now();
    for (int k = 0; k < steps || (done && !done()); ++k) {
      REQUIRE(std::chrono::steady_clock::now() - asked < std::chrono::seconds(10));
      if (mu >= 0) REQUIRE(ecu->Send(can::EncodeMessage(*cmd, {{"TyreMuCmd", mu}})));
      for (int64_t t = kDriverStepNs; t <= 10'000'000; t += kDriverStepNs) seat.Step(StepInfo{sim_ns + t, kDriverStepNs}, context);
      sim_ns += 10'000'000;
      drain();
    }
  };
  // Before any command: SimParams carries the parameters at start.
  run(-1, 0, [&] { return reports.size() >= 2; });
  CHECK(seat.Can().param_updates == 0);
  CHECK(std::abs(reports.back().at("TyreMu") - mu0) <= 0.005 + 1e-9);
  CHECK(std::abs(reports.back().at("VehicleMass") - mass_kg) <= 0.5 + 1e-9);

  // 0.5 for a second of sim time (100 frames): applied once, marked once, read back by the registry.
  constexpr double kMu = 0.5;
  run(kMu, 100, [&] { return seat.Can().param_updates >= 1; });
  CHECK(registry.Get("node.seat.tyre_mu").param.value == fmt::format("{}", kMu));
  CHECK(seat.Can().param_updates == 1);
  CHECK(seat.Can().param_refused == 0);
  CHECK(seat.Can().rx_frames >= 100);
  std::vector<std::string> can_marks;
  for (const auto& m : context.marks)
    if (m.rfind("can: ", 0) == 0) can_marks.push_back(m);
  CHECK(can_marks == std::vector<std::string>{fmt::format("can: node.seat.tyre_mu = {}", kMu)});
  // The seat reports the new value within the signal's resolution (0.01): the last SimParams of the second.
  REQUIRE_FALSE(reports.empty());
  CHECK(std::abs(reports.back().at("TyreMu") - kMu) <= 0.005 + 1e-9);
  CHECK(std::abs(reports.back().at("VehicleMass") - mass_kg) <= 0.5 + 1e-9);

  // 0.02 is below tyre_mu's range [0.05, 2]: refused once (not every 10 ms), the value stays.
  const uint64_t frames_before = seat.Can().rx_frames;
  run(0.02, 50, [&] { return seat.Can().param_refused >= 1 && seat.Can().rx_frames >= frames_before + 50; });
  CHECK(seat.Can().param_refused == 1);
  CHECK(seat.Can().param_updates == 1);
  CHECK(registry.Get("node.seat.tyre_mu").param.value == fmt::format("{}", kMu));
  // A new valid value is applied again.
  run(1.25, 20, [&] { return seat.Can().param_updates >= 2; });
  CHECK(registry.Get("node.seat.tyre_mu").param.value == "1.25");
  CHECK(seat.Can().param_updates == 2);
  CHECK(context.marks.back() == "can: node.seat.tyre_mu = 1.25");
  MESSAGE("CAN live parameters: " << seat.Can().rx_frames << " EcuParams frames taken, " << seat.Can().param_updates
                                  << " applied, " << seat.Can().param_refused << " refused; " << reports.size()
                                  << " SimParams frames, the last TyreMu " << reports.back().at("TyreMu") << " VehicleMass "
                                  << reports.back().at("VehicleMass") << " kg (registry " << mass_kg << " kg)");
  std::vector<std::string> fields;
  seat.Summarize(fields);
  bool summarized = false;
  for (const auto& f : fields) summarized |= f.find("\"can_param_updates\":2,\"can_param_refused\":1") != std::string::npos;
  CHECK(summarized);
}

TEST_CASE("can seat: a live parameter the seat's node lacks is refused at start with the mapping's line and what exists") {
  const testing::TempDir dir;
  dir.Write("rig.dbc", "BU_: Seat Ecu\nBO_ 256 M: 8 Ecu\n SG_ A : 0|16@1+ (0.01,0) [0|0] \"\" Seat\n");
  dir.Write("map.toml", "dbc = \"rig.dbc\"\n[[message]]\nname = \"M\"\ndirection = \"rx\"\n[[message.signal]]\nname = \"A\"\n"
                        "param = \"node.seat.tyre_friction\"\n");
  const std::string file = dir.Write("seat.toml", "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n"
                                                  "input = \"model:follow\"\ncan_bus = \"candump:>x.log\"\ncan_map = \"map.toml\"\n");
  const config::SessionDef session = config::LoadSession(file);
  std::string error;
  try {
    DriverSeatModule seat(session, session.nodes[0], CanQuietLog());
  } catch (const config::ConfigError& e) {
    error = e.what();
  }
  CHECK(error.find("seat.toml:7: node[0].can_map: ") != std::string::npos);
  CHECK(error.find("map.toml:7: message[0].signal[0].param: expected a parameter of node \"seat\" that a signal can set (") !=
        std::string::npos);
  // What the node has: the seat's own and the fault injector's.
  CHECK(error.find("tyre_mu") != std::string::npos);
  CHECK(error.find("vehicle_mass_kg") != std::string::npos);
  CHECK(error.find("faults.drop") != std::string::npos);
  CHECK(error.find("got \"node.seat.tyre_friction\"") != std::string::npos);
}
