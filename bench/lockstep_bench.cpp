// Lock-step throughput: the demo session (configs/demo.toml: a server, two traffic nodes, an observer)
// run through `platoon run --lockstep --duration S` as separate processes on loopback, as fast as its
// slowest member allows. Reports steps per wall second and sim seconds per wall second (the multiple of
// real time) over the stepping window, read from the server's own log timestamps ("session running" to
// "session reached its end" in lock-step, "server stopping" in real time), and the CPU of every process of the session (launcher, server, nodes) from
// getrusage(RUSAGE_CHILDREN).
// Baseline, same run: the same session in real-time mode for a few seconds (1.0x real time by
// construction; its CPU per sim second is the figure to compare). Also, the four-lidar farm
// (configs/lidar_farm.toml) in lock-step: whether it finishes, and how fast.
// Every config is copied with free loopback ports, so the bench does not collide with a running session.
#include "platoon/process/child.hpp"
#include "platoon/transport/channel.hpp"

#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using platoon::process::Child;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<uint16_t> FreePorts(int count) { return platoon::transport::FreeLoopbackPorts(count); }

// A copy of `config` in `dir` with its [server] control_port line replaced by four free ports.
std::string WithFreePorts(const std::string& config, const std::string& dir) {
  std::ifstream f(config);
  if (!f) throw std::runtime_error("cannot read " + config);
  std::stringstream text;
  text << f.rdbuf();
  const auto p = FreePorts(4);
  const std::regex control("(^|\n)control_port *= *[0-9]+[^\n]*");
  std::string s = text.str();
  if (!std::regex_search(s, control)) throw std::runtime_error(config + ": no control_port line to replace");
  s = std::regex_replace(s, control,
                         "$1control_port = " + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                             "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]),
                         std::regex_constants::format_first_only);
  const std::string out = dir + "/" + std::filesystem::path(config).filename().string();
  std::ofstream(out) << s;
  return out;
}

double CpuChildrenSeconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU seconds (user + system) so far of process `root` and all its descendants, from /proc.
double TreeCpuSeconds(pid_t root) {
  struct Proc {
    pid_t ppid;
    double cpu;
  };
  std::map<pid_t, Proc> procs;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string tok;
    pid_t ppid = 0;
    double ut = 0, st = 0;
    for (int field = 3; rest >> tok; ++field) {
      if (field == 4) ppid = std::stoi(tok);
      if (field == 14) ut = std::stod(tok);
      if (field == 15) {
        st = std::stod(tok);
        break;
      }
    }
    procs[std::stoi(name)] = {ppid, (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK))};
  }
  double sum = 0;
  for (const auto& [pid, p] : procs) {
    for (pid_t q = pid; q > 1;) {
      if (q == root) {
        sum += p.cpu;
        break;
      }
      const auto it = procs.find(q);
      if (it == procs.end()) break;
      q = it->second.ppid;
    }
  }
  return sum;
}

bool IsServer(const std::string& line) { return line.rfind("server ", 0) == 0 || line.rfind("server|", 0) == 0; }

// Seconds since midnight of a "HH:MM:SS.mmm" log stamp in `line`.
std::optional<double> Stamp(const std::string& line) {
  static const std::regex re("(\\d{2}):(\\d{2}):(\\d{2})\\.(\\d{3}) ");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return std::nullopt;
  return std::stoi(m[1]) * 3600.0 + std::stoi(m[2]) * 60.0 + std::stoi(m[3]) + std::stoi(m[4]) / 1000.0;
}

std::optional<double> Field(const std::string& line, const std::string& key) {
  std::smatch m;
  if (std::regex_search(line, m, std::regex("\"" + key + "\":(-?[0-9.]+)"))) return std::stod(m[1]);
  return std::nullopt;
}


struct Result {
  std::string name, mode;
  bool finished = false;  // the session reached its end (lock-step) or ran its time (real time)
  std::string note;
  double sim_s = 0, stepping_wall_s = 0, total_wall_s = 0, steps = 0;
  double cpu_s = 0;          // every process of the session, whole run (start-up, join, stepping, stop)
  double cpu_running_s = 0;  // the same from "session running" on (the stepping window and the stop)
};

