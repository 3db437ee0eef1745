#include "platoon/node/view_monitor.hpp"

#include "platoon/node/traffic.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::node {
namespace {

constexpr int64_t kWarmupNs = 2'000'000'000;  // the first views may predate the first corrections
constexpr int64_t kReportNs = 500'000'000;  // a view line every half second

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) - 1);
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace

ViewMonitor::ViewMonitor(const config::SessionDef& session, const std::string& self,
                         std::shared_ptr<spdlog::logger> logger)
    : session_(session), log_(std::move(logger)) {
  for (const auto& n : session_.nodes) {
    // Only stadium traffic has a truth every node can compute.
    if (n.role != protocol::Role::kTraffic || n.traffic_model != "stadium" || n.name == self) continue;
    traffic_by_hash_[static_cast<uint32_t>(VehicleId(n.name, 0) >> 16)] = &n;
    expected_ += static_cast<size_t>(n.vehicles);
  }
}

void ViewMonitor::Step(const StepInfo& info, ModuleContext& context) {
  if (first_step_ns_ < 0) {
    first_step_ns_ = info.sim_ns;
    next_report_ns_ = info.sim_ns + kReportNs;
  }
  const bool warm = info.sim_ns - first_step_ns_ >= kWarmupNs;
  live_ = stale_ = 0;
  std::map<std::string, bool> stale_now;
  for (const auto& e : context.RemoteEntities(info.sim_ns)) {
    auto it = traffic_by_hash_.find(static_cast<uint32_t>(e.state.id >> 16));
    if (it == traffic_by_hash_.end()) continue;
    const config::NodeDef& owner = *it->second;
    stale_now[owner.name] = stale_now[owner.name] || e.state.stale;
    if (e.state.stale) {
      ++stale_;
      continue;
    }
    ++live_;
    const auto truth = TrafficTruth(owner, static_cast<uint32_t>(e.state.id & 0xffff), info.sim_ns);
    const double err = (e.displayed.position_m - truth.kinematics.pose.position_m).norm();
    window_errors_m_.push_back(err);
    if (warm) errors_m_.push_back(err);
  }
  // Owner transitions, as events a person (or a test) can wait for.
  for (const auto& [name, stale] : stale_now) {
    auto [it, inserted] = stale_by_node_.try_emplace(name, false);
    if (stale != it->second) log_->info("node '{}' entities {}", name, stale ? "stale" : "live");
    it->second = stale;
  }
  if (info.sim_ns >= next_report_ns_) {
    next_report_ns_ += kReportNs;
    // Nothing to check (no other traffic node in the session): stay quiet.
    if (expected_ == 0 && live_ + stale_ == 0) return;
    uint64_t received = 0;
    int64_t max_gap = 0;
    context.WorldStats(received, max_gap);
    log_->info("view: {}/{} live, {} stale | error p99 {:.1f} cm max {:.1f} cm | world max gap {:.0f} ms", live_,
               expected_, stale_, 100 * Percentile(window_errors_m_, 99),
               100 * (window_errors_m_.empty() ? 0 : *std::max_element(window_errors_m_.begin(), window_errors_m_.end())),
               static_cast<double>(max_gap) / 1e6);
    window_errors_m_.clear();
  }
}

void ViewMonitor::Summarize(std::vector<std::string>& fields) const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"view_expected\":%zu,\"view_live\":%zu,\"view_stale\":%zu,\"view_samples\":%zu,"
                "\"view_error_p50_m\":%.4f,\"view_error_p99_m\":%.4f,\"view_error_max_m\":%.4f",
                expected_, live_, stale_, errors_m_.size(), Percentile(errors_m_, 50), Percentile(errors_m_, 99),
                errors_m_.empty() ? 0.0 : *std::max_element(errors_m_.begin(), errors_m_.end()));
  fields.push_back(buf);
}

}  // namespace platoon::node
