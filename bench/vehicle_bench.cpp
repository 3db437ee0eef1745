// Vehicle dynamics benchmark: single-track steps per second on one core for fleets of N vehicles at
// 1 kHz, the real-time factor, and how many vehicles fit in real time on one core. Baseline, same run:
// a kinematic bicycle step (four lines, defined below) over the same fleets.
#include "platoon/vehicle/single_track.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace platoon::vehicle;

namespace {

// Baseline: kinematic bicycle at the rear axle, driven by steer angle and acceleration.
struct KinematicBicycle {
  double x_m = 0, y_m = 0, yaw_rad = 0, v_mps = 0;
};
void StepKinematic(KinematicBicycle& s, double steer_rad, double accel_mps2, double dt_s, double wheelbase_m) {
  s.v_mps += accel_mps2 * dt_s;
  s.x_m += s.v_mps * std::cos(s.yaw_rad) * dt_s;
  s.y_m += s.v_mps * std::sin(s.yaw_rad) * dt_s;
  s.yaw_rad += s.v_mps * std::tan(steer_rad) / wheelbase_m * dt_s;
}

struct Result {
  double steps_per_s = 0;
  uint64_t checksum = 0;
};

uint64_t Bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// Steps `n` single-track vehicles for `ticks` ticks of `dt_s`; each vehicle has its own input.
Result RunSingleTrack(const VehicleDef& def, int n, int ticks, double dt_s) {
  std::vector<VehicleState> states(n);
  std::vector<VehicleInput> inputs(n);
  for (int i = 0; i < n; ++i) {
    states[i].vx_mps = 15.0 + 0.01 * i;
    inputs[i] = VehicleInput{0.1 * std::sin(0.7 * (i + 1)), 0.2 + 0.1 * std::cos(0.3 * i), 0.0};
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < ticks; ++t) {
    for (int i = 0; i < n; ++i) states[i] = Step(def, states[i], inputs[i], dt_s);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Result r;
  r.steps_per_s = static_cast<double>(n) * ticks / wall_s;
  for (const auto& s : states) r.checksum ^= s.Hash();
  return r;
}

Result RunKinematic(double wheelbase_m, int n, int ticks, double dt_s) {
  std::vector<KinematicBicycle> states(n);
  std::vector<double> steer(n), accel(n);
  for (int i = 0; i < n; ++i) {
    states[i].v_mps = 15.0 + 0.01 * i;
    steer[i] = 0.055 * std::sin(0.7 * (i + 1));
    accel[i] = 0.1 * std::cos(0.3 * i);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < ticks; ++t) {
    for (int i = 0; i < n; ++i) StepKinematic(states[i], steer[i], accel[i], dt_s, wheelbase_m);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Result r;
  r.steps_per_s = static_cast<double>(n) * ticks / wall_s;
  for (const auto& s : states) r.checksum ^= Bits(s.x_m) ^ (Bits(s.y_m) << 1) ^ Bits(s.yaw_rad);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vehicle_bench: single-track vehicle steps per second on one core at 1 kHz, against a\n"
               "kinematic bicycle step measured in the same run."};
  std::vector<int> counts{1, 100, 1000};
  double steps_total = 2e6;
  double rate_hz = 1000.0;
  app.add_option("--vehicles", counts, "Fleet sizes N to measure")->capture_default_str();
  app.add_option("--steps", steps_total, "Vehicle steps per measurement (ticks = steps / N)")->capture_default_str();
  app.add_option("--rate", rate_hz, "Vehicle step rate, Hz")->capture_default_str()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const VehicleDef def = DefaultVehicleDef();
  const double dt_s = 1.0 / rate_hz;
  std::printf("vehicle_bench: one core, dt = %.3f ms, %.0f vehicle steps per measurement\n", dt_s * 1e3, steps_total);
  std::printf("%6s  %-12s  %14s  %12s  %14s  %10s\n", "N", "model", "steps/s", "RTF", "vehicles@RT", "ns/step");
  uint64_t sink = 0;
  for (int n : counts) {
    if (n <= 0) continue;
    const int ticks = std::max(1, static_cast<int>(steps_total / n));
    const Result single = RunSingleTrack(def, n, ticks, dt_s);
    const Result kinematic = RunKinematic(def.WheelbaseM(), n, ticks, dt_s);
    sink ^= single.checksum ^ kinematic.checksum;
    for (const auto& [name, r] : {std::pair{"single-track", single}, std::pair{"kinematic", kinematic}}) {
      // RTF: simulated seconds of the whole fleet per wall second; vehicles@RT: fleet size at RTF 1.
      std::printf("%6d  %-12s  %14.0f  %12.1f  %14.0f  %10.1f\n", n, name, r.steps_per_s,
                  r.steps_per_s / (n * rate_hz), r.steps_per_s / rate_hz, 1e9 / r.steps_per_s);
    }
    std::printf("%6d  single-track / kinematic cost ratio: %.1fx\n", n, kinematic.steps_per_s / single.steps_per_s);
  }
  // Printing the folded state hashes keeps the compiler from discarding the stepped states.
  std::printf("checksum %016llx\n", static_cast<unsigned long long>(sink));
  return 0;
}
