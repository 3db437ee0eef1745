#include "session_fixture.hpp"
#include "stop_wait.hpp"

#include "platoon/transport/channel.hpp"

#include <doctest/doctest.h>
#include <poll.h>
#include <unistd.h>
#include <zmq.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

namespace platoon::testing {

std::string BinDir() { return PLATOON_BIN_DIR; }

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "platoon-test-XXXXXX").string();
  path_ = mkdtemp(tmpl.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& text) const {
  const std::string p = path_ + "/" + name;
  std::ofstream(p) << text;
  return p;
}

ServerProcess StartServer(const TempDir& dir, const std::vector<std::string>& extra) {
  const std::string ready = dir.Path() + "/ready.json";
  std::vector<std::string> args = {BinDir() + "/platoon-server", "--bind", "127.0.0.1", "--port", "0",
                                   "--ready-file", ready, "--autostart", "0", "--log-level", "info"};
  args.insert(args.end(), extra.begin(), extra.end());
  ServerProcess s{process::Child::Spawn(args), 0};
  // Handshake: the ready file appears once every socket is bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(ready)) {
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "server did not become ready within 10 s");
    REQUIRE_MESSAGE(!s.child.TryWait(), "server exited before becoming ready");
    s.child.ReadLine(std::chrono::milliseconds(20));
  }
  std::ifstream f(ready);
  std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::smatch m;
  REQUIRE(std::regex_search(json, m, std::regex("\"control\":(\\d+)")));
  s.control_port = static_cast<uint16_t>(std::stoi(m[1]));
  return s;
}

std::vector<uint16_t> FreePorts(int count) { return platoon::transport::FreeLoopbackPorts(count); }

std::optional<double> SummaryValue(const std::vector<std::string>& lines, const std::string& key) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->find("SUMMARY") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(*it, m, std::regex("\"" + key + "\":(true|false|-?[0-9.eE+-]+)"))) {
      if (m[1] == "true") return 1.0;
      if (m[1] == "false") return 0.0;
      return std::stod(m[1]);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool AnyLineContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

std::vector<int> FindPids(const std::vector<std::string>& parts) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    bool all = !cmd.empty();
    for (const auto& p : parts) all = all && cmd.find(p) != std::string::npos;
    if (all) pids.push_back(std::stoi(name));
  }
  return pids;
}

int FindPid(const std::vector<std::string>& parts) {
  const auto pids = FindPids(parts);
  return pids.empty() ? 0 : pids.front();
}

std::optional<std::string> SummaryString(const std::vector<std::string>& lines, const std::string& key) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->find("SUMMARY") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(*it, m, std::regex("\"" + key + "\":\"([^\"]*)\""))) return m[1].str();
    return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::string> LinesOf(const std::vector<std::string>& launcher_lines, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& l : launcher_lines) {
    if (l.compare(0, name.size(), name) != 0) continue;
    const size_t bar = l.find_first_not_of(' ', name.size());
    if (bar == std::string::npos || l[bar] != '|') continue;
    out.push_back(l.substr(std::min(l.size(), bar + 2)));
  }
  return out;
}

const std::vector<std::string>& Collect(process::Child& c) {
  std::vector<std::string> sink;
  if (c.TryWait()) {
    // Exited: read to the end of its output (bounded, should a grandchild hold the pipe open).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (c.Pump(sink) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{c.OutputFd(), POLLIN, 0};
      poll(&p, 1, 10);
    }
  } else {
    c.Pump(sink);
  }
  return c.Lines();
}

