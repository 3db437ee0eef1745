// platoon bridge: joins a running session as an observer (no lock-step waits for it) and serves it over
// the Foxglove WebSocket protocol (bridge_core.hpp). Two threads: the session thread turns the session
// client (world states, the node table, parameter answers, the data streams clients subscribed to) and
// encodes the Foxglove messages; the WebSocket thread (websocketpp on standalone asio) owns the protocol
// core and the connections. The session thread only posts to the WebSocket thread, never waits for it:
// a client that does not read loses frames (its send buffer is bounded), and the session never waits.
#include "bridge_cmd.hpp"

#include "bridge_core.hpp"
#include "bridge_ws.hpp"

#include "platoon/clock/oscillator.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/log/foxglove.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/log/ros2.hpp"
#include "platoon/log/ros2_bag.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/discovery.hpp"
#include "platoon/session/operator_token.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/transport/channel.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace platoon::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kMe = "platoon bridge";

std::atomic<bool> g_bridge_stop{false};
void OnBridgeSignal(int) { g_bridge_stop.store(true); }

// Handlers posted to the WebSocket thread and not yet run; past this, broadcasts are dropped (the thread
// is behind), so the session thread never piles up work for it.
constexpr int kMaxPosted = 256;

// The WebSocket side: the protocol core, the connections and their send buffers. Every member is used on
// the WebSocket thread only, except Post and what the session thread reads under a mutex.
class WsSide {
 public:
  WsSide(const BridgeOptions& o, const std::string& session_name, std::shared_ptr<spdlog::logger> log)
      : o_(o),
        log_(std::move(log)),
        core_(fmt::format("platoon bridge: {}", session_name),
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count())),
        limit_bytes_(static_cast<size_t>(o.send_buffer_mb * 1e6)),
        server_(std::string(bridge::kSubprotocol), Handlers()) {}

  /// Binds and listens; throws std::runtime_error with the reason. Returns the bound port.
  uint16_t Listen() { return server_.Listen(o_.address, o_.port); }
  void Run() { server_.Run(); }
  void Stop() { server_.Stop(); }

  /// Runs `f` on the WebSocket thread. Broadcasts (`must` false) are dropped while kMaxPosted are waiting.
  bool Post(std::function<void()> f, bool must = false) {
    if (!must && posted_.load() >= kMaxPosted) {
      ++backlog_dropped_;
      return false;
    }
    ++posted_;
    server_.Post([this, f = std::move(f)] {
      f();
      --posted_;
    });
    return true;
  }

  // --- called on the WebSocket thread (through Post) ---
  void Apply(bridge::Effects fx) {
    for (auto& t : fx.texts) server_.SendText(t.conn, t.text);
    if (!fx.asks.empty()) {
      std::lock_guard lock(asks_mutex_);
      for (auto& a : fx.asks) asks_.push_back(std::move(a));
    }
    for (const auto& s : fx.subscribed) {
      // A new subscriber gets the channel's newest message at once (the scene changes seldom).
      const auto it = latest_.find(s.channel_id);
      if (it != latest_.end())
        SendFrame(s.conn, bridge::MessageDataFrame(s.subscription_id, it->second.first, *it->second.second));
    }
    PublishSubscribedTopics();
  }
  bridge::BridgeCore& Core() { return core_; }
  /// Sends `payload` (a JSON message of `topic`, logged at `log_ns`) to the topic's subscribers.
  void Broadcast(const std::string& topic, uint64_t log_ns, const std::shared_ptr<const std::string>& payload) {
    const auto channel = core_.ChannelOf(topic);
    if (!channel) return;
    latest_[*channel] = {log_ns, payload};
    for (const auto& t : core_.Subscribers(*channel))
      SendFrame(t.conn, bridge::MessageDataFrame(t.subscription_id, log_ns, *payload));
  }
  /// The session's sim time to every client.
  void Time(uint64_t sim_ns) {
    const std::string frame = bridge::TimeFrame(sim_ns);
    for (const auto& id : conns_) SendFrame(id, frame);
  }
  /// The channel set of the node table (`specs`): advertised, and the cached messages of gone ones dropped.
  void Channels(const std::vector<bridge::ChannelSpec>& specs) {
    known_topics_.clear();
    for (const auto& s : specs) known_topics_.push_back(s.topic);
    Apply(core_.SetChannels(specs));
    std::erase_if(latest_, [&](const auto& kv) {
      for (const auto& t : known_topics_)
        if (core_.ChannelOf(t) == kv.first) return false;
      return true;
    });
    PublishSubscribedTopics();
  }

  // --- read by the session thread ---
  std::vector<bridge::ParamAsk> TakeAsks() {
    std::lock_guard lock(asks_mutex_);
    return std::exchange(asks_, {});
  }
  /// Topics with at least one subscriber, and a counter bumped when they change.
  std::pair<std::set<std::string>, uint64_t> SubscribedTopics() const {
    std::lock_guard lock(topics_mutex_);
    return {topics_, topics_version_};
  }
  uint64_t FramesDropped() const { return frames_dropped_.load(); }
  uint64_t BacklogDropped() const { return backlog_dropped_.load(); }

 private:
  bridge::WsHandlers Handlers() {
    bridge::WsHandlers h;
    h.accept = [this](const std::string& resource) -> std::pair<bool, std::string> {
      if (o_.token.empty()) return {true, ""};
      const auto token = bridge::QueryValue(resource, "token");
      if (!token) return {false, "no ?token= in its URL"};
      if (!bridge::TokenMatches(*token, o_.token)) return {false, "wrong token"};
      return {true, ""};
    };
    h.open = [this](uint64_t id, const std::string& remote) {
      conns_.insert(id);
      log_->info("Foxglove client {} connected from {}", id, remote);
      Apply(core_.Open(id));
    };
    h.close = [this](uint64_t id) {
      core_.Close(id);
      conns_.erase(id);
      log_->info("Foxglove client {} left ({} frames dropped for it)", id, dropped_[id]);
      dropped_.erase(id);
      PublishSubscribedTopics();
    };
    h.message = [this](uint64_t id, bool text, const std::string& payload) {
      Apply(text ? core_.OnText(id, payload) : core_.OnBinary(id));
    };
    h.warn = [this](const std::string& line) { log_->warn("{}", line); };
    return h;
  }
  // A binary frame, unless the client's unsent bytes are past the limit: then it is dropped for that client.
  void SendFrame(bridge::ConnId id, const std::string& frame) {
    if (server_.SendBinary(id, frame, limit_bytes_)) return;
    ++frames_dropped_;
    if (dropped_[id]++ == 0)
      log_->warn("Foxglove client {} does not keep up: its frames are dropped while over {:g} MB wait unsent", id,
                 o_.send_buffer_mb);
  }
  void PublishSubscribedTopics() {
    std::set<std::string> topics;
    for (const auto& t : known_topics_)
      if (auto ch = core_.ChannelOf(t); ch && !core_.Subscribers(*ch).empty()) topics.insert(t);
    std::lock_guard lock(topics_mutex_);
    if (topics != topics_) {
      topics_ = std::move(topics);
      ++topics_version_;
    }
  }

  const BridgeOptions& o_;
  std::shared_ptr<spdlog::logger> log_;
  bridge::BridgeCore core_;
  size_t limit_bytes_;
  std::vector<std::string> known_topics_;
  std::set<bridge::ConnId> conns_;
  std::map<bridge::ConnId, uint64_t> dropped_;
  std::map<uint32_t, std::pair<uint64_t, std::shared_ptr<const std::string>>> latest_;
  std::atomic<int> posted_{0};
  std::atomic<uint64_t> frames_dropped_{0}, backlog_dropped_{0};
  std::mutex asks_mutex_;
  std::vector<bridge::ParamAsk> asks_;
  mutable std::mutex topics_mutex_;
  std::set<std::string> topics_;
  uint64_t topics_version_ = 0;
  bridge::WsServer server_;  // last: its handlers use the members above
};

