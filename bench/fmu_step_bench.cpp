// FMU step cost (docs/BENCHMARKS.md, "FMU vehicle step cost"): the project's test FMU, the single-track
// model as an FMI 2.0 co-simulation FMU (tests/fmu), stepped through FmuVehicle::Step (fmi2SetReal of the
// inputs, fmi2DoStep, fmi2GetReal of the outputs) at the driver seat's 1 kHz, against vehicle::Step of the
// same model in the same run. The two alternate over several rounds; the median round of each is printed,
// with the largest difference of the two trajectories as a check that both did the same work.
#include "platoon/vehicle/fmu.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace platoon::vehicle;

namespace {

#ifndef PLATOON_TEST_FMU
#define PLATOON_TEST_FMU ""
#endif

// The benchmark's drive: accelerate, slalom, brake, repeating every 30 s.
VehicleInput DriveAt(double t_s) {
  const double t = std::fmod(t_s, 30.0);
  VehicleInput in;
  if (t < 8) in.throttle = 0.6;
  else if (t < 24) in.throttle = 0.25, in.steer = 0.35 * std::sin(2 * M_PI * t / 4.0);
  else in.brake = 0.5;
  return in;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FMU vehicle step cost against vehicle::Step in the same run"};
  std::string fmu_path = PLATOON_TEST_FMU;
  int steps = 300'000;
  int rounds = 5;
  app.add_option("--fmu", fmu_path, "The FMU (default: the project's test FMU)");
  app.add_option("--steps", steps, "Steps of 1 ms per round")->check(CLI::Range(1000, 100'000'000));
  app.add_option("--rounds", rounds, "Rounds of each (the median is printed)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  if (fmu_path.empty()) {
    std::fprintf(stderr, "fmu_step_bench: give --fmu FILE (the test FMU was not built with this configuration)\n");
    return 2;
  }
  const VehicleDef def = DefaultVehicleDef();
  const double dt = 0.001;
  std::vector<VehicleInput> inputs(static_cast<size_t>(steps));
  for (int i = 0; i < steps; ++i) inputs[static_cast<size_t>(i)] = DriveAt(i * dt);

  std::vector<double> builtin_ns, fmu_ns;
  double max_diff_m = 0;
  for (int r = 0; r < rounds; ++r) {
    // The built-in model.
    VehicleState s;
    std::vector<double> xs(static_cast<size_t>(steps)), ys(static_cast<size_t>(steps));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      s = Step(def, s, inputs[static_cast<size_t>(i)], dt);
      xs[static_cast<size_t>(i)] = s.x_m, ys[static_cast<size_t>(i)] = s.y_m;
    }
    builtin_ns.push_back(1e9 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps);
    // The FMU (opened outside the timed loop).
    FmuDef fd = DefaultFmuDef();
    fd.path = fmu_path;
    fd.step_s = dt;
    std::unique_ptr<FmuVehicle> fmu;
    try {
      fmu = FmuVehicle::Open(fd);
    } catch (const FmuError& e) {
      std::fprintf(stderr, "fmu_step_bench: %s\n", e.what());
      return 2;
    }
    FmuInput in;
    std::vector<double> fx(static_cast<size_t>(steps)), fy(static_cast<size_t>(steps));
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      const VehicleInput& v = inputs[static_cast<size_t>(i)];
      in.steer = v.steer, in.throttle = v.throttle, in.brake = v.brake;
      if (!fmu->Step(in)) {
        std::fprintf(stderr, "fmu_step_bench: %s\n", fmu->Error().c_str());
        return 1;
      }
      fx[static_cast<size_t>(i)] = fmu->State().x_m, fy[static_cast<size_t>(i)] = fmu->State().y_m;
    }
    fmu_ns.push_back(1e9 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps);
    for (size_t i = 0; i < xs.size(); ++i) max_diff_m = std::max(max_diff_m, std::hypot(fx[i] - xs[i], fy[i] - ys[i]));
  }
  const double b = Median(builtin_ns), f = Median(fmu_ns);
  std::printf("FMU step cost, %d steps of 1 ms per round, median of %d rounds, one core\n", steps, rounds);
  std::printf("  vehicle::Step (built-in)      %8.1f ns/step\n", b);
  std::printf("  FmuVehicle::Step (test FMU)   %8.1f ns/step   (%.2fx the built-in, +%.1f ns for the FMI calls)\n", f, f / b,
              f - b);
  std::printf("  FMU real-time vehicles per core at 1 kHz: %.0f (built-in: %.0f)\n", 1e6 / f, 1e6 / b);
  std::printf("  largest trajectory difference FMU vs built-in: %.3g m\n", max_diff_m);
  return 0;
}
