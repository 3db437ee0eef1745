#pragma once
/// Checks this node's view of every remote traffic vehicle against the owner's truth (which any
/// node can compute from the session file) and reports it: what the observer role is for, and what
/// the multi-process tests read.

#include "platoon/config/session.hpp"
#include "platoon/node/module.hpp"

#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace platoon::node {

/// Consistency monitor of the world view.
class ViewMonitor final : public Module {
 public:
  /// `self` is this node's name (its own vehicles are not remote).
  ViewMonitor(const config::SessionDef& session, const std::string& self, std::shared_ptr<spdlog::logger> logger);
  std::string Name() const override { return "view-monitor"; }
  double RateHz() const override { return 20.0; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  std::map<uint32_t, const config::NodeDef*> traffic_by_hash_;
  std::map<std::string, bool> stale_by_node_;
  config::SessionDef session_;
  std::shared_ptr<spdlog::logger> log_;
  size_t expected_ = 0;
  int64_t first_step_ns_ = -1;
  int64_t next_report_ns_ = 0;
  std::vector<double> window_errors_m_;
  std::vector<double> errors_m_;
  size_t live_ = 0, stale_ = 0;
};

}  // namespace platoon::node