// The channels of a node table: scene, transforms, and one cloud channel per lidar or fused stream.
std::vector<bridge::ChannelSpec> ChannelsOf(const std::vector<protocol::NodeInfo>& nodes) {
  std::vector<bridge::ChannelSpec> out;
  out.push_back({std::string(foxglove::kSceneTopic), std::string(foxglove::kSceneUpdate),
                 std::string(foxglove::SceneUpdateSchema())});
  out.push_back({std::string(foxglove::kTfTopic), std::string(foxglove::kFrameTransforms),
                 std::string(foxglove::FrameTransformsSchema())});
  std::set<std::string> seen;
  for (const auto& n : nodes)
    for (const auto& e : n.endpoints)
      if ((e.kind == protocol::StreamKind::kLidar || e.kind == protocol::StreamKind::kFused) && seen.insert(e.stream_id).second)
        out.push_back({foxglove::CloudTopic(e.stream_id), std::string(foxglove::kPointCloud),
                       std::string(foxglove::PointCloudSchema())});
  return out;
}

// The session side: the session client in its loop, the data streams, and the Foxglove encoding.
class SessionSide {
 public:
  SessionSide(const BridgeOptions& o, const session::ServerEndpoint& server, session::ClientDef def,
              const std::optional<transport::CurveDef>& curve, std::shared_ptr<spdlog::logger> log, WsSide& ws,
              std::vector<NodeNaming> naming)
      : o_(o),
        log_(std::move(log)),
        ws_(ws),
        client_(std::move(def), local_, o.verbose ? log_ : nullptr),
        link_(context_, server.host, server.port, transport::FaultDef{}, curve),
        data_(context_, transport::Pattern::kSub,
              transport::ChannelDef{.share_from_bytes = transport::kZeroCopySendBytes}),
        connector_(data_),
        ros2_(std::move(naming)) {
    client_.on_world_broadcast = [this](std::string_view, const protocol::WorldState& w, int64_t) {
      world_due_ = true;
      world_sim_ns_ = w.sim_time_ns;
      PublishWorldRos2(w);
    };
  }

