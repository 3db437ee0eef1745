// Writes the generated part of the fuzz seed corpus: one encoded envelope of every message kind (default
// and filled-in), PCDs in both encodings, and small session logs (closed, cut, unclosed). Deterministic:
// the same build writes the same bytes. Usage: fuzz_seeds <corpus dir> (writes <dir>/fuzz_decode/...,
// <dir>/fuzz_pcd/..., <dir>/fuzz_mcap/..., <dir>/fuzz_replay_log/...).
#include "platoon/log/mcap.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/pcd.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

using namespace platoon;
using namespace platoon::protocol;
namespace fs = std::filesystem;

namespace {

void WriteFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

std::vector<PointRecord> SomePoints(int n) {
  std::vector<PointRecord> pts;
  for (int i = 0; i < n; ++i) {
    PointRecord p;
    p.x_m = 1.5f * i;
    p.y_m = -0.25f * i;
    p.z_m = 0.1f;
    p.intensity_w = 1e-7f;
    p.snr = 12.0f;
    p.time_offset_s = 0.001f * i;
    p.ring = static_cast<uint16_t>(i);
    p.entity_id = 7;
    p.class_id = 1;
    pts.push_back(p);
  }
  return pts;
}

std::string PackPoints(const std::vector<PointRecord>& pts) {
  std::string blob(pts.size() * point_record::kStride, '\0');
  for (size_t i = 0; i < pts.size(); ++i) WritePointRecord(pts[i], blob.data() + i * point_record::kStride);
  return blob;
}

SensorHeader Header(const char* id, StreamKind kind) {
  SensorHeader h;
  h.sensor_id = id;
  h.kind = kind;
  h.node_id = 3;
  h.sequence = 9;
  h.stamp_ns = 1'000'000'000;
  h.entity_id = (uint64_t{2} << 32) | 1;
  h.mount_position_m = Vec3(1.5, 0, 1.8);
  h.host_epoch = 42;
  return h;
}

EntityState Car(uint64_t id, double x) {
  EntityState e;
  e.id = id;
  e.owner_node = 2;
  e.kind = EntityKind::kCar;
  e.kinematics.stamp_ns = 1'000'000'000;
  e.kinematics.pose.position_m = Vec3(x, 1.75, 0);
  e.kinematics.velocity_mps = Vec3(15, 0, 0);
  return e;
}

WorldState World(uint64_t seq, int64_t sim_ns) {
  WorldState w;
  w.sequence = seq;
  w.server_time_ns = sim_ns + 5;
  w.sim_time_ns = sim_ns;
  w.phase = SessionPhase::kRunning;
  w.entities = {Car((uint64_t{2} << 32) | 1, 0.015 * sim_ns / 1e6), Car((uint64_t{2} << 32) | 2, 30)};
  for (auto& e : w.entities) e.kinematics.stamp_ns = sim_ns;
  NodeInfo n;
  n.node_id = 2;
  n.name = "traffic";
  n.role = Role::kTraffic;
  n.host = "localhost";
  n.endpoints = {DataEndpoint{"lidar_front", StreamKind::kLidar, 7410, "127.0.0.1"}};
  w.nodes = {n};
  if (seq == 3) w.removed_entities = {(uint64_t{2} << 32) | 2};
  LoggedEvent ev;
  ev.sequence = seq;
  ev.sim_time_ns = sim_ns;
  ev.kind = LoggedEvent::Kind::kMarker;
  ev.source = "ctl";
  ev.text = "brake";
  ev.detail = "{\"gap_m\":12.5}";
  w.events = {ev};
  return w;
}

FusedCloud Fused() {
  FusedCloud f;
  f.sensor_id = "fused";
  f.node_id = 4;
  f.sequence = 5;
  f.reference_ns = 1'000'000'000;
  f.entity_id = (uint64_t{2} << 32) | 1;
  f.sources = {FusedSource{"lidar_front", 999'000'000, 2, SourceStatus::kOk, 42, 8, 1},
               FusedSource{"lidar_left", 999'000'000, 1, SourceStatus::kOk, 43, 8, 0},
               FusedSource{"lidar_rear", 0, 0, SourceStatus::kMissing, 0, 0, 0}};  // groups in arrival order
  const auto pts = SomePoints(3);
  f.point_count = 3;
  f.point_stride = point_record::kStride;
  f.points = PackPoints(pts);
  return f;
}

// Filled-in messages of the kinds whose fields matter most to their readers.
std::vector<std::pair<std::string, Message>> Filled() {
  std::vector<std::pair<std::string, Message>> out;
  Join j;
  j.name = "lidar";
  j.role = Role::kSensor;
  j.host = "pc2";
  j.pid = 1234;
  j.endpoints = {DataEndpoint{"lidar_front", StreamKind::kLidar, 7410, ""}};
  out.emplace_back("join_sensor", j);
  Welcome w;
  w.node_id = 3;
  w.session_name = "demo";
  w.heartbeat_interval_ns = 250'000'000;
  w.state_token = 99;
  out.emplace_back("welcome_filled", w);
  out.emplace_back("refuse_filled", Refuse{"protocol version 3 is not spoken here", kProtocolVersion});
  NodeState ns;
  ns.node_id = 2;
  ns.sequence = 17;
  ns.entities = {Car(1, 0), Car(2, 10)};
  ns.token = 99;
  out.emplace_back("node_state_filled", ns);
  out.emplace_back("world_state_filled", World(1, 1'000'000'000));
  // A rolling keyframe's slice (version 3): states, and ids kept by id only.
  WorldState slice = World(2, 1'050'000'000);
  slice.keyframe = false;
  slice.keyframe_parts = 4;
  slice.keyframe_part = 1;
  slice.kept_entities = {(uint64_t{2} << 32) | 5, (uint64_t{2} << 32) | 9};
  out.emplace_back("world_state_slice", slice);
  ParamList pl;
  Parameter p;
  p.path = "server.broadcast_hz";
  p.value = "60";
  p.writable = true;
  p.type = "float";
  p.unit = "Hz";
  p.min = 1;
  p.max = 1000;
  pl.params = {p};
  pl.errors = {"node.lidar: no answer"};
  out.emplace_back("param_list_filled", pl);
  out.emplace_back("param_reply_filled", ParamReply{true, p, "", 7});
  SessionControl speed;
  speed.command = SessionControl::Command::kSpeed;
  speed.speed = 4.0;
  out.emplace_back("session_control_speed", speed);
  PointCloud pc;
  pc.header = Header("lidar_front", StreamKind::kLidar);
  pc.duration_ns = 100'000'000;
  pc.point_count = 4;
  pc.point_stride = point_record::kStride;
  pc.points = PackPoints(SomePoints(4));
  out.emplace_back("point_cloud_filled", pc);
  RadarScan rs;
  rs.header = Header("radar_front", StreamKind::kRadar);
  RadarDetection d;
  d.range_m = 25;
  d.azimuth_rad = 0.1f;
  d.object_class = 1;
  d.entity_id = 7;
  rs.detections = {d, d};
  out.emplace_back("radar_scan_filled", rs);
  CameraFrame cf;
  cf.header = Header("camera_front", StreamKind::kCamera);
  cf.width = 4;
  cf.height = 2;
  cf.fx = cf.fy = 500;
  cf.cx = 2;
  cf.cy = 1;
  cf.rois = {CameraRoi{7, 1, 0, 0, 3, 1, 20, 0.1f, false}};
  cf.encoding = "rgb8";
  cf.image = std::string(4 * 2 * 3, '\x80');
  out.emplace_back("camera_frame_filled", cf);
  out.emplace_back("fused_cloud_filled", Fused());
  ObjectList ol;
  ol.header = Header("objects_front", StreamKind::kObjects);
  ol.objects = {DetectedObject{7, 1, 1, Vec3(20, 1, 0), Vec3(10, 0, 0), Vec3(4.5, 1.8, 1.5)}};
  out.emplace_back("object_list_filled", ol);
  EventList el;
  el.events = World(2, 2'000'000'000).events;
  el.request_id = 3;
  out.emplace_back("event_list_filled", el);
  return out;
}

std::string AsString(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// A session log as the recorder writes it: session info, world states, a fused cloud on a data topic.
std::string SessionLog(bool close) {
  mcap::MemorySink sink;
  session_log::Writer log(sink);
  session_log::SessionInfo info{"demo", "name = \"demo\"\n[server]\ncontrol_port = 7400\n", "configs/demo.toml", "recorder"};
  (void)log.WriteJson(session_log::kSessionTopic, "", "", session_log::SessionInfoJson(info), 0, 0);
  for (uint64_t i = 1; i <= 3; ++i) (void)log.WriteWorld(World(i, static_cast<int64_t>(i) * 50'000'000));
  (void)log.WriteJson(session_log::kEventsTopic, "", "", "{\"kind\":\"marker\",\"text\":\"brake\"}", 100'000'000, 0);
  const std::string fused = Encode(Fused());
  (void)log.WriteEnvelope(session_log::DataTopic("fused"),
                          std::span(reinterpret_cast<const uint8_t*>(fused.data()), fused.size()), 150'000'000, 0);
  if (close) (void)log.Close();
  else (void)log.Flush();
  return AsString(sink.Bytes());
}

// The same channels without the 15 kB schema text (a reader does not need it): small seeds mutate faster.
std::string SmallLog(bool close) {
  mcap::MemorySink sink;
  mcap::Writer w(sink);
  const std::string schema = "struct Envelope {}";
  (void)w.AddSchema(mcap::Schema{1, std::string(session_log::kEnvelopeSchemaName), "capnp",
                                 std::vector<uint8_t>(schema.begin(), schema.end())});
  (void)w.AddChannel(mcap::Channel{1, 0, std::string(session_log::kSessionTopic), "json", {}});
  (void)w.AddChannel(mcap::Channel{2, 1, std::string(session_log::kWorldTopic), "capnp", {}});
  const std::string info = session_log::SessionInfoJson({"demo", "name = \"demo\"\n", "demo.toml", "rec"});
  (void)w.WriteMessage(mcap::MessageHeader{1, 1, 0, 0}, std::span(reinterpret_cast<const uint8_t*>(info.data()), info.size()));
  for (uint32_t i = 1; i <= 2; ++i) {
    const std::string world = Encode(World(i, i * 50'000'000));
    (void)w.WriteMessage(mcap::MessageHeader{2, i, i * 50'000'000ull, i * 50'000'000ull},
                         std::span(reinterpret_cast<const uint8_t*>(world.data()), world.size()));
  }
  if (close) (void)w.Close();
  else (void)w.Flush();
  return AsString(sink.Bytes());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds <corpus dir>\n");
    return 2;
  }
  const fs::path dir = argv[1];
  int files = 0;
  // Every kind, default-constructed (index order of protocol::Message).
  for (size_t i = 0; i < std::variant_size_v<Message>; ++i) {
    Message m;
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((I == i ? (m = std::variant_alternative_t<I, Message>{}, 0) : 0), ...);
    }(std::make_index_sequence<std::variant_size_v<Message>>{});
    WriteFile(dir / "fuzz_decode" / (std::string(MessageName(m)) + "_default"), Encode(m));
    ++files;
  }
  for (const auto& [name, m] : Filled()) {
    WriteFile(dir / "fuzz_decode" / name, Encode(m));
    ++files;
  }
  // A join of a later protocol version (still decoded, for a clear refusal). Version 1's world and node
  // states (the EntityState layout, still read) are kept in the corpus as world_state_filled_v1 and
  // node_state_filled_v1, written by a version 1 build, and version 2's world state (no kept ids) as
  // world_state_filled_v2; this build writes only its own version.
  Join newer;
  newer.name = "newer";
  newer.role = Role::kObserver;
  WriteFile(dir / "fuzz_decode" / "join_version_next", EncodeWithVersion(newer, kProtocolVersion + 1));
  ++files;

  const auto pts = SomePoints(5);
  Pose vp;
  vp.position_m = Vec3(1, 2, 3);
  WriteFile(dir / "fuzz_pcd" / "ascii.pcd", sensors::EncodePcd(pts, sensors::PcdFormat::kAscii, vp));
  WriteFile(dir / "fuzz_pcd" / "binary.pcd", sensors::EncodePcd(pts, sensors::PcdFormat::kBinary, vp));
  WriteFile(dir / "fuzz_pcd" / "empty.pcd", sensors::EncodePcd({}, sensors::PcdFormat::kAscii));
  files += 3;

  const std::string closed = SessionLog(true), open = SessionLog(false);
  for (const char* target : {"fuzz_mcap", "fuzz_replay_log"}) {
    WriteFile(dir / target / "session_closed.mcap", closed);
    WriteFile(dir / target / "session_unclosed.mcap", open);
    WriteFile(dir / target / "session_cut.mcap", closed.substr(0, closed.size() * 2 / 3));
    WriteFile(dir / target / "small_closed.mcap", SmallLog(true));
    WriteFile(dir / target / "small_unclosed.mcap", SmallLog(false));
    files += 5;
  }
  std::printf("fuzz_seeds: wrote %d files under %s\n", files, dir.c_str());
  return 0;
}
