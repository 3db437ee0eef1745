// `platoon export --csv` on many cars along a long road (docs/BENCHMARKS.md, "Export: 2000 cars on a 20 km road"):
// writes a session file with a generated road of --length-m (two lanes each way) and a log of --vehicles cars
// driving its lanes at 25 m/s, --rate world states per second for --seconds, then times, in the same run, the
// export of the first --export-s seconds at 10 Hz with every column (road, lane, leader: headway, time headway,
// TTC) against the baseline without the leader columns (--variables x,y,speed,lane,lane_offset).
//   export_road_bench [--vehicles 2000] [--length-m 20000] [--seconds 30] [--rate 20] [--export-s 5] [--work DIR] [--keep]
#include "platoon/config/session.hpp"
#include "bench_support.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"
#include "platoon/road/session_road.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace platoon;

int main(int argc, char** argv) {
  int vehicles = 2000;
  double length_m = 20000, seconds = 30, rate_hz = 20, export_s = 5;
  std::string work = (std::filesystem::temp_directory_path() / "export_road_bench").string();
  std::string bin_dir = process::ExecutableDir();
  bool keep = false;
  CLI::App app{"platoon export --csv of many cars on a long road: every column against no leader columns"};
  app.add_option("--vehicles", vehicles, "Cars in every world state")->check(CLI::Range(1, 65535));
  app.add_option("--length-m", length_m, "Length of the generated road, in m")->check(CLI::Range(1000.0, 200000.0));
  app.add_option("--seconds", seconds, "Sim time recorded, in s")->check(CLI::Range(1.0, 3600.0));
  app.add_option("--rate", rate_hz, "World states per sim second, in Hz")->check(CLI::Range(1.0, 1000.0));
  app.add_option("--export-s", export_s, "Sim time exported (from 0), in s")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--work", work, "Folder for the session, the log and the outputs (removed first)");
  app.add_option("--bin-dir", bin_dir, "Where the platoon binary is (default: next to this)");
  app.add_flag("--keep", keep, "Keep the work folder (the session, the log and both exports)");
  CLI11_PARSE(app, argc, argv);
  namespace fs = std::filesystem;
  fs::remove_all(work);
  fs::create_directories(work);

  // The session: a generated road, two lanes each way, and the traffic node the log's cars belong to.
  const std::string session_path = (fs::path(work) / "road.toml").string();
  {
    std::ofstream out(session_path);
    out << "[session]\nname = \"export-bench\"\n\n[road]\ngenerate_length_m = " << length_m
        << "\nseed = 3\nlanes = 2\noncoming_lanes = 2\n\n[[node]]\nname = \"traffic\"\nrole = \"traffic\"\n"
           "traffic_model = \"road\"\nvehicles = " << vehicles << "\n";
  }
  const config::SessionDef session = config::LoadSession(session_path);
  const road::Road road = road::SessionRoad(session.road);

  // The log: the cars spread evenly over the four lanes, 25 m/s, the left lanes against s.
  const std::string log = (fs::path(work) / "traffic.mcap").string();
  const int states = static_cast<int>(std::lround(seconds * rate_hz));
  const int lanes[4] = {-1, -2, 1, 2};
  const double margin = 30.0 * seconds;  // the cars stay on the road for the whole log
  bench::WriteTrafficLog(
      log, vehicles, states, rate_hz,
      [&](int i, int64_t t, protocol::EntityState& e) {
        const int lane = lanes[i % 4];
        const double dir = lane < 0 ? 1.0 : -1.0;
        const double s0 = margin + (road.Length() - 2 * margin) * (i / 4) / std::max(1, vehicles / 4);
        const double s = s0 + dir * 25.0 * NsToS(t);
        const double h = road.Heading(s) + (dir > 0 ? 0.0 : M_PI);
        e.kinematics.pose.position_m = road.LaneCenter(s, lane);
        e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(h, Vec3::UnitZ()));
        e.kinematics.velocity_mps = 25.0 * Vec3(std::cos(h), std::sin(h), 0.0);
      },
      "export_road_bench");
  const double log_mb = static_cast<double>(fs::file_size(log)) / 1e6;

  // The same export twice: without the leader columns (the baseline), then with every column.
  const std::string platoon = bin_dir + "/platoon";
  char to[32];
  std::snprintf(to, sizeof to, "%g", export_s);
  const std::string common = platoon + " export " + log + " --rate 10 --to " + to + " --config " + session_path;
  const char* me = "export_road_bench";
  const double base_s = bench::TimeCommand(common + " --csv " + (fs::path(work) / "base").string() +
                                               " --variables x,y,speed,lane,lane_offset > /dev/null 2>&1",
                                           me);
  const double full_s = bench::TimeCommand(common + " --csv " + (fs::path(work) / "full").string() + " > /dev/null 2>&1", me);
  std::printf("log: %d cars on a %.1f km road (2 lanes each way), %.0f s at %g Hz, %.1f MB\n", vehicles,
              road.Length() / 1000, seconds, rate_hz, log_mb);
  std::printf("export of %g s at 10 Hz (%d rows), wall s: without leader columns (baseline) %.2f, every column %.2f (%.2fx)\n",
              export_s, static_cast<int>(std::lround(export_s * 10 + 1)) * vehicles, base_s, full_s, full_s / base_s);
  if (!keep) fs::remove_all(work);
  return 0;
}