  /// Joins within `timeout_s`; false (with the reason logged) otherwise.
  bool Join(double timeout_s) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    while (!g_bridge_stop.load() && Clock::now() < deadline) {
      link_.Turn(client_, mutex_, {}, 10'000'000);
      if (client_.Refused()) {
        log_->error("the server refused to let the bridge join: {}", *client_.Refused());
        return false;
      }
      if (client_.Joined()) return true;
    }
    if (!g_bridge_stop.load()) log_->error("no answer from the server at {} within {:g} s", link_.ControlEndpoint(), timeout_s);
    return false;
  }
  const std::string& SessionName() const { return client_.SessionName(); }

  /// Turns until stopped.
  void Run() {
    transport::Channel* const extra[] = {&data_};
    auto last_report = Clock::now();
    while (!g_bridge_stop.load()) {
      link_.Turn(client_, mutex_, extra, 10'000'000, [&] { DrainData(); });
      Forward();
      if (world_due_) {
        world_due_ = false;
        PublishWorld();
      }
      FollowNodes();
      if (Clock::now() - last_report > std::chrono::seconds(30)) {
        last_report = Clock::now();
        log_->info("world states {}, clouds {}, ROS 2 messages {}, frames dropped for slow clients {}, broadcasts "
                   "dropped (bridge behind) {}",
                   client_.Stats().world_received, clouds_, ros2_messages_, ws_.FramesDropped(), ws_.BacklogDropped());
      }
    }
    {
      std::lock_guard lock(mutex_);
      client_.Leave("platoon bridge stopped");
    }
    link_.Flush(client_, mutex_);
  }

 private:
  // Parameter requests of the clients to the server, and the server's answers and parameter events back.
  void Forward() {
    for (auto& a : ws_.TakeAsks())
      std::visit([&](auto& r) { client_.RequestParams(r); }, a.request);
    for (auto& r : client_.TakeReplies()) {
      if (auto* l = std::get_if<protocol::ParamList>(&r))
        ws_.Post([this, l = std::move(*l)] { ws_.Apply(ws_.Core().OnParamList(l)); }, true);
      else if (auto* p = std::get_if<protocol::ParamReply>(&r))
        ws_.Post([this, p = std::move(*p)] { ws_.Apply(ws_.Core().OnParamReply(p)); }, true);
    }
    for (auto& e : client_.TakeEvents()) {
      if (e.kind != protocol::LoggedEvent::Kind::kParam) continue;
      const size_t eq = e.text.find(" = ");
      if (eq == std::string::npos) continue;
      ws_.Post([this, path = e.text.substr(0, eq), value = e.text.substr(eq + 3)] {
        ws_.Apply(ws_.Core().OnParamChanged(path, value));
      }, true);
    }
  }

  // The node table changed: the channel set, and the data streams with subscribers.
  void FollowNodes() {
    const auto [topics, version] = ws_.SubscribedTopics();
    if (client_.NodesVersion() == nodes_seen_ && version == topics_seen_ && discovered_ == discovered_seen_) return;
    if (client_.NodesVersion() != nodes_seen_) {
      nodes_seen_ = client_.NodesVersion();
      base_specs_ = ChannelsOf(client_.Nodes());
      for (const auto& n : client_.Nodes()) ros2_.AddNode(n.name);
      PostChannels();
    }
    topics_seen_ = version;
    discovered_seen_ = discovered_;
    subscribed_ = topics;
    // A stream is read while a client wants its Foxglove cloud or one of its ROS 2 topics, and until its
    // first message has told which ROS 2 topics it has (they are named after its vehicle).
    const auto [added, dropped] = connector_.Resolve(client_.Nodes(), [&](const protocol::DataEndpoint& e) {
      if (subscribed_.count(foxglove::CloudTopic(e.stream_id))) return true;
      const auto known = stream_topics_.find(e.stream_id);
      if (known == stream_topics_.end()) return true;
      for (const auto& t : known->second)
        if (subscribed_.count(t)) return true;
      return false;
    });
    for (const auto& ep : added) log_->info("data: connected to {}", ep);
    for (const auto& ep : dropped) log_->info("data: disconnected from {}", ep);
  }

  // Transforms and time with every world state; the scene when an entity comes, goes or changes its
  // look, and once per second of sim time (as the recorder writes them).
  void PublishWorld() {
    const int64_t sim = world_sim_ns_;
    std::map<uint32_t, const protocol::NodeInfo*> nodes;
    for (const auto& n : client_.Nodes()) nodes[n.node_id] = &n;
    std::vector<foxglove::SceneEntity> scene;
    for (const auto& [e, pose] : client_.World().WithDisplayedPose(sim)) {
      foxglove::SceneEntity s;
      s.id = e.id;
      s.kind = e.kind;
      s.box_size_m = e.box_size_m;
      s.owner_node = e.owner_node;
      s.stale = e.stale;
      if (auto n = nodes.find(e.owner_node); n != nodes.end()) {
        s.owner_name = n->second->name;
        s.owner_role = n->second->role;
      }
      s.pose = pose;
      scene.push_back(std::move(s));
    }
    const auto log_ns = static_cast<uint64_t>(std::max<int64_t>(sim, 0));
    ws_.Post([this, log_ns] { ws_.Time(log_ns); });
    auto tf = std::make_shared<const std::string>(foxglove::FrameTransformsJson(scene, sim));
    ws_.Post([this, log_ns, tf] { ws_.Broadcast(std::string(foxglove::kTfTopic), log_ns, tf); });
    const bool same = scene.size() == scene_look_.size() &&
                      std::equal(scene.begin(), scene.end(), scene_look_.begin(),
                                 [](const auto& a, const auto& b) { return a.SameLook(b); });
    if (same && sim / 1'000'000'000 == scene_second_) return;
    scene_second_ = sim / 1'000'000'000;
    auto json = std::make_shared<const std::string>(foxglove::SceneUpdateJson(scene, sim));
    ws_.Post([this, log_ns, json] { ws_.Broadcast(std::string(foxglove::kSceneTopic), log_ns, json); });
    scene_look_ = std::move(scene);
  }

  // The channel set: the node table's Foxglove channels, then the ROS 2 topics met so far.
  void PostChannels() {
    auto specs = base_specs_;
    for (const auto& [topic, spec] : ros2_specs_) specs.push_back(spec);
    ws_.Post([this, specs = std::move(specs)] { ws_.Channels(specs); }, true);
  }

  // Sends the converter's output: a topic met for the first time is advertised first (rosbag2's schema and
  // encoding: ros2msg, cdr); a message goes out when its topic has subscribers, /tf_static always (the
  // bridge keeps its newest for clients subscribing later, as its transient-local QoS promises).
  void SendRos2(const std::string& stream_id) {
    bool fresh = false;
    for (const auto& m : ros2_out_) {
      if (!ros2_specs_.count(m.topic)) {
        ros2_specs_[m.topic] = bridge::ChannelSpec{m.topic, m.type, ros2::FullDefinition(m.type),
                                                   std::string(ros2::kMessageEncoding), std::string(ros2::kSchemaEncoding)};
        fresh = true;
      }
      if (!stream_id.empty() && !m.latched && stream_topics_[stream_id].insert(m.topic).second) ++discovered_;
    }
    if (fresh) PostChannels();
    for (auto& m : ros2_out_) {
      if (!m.latched && !subscribed_.count(m.topic)) continue;
      ++ros2_messages_;
      auto payload = std::make_shared<const std::string>(m.cdr.begin(), m.cdr.end());
      const auto log_ns = static_cast<uint64_t>(m.log_ns);
      ws_.Post([this, topic = std::move(m.topic), log_ns, payload] { ws_.Broadcast(topic, log_ns, payload); }, m.latched);
    }
    ros2_out_.clear();
  }

  // /clock, /tf and each vehicle's odometry as ROS 2 messages (ros2::Converter, the recorder's mapping):
  // converted while a client subscribes to one of them, and once per sim second to find new vehicles.
  void PublishWorldRos2(const protocol::WorldState& w) {
    bool wanted = false;
    for (const auto& t : world_ros2_topics_)
      if (subscribed_.count(t)) {
        wanted = true;
        break;
      }
    const int64_t second = w.sim_time_ns / 1'000'000'000;
    if (!wanted && second == world_ros2_second_) return;
    world_ros2_second_ = second;
    ros2_out_.clear();
    ros2_.OnWorld(w, ros2_out_);
    for (const auto& m : ros2_out_)
      if (!m.latched) world_ros2_topics_.insert(m.topic);
    SendRos2("");
  }

  // Each message of a subscribed (or not yet seen) stream: clouds as foxglove.PointCloud (the recorder's
  // encoding), and every stream as its ROS 2 messages.
  void DrainData() {
    for (int budget = 0; budget < 64; ++budget) {
      auto p = data_.TryReceive();
      if (!p) break;
      auto d = protocol::Decode(p->Payload());
      if (d.error != protocol::DecodeError::kNone || !d.message) continue;
      const std::string id = ros2::DataStreamId(*d.message);
      if (id.empty()) continue;
      std::optional<foxglove::CloudView> view;
      if (const auto* c = std::get_if<protocol::PointCloud>(&*d.message)) {
        view = foxglove::CloudView{foxglove::VehicleFrame(c->header.entity_id), Pose{}, c->header.stamp_ns, c->points,
                                   c->point_count, c->point_stride};
        // A raw scan is in the sensor frame: its origin is the mount in the vehicle frame.
        if (!c->vehicle_frame) view->pose = Pose{c->header.mount_position_m, c->header.mount_orientation};
      } else if (const auto* f = std::get_if<protocol::FusedCloud>(&*d.message)) {
        view = foxglove::CloudView{foxglove::VehicleFrame(f->entity_id), Pose{}, f->reference_ns, f->points,
                                   f->point_count, f->point_stride};
      }
      // --cloud-hz: at most one cloud per stream in each slot of sim time (either encoding).
      if (view && o_.cloud_hz > 0) {
        const auto period = static_cast<int64_t>(1e9 / o_.cloud_hz);
        const int64_t slot = std::max<int64_t>(view->stamp_ns, 0) / period;
        auto [it, fresh] = cloud_slot_.try_emplace(id, slot);
        if (!fresh && it->second == slot && stream_topics_.count(id)) continue;
        it->second = slot;
      }
      std::string topic = foxglove::CloudTopic(id);
      if (view && subscribed_.count(topic)) {
        ++clouds_;
        auto json = std::make_shared<const std::string>(foxglove::PointCloudJson(*view));
        const auto log_ns = static_cast<uint64_t>(std::max<int64_t>(view->stamp_ns, 0));
        ws_.Post([this, topic = std::move(topic), log_ns, json] { ws_.Broadcast(topic, log_ns, json); });
      }
      bool wanted = !stream_topics_.count(id);
      if (!wanted)
        for (const auto& t : stream_topics_.at(id))
          if (subscribed_.count(t)) {
            wanted = true;
            break;
          }
      if (!wanted) continue;
      ros2_out_.clear();
      ros2_.OnData(*d.message, ros2_out_);
      SendRos2(id);
    }
  }

  const BridgeOptions& o_;
  std::shared_ptr<spdlog::logger> log_;
  WsSide& ws_;
  clock::MonotonicOscillator local_;
  zmq::context_t context_{1};
  std::mutex mutex_;
  session::SessionClient client_;
  session::ClientLink link_;
  transport::Channel data_;
  session::StreamConnector connector_;
  bool world_due_ = false;
  int64_t world_sim_ns_ = 0;
  uint64_t nodes_seen_ = ~0ull, topics_seen_ = ~0ull;
  std::set<std::string> subscribed_;
  std::vector<foxglove::SceneEntity> scene_look_;
  int64_t scene_second_ = -1;
  std::map<std::string, int64_t> cloud_slot_;
  uint64_t clouds_ = 0;
  ros2::Converter ros2_;
  std::vector<ros2::BagMessage> ros2_out_;
  std::vector<bridge::ChannelSpec> base_specs_;                  // the node table's Foxglove channels
  std::map<std::string, bridge::ChannelSpec> ros2_specs_;        // ROS 2 topic -> its channel, as met
  std::map<std::string, std::set<std::string>> stream_topics_;   // stream id -> its ROS 2 topics
  std::set<std::string> world_ros2_topics_;                      // /clock, /tf, /<vehicle>/odom
  int64_t world_ros2_second_ = INT64_MIN;
  uint64_t discovered_ = 0, discovered_seen_ = ~0ull;
  uint64_t ros2_messages_ = 0;
};

}  // namespace

