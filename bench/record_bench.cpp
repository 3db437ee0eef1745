// Recording and replay cost, in one process so that every figure has its baseline
// from the same run on the same machine:
//   1. 2000 vehicles: the world stream a server broadcasts (deltas at 60 Hz, a keyframe per second),
//      encoded (baseline: what every receiver pays anyway) and then written through the session-log
//      writer with the Foxglove channels the recorder adds (transforms at 10 Hz, a scene each second);
//   2. the four-lidar farm: four VLP-16-sized clouds (28,800 point records of 36 B) at 10 Hz, written with
//      Foxglove clouds at the recorder's default foxglove_cloud_hz (10 Hz), and again at 2 Hz (the old default);
//   3. both at once (a recorded lidar farm with road traffic);
//   4. replay: the 2000-vehicle log read and served through the live world core in lock-step with no
//      member (the server's own limit), against the same core stepping with no replay.
// Figures: MB written per sim second, writer CPU per sim second (as a share of one core at real time),
// and the multiple of real time. The recorder drops a message only when its writer falls behind; a
// real-time multiple above 1 with margin means no drops on this machine.
#include "platoon/log/foxglove.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/server/replay.hpp"
#include "platoon/server/world_core.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

namespace {

using namespace platoon;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::span<const uint8_t> Span(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

protocol::EntityState Vehicle(uint64_t id, int64_t stamp_ns) {
  const double t = static_cast<double>(stamp_ns) * 1e-9;
  protocol::EntityState e;
  e.id = id;
  e.owner_node = 1;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  const double s = 20.0 * t + 10.0 * static_cast<double>(id);
  e.kinematics.pose.position_m = Vec3(s, 3.5 * static_cast<double>(id % 3), 0);
  e.kinematics.velocity_mps = Vec3(20, 0.1 * std::sin(t), 0);
  return e;
}

struct Load {
  bool vehicles = false;
  bool lidar = false;
  int cloud_every_ms = 100;  // a Foxglove cloud per stream every this many ms of sim time (10 Hz)
};

struct Figures {
  double encode_cpu_s = 0;  // encoding alone (baseline)
  double write_cpu_s = 0;   // encoding + Foxglove + writing
  double bytes = 0;
  uint64_t messages = 0;
};

// `seconds` of sim time of `load`; writes to `path` unless it is empty (then only encodes).
Figures Run(const Load& load, double seconds, int vehicles, const std::string& path) {
  std::unique_ptr<session_log::Writer> writer;
  if (!path.empty()) {
    std::string error;
    writer = session_log::Writer::Open(path, &error);
    if (!writer) throw std::runtime_error(error);
  }
  std::mt19937 rng(7);
  std::string cloud_points(28'800 * 36, '\0');
  for (auto& c : cloud_points) c = static_cast<char>(rng());
  Figures f;
  const double cpu0 = CpuSeconds();
  const int64_t end_ns = static_cast<int64_t>(seconds * 1e9);
  uint64_t sequence = 0;
  for (int64_t ms = 0; ms <= end_ns / 1'000'000; ++ms) {
    const int64_t t = ms * 1'000'000;
    if (load.vehicles && ms % 17 == 0) {  // ~60 Hz broadcasts
      protocol::WorldState w;
      w.sequence = ++sequence;
      w.sim_time_ns = t;
      w.keyframe = ms % 1000 < 17;
      // A delta carries the vehicles whose owners sent since the last one (send policy: about a third).
      for (int i = 0; i < vehicles; ++i)
        if (w.keyframe || (i + ms / 17) % 3 == 0) w.entities.push_back(Vehicle(static_cast<uint64_t>(i + 1), t));
      const std::string bytes = protocol::Encode(w);
      ++f.messages;
      if (writer) {
        (void)writer->WriteEnvelope(session_log::kWorldTopic, Span(bytes), t, t);
        if (ms % 100 < 17) {  // transforms at ~10 Hz, the scene once a second
          std::vector<foxglove::SceneEntity> scene;
          scene.reserve(w.entities.size());
          for (const auto& e : w.entities) {
            foxglove::SceneEntity s;
            s.id = e.id;
            s.pose = e.kinematics.pose;
            scene.push_back(s);
          }
          (void)writer->WriteJson("/foxglove/tf", "foxglove.FrameTransforms", foxglove::FrameTransformsSchema(),
                                  foxglove::FrameTransformsJson(scene, t), t, t);
          if (w.keyframe)
            (void)writer->WriteJson("/foxglove/scene", "foxglove.SceneUpdate", foxglove::SceneUpdateSchema(),
                                    foxglove::SceneUpdateJson(scene, t), t, t);
        }
      }
    }
    if (load.lidar && ms % 100 == 0) {
      for (int k = 0; k < 4; ++k) {
        protocol::PointCloud c;
        c.header.sensor_id = "lidar_" + std::to_string(k);
        c.header.kind = protocol::StreamKind::kLidar;
        c.header.stamp_ns = t;
        c.point_count = 28'800;
        c.point_stride = 36;
        c.points = cloud_points;
        const std::string bytes = protocol::Encode(c);
        ++f.messages;
        if (writer) {
          (void)writer->WriteEnvelope(session_log::DataTopic(c.header.sensor_id), Span(bytes), t, t);
          if (ms % load.cloud_every_ms == 0) {
            foxglove::CloudView view{"vehicle_1", Pose{}, t, c.points, c.point_count, c.point_stride};
            (void)writer->WriteJson(foxglove::CloudTopic(c.header.sensor_id), "foxglove.PointCloud",
                                    foxglove::PointCloudSchema(), foxglove::PointCloudJson(view), t, t);
          }
        }
      }
    }
    if (writer && ms % 50 == 0) (void)writer->Flush();  // the recorder's 50 ms timer
  }
  if (writer) {
    (void)writer->Close();
    if (!writer->Error().empty()) throw std::runtime_error(writer->Error());
    f.bytes = static_cast<double>(writer->BytesWritten());
  }
  f.write_cpu_s = CpuSeconds() - cpu0;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"record_bench: session-log recording cost (2000 vehicles, the four-lidar farm, both) against encoding "
               "alone, and replay speed against the bare world core, in one run.\n\n"
               "  build/bin/record_bench                 30 s of sim time each, files in /tmp\n"
               "  build/bin/record_bench --seconds 10 --dir /data"};
  double seconds = 30;
  int vehicles = 2000;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--seconds", seconds, "Sim seconds per case")->check(CLI::Range(1.0, 600.0))->capture_default_str();
  app.add_option("--vehicles", vehicles, "Vehicles in the world stream")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--dir", dir, "Where the logs are written (and removed)")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  std::printf("record_bench: %.0f s of sim time per case, %d vehicles, logs in %s\n\n", seconds, vehicles, dir.c_str());
  std::printf("%-28s %10s %12s %14s %14s %12s\n", "case", "messages", "MB/sim s", "encode CPU %", "record CPU %",
              "x real time");
  const std::string veh_log = dir + "/record_bench_vehicles.mcap";
  struct Case {
    const char* name;
    Load load;
  };
  for (const Case& c : {Case{"2000 vehicles", {true, false}}, Case{"four-lidar farm", {false, true}},
                        Case{"four-lidar farm, clouds 2 Hz", {false, true, 500}}, Case{"both", {true, true}}}) {
    const Figures base = Run(c.load, seconds, vehicles, "");
    const std::string path = c.load.vehicles && !c.load.lidar ? veh_log : dir + "/record_bench_case.mcap";
    const Figures rec = Run(c.load, seconds, vehicles, path);
    std::printf("%-28s %10llu %12.2f %13.1f%% %13.1f%% %12.1f\n", c.name, static_cast<unsigned long long>(rec.messages),
                rec.bytes / 1e6 / seconds, 100.0 * base.write_cpu_s / seconds, 100.0 * rec.write_cpu_s / seconds,
                seconds / rec.write_cpu_s);
    if (path != veh_log) std::filesystem::remove(path);
  }

  // Replay: the vehicles' log through the live core in lock-step (no member: the server's own limit).
  auto quiet = std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_st>());
  const auto t_read = std::chrono::steady_clock::now();
  const server::ReplayLog log = server::LoadReplayLog(veh_log);
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  auto run_core = [&](bool with_replay) {
    config::SessionDef def;
    def.step.lockstep = true;
    def.step.step_hz = 100;
    def.step.end_s = seconds;
    server::WorldCore core(def, quiet);
    std::shared_ptr<server::ReplaySystem> replay;
    if (with_replay) {
      replay = std::make_shared<server::ReplaySystem>(log, core, 0, static_cast<int64_t>(seconds * 1e9));
      core.AddSystem(replay, server::system_priority::kStepper);
      core.EnableTimeControl();
    }
    const auto t0 = std::chrono::steady_clock::now();
    int64_t now = 1'000'000'000;
    core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, now, 0}, now);
    size_t bytes = 0;
    while (!core.Finished()) {
      now += 1000;
      core.Poll(now);
      for (auto& o : core.TakeOutgoing()) bytes += protocol::Encode(o.message).size();  // what the PUB sends
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(wall, bytes);
  };
  const auto [bare_s, bare_bytes] = run_core(false);
  const auto [replay_s, replay_bytes] = run_core(true);
  std::printf("\nreplay of the %d-vehicle log (%zu states, read in %.2f s), lock-step at 100 Hz, no member:\n", vehicles,
              log.states.size(), read_s);
  std::printf("  bare world core (baseline): %8.1f x real time\n", seconds / bare_s);
  std::printf("  replay:                     %8.1f x real time (%.1f MB of world states sent)\n", seconds / replay_s,
              static_cast<double>(replay_bytes) / 1e6);
  (void)bare_bytes;
  std::filesystem::remove(veh_log);
  return 0;
}
