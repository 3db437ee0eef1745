#pragma once
/// Child processes with captured output: the launcher, multi-process tests and benchmarks use it.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace platoon::process {

/// A spawned child process. Killed (SIGKILL) and reaped on destruction if still running.
class Child {
 public:
  /// Starts `argv[0]` (a path) with arguments. stdout and stderr go to a pipe read by ReadLine()
  /// when `capture_output`, else to this process's. Throws std::runtime_error on failure.
  /// The child gets SIGTERM when the calling thread ends (PR_SET_PDEATHSIG), also when this process is
  /// killed with SIGKILL: spawn from a thread that outlives the child (the main thread).
  static Child Spawn(const std::vector<std::string>& argv, bool capture_output = true);

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t Pid() const { return pid_; }
  /// Sends a signal (no-op once reaped).
  void Signal(int signal) const;
  /// Reaps without blocking; returns the exit status (exit code, or 128 + signal) once exited.
  std::optional<int> TryWait();
  /// Waits up to `timeout` for exit.
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  /// True until the child has been reaped.
  bool Running() const { return pid_ > 0 && !status_; }
  /// Exit status once reaped.
  std::optional<int> Status() const { return status_; }

  /// Next unread output line, waiting up to `timeout`; nullopt on timeout or end of output.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  /// Reads lines until one contains `needle`, up to `timeout`; returns it, or nullopt.
  /// Lines read on the way are consumed (they stay in Lines()).
  std::optional<std::string> WaitForLine(const std::string& needle, std::chrono::milliseconds timeout);
  /// Every line read so far.
  const std::vector<std::string>& Lines() const { return lines_; }
  /// File descriptor of the output pipe (-1 if not captured), for poll().
  int OutputFd() const { return out_fd_; }
  /// Reads what is available without blocking; appends whole lines to `out`. Returns false at EOF.
  bool Pump(std::vector<std::string>& out);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::optional<int> status_;
  std::string partial_;
  std::vector<std::string> lines_;
  size_t read_pos_ = 0;
};

/// What a process's threads are doing now, one line each: "tid name: state S, wchan W, cpu T ms
/// [, kernel stack f1 < f2 ...]" from /proc (the stack where readable); "no threads in /proc/<pid>/task"
/// once it is gone. Printed when a process does not exit or answer in time, so that a blocked call, a
/// thread that was not scheduled and an exit the kernel has not finished can be told apart.
std::string ThreadStates(pid_t pid);

/// How many of `pid`'s threads have not exited (0 once the process is gone or a zombie). A process whose main
/// thread has exited reads an empty /proc/<pid>/cmdline while its other threads may still run and hold its
/// files and sockets: a process is gone when LiveThreads(pid) == 0.
int LiveThreads(pid_t pid);

/// Directory of the running executable (to find sibling binaries such as platoon-server).
std::string ExecutableDir();

}  // namespace platoon::process
