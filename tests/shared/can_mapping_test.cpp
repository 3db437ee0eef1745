// The CAN mapping core (shared/src/can/mapping.cpp): configs/can/rig_map.toml read, the tx frames due on
// the sim clock with the mapping's factors, the rx commands and their timeout, and the mapping file's errors.
#include "../support/session_fixture.hpp"
#include "platoon/can/dbc.hpp"
#include "platoon/can/mapping.hpp"
#include "platoon/config/table.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace can_mapping_test_detail {

using namespace platoon;

const std::string kRigMap = std::string(PLATOON_SOURCE_DIR) + "/configs/can/rig_map.toml";

can::VariableValues RigValues() {
  can::VariableValues v{};
  v[static_cast<size_t>(can::Variable::kSpeedMps)] = 12.5;
  v[static_cast<size_t>(can::Variable::kYawRateRadps)] = -0.125;
  v[static_cast<size_t>(can::Variable::kAxMps2)] = 0.75;
  v[static_cast<size_t>(can::Variable::kAyMps2)] = -1.5;
  v[static_cast<size_t>(can::Variable::kXM)] = 123.4567;
  v[static_cast<size_t>(can::Variable::kYM)] = -45.678;
  v[static_cast<size_t>(can::Variable::kYawRad)] = 2.5;
  v[static_cast<size_t>(can::Variable::kSteer)] = -0.3;
  v[static_cast<size_t>(can::Variable::kThrottle)] = 0.4;
  v[static_cast<size_t>(can::Variable::kIndicator)] = 2;
  v[static_cast<size_t>(can::Variable::kGear)] = -1;
  return v;
}

