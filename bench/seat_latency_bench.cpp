// Input-to-photon latency of the driver seat (issue 37, Benchmark): a scripted steering device steps its
// axis at a random instant; the seat's path carries it as the seat does (node/src/driver_seat.cpp): the
// seat thread polls the device about every millisecond between frames and hands the input to the 1 kHz
// dynamics thread (vehicle::Step, the seat's single-track model), whose pose the seat thread renders at
// view_fps in its own window (viewer/seat_window.hpp, 1280 x 720, swapped without vsync) and reads back.
// Measured per step: from the axis change to the readback of (a) the first frame drawn from a pose that
// moved because of it, (b) the first frame whose pixels differ from the frame before the step. Between
// steps the car is reset to straight ahead; the eye stays where it is (only the view yaws), so without a
// step every frame is the same image. Baseline in the same run: the frame time (render + swap + readback).
// Excluded: the display's scan-out and the panel (Xvfb has none), the USB device's own latency.
// Needs an X display: run under xvfb-run (Mesa llvmpipe renders on the CPU).
#include "percentile.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/single_track.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/seat_window.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace platoon;
using namespace platoon::viewer;
using Clock = std::chrono::steady_clock;

namespace seat_latency_bench_detail {

using platoon::bench::Percentile;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A straight road with its markings, so that a yaw moves edges across the image.
road::Road MakeRoad() {
  road::RoadDef def = road::DefaultRoadDef();
  def.sections = {road::LineSection(2000)};
  def.lane_widths_left_m = {3.5, 3.5};
  def.lane_widths_right_m = {3.5, 3.5};
  def.markings = road::DefaultMarkings(2, 2);
  return road::Road(def);
}

// The scripted device: steer 0 until the step instant, then `level`.
struct ScriptedDevice {
  std::atomic<int64_t> step_at_ns{INT64_MAX};  // steady clock, ns since epoch
  double level = 0.5;
  double Poll(Clock::time_point now) const {
    return now.time_since_epoch().count() >= step_at_ns.load() ? level : 0.0;
  }
};

// The 1 kHz dynamics of the seat's car, on its own thread; Reset puts it back straight ahead.
class Dynamics {
 public:
  explicit Dynamics(double speed_mps) : speed_mps_(speed_mps) { Reset(); }
  void Reset() {
    std::lock_guard lock(mutex_);
    state_ = vehicle::VehicleState{};
    state_.vx_mps = speed_mps_;
    input_ = vehicle::VehicleInput{};
  }
  void SetInput(double steer) {
    std::lock_guard lock(mutex_);
    input_.steer = steer;
    input_.throttle = 0.2;
  }
  double Yaw() const {
    std::lock_guard lock(mutex_);
    return state_.yaw_rad;
  }
  void Run(const std::atomic<bool>& stop) {
    auto next = Clock::now();
    while (!stop.load()) {
      next += std::chrono::milliseconds(1);
      std::this_thread::sleep_until(next);
      std::lock_guard lock(mutex_);
      state_ = vehicle::Step(def_, state_, input_, 0.001);
      state_.x_m = state_.y_m = 0;  // the eye stays: only the view yaws
    }
  }

 private:
  const vehicle::VehicleDef def_ = vehicle::DefaultVehicleDef();
  const double speed_mps_;
  mutable std::mutex mutex_;
  vehicle::VehicleState state_;
  vehicle::VehicleInput input_;
};

size_t ChangedPixels(const Image& a, const Image& b) {
  if (a.rgb.size() != b.rgb.size()) return a.rgb.size() / 3;
  size_t n = 0;
  for (size_t k = 0; k < a.rgb.size(); k += 3)
    n += (a.rgb[k] != b.rgb[k] || a.rgb[k + 1] != b.rgb[k + 1] || a.rgb[k + 2] != b.rgb[k + 2]) ? 1 : 0;
  return n;
}

}  // namespace seat_latency_bench_detail