bool IsErrorLine(const std::string& raw) {
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  static const std::regex spdlog_error("(^|[\\s|])\\d{2}:\\d{2}:\\d{2}\\.\\d{3} +(error|critical) *\\[");
  const std::string line = std::regex_replace(raw, ansi, "");
  if (std::regex_search(line, spdlog_error)) return true;
  for (const char* crash : {"terminate called", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"})
    if (line.find(crash) != std::string::npos) return true;
  return false;
}

void CheckNoErrorLines(const std::vector<std::string>& lines, const std::vector<std::string>& expected_substrings) {
  int unexpected = 0;
  for (const auto& l : lines) {
    if (!IsErrorLine(l)) continue;
    bool expected = false;
    for (const auto& e : expected_substrings) expected = expected || l.find(e) != std::string::npos;
    if (expected) continue;
    if (++unexpected <= 20) FAIL_CHECK("unexpected error-level log line: " << l);
  }
  if (unexpected > 20) FAIL_CHECK("and " << unexpected - 20 << " more unexpected error-level log lines");
}

void CheckNoErrorLines(process::Child& c, const std::string& who, const std::vector<std::string>& expected_substrings) {
  INFO("process: " << who);
  CheckNoErrorLines(Collect(c), expected_substrings);
}

std::string ConfigOnFreePorts(const TempDir& dir, const std::string& name, uint16_t fixed_port,
                              const std::string& extra) {
  std::ifstream f(std::string(PLATOON_SOURCE_DIR) + "/configs/" + name);
  REQUIRE_MESSAGE(f.good(), "cannot read configs/" << name);
  std::stringstream text;
  text << f.rdbuf();
  const auto p = FreePorts(4);
  const std::string ports = "control_port = " + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                            "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]);
  std::string s = text.str();
  const std::string fixed = std::to_string(fixed_port);
  const std::regex control("control_port *= *" + fixed + "[^\n]*");
  REQUIRE_MESSAGE(std::regex_search(s, control), "configs/" << name << " no longer has control_port = " << fixed);
  s = std::regex_replace(s, control, ports);
  REQUIRE_MESSAGE(s.find(fixed) == std::string::npos, "configs/" << name << " names port " << fixed << " elsewhere");
  return dir.Write(name, s + "\n" + extra);
}

std::optional<int> RunToExit(process::Child& c, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    c.ReadLine(std::chrono::milliseconds(100));
    if (c.TryWait()) {
      Collect(c);
      return c.Status();
    }
  }
  return std::nullopt;
}

std::optional<int> RunToExitOrDescribe(process::Child& c, std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds extra, const std::string& who) {
  const auto t0 = std::chrono::steady_clock::now();
  if (const auto status = RunToExit(c, timeout)) return status;
  const std::string threads = ThreadStates(c.Pid());
  const auto status = RunToExit(c, extra);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  MESSAGE(who << ": not exited after " << timeout.count() << " ms; its threads then:\n"
              << threads << (status ? "it exited with " + std::to_string(*status) : std::string("still running"))
              << " after " << took.count() << " ms");
  return status;
}

struct MachineStallProbe::State {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> max_ns{0};
  std::atomic<int> over_20ms{0};
  std::thread thread;
};

MachineStallProbe::MachineStallProbe() : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get()] {
    while (!s->stop.load()) {
      const auto t0 = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const int64_t over = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count() - 1'000'000;
      if (over > s->max_ns.load()) s->max_ns.store(over);
      if (over > 20'000'000) ++s->over_20ms;
    }
  });
}

MachineStallProbe::~MachineStallProbe() {
  state_->stop.store(true);
  state_->thread.join();
}

double MachineStallProbe::MaxOvershootMs() const { return static_cast<double>(state_->max_ns.load()) / 1e6; }

std::string MachineStallProbe::Describe() const {
  std::ostringstream o;
  o << "machine: a 1 ms sleep overshot by at most " << MaxOvershootMs() << " ms (" << state_->over_20ms.load()
    << " times over 20 ms)";
  return o.str();
}

std::string LoopLateness(const std::vector<std::pair<std::string, const std::vector<std::string>*>>& processes) {
  std::string out;
  for (const auto& [name, lines] : processes) {
    std::string fields;
    for (const char* key : {"loop_late_max_ms", "module_late_max_ms", "stalls_forgiven", "stalls_reported"})
      if (const auto v = SummaryValue(*lines, key)) {
        std::ostringstream o;
        o << " " << key << "=" << *v;
        fields += o.str();
      }
    if (!fields.empty()) out += (out.empty() ? "" : "; ") + name + ":" + fields;
  }
  return out;
}

std::optional<int> WaitForExitOrDescribe(process::Child& c, std::chrono::milliseconds timeout,
                                         std::chrono::milliseconds extra, std::string* report) {
  report->clear();
  const auto t0 = std::chrono::steady_clock::now();
  if (const auto status = c.WaitFor(timeout)) return status;
  *report = "not exited after " + std::to_string(timeout.count()) + " ms; its threads then:\n" + ThreadStates(c.Pid());
  const auto status = c.WaitFor(extra);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  *report += status ? "it exited with " + std::to_string(*status) + " after " + std::to_string(took.count()) + " ms"
                    : "still running after " + std::to_string(took.count()) + " ms";
  return status;
}

namespace {
// 5 s, then the threads described and 55 s more; a slow exit is printed as "<who>, <how>: ...".
std::optional<int> WaitForTeardown(process::Child& c, const std::string& who, const char* how) {
  std::string report;
  const auto status = WaitForExitOrDescribe(c, std::chrono::seconds(5), std::chrono::seconds(55), &report);
  if (!report.empty()) MESSAGE(who << ", " << how << ": " << report);
  return status;
}
}  // namespace

std::optional<int> WaitForKilled(process::Child& c, const std::string& who) { return WaitForTeardown(c, who, "killed"); }

std::optional<int> WaitForStopped(process::Child& c, const std::string& who) { return WaitForTeardown(c, who, "stopped"); }

protocol::Join ObserverJoin(const std::string& name) {
  protocol::Join j;
  j.name = name;
  j.role = protocol::Role::kObserver;
  j.host = "test";
  j.pid = 1;
  return j;
}

}  // namespace platoon::testing
