#include "platoon/node/recorder.hpp"

#include "platoon/dead_reckoning.hpp"
#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/log/foxglove.hpp"
#include "platoon/log/ros2.hpp"
#include "platoon/protocol/codec.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace platoon::node {
namespace {

/// The most message bytes waiting for the writer thread before new ones are dropped. A writer that
/// stalls for a second under the four-lidar farm (~40 MB/s of clouds) still loses nothing.
constexpr size_t kQueueBytes = 128u << 20;
/// How often a recorder with streams = ["*"] looks for new streams in the node table, in ns.
constexpr int64_t kResolveEveryNs = 1'000'000'000;
/// At most this many data messages move to the queue per step (the rest wait for the next step).
constexpr int kDataPerStep = 2000;

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// CPU time of the calling thread, in ns: what one kind of channel costs the writer thread.
int64_t ThreadCpuNs() {
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec;
}

double Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  return static_cast<double>(v[i]);
}

std::string SessionSchema() {
  return R"json({"title":"platoon.Session","description":"The recorded session, docs/RECORDING.md","type":"object",)json"
         R"json("properties":{"name":{"type":"string"},"config":{"type":"string","description":"the session file's text, TOML"},)json"
         R"json("config_path":{"type":"string"},"recorder":{"type":"string"}}})json";
}

// Creates the parent folder and the file. Without overwrite the name is claimed with O_EXCL, so two
// recorders never share a file and an existing recording is never truncated.
std::unique_ptr<session_log::Writer> OpenLog(const std::string& path, const config::RecorderDef& def) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw std::runtime_error("cannot create the folder " + parent.string() + " for " + path + ": " + ec.message());
  }
  if (!def.overwrite) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
      throw config::ConfigError(def.where + ": " + path + " exists; the recorder does not overwrite a recording: set "
                                "overwrite = true to replace it, or put {time} in the path");
    if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    ::close(fd);
  }
  std::string error;
  // Chunk compression as configured ([recorder] compression; "none" is MCAP's empty string).
  mcap::WriterDef layout = mcap::DefaultWriterDef();
  layout.compression = def.compression == "none" ? "" : def.compression;
  auto writer = session_log::Writer::Open(path, &error, layout);
  if (!writer) throw std::runtime_error("cannot open " + path + " for writing: " + error);
  return writer;
}

// The session file as text, for /platoon/session ("" when it cannot be read).
std::string ReadText(const std::string& file) {
  if (file.empty()) return {};
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Stream id and sim-time stamp of a data message; false for a message that is no data stream.
bool StreamOf(const protocol::Message& m, std::string& id, int64_t& stamp_ns) {
  if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) {
    id = f->sensor_id;
    stamp_ns = f->reference_ns;
    return true;
  }
  return std::visit(
      [&](const auto& msg) {
        if constexpr (requires { msg.header.sensor_id; }) {
          id = msg.header.sensor_id;
          stamp_ns = msg.header.stamp_ns;
          return true;
        } else {
          return false;
        }
      },
      m);
}

}  // namespace

// ---- RecordQueue --------------------------------------------------------------------------------

bool RecordQueue::Push(RecordItem item) {
  const size_t size = item.bytes.size();
  {
    std::lock_guard lock(mutex_);
    if (!closed_ && bytes_ + size <= max_bytes_) {
      bytes_ += size;
      peak_bytes_ = std::max(peak_bytes_, bytes_);
      items_.push_back(std::move(item));
      ready_.notify_one();
      return true;
    }
  }
  dropped_.fetch_add(1);
  dropped_bytes_.fetch_add(size);
  return false;
}

bool RecordQueue::PopAll(std::vector<RecordItem>& out, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  ready_.wait_until(lock, deadline, [&] { return !items_.empty() || closed_; });
  if (items_.empty()) return !closed_;
  for (auto& item : items_) out.push_back(std::move(item));
  items_.clear();
  bytes_ = 0;
  return true;
}

void RecordQueue::Close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  ready_.notify_all();
}

size_t RecordQueue::PeakBytes() const {
  std::lock_guard lock(mutex_);
  return peak_bytes_;
}

// ---- RecordingWriter ----------------------------------------------------------------------------

