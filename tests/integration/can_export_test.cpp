// platoon export --candump end to end: a session log written with session_log::Writer (a driver seat's
// car on a circle with a varying speed, indicators, steering, a brake pulse and a reversing light, and two
// traffic cars, as a live server broadcasts them) is exported as CAN frames by `platoon export` as a
// process, through a DBC and mapping written here; the candump log is read back, decoded and checked
// against the recorded states, the period slots and the sim times. Exit codes and messages for what a
// user gets wrong.
#include "../support/session_fixture.hpp"

#include "platoon/can/candump.hpp"
#include "platoon/can/dbc.hpp"
#include "platoon/can/mapping.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/server/replay.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace can_export_test_detail {

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

constexpr int64_t kCanMs = 1'000'000;

const std::string kCanSession = R"(
[session]
name = "can-export"

[[node]]
name = "traffic"
role = "traffic"

[[node]]
name = "ego"
role = "driver"
)";

// The seat's car: on a circle of radius 30 m about (1200, -270) with speed 10 + 2 sin(t / 2) m/s, so its
// heading phi(t) = (10 t - 4 cos(t / 2) + 4) / 30 passes +-pi after about 9.4 s; states every 15 ms
// from 5 ms to 12 s (the 10 ms slots then hold 0, 1 or 2 of them).
constexpr double kRadiusM = 30, kCx = 1200, kCy = -270, kDriveEndS = 12;

protocol::EntityState EgoAt(int64_t stamp_ns) {
  const double t = NsToS(stamp_ns);
  const double v = 10 + 2 * std::sin(t / 2), dv = std::cos(t / 2);
  const double phi = (10 * t - 4 * std::cos(t / 2) + 4) / kRadiusM;
  protocol::EntityState e;
  e.id = VehicleId("ego", 0);
  e.owner_node = 2;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(kCx + kRadiusM * std::sin(phi), kCy - kRadiusM * std::cos(phi), 0);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(phi, Vec3::UnitZ()));
  const Vec3 along(std::cos(phi), std::sin(phi), 0), left(-std::sin(phi), std::cos(phi), 0);
  e.kinematics.velocity_mps = along * v;
  e.kinematics.acceleration_mps2 = along * dv + left * (v * v / kRadiusM);
  e.kinematics.angular_velocity_radps = Vec3(0, 0, v / kRadiusM);
  e.controls.steer = static_cast<float>(0.3 * std::sin(t));
  e.controls.brake = t >= 5 && t < 6 ? 0.5f : 0.0f;
  e.lights.indicator_left = t >= 2 && t < 4;
  e.lights.indicator_right = t >= 6 && t < 7.5;
  e.lights.reverse = t >= 11;
  return e;
}

protocol::EntityState TrafficAt(uint32_t index, int64_t stamp_ns) {
  protocol::EntityState e;
  e.id = VehicleId("traffic", index);
  e.owner_node = 1;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(15 * NsToS(stamp_ns), 4.0 * index, 0);
  e.kinematics.velocity_mps = Vec3(15, 0, 0);
  return e;
}

// Writes the log: owners' states as they come, a world state every 5 ms (a delta; a keyframe with the
// node table every second). Returns its path.
std::string WriteCanLog(const TempDir& dir) {
  const std::string path = dir.Path() + "/drive.mcap";
  std::string error;
  auto writer = session_log::Writer::Open(path, &error);
  REQUIRE_MESSAGE(writer, error);
  REQUIRE(writer->WriteJson(session_log::kSessionTopic, "", "",
                            session_log::SessionInfoJson({"can-export", kCanSession, "/nowhere/can-export.toml", "test"}), 0, 0)
              .Ok());
  std::map<uint64_t, protocol::EntityState> latest;
  std::vector<protocol::EntityState> pending;
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= static_cast<int64_t>(kDriveEndS * 1000); ++ms) {
    const int64_t t = ms * kCanMs;
    if (ms % 15 == 5) pending.push_back(latest[VehicleId("ego", 0)] = EgoAt(t));
    if (ms % 50 == 0)
      for (uint32_t i = 0; i < 2; ++i) pending.push_back(latest[VehicleId("traffic", i)] = TrafficAt(i, t));
    if (ms % 5 != 0) continue;
    protocol::WorldState w;
    w.sequence = ++sequence;
    w.server_time_ns = 500'000'000'000 + t;
    w.sim_time_ns = t;
    w.phase = protocol::SessionPhase::kRunning;
    w.keyframe = ms % 1000 == 0;
    if (w.keyframe) {
      for (const auto& [id, e] : latest) w.entities.push_back(e);
      w.nodes.assign(2, protocol::NodeInfo{});
      w.nodes[0].node_id = 1;
      w.nodes[0].name = "traffic";
      w.nodes[0].role = protocol::Role::kTraffic;
      w.nodes[1].node_id = 2;
      w.nodes[1].name = "ego";
      w.nodes[1].role = protocol::Role::kDriver;
    } else {
      w.entities = pending;
    }
    pending.clear();
    const std::string bytes = protocol::Encode(w);
    REQUIRE(writer->WriteEnvelope(session_log::kWorldTopic, std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                                  w.sim_time_ns, w.server_time_ns)
                .Ok());
  }
  REQUIRE(writer->Close().Ok());
  return path;
}

