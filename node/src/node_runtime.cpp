#include "platoon/node/node_runtime.hpp"

#include "platoon/node/client_context.hpp"
#include "platoon/node/clock_monitor.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/roles.hpp"
#include "platoon/node/pose_log.hpp"
#include "platoon/node/view_monitor.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/session/world_hash.hpp"
#include "platoon/transport/channel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace platoon::node {
namespace {

using protocol::Encode;

constexpr int64_t kSecond = 1'000'000'000;

}  // namespace

dr::TrackDef ViewTrackDef(const config::NodeDef& node) {
  dr::TrackDef t = dr::DefaultTrackDef();
  if (node.role != protocol::Role::kDriver && node.role != protocol::Role::kViewer) t.blend_time_s = 0;
  if (node.blend_time_s) {
    t.blend_time_s = *node.blend_time_s;
    t.max_blend_time_s = std::max(t.max_blend_time_s, t.blend_time_s);
  }
  if (node.blend_speed_mps) t.max_correction_mps = *node.blend_speed_mps;
  return t;
}

namespace {

session::ClientDef MakeClientDef(const NodeOptions& o) {
  session::ClientDef d = session::DefaultClientDef(o.node.name, o.node.role);
  if (o.protocol_version) d.protocol_version = o.protocol_version;
  d.clock = o.session.clock;
  d.lockstep_member = true;
  d.stats_warmup_s = o.stats_warmup_s;
  d.broadcast_hz = o.session.server.broadcast_hz;
  d.track = ViewTrackDef(o.node);
  // Remote entities are dead-reckoned through a silent world stream as long as the server would dead-reckon
  // a lost node's, then held.
  d.world_hold_s = o.session.server.lost_timeout_s + o.session.server.stale_grace_s;
  return d;
}

// The session's sim clock as modules see it: the session client's (eq. 11, or the lock-step grant).
class ClientSimClock final : public SimClock {
 public:
  ClientSimClock(const session::SessionClient& client, std::mutex& mutex) : client_(client), mutex_(mutex) {}
  bool Running() const override {
    std::lock_guard lock(mutex_);
    return client_.Advancing();
  }
  int64_t SimNowNs() const override {
    std::lock_guard lock(mutex_);
    return client_.SimNowNs();
  }

 private:
  const session::SessionClient& client_;
  std::mutex& mutex_;
};

// Real time: steps the modules on the synced sim clock while the session runs. In lock-step the
// network thread steps them (StepGranted, with no thread hand-over between grant and acknowledgement)
// and this thread idles.
void RunModules(std::vector<std::unique_ptr<Module>>& modules, session::SessionClient& client, std::mutex& mutex,
                ClientModuleContext& context, const std::atomic<bool>& stop, clock::StallWatch& lateness) {
  const ClientSimClock sim(client, mutex);
  const clock::MonotonicOscillator host;
  ModuleScheduler scheduler;
  int64_t asked_ns = 0;  // the sleep asked for before this turn; lateness is what the thread was away beyond it
  while (!stop.load(std::memory_order_relaxed)) {
    lateness.Mark(host.NowNs(), asked_ns);
    bool lockstep;
    {
      std::lock_guard lock(mutex);
      lockstep = client.StepNs() > 0;
    }
    if (lockstep || !sim.Running()) {
      // Paused or not started: sim time stands still, and so do the modules; parameter sets still take
      // effect (and are answered) here, between steps. In lock-step they are applied on arrival.
      if (!lockstep) context.ApplyParams();
      scheduler.Reset();
      asked_ns = lockstep ? 20'000'000 : 5'000'000;
      std::this_thread::sleep_for(std::chrono::nanoseconds(asked_ns));
      continue;
    }
    const int64_t now = sim.SimNowNs();
    scheduler.StepDue(modules, now, context);
    // Sim time runs at the synced rate (1 +- 1 %), so sleeping the sim-time difference is close enough.
    const int64_t wake = std::min(now + 50'000'000, scheduler.NextDueNs());
    lateness.Mark(host.NowNs(), 0);  // the steps themselves count as time away
    asked_ns = std::max<int64_t>(0, wake - sim.SimNowNs());
    std::this_thread::sleep_for(std::chrono::nanoseconds(asked_ns));
  }
}

}  // namespace

