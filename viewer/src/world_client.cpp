#include "platoon/viewer/world_client.hpp"

#include "platoon/protocol/codec.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/operator_token.hpp"

#include <algorithm>

namespace platoon::viewer {
namespace {

session::ClientDef MakeClientDef(const WorldClientDef& def) {
  session::ClientDef d = session::DefaultClientDef(def.name, def.role);
  d.clock = def.clock;
  d.rejoin_interval_s = def.rejoin_interval_s;
  d.server_silence_s = def.server_silence_s;
  d.world_hold_s = def.world_hold_s;
  d.retry_refused = true;  // a viewer keeps trying, and shows the refusal
  d.keep_replies = true;   // the parameter panel reads the answers (TakeReplies)
  // No CURVE: session buttons and parameter sets present the operator token the server wrote for this user.
  if (!def.curve) {
    d.operator_token = session::FindOperatorToken(def.control_port).token;
    d.find_operator_token = session::OperatorTokenFinder(def.control_port);
  }
  return d;
}

}  // namespace

WorldClient::WorldClient(const WorldClientDef& def, std::shared_ptr<spdlog::logger> logger)
    : def_(def), log_(std::move(logger)), client_(MakeClientDef(def), local_, log_) {}

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

std::pair<std::string, std::string> WorldClient::SessionFile() const {
  std::lock_guard lock(mutex_);
  return {client_.SessionFile(), client_.SessionFilePath()};
}

std::optional<world::WorldConditions> WorldClient::Conditions() const {
  std::lock_guard lock(mutex_);
  return client_.Conditions();
}

WorldSnapshot WorldClient::Snapshot() const {
  std::lock_guard lock(mutex_);
  WorldSnapshot copy = data_;
  const int64_t local_now = local_.NowNs();
  for (auto& st : copy.streams) {
    const auto it = stream_last_ns_.find(st.stream_id);
    st.age_s = it == stream_last_ns_.end() ? -1.0 : static_cast<double>(local_now - it->second) * 1e-9;
  }
  const session::ClientStats& cs = client_.Stats();
  copy.joined = client_.Joined();
  copy.node_id = client_.NodeId();
  copy.session_name = client_.SessionName();
  copy.replay = client_.TimeControl();
  copy.sim_rate = client_.Anchor().rate;
  copy.phase = client_.Phase();
  copy.sim_time_ns = client_.SimNowNs();
  copy.clock = client_.Clock().Status();
  copy.clock_set = copy.clock.set;
  copy.nodes = client_.Nodes();
  copy.world = client_.World();
  copy.world_received = cs.world_received;
  copy.world_gaps = cs.world_gaps;
  copy.snapshots = cs.snapshots;
  copy.bad_input = cs.bad_input + data_.bad_input;
  copy.error = client_.LastRefusal();
  return copy;
}

int64_t WorldClient::SimNowNs() const {
  std::lock_guard lock(mutex_);
  return client_.SimNowNs();
}

void WorldClient::SendControl(const protocol::SessionControl& command) {
  static constexpr const char* kNames[] = {"start", "pause", "resume", "stop", "seek", "speed"};
  log_->info("sending session command '{}'", kNames[static_cast<int>(command.command)]);
  std::lock_guard lock(mutex_);
  client_.Control(command);
}

void WorldClient::SendRequest(const session::ParamRequest& request) {
  std::lock_guard lock(mutex_);
  client_.RequestParams(request);
}

std::vector<session::ControlReply> WorldClient::TakeReplies() {
  std::lock_guard lock(mutex_);
  return client_.TakeReplies();
}

void WorldClient::Run() {
  zmq::context_t context(1);
  session::ClientLink link(context, def_.server_host, def_.control_port, def_.faults, def_.curve);
  log_->info("viewer '{}' joining the session at {}", def_.name, link.ControlEndpoint());
  // Sensor data straight from the publishing nodes (docs/PROTOCOL.md, "Data streams").
  transport::Channel data(context, transport::Pattern::kSub, transport::ChannelDef{.faults = def_.faults});
  session::StreamConnector connector(data);
  transport::Channel* const extra[] = {&data};
  while (!stop_.load(std::memory_order_relaxed)) {
    // At most 10 ms, so queued session commands go out promptly.
    link.Turn(client_, mutex_, extra, 10'000'000, [&] { DrainData(data); });
    ResolveStreams(connector);
  }
  {
    std::lock_guard lock(mutex_);
    client_.Leave("viewer closed");
  }
  link.Flush(client_, mutex_);
}

void WorldClient::DrainData(transport::Channel& data) {
  // Decoded here; the newest message of each stream is kept for the render thread.
  for (int budget = 0; budget < 256; ++budget) {
    auto p = data.TryReceive();
    if (!p) break;
    auto d = protocol::Decode(p->data);
    std::lock_guard lock(mutex_);
    if (d.error != protocol::DecodeError::kNone || !d.message) {
      ++data_.bad_input;
      continue;
    }
    ++data_.data_received;
    std::string id;
    if (auto* f = std::get_if<protocol::FusedCloud>(&*d.message)) {
      id = f->sensor_id;
      data_.fused[id] = std::make_shared<const protocol::FusedCloud>(std::move(*f));
    } else if (auto* r = std::get_if<protocol::RadarScan>(&*d.message)) {
      id = r->header.sensor_id;
      data_.radar[id] = std::make_shared<const protocol::RadarScan>(std::move(*r));
    } else if (const auto* c = std::get_if<protocol::PointCloud>(&*d.message)) {
      id = c->header.sensor_id;
    }
    if (id.empty()) continue;
    stream_last_ns_[id] = local_.NowNs();
    for (auto& st : data_.streams)
      if (st.stream_id == id) ++st.frames;
  }
}

void WorldClient::ResolveStreams(session::StreamConnector& connector) {
  std::vector<protocol::NodeInfo> nodes;
  {
    std::lock_guard lock(mutex_);
    if (client_.NodesVersion() == nodes_seen_) return;
    nodes_seen_ = client_.NodesVersion();
    nodes = client_.Nodes();
  }
  auto shown = [](const protocol::DataEndpoint& e) {
    return e.kind == protocol::StreamKind::kFused || e.kind == protocol::StreamKind::kRadar ||
           e.kind == protocol::StreamKind::kLidar;
  };
  auto wanted = [&](const protocol::DataEndpoint& e) {
    return shown(e) && def_.sensor_data && (e.kind != protocol::StreamKind::kLidar || def_.subscribe_lidar);
  };
  const auto [added, dropped] = connector.Resolve(nodes, wanted);
  for (const auto& ep : dropped) log_->info("data: disconnected from {}", ep);
  for (const auto& ep : added) log_->info("data: connected to {}", ep);
  // The stream list, keeping frame counts; data of streams no longer listed is dropped.
  std::vector<SensorStreamStatus> streams;
  for (const auto& n : nodes)
    for (const auto& e : n.endpoints)
      if (shown(e)) streams.push_back(SensorStreamStatus{e.stream_id, e.kind, e.Endpoint(), n.name, wanted(e), 0, -1.0});
  std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) { return a.stream_id < b.stream_id; });
  std::lock_guard lock(mutex_);
  for (auto& st : streams)
    for (const auto& old : data_.streams)
      if (old.stream_id == st.stream_id) st.frames = old.frames;
  auto listed = [&](const std::string& id) {
    return std::any_of(streams.begin(), streams.end(), [&](const auto& st) { return st.stream_id == id; });
  };
  std::erase_if(data_.fused, [&](const auto& kv) { return !listed(kv.first); });
  std::erase_if(data_.radar, [&](const auto& kv) { return !listed(kv.first); });
  data_.streams = std::move(streams);
}

}  // namespace platoon::viewer
