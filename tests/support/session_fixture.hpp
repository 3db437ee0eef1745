#pragma once
// Helpers for multi-process tests: start platoon processes, wait on handshakes with deadlines.

#include "platoon/process/child.hpp"
#include "platoon/protocol/messages.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace platoon::testing {

/// Directory of the built executables (set by CMake).
std::string BinDir();

/// A fresh temporary directory, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& Path() const { return path_; }
  /// Writes `text` to `name` inside the directory; returns the full path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

/// A platoon-server on free loopback ports, started with a ready-file handshake.
struct ServerProcess {
  process::Child child;
  uint16_t control_port = 0;
};

/// Starts platoon-server on 127.0.0.1 with every port chosen by the OS; waits (deadline 10 s)
/// for its ready file. `extra` arguments are appended.
ServerProcess StartServer(const TempDir& dir, const std::vector<std::string>& extra = {});

/// configs/`name` copied into `dir` with its `control_port = <fixed_port>` line replaced by four free ports
/// (so that tests run in parallel), `extra` appended; returns the copy's path. Fails the test when the
/// config no longer names that port, or names it elsewhere.
std::string ConfigOnFreePorts(const TempDir& dir, const std::string& name, uint16_t fixed_port,
                              const std::string& extra = "");

/// Drains `c`'s output (kept by the child) until it exits, up to `timeout`; returns its status, nullopt on timeout.
std::optional<int> RunToExit(process::Child& c, std::chrono::milliseconds timeout);

/// RunToExit for a process that should be done at once (a refusal): when it has not exited within
/// `timeout`, its threads are described (MESSAGE, naming `who`) and it gets `extra` more, so that a stalled
/// machine shows as such (under load, `platoon run` refusing a bad session file once printed nothing for
/// over 10 s, where it takes milliseconds); the status is still the caller's check.
std::optional<int> RunToExitOrDescribe(process::Child& c, std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds extra, const std::string& who);

/// Free TCP ports on 127.0.0.1 (bound and released; good enough for a test's lifetime).
std::vector<uint16_t> FreePorts(int count);

/// Value of "key":<number> in the last SUMMARY line of `lines`; nullopt when absent.
std::optional<double> SummaryValue(const std::vector<std::string>& lines, const std::string& key);

/// True when any line contains `needle`.
bool AnyLineContains(const std::vector<std::string>& lines, const std::string& needle);

/// Pid of a running process whose command line contains every one of `parts`; 0 if none.
int FindPid(const std::vector<std::string>& parts);

/// Pids of every running process whose command line contains every one of `parts`.
std::vector<int> FindPids(const std::vector<std::string>& parts);


/// Value of "key":"<string>" in the last SUMMARY line of `lines`; nullopt when absent.
std::optional<std::string> SummaryString(const std::vector<std::string>& lines, const std::string& key);

/// The lines the launcher (`platoon run`) relayed from process `name` ("name   | text"), without the
/// prefix. Lines of other processes and the launcher's own are left out.
std::vector<std::string> LinesOf(const std::vector<std::string>& launcher_lines, const std::string& name);

/// Reads whatever output `c` has written so far (to the end once it has exited); returns Lines().
const std::vector<std::string>& Collect(process::Child& c);

/// True for an error-level log line: spdlog's "HH:MM:SS.mmm error [logger] ..." or "... critical [...]"
/// (colour codes and a launcher's "name | " prefix allowed), an uncaught exception ("terminate called")
/// or a sanitizer report ("ERROR: AddressSanitizer", "runtime error:").
bool IsErrorLine(const std::string& line);

/// Fails the current test (one doctest check per offending line, naming it) on every error-level line
/// in `lines` that contains none of `expected_substrings`. A test that provokes errors on purpose
/// (a refused version, kill -9, a bad config) names the lines it expects; any other is a bug.
void CheckNoErrorLines(const std::vector<std::string>& lines, const std::vector<std::string>& expected_substrings = {});

/// Collect(c), then CheckNoErrorLines on its lines; `who` names the process in the failure.
void CheckNoErrorLines(process::Child& c, const std::string& who, const std::vector<std::string>& expected_substrings = {});

/// How long this machine kept a plain sleeping thread from running, while the probe lives: a thread that
/// sleeps 1 ms again and again and keeps the largest overshoot. A wall-clock-bound test prints it beside
/// a figure that missed its bound, so that a starved or suspended machine is told from a slow process.
class MachineStallProbe {
 public:
  MachineStallProbe();
  ~MachineStallProbe();
  MachineStallProbe(const MachineStallProbe&) = delete;
  MachineStallProbe& operator=(const MachineStallProbe&) = delete;
  /// The largest overshoot of a 1 ms sleep so far, in ms.
  double MaxOvershootMs() const;
  /// "machine: a 1 ms sleep overshot by at most N ms (M times over 20 ms)".
  std::string Describe() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// "name: loop_late_max_ms=.. module_late_max_ms=.. stalls_forgiven=.." for each process's last SUMMARY line
/// (fields it lacks are left out): how far each process's loops fell behind.
std::string LoopLateness(const std::vector<std::pair<std::string, const std::vector<std::string>*>>& processes);

/// What a process's threads are doing now (process::ThreadStates, which the launcher prints too).
using process::ThreadStates;

/// Threads of a process not yet exited (process::LiveThreads): FindPid stops finding a process once its main
/// thread has exited, LiveThreads once every thread has.
using process::LiveThreads;

/// Waits up to `timeout` for `c` to exit; if it has not, describes its threads (ThreadStates), waits up to
/// `extra` more, and says how long the exit took in the end. Returns the exit status (nullopt: still running)
/// and, through `report`, a text for a failure message ("" when it exited within `timeout`).
std::optional<int> WaitForExitOrDescribe(process::Child& c, std::chrono::milliseconds timeout,
                                         std::chrono::milliseconds extra, std::string* report);

/// Waits for `c`, sent a fatal signal, to be reaped: WaitForExitOrDescribe with 5 s and then 55 s more (a
/// killed process is reaped only once the kernel has torn it down, which waits on the kernel's own workers:
/// 30 s or more on a loaded VM, docs/TESTING.md, "The suite under load"). A slow exit is printed (MESSAGE)
/// with its thread states; whether the status is right is the caller's check. Returns the exit status (nullopt: still running after 60 s).
std::optional<int> WaitForKilled(process::Child& c, const std::string& who);

/// A Join as an observer named `name` from host "test", pid 1: for tests that join by hand.
protocol::Join ObserverJoin(const std::string& name);

}  // namespace platoon::testing