NodeRuntime::NodeRuntime(NodeOptions options, std::shared_ptr<spdlog::logger> logger, const clock::Oscillator& local)
    : options_(std::move(options)),
      log_(std::move(logger)),
      local_(local),
      client_(MakeClientDef(options_), local, log_),
      started_host_ns_(clock::MonotonicOscillator().NowNs()) {}

const clock::SlewedClock& NodeRuntime::Clock() const { return client_.Clock(); }

int NodeRuntime::MakeModules() {
  const auto& def = options_.node;
  try {
    modules_ = roles::MakeModules(options_.session, def, log_);
  } catch (const config::ConfigError& e) {
    log_->error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log_->error("cannot start the {} role: {}", protocol::RoleName(def.role), e.what());
    return kExitFailure;
  }
  modules_.push_back(std::make_unique<ViewMonitor>(options_.session, def.name, log_));
  if (!options_.pose_log.empty()) {
    try {
      pose_log_ = std::make_shared<PoseLog>(options_.pose_log, options_.pose_log_every, log_);
    } catch (const std::exception& e) {
      log_->error("{}", e.what());
      return kExitUsage;
    }
    modules_.push_back(std::make_unique<PoseLogModule>(pose_log_, options_.pose_log_hz));
  }
  return kExitOk;
}

std::optional<std::vector<protocol::DataEndpoint>> NodeRuntime::BindData(transport::Channel& pub) {
  std::vector<protocol::DataEndpoint> endpoints;
  for (const auto& m : modules_)
    for (auto e : m->Streams()) endpoints.push_back(std::move(e));
  if (endpoints.empty()) return endpoints;
  std::string bound;
  try {
    bound = pub.Bind(transport::TcpEndpoint("*", options_.node.data_port));
  } catch (const zmq::error_t& e) {
    log_->error("cannot bind the data socket on port {}: {}", options_.node.data_port, e.what());
    return std::nullopt;
  }
  for (auto& e : endpoints) {
    e.port = transport::PortOf(bound);
    e.address = options_.node.advertise_address;
    log_->info("publishes {} stream '{}' on {}", protocol::StreamKindName(e.kind), e.stream_id, bound);
  }
  return endpoints;
}

