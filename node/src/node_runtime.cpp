#include "platoon/node/node_runtime.hpp"

#include "platoon/node/clock_monitor.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/node/view_monitor.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/session/world_hash.hpp"
#include "platoon/transport/channel.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace platoon::node {
namespace {

using protocol::Encode;

constexpr int64_t kSecond = 1'000'000'000;

session::ClientDef MakeClientDef(const NodeOptions& o) {
  session::ClientDef d = session::DefaultClientDef(o.node.name, o.node.role);
  if (o.protocol_version) d.protocol_version = o.protocol_version;
  d.clock = o.session.clock;
  d.lockstep_member = true;
  d.stats_warmup_s = o.stats_warmup_s;
  d.broadcast_hz = o.session.server.broadcast_hz;
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

// What modules see. Lives on the module thread; reads of the session client hold its mutex.
class RuntimeContext final : public ModuleContext {
 public:
  RuntimeContext(session::SessionClient& client, std::mutex& mutex, transport::Channel& outbox,
                 const dr::SendPolicyDef& policy, bool every_step)
      : client_(client), mutex_(mutex), outbox_(outbox), policy_def_(policy), every_step_(every_step) {}

  std::vector<RemoteEntity> RemoteEntities(int64_t sim_ns) const override {
    std::vector<std::pair<protocol::EntityState, Pose>> shown;
    {
      std::lock_guard lock(mutex_);
      shown = client_.World().WithDisplayedPose(sim_ns);
    }
    std::vector<RemoteEntity> out;
    out.reserve(shown.size());
    for (auto& [state, pose] : shown) out.push_back(RemoteEntity{std::move(state), pose});
    return out;
  }

  void Publish(const protocol::EntityState& truth) override {
    truth_[truth.id] = truth;
    const uint32_t id = NodeId();
    if (id == 0) return;
    if (resend_all.exchange(false)) policies_.clear();
    auto it = policies_.try_emplace(truth.id, policy_def_).first;
    if (!every_step_ && !it->second.ShouldSend(truth.kinematics, truth.kinematics.stamp_ns)) return;
    it->second.MarkSent(truth.kinematics);
    pending_.push_back(truth);
    pending_.back().owner_node = id;
  }

  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override {
    std::lock_guard lock(mutex_);
    received = client_.Stats().world_received;
    max_gap_ns = client_.Stats().world_max_gap_ns;
  }

  uint32_t NodeId() const override {
    std::lock_guard lock(mutex_);
    return client_.NodeId();
  }

  void PublishData(const protocol::Message& message) override {
    if (!data_pub_) return;
    data_pub_->Send(Encode(message));
    ++data_sent_;
  }

  void SubscribeData(const std::vector<std::string>& stream_ids) override {
    subscribed_ = stream_ids;
    nodes_seen_ = ~0ull;  // re-resolve at the next ReceiveData
  }

  std::optional<std::string> ReceiveData(int64_t wait_ns) override {
    if (!data_sub_) return std::nullopt;
    ResolveSubscriptions();
    auto p = wait_ns > 0 ? data_sub_->Receive(std::chrono::nanoseconds(wait_ns)) : data_sub_->TryReceive();
    if (!p) return std::nullopt;
    return std::move(p->data);
  }

  std::vector<protocol::NodeInfo> Nodes() const override {
    std::lock_guard lock(mutex_);
    return client_.Nodes();
  }

  void SetDataChannels(transport::Channel* pub, transport::Channel* sub) {
    data_pub_ = pub;
    data_sub_ = sub;
    if (sub) connector_.emplace(*sub);
  }

  // Sends what the step published, as one NodeState, to the network thread. In lock-step every step
  // ends with one, carrying the acknowledgement after the states.
  void Flush(uint64_t step_done = 0) {
    if (pending_.empty() && step_done == 0) return;
    protocol::NodeState state{NodeId(), ++sequence_, std::move(pending_), step_done};
    pending_.clear();
    outbox_.Send(Encode(state));
    sent_entities_ += state.entities.size();
    ++sent_states_;
  }

  // The newest truth of every owned entity, for the session hash.
  std::vector<protocol::EntityState> OwnedTruth() const {
    std::vector<protocol::EntityState> out;
    for (const auto& [id, e] : truth_) out.push_back(e);
    return out;
  }

  uint64_t SentEntities() const { return sent_entities_; }
  uint64_t SentStates() const { return sent_states_; }

  std::atomic<bool> resend_all{false};

 private:
  // Module thread: connects the data SUB socket to every endpoint publishing a subscribed stream.
  void ResolveSubscriptions() {
    std::vector<protocol::NodeInfo> nodes;
    {
      std::lock_guard lock(mutex_);
      if (client_.NodesVersion() == nodes_seen_) return;
      nodes_seen_ = client_.NodesVersion();
      nodes = client_.Nodes();
    }
    connector_->Resolve(nodes, [&](const protocol::DataEndpoint& e) {
      return std::find(subscribed_.begin(), subscribed_.end(), e.stream_id) != subscribed_.end();
    });
  }

  session::SessionClient& client_;
  std::mutex& mutex_;
  transport::Channel& outbox_;
  dr::SendPolicyDef policy_def_;
  bool every_step_;
  std::map<uint64_t, dr::SendPolicy> policies_;
  std::map<uint64_t, protocol::EntityState> truth_;
  std::vector<protocol::EntityState> pending_;
  uint64_t sequence_ = 0, sent_entities_ = 0, sent_states_ = 0;
  transport::Channel* data_pub_ = nullptr;
  transport::Channel* data_sub_ = nullptr;
  std::optional<session::StreamConnector> connector_;
  uint64_t data_sent_ = 0;
  std::vector<std::string> subscribed_;
  uint64_t nodes_seen_ = ~0ull;
};

// Steps every module due at `now` (each at its own rate: overruns skip, never burst).
void StepDue(std::vector<std::unique_ptr<Module>>& modules, std::vector<int64_t>& next, std::vector<int64_t>& last,
             int64_t now, RuntimeContext& context) {
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto period = static_cast<int64_t>(1e9 / modules[i]->RateHz());
    if (next[i] < 0) next[i] = now;
    if (now < next[i]) continue;
    modules[i]->Step(StepInfo{now, last[i] < 0 ? 0 : now - last[i]}, context);
    context.Flush();
    last[i] = now;
    next[i] += period;
    if (next[i] <= now) next[i] = now + period;
  }
}

// Real time: steps the modules on the synced sim clock while the session runs.
// Lock-step: steps them once per grant at the granted sim time, then acknowledges the step.
void RunModules(std::vector<std::unique_ptr<Module>>& modules, session::SessionClient& client, std::mutex& mutex,
                RuntimeContext& context, const std::atomic<bool>& stop) {
  const ClientSimClock sim(client, mutex);
  std::vector<int64_t> next(modules.size(), -1), last(modules.size(), -1);
  while (!stop.load(std::memory_order_relaxed)) {
    uint64_t step = 0;
    if (!sim.Running()) {
      // Paused, not started, or waiting for the next grant: sim time stands still, and so do the modules.
      {
        std::lock_guard lock(mutex);
        if (client.StepNs() == 0) std::fill(next.begin(), next.end(), -1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    int64_t now;
    {
      std::lock_guard lock(mutex);
      now = client.SimNowNs();
      if (client.StepNs() > 0) step = client.GrantedStep();
    }
    StepDue(modules, next, last, now, context);
    if (step > 0) {
      context.Flush(step);
      std::lock_guard lock(mutex);
      client.MarkStepDone(step);
      continue;
    }
    int64_t wake = now + 50'000'000;
    for (int64_t n : next) wake = std::min(wake, n);
    // Sim time runs at the synced rate (1 +- 1 %), so sleeping the sim-time difference is close enough.
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(0, wake - sim.SimNowNs())));
  }
}

}  // namespace

bool RoleAvailable(protocol::Role role, std::string& why) {
  switch (role) {
    case protocol::Role::kObserver:
    case protocol::Role::kTraffic:
    case protocol::Role::kDriver:
    case protocol::Role::kSensor:
    case protocol::Role::kFusion: return true;
    default:
      why = "role '" + std::string(protocol::RoleName(role)) +
            "' is not available in this version (available: observer, traffic, driver, sensor, fusion)";
      return false;
  }
}

NodeRuntime::NodeRuntime(NodeOptions options, std::shared_ptr<spdlog::logger> logger, const clock::Oscillator& local)
    : options_(std::move(options)), log_(std::move(logger)), local_(local), client_(MakeClientDef(options_), local, log_) {}

const clock::SlewedClock& NodeRuntime::Clock() const { return client_.Clock(); }

int NodeRuntime::MakeModules() {
  const auto& session = options_.session;
  const auto& def = options_.node;
  try {
    if (def.role == protocol::Role::kTraffic && def.traffic_model == "road")
      modules_.push_back(std::make_unique<RoadTrafficModule>(session, def));
    else if (def.role == protocol::Role::kTraffic)
      modules_.push_back(std::make_unique<TrafficModule>(def));
    else if (def.role == protocol::Role::kDriver)
      modules_.push_back(std::make_unique<DriverSeatModule>(session, def, log_));
    else if (def.role == protocol::Role::kSensor)
      modules_.push_back(std::make_unique<SensorHostModule>(session, def, log_));
    else if (def.role == protocol::Role::kFusion)
      modules_.push_back(std::make_unique<FusionModule>(session, def, log_));
  } catch (const config::ConfigError& e) {
    log_->error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log_->error("cannot start the {} role: {}", protocol::RoleName(def.role), e.what());
    return kExitFailure;
  }
  modules_.push_back(std::make_unique<ViewMonitor>(session, def.name, log_));
  return kExitOk;
}

std::vector<protocol::DataEndpoint> NodeRuntime::BindData(transport::Channel& pub) {
  std::vector<protocol::DataEndpoint> endpoints;
  for (const auto& m : modules_)
    for (auto e : m->Streams()) endpoints.push_back(std::move(e));
  if (endpoints.empty()) return endpoints;
  // Throws zmq::error_t when the port is taken.
  const std::string bound = pub.Bind(transport::TcpEndpoint("*", options_.node.data_port));
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
  transport::ChannelDef data_def{.send_hwm = 100, .receive_hwm = 100, .faults = session.faults};
  transport::Channel data_pub(context, transport::Pattern::kPub, data_def), data_sub(context, transport::Pattern::kSub, data_def);
  std::vector<protocol::DataEndpoint> endpoints;
  try {
    endpoints = BindData(data_pub);
  } catch (const zmq::error_t& e) {
    log_->error("cannot bind the data socket on port {}: {}", options_.node.data_port, e.what());
    return kExitFailure;
  }
  client_.SetEndpoints(endpoints);
  // Module thread -> network thread: published node states, in order.
  transport::Channel inbox(context, transport::Pattern::kPull), outbox(context, transport::Pattern::kPush);
  inbox.Bind("inproc://node-outbox");
  outbox.Connect("inproc://node-outbox");
  session::ClientLink link(context, session.server_host, session.server.control_port, session.faults);
  RuntimeContext module_context(client_, mutex_, outbox, options_.send_policy, options_.publish_every_step);
  module_context.SetDataChannels(endpoints.empty() ? nullptr : &data_pub, &data_sub);

  ClockMonitor monitor(client_.Clock(), options_.node.monitor_rate_hz, options_.truth_check, options_.truth_warmup_s);
  clock::MonotonicOscillator host;
  if (options_.truth_check)
    client_.on_time_sample = [&](const clock::TimeSample& s) {
      monitor.AddNaive(s.t4_ns + static_cast<int64_t>(s.OffsetNs()) - host.NowNs());
    };
  std::atomic<bool> stop_threads{false};
  std::thread monitor_thread([&] { monitor.Run(stop_threads); });
  std::thread module_thread([&] { RunModules(modules_, client_, mutex_, module_context, stop_threads); });
  log_->info("node '{}' ({}) joining session at {}", options_.node.name, protocol::RoleName(options_.node.role),
             link.ControlEndpoint());

  const int64_t end = options_.exit_after_s > 0 ? local_.NowNs() + static_cast<int64_t>(options_.exit_after_s * 1e9) : INT64_MAX;
  const auto forward_states = [&] {
    while (auto p = inbox.TryReceive()) {
      std::lock_guard lock(mutex_);
      client_.SendState(std::move(p->data));
    }
  };
  transport::Channel* const extra[] = {&inbox};
  int exit_code = kExitOk;
  while (!stop.load(std::memory_order_relaxed) && local_.NowNs() < end) {
    link.Turn(client_, mutex_, extra, 50'000'000, forward_states);
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
  stop_threads.store(true);
  module_thread.join();
  monitor_thread.join();
  PrintSummary(monitor, module_context.SentStates(), module_context.SentEntities(), module_context.OwnedTruth());
  return exit_code;
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
