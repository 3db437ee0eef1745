#include "platoon/node/node_runtime.hpp"

#include "platoon/node/clock_monitor.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/node/view_monitor.hpp"
#include "platoon/node/world_view.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/transport/channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace platoon::node {
namespace {

using protocol::Decode;
using protocol::DecodeError;
using protocol::Encode;
using protocol::SessionPhase;

constexpr int64_t kSecond = 1'000'000'000;

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The session's sim clock on this node: the synced reference clock mapped through the session
// anchor that every world state carries (sim_time_ns at server_time_ns).
class SessionClock final : public SimClock {
 public:
  explicit SessionClock(const clock::SlewedClock& clock) : clock_(clock) {}

  bool Running() const override {
    std::lock_guard lock(mutex_);
    return clock_.IsSet() && phase_ == SessionPhase::kRunning;
  }
  int64_t SimNowNs() const override {
    std::lock_guard lock(mutex_);
    return SimAtLocked(clock_.NowNs());
  }
  void Follow(const protocol::WorldState& w) {
    std::lock_guard lock(mutex_);
    // A server that does not know the session yet (restarted, nobody rejoined) cannot move a
    // running session clock: this node keeps its anchor and tells the server when it rejoins.
    const bool ours_live = known_ && (phase_ == SessionPhase::kRunning || phase_ == SessionPhase::kPaused);
    if (ours_live && (w.phase == SessionPhase::kWaiting || w.phase == SessionPhase::kStarting)) return;
    phase_ = w.phase;
    sim_anchor_ns_ = w.sim_time_ns;
    ref_anchor_ns_ = w.server_time_ns;
    known_ = true;
  }
  // The node's view of the session, sent with Join so a restarted server can resume it.
  void Describe(protocol::Join& join) const {
    std::lock_guard lock(mutex_);
    join.session_phase = known_ ? phase_ : SessionPhase::kWaiting;
    join.sim_anchor_ns = sim_anchor_ns_;
    join.ref_anchor_ns = ref_anchor_ns_;
  }
  SessionPhase Phase() const {
    std::lock_guard lock(mutex_);
    return phase_;
  }

 private:
  int64_t SimAtLocked(int64_t ref_ns) const {
    return phase_ == SessionPhase::kRunning ? sim_anchor_ns_ + (ref_ns - ref_anchor_ns_) : sim_anchor_ns_;
  }
  const clock::SlewedClock& clock_;
  mutable std::mutex mutex_;
  SessionPhase phase_ = SessionPhase::kWaiting;
  int64_t sim_anchor_ns_ = 0, ref_anchor_ns_ = 0;
  bool known_ = false;
};

// What modules see. Lives on the module thread, except for the atomics the network thread sets.
class RuntimeContext final : public ModuleContext {
 public:
  RuntimeContext(const WorldView& view, transport::Channel& outbox, const dr::SendPolicyDef& policy, bool every_step)
      : view_(view), outbox_(outbox), policy_def_(policy), every_step_(every_step) {}

  std::vector<RemoteEntity> RemoteEntities(int64_t sim_ns) const override { return view_.Entities(sim_ns); }

  void Publish(const protocol::EntityState& truth) override {
    if (node_id.load() == 0) return;
    if (resend_all.exchange(false)) policies_.clear();
    auto it = policies_.try_emplace(truth.id, policy_def_).first;
    const int64_t now = truth.kinematics.stamp_ns;
    if (!every_step_ && !it->second.ShouldSend(truth.kinematics, now)) return;
    it->second.MarkSent(truth.kinematics);
    pending_.push_back(truth);
    pending_.back().owner_node = node_id.load();
  }

  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override {
    received = world_received.load();
    max_gap_ns = world_max_gap_ns.load();
  }

  uint32_t NodeId() const override { return node_id.load(); }

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
    std::lock_guard lock(nodes_mutex_);
    return nodes_;
  }

  // Network thread: the node table of a keyframe.
  void SetNodes(const std::vector<protocol::NodeInfo>& nodes) {
    std::lock_guard lock(nodes_mutex_);
    if (nodes == nodes_) return;
    nodes_ = nodes;
    ++nodes_version_;
  }

