// ctest data_write_csv, step 1 (called by check_csv.py): runs configs/drivers.toml's robot seat (input
// script configs/inputs/lane_change.csv) with its road traffic through `platoon run`, on free loopback
// ports, and writes what the Python check needs into WORK_DIR:
//   drivers.toml, inputs/lane_change.csv   the session, copied, with four free ports
//   data/robot.csv                          the robot's data write (the path is relative to the working directory)
//   run.log                                 every line `platoon run` printed
//   robot_summary.json                      the robot's SUMMARY object
//   road.csv                                the session road's reference line every 5 cm: road_id,s_m,x_m,y_m,heading_rad
//   lanes.csv                               road_id,lane,center_offset_m of every lane
// Four seconds after the robot's data write starts, its process is stopped (SIGSTOP) for 0.6 s, as a
// loaded machine deschedules a node: the rows of that time must still all be in the file.
// The road is sampled with Road::Evaluate, never Road::Project, so the check's projection is independent.
//
//   data_write_session PLATOON SOURCE_DIR WORK_DIR DURATION_S
// Exit 0 when the session ran and stopped cleanly, 1 otherwise (with the log's tail on stderr).
#include "platoon/config/session.hpp"
#include "platoon/process/child.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/transport/channel.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using namespace platoon;

namespace {

std::string ReadText(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The pid of `parent`'s child started with `--name NAME`, or -1.
pid_t ChildNamed(pid_t parent, const std::string& name) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadText(e.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = -1;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    const std::string cmdline = ReadText(e.path() / "cmdline");
    if (cmdline.find(std::string("--name") + '\0' + name + '\0') != std::string::npos) return std::stoi(pid);
  }
  return -1;
}

int Fail(const std::string& why, const std::vector<std::string>& lines = {}) {
  const size_t from = lines.size() > 40 ? lines.size() - 40 : 0;
  for (size_t i = from; i < lines.size(); ++i) std::cerr << lines[i] << "\n";
  std::cerr << "data_write_session: " << why << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: data_write_session PLATOON SOURCE_DIR WORK_DIR DURATION_S\n";
    return 2;
  }
  const std::string platoon = fs::absolute(argv[1]).string();
  const fs::path source = argv[2], work = fs::absolute(argv[3]);
  const std::string duration = argv[4];
  fs::create_directories(work / "inputs");
  fs::remove_all(work / "data");

  // The session on four free ports, as the test fixture's ConfigOnFreePorts does.
  std::string text = ReadText(source / "configs/drivers.toml");
  const auto p = transport::FreeLoopbackPorts(4);
  const std::regex control("control_port *= *7400[^\n]*");
  if (!std::regex_search(text, control)) return Fail("configs/drivers.toml no longer has control_port = 7400");
  text = std::regex_replace(text, control, fmt::format("control_port = {}\ntime_port = {}\nworld_port = {}\nstate_port = {}",
                                                       p[0], p[1], p[2], p[3]));
  const fs::path session = work / "drivers.toml";
  std::ofstream(session) << text;
  fs::copy_file(source / "configs/inputs/lane_change.csv", work / "inputs/lane_change.csv",
                fs::copy_options::overwrite_existing);

  // The robot and the traffic; the wheel seat needs a device. Output paths are relative to here.
  if (chdir(work.c_str()) != 0) return Fail("cannot enter " + work.string());
  auto run = process::Child::Spawn({platoon, "run", session.string(), "--only", "server,traffic,robot", "--duration", duration});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(duration) + 40);
  // The stall: SIGSTOP the robot for 0.6 s, 4 s after its data write started.
  std::optional<std::chrono::steady_clock::time_point> stall_at;
  bool stalled = false;
  const std::regex write_started(R"(^robot +\|.*data write: )");
  while (!run.TryWait() && std::chrono::steady_clock::now() < deadline) {
    if (auto line = run.ReadLine(std::chrono::milliseconds(100)); line && !stall_at && std::regex_search(*line, write_started))
      stall_at = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    if (stall_at && !stalled && std::chrono::steady_clock::now() >= *stall_at) {
      stalled = true;
      const pid_t robot = ChildNamed(run.Pid(), "robot");
      if (robot <= 0) return Fail("no robot node process under platoon run", run.Lines());
      kill(robot, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      kill(robot, SIGCONT);
      std::cout << "data_write_session: robot (pid " << robot << ") stopped for 0.6 s\n";
    }
  }
  if (!run.TryWait()) {
    run.Signal(SIGKILL);
    run.WaitFor(std::chrono::seconds(5));
    return Fail("platoon run did not stop in time", run.Lines());
  }
  while (run.ReadLine(std::chrono::milliseconds(0))) {
  }
  std::ofstream log(work / "run.log");
  std::string summary;
  const std::regex robot_summary(R"(^robot +\| SUMMARY (\{.*\})$)");
  for (const auto& l : run.Lines()) {
    log << l << "\n";
    std::smatch m;
    if (std::regex_match(l, m, robot_summary)) summary = m[1];
  }
  if (*run.Status() != 0) return Fail("platoon run exited with " + std::to_string(*run.Status()), run.Lines());
  if (summary.empty()) return Fail("no SUMMARY line from the robot", run.Lines());
  if (!stalled) return Fail("the robot's data write never started, so it was never stalled", run.Lines());
  std::ofstream(work / "robot_summary.json") << summary << "\n";

  // The road, sampled along its reference line, and its lanes.
  const config::SessionDef def = config::LoadSession(session.string());
  const road::RoadNetwork roads = road::SessionRoadNetwork(def.road);
  std::ofstream road_csv(work / "road.csv"), lanes_csv(work / "lanes.csv");
  road_csv << "road_id,s_m,x_m,y_m,heading_rad\n";
  lanes_csv << "road_id,lane,center_offset_m\n";
  for (const auto& r : roads.Roads()) {
    const int n = static_cast<int>(r.Length() / 0.05);
    for (int i = 0; i <= n + 1; ++i) {
      const road::RoadPoint pt = r.Evaluate(std::min(r.Length(), i * 0.05));
      road_csv << fmt::format("{},{:.6f},{:.6f},{:.6f},{:.9f}\n", r.Id(), pt.s_m, pt.position_m.x(), pt.position_m.y(),
                              pt.heading_rad);
    }
    for (int lane = -r.LanesRight(); lane <= r.LanesLeft(); ++lane)
      if (lane != 0) lanes_csv << fmt::format("{},{},{:.6f}\n", r.Id(), lane, r.LaneCenterOffset(lane));
  }
  std::cout << "data_write_session: ran " << session.string() << " for " << duration << " s; robot: " << summary << "\n";
  return 0;
}