RecordingWriter::RecordingWriter(const config::RecorderDef& def, std::unique_ptr<session_log::Writer> writer,
                                 std::string path, std::shared_ptr<spdlog::logger> log, std::vector<NodeNaming> naming)
    : def_(def), writer_(std::move(writer)), path_(std::move(path)), log_(std::move(log)) {
  if (def_.ros2) ros2_ = std::make_unique<ros2::Converter>(std::move(naming));
}

void RecordingWriter::Check(const mcap::Status& status) {
  if (status.Ok() || !error_.empty()) return;
  // One error line for the whole recording: the writer has stopped, and so does the recording.
  error_ = status.error;
  if (log_)
    log_->error("recording stopped: {}; this node stays in the session and records nothing more", error_);
}

void RecordingWriter::Begin(const session_log::SessionInfo& info) {
  Check(writer_->WriteJson(session_log::kSessionTopic, "platoon.Session", SessionSchema(), session_log::SessionInfoJson(info),
                           0, 0));
}

bool RecordingWriter::Wants(std::string_view stream_id) const {
  for (const auto& s : def_.streams)
    if (s == "*" || s == stream_id) return true;
  return false;
}

void RecordingWriter::Write(const RecordItem& item) {
  if (Failed()) {
    ++stats_.not_written;
    return;
  }
  const auto decoded = protocol::Decode(item.bytes);
  if (decoded.error != protocol::DecodeError::kNone || !decoded.message) {
    ++stats_.undecodable;
    return;
  }
  const uint64_t before = writer_->Stats().message_count;
  if (item.kind == RecordItem::Kind::kWorld) {
    const auto* w = std::get_if<protocol::WorldState>(&*decoded.message);
    if (!w) {
      ++stats_.undecodable;
      return;
    }
    WriteWorld(item, *w);
  } else {
    WriteData(item, *decoded.message);
  }
  // The flush latency counts from the oldest message waiting in the open chunk.
  if (writer_->Stats().message_count != before && oldest_unflushed_ns_ < 0) oldest_unflushed_ns_ = item.received_ns;
}

void RecordingWriter::WriteWorld(const RecordItem& item, const protocol::WorldState& w) {
  // Sequence numbers go up by one per broadcast: a jump is world states this recorder never got.
  if (seq_known_ && w.sequence > last_seq_ + 1) {
    ++stats_.world_seq_gaps;
    stats_.world_seq_missing += w.sequence - last_seq_ - 1;
  } else if (seq_known_ && w.sequence < last_seq_) {
    ++stats_.world_seq_resets;
  }
  seq_known_ = true;
  last_seq_ = w.sequence;
  Check(writer_->WriteEnvelope(session_log::kWorldTopic, Bytes(item.bytes), w.sim_time_ns, w.server_time_ns));
  if (Failed()) return;
  ++stats_.world_recorded;
  for (const auto& e : events_.OnWorld(w))
    Check(writer_->WriteJson(session_log::kEventsTopic, session_log::kEventSchemaName, session_log::EventSchema(), e.Json(),
                             w.sim_time_ns, w.server_time_ns));
  // The merged world as the stream describes it: keyframes drop what they cover (all, or a rolling
  // keyframe's slice) but do not list (by state, or a slice by id), deltas change and remove.
  if (protocol::HasKeyframe(w)) {
    const auto listed = protocol::KeyframeListed(w);
    std::erase_if(entities_, [&](const auto& kv) {
      return protocol::KeyframeCovers(w, kv.first) && !protocol::Listed(listed, kv.first);
    });
  }
  for (const auto& e : w.entities) entities_[e.id] = e;
  for (uint64_t id : w.removed_entities) entities_.erase(id);
  if (w.keyframe || !w.nodes.empty()) {
    nodes_.clear();
    for (const auto& n : w.nodes) nodes_[n.node_id] = n;
  }
  if (def_.foxglove && !Failed()) {
    const int64_t cpu0 = ThreadCpuNs();
    WriteFoxgloveScene(w);
    stats_.foxglove_cpu_ns += ThreadCpuNs() - cpu0;
  }
  if (ros2_ && !Failed()) WriteRos2(nullptr, &w);
}