  void SetDataChannels(transport::Channel* pub, transport::Channel* sub) {
    data_pub_ = pub;
    data_sub_ = sub;
  }
  uint64_t DataSent() const { return data_sent_; }

  // Sends what the step published, as one NodeState, to the network thread.
  void Flush() {
    if (pending_.empty()) return;
    protocol::NodeState state{node_id.load(), ++sequence_, std::move(pending_)};
    pending_.clear();
    outbox_.Send(Encode(state));
    sent_entities_ += state.entities.size();
    ++sent_states_;
  }

  uint64_t SentEntities() const { return sent_entities_; }
  uint64_t SentStates() const { return sent_states_; }

  std::atomic<uint32_t> node_id{0};
  std::atomic<bool> resend_all{false};
  std::atomic<uint64_t> world_received{0};
  std::atomic<int64_t> world_max_gap_ns{0};

 private:
  const WorldView& view_;
  transport::Channel& outbox_;
  dr::SendPolicyDef policy_def_;
  bool every_step_;
  std::map<uint64_t, dr::SendPolicy> policies_;
  std::vector<protocol::EntityState> pending_;
  uint64_t sequence_ = 0, sent_entities_ = 0, sent_states_ = 0;

  // Module thread: connects the data SUB socket to every endpoint publishing a subscribed stream.
  void ResolveSubscriptions() {
    uint64_t version;
    std::vector<protocol::NodeInfo> nodes;
    {
      std::lock_guard lock(nodes_mutex_);
      version = nodes_version_;
      if (version == nodes_seen_) return;
      nodes = nodes_;
    }
    nodes_seen_ = version;
    std::set<std::string> wanted;
    for (const auto& n : nodes)
      for (const auto& e : n.endpoints)
        if (std::find(subscribed_.begin(), subscribed_.end(), e.stream_id) != subscribed_.end()) wanted.insert(e.Endpoint());
    for (const auto& ep : connected_)
      if (!wanted.count(ep)) data_sub_->Disconnect(ep);
    for (const auto& ep : wanted)
      if (!connected_.count(ep)) data_sub_->Connect(ep);
    connected_ = std::move(wanted);
  }

  transport::Channel* data_pub_ = nullptr;
  transport::Channel* data_sub_ = nullptr;
  uint64_t data_sent_ = 0;
  std::vector<std::string> subscribed_;
  std::set<std::string> connected_;
  uint64_t nodes_seen_ = ~0ull;
  mutable std::mutex nodes_mutex_;
  std::vector<protocol::NodeInfo> nodes_;
  uint64_t nodes_version_ = 0;
};