// The mapping error of `body` written next to a copy of the rig DBC ("" when it loads).
std::string MappingError(const testing::TempDir& dir, const std::string& body) {
  const std::string path = dir.Write("map.toml", body);
  try {
    can::LoadMapping(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace can_mapping_test_detail

using namespace can_mapping_test_detail;

TEST_CASE("can mapping: the rig mapping sends each periodic message once per period slot with the mapping's factors") {
  can::CanMapping mapping(can::LoadMapping(kRigMap), 0.2);
  REQUIRE(mapping.HasTx());
  REQUIRE(mapping.HasRx());
  const can::Database& dbc = mapping.Def().dbc;
  const can::Message* motion = dbc.FindMessage("SimMotion");
  const can::Message* pose = dbc.FindMessage("SimPose");
  const can::Message* driver = dbc.FindMessage("SimDriver");
  REQUIRE(motion);
  REQUIRE(pose);
  REQUIRE(driver);
  const can::VariableValues v = RigValues();

  // 1 s of 1 ms steps from 3.004 s: SimMotion and SimPose in every 10 ms slot (the first at once, then at
  // whole multiples of 10 ms), SimDriver once (its values never change).
  std::vector<can::StampedFrame> all;
  const int64_t t0 = 3'004'000'000;
  for (int64_t t = t0; t < t0 + 1'000'000'000; t += 1'000'000) {
    const bool any = mapping.AnyDue(t);
    const auto due = mapping.Due(t, v);
    if (!due.empty()) CHECK(any);
    all.insert(all.end(), due.begin(), due.end());
  }
  size_t n_motion = 0, n_pose = 0, n_driver = 0;
  for (const auto& s : all) {
    if (s.frame.id == motion->id) {
      ++n_motion;
      if (n_motion > 1) CHECK(s.sim_ns % 10'000'000 == 0);
    }
    n_pose += s.frame.id == pose->id;
    n_driver += s.frame.id == driver->id;
  }
  // Steps 3.004 .. 4.003 s: the first at once, then 3.010, 3.020, .. 4.000 (100 whole multiples of 10 ms).
  CHECK(n_motion == 1 + 100);
  CHECK(n_pose == 1 + 100);
  CHECK(n_driver == 1);
  CHECK(mapping.Counters().tx_frames == all.size());

  // The decoded physical values are the variables through the mapping (simulator = physical * factor),
  // within each signal's resolution.
  const auto decoded = [&](const can::Message& m) {
    for (const auto& s : all)
      if (s.frame.id == m.id) return can::DecodeMessage(m, s.frame);
    return std::map<std::string, double>{};
  };
  const auto mo = decoded(*motion), po = decoded(*pose), dr = decoded(*driver);
  CHECK(std::abs(mo.at("Speed") - 12.5 * 3.6) <= 0.005);
  CHECK(std::abs(mo.at("YawRate") - (-0.125) * 180 / M_PI) <= 0.005);
  CHECK(std::abs(mo.at("AccelX") - 0.75) <= 0.0005);
  CHECK(std::abs(mo.at("AccelY") + 1.5) <= 0.0005);
  CHECK(std::abs(po.at("PosX") - 123.4567) <= 0.0005);
  CHECK(std::abs(po.at("PosY") + 45.678) <= 0.0005);
  CHECK(std::abs(po.at("Yaw") - 2.5) <= 0.00005);
  CHECK(std::abs(dr.at("SteerApplied") + 30) <= 0.005);
  CHECK(std::abs(dr.at("ThrottleApplied") - 40) <= 0.25);
  CHECK(dr.at("Indicator") == 2);
  CHECK(dr.at("Gear") == -1);

  // on_change: a new applied steer sends SimDriver again, at that step.
  can::VariableValues changed = v;
  changed[static_cast<size_t>(can::Variable::kSteer)] = 0.2;
  const auto due = mapping.Due(t0 + 1'000'500'000, changed);
  size_t drivers = 0;
  for (const auto& s : due)
    if (s.frame.id == driver->id) {
      ++drivers;
      CHECK(s.sim_ns == t0 + 1'000'500'000);
      CHECK(std::abs(can::DecodeMessage(*driver, s.frame).at("SteerApplied") - 20) <= 0.005);
    }
  CHECK(drivers == 1);
}

TEST_CASE("can mapping: the same calls give the same frames") {
  std::vector<can::StampedFrame> runs[2];
  for (auto& run : runs) {
    can::CanMapping mapping(can::LoadMapping(kRigMap), 0.2);
    can::VariableValues v = RigValues();
    for (int64_t t = 1'000'000'000; t < 1'500'000'000; t += 1'000'000) {
      v[static_cast<size_t>(can::Variable::kXM)] = 1e-9 * static_cast<double>(t) * 3.3;
      v[static_cast<size_t>(can::Variable::kSteer)] = std::sin(1e-8 * static_cast<double>(t));
      for (const auto& s : mapping.Due(t, v)) run.push_back(s);
    }
  }
  REQUIRE(runs[0].size() == runs[1].size());
  CHECK(runs[0].size() > 100);
  for (size_t i = 0; i < runs[0].size(); ++i) {
    CHECK(runs[0][i].sim_ns == runs[1][i].sim_ns);
    CHECK(runs[0][i].frame == runs[1][i].frame);
  }
}

TEST_CASE("can mapping: received commands drive the seat and brake to a stop after the timeout") {
  can::CanMapping mapping(can::LoadMapping(kRigMap), 0.2);
  const can::Message* cmd = mapping.Def().dbc.FindMessage("EcuCommand");
  REQUIRE(cmd);
  CHECK(cmd->extended);
  // Before any command: held with full brake.
  CHECK(mapping.Command(0).brake == 1.0);
  CHECK_FALSE(mapping.Command(0).active);

  const int64_t t = 2'000'000'000;
  CHECK(mapping.Take(can::EncodeMessage(*cmd, {{"SteerCmd", -25.5}, {"ThrottleCmd", 30}, {"BrakeCmd", 0}, {"IndicatorCmd", 1}}), t));
  can::CanCommand c = mapping.Command(t);
  CHECK(c.active);
  CHECK(c.steer == doctest::Approx(-0.255).epsilon(1e-9));
  CHECK(c.throttle == doctest::Approx(0.30).epsilon(1e-9));
  CHECK(c.brake == 0.0);
  CHECK(c.indicator == 1.0);
  CHECK(c.received_sim_ns == t);
  // A frame of another message is ignored and counted.
  can::Frame other;
  other.id = 0x555;
  other.len = 8;
  CHECK_FALSE(mapping.Take(other, t));
  CHECK(mapping.Counters().rx_ignored == 1);
  // The same id as a standard frame is another message.
  can::Frame standard = can::EncodeMessage(*cmd, {{"SteerCmd", 90}});
  standard.extended = false;
  standard.id &= 0x7FF;
  CHECK_FALSE(mapping.Take(standard, t));
  CHECK(mapping.Command(t).steer == doctest::Approx(-0.255).epsilon(1e-9));
  // Out of range: clamped and counted (brake raw 1023: 102.3 %, past the DBC's range, which the encoder
  // would clamp, so the raw bits are written directly).
  can::Frame over = can::EncodeMessage(*cmd, {{"SteerCmd", -25.5}, {"ThrottleCmd", 0}});
  can::InsertRaw(*cmd->FindSignal("BrakeCmd"), 1023, over.data.data(), over.len);
  CHECK(mapping.Take(over, t + 50'000'000));
  CHECK(mapping.Command(t + 50'000'000).brake == 1.0);
  CHECK(mapping.Counters().rx_clamped == 1);
  CHECK(mapping.Take(can::EncodeMessage(*cmd, {{"SteerCmd", 10}, {"ThrottleCmd", 50}, {"BrakeCmd", 0}}), t + 100'000'000));

  // Silent for exactly the timeout: still live; one ns later: throttle off, full brake, steer held.
  c = mapping.Command(t + 300'000'000);
  CHECK(c.active);
  CHECK(c.throttle == doctest::Approx(0.5));
  c = mapping.Command(t + 300'000'001);
  CHECK_FALSE(c.active);
  CHECK(c.throttle == 0.0);
  CHECK(c.brake == 1.0);
  CHECK(c.steer == doctest::Approx(0.1));
  CHECK(mapping.Counters().timeouts == 1);
  mapping.Command(t + 900'000'000);
  CHECK(mapping.Counters().timeouts == 1);  // counted once per silence
  // The next command takes over again.
  CHECK(mapping.Take(can::EncodeMessage(*cmd, {{"SteerCmd", 0}, {"ThrottleCmd", 20}, {"BrakeCmd", 0}}), t + 1'000'000'000));
  c = mapping.Command(t + 1'000'000'000);
  CHECK(c.active);
  CHECK(c.brake == 0.0);
  CHECK(c.throttle == doctest::Approx(0.2));
  CHECK(mapping.Counters().rx_frames == 4);
}

TEST_CASE("can mapping: mapping files with a missing DBC or an unknown message, signal or variable give file and line") {
  const testing::TempDir dir;
  dir.Write("rig.dbc", [] {
    std::FILE* f = std::fopen((std::string(PLATOON_SOURCE_DIR) + "/configs/can/rig.dbc").c_str(), "rb");
    std::string text;
    char b[4096];
    for (size_t n; f && (n = std::fread(b, 1, sizeof b, f)) > 0;) text.append(b, n);
    if (f) std::fclose(f);
    return text;
  }());
  const std::string head = "dbc = \"rig.dbc\"\n[[message]]\nname = \"EcuCommand\"\ndirection = \"rx\"\n";
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steer\"\nfactor = 0.01\n") == "");
  CHECK(MappingError(dir, "[[message]]\nname = \"X\"\n").find("map.toml:1: dbc: expected dbc = ") != std::string::npos);
  const std::string missing = MappingError(dir, "dbc = \"nowhere.dbc\"\n" + head.substr(head.find('\n') + 1));
  CHECK(missing.find("map.toml:1: dbc: ") != std::string::npos);
  CHECK(missing.find("nowhere.dbc") != std::string::npos);
  CHECK(MappingError(dir, "dbc = \"rig.dbc\"\n[[message]]\nname = \"Nope\"\ndirection = \"tx\"\n")
            .find("map.toml:3: message[0].name: expected a message of") != std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"Steer\"\nvariable = \"steer\"\n")
            .find("map.toml:6: message[0].signal[0].name: expected a signal of message EcuCommand (SteerCmd, ThrottleCmd") !=
        std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steering\"\n")
            .find("map.toml:7: message[0].signal[0].variable: expected a simulator variable (speed_mps,") != std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"speed_mps\"\n")
            .find("expected steer, throttle, brake or indicator, got \"speed_mps\"") != std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steer\"\nfactor = 0\n")
            .find("map.toml:8: message[0].signal[0].factor: expected a non-zero factor") != std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steer\"\n"
                                 "[[message.signal]]\nname = \"ThrottleCmd\"\nvariable = \"steer\"\n")
            .find("\"steer\" is already received at") != std::string::npos);
  CHECK(MappingError(dir, head + "period_ms = 10\n[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steer\"\n")
            .find("period_ms: is for tx messages") != std::string::npos);
  CHECK(MappingError(dir, "dbc = \"rig.dbc\"\n[[message]]\nname = \"SimDriver\"\ndirection = \"tx\"\n"
                          "[[message.signal]]\nname = \"Gear\"\nvariable = \"gear\"\n")
            .find("needs period_ms = <ms> or on_change = true") != std::string::npos);
  CHECK(MappingError(dir, head + "[[message.signal]]\nname = \"SteerCmd\"\nvariable = \"steer\"\nfactr = 1\n")
            .find("factr") != std::string::npos);
  CHECK(can::VariableByName("yaw_rate_radps") == can::Variable::kYawRateRadps);
  CHECK(can::VariableName(can::Variable::kGear) == "gear");
  CHECK_FALSE(can::VariableByName("gear_ratio"));
}

namespace can_mapping_test_detail {

// A wheel's speed computed on its own: the wheel centre's velocity v_cg + omega x p (p from the CG, in the
// body frame) dotted with the wheel's heading (cos a, sin a).
double WheelSpeedByVectors(double vx, double vy, double omega, double px, double py, double heading_rad) {
  const double wx = vx - omega * py, wy = vy + omega * px;
  return wx * std::cos(heading_rad) + wy * std::sin(heading_rad);
}

// A DBC written for the wheel speed test: the four wheels in rad/s, Intel, unsigned 16 bit at 0.005 rad/s.
const char* const kWheelDbc = R"(VERSION ""
BS_:
BU_: Seat Ecu
BO_ 800 WheelSpeeds: 8 Seat
 SG_ WheelFL : 0|16@1+ (0.005,0) [0|327.675] "rad/s" Ecu
 SG_ WheelFR : 16|16@1+ (0.005,0) [0|327.675] "rad/s" Ecu
 SG_ WheelRL : 32|16@1+ (0.005,0) [0|327.675] "rad/s" Ecu
 SG_ WheelRR : 48|16@1+ (0.005,0) [0|327.675] "rad/s" Ecu
)";

}  // namespace can_mapping_test_detail

