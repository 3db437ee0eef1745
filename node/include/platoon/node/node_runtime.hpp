#pragma once
/// The node runtime: joins the session, disciplines the node's clock to the server's, keeps the
/// heartbeat, follows the world state (snapshot + deltas, dead-reckoned), publishes the node's own
/// entities through DIS-style send policies, and runs the role's modules on the session sim clock.
///
/// The session logic is session::SessionClient's (shared with the viewer and every other client); this
/// class is its shell: the socket loop (session::ClientLink), the module thread and the clock monitor.
/// In lock-step sessions the module thread steps once per grant and acknowledges each step.
///
/// Threads: the network loop (Run's caller), the module scheduler, and the clock monitor.

#include "platoon/clock/oscillator.hpp"
#include "platoon/clock/slewed_clock.hpp"
#include "platoon/clock/stall_watch.hpp"
#include "platoon/config/session.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/node/module.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/transport/channel.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace platoon::node {

/// How node `node`'s world view blends corrections of remote entities: a driver seat blends (0.15 s, at
/// most 0.3 m/s: what a person sees should not jump); every other role shows the newest estimate at once
/// (blend 0: sensors, traffic and observers see the remote vehicles closest to their owners' truth). The
/// node's blend_time_s and blend_speed_mps keys replace these defaults.
dr::TrackDef ViewTrackDef(const config::NodeDef& node);

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
  dr::SendPolicyDef send_policy = dr::DefaultSendPolicyDef();  ///< When owned entities are sent.
  double stats_warmup_s = 0;       ///< Update-latency and world-gap statistics start this long after launch, in s.
  bool publish_every_step = false;  ///< Send every owned entity at every step (fixed rate), ignoring thresholds.
  std::string pose_log;             ///< Diagnostic CSV of owned truths and displayed remote poses (PoseLog); "" none.
  uint32_t pose_log_every = 1;      ///< Only entities whose index is a multiple of this go into the pose log.
  double pose_log_hz = 50;          ///< Rate of the pose log's view rows, in Hz.
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
  const clock::SlewedClock& Clock() const;

 private:
  int MakeModules();
  std::optional<std::vector<protocol::DataEndpoint>> BindData(transport::Channel& pub);
  void WatchNaiveError(class ClockMonitor& monitor);
  // node.<name>.* of the runtime and of every module (Module::Params).
  void RegisterParams(config::ParamRegistry& registry);
  void LogStatus(const class ClockMonitor& monitor);
  void PrintSummary(const class ClockMonitor& monitor, uint64_t states_sent, uint64_t entities_sent,
                    std::vector<protocol::EntityState> owned);

  NodeOptions options_;
  uint64_t data_hash_ = 0, data_messages_ = 0;  // what the modules measured (SUMMARY)
  std::shared_ptr<spdlog::logger> log_;
  const clock::Oscillator& local_;
  std::mutex mutex_;                  // guards client_ between the network and module threads
  session::SessionClient client_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::shared_ptr<class PoseLog> pose_log_;  // --pose-log, when given
  int64_t next_status_ns_ = 0;
  clock::StallWatch module_lateness_{INT64_MAX};  // the module thread's lateness (measured, never forgiven)
  int64_t loop_late_max_ns_ = 0;                  // the network loop's, taken from its link at the end
  int64_t started_host_ns_ = 0;  // host CLOCK_MONOTONIC at construction: the origin of the join time
};


}  // namespace platoon::node
