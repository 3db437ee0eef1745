#include "platoon/viewer/world_client.hpp"

#include "platoon/protocol/codec.hpp"
#include "platoon/transport/channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>

namespace platoon::viewer {
namespace {

using protocol::Decode;
using protocol::DecodeError;
using protocol::Encode;

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

int64_t SToNsInt(double s) { return static_cast<int64_t>(s * 1e9); }

}  // namespace

WorldClient::WorldClient(const WorldClientDef& def, std::shared_ptr<spdlog::logger> logger)
    : def_(def), log_(std::move(logger)), clock_(local_, def.clock) {}

WorldClient::~WorldClient() { Stop(); }

void WorldClient::Start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
}

void WorldClient::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

int64_t WorldClient::SimAtLocked(int64_t ref_ns) const {
  return shared_.phase == protocol::SessionPhase::kRunning ? anchor_sim_ns_ + (ref_ns - anchor_ref_ns_)
                                                           : anchor_sim_ns_;
}

WorldSnapshot WorldClient::Snapshot() const {
  const int64_t ref = clock_.NowNs();
  const clock::ClockStatus st = clock_.Status();
  std::lock_guard lock(mutex_);
  WorldSnapshot copy = shared_;
  const int64_t local_now = local_.NowNs();
  for (auto& st : copy.streams) {
    const auto it = stream_last_ns_.find(st.stream_id);
    st.age_s = it == stream_last_ns_.end() ? -1.0 : static_cast<double>(local_now - it->second) * 1e-9;
  }
  copy.sim_time_ns = SimAtLocked(ref);
  copy.clock_set = st.set;
  copy.clock = st;
  return copy;
}

int64_t WorldClient::SimNowNs() const {
  const int64_t ref = clock_.NowNs();
  std::lock_guard lock(mutex_);
  return SimAtLocked(ref);
}

void WorldClient::SendControl(const protocol::SessionControl& command) {
  std::lock_guard lock(mutex_);
  commands_.push_back(command);
}