int main(int argc, char** argv) {
  using namespace seat_latency_bench_detail;
  CLI::App app{"seat_latency_bench: input-to-photon latency of the driver seat (scripted steering step -> first\n"
               "frame read back with changed pixels), p50/p99 in ms and in frames at --fps, against the frame time.\n"
               "Run under xvfb-run -a -s \"-screen 0 1280x1024x24\" when there is no display."};
  int steps = 200;
  double fps = 60, speed_mps = 20, level = 0.5;
  unsigned seed = 1;
  app.add_option("--steps", steps, "Steering steps measured")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--fps", fps, "The seat's view_fps, in Hz")->check(CLI::Range(10.0, 240.0))->capture_default_str();
  app.add_option("--speed", speed_mps, "The car's speed, in m/s")->check(CLI::Range(1.0, 60.0))->capture_default_str();
  app.add_option("--level", level, "Steering step, -1..1 of full lock")->check(CLI::Range(-1.0, 1.0))->capture_default_str();
  app.add_option("--seed", seed, "Seed of the step instants")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const road::Road road = MakeRoad();
    SceneGraph scene;
    scene.SetRoads(road::RoadNetwork({road.Def()}));
    SeatWindowDef def = DefaultSeatWindowDef();
    def.cockpit = false;  // the view of the world only: the own car's wheel would move with the input at once
    def.mirrors.clear();
    SeatWindow window(def, scene);
    const Vec3 eye_m(100.0, -5.25, 1.2);  // lane -2's centre, 1.2 m up, looking along the road

    ScriptedDevice device;
    device.level = level;
    Dynamics dynamics(speed_mps);
    std::atomic<bool> stop{false};
    std::thread dyn([&] { dynamics.Run(stop); });

    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / fps));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.0, 1.0);
    std::vector<double> pose_ms, photon_ms, frame_ms;
    int missed = 0;
    Image previous, image;
    auto next_frame = Clock::now();
    // One frame of the seat thread: wait for its time polling the device each millisecond, then render the
    // pose of the dynamics and read it back. Returns the readback's time and the yaw drawn.
    auto frame = [&](double& yaw_drawn) {
      while (Clock::now() < next_frame) {
        dynamics.SetInput(device.Poll(Clock::now()));
        std::this_thread::sleep_for(std::chrono::microseconds(1000));
      }
      next_frame += period;
      if (Clock::now() > next_frame) next_frame = Clock::now();  // late: no catching up, as the seat
      dynamics.SetInput(device.Poll(Clock::now()));
      window.PollEvents();
      const auto t0 = Clock::now();
      yaw_drawn = dynamics.Yaw();
      const Pose eye{eye_m, Quat(Eigen::AngleAxisd(yaw_drawn, Vec3::UnitZ()))};
      window.Render(eye, {}, {}, &image);
      const auto t1 = Clock::now();
      frame_ms.push_back(Ms(t1 - t0));
      return t1;
    };
    for (int s = 0; s < steps; ++s) {
      device.step_at_ns.store(INT64_MAX);
      dynamics.Reset();
      double yaw0 = 0, yaw = 0;
      // Settle: two frames of the straight car; the second is the reference image.
      frame(yaw0);
      frame(yaw0);
      previous = image;
      // The step at a random instant within the next frame period.
      const auto step_at = next_frame + std::chrono::duration_cast<Clock::duration>(period * phase(rng));
      device.step_at_ns.store(step_at.time_since_epoch().count());
      bool pose_seen = false, photon_seen = false;
      for (int f = 0; f < 60 && !photon_seen; ++f) {
        const auto done = frame(yaw);
        if (done < step_at) {
          previous = image;
          continue;
        }
        if (!pose_seen && yaw != yaw0) {
          pose_seen = true;
          pose_ms.push_back(Ms(done - step_at));
        }
        if (ChangedPixels(previous, image) > 0) {
          photon_seen = true;
          photon_ms.push_back(Ms(done - step_at));
        }
      }
      if (!photon_seen) ++missed;
    }
    stop.store(true);
    dyn.join();
    if (photon_ms.empty() || pose_ms.empty()) {
      std::fprintf(stderr, "seat_latency_bench: no step changed the image (%d missed)\n", missed);
      return 1;
    }
    const double frame_period_ms = 1000.0 / fps;
    std::printf("seat_latency_bench: %d steering steps of %.2f at %.0f m/s, seat at %.0f fps (%.2f ms a frame), 1280 x 720, %s\n",
                steps, level, speed_mps, fps, frame_period_ms, window.GlInfo().c_str());
    std::printf("baseline frame time (render + swap + readback): p50 %6.2f ms  p99 %6.2f ms\n", Percentile(frame_ms, 50),
                Percentile(frame_ms, 99));
    std::printf("input -> first frame drawn from a moved pose: p50 %6.2f ms (%.2f frames)  p99 %6.2f ms (%.2f frames)  n=%zu\n",
                Percentile(pose_ms, 50), Percentile(pose_ms, 50) / frame_period_ms, Percentile(pose_ms, 99),
                Percentile(pose_ms, 99) / frame_period_ms, pose_ms.size());
    std::printf("input -> first frame with changed pixels:     p50 %6.2f ms (%.2f frames)  p99 %6.2f ms (%.2f frames)  n=%zu, %d missed\n",
                Percentile(photon_ms, 50), Percentile(photon_ms, 50) / frame_period_ms, Percentile(photon_ms, 99),
                Percentile(photon_ms, 99) / frame_period_ms, photon_ms.size(), missed);
    std::printf("goal p99 <= 2 frames (%.2f ms): %s\n", 2 * frame_period_ms,
                Percentile(photon_ms, 99) <= 2 * frame_period_ms ? "met" : "NOT met");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seat_latency_bench: %s\n", e.what());
    return 1;
  }
}