// Steps every module at its own rate while the session runs.
void RunModules(std::vector<std::unique_ptr<Module>>& modules, const SimClock& sim, RuntimeContext& context,
                const std::atomic<bool>& stop) {
  std::vector<int64_t> next(modules.size(), -1), last(modules.size(), -1);
  while (!stop.load(std::memory_order_relaxed)) {
    if (!sim.Running()) {
      // Paused or not started: sim time stands still, and so do the modules.
      std::fill(next.begin(), next.end(), -1);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    const int64_t now = sim.SimNowNs();
    int64_t wake = now + 50'000'000;
    for (size_t i = 0; i < modules.size(); ++i) {
      const auto period = static_cast<int64_t>(1e9 / modules[i]->RateHz());
      if (next[i] < 0) next[i] = now;
      if (now >= next[i]) {
        modules[i]->Step(StepInfo{now, last[i] < 0 ? 0 : now - last[i]}, context);
        context.Flush();
        last[i] = now;
        next[i] += period;
        if (next[i] <= now) next[i] = now + period;  // overrun: skip, never burst
      }
      wake = std::min(wake, next[i]);
    }
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
    : options_(std::move(options)), log_(std::move(logger)), local_(local), clock_(local, options_.session.clock) {}

int NodeRuntime::Run(const std::atomic<bool>& stop) {
  const auto& session = options_.session;
  const auto& def = options_.node;
  zmq::context_t context(1);
  transport::ChannelDef channel_def{.faults = session.faults};
  transport::Channel control(context, transport::Pattern::kDealer, channel_def);
  transport::Channel time(context, transport::Pattern::kDealer, channel_def);
  transport::Channel world(context, transport::Pattern::kSub, channel_def);
  transport::Channel state(context, transport::Pattern::kPush);
  // Module thread -> network thread: published node states.
  transport::Channel inbox(context, transport::Pattern::kPull), outbox(context, transport::Pattern::kPush);
  const std::string inproc = "inproc://node-outbox";
  inbox.Bind(inproc);
  outbox.Connect(inproc);
  const std::string control_endpoint = transport::TcpEndpoint(session.server_host, session.server.control_port);
  control.Connect(control_endpoint);

  SessionClock sim_clock(clock_);
  WorldView view;
  RuntimeContext module_context(view, outbox, options_.send_policy, options_.publish_every_step);
  std::vector<std::unique_ptr<Module>> modules;
  try {
    if (def.role == protocol::Role::kTraffic && def.traffic_model == "road")
      modules.push_back(std::make_unique<RoadTrafficModule>(session, def));
    else if (def.role == protocol::Role::kTraffic)
      modules.push_back(std::make_unique<TrafficModule>(def));
    else if (def.role == protocol::Role::kDriver)
      modules.push_back(std::make_unique<DriverSeatModule>(session, def, log_));
    else if (def.role == protocol::Role::kSensor)
      modules.push_back(std::make_unique<SensorHostModule>(session, def, log_));
    else if (def.role == protocol::Role::kFusion)
      modules.push_back(std::make_unique<FusionModule>(session, def, log_));
  } catch (const config::ConfigError& e) {
    log_->error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log_->error("cannot start the {} role: {}", protocol::RoleName(def.role), e.what());
    return kExitFailure;
  }
  modules.push_back(std::make_unique<ViewMonitor>(session, def.name, log_));

  // Data streams: one PUB socket for what this node's modules publish, one SUB for what they read.
  std::vector<protocol::DataEndpoint> endpoints;
  for (const auto& m : modules)
    for (auto e : m->Streams()) endpoints.push_back(std::move(e));
  transport::ChannelDef data_def{.send_hwm = 100, .receive_hwm = 100, .faults = session.faults};
  transport::Channel data_pub(context, transport::Pattern::kPub, data_def);
  transport::Channel data_sub(context, transport::Pattern::kSub, data_def);
  if (!endpoints.empty()) {
    std::string bound;
    try {
      bound = data_pub.Bind(transport::TcpEndpoint("*", def.data_port));
    } catch (const zmq::error_t& e) {
      log_->error("cannot bind the data socket on port {}: {}", def.data_port, e.what());
      return kExitFailure;
    }
    for (auto& e : endpoints) {
      e.port = transport::PortOf(bound);
      e.address = def.advertise_address;
      log_->info("publishes {} stream '{}' on {}", protocol::StreamKindName(e.kind), e.stream_id, bound);
    }
  }
  module_context.SetDataChannels(endpoints.empty() ? nullptr : &data_pub, &data_sub);

  std::atomic<bool> stop_threads{false};
  ClockMonitor monitor(clock_, def.monitor_rate_hz, options_.truth_check, options_.truth_warmup_s);
  std::thread monitor_thread([&] { monitor.Run(stop_threads); });
  std::thread module_thread([&] { RunModules(modules, sim_clock, module_context, stop_threads); });

  const uint16_t version = options_.protocol_version ? options_.protocol_version : protocol::kProtocolVersion;
  auto send_join = [&] {
    protocol::Join join{def.name, def.role, Hostname(), version, static_cast<uint32_t>(getpid())};
    join.endpoints = endpoints;
    sim_clock.Describe(join);
    control.Send(protocol::EncodeWithVersion(join, version));
  };

  bool joined = false;
  uint32_t node_id = 0;
  uint16_t connected_time_port = 0, connected_world_port = 0, connected_state_port = 0;
  int64_t heartbeat_period = static_cast<int64_t>(session.server.heartbeat_interval_s * 1e9);
  int64_t server_timeout = static_cast<int64_t>(session.server.lost_timeout_s * 1e9);
  const int64_t request_period = static_cast<int64_t>(1e9 / session.clock.sync_rate_hz);
  const int64_t status_period = static_cast<int64_t>(def.status_interval_s * 1e9);
  const int64_t start = local_.NowNs();
  const int64_t end = options_.exit_after_s > 0 ? start + static_cast<int64_t>(options_.exit_after_s * 1e9) : INT64_MAX;
  int64_t next_join = start, next_request = start, next_heartbeat = start, next_status = start + status_period;
  int64_t last_heard = start, waiting_logged = start, snapshot_due = -1, last_world_ns = -1;
  uint32_t request_seq = 0;
  uint64_t world_gaps = 0, server_restarts = 0, snapshots = 0;
  int exit_code = kExitOk;
  uint64_t bad_input = 0;
  clock::MonotonicOscillator host;

  // Update latency: sim time now minus the stamp of each entity state first seen in a broadcast.
  // Stamps are taken when the owner computed the state, so this is owner -> server -> here.
  std::vector<int64_t> latencies_ns;
  std::map<uint64_t, int64_t> newest_stamp;
  // World-state inter-arrival gaps, in broadcast periods: <=1.5, <=2.5, <=3.5, <=10.5, more.
  std::array<uint64_t, 5> gap_hist{};
  const int64_t broadcast_period = static_cast<int64_t>(1e9 / session.server.broadcast_hz);
  auto apply_world = [&](const protocol::WorldState& w, bool snapshot) {
    const bool stats_on = local_.NowNs() - start >= static_cast<int64_t>(options_.stats_warmup_s * 1e9);
    if (!snapshot && sim_clock.Running()) {
      const int64_t sim_now = sim_clock.SimNowNs();
      for (const auto& e : w.entities) {
        if (e.owner_node == node_id) continue;
        auto [it, fresh] = newest_stamp.try_emplace(e.id, e.kinematics.stamp_ns);
        if (!fresh && e.kinematics.stamp_ns <= it->second) continue;
        it->second = e.kinematics.stamp_ns;
        if (!fresh && stats_on && latencies_ns.size() < 2'000'000) latencies_ns.push_back(sim_now - e.kinematics.stamp_ns);
      }
    }
    sim_clock.Follow(w);
    if (!w.nodes.empty()) module_context.SetNodes(w.nodes);
    const ApplyResult r = view.Apply(w, node_id, sim_clock.SimNowNs(), snapshot);
    if (r.reset) {
      ++server_restarts;
      log_->warn("world sequence restarted: the server restarted; requesting a snapshot");
    }
    if (r.gap) ++world_gaps;
    if ((r.gap || r.reset) && snapshot_due < 0) snapshot_due = local_.NowNs();
  };

  log_->info("node '{}' ({}) joining session at {}", def.name, protocol::RoleName(def.role), control_endpoint);
  std::array<transport::Channel*, 4> inputs = {&time, &control, &world, &inbox};

  while (!stop.load(std::memory_order_relaxed)) {
    int64_t now = local_.NowNs();
    if (now >= end) break;
    int64_t next_due = std::min({joined ? next_request : next_join, next_heartbeat, next_status, end});
    if (snapshot_due >= 0) next_due = std::min(next_due, snapshot_due);
    transport::WaitAny(inputs, std::chrono::nanoseconds(std::clamp<int64_t>(next_due - now, 0, 50'000'000)));

    // Time replies first: t4 is stamped as soon as the loop sees them.
    while (auto p = time.TryReceive()) {
      const int64_t t4 = local_.NowNs();
      const auto d = Decode(p->data);
      const auto* reply = d.message ? std::get_if<protocol::TimeReply>(&*d.message) : nullptr;
      if (d.error != DecodeError::kNone || !reply) {
        ++bad_input;
        continue;
      }
      last_heard = t4;
      const clock::TimeSample sample{reply->t1_ns, reply->t2_ns, reply->t3_ns, t4};
      if (options_.truth_check) monitor.AddNaive(t4 + static_cast<int64_t>(sample.OffsetNs()) - host.NowNs());
      clock_.AddSample(sample);
    }
    // Published states from the modules go straight up.
    while (auto p = inbox.TryReceive())
      if (joined) state.Send(p->data);
    while (auto p = control.TryReceive()) {
      const auto d = Decode(p->data);
      if (!d.message) {
        ++bad_input;
        continue;
      }
      if (const auto* w = std::get_if<protocol::Welcome>(&*d.message)) {
        last_heard = local_.NowNs();
        node_id = w->node_id;
        module_context.node_id.store(node_id);
        heartbeat_period = w->heartbeat_interval_ns;
        server_timeout = w->lost_timeout_ns;
        // (Re)connect the other sockets to the ports the server announced.
        auto follow = [&](transport::Channel& c, uint16_t& current, uint16_t port) {
          if (current == port) return;
          if (current) c.Disconnect(transport::TcpEndpoint(session.server_host, current));
          c.Connect(transport::TcpEndpoint(session.server_host, port));
          current = port;
        };
        follow(time, connected_time_port, w->time_port);
        follow(world, connected_world_port, w->world_port);
        follow(state, connected_state_port, w->state_port);
        log_->info("{} session '{}' as node {} (time port {}, world port {})", joined ? "still in" : "joined",
                   w->session_name, node_id, w->time_port, w->world_port);
        joined = true;
        // A (re)joined node sends all its entities afresh and asks for the full world.
        module_context.resend_all.store(true);
        snapshot_due = local_.NowNs();
      } else if (const auto* r = std::get_if<protocol::Refuse>(&*d.message)) {
        if (r->reason.rfind("unknown node", 0) == 0) {
          // The server restarted and forgot us: join again; the clock and the world view keep running.
          if (joined) log_->warn("the server does not know this node (restarted?); joining again");
          joined = false;
          next_join = local_.NowNs();
        } else {
          log_->error("server refused node '{}': {} (server protocol version {}, node {})", def.name, r->reason,
                      r->server_protocol_version, version);
          exit_code = kExitRefused;
          break;
        }
      } else if (const auto* w = std::get_if<protocol::WorldState>(&*d.message)) {
        ++snapshots;
        apply_world(*w, true);
      }
    }
    if (exit_code != kExitOk) break;
    while (auto p = world.TryReceive()) {
      const auto d = Decode(p->data);
      const auto* w = d.message ? std::get_if<protocol::WorldState>(&*d.message) : nullptr;
      if (d.error != DecodeError::kNone || !w) {
        ++bad_input;
        continue;
      }
      const int64_t t = local_.NowNs();
      last_heard = t;
      if (last_world_ns >= 0) {
        const int64_t gap = t - last_world_ns;
        if (gap > module_context.world_max_gap_ns.load()) module_context.world_max_gap_ns.store(gap);
        const double periods = static_cast<double>(gap) / static_cast<double>(broadcast_period);
        if (t - start >= static_cast<int64_t>(options_.stats_warmup_s * 1e9))
          ++gap_hist[periods <= 1.5 ? 0 : periods <= 2.5 ? 1 : periods <= 3.5 ? 2 : periods <= 10.5 ? 3 : 4];
      }
      last_world_ns = t;
      module_context.world_received.fetch_add(1);
      apply_world(*w, false);
    }

    now = local_.NowNs();
    if (!joined && now >= next_join) {
      send_join();
      next_join = now + kSecond / 4;
      if (now - waiting_logged >= 5 * kSecond) {
        log_->info("waiting for the server at {}", control_endpoint);
        waiting_logged = now;
      }
    }
    if (joined && snapshot_due >= 0 && now >= snapshot_due) {
      control.Send(Encode(protocol::StatusRequest{}));
      snapshot_due = -1;
    }
    // Time exchanges go on while rejoining, so the clock stays disciplined.
    if (connected_time_port && now >= next_request) {
      time.Send(Encode(protocol::TimeRequest{node_id, ++request_seq, local_.NowNs()}));
      next_request += request_period;
      if (next_request < now) next_request = now + request_period;
    }
    if (joined && now >= next_heartbeat) {
      const auto st = clock_.Status();
      control.Send(Encode(protocol::Heartbeat{node_id, st.now_ns, static_cast<int64_t>(st.offset_ns), st.min_delay_ns,
                                              static_cast<int64_t>((st.rate - 1.0) * 1e9)}));
      next_heartbeat = now + heartbeat_period;
    }
    if (joined && now - last_heard > 3 * server_timeout) {
      log_->warn("server silent for {:.1f} s; joining again (clock and world view keep running)",
                 static_cast<double>(now - last_heard) / 1e9);
      joined = false;
      next_join = now;
      last_heard = now;
    }
    if (status_period > 0 && now >= next_status) {
      next_status = now + status_period;
      const auto st = clock_.Status();
      std::string truth;
      if (options_.truth_check)
        truth = fmt::format(" | true error {:+.1f} us", static_cast<double>(monitor.LastErrorNs()) / 1e3);
      log_->info("clock {} | offset {:+.1f} us | drift {:+.1f} ppm | rate {:+.1f} ppm | rtt {:.0f} us | {} samples{} | "
                 "world #{} (gaps {}) | sim {:.3f} s ({}){}",
                 st.set ? "synced" : "unset", st.offset_ns / 1e3, st.drift_ppm, (st.rate - 1.0) * 1e6,
                 static_cast<double>(st.min_delay_ns) / 1e3, st.samples, st.saturated ? " SATURATED" : "",
                 view.LastSequence(), world_gaps, static_cast<double>(sim_clock.SimNowNs()) / 1e9,
                 protocol::PhaseName(sim_clock.Phase()), truth);
    }
  }

  if (joined) control.Send(Encode(protocol::Leave{node_id, exit_code == kExitOk ? "shutdown" : "error"}));
  stop_threads.store(true);
  module_thread.join();
  monitor_thread.join();

  // A machine-readable summary, for tests, benchmarks and the launcher.
  const ClockReport report = monitor.Report();
  const auto st = clock_.Status();
  std::vector<std::string> fields;
  for (const auto& m : modules) m->Summarize(fields);
  fields.push_back(fmt::format("\"update_latency_samples\":{},\"update_latency_p50_us\":{:.1f},"
                               "\"update_latency_p99_us\":{:.1f},\"world_gap_hist\":[{},{},{},{},{}]",
                               latencies_ns.size(), static_cast<double>(AbsPercentile(latencies_ns, 50)) / 1e3,
                               static_cast<double>(AbsPercentile(latencies_ns, 99)) / 1e3, gap_hist[0], gap_hist[1],
                               gap_hist[2], gap_hist[3], gap_hist[4]));
  std::string module_fields;
  for (const auto& f : fields) module_fields += "," + f;
  const std::string summary = fmt::format("SUMMARY {{\"node\":\"{}\",\"clock_set\":{},\"ticks\":{},\"backwards\":{},\"over_bound\":{},"
             "\"truth_samples\":{},\"truth_preempted\":{},\"error_p50_ns\":{},\"error_p99_ns\":{},\"error_max_ns\":{},"
             "\"naive_p50_ns\":{},\"naive_p99_ns\":{},\"naive_max_ns\":{},\"drift_ppm\":{:.3f},"
             "\"world_received\":{},\"world_gaps\":{},\"world_max_gap_ms\":{:.1f},\"snapshots\":{},"
             "\"server_restarts\":{},\"states_sent\":{},\"entities_sent\":{},\"bad_input\":{},\"samples_rejected\":{}{}}}",
             def.name, st.set ? "true" : "false", report.ticks, report.backwards, report.over_bound,
             report.errors_ns.size(), report.preempted, AbsPercentile(report.errors_ns, 50),
             AbsPercentile(report.errors_ns, 99), AbsPercentile(report.errors_ns, 100),
             AbsPercentile(report.naive_ns, 50), AbsPercentile(report.naive_ns, 99),
             AbsPercentile(report.naive_ns, 100), st.drift_ppm, module_context.world_received.load(), world_gaps,
             static_cast<double>(module_context.world_max_gap_ns.load()) / 1e6, snapshots, server_restarts,
             module_context.SentStates(), module_context.SentEntities(), bad_input, st.samples_rejected, module_fields);
  // Machine-readable, so printed whatever the log level.
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);
  return exit_code;
}

}  // namespace platoon::node
