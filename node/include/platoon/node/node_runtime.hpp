#pragma once
/// The node runtime: joins the session, disciplines the node's clock to the server's, keeps the
/// heartbeat, follows the world state, and runs the node's modules on the synced clock.
/// At this stage the modules are the clock monitor; roles (traffic, driver, sensor, fusion) build on it.

#include "platoon/clock/oscillator.hpp"
#include "platoon/clock/slewed_clock.hpp"
#include "platoon/config/session.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace platoon::node {

/// How the node runs, beyond its session entry.
struct NodeOptions {
  config::SessionDef session;
  config::NodeDef node;
  uint16_t protocol_version = 0;  ///< Test only: speak this protocol version (0: this build's).
  /// Measure the true clock error against this host's CLOCK_MONOTONIC. Meaningful only when the
  /// server runs on the same host, where that clock *is* the reference.
  bool truth_check = false;
  double truth_warmup_s = 30.0;   ///< Truth statistics start this long after the clock is set, in s.
  double exit_after_s = 0;        ///< Leave and exit after this long, in s (0: run until stopped).
};

/// Clock properties measured on the 1 kHz tick (and, with truth_check, the true error).
struct ClockReport {
  uint64_t ticks = 0;
  uint64_t backwards = 0;       ///< Ticks where synced time did not strictly increase.
  uint64_t over_bound = 0;      ///< Ticks that advanced more than (1 + bound) x local tick (+1 ns).
  std::vector<int64_t> errors_ns;  ///< True errors after warm-up (truth_check only).
  uint64_t preempted = 0;          ///< Ticks left out because the thread was preempted mid-measurement.
};

/// Exit codes of platoon-node.
enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitRefused = 3 };

/// The node process's runtime.
class NodeRuntime {
 public:
  /// `local` is the node's local oscillator and must outlive the runtime.
  NodeRuntime(NodeOptions options, std::shared_ptr<spdlog::logger> logger, const clock::Oscillator& local);

  /// Runs until `stop`, exit_after_s, or a refusal; returns the process exit code.
  int Run(const std::atomic<bool>& stop);

  /// The synced clock.
  const clock::SlewedClock& Clock() const { return clock_; }

 private:
  NodeOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  const clock::Oscillator& local_;
  clock::SlewedClock clock_;
};

/// Percentile (0..100) of |values|, nearest rank; 0 for an empty list.
int64_t AbsPercentile(std::vector<int64_t> values, double percentile);

}  // namespace platoon::node
