#pragma once
/// Exact, rate-limited refusal lines (the kernel's printk_ratelimited with "N suppressed"): the first
/// refusal of a kind is logged at once, then at most one line per period carrying the true count since the
/// last line, and a period that ends with refusals not yet logged is written out by TakeDue even if no new
/// refusal of the kind arrives. The counts in the lines of a kind add up to the refusals counted. Pure: no
/// clock, no logger; the caller gives the time and writes the lines.

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

namespace platoon::server {

/// A kind's refusals to be written in one line.
struct RefusalLine {
  std::string_view kind;  ///< The kind given to Count (a string literal).
  uint64_t count = 0;     ///< Refusals of the kind since its previous line (1 to millions).
};

/// Counts refusals by kind and decides when each kind's line is due.
class RefusalLog {
 public:
  /// Shortest time between two lines of one kind, in ns. Typical 1e9 (one second).
  explicit RefusalLog(int64_t period_ns = 1'000'000'000) : period_ns_(period_ns) {}

  /// Counts one refusal of `kind` (a string literal: it is kept by reference) at `now_ns`. Returns how many
  /// to log now (this one and those held back since the kind's last line) or 0 when the line waits.
  uint64_t Count(std::string_view kind, int64_t now_ns);
  /// The kinds whose period has passed with refusals not yet logged, with their counts, now taken as
  /// logged. Called every loop turn; the lines carry no case (the last one was not kept).
  std::vector<RefusalLine> TakeDue(int64_t now_ns);
  /// Every count not yet logged, whatever the period (at shutdown), taken as logged.
  std::vector<RefusalLine> TakeAll();

  /// Refusals of `kind` counted so far.
  uint64_t Counted(std::string_view kind) const;
  /// Refusals of `kind` handed out in lines so far (Count's returns, TakeDue, TakeAll).
  uint64_t Logged(std::string_view kind) const;

 private:
  struct Kind {
    int64_t last_line_ns = 0;
    bool logged_once = false;
    uint64_t pending = 0;  // counted, not yet in a line
    uint64_t counted = 0;
    uint64_t logged = 0;
  };
  int64_t period_ns_;
  std::map<std::string_view, Kind> kinds_;  // a handful of entries
};

}  // namespace platoon::server
