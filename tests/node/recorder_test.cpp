// The recorder role without sockets: its config keys, the flush timer, the bounded queue, what it
// writes for world states and data streams, and a disk that fills up (through the mcap::Sink seam).
#include "platoon/node/recorder.hpp"

#include "platoon/log/foxglove.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace {

using namespace platoon;
using protocol::SessionPhase;

constexpr int64_t kMs = 1'000'000;

// A ModuleContext with no session behind it: the test plays the network thread through the tap it keeps.
class RecorderFakeContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& gap) const override { received = 0, gap = 0; }
  uint32_t NodeId() const override { return 9; }
  void SubscribeData(const std::vector<std::string>& ids) override { subscribed = ids; }
  std::optional<transport::SharedBytes> ReceiveData(int64_t) override {
    if (data.empty()) return std::nullopt;
    std::string b = std::move(data.front());
    data.pop_front();
    return b;
  }
  std::vector<protocol::NodeInfo> Nodes() const override { return nodes; }
  void TapWorld(WorldTap t) override { tap = std::move(t); }

  WorldTap tap;
  std::vector<std::string> subscribed;
  std::deque<std::string> data;
  std::vector<protocol::NodeInfo> nodes;
};

// A sink that accepts `budget` bytes into memory and then fails like a full disk.
class FullDisk final : public mcap::Sink {
 public:
  explicit FullDisk(size_t budget) : budget_(budget) {}
  bool Write(const void* data, size_t size) override {
    if (size > budget_) return false;
    budget_ -= size;
    memory.Write(data, size);
    return true;
  }
  bool Flush() override { return true; }
  std::string Name() const override { return "/lab/recordings/full.mcap"; }
  std::string Error() const override { return "No space left on device"; }
  mcap::MemorySink memory;

 private:
  size_t budget_;
};

struct Captured {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> log;
  Captured() : log(std::make_shared<spdlog::logger>("node.rec", std::make_shared<spdlog::sinks::ostream_sink_mt>(text))) {}
  int Count(const std::string& needle) const {
    int n = 0;
    const std::string s = text.str();
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }
};

config::SessionDef Session(const std::string& recorder_keys, const std::string& name = "lab.toml") {
  return config::LoadSessionText("[session]\nname = \"lab\"\n[[node]]\nname = \"rec\"\nrole = \"recorder\"\n" + recorder_keys,
                                 name);
}

std::string RecorderConfigError(const std::string& node_keys) {
  try {
    (void)config::LoadSessionText("[[node]]\nname = \"n\"\n" + node_keys, "lab.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

protocol::EntityState Car(uint64_t id, uint32_t owner, double x, int64_t stamp_ns) {
  protocol::EntityState e;
  e.id = id;
  e.owner_node = owner;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = stamp_ns;
  e.kinematics.pose.position_m = Vec3(x, 0, 0);
  e.kinematics.velocity_mps = Vec3(10, 0, 0);
  return e;
}

protocol::NodeInfo Node(uint32_t id, const std::string& name, protocol::Role role) {
  protocol::NodeInfo n;
  n.node_id = id;
  n.name = name;
  n.role = role;
  n.host = "pc1";
  n.pid = 100 + id;
  return n;
}

// World state `seq` at sim time `sim_ns` (reference time 1000 s + sim): a keyframe with the table every 60th.
std::string World(uint64_t seq, int64_t sim_ns, SessionPhase phase = SessionPhase::kRunning) {
  protocol::WorldState w;
  w.sequence = seq;
  w.sim_time_ns = sim_ns;
  w.server_time_ns = 1'000'000'000'000 + sim_ns;
  w.phase = phase;
  w.keyframe = seq % 60 == 1;
  w.entities = {Car(1, 1, 10.0 * static_cast<double>(sim_ns) / 1e9, sim_ns)};
  if (w.keyframe) w.nodes = {Node(1, "traffic", protocol::Role::kTraffic), Node(2, "rec", protocol::Role::kRecorder)};
  return protocol::Encode(w);
}

}  // namespace

TEST_CASE("recorder config: path is required and ends in .mcap, only {session} {node} {time} placeholders, recorder keys only on recorders") {
  CHECK(RecorderConfigError("role = \"recorder\"\n").find("lab.toml:1: node[0].path: a recorder node needs path") == 0);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"x.txt\"\n").find("node[0].path: expected a file name ending in .mcap") !=
        std::string::npos);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"r/{date}.mcap\"\n").find("the placeholders are {session}, {node} and {time}") !=
        std::string::npos);
  CHECK(RecorderConfigError("role = \"traffic\"\npath = \"a.mcap\"\n").find("node[0].path: is a recorder key: it needs role = \"recorder\", got \"traffic\"") !=
        std::string::npos);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"a.mcap\"\nstreams = [\"*\", \"lidar\"]\n").find("\"*\" (every stream of the session) stands alone") !=
        std::string::npos);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"a.mcap\"\nstreams = [\"a\", \"a\"]\n").find("\"a\" is listed twice") != std::string::npos);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"a.mcap\"\nfoxglove_hz = 0\n").find("node[0].foxglove_hz") != std::string::npos);
  CHECK(RecorderConfigError("role = \"recorder\"\npath = \"a.mcap\"\nstream = [\"a\"]\n").find("stream") != std::string::npos);  // unknown key

  const auto s = Session("path = \"recordings/{session}-{node}-{time}.mcap\"\nstreams = [\"fused\"]\nfoxglove = false\n");
  const auto& r = s.nodes[0].recorder;
  CHECK(r.streams == std::vector<std::string>{"fused"});
  CHECK_FALSE(r.foxglove);
  CHECK_FALSE(r.overwrite);
  CHECK(r.foxglove_hz == 10.0);
  // {time} is the local time of the start, as YYYYmmdd-HHMMSS.
  const std::string path = config::RecordingPath(r, "lab 1/a", "rec", 0);
  CHECK(path.rfind("recordings/lab_1_a-rec-19", 0) == 0);
  CHECK(path.size() == std::string("recordings/lab_1_a-rec-19700101-000000.mcap").size());
}

