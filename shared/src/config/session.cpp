#include "platoon/config/session.hpp"

#include "platoon/can/transport.hpp"

#include "platoon/config/params.hpp"
#include "platoon/config/conditions.hpp"

#include "platoon/road/session_road.hpp"
#include "platoon/scenario/osc.hpp"
#include "platoon/text/name_rule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <set>

namespace platoon::config {
namespace {

const std::vector<std::string> kLogLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};

// A path as given, or found next to the session file when relative ("" stays "").
std::string RelativeToFile(const std::string& session_file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  const auto slash = session_file.rfind('/');
  return slash == std::string::npos ? path : session_file.substr(0, slash + 1) + path;
}

uint16_t ReadPort(const Table& t, const std::string& key, uint16_t fallback) {
  // Port 0 asks the OS for a free port (used by tests; the server reports what it bound).
  return static_cast<uint16_t>(t.GetInt(key, fallback, 0, 65535));
}

ServerDef ReadServerDef(const Table& t) {
  ServerDef d;
  d.bind_address = t.GetString("bind_address", d.bind_address);
  d.control_port = ReadPort(t, "control_port", d.control_port);
  // The other three sockets follow the control port (time +1, world +2, state +3) unless given, so a
  // second session on the same PC needs only a different control_port. Port 0 (any free port) is
  // followed by 0 for each.
  const bool follows = !t.Has("time_port") || !t.Has("world_port") || !t.Has("state_port");
  if (follows && d.control_port > kMaxControlPort)
    t.Fail("control_port", "expected at most " + std::to_string(kMaxControlPort) +
                               " (time, world and state ports follow it at +1, +2, +3 unless given), got " +
                               std::to_string(d.control_port));
  auto follow = [&](int offset) { return static_cast<uint16_t>(d.control_port == 0 ? 0 : d.control_port + offset); };
  d.time_port = ReadPort(t, "time_port", follow(1));
  d.world_port = ReadPort(t, "world_port", follow(2));
  d.state_port = ReadPort(t, "state_port", follow(3));
  d.broadcast_hz = t.GetDouble("broadcast_hz", d.broadcast_hz, bounds::kBroadcastHz.min, bounds::kBroadcastHz.max);
  d.max_forward_delay_ms = t.GetDouble("max_forward_delay_ms", d.max_forward_delay_ms, 0, 1000);
  d.min_forward_interval_ms = t.GetDouble("min_forward_interval_ms", d.min_forward_interval_ms, 0, 1000);
  d.heartbeat_interval_s = t.GetDouble("heartbeat_interval_s", d.heartbeat_interval_s, 0.01, 60);
  d.lost_timeout_s = t.GetDouble("lost_timeout_s", d.lost_timeout_s, bounds::kLostTimeoutS.min, bounds::kLostTimeoutS.max);
  d.status_interval_s = t.GetDouble("status_interval_s", d.status_interval_s, bounds::kStatusIntervalS.min, bounds::kStatusIntervalS.max);
  d.keyframe_interval_s = t.GetDouble("keyframe_interval_s", d.keyframe_interval_s, 0.01, 3600);
  d.keyframe_parts = static_cast<int>(t.GetInt("keyframe_parts", d.keyframe_parts, 0, 1000));
  d.stale_grace_s = t.GetDouble("stale_grace_s", d.stale_grace_s, bounds::kStaleGraceS.min, bounds::kStaleGraceS.max);
  d.stale_remove = t.GetString("stale_policy", "freeze", {"freeze", "remove"}) == "remove";
  d.log_level = t.GetString("log_level", d.log_level, kLogLevels);
  d.max_nodes = static_cast<int>(t.GetInt("max_nodes", d.max_nodes, 1, 65535));
  d.max_entities = static_cast<int>(t.GetInt("max_entities", d.max_entities, 1, 1'000'000));
  d.max_entities_per_node = static_cast<int>(t.GetInt("max_entities_per_node", d.max_entities_per_node, 1, 1'000'000));
  d.forget_lost_s = t.GetDouble("forget_lost_s", d.forget_lost_s, 1, 86400);
  d.max_messages_per_turn = static_cast<int>(t.GetInt("max_messages_per_turn", d.max_messages_per_turn, 1, 100'000));
  d.peer_rate_hz = t.GetDouble("peer_rate_hz", d.peer_rate_hz, 1, 1e6);
  d.peer_burst = static_cast<int>(t.GetInt("peer_burst", d.peer_burst, 1, 1'000'000));
  d.peer_address_rate_hz = t.GetDouble("peer_address_rate_hz", d.peer_address_rate_hz, 1, 1e6);
  d.peer_address_burst = static_cast<int>(t.GetInt("peer_address_burst", d.peer_address_burst, 1, 1'000'000));
  d.join_rate_hz = t.GetDouble("join_rate_hz", d.join_rate_hz, 0.1, 1e6);
  d.join_burst = static_cast<int>(t.GetInt("join_burst", d.join_burst, 1, 1'000'000));
  d.max_replies_per_turn = static_cast<int>(t.GetInt("max_replies_per_turn", d.max_replies_per_turn, 1, 100'000));
  d.max_message_bytes = t.GetInt("max_message_bytes", d.max_message_bytes, 4096, int64_t{1} << 30);
  if (d.lost_timeout_s <= d.heartbeat_interval_s)
    t.Fail("lost_timeout_s", "must be longer than heartbeat_interval_s (" + std::to_string(d.heartbeat_interval_s) +
                                 " s), got " + std::to_string(d.lost_timeout_s));
  t.RejectUnknownKeys();
  return d;
}

// [node.data_write]: rate on the 1 ms dynamics grid, known column names, a file path.
DataWriteDef ReadDataWriteDef(const Table& t, const std::string& node_name) {
  DataWriteDef d;
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0, 1000);
  // Rows fall on dynamics steps only: the period must be a whole number of 1 ms steps.
  const double steps = 1000.0 / d.rate_hz;
  if (d.rate_hz <= 0 || std::abs(steps - std::round(steps)) > 1e-9 * steps)
    t.Fail("rate_hz", "expected a rate whose period is a whole number of 1 ms dynamics steps (1000 / rate_hz an integer: "
                      "1000, 500, 250, 200, 125, 100, 50, 40, 25, 20, 10, 5, 1, ... Hz), got " + fmt::format("{}", d.rate_hz));
  // Columns: sim_time first whether listed or not, then the listed ones in their order.
  // (The same check as `platoon export --variables`: data::ColumnsFromVariables.)
  d.columns = data::AllColumns();
  if (t.Has("variables")) {
    const std::string error = data::ColumnsFromVariables(t.GetStringArray("variables", {}), d.columns);
    if (!error.empty()) t.Fail("variables", error);
  }
  // The path, with {node} replaced; any other {...} is a typo.
  std::string path = t.GetString("path", d.path);
  if (path.empty() || path.back() == '/') t.Fail("path", "expected a CSV file path, got \"" + path + "\"");
  for (size_t at; (at = path.find("{node}")) != std::string::npos;) path.replace(at, 6, node_name);
  if (path.find_first_of("{}") != std::string::npos)
    t.Fail("path", "the only placeholder is {node} (the node name), got \"" + t.GetString("path", "") + "\"");
  d.path = path;
  t.RejectUnknownKeys();
  return d;
}

// The driver role's keys; a driver-only key on another role is an error, so a misplaced key never
// silently does nothing.
void ReadDriverKeys(const Table& t, NodeDef& d) {
  const bool driver = d.role == protocol::Role::kDriver;
  // Road traffic takes start_s_m, start_lane and start_speed_mps for its first vehicle (a lead car).
  const bool road_traffic = d.role == protocol::Role::kTraffic && d.traffic_model == "road";
  const char* driver_keys[] = {"input", "input_mapping", "start_s_m", "start_lane", "eye", "view_hfov_deg",
                               "view_width_px", "view_height_px", "view_fps", "headless", "hud", "cockpit", "mirrors", "mirror", "screen", "data_write",
                               "start_speed_mps", "driver_model", "stream_port", "head_tracking_port",
                               "stream_address", "stream_timeout_s", "head_tracking_timeout_s",
                               "can_bus", "can_map", "can_timeout_s",
                               "sound", "sound_volume", "sound_engine", "sound_tyres", "sound_wind", "sound_indicator",
                               "engine_cylinders", "gaze", "gaze_path", "gaze_min_confidence"};
  const std::string start_keys = "start_s_m start_lane start_speed_mps";
  if (!driver)
    for (const char* key : driver_keys)
      if (t.Has(key) && !(road_traffic && start_keys.find(key) != std::string::npos))
        t.Fail(key, "is a driver key: it needs role = \"driver\"" +
                        std::string(start_keys.find(key) != std::string::npos ? " (or a traffic node with traffic_model = \"road\")" : "") +
                        ", got \"" + std::string(protocol::RoleName(d.role)) + "\"");
  d.start_given = t.Has("start_s_m") || t.Has("start_lane") || t.Has("start_speed_mps");
  d.start_speed_mps = t.GetDouble("start_speed_mps", d.start_speed_mps, 0, 100);
  d.input = t.GetString("input", d.input);
  if (d.input.rfind("model:", 0) == 0) {
    if (d.input != "model:follow") t.Fail("input", "the driver model is \"model:follow\", got \"" + d.input + "\"");
    if (auto m = t.Sub("driver_model")) {
      DriverModelDef& dm = d.driver_model;
      dm.desired_speed_mps = m->GetDouble("desired_speed_mps", dm.desired_speed_mps, 0.5, 100);
      dm.time_gap_s = m->GetDouble("time_gap_s", dm.time_gap_s, 0.1, 10);
      dm.min_gap_m = m->GetDouble("min_gap_m", dm.min_gap_m, 0.1, 50);
      dm.max_accel_mps2 = m->GetDouble("max_accel_mps2", dm.max_accel_mps2, 0.1, 10);
      dm.comfort_decel_mps2 = m->GetDouble("comfort_decel_mps2", dm.comfort_decel_mps2, 0.1, 10);
      dm.reaction_time_s = m->GetDouble("reaction_time_s", dm.reaction_time_s, 0, 5);
      dm.lateral_accel_mps2 = m->GetDouble("lateral_accel_mps2", dm.lateral_accel_mps2, 0.5, 9);
      m->RejectUnknownKeys();
    }
  } else if (t.Has("driver_model")) {
    t.Fail("driver_model", "is for input = \"model:follow\", got input = \"" + d.input + "\"");
  } else if (d.input != "sdl" && d.input != "stream" && d.input != "can") {
    const std::string prefix = "scripted:";
    if (d.input.rfind(prefix, 0) != 0 || d.input.size() == prefix.size())
      t.Fail("input", "expected \"sdl\", \"scripted:<input script file>\", \"model:follow\", \"stream\" or \"can\", got \"" + d.input + "\"");
    // A relative script is found next to the session file, wherever the process runs.
    const std::string file = d.input.substr(prefix.size());
    const auto slash = t.File().rfind('/');
    if (file.front() != '/' && slash != std::string::npos) d.input = prefix + t.File().substr(0, slash + 1) + file;
  }
  // External streams (docs/PROTOCOL.md, "External streams").
  d.stream_port = static_cast<uint16_t>(t.GetInt("stream_port", 0, 1, 65535));
  if (d.input == "stream" && !t.Has("stream_port"))
    t.Fail("input", "input = \"stream\" needs stream_port = <UDP port>, e.g. 47100");
  if (d.input != "stream" && t.Has("stream_port"))
    t.Fail("stream_port", "is for input = \"stream\", got input = \"" + d.input + "\"");
  d.head_tracking_port = static_cast<uint16_t>(t.GetInt("head_tracking_port", 0, 1, 65535));
  if (d.stream_port != 0 && d.stream_port == d.head_tracking_port)
    t.Fail("head_tracking_port", "must differ from stream_port, both are " + std::to_string(d.stream_port));
  d.stream_address = t.GetString("stream_address", d.stream_address);
  d.stream_timeout_s = t.GetDouble("stream_timeout_s", d.stream_timeout_s, 0.01, 10);
  d.head_tracking_timeout_s = t.GetDouble("head_tracking_timeout_s", d.head_tracking_timeout_s, 0.01, 10);
  // The eye tracker (docs/INPUTS.md "Eye tracker"): Pupil Remote's endpoint, the gaze CSV, the confidence floor.
  d.gaze = t.GetString("gaze", d.gaze);
  if (!d.gaze.empty() && (d.gaze.rfind("tcp://", 0) != 0 || d.gaze.rfind(':') <= 6))
    t.Fail("gaze", "expected Pupil Remote's endpoint \"tcp://HOST:PORT\" (Pupil Capture's default tcp://127.0.0.1:50020), got \"" +
                       d.gaze + "\"");
  d.gaze_path = t.GetString("gaze_path", d.gaze_path);
  if (d.gaze_path.empty()) t.Fail("gaze_path", "expected a file path (\"data/{node}_gaze.csv\"), got \"\"");
  for (size_t at; (at = d.gaze_path.find("{node}")) != std::string::npos;) d.gaze_path.replace(at, 6, d.name);
  d.gaze_min_confidence = t.GetDouble("gaze_min_confidence", d.gaze_min_confidence, 0, 1);
  // CAN (docs/CAN.md): a bus and a mapping file make the seat send its signals; input = "can" also drives it.
  d.can_bus = t.GetString("can_bus", "");
  d.can_map = t.GetString("can_map", "");
  if (d.input == "can" && (d.can_bus.empty() || d.can_map.empty()))
    t.Fail("input", "input = \"can\" needs can_bus = \"udp:127.0.0.1:47001>127.0.0.1:47002\" (or socketcan:, candump:) and "
                    "can_map = \"<mapping>.toml\"");
  if (d.can_bus.empty() != d.can_map.empty())
    t.Fail(d.can_bus.empty() ? "can_map" : "can_bus", "can_bus and can_map go together (the bus, and which signals it carries)");
  // Force feedback (docs/INPUTS.md, "Force feedback"): the wheel's torque from the front tyres.
  for (const char* key : {"force_feedback", "ffb_gain", "ffb_spring", "ffb_damping", "ffb_max_torque"})
    if (!driver && t.Has(key))
      t.Fail(key, "is a driver key: it needs role = \"driver\", got \"" + std::string(protocol::RoleName(d.role)) + "\"");
  d.force_feedback = t.GetBool("force_feedback", d.force_feedback);
  d.ffb_gain = t.GetDouble("ffb_gain", d.ffb_gain, 0, 100);
  d.ffb_spring = t.GetDouble("ffb_spring", d.ffb_spring, 0, 1);
  d.ffb_damping = t.GetDouble("ffb_damping", d.ffb_damping, 0, 1);
  d.ffb_max_torque = t.GetDouble("ffb_max_torque", d.ffb_max_torque, 0, 1);
  if (d.ffb_max_torque <= 0) t.Fail("ffb_max_torque", "expected a fraction of full scale in (0, 1], got 0");
  const auto session_dir = [&] {
    const auto slash = t.File().rfind('/');
    return slash == std::string::npos ? std::string() : t.File().substr(0, slash);
  }();
  if (!d.can_bus.empty()) {
    try {
      can::ParseBusSpec(d.can_bus);
    } catch (const can::BusError& e) {
      t.Fail("can_bus", e.what());
    }
    // Relative files (the mapping, candump logs) are found next to the session file.
    if (d.can_map.front() != '/' && !session_dir.empty()) d.can_map = session_dir + "/" + d.can_map;
    d.can_where = t.Where("can_map") + ": " + t.Path() + ".can_map";
  }
  if (d.input != "can" && t.Has("can_timeout_s"))
    t.Fail("can_timeout_s", "is for input = \"can\", got input = \"" + d.input + "\"");
  d.can_timeout_s = t.GetDouble("can_timeout_s", d.can_timeout_s, 0.01, 10);
  d.input_mapping = t.Sub("input_mapping");
  d.start_s_m = t.GetDouble("start_s_m", d.start_s_m, 0, 1e7);
  d.start_lane = static_cast<int>(t.GetInt("start_lane", d.start_lane, -8, 8));
  if (d.start_lane == 0) t.Fail("start_lane", "expected a lane -8..-1 (right of the reference line) or 1..8 (left), got 0");
  if (t.Has("eye")) {
    const auto e = t.GetDoubleArray("eye", {}, 3, -50, 50);
    d.eye_m = Vec3(e[0], e[1], e[2]);
  }
  d.view_hfov_deg = t.GetDouble("view_hfov_deg", d.view_hfov_deg, 10, 170);
  d.view_width_px = static_cast<uint32_t>(t.GetInt("view_width_px", d.view_width_px, 16, 16384));
  d.view_height_px = static_cast<uint32_t>(t.GetInt("view_height_px", d.view_height_px, 16, 16384));
  d.view_fps = t.GetDouble("view_fps", d.view_fps, 1, 1000);
  d.headless = t.GetBool("headless", d.headless);
  d.hud = t.GetBool("hud", d.hud);
  d.cockpit = t.GetBool("cockpit", d.cockpit);
  d.mirrors = t.GetBool("mirrors", d.mirrors);
  // [[node.mirror]]: changes one of the three mirrors by name, or adds one (docs/INPUTS.md, "Mirrors").
  for (const auto& m : t.TableArray("mirror")) {
    SeatMirrorDef md;
    md.name = m.GetString("name", "");
    if (md.name.empty()) m.Fail("name", "expected the mirror's name (\"interior\", \"left\", \"right\" or a new one), got \"\"");
    for (const auto& other : d.mirror)
      if (other.name == md.name) m.Fail("name", "mirror \"" + md.name + "\" is given twice");
    md.enabled = m.GetBool("enabled", md.enabled);
    // Every key is read, given or not, so an unknown key's message lists them all; only given ones count.
    const auto p = m.GetDoubleArray("position", {}, 3, -50, 50);
    if (m.Has("position")) md.position_m = Vec3(p[0], p[1], p[2]);
    const double yaw = m.GetDouble("yaw_deg", 180, -360, 360), pitch = m.GetDouble("pitch_deg", -1, -89, 89);
    const double hfov = m.GetDouble("hfov_deg", 40, 5, 150);
    if (m.Has("yaw_deg")) md.yaw_deg = yaw;
    if (m.Has("pitch_deg")) md.pitch_deg = pitch;
    if (m.Has("hfov_deg")) md.hfov_deg = hfov;
    const auto r = m.GetDoubleArray("screen", {}, 4, 0, 1);
    if (m.Has("screen")) {
      if (!(r[2] - r[0] >= 0.01 && r[3] - r[1] >= 0.01))
        m.Fail("screen", fmt::format("expected [left, top, right, bottom] with left < right and top < bottom (at least 0.01 "
                                     "apart), got [{:g}, {:g}, {:g}, {:g}]", r[0], r[1], r[2], r[3]));
      md.screen = std::array<double, 4>{r[0], r[1], r[2], r[3]};
    }
    const bool known = md.name == "interior" || md.name == "left" || md.name == "right";
    if (!known && md.enabled && (!md.position_m || !md.yaw_deg || !md.screen))
      m.Fail("name", "a new mirror \"" + md.name + "\" needs position, yaw_deg and screen (the mirrors with defaults are "
                     "\"interior\", \"left\" and \"right\")");
    m.RejectUnknownKeys();
    d.mirror.push_back(std::move(md));
  }
  // [[node.screen]]: the seat's screens by their corners (docs/INPUTS.md, "Screens").
  for (const auto& st : t.TableArray("screen")) {
    SeatScreenDef sd;
    sd.where = st.Where() + ": " + st.Path();
    const char* corner_keys[] = {"lower_left", "lower_right", "upper_left"};
    Vec3* corners[] = {&sd.lower_left_m, &sd.lower_right_m, &sd.upper_left_m};
    for (int c = 0; c < 3; ++c) {
      if (!st.Has(corner_keys[c])) st.Fail(corner_keys[c], "expected the screen corner [x, y, z] in m (vehicle frame), got nothing");
      const auto v = st.GetDoubleArray(corner_keys[c], {}, 3, -50, 50);
      *corners[c] = Vec3(v[0], v[1], v[2]);
    }
    sd.display = static_cast<int>(st.GetInt("display", sd.display, 0, 63));
    sd.fullscreen = st.GetBool("fullscreen", sd.fullscreen);
    sd.width_px = static_cast<uint32_t>(st.GetInt("width_px", sd.width_px, 16, 16384));
    sd.height_px = static_cast<uint32_t>(st.GetInt("height_px", sd.height_px, 16, 16384));
    const auto pos = st.GetDoubleArray("position_px", {}, 2, -65536, 65536);
    if (st.Has("position_px")) {
      if (pos[0] != std::round(pos[0]) || pos[1] != std::round(pos[1]))
        st.Fail("position_px", fmt::format("expected whole pixels [x, y], got [{:g}, {:g}]", pos[0], pos[1]));
      sd.position_px = std::array<int, 2>{static_cast<int>(pos[0]), static_cast<int>(pos[1])};
    }
    sd.main = st.GetBool("main", sd.main);
    // A rectangle: the left edge at right angles to the bottom one within 1 mm (how far upper_left lies off
    // the perpendicular through lower_left), edges of at least 1 cm.
    const Vec3 along = sd.lower_right_m - sd.lower_left_m, side = sd.upper_left_m - sd.lower_left_m;
    if (along.norm() < 0.01)
      st.Fail("lower_right", fmt::format("expected a corner at least 0.01 m from lower_left, got {:.4f} m", along.norm()));
    if (side.norm() < 0.01)
      st.Fail("upper_left", fmt::format("expected a corner at least 0.01 m from lower_left, got {:.4f} m", side.norm()));
    if (const double off = std::abs(side.dot(along.normalized())); off > 1e-3)
      st.Fail("upper_left", fmt::format("expected corners of a rectangle (lower_left -> upper_left at right angles to "
                                        "lower_left -> lower_right within 1 mm), got {:.1f} mm off", off * 1e3));
    // The eye in front of the screen: on the side from which lower_left -> lower_right runs to the right.
    const Vec3 normal = along.cross(side).normalized();
    if (const double dist = (d.eye_m - sd.lower_left_m).dot(normal); dist <= 0.0)
      st.Fail("lower_left", fmt::format("expected the eye [{:g}, {:g}, {:g}] in front of the screen, got it {:.3f} m behind "
                                        "the screen's plane (seen from the eye, lower_left -> lower_right must run to the right)",
                                        d.eye_m.x(), d.eye_m.y(), d.eye_m.z(), -dist));
    st.RejectUnknownKeys();
    d.screen.push_back(std::move(sd));
  }
  {
    int mains = 0;
    for (const auto& sd : d.screen) mains += sd.main ? 1 : 0;
    if (mains > 1) t.Fail("screen", fmt::format("expected at most one screen with main = true, got {}", mains));
  }
  // The seat's sound: on/off and the layers' levels (docs/INPUTS.md, "Sound").
  d.sound = t.GetBool("sound", d.sound);
  d.sound_volume = t.GetDouble("sound_volume", d.sound_volume, 0, 1);
  d.sound_engine = t.GetDouble("sound_engine", d.sound_engine, 0, 1);
  d.sound_tyres = t.GetDouble("sound_tyres", d.sound_tyres, 0, 1);
  d.sound_wind = t.GetDouble("sound_wind", d.sound_wind, 0, 1);
  d.sound_indicator = t.GetDouble("sound_indicator", d.sound_indicator, 0, 1);
  d.engine_cylinders = static_cast<int>(t.GetInt("engine_cylinders", d.engine_cylinders, 1, 16));
  if (auto w = t.Sub("data_write")) d.data_write = ReadDataWriteDef(*w, d.name);
}

// The recorder role's keys (docs/RECORDING.md), refused on any other role like the driver keys.
void ReadRecorderKeys(const Table& t, NodeDef& d) {
  const char* recorder_keys[] = {"path", "overwrite", "streams", "foxglove", "foxglove_hz", "foxglove_cloud_hz", "ros2", "compression"};
  if (d.role != protocol::Role::kRecorder) {
    for (const char* key : recorder_keys)
      if (t.Has(key)) t.Fail(key, "is a recorder key: it needs role = \"recorder\", got \"" +
                                      std::string(protocol::RoleName(d.role)) + "\"");
    return;
  }
  RecorderDef& r = d.recorder;
  if (!t.Has("path"))
    t.Fail("path", "a recorder node needs path = \"<file>.mcap\" (placeholders {session}, {node}, {time}), e.g. "
                   "\"recordings/{session}-{time}.mcap\"");
  r.path = t.GetString("path", "");
  r.where = t.Where("path") + ": " + t.Path() + ".path";
  if (r.path.size() < 6 || r.path.compare(r.path.size() - 5, 5, ".mcap") != 0)
    t.Fail("path", "expected a file name ending in .mcap, got \"" + r.path + "\"");
  // Only the three placeholders: anything else in braces is a typo that would end up in the file name.
  std::string rest = r.path;
  for (const char* p : {"{session}", "{node}", "{time}"})
    for (size_t at; (at = rest.find(p)) != std::string::npos;) rest.erase(at, std::string(p).size());
  if (rest.find_first_of("{}") != std::string::npos)
    t.Fail("path", "the placeholders are {session}, {node} and {time}, got \"" + r.path + "\"");
  r.overwrite = t.GetBool("overwrite", r.overwrite);
  r.streams = t.GetStringArray("streams", r.streams);
  std::set<std::string> seen;
  for (const auto& id : r.streams) {
    if (id.empty()) t.Fail("streams", "expected stream ids (sensor ids, a fusion node's stream id) or [\"*\"], got an empty id");
    if (id == "*" && r.streams.size() > 1)
      t.Fail("streams", "\"*\" (every stream of the session) stands alone, got it with other ids");
    if (!seen.insert(id).second) t.Fail("streams", "\"" + id + "\" is listed twice");
  }
  r.compression = t.GetString("compression", r.compression, {"zstd", "lz4", "none"});
  r.foxglove = t.GetBool("foxglove", r.foxglove);
  r.foxglove_hz = t.GetDouble("foxglove_hz", r.foxglove_hz, 0.1, 100);
  r.foxglove_cloud_hz = t.GetDouble("foxglove_cloud_hz", r.foxglove_cloud_hz, 0.1, 100);
  r.ros2 = t.GetBool("ros2", r.ros2);
}

// A path given as a flat array of x, y pairs in m ("waypoints = [0, 0,  100, 0,  150, 40]"): at least
// `min_points` points, no two consecutive ones the same.
std::vector<Vec3> ReadWaypoints(const Table& t, const std::string& key, size_t min_points) {
  const auto v = t.GetDoubleArray(key, {}, 0, -1e7, 1e7);
  if (v.size() % 2 != 0 || v.size() < 2 * min_points)
    t.Fail(key, "expected at least " + std::to_string(min_points) + " points as a flat array of x, y pairs in m, e.g. "
                "[0, 0,  100, 0,  150, 40], got " + std::to_string(v.size()) + " numbers");
  std::vector<Vec3> out;
  for (size_t i = 0; i + 1 < v.size(); i += 2) {
    const Vec3 p(v[i], v[i + 1], 0);
    if (!out.empty() && (p - out.back()).norm() < 1e-3)
      t.Fail(key, "point " + std::to_string(i / 2) + " (" + fmt::format("{}, {}", v[i], v[i + 1]) +
                      ") repeats the point before it");
    out.push_back(p);
  }
  return out;
}

// The keys of the built parts a session can use (docs/VEHICLES.md): the driver's vehicle model, the
// controller layer, the friction scale, route traffic and pedestrians. Each is refused on a node that
// would ignore it.
void ReadWorldPartKeys(const Table& t, NodeDef& d) {
  const bool driver = d.role == protocol::Role::kDriver;
  const bool traffic = d.role == protocol::Role::kTraffic;
  const bool route = traffic && d.traffic_model == "route";
  const bool walkers = traffic && d.traffic_model == "pedestrians";
  const std::string got = "got role \"" + std::string(protocol::RoleName(d.role)) + "\"" +
                          (traffic ? " with traffic_model = \"" + d.traffic_model + "\"" : "");
  if (t.Has("vehicle_model") && !driver && !route)
    t.Fail("vehicle_model", "is a driver key: it needs role = \"driver\", " + got + " (or a traffic node with traffic_model = \"route\")");
  d.vehicle_model = t.GetString("vehicle_model", d.vehicle_model, {"single_track", "bullet", "fmu"});
  // Route traffic runs the single-track model or one FMU instance per vehicle; the Bullet vehicle is the seat's.
  if (route && d.vehicle_model == "bullet")
    t.Fail("vehicle_model", "route traffic takes \"single_track\" or \"fmu\" (the Bullet vehicle is the driver seat's), got \"bullet\"");
  // vehicle_model = "fmu": the FMU file (read and loaded at start and by platoon check, not here).
  if (t.Has("fmu") && d.vehicle_model != "fmu")
    t.Fail("fmu", "is for vehicle_model = \"fmu\", got vehicle_model = \"" + d.vehicle_model + "\"");
  if (d.vehicle_model == "fmu") {
    if (!t.Has("fmu")) t.Fail("vehicle_model", "vehicle_model = \"fmu\" needs fmu = \"<file>.fmu\" (an FMI 2.0 co-simulation FMU)");
    d.fmu = RelativeToFile(t.File(), t.GetString("fmu", ""));
    if (d.fmu.empty()) t.Fail("fmu", "expected the path of an .fmu file, got \"\"");
    d.fmu_where = t.Where("fmu") + ": " + t.Path() + ".fmu";
  }
  if (d.vehicle_model == "bullet" && d.start_speed_mps > 0)
    t.Fail("start_speed_mps", "the Bullet vehicle (vehicle_model = \"bullet\") starts at rest, got " + fmt::format("{:g}", d.start_speed_mps));
  for (const char* key : {"controller", "tyre_mu"})
    if (t.Has(key) && !driver && !route)
      t.Fail(key, "needs role = \"driver\" or a traffic node with traffic_model = \"route\", " + got);
  if (t.Has("tyre_mu")) d.tyre_mu = t.GetDouble("tyre_mu", 1.0, 0.05, 1.5);
  // The world view's blend of corrections (any role; the role's default when absent).
  if (t.Has("blend_time_s")) d.blend_time_s = t.GetDouble("blend_time_s", 0.0, 0.0, 10.0);
  if (t.Has("blend_speed_mps")) d.blend_speed_mps = t.GetDouble("blend_speed_mps", 0.3, 0.001, 100.0);
  if (auto c = t.Sub("controller")) {
    ControllerDef& k = d.controller;
    k.speed_limit_mps = c->GetDouble("speed_limit_mps", k.speed_limit_mps, 0, 100);
    k.limiter_gain_per_mps = c->GetDouble("limiter_gain_per_mps", k.limiter_gain_per_mps, 0.01, 10);
    k.abs = c->GetBool("abs", k.abs);
    k.abs_utilization = c->GetDouble("abs_utilization", k.abs_utilization, 0.5, 1.0);
    k.abs_min_speed_mps = c->GetDouble("abs_min_speed_mps", k.abs_min_speed_mps, 0, 20);
    c->RejectUnknownKeys();
  }
  if (t.Has("route") && !route) t.Fail("route", "[node.route] needs role = \"traffic\" and traffic_model = \"route\", " + got);
  if (route) {
    const auto r = t.Sub("route");
    if (!r) t.Fail("traffic_model", "traffic_model = \"route\" needs a [node.route] table (waypoints = [x0, y0, x1, y1, ...] or lane = -1 on the session road)");
    RouteDef& k = d.route;
    k.where = r->Where() + ": " + r->Path();
    if (r->Has("waypoints")) {
      for (const char* key : {"lane", "from_s_m", "to_s_m"})
        if (r->Has(key)) r->Fail(key, "is for a route along the session road: give waypoints or lane, not both");
      k.waypoints_m = ReadWaypoints(*r, "waypoints", 2);
    }
    k.lane = static_cast<int>(r->GetInt("lane", k.lane, -8, 8));
    if (k.lane == 0) r->Fail("lane", "expected a lane -8..-1 (right of the reference line) or 1..8 (left), got 0");
    k.from_s_m = r->GetDouble("from_s_m", k.from_s_m, 0, 1e7);
    k.to_s_m = r->GetDouble("to_s_m", k.to_s_m, 0, 1e7);
    if (k.to_s_m > 0 && k.to_s_m <= k.from_s_m)
      r->Fail("to_s_m", "must be > from_s_m (" + fmt::format("{}", k.from_s_m) + "), got " + fmt::format("{}", k.to_s_m));
    k.loop = r->GetBool("loop", k.loop);
    if (k.loop && !k.waypoints_m.empty() && k.waypoints_m.size() < 3) r->Fail("loop", "a closed route needs at least 3 waypoints");
    k.spacing_m = r->GetDouble("spacing_m", k.spacing_m, 5, 1e4);
    k.lookahead_min_m = r->GetDouble("lookahead_min_m", k.lookahead_min_m, 0.5, 100);
    k.lookahead_gain_s = r->GetDouble("lookahead_gain_s", k.lookahead_gain_s, 0, 5);
    r->RejectUnknownKeys();
  }
  const auto walkers_tables = t.TableArray("pedestrian");
  if (!walkers_tables.empty() && !walkers)
    t.Fail("pedestrian", "[[node.pedestrian]] needs role = \"traffic\" and traffic_model = \"pedestrians\", " + got);
  if (walkers && walkers_tables.empty())
    t.Fail("traffic_model", "traffic_model = \"pedestrians\" needs at least one [[node.pedestrian]] (waypoints = [x0, y0, x1, y1, ...])");
  for (const auto& p : walkers_tables) {
    PedestrianDef w;
    w.waypoints_m = ReadWaypoints(p, "waypoints", 2);
    w.speed_mps = p.GetDouble("speed_mps", w.speed_mps, 0, 10);
    w.loop = p.GetBool("loop", w.loop);
    if (w.loop && w.waypoints_m.size() < 3) p.Fail("loop", "a closed path needs at least 3 waypoints");
    w.start_offset_m = p.GetDouble("start_offset_m", w.start_offset_m, 0, 1e6);
    p.RejectUnknownKeys();
    d.pedestrians.push_back(std::move(w));
  }
  // Pedestrians are counted by their tables, not by `vehicles`.
  if (walkers && t.Has("vehicles"))
    t.Fail("vehicles", "a pedestrians node has one person per [[node.pedestrian]] table, not a vehicles count");
  if (walkers && t.Has("speed_mps"))
    t.Fail("speed_mps", "a pedestrians node has no speed of its own: give each [[node.pedestrian]] its speed_mps");
  if (walkers) d.vehicles = static_cast<int>(d.pedestrians.size());
}

NodeDef ReadNodeDef(const Table& t) {
  NodeDef d;
  d.name = t.RequireString("name");
  // The one name rule, the same the server applies to a Join's name.
  if (std::string error = text::CheckName(d.name); !error.empty()) t.Fail("name", error);
  const std::string role = t.GetString("role", "observer", {"observer", "traffic", "driver", "sensor", "fusion", "viewer", "recorder"});
  d.role = protocol::RoleFromName(role);
  d.host = t.GetString("host", d.host);
  d.drift_ppm = t.GetDouble("drift_ppm", d.drift_ppm, -100000, 100000);
  d.status_interval_s = t.GetDouble("status_interval_s", d.status_interval_s, bounds::kStatusIntervalS.min, bounds::kStatusIntervalS.max);
  d.log_level = t.GetString("log_level", d.log_level, kLogLevels);
  d.vehicles = static_cast<int>(t.GetInt("vehicles", d.vehicles, static_cast<int64_t>(bounds::kVehicles.min), static_cast<int64_t>(bounds::kVehicles.max)));
  d.speed_mps = t.GetDouble("speed_mps", d.speed_mps, bounds::kTrafficSpeedMps.min, bounds::kTrafficSpeedMps.max);
  d.module_rate_hz = t.GetDouble("module_rate_hz", d.module_rate_hz, 1, 10000);
  d.monitor_rate_hz = t.GetDouble("monitor_rate_hz", d.monitor_rate_hz, 1, 10000);
  d.traffic_model = t.GetString("traffic_model", d.traffic_model, {"stadium", "road", "network", "route", "pedestrians"});
  d.lane_changes = t.GetBool("lane_changes", d.lane_changes);
  if (t.Has("lane_changes") && !(d.role == protocol::Role::kTraffic && d.traffic_model == "road"))
    t.Fail("lane_changes", "is for traffic nodes with traffic_model = \"road\" (whether their vehicles change lanes)");
  d.lead = t.GetString("lead", d.lead);
  d.lead_gap_m = t.GetDouble("lead_gap_m", d.lead_gap_m, 1, 1000);
  for (const char* key : {"lead", "lead_gap_m"})
    if (t.Has(key) && !(d.role == protocol::Role::kTraffic && d.traffic_model == "road"))
      t.Fail(key, "is for traffic nodes with traffic_model = \"road\" (its first vehicle stays ahead of a driver's car)");
  if (t.Has("lead_gap_m") && d.lead.empty()) t.Fail("lead_gap_m", "needs lead = \"<driver node>\"");
  d.lead_follows_lane = t.GetBool("lead_follows_lane", d.lead_follows_lane);
  if (t.Has("lead_follows_lane") && d.lead.empty()) t.Fail("lead_follows_lane", "needs lead = \"<driver node>\"");
  const std::vector<double> vehicle_lanes = t.GetDoubleArray("vehicle_lanes", {}, 0, -8, 0);
  if (t.Has("vehicle_lanes")) {
    if (!(d.role == protocol::Role::kTraffic && d.traffic_model == "road"))
      t.Fail("vehicle_lanes", "is for traffic nodes with traffic_model = \"road\" (a fixed lane per vehicle)");
    for (double lane : vehicle_lanes) {
      if (lane != std::floor(lane))
        t.Fail("vehicle_lanes", fmt::format("expected whole lanes -8..-1 (right of the reference line) or 0 (free), got {}", lane));
      d.vehicle_lanes.push_back(static_cast<int>(lane));
    }
    if (static_cast<int>(d.vehicle_lanes.size()) > d.vehicles)
      t.Fail("vehicle_lanes", fmt::format("has {} lanes for {} vehicles", d.vehicle_lanes.size(), d.vehicles));
  }
  if (t.Has("vehicle_names")) {
    if (d.role != protocol::Role::kTraffic && d.role != protocol::Role::kDriver)
      t.Fail("vehicle_names", "is for traffic and driver nodes (the names of their vehicles)");
    d.vehicle_names = t.GetStringArray("vehicle_names", {});
    for (const auto& v : d.vehicle_names)  // "": the default name for that index
      if (std::string error = text::CheckName(v); !v.empty() && !error.empty()) t.Fail("vehicle_names", "\"" + v + "\": " + error);
  }
  if (t.Has("track_center")) {
    const auto c = t.GetDoubleArray("track_center", {}, 2, -1e7, 1e7);
    d.track_center_m = Vec3(c[0], c[1], 0);
  }
  d.attach_to = t.GetString("attach_to", d.attach_to);
  d.data_port = static_cast<uint16_t>(t.GetInt("data_port", d.data_port, 0, 65535));
  d.advertise_address = t.GetString("advertise_address", d.advertise_address);
  d.sensors = t.TableArray("sensor");
  d.fusion = t.Sub("fusion");
  if (!d.sensors.empty() && d.role != protocol::Role::kSensor)
    t.Fail("sensor", "[[node.sensor]] entries need role = \"sensor\", got \"" + role + "\"");
  if (d.fusion && d.role != protocol::Role::kFusion)
    t.Fail("fusion", "[node.fusion] needs role = \"fusion\", got \"" + role + "\"");
  ReadDriverKeys(t, d);
  ReadRecorderKeys(t, d);
  ReadWorldPartKeys(t, d);
  if ((d.role == protocol::Role::kSensor || d.role == protocol::Role::kFusion) && d.attach_to.empty())
    t.Fail("attach_to", "a " + role + " node needs attach_to = \"<node name>[:<vehicle index>]\"");
  d.where = t.Where() + ": " + t.Path();
  if (t.Has("key")) d.key = RelativeToFile(t.File(), t.GetString("key", ""));
  if (!d.attach_to.empty()) d.attach_to_where = t.Where("attach_to") + ": " + t.Path() + ".attach_to";
  t.RejectUnknownKeys();
  return d;
}

// [security]: modes, key files (relative to the session file) and the operator names.
SecurityDef ReadSecurityDef(const Table& t) {
  SecurityDef d;
  d.present = true;
  d.where = t.Where() + ": security";
  const std::string mode = t.GetString("mode", "auto", {"auto", "curve", "off"});
  d.mode = mode == "curve" ? SecurityMode::kCurve : mode == "off" ? SecurityMode::kOff : SecurityMode::kAuto;
  for (const char* key : {"server_key", "server_public_key", "clients", "key"})
    if (t.Has(key) && t.GetString(key, "").empty()) t.Fail(key, "expected a path, got an empty string");
  d.server_key = RelativeToFile(t.File(), t.GetString("server_key", ""));
  d.server_public_key = RelativeToFile(t.File(), t.GetString("server_public_key", ""));
  d.clients = RelativeToFile(t.File(), t.GetString("clients", ""));
  d.key = RelativeToFile(t.File(), t.GetString("key", ""));
  d.operators = t.GetStringArray("operators", d.operators);
  for (const auto& name : d.operators)
    if (!transport::ValidKeyName(name))
      t.Fail("operators", "expected client key names (letters, digits, '-', '_', '.'), got \"" + name + "\"");
  d.open_status = t.GetBool("open_status", d.open_status);
  t.RejectUnknownKeys();
  return d;
}

// A number as the session file could write it ("12.5", not std::to_string's "12.500000").
std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// One kind of environment object ([scene.buildings], ...): the preset's values with the keys given.
void ReadEnvironmentKind(const Table& t, road::ObjectKindDef& k) {
  k.enabled = t.GetBool("enabled", k.enabled);
  if (t.Has("density_per_100m")) k.density_left_per_100m = k.density_right_per_100m = t.GetDouble("density_per_100m", 0, 0, 1000);
  k.density_left_per_100m = t.GetDouble("density_left_per_100m", k.density_left_per_100m, 0, 1000);
  k.density_right_per_100m = t.GetDouble("density_right_per_100m", k.density_right_per_100m, 0, 1000);
  const auto lateral = t.GetDoubleArray("lateral_m", {k.lateral_min_m, k.lateral_max_m}, 2, 0, 1000);
  if (lateral[0] > lateral[1])
    t.Fail("lateral_m", "expected [min, max] with min <= max, got [" + FormatNumber(lateral[0]) + ", " +
                            FormatNumber(lateral[1]) + "]");
  k.lateral_min_m = lateral[0];
  k.lateral_max_m = lateral[1];
  const auto lo = t.GetDoubleArray("size_min_m", {k.size_min_m.x(), k.size_min_m.y(), k.size_min_m.z()}, 3, 0.01, 1000);
  const auto hi = t.GetDoubleArray("size_max_m", {k.size_max_m.x(), k.size_max_m.y(), k.size_max_m.z()}, 3, 0.01, 1000);
  for (int i = 0; i < 3; ++i)
    if (lo[i] > hi[i])
      t.Fail("size_max_m", "expected each of length, width, height at least size_min_m's, got " + FormatNumber(hi[i]) +
                               " below " + FormatNumber(lo[i]));
  k.size_min_m = Vec3(lo[0], lo[1], lo[2]);
  k.size_max_m = Vec3(hi[0], hi[1], hi[2]);
  t.RejectUnknownKeys();
}

SceneDef ReadSceneDef(const Table& t) {
  SceneDef d;
  d.ground = t.GetBool("ground", d.ground);
  d.ground_half_size_m = t.GetDouble("ground_half_size_m", d.ground_half_size_m, 1, 1e6);
  d.road_environment = t.GetBool("road_environment", d.road_environment);
  d.environment_preset = t.GetString("environment", d.environment_preset, {"rural", "urban"});
  d.environment = d.environment_preset == "urban" ? road::UrbanEnvironmentDef() : road::DefaultEnvironmentDef();
  const std::pair<const char*, road::ObjectKindDef*> kinds[] = {{"buildings", &d.environment.buildings},
                                                               {"trees", &d.environment.trees},
                                                               {"guard_rails", &d.environment.guard_rails},
                                                               {"street_lights", &d.environment.street_lights}};
  for (const auto& [name, kind] : kinds)
    if (auto k = t.Sub(name)) ReadEnvironmentKind(*k, *kind);
  if (const std::string why = road::ValidateEnvironmentDef(d.environment); !why.empty())
    throw ConfigError(t.Where() + ": scene: " + why);
  d.road_brightness = t.GetDouble("road_brightness", d.road_brightness, bounds::kRoadBrightness.min, bounds::kRoadBrightness.max);
  d.marking_contrast = t.GetDouble("marking_contrast", d.marking_contrast, bounds::kMarkingContrast.min, bounds::kMarkingContrast.max);
  for (const auto& b : t.TableArray("box")) {
    SceneBoxDef box;
    box.id = static_cast<uint32_t>(b.GetInt("id", 0, 1, UINT32_MAX));
    if (!b.Has("id")) b.Fail("id", "is required (a non-zero integer entity id)");
    const auto p = b.GetDoubleArray("position", {0, 0, 0}, 3);
    box.position_m = Vec3(p[0], p[1], p[2]);
    const auto sz = b.GetDoubleArray("size", {1, 1, 1}, 3, 1e-3, 1e4);
    box.size_m = Vec3(sz[0], sz[1], sz[2]);
    box.yaw_rad = b.GetDouble("yaw_deg", 0, -360, 360) * M_PI / 180.0;
    box.material = static_cast<uint32_t>(b.GetInt("material", box.material, 0, 255));
    b.RejectUnknownKeys();
    d.boxes.push_back(box);
  }
  for (const auto& b : t.TableArray("calibration_board")) {
    CalibrationBoardDef board;
    board.where = b.Where() + ": " + b.Path();
    board.camera = b.GetString("camera", board.camera);
    if (b.Has("camera") && board.camera.empty()) b.Fail("camera", "expected a camera sensor's id, got \"\"");
    if (!b.Has("position_m")) b.Fail("position_m", "is required ([x, y, z] of the board's centre, in m)");
    const auto p = b.GetDoubleArray("position_m", {0, 0, 0}, 3, -1e6, 1e6);
    board.position_m = Vec3(p[0], p[1], p[2]);
    const auto rpy = b.GetDoubleArray("rpy_deg", {0, 0, 0}, 3, -360, 360);
    board.rpy_rad = Vec3(rpy[0], rpy[1], rpy[2]) * (M_PI / 180.0);
    const auto sq = b.GetDoubleArray("squares", {9, 7}, 2, 2, 1000);
    if (sq[0] != std::floor(sq[0]) || sq[1] != std::floor(sq[1]))
      b.Fail("squares", "expected whole numbers of squares [columns, rows], got [" + std::to_string(sq[0]) + ", " +
                            std::to_string(sq[1]) + "]");
    board.columns = static_cast<int>(sq[0]);
    board.rows = static_cast<int>(sq[1]);
    board.square_m = b.GetDouble("square_m", board.square_m, 1e-3, 100);
    b.RejectUnknownKeys();
    d.calibration_boards.push_back(board);
  }
  t.RejectUnknownKeys();
  return d;
}

namespace signs_config_detail {

// The sign type names, for the allowed values of type and the *_per_km keys.
std::vector<std::string> SignTypeNames(bool with_blank) {
  std::vector<std::string> out;
  for (int i = 0; i < road::kSignTypeCount; ++i)
    if (with_blank || static_cast<road::SignType>(i) != road::SignType::kBlank)
      out.push_back(road::SignTypeName(static_cast<road::SignType>(i)));
  return out;
}

// [signs]: the generator's frequencies and designs (seed defaults to the road's).
road::SignGeneratorDef ReadSignGenerator(const Table& t, uint64_t road_seed) {
  road::SignGeneratorDef d = road::DefaultSignGeneratorDef();
  d.enabled = t.GetBool("enabled", true);
  d.country = *road::SignCountryFromName(t.GetString("country", "de", {"de", "uk"}));
  d.seed = static_cast<uint64_t>(t.GetInt("seed", static_cast<int64_t>(road_seed), 0));
  for (int i = 0; i < road::kSignTypeCount; ++i) {
    const auto type = static_cast<road::SignType>(i);
    if (type == road::SignType::kBlank) continue;
    d.per_km[i] = t.GetDouble(std::string(road::SignTypeName(type)) + "_per_km", 0, 0, 100);
  }
  d.speed_values = t.GetDoubleArray("speed_values", d.speed_values, 0, 1, 300);
  if (d.speed_values.empty()) t.Fail("speed_values", "expected at least one speed, got []");
  d.gantry_share = t.GetDouble("gantry_share", d.gantry_share, 0, 1);
  d.variable_share = t.GetDouble("variable_share", d.variable_share, 0, 1);
  d.both_directions = t.GetBool("both_directions", d.both_directions);
  d.min_spacing_m = t.GetDouble("min_spacing_m", d.min_spacing_m, 0, 10000);
  d.lateral_m = t.GetDouble("lateral_m", d.lateral_m, 0, 50);
  t.RejectUnknownKeys();
  return d;
}

// One [[sign]]: where it stands and what it says.
road::Sign ReadListedSign(const Table& t, uint32_t id) {
  road::Sign g;
  g.id = id;
  if (!t.Has("s_m")) t.Fail("s_m", "is required (road arc length of the sign, in m)");
  g.s_m = t.GetDouble("s_m", 0, 0, 1e7);
  if (!t.Has("type")) t.Fail("type", "is required (speed_limit, stop, give_way, ...)");
  g.type = *road::SignTypeFromName(t.GetString("type", "", SignTypeNames(true)));
  g.value = t.GetDouble("value", 0, 0, 65535);
  if (road::SignHasValue(g.type) && g.type != road::SignType::kDirection && !(g.value > 0))
    t.Fail("value", std::string("expected the number of the ") + road::SignTypeName(g.type) +
                        " sign (e.g. 50), got " + (t.Has("value") ? fmt::format("{}", g.value) : "none"));
  if (g.type == road::SignType::kSpeedLimit && g.value > 300)
    t.Fail("value", fmt::format("expected a speed in (0, 300] in the country's unit, got {}", g.value));
  g.country = *road::SignCountryFromName(t.GetString("country", "de", {"de", "uk"}));
  g.side = t.GetString("side", "right", {"right", "left"}) == "left" ? 1 : -1;
  // Right-hand traffic: a sign on the right is for traffic towards +s, one on the left for the other way.
  g.direction = static_cast<int>(t.GetInt("direction", g.side > 0 ? -1 : 1, -1, 1));
  if (g.direction == 0) t.Fail("direction", "expected +1 (traffic towards +s) or -1, got 0");
  g.mount = t.GetString("mount", "post", {"post", "gantry"}) == "gantry" ? road::SignMount::kGantry : road::SignMount::kPost;
  g.variable = t.GetBool("variable", g.variable);
  g.lateral_m = t.GetDouble("lateral_m", g.lateral_m, 0, 50);
  g.size_m = t.GetDouble("size_m", g.mount == road::SignMount::kGantry ? 1.2 : g.size_m, 0.2, 10);
  g.height_m = t.GetDouble("height_m", g.mount == road::SignMount::kGantry ? 6.0 : g.height_m, 0.3, 20);
  t.RejectUnknownKeys();
  return g;
}

}  // namespace signs_config_detail

SessionDef ReadSession(const Table& root) {
  SessionDef s;
  s.file = root.File();
  if (auto t = root.Sub("session")) {
    s.name = t->GetString("name", s.name);
    if (std::string error = text::CheckName(s.name); !error.empty()) t->Fail("name", error);
    s.server_host = t->GetString("server_host", s.server_host);
    s.step.lockstep = t->GetString("mode", "realtime", {"realtime", "lockstep"}) == "lockstep";
    s.step.step_hz = t->GetDouble("step_hz", s.step.step_hz, 1, 10000);
    s.step.deadline_s = t->GetDouble("step_deadline_s", s.step.deadline_s, 0.01, 3600);
    s.step.drop_late = t->GetString("late_policy", "wait", {"wait", "drop"}) == "drop";
    s.step.end_s = t->GetDouble("end_s", s.step.end_s, 0, 1e7);
    t->RejectUnknownKeys();
  }
  if (auto t = root.Sub("server")) s.server = ReadServerDef(*t);
  if (auto t = root.Sub("clock")) s.clock = ReadClockDef(*t);
  if (auto t = root.Sub("faults")) s.faults = ReadFaultDef(*t);
  if (auto t = root.Sub("scene")) s.scene = ReadSceneDef(*t);
  if (auto t = root.Sub("road")) {
    s.has_road = true;
    RoadSessionDef& r = s.road;
    r.file = t->GetString("file", r.file);
    r.where = t->Where("file") + ": " + (t->Has("file") ? "road.file" : "road");
    // A relative road file is found next to the session file, wherever the process runs.
    if (!r.file.empty() && r.file.front() != '/') {
      const auto slash = s.file.rfind('/');
      if (slash != std::string::npos) r.file = s.file.substr(0, slash + 1) + r.file;
    }
    r.road_id = static_cast<int>(t->GetInt("road_id", r.road_id, 0));
    r.generate_length_m = t->GetDouble("generate_length_m", r.generate_length_m, 100, 1e6);
    r.seed = static_cast<uint64_t>(t->GetInt("seed", static_cast<int64_t>(r.seed), 0));
    r.lanes = static_cast<int>(t->GetInt("lanes", r.lanes, 1, 8));
    r.oncoming_lanes = static_cast<int>(t->GetInt("oncoming_lanes", r.oncoming_lanes, 0, 8));
    r.lane_width_m = t->GetDouble("lane_width_m", r.lane_width_m, 2.0, 6.0);
    r.straight_share = t->GetDouble("straight_share", r.straight_share, 0.0, 1.0);
    auto range = [&](const char* key, double& lo, double& hi, double min, double max) {
      const auto v = t->GetDoubleArray(key, {lo, hi}, 2, min, max);
      if (v[0] > v[1])
        t->Fail(key, "expected [min, max] with min <= max, got [" + FormatNumber(v[0]) + ", " + FormatNumber(v[1]) + "]");
      lo = v[0];
      hi = v[1];
    };
    range("straight_length_m", r.straight_length_min_m, r.straight_length_max_m, 1.0, 1e5);
    range("curve_length_m", r.curve_length_min_m, r.curve_length_max_m, 1.0, 1e5);
    range("curve_radius_m", r.curve_radius_min_m, r.curve_radius_max_m, 5.0, 1e6);
    r.curvature_shape = t->GetDouble("curvature_shape", r.curvature_shape, 0.1, 10.0);
    r.left_turn_share = t->GetDouble("left_turn_share", r.left_turn_share, 0.0, 1.0);
    r.transition_min_length_m = t->GetDouble("transition_min_length_m", r.transition_min_length_m, 1.0, 1e4);
    r.speed_limit_kmh = t->GetDouble("speed_limit_kmh", r.speed_limit_kmh, 0, 500);
    r.endless = t->GetBool("endless", r.endless);
    r.ahead_m = t->GetDouble("ahead_m", r.ahead_m, 500, 1e5);
    r.behind_m = t->GetDouble("behind_m", r.behind_m, 200, 1e5);
    if (r.endless && !r.file.empty())
      throw ConfigError(t->Where("endless") + ": road.endless: expected a generated road (no road.file), got file " +
                        r.file);
    t->RejectUnknownKeys();
  }
  if (auto t = root.Sub("signs")) s.sign_generator = signs_config_detail::ReadSignGenerator(*t, s.road.seed);
  for (const auto& t : root.TableArray("sign"))
    s.signs.push_back(signs_config_detail::ReadListedSign(t, static_cast<uint32_t>(s.signs.size() + 1)));
  std::set<std::string> names, vehicle_names;
  for (const auto& t : root.TableArray("node")) {
    NodeDef n = ReadNodeDef(t);
    if (!names.insert(n.name).second) t.Fail("name", "duplicate node name \"" + n.name + "\"");
    if (n.role == protocol::Role::kDriver && n.vehicle_names.size() > 1)
      t.Fail("vehicle_names", "a driver node drives one vehicle: expected one name, got " + std::to_string(n.vehicle_names.size()));
    if (n.role == protocol::Role::kTraffic && n.vehicle_names.size() > static_cast<size_t>(n.vehicles))
      t.Fail("vehicle_names", "expected at most vehicles = " + std::to_string(n.vehicles) + " names, got " +
                                  std::to_string(n.vehicle_names.size()));
    for (const auto& v : n.vehicle_names)
      if (!v.empty() && !vehicle_names.insert(v).second) t.Fail("vehicle_names", "duplicate vehicle name \"" + v + "\"");
    s.nodes.push_back(std::move(n));
  }
  if (auto t = root.Sub("markers")) {
    // The marker stream's endpoint: "tcp://HOST:PORT" (a port, or * for any) or "ipc://PATH".
    s.markers_publish = t->GetString("publish", s.markers_publish);
    const std::string& e = s.markers_publish;
    const auto colon = e.rfind(':');
    const bool tcp = e.rfind("tcp://", 0) == 0 && colon > 6 && colon + 1 < e.size();
    if (!e.empty() && !tcp && !(e.rfind("ipc://", 0) == 0 && e.size() > 6))
      t->Fail("publish", "expected a ZeroMQ endpoint \"tcp://HOST:PORT\" or \"ipc://PATH\", got \"" + e + "\"");
    t->RejectUnknownKeys();
  }
  if (auto t = root.Sub("light")) s.conditions.light = ReadLight(*t);
  else world::UpdateDerived(s.conditions.light);
  if (auto t = root.Sub("weather")) s.conditions.weather = ReadWeather(*t);
  s.conditions.surface = world::SurfaceConditions{s.scene.road_brightness, s.scene.marking_contrast};
  s.events = ReadEvents(root);
  // [scenario] file = "x.xosc": its entities and storyboard become nodes and events (docs/SCENARIOS.md).
  if (auto t = root.Sub("scenario")) scenario::ApplyScenarioTable(s, *t);
  s.variators = ReadVariators(root);
  if (auto t = root.Sub("security")) s.security = ReadSecurityDef(*t);
  else s.security.where = s.file + ": security";
  root.RejectUnknownKeys();
  return s;
}

}  // namespace

std::vector<NodeNaming> SessionNaming(const SessionDef& session) {
  std::vector<NodeNaming> out;
  for (const auto& n : session.nodes)
    out.push_back(NodeNaming{n.name, n.role == protocol::Role::kDriver, n.vehicle_names});
  return out;
}

clock::ClockDef ReadClockDef(const Table& t) {
  clock::ClockDef d = clock::DefaultClockDef();
  d.max_slew_ppm = t.GetDouble("max_slew_ppm", d.max_slew_ppm, 1, 100000);
  d.sync_rate_hz = t.GetDouble("sync_rate_hz", d.sync_rate_hz, 0.1, 1000);
  d.window_s = t.GetDouble("window_s", d.window_s, 0.5, 3600);
  d.best_fraction = t.GetDouble("best_fraction", d.best_fraction, 0.01, 1);
  d.correction_time_s = t.GetDouble("correction_time_s", d.correction_time_s, 0.01, 3600);
  d.min_samples_to_set = static_cast<int>(t.GetInt("min_samples_to_set", d.min_samples_to_set, 1, 1000));
  d.min_fit_span_s = t.GetDouble("min_fit_span_s", d.min_fit_span_s, 0, 3600);
  d.delay_weight_floor_us = t.GetDouble("delay_weight_floor_us", d.delay_weight_floor_us, 0.001, 1e6);
  t.RejectUnknownKeys();
  return d;
}

transport::FaultDef ReadFaultDef(const Table& t) {
  transport::FaultDef d;
  d.drop_probability = t.GetDouble("drop", d.drop_probability, bounds::kProbability.min, bounds::kProbability.max);
  d.duplicate_probability = t.GetDouble("duplicate", d.duplicate_probability, bounds::kProbability.min, bounds::kProbability.max);
  d.reorder_probability = t.GetDouble("reorder", d.reorder_probability, bounds::kReorderFraction.min, bounds::kReorderFraction.max);
  d.delay_ms = t.GetDouble("delay_ms", d.delay_ms, bounds::kFaultDelayMs.min, bounds::kFaultDelayMs.max);
  d.jitter_ms = t.GetDouble("jitter_ms", d.jitter_ms, bounds::kFaultDelayMs.min, bounds::kFaultDelayMs.max);
  d.burst_every_s = t.GetDouble("burst_every_s", d.burst_every_s, bounds::kBurstEveryS.min, bounds::kBurstEveryS.max);
  d.burst_length_ms = t.GetDouble("burst_length_ms", d.burst_length_ms, bounds::kBurstLengthMs.min, bounds::kBurstLengthMs.max);
  d.seed = static_cast<uint64_t>(t.GetInt("seed", static_cast<int64_t>(d.seed), 0));
  if (auto err = transport::ValidateFaultDef(d); !err.empty()) t.Fail("", err);
  t.RejectUnknownKeys();
  return d;
}

const NodeDef* SessionDef::FindNode(const std::string& node_name) const {
  for (const auto& n : nodes)
    if (n.name == node_name) return &n;
  return nullptr;
}

namespace {

// attach_to = "<node name>[:<vehicle index>]" must name a node of this session that drives vehicles,
// and an index it has: otherwise the sensors would wait for a vehicle that never comes.
void CheckAttachTo(const SessionDef& s, const NodeDef& n) {
  auto fail = [&](const std::string& message) { throw ConfigError(n.attach_to_where + ": " + message); };
  std::string name = n.attach_to;
  long index = 0;
  if (!s.FindNode(name)) {
    const auto colon = name.rfind(':');
    if (colon != std::string::npos) {
      const std::string idx = name.substr(colon + 1);
      char* end = nullptr;
      index = std::strtol(idx.c_str(), &end, 10);
      if (idx.empty() || *end != '\0' || idx.find_first_not_of("0123456789") != std::string::npos || index > 65535)
        fail("expected \"<node name>[:<vehicle index 0..65535>]\", got \"" + n.attach_to + "\"");
      name = name.substr(0, colon);
    }
  }
  const NodeDef* target = s.FindNode(name);
  if (!target) {
    std::string known;
    for (const auto& other : s.nodes)
      if (other.role == protocol::Role::kTraffic || other.role == protocol::Role::kDriver)
        known += (known.empty() ? "" : ", ") + other.name;
    fail("no node named \"" + name + "\" in this session (nodes with vehicles: " + (known.empty() ? "none" : known) + ")");
  }
  if (target->role != protocol::Role::kTraffic && target->role != protocol::Role::kDriver)
    fail("node \"" + name + "\" has role " + std::string(protocol::RoleName(target->role)) +
         ", which drives no vehicle (expected a traffic or driver node)");
  const long count = target->role == protocol::Role::kDriver ? 1 : target->vehicles;
  if (index >= count)
    fail("node \"" + name + "\" drives " + std::to_string(count) + " vehicle(s), so index " + std::to_string(index) +
         " does not exist");
}

// A recorder refuses to overwrite a file (unless overwrite = true), and two recorders on one PC must not
// share a file: both are known before anything starts when the path has no {time}.
void CheckRecorderPath(const SessionDef& s, const NodeDef& n) {
  const RecorderDef& r = n.recorder;
  for (const auto& other : s.nodes) {
    if (&other == &n) break;
    if (other.role == protocol::Role::kRecorder && other.host == n.host && other.recorder.path == r.path &&
        r.path.find("{node}") == std::string::npos)
      throw ConfigError(r.where + ": recorder \"" + other.name + "\" on the same host writes the same file (\"" +
                        r.path + "\"); give each recorder its own path, or put {node} in it");
  }
  if (r.overwrite || r.path.find("{time}") != std::string::npos) return;
  const std::string path = RecordingPath(r, s.name, n.name, 0);
  struct stat st{};
  if (stat(path.c_str(), &st) == 0)
    throw ConfigError(r.where + ": " + path + " exists; the recorder does not overwrite a recording: set overwrite = true "
                      "to replace it, or put {time} in the path");
}

// A route must be drivable: a lane of the session road that exists (or waypoints), and room on an open
// route for every vehicle at its spacing.
void CheckRoute(const SessionDef& s, const NodeDef& n) {
  const RouteDef& r = n.route;
  double length = 0;
  if (!r.waypoints_m.empty()) {
    for (size_t i = 1; i < r.waypoints_m.size(); ++i) length += (r.waypoints_m[i] - r.waypoints_m[i - 1]).norm();
    if (r.loop) length += (r.waypoints_m.front() - r.waypoints_m.back()).norm();
  } else {
    if (!s.has_road)
      throw ConfigError(r.where + ": a route without waypoints follows a lane of the session road, but the session has no [road]");
    const road::Road road = road::SessionRoad(s.road);
    const int lanes = r.lane > 0 ? road.LanesLeft() : road.LanesRight();
    if (std::abs(r.lane) > lanes)
      throw ConfigError(r.where + ".lane: lane " + std::to_string(r.lane) + " is not on the road (it has " +
                        std::to_string(road.LanesRight()) + " lanes right and " + std::to_string(road.LanesLeft()) + " left)");
    const double to = r.to_s_m > 0 ? r.to_s_m : road.Length();
    if (to > road.Length() + 1e-6 || r.from_s_m >= to)
      throw ConfigError(r.where + ": from_s_m .. to_s_m (" + fmt::format("{:.1f} .. {:.1f}", r.from_s_m, to) +
                        " m) must lie on the road (0 .. " + fmt::format("{:.1f}", road.Length()) + " m)");
    length = to - r.from_s_m;
    // A closed route along a lane: the lane must come back to where it starts (a circuit).
    const double gap = (road.LaneCenter(to, r.lane) - road.LaneCenter(r.from_s_m, r.lane)).head<2>().norm();
    if (r.loop && gap > 1.0)
      throw ConfigError(r.where + ".loop: lane " + std::to_string(r.lane) + " from s " + fmt::format("{:.1f}", r.from_s_m) +
                        " to " + fmt::format("{:.1f}", to) + " m ends " + fmt::format("{:.1f}", gap) +
                        " m from where it starts, so it is no closed route (loop = true needs a circuit)");
  }
  const double needed = (n.vehicles - 1) * r.spacing_m;
  if (!r.loop && needed >= length)
    throw ConfigError(n.where + ": " + std::to_string(n.vehicles) + " vehicles " + fmt::format("{:g}", r.spacing_m) +
                      " m apart need " + fmt::format("{:.0f}", needed) + " m, but the route is " + fmt::format("{:.0f}", length) +
                      " m long (fewer vehicles, a smaller route.spacing_m, or a longer route)");
  if (r.loop && n.vehicles * r.spacing_m > length)
    throw ConfigError(n.where + ": " + std::to_string(n.vehicles) + " vehicles " + fmt::format("{:g}", r.spacing_m) +
                      " m apart do not fit on the closed route (" + fmt::format("{:.0f}", length) + " m)");
}

}  // namespace

std::string RecordingPath(const RecorderDef& def, const std::string& session_name, const std::string& node_name,
                          int64_t start_unix_s) {
  // Names become file-name safe; the time is local, as people read it on the lab PC.
  auto safe = [](std::string v) {
    for (char& c : v)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    return v;
  };
  const std::time_t t = static_cast<std::time_t>(start_unix_s);
  std::tm local{};
  localtime_r(&t, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string out = def.path;
  const std::pair<std::string, std::string> repl[] = {{"{session}", safe(session_name)}, {"{node}", safe(node_name)}, {"{time}", stamp}};
  for (const auto& [key, value] : repl)
    for (size_t at; (at = out.find(key)) != std::string::npos;) out.replace(at, key.size(), value);
  return out;
}

namespace {

// Every [[scene.calibration_board]] camera names a camera sensor of the session.
void CheckBoardCameras(const SessionDef& session) {
  std::vector<std::string> cameras;
  for (const auto& n : session.nodes)
    for (const auto& t : n.sensors)
      if (t.Has("id") && t.Has("type") && t.GetString("type", "") == "camera") cameras.push_back(t.GetString("id", ""));
  for (const auto& b : session.scene.calibration_boards) {
    if (b.camera.empty() || std::find(cameras.begin(), cameras.end(), b.camera) != cameras.end()) continue;
    std::string known;
    for (const auto& c : cameras) known += (known.empty() ? "\"" : ", \"") + c + "\"";
    throw ConfigError(b.where + ".camera: expected the id of a camera sensor (" +
                      (known.empty() ? std::string("the session has none") : known) + "), got \"" + b.camera + "\"");
  }
}

}  // namespace

void ValidateSession(const SessionDef& session) {
  for (const auto& n : session.nodes) {
    // What the role's module would refuse at start.
    if (n.role == protocol::Role::kSensor && n.sensors.empty())
      throw ConfigError(n.where + ": a sensor node needs at least one [[node.sensor]] (docs/SENSORS.md)");
    if (n.role == protocol::Role::kFusion && !n.fusion)
      throw ConfigError(n.where + ": a fusion node needs a [node.fusion] table (docs/FUSION.md)");
    if (!n.attach_to.empty()) CheckAttachTo(session, n);
    if (n.role == protocol::Role::kRecorder) CheckRecorderPath(session, n);
  }
  ValidateEvents(session);
  ValidateVariators(session);
  ValidateSecurity(session);
  CheckBoardCameras(session);
  // The road every road user loads at start: a missing or unreadable file, a bad value in it and a
  // road_id it lacks all fail here, with the road file's own file:line:key.
  if (session.has_road) {
    try {
      (void)road::SessionRoad(session.road);
    } catch (const ConfigError& e) {
      throw ConfigError((session.road.where.empty() ? session.file + ": road" : session.road.where) + ": " + e.what());
    }
  }
  for (const auto& n : session.nodes)
    if (!n.lead.empty()) {
      const NodeDef* d = session.FindNode(n.lead);
      if (!d || d->role != protocol::Role::kDriver) {
        std::string drivers;
        for (const auto& o : session.nodes)
          if (o.role == protocol::Role::kDriver) drivers += (drivers.empty() ? "" : ", ") + o.name;
        throw ConfigError(n.where + ".lead: expected the name of a driver node (" + (drivers.empty() ? "none here" : drivers) +
                          "), got \"" + n.lead + "\"");
      }
    }
  // Fixed lanes of road traffic: driving lanes of the session road.
  for (const auto& n : session.nodes) {
    if (n.vehicle_lanes.empty() || !session.has_road) continue;
    const int right = session.road.endless ? static_cast<int>(road::SessionEndlessRoadDef(session.road).generator.layout.lane_widths_right_m.size())
                                           : road::SessionRoad(session.road).LanesRight();
    for (int lane : n.vehicle_lanes)
      if (lane < -right)
        throw ConfigError(n.where + ".vehicle_lanes: lane " + std::to_string(lane) + " is not a driving lane of the road (it has " +
                          std::to_string(right) + " lanes right of the reference line, -1.." + std::to_string(-right) + ")");
  }
  // Routes after the road, which a route along a lane loads.
  for (const auto& n : session.nodes)
    if (n.role == protocol::Role::kTraffic && n.traffic_model == "route") CheckRoute(session, n);
  // Network traffic drives the road file's lanes and junctions.
  for (const auto& n : session.nodes)
    if (n.role == protocol::Role::kTraffic && n.traffic_model == "network" && (!session.has_road || session.road.file.empty() || session.road.endless))
      throw ConfigError(n.where + ".traffic_model: \"network\" drives the roads and junctions of a road file: it needs "
                        "[road] file = \"<map>.xodr\" (or a .toml road file), got " +
                        (session.has_road ? std::string("a generated road") : std::string("no [road]")));
}

SessionDef LoadSession(const std::string& path) { return ReadSession(Table::ParseFile(path)); }

SessionDef LoadSessionText(const std::string& text, const std::string& source_name) {
  return ReadSession(Table::ParseText(text, source_name));
}

void SetControlPort(ServerDef& server, int control_port) {
  const int base = control_port;
  const auto port = [&](int k) { return static_cast<uint16_t>(base == 0 ? 0 : base + k); };
  server.control_port = port(0);
  server.time_port = port(1);
  server.world_port = port(2);
  server.state_port = port(3);
}

// --- [security] -----------------------------------------------------------------------------------

bool IsLoopbackAddress(const std::string& address) {
  return address == "localhost" || address == "::1" || address == "[::1]" || address.rfind("127.", 0) == 0;
}

bool CurveOn(const SessionDef& session) {
  switch (session.security.mode) {
    case SecurityMode::kCurve: return true;
    case SecurityMode::kOff: return false;
    case SecurityMode::kAuto: return !IsLoopbackAddress(session.server.bind_address);
  }
  return true;
}

std::string SecuritySummary(const SessionDef& session) {
  const std::string& bind = session.server.bind_address;
  if (CurveOn(session))
    return "CURVE encryption and authentication on (" +
           std::string(session.security.mode == SecurityMode::kCurve ? "[security] mode = \"curve\""
                                                                     : "the server binds " + bind + ", beyond loopback") +
           "): only clients with a key in " + session.security.clients + " may connect";
  return "authentication is OFF: the server binds " + bind +
         " (loopback) only, so only processes on this PC can connect, and every one of them may steer the session; "
         "that is safe on one PC only (docs/DEPLOYMENT.md \"Keys and a classroom\")";
}

std::string NodeKeyFile(const SessionDef& session, const NodeDef& node) {
  return node.key.empty() ? session.security.key : node.key;
}

namespace {

ConfigError KeyConfigError(const SessionDef& s, const std::string& key, const transport::KeyError& e) {
  return ConfigError(s.security.where + "." + key + ": " + e.what());
}

}  // namespace

ServerCurve LoadServerCurve(const SessionDef& s) {
  ServerCurve out;
  out.socket.server = true;
  try {
    out.socket.secret_key = transport::ReadKeyFile(s.security.server_key);
    out.socket.public_key = transport::PublicKeyOf(out.socket.secret_key);
  } catch (const transport::KeyError& e) {
    throw KeyConfigError(s, "server_key", e);
  }
  try {
    out.authorised = transport::ReadAuthorisedKeys(s.security.clients);
  } catch (const transport::KeyError& e) {
    throw KeyConfigError(s, "clients", e);
  }
  return out;
}

std::optional<transport::CurveDef> LoadClientCurve(const SessionDef& s, const std::string& key_file) {
  if (!CurveOn(s)) return std::nullopt;
  const std::string file = key_file.empty() ? s.security.key : key_file;
  if (file.empty())
    throw ConfigError(s.security.where + ".key: CURVE is on and this client has no key: set key = \"<name>.key_secret\" in "
                      "[security] (or in its [[node]]), or pass --key (make one with `platoon keys add DIR NAME`)");
  transport::CurveDef c;
  try {
    c.secret_key = transport::ReadKeyFile(file);
    c.public_key = transport::PublicKeyOf(c.secret_key);
  } catch (const transport::KeyError& e) {
    throw KeyConfigError(s, "key", e);
  }
  try {
    c.server_key = transport::ReadKeyFile(s.security.server_public_key);
  } catch (const transport::KeyError& e) {
    throw KeyConfigError(s, "server_public_key", e);
  }
  return c;
}

void ValidateSecurity(const SessionDef& s) {
  const SecurityDef& sec = s.security;
  const std::string& bind = s.server.bind_address;
  const std::string fix = "make keys with `platoon keys new keys --clients pc1,pc2,teacher` and paste the [security] "
                          "table it prints (docs/DEPLOYMENT.md \"Keys and a classroom\")";
  if (sec.mode == SecurityMode::kOff && !IsLoopbackAddress(bind))
    throw ConfigError(sec.where + ".mode: \"off\" is only for a server that binds loopback (127.0.0.1), but bind_address = \"" +
                      bind + "\" lets other PCs connect, which needs CURVE; set mode = \"auto\" and " + fix);
  if (!CurveOn(s)) return;
  if (!transport::CurveAvailable())
    throw ConfigError(sec.where + ": CURVE is on, but this libzmq was built without it (install Debian's libzmq5)");
  const std::string why = sec.mode == SecurityMode::kCurve ? "mode = \"curve\"" : "the server binds \"" + bind + "\", beyond loopback,";
  std::string missing;
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"server_key", &sec.server_key},
                                   {"server_public_key", &sec.server_public_key},
                                   {"clients", &sec.clients}})
    if (value->empty()) missing += (missing.empty() ? "" : ", ") + std::string(key);
  if (!missing.empty())
    throw ConfigError(sec.where + ": " + why + " so CURVE authentication is on, and [security] lacks " + missing + ": " + fix);
  for (const auto& n : s.nodes)
    if (NodeKeyFile(s, n).empty())
      throw ConfigError(n.where + ": CURVE is on and node \"" + n.name + "\" has no client key: set key = \"<file>.key_secret\" "
                        "in [security] (this PC's key) or in the [[node]] (make one with `platoon keys add DIR " + n.name + "`)");
  // The key files are on some PCs only (the server's secret on the server PC): check those present here.
  auto check = [&](const std::string& key, const std::string& path) {
    struct stat st{};
    if (path.empty() || stat(path.c_str(), &st) != 0) return;
    try {
      (void)transport::ReadKeyFile(path);
    } catch (const transport::KeyError& e) {
      throw KeyConfigError(s, key, e);
    }
  };
  check("server_key", sec.server_key);
  check("server_public_key", sec.server_public_key);
  check("key", sec.key);
  for (const auto& n : s.nodes)
    if (!n.key.empty()) check("key of node " + n.name, n.key);
  struct stat st{};
  if (stat(sec.clients.c_str(), &st) == 0) {
    try {
      (void)transport::ReadAuthorisedKeys(sec.clients);
    } catch (const transport::KeyError& e) {
      throw KeyConfigError(s, "clients", e);
    }
  }
}

}  // namespace platoon::config
