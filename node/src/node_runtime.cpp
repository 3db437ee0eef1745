#include "platoon/node/node_runtime.hpp"

#include "platoon/protocol/codec.hpp"
#include "platoon/transport/channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <optional>
#include <thread>

namespace platoon::node {
namespace {

using protocol::Decode;
using protocol::DecodeError;
using protocol::Encode;

constexpr int64_t kSecond = 1'000'000'000;

std::string Endpoint(const std::string& host, uint16_t port) { return "tcp://" + host + ":" + std::to_string(port); }

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Longest host-clock bracket around a local read that still counts as one instant, in ns.
constexpr int64_t kMaxBracketNs = 20'000;

// The 1 kHz module thread: reads the synced clock each tick and checks its properties.
class ClockMonitor {
 public:
  ClockMonitor(const clock::SlewedClock& clock, const clock::Oscillator& local, bool truth, double warmup_s)
      : clock_(clock), local_(local), truth_(truth), warmup_ns_(static_cast<int64_t>(warmup_s * 1e9)) {}

  void Run(const std::atomic<bool>& stop) {
    clock::MonotonicOscillator host;
    const double bound = clock_.Def().max_slew_ppm * 1e-6;
    int64_t prev_synced = 0, prev_local = 0, set_at = -1;
    auto next = std::chrono::steady_clock::now();
    while (!stop.load(std::memory_order_relaxed)) {
      next += std::chrono::milliseconds(1);
      std::this_thread::sleep_until(next);
      if (!clock_.IsSet()) continue;
      // Bracket the local read with two host reads; a sample the scheduler preempted in between
      // measures the preemption, not the clock, and is left out of the truth statistics.
      const int64_t h1 = host.NowNs();
      const int64_t l = local_.NowNs();
      const int64_t h2 = host.NowNs();
      const int64_t synced = clock_.AtLocalNs(l);
      const int64_t truth = h1 + (h2 - h1) / 2;
      const bool clean = h2 - h1 <= kMaxBracketNs;
      std::lock_guard lock(mutex_);
      if (set_at >= 0) {
        ++report_.ticks;
        if (synced <= prev_synced) ++report_.backwards;
        if (static_cast<double>(synced - prev_synced) > (1 + bound) * static_cast<double>(l - prev_local) + 1)
          ++report_.over_bound;
      } else {
        set_at = l;
      }
      prev_synced = synced;
      prev_local = l;
      warm_ = l - set_at >= warmup_ns_;
      if (!clean) {
        ++report_.preempted;
        continue;
      }
      last_error_ns_ = synced - truth;
      if (truth_ && warm_) report_.errors_ns.push_back(last_error_ns_);
    }
  }

  ClockReport Report() const {
    std::lock_guard lock(mutex_);
    return report_;
  }
  /// Records the error a clock stepped to this one exchange would have (the single-sample baseline).
  void AddNaive(int64_t error_ns) {
    std::lock_guard lock(mutex_);
    if (truth_ && warm_) naive_ns_.push_back(error_ns);
  }
  std::vector<int64_t> Naive() const {
    std::lock_guard lock(mutex_);
    return naive_ns_;
  }
  int64_t LastErrorNs() const {
    std::lock_guard lock(mutex_);
    return last_error_ns_;
  }