// The bus, written for this test: a classic frame with the speed in km/h and a Motorola yaw rate in
// deg/s, the pose with a DBC offset on y, the driver inputs in percent, and the lamps and gear in an
// extended-id message sent when they change.
const std::string kCanDbc = R"(VERSION ""

BU_: Seat Ecu

BO_ 512 Motion: 8 Seat
 SG_ VehSpeed : 0|16@1+ (0.01,0) [0|655.35] "km/h" Ecu
 SG_ YawRate : 23|16@0- (0.005,0) [-163.84|163.835] "deg/s" Ecu

BO_ 513 Pose: 8 Seat
 SG_ PosX : 0|24@1- (0.01,0) [-83886.08|83886.07] "m" Ecu
 SG_ PosY : 24|24@1- (0.01,-100) [-83986.08|83786.07] "m" Ecu
 SG_ Heading : 48|16@1- (0.0001,0) [-3.2768|3.2767] "rad" Ecu

BO_ 514 Inputs: 4 Seat
 SG_ Steer : 0|16@1- (0.1,0) [-100|100] "%" Ecu
 SG_ Brake : 16|8@1+ (0.5,0) [0|100] "%" Ecu

BO_ 515 Wheels: 6 Seat
 SG_ WheelRL : 0|16@1+ (0.01,0) [0|655.35] "km/h" Ecu
 SG_ WheelRR : 16|16@1+ (0.01,0) [0|655.35] "km/h" Ecu
 SG_ WheelFL : 32|16@1+ (0.01,0) [0|655.35] "km/h" Ecu

BO_ 2147484416 Lamps: 2 Seat
 SG_ Turn : 0|2@1+ (1,0) [0|3] "" Ecu
 SG_ Gear : 8|4@1- (1,0) [-8|7] "" Ecu
)";

const std::string kCanMap = R"(dbc = "bus.dbc"
track_m = 1.5

[[message]]
name = "Motion"
direction = "tx"
period_ms = 10

[[message.signal]]
name = "VehSpeed"
variable = "speed_mps"
factor = 0.2777777777777778

[[message.signal]]
name = "YawRate"
variable = "yaw_rate_radps"
factor = 0.017453292519943295

[[message]]
name = "Pose"
direction = "tx"
period_ms = 20

[[message.signal]]
name = "PosX"
variable = "x_m"

[[message.signal]]
name = "PosY"
variable = "y_m"
offset = -500

[[message.signal]]
name = "Heading"
variable = "yaw_rad"

[[message]]
name = "Inputs"
direction = "tx"
period_ms = 40

[[message.signal]]
name = "Steer"
variable = "steer"
factor = 0.01

[[message.signal]]
name = "Brake"
variable = "brake"
factor = 0.01

[[message]]
name = "Wheels"
direction = "tx"
period_ms = 20

[[message.signal]]
name = "WheelRL"
variable = "wheel_speed_rl_mps"
factor = 0.2777777777777778

[[message.signal]]
name = "WheelRR"
variable = "wheel_speed_rr_mps"
factor = 0.2777777777777778

[[message]]
name = "Lamps"
direction = "tx"
on_change = true