TEST_CASE("recorder: refuses an existing file without overwrite (also in check), creates the parent folder, overwrites when told") {
  const auto dir = std::filesystem::temp_directory_path() / ("recorder_open_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string file = (dir / "sub" / "lab-rec.mcap").string();
  const auto session = Session("path = \"" + (dir / "sub" / "{session}-{node}.mcap").string() + "\"\n");
  Captured log;
  {
    node::RecorderModule first(session, session.nodes[0], log.log);  // creates dir/sub
    CHECK(first.Path() == file);
  }
  REQUIRE(std::filesystem::exists(file));
  std::string error;
  try {
    node::RecorderModule second(session, session.nodes[0], log.log);
  } catch (const config::ConfigError& e) {
    error = e.what();
  }
  CHECK(error.find("lab.toml:6: node[0].path: " + file + " exists; the recorder does not overwrite a recording: set overwrite = true") == 0);
  // platoon check says the same before anything starts.
  error.clear();
  try {
    config::ValidateSession(session);
  } catch (const config::ConfigError& e) {
    error = e.what();
  }
  CHECK(error.find(file + " exists") != std::string::npos);
  const auto again = Session("path = \"" + (dir / "sub" / "{session}-{node}.mcap").string() + "\"\noverwrite = true\n");
  CHECK_NOTHROW(node::RecorderModule(again, again.nodes[0], log.log));
  CHECK_NOTHROW(config::ValidateSession(again));
  std::filesystem::remove_all(dir);
}

TEST_CASE("recorder: the flush timer closes the open chunk every 50 ms of wall time, and only when something waits") {
  mcap::MemorySink sink;
  config::RecorderDef def;
  def.foxglove = false;
  node::RecordingWriter w(def, std::make_unique<session_log::Writer>(sink), "memory", nullptr);
  w.Begin(session_log::SessionInfo{"lab", "", "", "rec"});
  const int64_t t0 = 5'000 * kMs;
  w.Write(node::RecordItem{node::RecordItem::Kind::kWorld, World(1, 0), t0});
  auto in_file = [&] { return mcap::ReadBytes(sink.Bytes()).messages.size(); };
  CHECK_FALSE(w.FlushDue(t0));  // the timer starts
  CHECK(w.NextFlushNs(t0) == t0 + 50 * kMs);
  CHECK_FALSE(w.FlushDue(t0 + 49 * kMs));
  CHECK(in_file() == 0);  // still in the open chunk
  CHECK(w.FlushDue(t0 + 50 * kMs));
  CHECK(in_file() == 5);  // session, world state and its events (recording, two nodes present)
  REQUIRE(w.Stats().flush_latency_ns.size() == 1);
  CHECK(w.Stats().flush_latency_ns[0] == 50 * kMs);
  // Nothing arrives: the timer runs on, nothing to write.
  CHECK_FALSE(w.FlushDue(t0 + 100 * kMs));
  CHECK_FALSE(w.FlushDue(t0 + 150 * kMs));
  // One message 10 ms before the next tick is in the file at that tick: 10 ms after it arrived.
  w.Write(node::RecordItem{node::RecordItem::Kind::kWorld, World(2, 16 * kMs), t0 + 190 * kMs});
  CHECK(w.FlushDue(t0 + 200 * kMs));
  CHECK(in_file() == 6);
  CHECK(w.Stats().flush_latency_ns.back() == 10 * kMs);
  // A stalled writer thread skips the missed ticks rather than flushing in a burst.
  CHECK_FALSE(w.FlushDue(t0 + 1000 * kMs));
  CHECK(w.NextFlushNs(t0 + 1000 * kMs) == t0 + 1050 * kMs);
  w.Finish();
  const auto r = mcap::ReadBytes(sink.Bytes());
  CHECK(r.complete);
  CHECK(r.messages.size() == 6);
}

TEST_CASE("recorder queue: bounded in bytes, a full queue drops and counts instead of waiting, close drains") {
  node::RecordQueue q(100);
  CHECK(q.Push(node::RecordItem{node::RecordItem::Kind::kWorld, std::string(60, 'a'), 1}));
  CHECK_FALSE(q.Push(node::RecordItem{node::RecordItem::Kind::kWorld, std::string(50, 'b'), 2}));  // 110 > 100
  CHECK(q.Push(node::RecordItem{node::RecordItem::Kind::kData, std::string(40, 'c'), 3}));
  CHECK(q.Dropped() == 1);
  CHECK(q.DroppedBytes() == 50);
  CHECK(q.PeakBytes() == 100);
  std::vector<node::RecordItem> out;
  CHECK(q.PopAll(out, std::chrono::steady_clock::now()));
  REQUIRE(out.size() == 2);
  CHECK(out[0].received_ns == 1);
  CHECK(out[1].received_ns == 3);
  // An empty queue waits only until the deadline.
  const auto start = std::chrono::steady_clock::now();
  out.clear();
  CHECK(q.PopAll(out, start + std::chrono::milliseconds(20)));
  CHECK(out.empty());
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(19));
  CHECK(q.Push(node::RecordItem{node::RecordItem::Kind::kWorld, "x", 4}));
  q.Close();
  CHECK_FALSE(q.Push(node::RecordItem{node::RecordItem::Kind::kWorld, "y", 5}));
  CHECK(q.PopAll(out, std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  CHECK(out.size() == 1);
  CHECK_FALSE(q.PopAll(out, std::chrono::steady_clock::now() + std::chrono::seconds(5)));  // closed and empty: at once
}

TEST_CASE("recorder: world states as received, derived events, Foxglove scene and transforms at foxglove_hz, only the chosen streams") {
  mcap::MemorySink sink;
  const auto session = Session("path = \"unused.mcap\"\nstreams = [\"lidar_a\"]\nfoxglove_hz = 10\nfoxglove_cloud_hz = 2\n");
  Captured log;
  node::RecorderModule rec(session, session.nodes[0], log.log, sink);
  RecorderFakeContext context;
  rec.Attach(context);
  REQUIRE(context.tap);
  // 1 s of sim time at 60 world states per second, starting at sim 0.
  std::vector<std::string> sent;
  for (uint64_t seq = 1; seq <= 60; ++seq) {
    sent.push_back(World(seq, static_cast<int64_t>(seq - 1) * 16'666'667));
    const auto decoded = protocol::Decode(sent.back());
    context.tap(sent.back(), std::get<protocol::WorldState>(*decoded.message), 0);
  }
  // Two lidar clouds 100 ms apart and an IMU sample from the same host: the IMU is not chosen.
  for (int k = 0; k < 2; ++k) {
    protocol::PointCloud c;
    c.header.sensor_id = "lidar_a";
    c.header.kind = protocol::StreamKind::kLidar;
    c.header.stamp_ns = k * 100 * kMs;
    c.header.entity_id = 1;
    c.header.mount_position_m = Vec3(1, 0, 2);
    c.point_count = 1;
    c.point_stride = point_record::kStride;
    c.points.assign(point_record::kStride, '\0');
    context.data.push_back(protocol::Encode(c));
  }
  protocol::ImuMeasurement imu;
  imu.header.sensor_id = "imu";
  context.data.push_back(protocol::Encode(imu));
  rec.Step(node::StepInfo{0, 0}, context);
  CHECK(context.subscribed == std::vector<std::string>{"lidar_a"});
  rec.Detach(context);
  CHECK_FALSE(context.tap);  // the tap is gone with the recorder

  std::vector<std::string> world_bytes, events;
  std::map<std::string, int> counts;
  const auto result = mcap::ReadBytes(sink.Bytes());
  CHECK(result.complete);
  for (const auto& m : result.messages) {
    const auto& topic = result.channels.at(m.channel_id).topic;
    ++counts[topic];
    const std::string text(m.data.begin(), m.data.end());
    if (topic == "/platoon/world") world_bytes.push_back(text);
    if (topic == "/platoon/events") events.push_back(text);
  }
  CHECK(world_bytes == sent);  // every broadcast, byte for byte, in order
  CHECK(counts["/platoon/session"] == 1);
  CHECK(counts["/platoon/data/lidar_a"] == 2);
  CHECK(counts.count("/platoon/data/imu") == 0);
  CHECK(counts["/foxglove/cloud/lidar_a"] == 1);  // 2 Hz: one of the two clouds 100 ms apart
  CHECK(counts["/foxglove/tf"] == 10);             // 10 Hz over 1 s of sim time
  CHECK(counts["/foxglove/scene"] == 1);           // the same car all along: one scene, moved by the transforms
  REQUIRE(events.size() == 3);
  CHECK(events[0].find("\"type\":\"session\",\"event\":\"recording\"") == 1);
  CHECK(events[1].find("\"event\":\"present\"") != std::string::npos);
  CHECK(events[1].find("\"name\":\"traffic\"") != std::string::npos);
  // Schemas: Foxglove finds its channels by these names; platoon's channels carry the capnp schema.
  std::set<std::string> schemas;
  for (const auto& [id, s] : result.schemas) schemas.insert(s.name + "/" + s.encoding);
  CHECK(schemas.count("foxglove.SceneUpdate/jsonschema") == 1);
  CHECK(schemas.count("foxglove.FrameTransforms/jsonschema") == 1);
  CHECK(schemas.count("foxglove.PointCloud/jsonschema") == 1);
  CHECK(schemas.count("platoon.wire.Envelope/capnp") == 1);
  const auto& st = rec.Writer().Stats();
  CHECK(st.world_recorded == 60);
  CHECK(st.world_seq_gaps == 0);
  CHECK(st.data_recorded == 2);
  CHECK(st.data_ignored == 1);
  std::vector<std::string> fields;
  rec.Summarize(fields);
  REQUIRE(fields.size() == 1);
  CHECK(fields[0].find("\"channels\":{\"/foxglove/cloud/lidar_a\":1,\"/foxglove/scene\":1,\"/foxglove/tf\":10,") != std::string::npos);
  CHECK(fields[0].find("\"error\":\"\"") != std::string::npos);
  CHECK(log.Count("[error]") == 0);
}

TEST_CASE("recorder: Foxglove transforms every slot, the scene only when an entity comes, goes or changes its look, and each second") {
  mcap::MemorySink sink;
  config::RecorderDef def;  // foxglove_hz 10: 100 ms slots
  node::RecordingWriter w(def, std::make_unique<session_log::Writer>(sink), "memory", nullptr);
  auto world = [&](uint64_t seq, int64_t sim_ms, std::vector<protocol::EntityState> entities) {
    protocol::WorldState s;
    s.sequence = seq;
    s.sim_time_ns = sim_ms * kMs;
    s.phase = SessionPhase::kRunning;
    s.keyframe = true;
    s.entities = std::move(entities);
    s.nodes = {Node(1, "traffic", protocol::Role::kTraffic)};
    w.Write(node::RecordItem{node::RecordItem::Kind::kWorld, protocol::Encode(s), 0});
  };
  auto stale = Car(2, 1, 50, 0);
  stale.stale = true;
  world(1, 0, {Car(1, 1, 0, 0)});                     // scene: the first
  world(2, 50, {Car(1, 1, 0.5, 50 * kMs)});           // same slot: nothing
  world(3, 100, {Car(1, 1, 1, 100 * kMs)});           // moved only: transforms
  world(4, 200, {Car(1, 1, 2, 200 * kMs), Car(2, 1, 50, 0)});  // a car comes: scene
  world(5, 300, {Car(1, 1, 3, 300 * kMs), stale});    // its owner is lost: scene
  world(6, 400, {Car(1, 1, 4, 400 * kMs), stale});    // nothing new
  world(7, 1000, {Car(1, 1, 10, 1000 * kMs), stale}); // a new second: scene
  w.Finish();
  std::map<std::string, int> counts;
  std::string last_tf;
  const auto r = mcap::ReadBytes(sink.Bytes());
  for (const auto& m : r.messages) {
    const auto& topic = r.channels.at(m.channel_id).topic;
    ++counts[topic];
    if (topic == "/foxglove/tf") last_tf.assign(m.data.begin(), m.data.end());
  }
  CHECK(counts["/foxglove/tf"] == 6);
  CHECK(counts["/foxglove/scene"] == 4);
  // The car is where dead reckoning puts it at the state's sim time (10 m/s along x).
  CHECK(last_tf.find(R"("child_frame_id":"vehicle_1","translation":{"x":10.000,"y":0.000,"z":0.000})") != std::string::npos);
}

TEST_CASE("recorder: world-state sequence gaps and restarts are counted") {
  mcap::MemorySink sink;
  config::RecorderDef def;
  node::RecordingWriter w(def, std::make_unique<session_log::Writer>(sink), "memory", nullptr);
  for (uint64_t seq : {5, 6, 9, 10, 2, 3})
    w.Write(node::RecordItem{node::RecordItem::Kind::kWorld, World(seq, static_cast<int64_t>(seq) * kMs), 0});
  CHECK(w.Stats().world_seq_gaps == 1);
  CHECK(w.Stats().world_seq_missing == 2);
  CHECK(w.Stats().world_seq_resets == 1);
  CHECK(w.Stats().world_recorded == 6);
}

TEST_CASE("recorder: a full disk through the sink seam gives one error naming the file, the recorder stays in the session and what it wrote reads back") {
  FullDisk disk(40'000);
  const auto session = Session("path = \"unused.mcap\"\n");
  Captured log;
  node::RecorderModule rec(session, session.nodes[0], log.log, disk);
  RecorderFakeContext context;
  rec.Attach(context);
  // 10 s of world states, handed to the tap as the network thread does, with the module stepping.
  const auto start = std::chrono::steady_clock::now();
  int64_t longest_tap_ns = 0;
  for (uint64_t seq = 1; seq <= 600; ++seq) {
    const std::string bytes = World(seq, static_cast<int64_t>(seq) * 16'666'667);
    const auto decoded = protocol::Decode(bytes);
    const auto t = std::chrono::steady_clock::now();
    context.tap(bytes, std::get<protocol::WorldState>(*decoded.message), 0);
    longest_tap_ns = std::max<int64_t>(longest_tap_ns, (std::chrono::steady_clock::now() - t).count());
    if (seq % 10 == 0) rec.Step(node::StepInfo{static_cast<int64_t>(seq) * 16'666'667, 0}, context);
    if (seq % 60 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the writer meet the full disk
  }
  rec.Detach(context);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(longest_tap_ns < 50 * kMs);  // the network thread never waits on the disk
  // One error line, naming the file and the reason.
  CHECK(log.Count("[error]") == 1);
  CHECK(log.Count("[warning]") == 0);
  CHECK(log.Count("/lab/recordings/full.mcap") >= 1);
  CHECK(log.Count("No space left on device") == 1);
  CHECK(log.Count("stays in the session") == 1);
  CHECK(rec.Writer().Failed());
  std::vector<std::string> fields;
  rec.Summarize(fields);
  CHECK(fields[0].find("\"error\":\"mcap: writing /lab/recordings/full.mcap failed") != std::string::npos);
  // What was written before the disk filled reads back: whole chunks, no footer.
  const auto r = mcap::ReadBytes(disk.memory.Bytes());
  CHECK_FALSE(r.complete);
  CHECK(r.messages.size() > 10);
  CHECK(r.messages.size() < 600);
  CHECK(disk.memory.Bytes().size() <= 40'000);
  CHECK(r.ProblemText().find("no footer") != std::string::npos);
}