// Runs `platoon run config [--lockstep] --duration d`, gives up after `timeout`.
Result RunSession(const std::string& bin_dir, const std::string& config, const std::string& name, bool lockstep,
                  double duration_s, std::chrono::seconds timeout, bool verbose) {
  Result r;
  r.name = name;
  r.mode = lockstep ? "lock-step" : "real time";
  std::vector<std::string> args = {bin_dir + "/platoon", "run", config, "--duration", std::to_string(duration_s)};
  if (lockstep) args.push_back("--lockstep");
  const double cpu0 = CpuChildrenSeconds();
  const auto t0 = Clock::now();
  Child launcher = Child::Spawn(args);
  std::optional<int> status;
  std::optional<double> cpu_at_running;
  while (!(status = launcher.TryWait()) && Clock::now() - t0 < timeout) {
    const auto l = launcher.ReadLine(200ms);
    if (!l) continue;
    if (verbose) std::fprintf(stderr, "  %s\n", l->c_str());
    if (!cpu_at_running && IsServer(*l) && l->find("session running") != std::string::npos)
      cpu_at_running = TreeCpuSeconds(launcher.Pid());
  }
  if (!status) {
    r.note = "no end within " + std::to_string(timeout.count()) + " s wall: stopped";
    launcher.Signal(SIGTERM);  // the launcher stops its processes; their SUMMARY lines say how far they got
    status = launcher.WaitFor(20s);
    if (!status) {
      launcher.Signal(SIGKILL);
      status = launcher.WaitFor(5s);
    }
  }
  while (launcher.ReadLine(0ms)) {
  }
  r.total_wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_s = CpuChildrenSeconds() - cpu0;
  if (cpu_at_running) r.cpu_running_s = r.cpu_s - *cpu_at_running;

  std::optional<double> running_at, stopping_at;
  for (const auto& l : launcher.Lines()) {
    if (!IsServer(l)) continue;
    if (!running_at && l.find("session running") != std::string::npos) running_at = Stamp(l);
    // Lock-step ends at the server's "reached its end" line (its 0.3 s stop linger is no stepping); real
    // time at "server stopping".
    if (l.find("reached its end") != std::string::npos) stopping_at = Stamp(l);
    if (!stopping_at && l.find("server stopping") != std::string::npos) stopping_at = Stamp(l);
    if (l.find("SUMMARY") != std::string::npos) {
      r.sim_s = Field(l, "sim_time_s").value_or(0);
      r.steps = Field(l, "steps").value_or(0);
    }
  }
  if (running_at && stopping_at) {
    r.stepping_wall_s = *stopping_at - *running_at;
    if (r.stepping_wall_s < 0) r.stepping_wall_s += 86400;  // past midnight
  }
  const bool ended = [&] {
    for (const auto& l : launcher.Lines())
      if (l.find(lockstep ? "the session reached its end" : "duration reached") != std::string::npos) return true;
    return false;
  }();
  r.finished = ended && status == 0;
  if (r.note.empty() && !r.finished) r.note = "launcher exit " + std::to_string(status.value_or(-1));
  if (!running_at) r.note += (r.note.empty() ? "" : "; ") + std::string("session never ran");
  if (!r.finished) {
    // Where it got to, per process.
    for (const auto& l : launcher.Lines())
      if (l.find("SUMMARY") != std::string::npos) {
        const auto sim = Field(l, "sim_time_s");
        std::fprintf(stderr, "  %s: %s sim s\n", l.substr(0, l.find('|')).c_str(),
                     sim ? std::to_string(*sim).c_str() : "?");
      }
    std::fprintf(stderr, "  last lines of %s:\n", name.c_str());
    const auto& ls = launcher.Lines();
    for (size_t i = ls.size() > 15 ? ls.size() - 15 : 0; i < ls.size(); ++i) std::fprintf(stderr, "    %s\n", ls[i].c_str());
  }
  return r;
}