int NodeRuntime::Run(const std::atomic<bool>& stop) {
  if (const int rc = MakeModules(); rc != kExitOk) return rc;
  zmq::context_t context(1);
  const auto& session = options_.session;
  // Data streams: one PUB socket for what this node's modules publish, one SUB for what they read.
  // Point clouds (megabytes) stay in ZeroMQ's buffers on receive: no copy between socket and fusion.
  transport::ChannelDef data_def{.send_hwm = 100, .receive_hwm = 100, .faults = session.faults, .share_from_bytes = transport::kZeroCopySendBytes};
  transport::Channel data_pub(context, transport::Pattern::kPub, data_def), data_sub(context, transport::Pattern::kSub, data_def);
  const auto endpoints = BindData(data_pub);
  if (!endpoints) return kExitFailure;
  client_.SetEndpoints(*endpoints);
  // Module thread -> network thread: published node states, in order.
  transport::Channel inbox(context, transport::Pattern::kPull), outbox(context, transport::Pattern::kPush);
  inbox.Bind("inproc://node-outbox");
  outbox.Connect("inproc://node-outbox");
  // CURVE: this node's key (its [[node]] key, else [security] key) and the server's public key.
  std::optional<transport::CurveDef> curve;
  try {
    curve = config::LoadClientCurve(session, config::NodeKeyFile(session, options_.node));
  } catch (const config::ConfigError& e) {
    log_->error("{}", e.what());
    return kExitUsage;
  }
  session::ClientLink link(context, session.server_host, session.server.control_port, session.faults, curve);
  // States go through the inproc pipe from the module thread; in lock-step the network thread steps
  // the modules itself and hands them to the client directly.
  const auto network_thread = std::this_thread::get_id();
  const auto to_server = [&](std::string b) {
    if (std::this_thread::get_id() != network_thread) {
      outbox.Send(b);
      return;
    }
    std::lock_guard lock(mutex_);
    client_.SendState(std::move(b));
  };
  ClientModuleContext module_context(client_, mutex_, to_server, options_.send_policy, options_.publish_every_step);
  module_context.SetDataChannels(endpoints->empty() ? nullptr : &data_pub, &data_sub);
  // A marker from the module thread (a key on a seat): an empty message wakes this thread to send it.
  module_context.SetWake([&] {
    if (std::this_thread::get_id() != network_thread) outbox.Send(std::string());
  });
  if (pose_log_) module_context.TapTruth([log = pose_log_](const protocol::EntityState& e) { log->Own(e); });
  for (auto& m : modules_) m->Attach(module_context);
  // Parameters by path: the server forwards node.<name>.* here (on this thread, the client locked).
  NodeParams params;
  RegisterParams(params.Registry());
  // node.<name>.faults.*: the data socket's faults change on the thread that steps the modules (it reads
  // that socket); the session sockets' on this thread, at its next turn.
  transport::FaultDef live_faults = session.faults, handed_faults;
  std::atomic<bool> faults_changed{false};
  std::mutex faults_mutex;  // guards handed_faults, the copy this thread takes
  config::AddFaultParams(params.Registry(), "node." + options_.node.name + ".faults.", live_faults, [&] {
    data_sub.SetFaults(live_faults);
    std::lock_guard lock(faults_mutex);
    handed_faults = live_faults;
    faults_changed.store(true);
  });
  const auto follow_faults = [&] {
    if (!faults_changed.exchange(false)) return;
    std::lock_guard lock(faults_mutex);
    link.SetFaults(handed_faults);
  };
  module_context.SetParams(&params);
  client_.on_param_request = [&](const protocol::Message& request) {
    // Lock-step: this thread steps the modules, so a set applies at once; real time: before the next step.
    return params.Answer(request, client_.StepNs() > 0);
  };

  ClockMonitor monitor(client_.Clock(), options_.node.monitor_rate_hz, options_.truth_check, options_.truth_warmup_s);
  if (options_.truth_check) WatchNaiveError(monitor);
  std::atomic<bool> stop_threads{false};
  std::thread monitor_thread([&] { monitor.Run(stop_threads); });
  std::thread module_thread([&] { RunModules(modules_, client_, mutex_, module_context, stop_threads, module_lateness_); });
  log_->info("node '{}' ({}) joining session at {}", options_.node.name, protocol::RoleName(options_.node.role),
             link.ControlEndpoint());

  const int64_t end = options_.exit_after_s > 0 ? local_.NowNs() + static_cast<int64_t>(options_.exit_after_s * 1e9) : INT64_MAX;
  const auto forward_states = [&] {
    while (auto p = inbox.TryReceive()) {
      if (p->data.empty()) continue;  // a wake-up: a marker is queued on the client
      std::lock_guard lock(mutex_);
      client_.SendState(std::move(p->data));
    }
  };
  transport::Channel* const extra[] = {&inbox};
  // Join time: from this runtime's start to the clock set, and (truth check) to the clock within
  // kSyncedNs of this host's CLOCK_MONOTONIC (the reference when the server runs here). Logged once each.
  constexpr int64_t kSyncedNs = 100'000;
  const clock::MonotonicOscillator host;
  bool set_logged = false, synced_logged = !options_.truth_check;
  const auto watch_join = [&] {
    if (set_logged && synced_logged) return;
    const int64_t h1 = host.NowNs();
    const clock::ClockReading reading = client_.Clock().Read();
    const int64_t h2 = host.NowNs();
    if (!client_.Clock().IsSet()) return;
    const double after_s = static_cast<double>(h2 - started_host_ns_) / 1e9;
    if (!set_logged) {
      log_->info("clock set {:.3f} s after start", after_s);
      set_logged = true;
    }
    // A read the scheduler preempted between the host reads measures the preemption: skip it.
    const int64_t error = reading.synced_ns - (h1 + (h2 - h1) / 2);
    if (!synced_logged && h2 - h1 < 20'000 && std::abs(error) <= kSyncedNs) {
      log_->info("clock synced within {:.0f} us of the reference {:.3f} s after start (true error {:+.1f} us)",
                 kSyncedNs / 1e3, after_s, static_cast<double>(error) / 1e3);
      synced_logged = true;
    }
  };
  int exit_code = kExitOk;
  ModuleScheduler lockstep_scheduler;
  while (!stop.load(std::memory_order_relaxed) && local_.NowNs() < end) {
    follow_faults();
    link.Turn(client_, mutex_, extra, set_logged && synced_logged ? 50'000'000 : 5'000'000, forward_states);
    watch_join();
    // The acknowledgement leaves at once, not after the next wait.
    if (StepGranted(modules_, client_, mutex_, module_context, lockstep_scheduler)) link.SendPending(client_, mutex_);
    std::lock_guard lock(mutex_);
    // A (re)joined node sends all its entities afresh.
    if (client_.TakeRejoined()) module_context.resend_all.store(true);
    if (client_.Refused()) {
      exit_code = kExitRefused;
      break;
    }
    LogStatus(monitor);
  }
  {
    std::lock_guard lock(mutex_);
    client_.Leave(exit_code == kExitOk ? "shutdown" : "error");
  }
  link.Flush(client_, mutex_);
  loop_late_max_ns_ = link.Stalls().LateMaxNs();
  stop_threads.store(true);
  module_thread.join();
  monitor_thread.join();
  for (auto& m : modules_) m->Detach(module_context);
  data_hash_ = module_context.DataHash();
  data_messages_ = module_context.DataMessages();
  PrintSummary(monitor, module_context.SentStates(), module_context.SentEntities(), module_context.OwnedTruth());
  return exit_code;
}

