// An ECU outside the simulator for the CAN closed-loop test (docs/CAN.md, "Worked example"): it knows the
// rig's DBC and the ring road, reads the seat's SimMotion and SimPose frames from a CAN bus, and answers
// every SimPose with one EcuCommand frame: pure pursuit of a lane centre from the rear axle and a
// proportional speed control. It uses platoon's DBC codec and transport only, never the seat's mapping.
//
//   can_rig_ecu --bus udp:127.0.0.1:PORT>127.0.0.1:PORT --dbc rig.dbc --road ring.toml --lane -1
//               --speed 12 --wheelbase 2.7 --max-steer-rad 0.6 --commands 4000
//
// Prints "ecu: ready" once its bus is open, "ecu: done <n> commands" when it has sent --commands
// commands (then it falls silent and exits), and exits 2 on a usage error, 1 when the seat stays silent
// for 10 s.
#include "platoon/can/dbc.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/config/session.hpp"
#include "platoon/road/session_road.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

using namespace platoon;

int main(int argc, char** argv) {
  std::map<std::string, std::string> arg;
  for (int i = 1; i + 1 < argc; i += 2) arg[argv[i]] = argv[i + 1];
  for (const char* key : {"--bus", "--dbc", "--road", "--lane", "--speed", "--wheelbase", "--max-steer-rad", "--commands"})
    if (!arg.count(key)) {
      std::fprintf(stderr, "can_rig_ecu: missing %s (see the file comment)\n", key);
      return 2;
    }
  try {
    const can::Database dbc = can::LoadDbc(arg["--dbc"]);
    const can::Message* motion = dbc.FindMessage("SimMotion");
    const can::Message* pose = dbc.FindMessage("SimPose");
    const can::Message* command = dbc.FindMessage("EcuCommand");
    if (!motion || !pose || !command) {
      std::fprintf(stderr, "can_rig_ecu: %s lacks SimMotion, SimPose or EcuCommand\n", arg["--dbc"].c_str());
      return 2;
    }
    const config::SessionDef session = config::LoadSessionText("[road]\nfile = \"" + arg["--road"] + "\"\n", "can_rig_ecu");
    const road::Road road = road::SessionRoad(session.road);
    const int lane = std::stoi(arg["--lane"]);
    const double speed_mps = std::stod(arg["--speed"]), wheelbase_m = std::stod(arg["--wheelbase"]);
    const double max_steer_rad = std::stod(arg["--max-steer-rad"]);
    const long commands = std::stol(arg["--commands"]);
    auto bus = can::OpenBus(arg["--bus"]);
    std::printf("ecu: ready\n");
    std::fflush(stdout);

    double v_mps = 0;
    long sent = 0;
    unsigned counter = 0;
    auto last_frame = std::chrono::steady_clock::now();
    while (sent < commands) {
      const auto frame = bus->Receive();
      if (!frame) {
        if (std::chrono::steady_clock::now() - last_frame > std::chrono::seconds(10)) {
          std::fprintf(stderr, "can_rig_ecu: no frame from the seat for 10 s\n");
          return 1;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      last_frame = std::chrono::steady_clock::now();
      if (frame->id == motion->id && !frame->extended) {
        v_mps = can::DecodeMessage(*motion, *frame).at("Speed") / 3.6;  // the DBC carries km/h
        continue;
      }
      if (frame->id != pose->id || frame->extended) continue;
      // Pure pursuit of the lane centre a speed-dependent look-ahead ahead of the rear axle (wrapping
      // round a closed road).
      const auto p = can::DecodeMessage(*pose, *frame);
      const double yaw = p.at("Yaw");
      const Vec3 rear(p.at("PosX"), p.at("PosY"), 0);
      const road::RoadCoord at = road.Project(rear);
      const double look = 3.0 + 0.5 * std::abs(v_mps);
      const double along = lane < 0 ? look : -look;
      const Vec3 goal = road.LaneCenter(std::fmod(at.s_m + along + road.Length(), road.Length()), lane);
      const Vec3 d = goal - rear;
      const double gx = std::cos(yaw) * d.x() + std::sin(yaw) * d.y();
      const double gy = -std::sin(yaw) * d.x() + std::cos(yaw) * d.y();
      const double steer = std::clamp(std::atan2(2.0 * wheelbase_m * gy, gx * gx + gy * gy) / max_steer_rad, -1.0, 1.0);
      const double speed_error = speed_mps - v_mps;
      const double throttle = std::clamp(0.15 + 0.3 * speed_error, 0.0, 1.0);
      const double brake = std::clamp(-0.2 * speed_error - 0.1, 0.0, 1.0);
      // The command in the DBC's units (percent).
      const can::Frame out = can::EncodeMessage(*command, {{"SteerCmd", 100 * steer},
                                                           {"ThrottleCmd", 100 * throttle},
                                                           {"BrakeCmd", 100 * brake},
                                                           {"IndicatorCmd", 0},
                                                           {"Counter", counter++ % 16}});
      if (bus->Send(out)) ++sent;
    }
    std::printf("ecu: done %ld commands (bus: %llu sent, %llu received, %llu rejected)\n", sent,
                static_cast<unsigned long long>(bus->Counters().sent), static_cast<unsigned long long>(bus->Counters().received),
                static_cast<unsigned long long>(bus->Counters().rejected));
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "can_rig_ecu: %s\n", e.what());
    return 2;
  }
}