 private:
  const clock::SlewedClock& clock_;
  const clock::Oscillator& local_;
  bool truth_;
  int64_t warmup_ns_;
  mutable std::mutex mutex_;
  ClockReport report_;
  int64_t last_error_ns_ = 0;
  bool warm_ = false;
  std::vector<int64_t> naive_ns_;
};

}  // namespace

int64_t AbsPercentile(std::vector<int64_t> values, double percentile) {
  if (values.empty()) return 0;
  for (auto& v : values) v = std::abs(v);
  const size_t rank = std::min(values.size() - 1,
                               static_cast<size_t>(std::ceil(percentile / 100.0 * static_cast<double>(values.size()))) -
                                   (percentile > 0 ? 1 : 0));
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
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
  const std::string control_endpoint = Endpoint(session.server_host, session.server.control_port);
  control.Connect(control_endpoint);

  std::atomic<bool> stop_modules{false};
  ClockMonitor monitor(clock_, local_, options_.truth_check, options_.truth_warmup_s);
  std::thread module_thread([&] { monitor.Run(stop_modules); });

  protocol::Join join{def.name, def.role, Hostname(), protocol::kProtocolVersion, static_cast<uint32_t>(getpid())};
  const uint16_t version = options_.protocol_version ? options_.protocol_version : protocol::kProtocolVersion;
  join.protocol_version = version;
  auto send_join = [&] { control.Send(protocol::EncodeWithVersion(join, version)); };

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
  int64_t last_heard = start, waiting_logged = start;
  uint32_t request_seq = 0;
  uint64_t world_seq = 0, world_received = 0, world_gaps = 0;
  std::optional<protocol::WorldState> last_world;
  int exit_code = kExitOk;
  uint64_t bad_input = 0;

  log_->info("node '{}' ({}) joining session at {}", def.name, protocol::RoleName(def.role), control_endpoint);
  std::array<transport::Channel*, 3> inputs = {&time, &control, &world};

  while (!stop.load(std::memory_order_relaxed)) {
    int64_t now = local_.NowNs();
    if (now >= end) break;
    int64_t next_due = std::min({joined ? next_request : next_join, next_heartbeat, next_status, end});
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
      if (options_.truth_check)
        monitor.AddNaive(t4 + static_cast<int64_t>(sample.OffsetNs()) - clock::MonotonicOscillator().NowNs());
      clock_.AddSample(sample);
    }
    while (auto p = control.TryReceive()) {
      const auto d = Decode(p->data);
      if (!d.message) {
        ++bad_input;
        continue;
      }
      if (const auto* w = std::get_if<protocol::Welcome>(&*d.message)) {
        last_heard = local_.NowNs();
        node_id = w->node_id;
        heartbeat_period = w->heartbeat_interval_ns;
        server_timeout = w->lost_timeout_ns;
        // (Re)connect the other sockets to the ports the server announced.
        auto follow = [&](transport::Channel& c, uint16_t& current, uint16_t port) {
          if (current == port) return;
          if (current) c.Disconnect(Endpoint(session.server_host, current));
          c.Connect(Endpoint(session.server_host, port));
          current = port;
        };
        follow(time, connected_time_port, w->time_port);
        follow(world, connected_world_port, w->world_port);
        follow(state, connected_state_port, w->state_port);
        if (!joined)
          log_->info("joined session '{}' as node {} (time port {}, world port {})", w->session_name, node_id,
                     w->time_port, w->world_port);
        joined = true;
      } else if (const auto* r = std::get_if<protocol::Refuse>(&*d.message)) {
        if (r->reason.rfind("unknown node", 0) == 0) {
          // The server restarted and forgot us: join again, keep the clock running.
          if (joined) log_->warn("server does not know this node any more; joining again");
          joined = false;
          next_join = local_.NowNs();
        } else {
          log_->error("server refused node '{}': {} (server protocol version {}, node {})", def.name, r->reason,
                      r->server_protocol_version, version);
          exit_code = kExitRefused;
          break;
        }
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
      last_heard = local_.NowNs();
      ++world_received;
      if (world_seq != 0 && w->sequence > world_seq + 1) world_gaps += w->sequence - world_seq - 1;
      // A lower sequence after a higher one is a server restart: follow it.
      world_seq = w->sequence;
      last_world = *w;
    }

    now = local_.NowNs();
    if (!joined && now >= next_join) {
      send_join();
      next_join = now + kSecond;
      if (now - waiting_logged >= 5 * kSecond) {
        log_->info("waiting for the server at {}", control_endpoint);
        waiting_logged = now;
      }
    }
    if (joined && now >= next_request) {
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
      log_->warn("server silent for {:.1f} s; joining again (the clock keeps running)",
                 static_cast<double>(now - last_heard) / 1e9);
      joined = false;
      next_join = now;
      last_heard = now;
    }
    if (status_period > 0 && now >= next_status) {
      next_status = now + status_period;
      const auto st = clock_.Status();
      std::string sim = "-";
      if (last_world) {
        char buf[64];
        const bool running = last_world->phase == protocol::SessionPhase::kRunning;
        const int64_t sim_ns = last_world->sim_time_ns + (running ? st.now_ns - last_world->server_time_ns : 0);
        std::snprintf(buf, sizeof buf, "%.3f s (%s)", static_cast<double>(sim_ns) / 1e9,
                      std::string(protocol::PhaseName(last_world->phase)).c_str());
        sim = buf;
      }
      std::string truth;
      if (options_.truth_check) truth = fmt::format(" | true error {:+.1f} us", static_cast<double>(monitor.LastErrorNs()) / 1e3);
      log_->info("clock {} | offset {:+.1f} us | drift {:+.1f} ppm | rate {:+.1f} ppm | rtt {:.0f} us | {} samples{} | "
                 "world #{} (gaps {}) | sim {}{}",
                 st.set ? "synced" : "unset", st.offset_ns / 1e3, st.drift_ppm, (st.rate - 1.0) * 1e6,
                 static_cast<double>(st.min_delay_ns) / 1e3, st.samples, st.saturated ? " SATURATED" : "", world_seq,
                 world_gaps, sim, truth);
    }
  }

  if (joined) control.Send(Encode(protocol::Leave{node_id, exit_code == kExitOk ? "shutdown" : "error"}));
  stop_modules.store(true);
  module_thread.join();

  // A machine-readable summary, for tests, benchmarks and the launcher.
  const ClockReport report = monitor.Report();
  const auto st = clock_.Status();
  log_->info("SUMMARY {{\"node\":\"{}\",\"clock_set\":{},\"ticks\":{},\"backwards\":{},\"over_bound\":{},"
             "\"truth_samples\":{},\"truth_preempted\":{},\"error_p50_ns\":{},\"error_p99_ns\":{},\"error_max_ns\":{},"
             "\"naive_p50_ns\":{},\"naive_p99_ns\":{},\"naive_max_ns\":{},\"drift_ppm\":{:.3f},"
             "\"world_received\":{},\"world_gaps\":{},\"bad_input\":{},\"samples_rejected\":{}}}",
             def.name, st.set ? "true" : "false", report.ticks, report.backwards, report.over_bound,
             report.errors_ns.size(), report.preempted, AbsPercentile(report.errors_ns, 50), AbsPercentile(report.errors_ns, 99),
             AbsPercentile(report.errors_ns, 100), AbsPercentile(monitor.Naive(), 50), AbsPercentile(monitor.Naive(), 99),
             AbsPercentile(monitor.Naive(), 100), st.drift_ppm, world_received, world_gaps, bad_input,
             st.samples_rejected);
  return exit_code;
}

}  // namespace platoon::node