void NodeRuntime::RegisterParams(config::ParamRegistry& registry) {
  const std::string prefix = "node." + options_.node.name + ".";
  // Read by the handler on the network thread with the client locked.
  registry.AddString(prefix + "role", "Role of this node", [this] { return std::string(protocol::RoleName(options_.node.role)); });
  registry.AddFloat(prefix + "sim_time_s", "s", config::Range{-INFINITY, INFINITY}, "This node's session sim time",
                    [this] { return static_cast<double>(client_.SimNowNs()) / 1e9; });
  registry.AddFloat(prefix + "module_rate_hz", "Hz", config::Range{0, 1e6}, "Step rate of the role's main module",
                    [this] { return options_.node.module_rate_hz; });
  for (auto& m : modules_) m->Params(registry, prefix);
}

void NodeRuntime::WatchNaiveError(ClockMonitor& monitor) {
  // Truth check: the error a clock stepped to each single exchange would have (host clock = reference).
  client_.on_time_sample = [&monitor, host = clock::MonotonicOscillator()](const clock::TimeSample& s) {
    monitor.AddNaive(s.t4_ns + static_cast<int64_t>(s.OffsetNs()) - host.NowNs());
  };
}

void NodeRuntime::LogStatus(const ClockMonitor& monitor) {
  const int64_t period = static_cast<int64_t>(options_.node.status_interval_s * 1e9);
  const int64_t now = local_.NowNs();
  if (period <= 0 || now < next_status_ns_) return;
  if (next_status_ns_ == 0) {
    next_status_ns_ = now + period;
    return;
  }
  next_status_ns_ = now + period;
  const auto st = client_.Clock().Status();
  std::string truth;
  if (options_.truth_check) truth = fmt::format(" | true error {:+.1f} us", static_cast<double>(monitor.LastErrorNs()) / 1e3);
  log_->info("clock {} | offset {:+.1f} us | drift {:+.1f} ppm | rate {:+.1f} ppm | rtt {:.0f} us | {} samples{} | "
             "world #{} (gaps {}) | sim {:.3f} s ({}){}",
             st.set ? "synced" : "unset", st.offset_ns / 1e3, st.drift_ppm, (st.rate - 1.0) * 1e6,
             static_cast<double>(st.min_delay_ns) / 1e3, st.samples, st.saturated ? " SATURATED" : "",
             client_.World().LastSequence(), client_.Stats().world_gaps, static_cast<double>(client_.SimNowNs()) / 1e9,
             protocol::PhaseName(client_.Phase()), truth);
}