void RecordingWriter::WriteRos2(const protocol::Message* data, const protocol::WorldState* world) {
  // The same conversion as `platoon export --ros2`; each channel made with rosbag2's schema, encoding and
  // QoS metadata on its first message.
  static const std::map<std::string, std::string> kVolatileQos{{"offered_qos_profiles", ros2::OfferedQosProfiles(false)}};
  static const std::map<std::string, std::string> kLatchedQos{{"offered_qos_profiles", ros2::OfferedQosProfiles(true)}};
  const int64_t cpu0 = ThreadCpuNs();
  ros2_out_.clear();
  if (world) ros2_->OnWorld(*world, ros2_out_);
  else ros2_->OnData(*data, ros2_out_);
  for (const auto& m : ros2_out_) {
    auto def = ros2_definitions_.find(m.type);
    if (def == ros2_definitions_.end()) def = ros2_definitions_.emplace(m.type, ros2::FullDefinition(m.type)).first;
    Check(writer_->WriteEncoded(m.topic, m.type, ros2::kSchemaEncoding, def->second, ros2::kMessageEncoding,
                                m.latched ? kLatchedQos : kVolatileQos, m.cdr, m.log_ns, 0));
    if (Failed()) break;
    ros2_tally_.Add(m);
    ++stats_.ros2_messages;
    stats_.ros2_bytes += m.cdr.size();
  }
  stats_.ros2_cpu_ns += ThreadCpuNs() - cpu0;
}

void RecordingWriter::WriteFoxgloveScene(const protocol::WorldState& w) {
  // Transforms once per 1/foxglove_hz of sim time: at the first world state of each slot.
  const auto period = static_cast<int64_t>(1e9 / def_.foxglove_hz);
  const int64_t sim = std::max<int64_t>(w.sim_time_ns, 0);
  if (sim / period == scene_slot_) return;
  scene_slot_ = sim / period;
  std::vector<foxglove::SceneEntity> scene;
  scene.reserve(entities_.size());
  for (const auto& [id, e] : entities_) {
    foxglove::SceneEntity s;
    s.id = id;
    s.kind = e.kind;
    s.box_size_m = e.box_size_m;
    s.owner_node = e.owner_node;
    s.stale = e.stale;
    if (auto n = nodes_.find(e.owner_node); n != nodes_.end()) {
      s.owner_name = n->second.name;
      s.owner_role = n->second.role;
    }
    // Owners send a state only when dead reckoning drifts: shown where every receiver shows it now.
    s.pose = dr::Extrapolate(dr::ModelForKind(e.kind), e.kinematics, w.sim_time_ns);
    scene.push_back(std::move(s));
  }
  const std::string tf = foxglove::FrameTransformsJson(scene, w.sim_time_ns);
  ++stats_.foxglove_messages;
  stats_.foxglove_bytes += tf.size();
  Check(writer_->WriteJson(foxglove::kTfTopic, foxglove::kFrameTransforms, foxglove::FrameTransformsSchema(), tf,
                           w.sim_time_ns, w.server_time_ns));
  // The boxes ride on the transforms (frame-locked), so the scene goes out only when an entity comes,
  // goes or changes its look, and in every new second of sim time (a player that seeks finds one near).
  const bool same = scene.size() == scene_look_.size() &&
                    std::equal(scene.begin(), scene.end(), scene_look_.begin(),
                               [](const auto& a, const auto& b) { return a.SameLook(b); });
  if (same && sim / 1'000'000'000 == scene_second_) return;
  scene_second_ = sim / 1'000'000'000;
  const std::string update = foxglove::SceneUpdateJson(scene, w.sim_time_ns);
  ++stats_.foxglove_messages;
  stats_.foxglove_bytes += update.size();
  Check(writer_->WriteJson(foxglove::kSceneTopic, foxglove::kSceneUpdate, foxglove::SceneUpdateSchema(), update,
                           w.sim_time_ns, w.server_time_ns));
  scene_look_ = std::move(scene);
}

void RecordingWriter::WriteData(const RecordItem& item, const protocol::Message& m) {
  std::string id;
  int64_t stamp_ns = 0;
  if (!StreamOf(m, id, stamp_ns)) {
    ++stats_.undecodable;
    return;
  }
  // A publisher socket carries every stream of its host: only the chosen ones are written.
  if (!Wants(id)) {
    ++stats_.data_ignored;
    return;
  }
  Check(writer_->WriteEnvelope(session_log::DataTopic(id), Bytes(item.bytes), stamp_ns, 0));
  if (Failed()) return;
  ++stats_.data_recorded;
  if (ros2_) WriteRos2(&m, nullptr);
  if (!def_.foxglove || Failed()) return;
  const int64_t cpu0 = ThreadCpuNs();
  WriteFoxgloveCloud(id, stamp_ns, m);
  stats_.foxglove_cpu_ns += ThreadCpuNs() - cpu0;
}

void RecordingWriter::WriteFoxgloveCloud(const std::string& id, int64_t stamp_ns, const protocol::Message& m) {
  // Clouds for Foxglove, thinned to foxglove_cloud_hz of sim time per stream.
  foxglove::CloudView view;
  if (const auto* c = std::get_if<protocol::PointCloud>(&m)) {
    view = foxglove::CloudView{foxglove::VehicleFrame(c->header.entity_id), Pose{}, c->header.stamp_ns, c->points,
                               c->point_count, c->point_stride};
    // A raw scan is in the sensor frame: its origin is the mount in the vehicle frame.
    if (!c->vehicle_frame) view.pose = Pose{c->header.mount_position_m, c->header.mount_orientation};
  } else if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) {
    view = foxglove::CloudView{foxglove::VehicleFrame(f->entity_id), Pose{}, f->reference_ns, f->points, f->point_count,
                               f->point_stride};
  } else {
    return;
  }
  const auto period = static_cast<int64_t>(1e9 / def_.foxglove_cloud_hz);
  const int64_t slot = std::max<int64_t>(stamp_ns, 0) / period;
  auto [it, fresh] = cloud_slot_.try_emplace(id, slot);
  if (!fresh && it->second == slot) return;
  it->second = slot;
  const std::string cloud = foxglove::PointCloudJson(view);
  ++stats_.foxglove_messages;
  stats_.foxglove_bytes += cloud.size();
  Check(writer_->WriteJson(foxglove::CloudTopic(id), foxglove::kPointCloud, foxglove::PointCloudSchema(), cloud, stamp_ns, 0));
}