[[message.signal]]
name = "Turn"
variable = "indicator"

[[message.signal]]
name = "Gear"
variable = "gear"
)";

struct CanRun {
  int status = -1;
  std::string output;
};

CanRun CanExport(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/platoon", "export"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = process::Child::Spawn(argv);
  const auto status = RunToExit(child, 60s);
  REQUIRE_MESSAGE(status.has_value(), "platoon export did not exit within 60 s");
  CanRun r{*status, ""};
  for (const auto& l : child.Lines()) r.output += l + "\n";
  return r;
}

// The recorded value of a mapped variable, computed here from the recorded state (not by the export's
// code): speed along the heading, yaw rate, pose, inputs, 1 / 2 for a left / right indicator, -1 when
// the reversing light is on.
double RecordedValue(const protocol::EntityState& e, const std::string& variable) {
  const Vec3 f = e.kinematics.pose.orientation * Vec3::UnitX();
  const double yaw = std::atan2(f.y(), f.x());
  if (variable == "speed_mps") return e.kinematics.velocity_mps.dot(Vec3(std::cos(yaw), std::sin(yaw), 0));
  if (variable == "yaw_rate_radps") return e.kinematics.angular_velocity_radps.z();
  if (variable == "x_m") return e.kinematics.pose.position_m.x();
  if (variable == "y_m") return e.kinematics.pose.position_m.y();
  if (variable == "yaw_rad") return yaw;
  if (variable == "steer") return e.controls.steer;
  if (variable == "brake") return e.controls.brake;
  if (variable == "indicator") return e.lights.indicator_left ? 1 : e.lights.indicator_right ? 2 : 0;
  if (variable == "gear") return e.lights.reverse ? -1 : 1;
  // The rear wheels on the reference point's axle, 0.75 m (half the mapping's track_m) either side.
  if (variable == "wheel_speed_rl_mps") return RecordedValue(e, "speed_mps") - e.kinematics.angular_velocity_radps.z() * 0.75;
  if (variable == "wheel_speed_rr_mps") return RecordedValue(e, "speed_mps") + e.kinematics.angular_velocity_radps.z() * 0.75;
  FAIL("no recorded value for " << variable);
  return 0;
}

int64_t SlotOf(int64_t t_ns, int64_t period_ns) { return t_ns / period_ns; }  // t >= 0 here