void WorldClient::Run() {
  zmq::context_t context(1);
  transport::ChannelDef channel_def{.faults = def_.faults};
  transport::Channel control(context, transport::Pattern::kDealer, channel_def);
  transport::Channel time(context, transport::Pattern::kDealer, channel_def);
  transport::Channel world(context, transport::Pattern::kSub, channel_def);
  const std::string control_endpoint = transport::TcpEndpoint(def_.server_host, def_.control_port);
  control.Connect(control_endpoint);
  log_->info("viewer '{}' joining the session at {}", def_.name, control_endpoint);

  constexpr int64_t kSecond = 1'000'000'000;
  bool joined = false;
  uint32_t node_id = 0;
  uint16_t time_port = 0, world_port = 0;
  int64_t heartbeat_period = kSecond / 4;
  const int64_t request_period = static_cast<int64_t>(1e9 / def_.clock.sync_rate_hz);
  const int64_t rejoin_period = SToNsInt(def_.rejoin_interval_s);
  int64_t now = local_.NowNs();
  int64_t next_join = now, next_request = now, next_heartbeat = now, last_heard = now, waiting_logged = now;
  int64_t snapshot_due = -1;
  uint32_t request_seq = 0;
  std::string refused;

  // Applies a world state to the shared copy; `snapshot`: a reply to StatusRequest.
  auto apply_world = [&](const protocol::WorldState& w, bool snapshot) {
    const int64_t ref = clock_.NowNs();
    std::lock_guard lock(mutex_);
    shared_.phase = w.phase;
    anchor_sim_ns_ = w.sim_time_ns;
    anchor_ref_ns_ = w.server_time_ns;
    if ((!w.nodes.empty() || w.keyframe) && shared_.nodes != w.nodes) {
      shared_.nodes = w.nodes;
      ++nodes_version_;
    }
    const WorldApplyResult r = shared_.world.Apply(w, SimAtLocked(ref), snapshot);
    if (snapshot) ++shared_.snapshots;
    if (r.gap) ++shared_.world_gaps;
    if (r.reset) log_->warn("world sequence restarted: the server restarted; requesting a snapshot");
    if ((r.gap || r.reset) && snapshot_due < 0) snapshot_due = local_.NowNs();
  };
  auto count_bad = [&] {
    std::lock_guard lock(mutex_);
    ++shared_.bad_input;
  };

  // Sensor data straight from the publishing nodes (docs/PROTOCOL.md, "Data streams").
  transport::Channel data(context, transport::Pattern::kSub, channel_def);
  std::set<std::string> data_connected;
  uint64_t nodes_seen = ~0ull;
  // Connects the data socket to every wanted endpoint of the node table, drops the gone ones, and
  // rebuilds the stream list (keeping frame counts).
  auto resolve_streams = [&] {
    std::vector<protocol::NodeInfo> nodes;
    {
      std::lock_guard lock(mutex_);
      if (nodes_version_ == nodes_seen) return;
      nodes_seen = nodes_version_;
      nodes = shared_.nodes;
    }
    std::set<std::string> wanted;
    std::vector<SensorStreamStatus> streams;
    for (const auto& n : nodes) {
      for (const auto& e : n.endpoints) {
        const bool shown = e.kind == protocol::StreamKind::kFused || e.kind == protocol::StreamKind::kRadar ||
                           e.kind == protocol::StreamKind::kLidar;
        if (!shown) continue;
        const bool want = def_.sensor_data && (e.kind != protocol::StreamKind::kLidar || def_.subscribe_lidar);
        if (want) wanted.insert(e.Endpoint());
        streams.push_back(SensorStreamStatus{e.stream_id, e.kind, e.Endpoint(), n.name, want, 0, -1.0});
      }
    }
    for (const auto& ep : data_connected)
      if (!wanted.count(ep)) {
        data.Disconnect(ep);
        log_->info("data: disconnected from {}", ep);
      }
    for (const auto& ep : wanted)
      if (!data_connected.count(ep)) {
        data.Connect(ep);
        log_->info("data: connected to {}", ep);
      }
    data_connected = std::move(wanted);
    std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) { return a.stream_id < b.stream_id; });
    std::lock_guard lock(mutex_);
    for (auto& st : streams)
      for (const auto& old : shared_.streams)
        if (old.stream_id == st.stream_id) st.frames = old.frames;
    auto listed = [&](const std::string& id) {
      return std::any_of(streams.begin(), streams.end(), [&](const auto& st) { return st.stream_id == id; });
    };
    std::erase_if(shared_.fused, [&](const auto& kv) { return !listed(kv.first); });
    std::erase_if(shared_.radar, [&](const auto& kv) { return !listed(kv.first); });
    shared_.streams = std::move(streams);
  };
  // Counts a stream's message (under the lock).
  auto count_stream_locked = [&](const std::string& id) {
    stream_last_ns_[id] = local_.NowNs();
    for (auto& st : shared_.streams)
      if (st.stream_id == id) ++st.frames;
  };

  std::array<transport::Channel*, 4> inputs = {&time, &control, &world, &data};
  while (!stop_.load(std::memory_order_relaxed)) {
    now = local_.NowNs();
    int64_t next_due = std::min(joined ? next_request : next_join, next_heartbeat);
    if (snapshot_due >= 0) next_due = std::min(next_due, snapshot_due);
    // At most 10 ms, so queued session commands go out promptly.
    transport::WaitAny(inputs, std::chrono::nanoseconds(std::clamp<int64_t>(next_due - now, 0, 10'000'000)));

    // Time replies first: t4 is stamped as soon as the loop sees them.
    while (auto p = time.TryReceive()) {
      const int64_t t4 = local_.NowNs();
      const auto d = Decode(p->data);
      const auto* reply = d.message ? std::get_if<protocol::TimeReply>(&*d.message) : nullptr;
      if (d.error != DecodeError::kNone || !reply) {
        count_bad();
        continue;
      }
      last_heard = t4;
      clock_.AddSample(clock::TimeSample{reply->t1_ns, reply->t2_ns, reply->t3_ns, t4});
    }
    while (auto p = control.TryReceive()) {
      const auto d = Decode(p->data);
      if (!d.message) {
        count_bad();
        continue;
      }
      last_heard = local_.NowNs();
      if (const auto* w = std::get_if<protocol::Welcome>(&*d.message)) {
        node_id = w->node_id;
        heartbeat_period = std::max<int64_t>(w->heartbeat_interval_ns, kSecond / 100);
        // (Re)connect the time and world sockets to the ports the server announced.
        auto follow = [&](transport::Channel& c, uint16_t& current, uint16_t port) {
          if (current == port) return;
          if (current) c.Disconnect(transport::TcpEndpoint(def_.server_host, current));
          c.Connect(transport::TcpEndpoint(def_.server_host, port));
          current = port;
        };
        follow(time, time_port, w->time_port);
        follow(world, world_port, w->world_port);
        log_->info("{} session '{}' as node {} (time port {}, world port {})", joined ? "still in" : "joined",
                   w->session_name, node_id, w->time_port, w->world_port);
        joined = true;
        refused.clear();
        snapshot_due = local_.NowNs();
        std::lock_guard lock(mutex_);
        shared_.joined = true;
        shared_.node_id = node_id;
        shared_.session_name = w->session_name;
        shared_.error.clear();
      } else if (const auto* r = std::get_if<protocol::Refuse>(&*d.message)) {
        if (r->reason.rfind("unknown node", 0) == 0) {
          // The server restarted and forgot us: join again; clock and world keep running.
          if (joined) log_->warn("the server does not know this viewer (restarted?); joining again");
        } else if (r->reason != refused) {
          log_->error("server refused viewer '{}': {}", def_.name, r->reason);
          refused = r->reason;
        }
        joined = false;
        next_join = local_.NowNs() + (refused.empty() ? 0 : kSecond);
        std::lock_guard lock(mutex_);
        shared_.joined = false;
        shared_.error = refused;
      } else if (const auto* w = std::get_if<protocol::WorldState>(&*d.message)) {
        apply_world(*w, true);
      } else if (std::holds_alternative<protocol::SessionStatus>(*d.message)) {
        // The reply to a session command; the phase arrives with the next world state.
      } else {
        count_bad();
      }
    }
    while (auto p = world.TryReceive()) {
      const auto d = Decode(p->data);
      const auto* w = d.message ? std::get_if<protocol::WorldState>(&*d.message) : nullptr;
      if (d.error != DecodeError::kNone || !w) {
        count_bad();
        continue;
      }
      last_heard = local_.NowNs();
      {
        std::lock_guard lock(mutex_);
        ++shared_.world_received;
      }
      apply_world(*w, false);
    }

    // Sensor data: decoded here, the newest message of each stream kept for the render thread.
    for (int budget = 0; budget < 256; ++budget) {
      auto p = data.TryReceive();
      if (!p) break;
      auto d = Decode(p->data);
      if (d.error != DecodeError::kNone || !d.message) {
        count_bad();
        continue;
      }
      std::lock_guard lock(mutex_);
      ++shared_.data_received;
      if (auto* f = std::get_if<protocol::FusedCloud>(&*d.message)) {
        count_stream_locked(f->sensor_id);
        const std::string id = f->sensor_id;
        shared_.fused[id] = std::make_shared<const protocol::FusedCloud>(std::move(*f));
      } else if (auto* r = std::get_if<protocol::RadarScan>(&*d.message)) {
        count_stream_locked(r->header.sensor_id);
        const std::string id = r->header.sensor_id;
        shared_.radar[id] = std::make_shared<const protocol::RadarScan>(std::move(*r));
      } else if (const auto* c = std::get_if<protocol::PointCloud>(&*d.message)) {
        count_stream_locked(c->header.sensor_id);
      }
    }
    resolve_streams();

    // Session commands queued by the render thread.
    std::deque<protocol::SessionControl> commands;
    {
      std::lock_guard lock(mutex_);
      commands.swap(commands_);
    }
    for (auto& c : commands) {
      if (c.command == protocol::SessionControl::Command::kStart && c.at_server_time_ns == 0)
        c.at_server_time_ns = clock_.NowNs();
      control.Send(Encode(c));
      static constexpr const char* kNames[] = {"start", "pause", "resume", "stop"};
      log_->info("sent session command '{}'", kNames[static_cast<int>(c.command)]);
    }

    now = local_.NowNs();
    if (!joined && now >= next_join) {
      protocol::Join join{def_.name, def_.role, Hostname(), protocol::kProtocolVersion, static_cast<uint32_t>(getpid())};
      control.Send(Encode(join));
      next_join = now + rejoin_period;
      if (now - waiting_logged >= 5 * kSecond) {
        log_->info("waiting for the server at {}", control_endpoint);
        waiting_logged = now;
      }
    }
    if (joined && snapshot_due >= 0 && now >= snapshot_due) {
      control.Send(Encode(protocol::StatusRequest{}));
      snapshot_due = -1;
    }
    if (time_port && now >= next_request) {
      time.Send(Encode(protocol::TimeRequest{node_id, ++request_seq, local_.NowNs()}));
      next_request = std::max(next_request + request_period, now);
    }
    if (joined && now >= next_heartbeat) {
      const auto st = clock_.Status();
      control.Send(Encode(protocol::Heartbeat{node_id, st.now_ns, static_cast<int64_t>(st.offset_ns), st.min_delay_ns,
                                              static_cast<int64_t>((st.rate - 1.0) * 1e9)}));
      next_heartbeat = now + heartbeat_period;
    }
    if (joined && now - last_heard > SToNsInt(def_.server_silence_s)) {
      log_->warn("server silent for {:.1f} s; joining again", static_cast<double>(now - last_heard) / 1e9);
      joined = false;
      next_join = now;
      last_heard = now;
      std::lock_guard lock(mutex_);
      shared_.joined = false;
    }
  }
  if (joined) control.Send(Encode(protocol::Leave{node_id, "viewer closed"}));
  // Give ZeroMQ a moment to put the Leave on the wire before the context closes.
  control.Socket().set(zmq::sockopt::linger, 200);
}

}  // namespace platoon::viewer