void PrintTable(const std::vector<Result>& rs) {
  std::printf("\n| session | mode | result | sim s | stepping wall s | steps | steps/s | x real time | CPU s, whole run "
              "| CPU s, stepping | CPU s per sim s (stepping) | cores busy (stepping) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rs) {
    const bool have = r.stepping_wall_s > 0;
    char steps[32] = "-", rate[32] = "-", rtf[32] = "-", per_sim[32] = "-", cores[32] = "-";
    if (r.steps > 0) std::snprintf(steps, sizeof steps, "%.0f", r.steps);
    if (have && r.steps > 0) std::snprintf(rate, sizeof rate, "%.0f", r.steps / r.stepping_wall_s);
    if (have) std::snprintf(rtf, sizeof rtf, "%.1f", r.sim_s / r.stepping_wall_s);
    if (r.sim_s > 0) std::snprintf(per_sim, sizeof per_sim, "%.3f", r.cpu_running_s / r.sim_s);
    if (have) std::snprintf(cores, sizeof cores, "%.2f", r.cpu_running_s / r.stepping_wall_s);
    const std::string result = r.finished ? "finished" : "DID NOT FINISH (" + r.note + ")";
    std::printf("| %s | %s | %s | %.2f | %.2f | %s | %s | %s | %.2f | %.2f | %s | %s |\n", r.name.c_str(),
                r.mode.c_str(), result.c_str(), r.sim_s, r.stepping_wall_s, steps, rate, rtf, r.cpu_s, r.cpu_running_s,
                per_sim, cores);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Lock-step throughput of the demo session against the same session in real time, and the lidar farm in "
      "lock-step. Every session runs as real processes through `platoon run` on free loopback ports."};
  double sim_s = 60, realtime_s = 10, farm_sim_s = 10;
  int farm_timeout_s = 120;
  bool no_farm = false, verbose = false;
  std::string bin_dir = platoon::process::ExecutableDir();
  std::string source_dir = PLATOON_SOURCE_DIR;
  app.add_option("--sim-seconds", sim_s, "Sim seconds of the demo session in lock-step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--realtime-seconds", realtime_s, "Wall seconds of the real-time baseline (same session)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--farm-sim-seconds", farm_sim_s, "Sim seconds of the lidar farm in lock-step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--farm-timeout", farm_timeout_s, "Give the lidar farm up after this many wall seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-farm", no_farm, "Skip the lidar farm");
  app.add_option("--bin-dir", bin_dir, "Where platoon, platoon-server and platoon-node are (default: next to this)");
  app.add_option("--source-dir", source_dir, "Project root, for configs/demo.toml and configs/lidar_farm.toml");
  app.add_flag("-v,--verbose", verbose, "Relay every process's log lines to stderr");
  CLI11_PARSE(app, argc, argv);

  std::string tmpl = (std::filesystem::temp_directory_path() / "lockstep-bench-XXXXXX").string();
  const std::string dir = mkdtemp(tmpl.data());
  std::vector<Result> results;
  try {
    const std::string demo = WithFreePorts(source_dir + "/configs/demo.toml", dir);
    std::fprintf(stderr, "demo session, lock-step, %.0f sim s ...\n", sim_s);
    results.push_back(RunSession(bin_dir, demo, "demo", true, sim_s,
                                 std::chrono::seconds(static_cast<int>(sim_s * 2 + 60)), verbose));
    std::fprintf(stderr, "demo session, real time, %.0f s (baseline) ...\n", realtime_s);
    results.push_back(RunSession(bin_dir, WithFreePorts(source_dir + "/configs/demo.toml", dir), "demo", false,
                                 realtime_s, std::chrono::seconds(static_cast<int>(realtime_s + 60)), verbose));
    if (!no_farm) {
      std::fprintf(stderr, "lidar farm, lock-step, %.0f sim s (give up after %d s) ...\n", farm_sim_s, farm_timeout_s);
      results.push_back(RunSession(bin_dir, WithFreePorts(source_dir + "/configs/lidar_farm.toml", dir), "lidar farm",
                                   true, farm_sim_s, std::chrono::seconds(farm_timeout_s), verbose));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep_bench: %s\n", e.what());
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::filesystem::remove_all(dir);
  PrintTable(results);
  std::printf("\nstepping wall: the server's \"session running\" to \"reached its end\" (lock-step) or \"server stopping\" (real time) log stamps (start-up and join "
              "left out). CPU: launcher, server and nodes; whole run from getrusage(RUSAGE_CHILDREN), stepping = whole "
              "run less their /proc CPU at \"session running\" (includes the stop).\n");
  const auto& lock = results[0];
  const auto& real = results[1];
  if (lock.stepping_wall_s > 0 && real.sim_s > 0 && lock.sim_s > 0)
    std::printf("demo: lock-step runs %.1fx real time (goal 20x); CPU per sim second %.3f s against %.3f s in real "
                "time (%.2fx)\n",
                lock.sim_s / lock.stepping_wall_s, lock.cpu_running_s / lock.sim_s, real.cpu_running_s / real.sim_s,
                (lock.cpu_running_s / lock.sim_s) / (real.cpu_running_s / real.sim_s));
  bool ok = true;
  for (const auto& r : results) ok = ok && r.finished;
  return ok ? 0 : 1;
}