CLI::App* AddBridgeCommand(CLI::App& app, BridgeOptions& o) {
  auto* b = app.add_subcommand("bridge",
                               "Serve a running session live to Foxglove (WebSocket, foxglove.websocket.v1): scene, "
                               "transforms, point clouds, every sensor stream as ROS 2 messages, sim time, parameters");
  b->footer(
      "Examples:\n"
      "  platoon bridge configs/lidar_farm.toml             ws://127.0.0.1:8765: open it in Foxglove\n"
      "  platoon bridge lab.toml --port 9000                 another port\n"
      "  platoon bridge lab.toml --address 0.0.0.0 --token s3cret\n"
      "                                                      beyond loopback: clients connect to ws://HOST:8765/?token=s3cret\n"
      "  platoon bridge configs/lidar_farm.toml --cloud-hz 2 at most two clouds per stream and sim second\n"
      "Channels: /foxglove/scene (foxglove.SceneUpdate), /foxglove/tf (foxglove.FrameTransforms) and\n"
      "/foxglove/cloud/<stream> (foxglove.PointCloud) for each lidar and fused stream, JSON-encoded as the\n"
      "recorder writes them; and every stream as the ROS 2 messages of a ros2 = true recording (ros2msg schemas,\n"
      "CDR): /clock, /tf, /tf_static, /<vehicle>/odom, /<vehicle>/<sensor>/points|imu|fix|scan|tracks|objects|\n"
      "camera_info|image_raw, advertised as each stream's first message names them. Parameters are platoon's (platoon ctl param list): a set goes through the server's\n"
      "checks and is logged with the source of the bridge's name. A client that does not read loses frames past\n"
      "--send-buffer-mb; the session never waits for it. docs/FOXGLOVE.md.\n"
      "Exit codes: 0 stopped by Ctrl-C; 1 the session could not be joined or the port not bound; 2 usage error.");
  b->add_option("session", o.session_path, "Session file (TOML): the server's address and the session's keys")
      ->required()
      ->check(CLI::ExistingFile);
  b->add_option("--server", o.server, "HOST:PORT of the server's control socket (default: the session file's)");
  b->add_option("--address", o.address,
                "Address the WebSocket server binds; beyond loopback only with --token")
      ->capture_default_str();
  b->add_option("--port", o.port, "TCP port of the WebSocket server (0: any free port, printed)")->capture_default_str();
  b->add_option("--token", o.token,
                "Clients must present this token as ?token=... in their URL (required beyond loopback)");
  b->add_option("--name", o.name, "The bridge's node name in the session (the source of its parameter events)")
      ->capture_default_str();
  b->add_option("--key", o.key_file, "CURVE: this client's secret key file (default: the session file's [security] key)")
      ->check(CLI::ExistingFile);
  b->add_option("--send-buffer-mb", o.send_buffer_mb,
                "Per client: while more than this is unsent, its frames are dropped, in MB")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.01, 1024.0))
      ->capture_default_str();
  b->add_option("--cloud-hz", o.cloud_hz, "At most this many clouds per stream and second of sim time; 0: every cloud")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  b->add_flag("-v,--verbose", o.verbose, "Log the session client's join and clock lines");
  return b;
}