void NodeRuntime::PrintSummary(const ClockMonitor& monitor, uint64_t states_sent, uint64_t entities_sent,
                               std::vector<protocol::EntityState> owned) {
  // A machine-readable summary, for tests, benchmarks and the launcher.
  const ClockReport report = monitor.Report();
  const auto st = client_.Clock().Status();
  const session::ClientStats& cs = client_.Stats();
  // The session hash of what this node owns and sees: its own truth and the remote world as received.
  for (auto& state : client_.World().Received()) owned.push_back(std::move(state));
  std::vector<std::string> fields;
  for (const auto& m : modules_) m->Summarize(fields);
  fields.push_back(fmt::format("\"update_latency_samples\":{},\"update_latency_p50_us\":{:.1f},"
                               "\"update_latency_p99_us\":{:.1f},\"world_gap_hist\":[{},{},{},{},{}]",
                               cs.latencies_ns.size(), static_cast<double>(AbsPercentile(cs.latencies_ns, 50)) / 1e3,
                               static_cast<double>(AbsPercentile(cs.latencies_ns, 99)) / 1e3, cs.gap_hist[0],
                               cs.gap_hist[1], cs.gap_hist[2], cs.gap_hist[3], cs.gap_hist[4]));
  fields.push_back(fmt::format("\"sim_time_s\":{:.3f},\"steps_done\":{},\"world_hash\":\"{}\"",
                               static_cast<double>(client_.SimNowNs()) / 1e9, client_.StepDone(),
                               session::HashHex(session::WorldHash(std::move(owned)))));
  if (data_messages_ > 0)
    fields.push_back(fmt::format("\"data_messages\":{},\"data_hash\":\"{}\"", data_messages_,
                                 session::HashHex(data_hash_)));
  // How far this node's loops fell behind the waits they asked for (a starved core shows here), and the
  // stalls of its own it did not count as the server's silence.
  // And how often the world stream fell silent long enough for the remote world to hold.
  fields.push_back(fmt::format(
      "\"loop_late_max_ms\":{:.1f},\"module_late_max_ms\":{:.1f},\"stalls_forgiven\":{},\"world_holds\":{}",
      static_cast<double>(loop_late_max_ns_) / 1e6, static_cast<double>(module_lateness_.LateMaxNs()) / 1e6,
      cs.stalls_forgiven, cs.world_holds));
  std::string module_fields;
  for (const auto& f : fields) module_fields += "," + f;
  const std::string summary = fmt::format(
      "SUMMARY {{\"node\":\"{}\",\"clock_set\":{},\"ticks\":{},\"backwards\":{},\"over_bound\":{},"
      "\"truth_samples\":{},\"truth_preempted\":{},\"error_p50_ns\":{},\"error_p99_ns\":{},\"error_max_ns\":{},"
      "\"naive_p50_ns\":{},\"naive_p99_ns\":{},\"naive_max_ns\":{},\"drift_ppm\":{:.3f},"
      "\"world_received\":{},\"world_gaps\":{},\"world_max_gap_ms\":{:.1f},\"snapshots\":{},"
      "\"server_restarts\":{},\"states_sent\":{},\"entities_sent\":{},\"bad_input\":{},\"samples_rejected\":{}{}}}",
      options_.node.name, st.set ? "true" : "false", report.ticks, report.backwards, report.over_bound,
      report.errors_ns.size(), report.preempted, AbsPercentile(report.errors_ns, 50), AbsPercentile(report.errors_ns, 99),
      AbsPercentile(report.errors_ns, 100), AbsPercentile(report.naive_ns, 50), AbsPercentile(report.naive_ns, 99),
      AbsPercentile(report.naive_ns, 100), st.drift_ppm, cs.world_received, cs.world_gaps,
      static_cast<double>(cs.world_max_gap_ns) / 1e6, cs.snapshots, cs.server_restarts, states_sent, entities_sent,
      cs.bad_input, st.samples_rejected, module_fields);
  // Machine-readable, so printed whatever the log level.
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);
}

}  // namespace platoon::node