TEST_CASE("can mapping: a car turning left has the wheel speeds of a rigid body with steered front wheels") {
  // A left turn at 12 m/s, 0.35 rad/s yaw rate, a little side slip and 0.08 rad of front wheel angle.
  const double vx = 12.0, vy = -0.15, r = 0.35, steer = 0.08, lf = 1.2, lr = 1.55, track = 1.62;
  const auto w = can::WheelSpeeds(vx, vy, r, steer, lf, lr, track);
  CHECK(w[0] == doctest::Approx(WheelSpeedByVectors(vx, vy, r, lf, track / 2, steer)).epsilon(1e-12));
  CHECK(w[1] == doctest::Approx(WheelSpeedByVectors(vx, vy, r, lf, -track / 2, steer)).epsilon(1e-12));
  CHECK(w[2] == doctest::Approx(WheelSpeedByVectors(vx, vy, r, -lr, track / 2, 0)).epsilon(1e-12));
  CHECK(w[3] == doctest::Approx(WheelSpeedByVectors(vx, vy, r, -lr, -track / 2, 0)).epsilon(1e-12));
  // Turning left the inner (left) wheels roll slower than the outer ones, by yaw rate x track at the rear.
  CHECK(w[0] < w[1]);
  CHECK(w[3] - w[2] == doctest::Approx(r * track).epsilon(1e-12));
  // Straight ahead every wheel rolls at the car's speed.
  for (double s : can::WheelSpeeds(vx, 0, 0, 0, lf, lr, track)) CHECK(s == doctest::Approx(vx).epsilon(1e-12));
}

