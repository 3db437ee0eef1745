#pragma once
// A progress line with an ETA on stderr for the launcher's long commands (platoon validate, platoon
// export): nothing during the first second, then redrawn in place on a terminal, a line every 5 s
// otherwise (a log file or a test).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace platoon::launcher {

class Progress {
 public:
  /// `prefix` starts every line ("validate", "export"); `total` is the amount of work, in any unit.
  Progress(std::string prefix, size_t total) : prefix_(std::move(prefix)), total_(total), tty_(isatty(STDERR_FILENO) != 0) {}
  /// `done` of the total is done, now doing `what`.
  void Update(size_t done, const char* what) {
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0 || done == 0 || total_ == 0 || now - last_ < std::chrono::milliseconds(tty_ ? 250 : 5000)) return;
    last_ = now;
    const double eta = elapsed * static_cast<double>(total_ - std::min(done, total_)) / static_cast<double>(done);
    std::fprintf(stderr, "%s%s: %s, %zu / %zu (%.0f %%), ETA %.0f s%s", tty_ ? "\r" : "", prefix_.c_str(), what, done,
                 total_, 100.0 * static_cast<double>(done) / static_cast<double>(total_), eta, tty_ ? "   " : "\n");
    printed_ = true;
  }
  /// Ends a line redrawn in place.
  void Done() {
    if (printed_ && tty_) std::fprintf(stderr, "\n");
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string prefix_;
  size_t total_;
  bool tty_;
  bool printed_ = false;
  Clock::time_point start_ = Clock::now(), last_ = start_;
};

}  // namespace platoon::launcher