int64_t RecordingWriter::NextFlushNs(int64_t now_ns) const { return next_flush_ns_ < 0 ? now_ns + flush_interval_ns : next_flush_ns_; }

bool RecordingWriter::FlushDue(int64_t now_ns) {
  // A periodic timer on wall time, whether or not messages arrive: the open chunk never waits longer.
  if (next_flush_ns_ < 0) next_flush_ns_ = now_ns + flush_interval_ns;
  if (now_ns < next_flush_ns_) return false;
  next_flush_ns_ += flush_interval_ns;
  if (next_flush_ns_ <= now_ns) next_flush_ns_ = now_ns + flush_interval_ns;
  if (oldest_unflushed_ns_ < 0 || Failed()) return false;
  Check(writer_->Flush());
  if (!Failed()) {
    ++stats_.flushes;
    stats_.flush_latency_ns.push_back(now_ns - oldest_unflushed_ns_);
  }
  oldest_unflushed_ns_ = -1;
  return !Failed();
}

void RecordingWriter::Finish() {
  if (Failed()) return;
  Check(writer_->Close());
}

// ---- RecorderModule -----------------------------------------------------------------------------

RecorderModule::Opened RecorderModule::Open(const config::SessionDef& session, const config::NodeDef& node) {
  Opened o;
  o.path = config::RecordingPath(node.recorder, session.name, node.name, static_cast<int64_t>(std::time(nullptr)));
  o.writer = OpenLog(o.path, node.recorder);
  return o;
}

RecorderModule::RecorderModule(const config::SessionDef& session, const config::NodeDef& node,
                               std::shared_ptr<spdlog::logger> log, Opened opened)
    : def_(node.recorder), path_(std::move(opened.path)), log_(std::move(log)), queue_(kQueueBytes) {
  auto writer = std::move(opened.writer);
  std::error_code ec;
  const auto config_path = session.file.empty() ? std::string() : std::filesystem::absolute(session.file, ec).string();
  info_ = session_log::SessionInfo{session.name, ReadText(session.file), config_path, node.name};
  core_ = std::make_unique<RecordingWriter>(def_, std::move(writer), path_, log_, config::SessionNaming(session));
  core_->Begin(info_);
  failed_.store(core_->Failed());
}

RecorderModule::RecorderModule(const config::SessionDef& session, const config::NodeDef& node,
                               std::shared_ptr<spdlog::logger> log)
    : RecorderModule(session, node, std::move(log), Open(session, node)) {}

RecorderModule::RecorderModule(const config::SessionDef& session, const config::NodeDef& node,
                               std::shared_ptr<spdlog::logger> log, mcap::Sink& sink)
    : RecorderModule(session, node, std::move(log), Opened{std::make_unique<session_log::Writer>(sink), sink.Name()}) {
  to_file_ = false;
}