TEST_CASE("can mapping: wheel speeds go out with the mapping file's track width and factor") {
  const testing::TempDir dir;
  dir.Write("wheels.dbc", kWheelDbc);
  // The ECU wants rad/s: simulator m/s = rad/s * wheel radius (0.31 m).
  const double radius = 0.31, track = 1.48;
  std::string map = "dbc = \"wheels.dbc\"\ntrack_m = " + std::to_string(track) +
                    "\n[[message]]\nname = \"WheelSpeeds\"\ndirection = \"tx\"\nperiod_ms = 20\n";
  const char* names[4][2] = {{"WheelFL", "wheel_speed_fl_mps"}, {"WheelFR", "wheel_speed_fr_mps"},
                             {"WheelRL", "wheel_speed_rl_mps"}, {"WheelRR", "wheel_speed_rr_mps"}};
  for (const auto& n : names)
    map += std::string("[[message.signal]]\nname = \"") + n[0] + "\"\nvariable = \"" + n[1] + "\"\nfactor = " + std::to_string(radius) + "\n";
  can::CanMapping mapping(can::LoadMapping(dir.Write("wheels_map.toml", map)), 0.2);
  CHECK(mapping.Def().track_m == doctest::Approx(track));
  // The seat fills the variables from WheelSpeeds; the frame carries them in rad/s.
  const double vx = 9.0, vy = 0.05, r = 0.5, steer = 0.12, lf = 1.1, lr = 1.6;
  const auto w = can::WheelSpeeds(vx, vy, r, steer, lf, lr, mapping.Def().track_m);
  can::VariableValues v{};
  v[static_cast<size_t>(can::Variable::kWheelSpeedFlMps)] = w[0];
  v[static_cast<size_t>(can::Variable::kWheelSpeedFrMps)] = w[1];
  v[static_cast<size_t>(can::Variable::kWheelSpeedRlMps)] = w[2];
  v[static_cast<size_t>(can::Variable::kWheelSpeedRrMps)] = w[3];
  const auto due = mapping.Due(0, v);
  REQUIRE(due.size() == 1);
  const can::Message* m = mapping.Def().dbc.FindMessage("WheelSpeeds");
  REQUIRE(m);
  const auto decoded = can::DecodeMessage(*m, due[0].frame);
  const double expected_rl = WheelSpeedByVectors(vx, vy, r, -lr, track / 2, 0) / radius;
  const double expected_fr = WheelSpeedByVectors(vx, vy, r, lf, -track / 2, steer) / radius;
  CHECK(std::abs(decoded.at("WheelRL") - expected_rl) <= 0.0025 + 1e-9);
  CHECK(std::abs(decoded.at("WheelFR") - expected_fr) <= 0.0025 + 1e-9);
  for (int k = 0; k < 4; ++k) CHECK(std::abs(decoded.at(names[k][0]) * radius - w[static_cast<size_t>(k)]) <= 0.0025 * radius + 1e-9);
  CHECK(can::VariableName(can::Variable::kWheelSpeedRrMps) == "wheel_speed_rr_mps");
  CHECK(can::VariableByName("wheel_speed_fl_mps") == can::Variable::kWheelSpeedFlMps);
  // A track width out of range is refused at its line.
  const std::string bad = dir.Write("bad_map.toml", "dbc = \"wheels.dbc\"\ntrack_m = 0\n" + map.substr(map.find("[[message]]")));
  std::string error;
  try {
    can::LoadMapping(bad);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK(error.find("bad_map.toml:2") != std::string::npos);
  CHECK(error.find("track_m") != std::string::npos);
}
