// `platoon export --ros2` throughput (docs/BENCHMARKS.md, "ROS 2 export"): writes a session log of N
// traffic vehicles over S s of sim time at R world states per second (every state keyframed, as a
// recorder logs them), then times, in the same run, `platoon export LOG --ros2 DIR` against the
// baseline `platoon export LOG --csv DIR --rate R` of the same log (the existing export of every entity).
// Prints wall time, the multiple of real time (sim seconds per wall second) and output sizes.
//   ros2_export_bench [--vehicles 2000] [--seconds 60] [--rate 10] [--work DIR] [--bin-dir DIR]
#include "bench_support.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace platoon;

namespace ros2_export_bench_detail {

uint64_t DirBytes(const std::filesystem::path& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

}  // namespace ros2_export_bench_detail

int main(int argc, char** argv) {
  using namespace ros2_export_bench_detail;
  int vehicles = 2000;
  double seconds = 60, rate_hz = 10;
  std::string work = (std::filesystem::temp_directory_path() / "ros2_export_bench").string();
  std::string bin_dir = process::ExecutableDir();
  CLI::App app{"platoon export --ros2 throughput against the CSV export of the same log"};
  app.add_option("--vehicles", vehicles, "Traffic vehicles in every world state")->check(CLI::Range(1, 65535));
  app.add_option("--seconds", seconds, "Sim time recorded, in s")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--rate", rate_hz, "World states per sim second, in Hz")->check(CLI::Range(1.0, 1000.0));
  app.add_option("--work", work, "Folder for the log and the outputs (removed first)");
  app.add_option("--bin-dir", bin_dir, "Where the platoon binary is (default: next to this)");
  CLI11_PARSE(app, argc, argv);
  namespace fs = std::filesystem;
  fs::remove_all(work);
  fs::create_directories(work);

  // The log: one node "traffic" with `vehicles` cars driving along x in lanes 3.5 m apart.
  const std::string log = (fs::path(work) / "traffic.mcap").string();
  const int states = static_cast<int>(std::lround(seconds * rate_hz));
  bench::WriteTrafficLog(
      log, vehicles, states, rate_hz,
      [](int i, int64_t t, protocol::EntityState& s) {
        s.kinematics.pose.position_m = Vec3(20.0 * (i / 8) + 25.0 * NsToS(t), 3.5 * (i % 8), 0.0);
        s.kinematics.velocity_mps = Vec3(25.0, 0.0, 0.0);
      },
      "ros2_export_bench");
  const double log_mb = static_cast<double>(fs::file_size(log)) / 1e6;

  // The same log through both exports, the baseline first.
  const std::string platoon = bin_dir + "/platoon";
  const std::string csv_dir = (fs::path(work) / "csv").string(), bag_dir = (fs::path(work) / "bag").string();
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", rate_hz);
  const double csv_s = bench::TimeCommand(platoon + " export " + log + " --csv " + csv_dir + " --rate " + rate + " 2>/dev/null", "ros2_export_bench");
  const double ros2_s = bench::TimeCommand(platoon + " export " + log + " --ros2 " + bag_dir + " 2>/dev/null", "ros2_export_bench");
  const double csv_mb = static_cast<double>(DirBytes(csv_dir)) / 1e6, bag_mb = static_cast<double>(DirBytes(bag_dir)) / 1e6;
  std::printf("log: %d vehicles x %.0f s at %g Hz (%d world states), %.1f MB\n", vehicles, seconds, rate_hz, states + 1, log_mb);
  std::printf("%-28s %10s %14s %10s\n", "export", "wall s", "x real time", "out MB");
  std::printf("%-28s %10.2f %14.1f %10.1f\n", "--csv (baseline)", csv_s, seconds / csv_s, csv_mb);
  std::printf("%-28s %10.2f %14.1f %10.1f\n", "--ros2", ros2_s, seconds / ros2_s, bag_mb);
  fs::remove_all(work);
  return 0;
}