RecorderModule::~RecorderModule() { Stop(); }

int64_t RecorderModule::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RecorderModule::Attach(ModuleContext& context) {
  started_ns_ = NowNs();
  writer_thread_ = std::thread([this] { Run(); });
  context.TapWorld([this](std::string_view bytes, const protocol::WorldState&, int64_t) { OnWorldBroadcast(bytes); });
  std::string streams;
  for (const auto& s : def_.streams) streams += (streams.empty() ? "" : ", ") + s;
  if (log_)
    log_->info("recording to {} (world, events{}{}{})", path_, streams.empty() ? "" : ", streams " + streams,
               def_.foxglove ? fmt::format(", Foxglove at {:g} Hz", def_.foxglove_hz) : "", def_.ros2 ? ", ROS 2" : "");
}

void RecorderModule::OnWorldBroadcast(std::string_view bytes) {
  // Network thread: copy and return. After a write error nothing more is kept.
  if (failed_.load(std::memory_order_relaxed)) return;
  queue_.Push(RecordItem{RecordItem::Kind::kWorld, std::string(bytes), NowNs()});
}

void RecorderModule::Step(const StepInfo&, ModuleContext& context) {
  if (failed_.load(std::memory_order_relaxed)) {
    // Recording stopped: let go of the streams, keep taking part in the session.
    if (!subscribed_.empty()) context.SubscribeData({});
    subscribed_.clear();
    return;
  }
  if (def_.streams.empty()) return;
  // Which streams: the configured ids, or with "*" every stream the node table lists now.
  const int64_t now = NowNs();
  if (now >= next_resolve_ns_) {
    next_resolve_ns_ = now + kResolveEveryNs;
    std::vector<std::string> ids = def_.streams;
    if (def_.streams.front() == "*") {
      ids.clear();
      for (const auto& n : context.Nodes())
        for (const auto& e : n.endpoints) ids.push_back(e.stream_id);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    if (ids != subscribed_) {
      context.SubscribeData(ids);
      subscribed_ = std::move(ids);
    }
  }
  for (int i = 0; i < kDataPerStep; ++i) {
    auto bytes = context.ReceiveData(0);
    if (!bytes) break;
    queue_.Push(RecordItem{RecordItem::Kind::kData, std::string(bytes->view), NowNs()});
  }
}

void RecorderModule::Run() {
  // Writer thread: drain the queue into the file; close the open chunk on the flush timer.
  std::vector<RecordItem> batch;
  bool open = true;
  while (open) {
    const int64_t now = NowNs();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(core_->NextFlushNs(now) - now);
    open = queue_.PopAll(batch, deadline);
    for (const auto& item : batch) core_->Write(item);
    batch.clear();
    const int64_t t0 = NowNs();
    if (core_->FlushDue(t0)) flush_call_max_ns_ = std::max(flush_call_max_ns_, NowNs() - t0);
    if (core_->Failed()) failed_.store(true);
  }
  core_->Finish();
  if (core_->Failed()) failed_.store(true);
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  writer_cpu_s_ = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
}

void RecorderModule::Stop() {
  if (stopped_) return;
  stopped_ = true;
  queue_.Close();
  if (writer_thread_.joinable()) {
    writer_thread_.join();
  } else {
    // Never attached (tests): write what was queued here.
    Run();
  }
  stopped_ns_ = NowNs();
  if (log_ && !core_->Failed())
    log_->info("recorded {} messages ({:.1f} MB) to {}", core_->Log().Stats().message_count,
               static_cast<double>(core_->Log().BytesWritten()) / 1e6, path_);
  if (def_.ros2 && to_file_ && !core_->Failed()) WriteRos2Metadata();
}

void RecorderModule::WriteRos2Metadata() {
  // rosbag2 reads a bag as a folder with metadata.yaml naming its files; it lists the ROS 2 topics only,
  // so `ros2 bag play` passes over platoon's own channels in the same file.
  namespace fs = std::filesystem;
  const fs::path file(path_);
  const std::string name = file.filename().string();
  fs::path yaml = file.parent_path() / "metadata.yaml";
  std::error_code ec;
  if (fs::exists(yaml, ec)) {
    // A folder is one bag: another recording's metadata.yaml stays, and this one goes beside it by name.
    const std::string text = ReadText(yaml.string());
    if (text.find("    - " + name + "\n") == std::string::npos) {
      yaml = file.parent_path() / (file.stem().string() + ".metadata.yaml");
      if (log_)
        log_->warn("{} already holds another recording's metadata.yaml; this one is {}: `ros2 bag play` needs it "
                   "named metadata.yaml in a folder of its own (path = \"recordings/{{session}}-{{time}}/log.mcap\")",
                   file.parent_path().string(), yaml.string());
    }
  }
  std::ofstream out(yaml, std::ios::binary | std::ios::trunc);
  out << core_->Ros2Tally().MetadataYaml(name);
  out.flush();
  if (!out) {
    if (log_) log_->error("cannot write {}: {}", yaml.string(), std::strerror(errno));
    return;
  }
  if (log_)
    log_->info("ROS 2: {} messages on {} topics, {}", core_->Ros2Tally().Messages(), core_->Ros2Tally().Topics().size(),
               yaml.string());
}

void RecorderModule::Detach(ModuleContext& context) {
  context.TapWorld(nullptr);
  if (!subscribed_.empty()) context.SubscribeData({});
  subscribed_.clear();
  Stop();
}

void RecorderModule::Summarize(std::vector<std::string>& fields) const {
  const RecordingWriter& w = *core_;
  const RecorderStats& st = w.Stats();
  // "channels" and "messages" in the form the independent reader prints them (tests/mcap_reader/count.mjs).
  std::string channels;
  uint64_t messages = 0;
  for (const auto& [topic, n] : w.Log().TopicCounts()) {
    channels += (channels.empty() ? "" : ",") + session_log::JsonQuote(topic) + ":" + std::to_string(n);
    messages += n;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double process_cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  const double wall_s = started_ns_ > 0 && stopped_ns_ > started_ns_ ? static_cast<double>(stopped_ns_ - started_ns_) / 1e9 : 0;
  const auto ms = [](double ns) { return ns / 1e6; };
  fields.push_back(fmt::format(
      "\"recorder\":{{\"path\":{},\"bytes\":{},\"channels\":{{{}}},\"messages\":{},\"dropped\":{},\"dropped_bytes\":{},"
      "\"error\":{},\"world_recorded\":{},\"world_seq_gaps\":{},\"world_seq_missing\":{},\"world_seq_resets\":{},"
      "\"data_recorded\":{},\"data_ignored\":{},\"undecodable\":{},\"not_written\":{},\"chunks\":{},\"flushes\":{},"
      "\"flush_latency_ms_p50\":{:.2f},\"flush_latency_ms_p99\":{:.2f},\"flush_latency_ms_max\":{:.2f},"
      "\"flush_call_ms_max\":{:.2f},\"queue_peak_bytes\":{},\"wall_s\":{:.2f},\"bytes_per_s\":{:.0f},"
      "\"writer_cpu_s\":{:.3f},\"process_cpu_s\":{:.3f},\"foxglove_messages\":{},\"foxglove_bytes\":{},"
      "\"foxglove_cpu_s\":{:.3f},\"ros2_messages\":{},\"ros2_bytes\":{},\"ros2_cpu_s\":{:.3f}}}",
      session_log::JsonQuote(path_), w.Log().BytesWritten(), channels, messages, queue_.Dropped(), queue_.DroppedBytes(),
      session_log::JsonQuote(w.Error()), st.world_recorded, st.world_seq_gaps, st.world_seq_missing, st.world_seq_resets,
      st.data_recorded, st.data_ignored, st.undecodable, st.not_written, w.Log().Stats().chunk_count, st.flushes,
      ms(Percentile(st.flush_latency_ns, 50)), ms(Percentile(st.flush_latency_ns, 99)),
      ms(Percentile(st.flush_latency_ns, 100)), ms(static_cast<double>(flush_call_max_ns_)), queue_.PeakBytes(), wall_s,
      wall_s > 0 ? static_cast<double>(w.Log().BytesWritten()) / wall_s : 0.0, writer_cpu_s_, process_cpu_s,
      st.foxglove_messages, st.foxglove_bytes, static_cast<double>(st.foxglove_cpu_ns) * 1e-9, st.ros2_messages,
      st.ros2_bytes, static_cast<double>(st.ros2_cpu_ns) * 1e-9));
}

}  // namespace platoon::node