int RunBridge(const BridgeOptions& o) {
  // Where the server is and how to reach it: the session file, or --server.
  config::SessionDef def;
  session::ServerEndpoint server;
  std::optional<transport::CurveDef> curve;
  try {
    def = config::LoadSession(o.session_path);
    server = session::ServerEndpoint{def.server_host, def.server.control_port};
    if (!o.server.empty()) server = session::ParseServerEndpoint(o.server);
    curve = config::LoadClientCurve(def, o.key_file);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  } catch (const session::DiscoveryError& e) {
    std::fprintf(stderr, "%s: --server %s: %s\n", kMe, o.server.c_str(), e.what());
    return config::cli::kExitUsage;
  } catch (const transport::KeyError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  }
  // Beyond loopback every client on the network could steer the session's parameters: only with a token.
  if (!config::IsLoopbackAddress(o.address) && o.token.empty()) {
    std::fprintf(stderr,
                 "%s: --address %s is beyond loopback: expected --token TOKEN (clients then connect to "
                 "ws://HOST:%u/?token=TOKEN), got none. docs/FOXGLOVE.md, \"Beyond loopback\"\n",
                 kMe, o.address.c_str(), o.port);
    return config::cli::kExitUsage;
  }
  auto log = log::MakeLogger("bridge", "info");

  session::ClientDef cdef = session::DefaultClientDef(o.name, protocol::Role::kObserver);
  cdef.lockstep_member = false;  // a monitor: no lock-step step waits for it
  cdef.retry_refused = false;
  cdef.keep_replies = true;      // parameter answers for the clients
  cdef.world_hold_s = 0;
  if (!curve) {
    cdef.operator_token = session::FindOperatorToken(server.port).token;
    cdef.find_operator_token = session::OperatorTokenFinder(server.port);
  }

  std::signal(SIGINT, OnBridgeSignal);
  std::signal(SIGTERM, OnBridgeSignal);
  std::signal(SIGPIPE, SIG_IGN);

  // The serverInfo name is the session file's [session] name (the one the server announces).
  std::unique_ptr<WsSide> ws;
  try {
    ws = std::make_unique<WsSide>(o, def.name, log);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return 1;
  }
  auto session = std::make_unique<SessionSide>(o, server, std::move(cdef), curve, log, *ws, config::SessionNaming(def));
  if (!session->Join(10.0)) {
    std::fprintf(stderr, "%s: could not join the session at %s (is it running?)\n", kMe, server.Text().c_str());
    return 1;
  }
  uint16_t port = 0;
  try {
    port = ws->Listen();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: cannot listen on %s:%u: %s\n", kMe, o.address.c_str(), o.port, e.what());
    return 1;
  }
  std::thread ws_thread([&] {
    try {
      ws->Run();
    } catch (const std::exception& e) {
      log->error("WebSocket server stopped: {}", e.what());
      g_bridge_stop.store(true);
    }
  });
  std::printf("platoon bridge: session '%s' at %s served on ws://%s:%u%s\n", session->SessionName().c_str(),
              server.Text().c_str(), o.address.c_str(), port, o.token.empty() ? "" : "/?token=...");
  std::fflush(stdout);
  session->Run();
  ws->Stop();
  ws_thread.join();
  std::printf("platoon bridge: stopped; %llu frames dropped for slow clients\n",
              static_cast<unsigned long long>(ws->FramesDropped()));
  return 0;
}

}  // namespace platoon::launcher