TEST_CASE("platoon export: a recorded seat's signals as CAN frames decode back to the recorded values within half their resolution") {
  TempDir dir;
  const std::string log = WriteCanLog(dir);
  dir.Write("bus.dbc", kCanDbc);
  const std::string map_path = dir.Write("bus_map.toml", kCanMap);
  const std::string out = dir.Path() + "/drive.log";
  const CanRun r = CanExport({log, "--candump", out, "--can-map", map_path, "--interface", "vcan1"});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK_MESSAGE(r.output.find("vehicle ego:0 (car, driver seat ego)") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("clamped") == std::string::npos, r.output);

  // The seat's recorded states, as the log holds them.
  const server::ReplayLog recorded = server::LoadReplayLog(log);
  std::map<int64_t, protocol::EntityState> ego;
  for (const auto& e : recorded.states)
    if (e.id == VehicleId("ego", 0)) ego[e.kinematics.stamp_ns] = e;
  REQUIRE(ego.size() == 800);  // 5 ms + 15 ms k up to 12 s
  // The log holds the drive as written (the codec keeps the numbers).
  for (const auto& [t, e] : ego) CHECK((e.kinematics.pose.position_m - EgoAt(t).kinematics.pose.position_m).norm() < 1e-9);

  const can::MappingDef map = can::LoadMapping(map_path);
  const std::vector<can::LoggedFrame> frames = can::ReadCandumpLog(out);
  // Per message: its frames' sim times; per signal: the worst decode error and its half resolution.
  std::map<std::string, std::vector<int64_t>> times;
  std::map<std::string, std::pair<double, double>> worst;  // "Message.Signal" -> (error, half resolution)
  std::map<std::string, std::vector<std::vector<double>>> decoded_lamps;
  for (const auto& lf : frames) {
    CHECK(lf.interface == "vcan1");
    const can::MessageMapDef* md = nullptr;
    for (const auto& m : map.messages)
      if (m.message->id == lf.frame.id && m.message->extended == lf.frame.extended) md = &m;
    REQUIRE_MESSAGE(md != nullptr, "a frame of no mapped message: id " << lf.frame.id);
    times[md->message->name].push_back(lf.time_ns);
    // Every frame is stamped with a recorded sim time of the seat's car.
    const auto at = ego.find(lf.time_ns);
    REQUIRE_MESSAGE(at != ego.end(), md->message->name << " frame at " << lf.time_ns << " ns, no recorded state then");
    const auto physical = can::DecodeMessage(*md->message, lf.frame);
    std::vector<double> values;
    for (const auto& s : md->signals) {
      const double value = physical.at(s.signal->name) * s.factor + s.offset;
      double error = std::abs(value - RecordedValue(at->second, std::string(can::VariableName(s.variable))));
      if (s.variable == can::Variable::kYawRad) error = std::abs(std::remainder(error, 2 * M_PI));
      const double half = std::abs(s.signal->factor * s.factor) / 2;
      auto& w = worst[md->message->name + "." + s.signal->name];
      w = {std::max(w.first, error), half};
      INFO(md->message->name << "." << s.signal->name << " at " << NsToS(lf.time_ns) << " s: decoded " << value);
      CHECK(error <= half * (1 + 1e-9));
      values.push_back(value);
    }
    if (md->on_change) decoded_lamps[md->message->name].push_back(values);
  }
  for (const auto& [name, w] : worst)
    MESSAGE(name << ": worst decode error " << w.first << " (half resolution " << w.second << ", " << w.first / w.second * 100
                 << " % of it)");
  CHECK(worst.size() == 11);

  // Periodic messages: one frame in each period slot that holds a recorded state, at its first state.
  for (const auto& m : map.messages) {
    if (m.on_change) continue;
    std::vector<int64_t> expected;
    std::set<int64_t> slots;
    for (const auto& [t, e] : ego)
      if (slots.insert(SlotOf(t, m.period_ns)).second) expected.push_back(t);
    INFO(m.message->name);
    CHECK(times[m.message->name] == expected);
  }
  CHECK(times["Motion"].size() == 800);     // 15 ms apart: never two states in one 10 ms slot
  CHECK(times["Pose"].size() == 600);       // 20 ms slots: 12 s / 20 ms, every one holds a state
  CHECK(times["Inputs"].size() == 300);
  CHECK(times["Wheels"].size() == 600);

  // The lamps when the indicator or the gear changes: off, left at 2 s, off at 4 s, right at 6 s, off
  // at 7.5 s, reverse at 11 s.
  std::vector<int64_t> changes;
  std::pair<double, double> last{-9, -9};
  for (const auto& [t, e] : ego) {
    const std::pair<double, double> now{RecordedValue(e, "indicator"), RecordedValue(e, "gear")};
    if (now != last) changes.push_back(t);
    last = now;
  }
  CHECK(changes.size() == 6);
  CHECK(times["Lamps"] == changes);
  const std::vector<std::vector<double>> lamps = {{0, 1}, {1, 1}, {0, 1}, {2, 1}, {0, 1}, {0, -1}};
  CHECK(decoded_lamps["Lamps"] == lamps);
  // The log is in time order.
  CHECK(std::is_sorted(frames.begin(), frames.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; }));

  // --from / --to: only the states in the window.
  const std::string part = dir.Path() + "/part.log";
  const CanRun w = CanExport({log, "--candump", part, "--can-map", map_path, "--from", "3", "--to", "4"});
  REQUIRE_MESSAGE(w.status == 0, w.output);
  const auto part_frames = can::ReadCandumpLog(part);
  REQUIRE(!part_frames.empty());
  CHECK(part_frames.front().time_ns >= 3'000'000'000);
  CHECK(part_frames.back().time_ns <= 4'000'000'000);
  CHECK(part_frames.front().interface == "can0");
}

TEST_CASE("platoon export: --every-period fills every period slot with the drive between its recorded states") {
  TempDir dir;
  const std::string log = WriteCanLog(dir);
  dir.Write("bus.dbc", kCanDbc);
  const std::string map_path = dir.Write("bus_map.toml", kCanMap);
  const std::string out = dir.Path() + "/every.log";
  const CanRun r = CanExport({log, "--candump", out, "--can-map", map_path, "--every-period"});
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const can::MappingDef map = can::LoadMapping(map_path);
  const std::vector<can::LoggedFrame> frames = can::ReadCandumpLog(out);
  // The states span 5 ms .. 11.99 s: each periodic message in every slot of it, at the slot's start
  // (the first slot at the first state).
  constexpr int64_t kFirstNs = 5 * kCanMs, kLastNs = 11990 * kCanMs;
  std::map<std::string, std::vector<int64_t>> times;
  std::map<std::string, double> worst;  // "Message.Signal" -> worst error over its bound
  for (const auto& lf : frames) {
    const can::MessageMapDef* md = nullptr;
    for (const auto& m : map.messages)
      if (m.message->id == lf.frame.id && m.message->extended == lf.frame.extended) md = &m;
    REQUIRE(md != nullptr);
    times[md->message->name].push_back(lf.time_ns);
    if (md->on_change) continue;
    // Between recorded states the export interpolates them; the drive itself is the reference, within
    // half a resolution plus the interpolation's own error over dt = 15 ms: a linear blend of speed and
    // yaw rate is off by at most max|f''| dt^2 / 8 (speed'' <= 0.5 m/s^3, yaw rate'' <= 0.5 / R), the
    // heading's slerp by max|phi''| dt^2 / 8 (phi'' <= 1 / R), the cubic Hermite position by far less
    // than a micrometre, and the steering, held from the next state, by max|steer'| dt = 0.3 dt.
    constexpr double kDt = 0.015;
    const std::map<can::Variable, double> interpolation = {
        {can::Variable::kSpeedMps, 0.5 * kDt * kDt / 8}, {can::Variable::kYawRateRadps, 0.5 / kRadiusM * kDt * kDt / 8},
        {can::Variable::kYawRad, 1 / kRadiusM * kDt * kDt / 8}, {can::Variable::kXM, 1e-6}, {can::Variable::kYM, 1e-6},
        {can::Variable::kSteer, 0.3 * kDt}, {can::Variable::kBrake, 0.0},
        {can::Variable::kWheelSpeedRlMps, (0.5 + 0.5 / kRadiusM * 0.75) * kDt * kDt / 8},
        {can::Variable::kWheelSpeedRrMps, (0.5 + 0.5 / kRadiusM * 0.75) * kDt * kDt / 8}};
    const auto physical = can::DecodeMessage(*md->message, lf.frame);
    for (const auto& s : md->signals) {
      const double value = physical.at(s.signal->name) * s.factor + s.offset;
      double error = std::abs(value - RecordedValue(EgoAt(lf.time_ns), std::string(can::VariableName(s.variable))));
      if (s.variable == can::Variable::kYawRad) error = std::abs(std::remainder(error, 2 * M_PI));
      const double half = std::abs(s.signal->factor * s.factor) / 2;
      auto& w = worst[md->message->name + "." + s.signal->name];
      w = std::max(w, error / (half + interpolation.at(s.variable)));
    }
  }
  for (const auto& m : map.messages) {
    if (m.on_change) continue;
    std::vector<int64_t> expected;
    for (int64_t slot = kFirstNs / m.period_ns; slot <= kLastNs / m.period_ns; ++slot) expected.push_back(std::max(slot * m.period_ns, kFirstNs));
    INFO(m.message->name);
    CHECK(times[m.message->name] == expected);
  }
  CHECK(times["Motion"].size() == 1200);
  for (const auto& [name, w] : worst) {
    MESSAGE(name << ": worst decode error against the drive " << w * 100 << " % of half its resolution plus the interpolation's bound");
    CHECK(w <= 1.0 + 1e-6);
  }
  CHECK(worst.size() == 9);
}

TEST_CASE("platoon export: --candump errors for a bad mapping an unknown or ambiguous vehicle and an unwritable log") {
  TempDir dir;
  const std::string log = WriteCanLog(dir);
  dir.Write("bus.dbc", kCanDbc);
  const std::string map_path = dir.Write("bus_map.toml", kCanMap);
  const std::string out = dir.Path() + "/out.log";
  auto says = [](const CanRun& r, int status, const std::string& text) {
    INFO(r.output);
    CHECK(r.status == status);
    CHECK(r.output.find(text) != std::string::npos);
  };
  says(CanExport({"--help"}), 0, "platoon export drive.mcap --candump drive.log --can-map");
  // Options.
  says(CanExport({log}), 2, "expected --csv DIR (a CSV per entity), --candump FILE --can-map MAP.toml (one vehicle's CAN frames) or --pcd/--ply DIR --stream ID");
  says(CanExport({log, "--candump", out}), 2, "--candump requires --can-map");
  says(CanExport({log, "--csv", dir.Path() + "/csv", "--candump", out, "--can-map", map_path}), 2, "excludes");
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--rate", "10"}), 2, "excludes");
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--interface", "can 0"}), 2, "--interface: expected an interface name");
  // Mappings.
  says(CanExport({log, "--candump", out, "--can-map", dir.Path() + "/none.toml"}), 2, "--can-map: ");
  std::string bad = kCanMap;
  bad.replace(bad.find("variable = \"x_m\""), std::string("variable = \"x_m\"").size(), "variable = \"altitude_m\"");
  const std::string bad_path = dir.Write("bad_map.toml", bad);
  says(CanExport({log, "--candump", out, "--can-map", bad_path}), 2, bad_path + ":");
  says(CanExport({log, "--candump", out, "--can-map", bad_path}), 2, "expected a simulator variable");
  const std::string rx_only = dir.Write("rx_map.toml", "dbc = \"bus.dbc\"\n[[message]]\nname = \"Inputs\"\ndirection = \"rx\"\n"
                                                       "[[message.signal]]\nname = \"Steer\"\nvariable = \"steer\"\nfactor = 0.01\n");
  says(CanExport({log, "--candump", out, "--can-map", rx_only}), 2, "maps no tx message");
  std::string front = kCanMap;
  front.replace(front.find("variable = \"wheel_speed_rl_mps\""), std::string("variable = \"wheel_speed_rl_mps\"").size(),
                "variable = \"wheel_speed_fl_mps\"");
  says(CanExport({log, "--candump", out, "--can-map", dir.Write("front_map.toml", front)}), 2,
       "Wheels.WheelRL carries wheel_speed_fl_mps, which an export cannot compute");
  CHECK_FALSE(std::filesystem::exists(out));
  // Vehicles.
  const CanRun nobody = CanExport({log, "--candump", out, "--can-map", map_path, "--vehicle", "nobody"});
  says(nobody, 2, "has no vehicle \"nobody\" (its vehicles: ");
  says(nobody, 2, "ego:0 (car, driver seat)");
  says(nobody, 2, "traffic:1 (car)");
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--vehicle", "traffic"}), 2, "\"traffic\" is ambiguous, it names 2 vehicles");
  const CanRun traffic = CanExport({log, "--candump", out, "--can-map", map_path, "--vehicle", "traffic:1"});
  says(traffic, 0, "vehicle traffic:1 (car)");
  const auto traffic_frames = can::ReadCandumpLog(out);
  REQUIRE(!traffic_frames.empty());
  CHECK(traffic_frames.front().time_ns == 0);  // its first state
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--vehicle", fmt::format("{:x}", VehicleId("ego", 0))}), 0,
       "vehicle ego:0");
  // No driver seat in the session given: the choices are listed.
  const std::string no_seat = dir.Write("no_seat.toml", "[session]\nname = \"x\"\n[[node]]\nname = \"traffic\"\nrole = \"traffic\"\n");
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--config", no_seat}), 2,
       "no recorded driver seat's vehicle; choose the vehicle with --vehicle NAME (its vehicles: ");
  says(CanExport({log, "--candump", out, "--can-map", map_path, "--from", "20"}), 1, "nothing to export");
  // Outputs.
  says(CanExport({log, "--candump", dir.Write("file", "x") + "/sub.log", "--can-map", map_path}), 2, "--candump: ");
  if (std::filesystem::exists("/dev/full"))
    says(CanExport({log, "--candump", "/dev/full", "--can-map", map_path}), 2, "writing /dev/full failed");
}

}  // namespace can_export_test_detail
