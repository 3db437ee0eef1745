#include "platoon/server/refusal_log.hpp"

namespace platoon::server {

uint64_t RefusalLog::Count(std::string_view kind, int64_t now_ns) {
  Kind& k = kinds_[kind];
  ++k.counted;
  ++k.pending;
  // The first of a kind at once; later ones once the period since the kind's last line has passed.
  if (k.logged_once && now_ns - k.last_line_ns < period_ns_) return 0;
  k.logged_once = true;
  k.last_line_ns = now_ns;
  const uint64_t n = k.pending;
  k.logged += n;
  k.pending = 0;
  return n;
}

std::vector<RefusalLine> RefusalLog::TakeDue(int64_t now_ns) {
  std::vector<RefusalLine> due;
  for (auto& [kind, k] : kinds_) {
    if (k.pending == 0 || now_ns - k.last_line_ns < period_ns_) continue;
    due.push_back(RefusalLine{kind, k.pending});
    k.logged += k.pending;
    k.pending = 0;
    k.last_line_ns = now_ns;
  }
  return due;
}

std::vector<RefusalLine> RefusalLog::TakeAll() {
  std::vector<RefusalLine> all;
  for (auto& [kind, k] : kinds_) {
    if (k.pending == 0) continue;
    all.push_back(RefusalLine{kind, k.pending});
    k.logged += k.pending;
    k.pending = 0;
  }
  return all;
}

uint64_t RefusalLog::Counted(std::string_view kind) const {
  const auto it = kinds_.find(kind);
  return it == kinds_.end() ? 0 : it->second.counted;
}

uint64_t RefusalLog::Logged(std::string_view kind) const {
  const auto it = kinds_.find(kind);
  return it == kinds_.end() ? 0 : it->second.logged;
}

}  // namespace platoon::server
