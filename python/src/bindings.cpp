// platoon._platoon: the Python package's compiled core (docs/EXPERIMENTS.md, "Python"). A Session is a
// session::SessionClient in a session::ClientLink loop on a background thread, as platoon ctl and the
// viewer use them; messages go through the one codec (protocol::Encode/Decode). Logs are read through
// session_log::Read. Everything that waits releases the GIL; the client is guarded by one mutex.
#include "platoon/clock/oscillator.hpp"
#include "platoon/data/drive_metrics.hpp"
#include "platoon/data/standard_tasks.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/ros2_bag.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/discovery.hpp"
#include "platoon/session/operator_token.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/text/name_rule.hpp"
#include "platoon/transport/channel.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace platoon::python {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::EntityKind;
using protocol::SessionControl;
using protocol::SessionPhase;

/// Replies and events held for Python at most; older ones are dropped first.
constexpr size_t kMaxReplies = session::kMaxKeptReplies;
constexpr size_t kMaxEvents = session::kMaxKeptEvents;
/// Entities this client publishes, and own entities echoed by the server, at most.
constexpr size_t kMaxOwned = 10000;

/// The server refused a parameter request, a marker or a session command (its message is the reason).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// No answer in time.
struct Timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* kKindNames[] = {"unknown", "car", "truck", "motorcycle", "bicycle", "pedestrian", "static_object"};

EntityKind KindFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kKindNames); ++i)
    if (name == kKindNames[i]) return static_cast<EntityKind>(i);
  std::string known;
  for (const char* k : kKindNames) known += (known.empty() ? "" : ", ") + std::string(k);
  throw py::value_error("kind: unknown entity kind \"" + name + "\" (expected one of " + known + ")");
}

/// Heading about z of a body-to-world rotation, in rad.
double YawOf(const Quat& q) {
  return std::atan2(2.0 * (q.w() * q.z() + q.x() * q.y()), 1.0 - 2.0 * (q.y() * q.y() + q.z() * q.z()));
}

int64_t SToNsChecked(double s, const char* what) {
  if (!std::isfinite(s)) throw py::value_error(std::string(what) + ": must be finite");
  return SToNs(s);
}

Vec3 ToVec3(const std::vector<double>& v, const char* what) {
  if (v.size() != 3) throw py::value_error(std::string(what) + ": expected 3 numbers (x, y, z), got " + std::to_string(v.size()));
  for (double x : v)
    if (!std::isfinite(x)) throw py::value_error(std::string(what) + ": every number must be finite");
  return Vec3(v[0], v[1], v[2]);
}

py::dict ParamDict(const protocol::Parameter& p) {
  py::dict d;
  d["path"] = p.path;
  d["value"] = p.value;
  d["writable"] = p.writable;
  d["description"] = p.description;
  d["type"] = p.type;
  d["unit"] = p.unit;
  d["min"] = p.min;
  d["max"] = p.max;
  return d;
}

py::dict EventDict(const protocol::LoggedEvent& e) {
  py::dict d;
  d["sequence"] = e.sequence;
  d["sim_time"] = NsToS(e.sim_time_ns);
  d["sim_time_ns"] = e.sim_time_ns;
  d["kind"] = std::string(protocol::EventKindName(e.kind));
  d["source"] = e.source;
  d["text"] = e.text;
  d["detail"] = e.detail;
  d["target_node"] = e.target_node;
  d["entity_id"] = e.entity_id;
  return d;
}

template <class T>
py::array_t<T> Column(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

py::array_t<double> Rows3(const std::vector<double>& flat) {
  const auto n = static_cast<py::ssize_t>(flat.size() / 3);
  py::array_t<double> a({n, py::ssize_t{3}});
  std::copy(flat.begin(), flat.end(), a.mutable_data());
  return a;
}

/// Clouds (PointCloud or FusedCloud) with sim time in [from_ns, to_ns] as columns: what read_clouds() (from
/// a log) and Session.clouds() (live) hand to Python. Add needs no GIL; Dict does.
struct CloudColumns {
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
  std::vector<int64_t> stamps;
  std::vector<uint64_t> entities;
  std::vector<uint8_t> fused;
  std::vector<uint32_t> counts;
  std::vector<double> positions, orientations;
  std::string points;
  uint64_t unreadable = 0;  // clouds whose records do not fit their count and stride

  static bool IsCloud(const protocol::Message& m) {
    return std::holds_alternative<protocol::PointCloud>(m) || std::holds_alternative<protocol::FusedCloud>(m);
  }
  void Add(const protocol::Message& m) {
    const auto* pc = std::get_if<protocol::PointCloud>(&m);
    const auto* fc = std::get_if<protocol::FusedCloud>(&m);
    if (!pc && !fc) return;
    const int64_t stamp = pc ? pc->header.stamp_ns : fc->reference_ns;
    if (stamp < from_ns || stamp > to_ns) return;
    const std::string& blob = pc ? pc->points : fc->points;
    const uint32_t n = pc ? pc->point_count : fc->point_count;
    const uint16_t stride = pc ? pc->point_stride : fc->point_stride;
    if (!PointRecordsFit(blob, n, stride)) {
      ++unreadable;
      return;
    }
    // Records of a wider stride are cut to the record's 36 bytes.
    if (stride == point_record::kStride) {
      points.append(blob.data(), static_cast<size_t>(n) * stride);
    } else {
      for (uint32_t i = 0; i < n; ++i) points.append(blob.data() + static_cast<size_t>(i) * stride, point_record::kStride);
    }
    stamps.push_back(stamp);
    entities.push_back(pc ? pc->header.entity_id : fc->entity_id);
    fused.push_back(fc != nullptr);
    counts.push_back(n);
    const bool sensor_frame = pc && !pc->vehicle_frame;
    const Vec3 p = sensor_frame ? pc->header.mount_position_m : Vec3::Zero();
    const Quat q = sensor_frame ? pc->header.mount_orientation : Quat::Identity();
    positions.insert(positions.end(), {p.x(), p.y(), p.z()});
    orientations.insert(orientations.end(), {q.w(), q.x(), q.y(), q.z()});
  }
  py::dict Dict() const {
    py::dict d;
    d["stamp_ns"] = Column(stamps);
    d["entity_id"] = Column(entities);
    d["fused"] = Column(fused);
    d["point_count"] = Column(counts);
    d["mount_position"] = Rows3(positions);
    py::array_t<double> quats({static_cast<py::ssize_t>(orientations.size() / 4), py::ssize_t{4}});
    std::copy(orientations.begin(), orientations.end(), quats.mutable_data());
    d["mount_orientation"] = quats;
    d["points"] = py::bytes(points);
    d["record_layout"] = point_record::kLayout;
    return d;
  }
};

/// The kind of a data-stream message as read_stream names it ("radar", "imu", "fused", ...; "" for none).
std::string SensorKindOf(const protocol::Message& m) {
  std::string k = std::holds_alternative<protocol::FusedCloud>(m) ? "fused" : "";
  std::visit([&](const auto& msg) {
    if constexpr (requires { msg.header.kind; }) k = std::string(protocol::StreamKindName(msg.header.kind));
  }, m);
  return k;
}

/// Radar, object-list, IMU and GNSS messages with sim time in [from_ns, to_ns] as columns of numbers: one
/// row per message (IMU, GNSS) or per detection/object (radar, objects; a message without any gives no
/// row). What read_stream() (from a log) and Session.sensor() (live) hand to Python.
struct SensorColumns {
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
  std::map<std::string, std::vector<double>> cols;  // every column as double; ids and stamps separately
  std::vector<int64_t> stamps;
  std::vector<uint64_t> ids;
  std::string kind;

  void Add(const protocol::Message& m) {
    if (kind.empty()) kind = SensorKindOf(m);
    auto row = [&](int64_t stamp, uint64_t entity, std::initializer_list<std::pair<const char*, double>> values) {
      stamps.push_back(stamp);
      ids.push_back(entity);
      for (const auto& [name, v] : values) cols[name].push_back(v);
    };
    auto in_window = [&](const protocol::SensorHeader& h) { return h.stamp_ns >= from_ns && h.stamp_ns <= to_ns; };
    if (const auto* r = std::get_if<protocol::RadarScan>(&m)) {
      if (!in_window(r->header)) return;
      for (const auto& d : r->detections)
        row(r->header.stamp_ns, d.entity_id,
            {{"range", d.range_m}, {"azimuth", d.azimuth_rad}, {"range_rate", d.range_rate_mps}, {"rcs_dbsm", d.rcs_dbsm},
             {"object_class", d.object_class}, {"false_positive", d.false_positive}, {"length", d.length_m},
             {"width", d.width_m}, {"orientation", d.orientation_rad}, {"x", d.x_m}, {"y", d.y_m}});
    } else if (const auto* o = std::get_if<protocol::ObjectList>(&m)) {
      if (!in_window(o->header)) return;
      for (const auto& d : o->objects)
        row(o->header.stamp_ns, d.track_id,
            {{"object_class", d.object_class}, {"truth_class", d.truth_class}, {"x", d.position_m.x()},
             {"y", d.position_m.y()}, {"z", d.position_m.z()}, {"vx", d.velocity_mps.x()}, {"vy", d.velocity_mps.y()},
             {"vz", d.velocity_mps.z()}, {"length", d.size_m.x()}, {"width", d.size_m.y()}, {"height", d.size_m.z()}});
    } else if (const auto* i = std::get_if<protocol::ImuMeasurement>(&m)) {
      if (!in_window(i->header)) return;
      row(i->header.stamp_ns, i->header.entity_id,
          {{"wx", i->angular_velocity_radps.x()}, {"wy", i->angular_velocity_radps.y()},
           {"wz", i->angular_velocity_radps.z()}, {"ax", i->acceleration_mps2.x()}, {"ay", i->acceleration_mps2.y()},
           {"az", i->acceleration_mps2.z()}});
    } else if (const auto* g = std::get_if<protocol::GnssMeasurement>(&m)) {
      if (!in_window(g->header)) return;
      row(g->header.stamp_ns, g->header.entity_id,
          {{"latitude", g->latitude_deg}, {"longitude", g->longitude_deg}, {"altitude", g->altitude_m},
           {"ve", g->velocity_enu_mps.x()}, {"vn", g->velocity_enu_mps.y()}, {"vu", g->velocity_enu_mps.z()},
           {"horizontal_sigma", g->horizontal_sigma_m}, {"vertical_sigma", g->vertical_sigma_m}});
    }
  }
  py::dict Dict() const {
    py::dict columns;
    for (const auto& [name, v] : cols) columns[py::str(name)] = Column(v);
    py::dict d;
    d["kind"] = kind;
    d["stamp_ns"] = Column(stamps);
    d["id"] = Column(ids);
    d["columns"] = columns;
    return d;
  }
};

/// Entity states as columns: what Session.entities() and read_log() return.
struct EntityColumns {
  std::vector<uint64_t> id;
  std::vector<uint8_t> kind;
  std::vector<uint32_t> owner;
  std::vector<int64_t> stamp_ns;
  std::vector<double> position, orientation, velocity, acceleration, size;  // 3 or 4 per row
  std::vector<double> yaw, yaw_rate, speed;
  std::vector<float> steer, throttle, brake;
  std::vector<bool> stale, own;

  void Add(const protocol::EntityState& e, bool is_own) {
    const auto& k = e.kinematics;
    id.push_back(e.id);
    kind.push_back(static_cast<uint8_t>(e.kind));
    owner.push_back(e.owner_node);
    stamp_ns.push_back(k.stamp_ns);
    for (int i = 0; i < 3; ++i) {
      position.push_back(k.pose.position_m[i]);
      velocity.push_back(k.velocity_mps[i]);
      acceleration.push_back(k.acceleration_mps2[i]);
      size.push_back(e.box_size_m[i]);
    }
    const Quat& q = k.pose.orientation;
    orientation.insert(orientation.end(), {q.w(), q.x(), q.y(), q.z()});
    yaw.push_back(YawOf(q));
    yaw_rate.push_back(k.angular_velocity_radps.z());
    speed.push_back(k.velocity_mps.norm());
    steer.push_back(e.controls.steer);
    throttle.push_back(e.controls.throttle);
    brake.push_back(e.controls.brake);
    stale.push_back(e.stale);
    own.push_back(is_own);
  }

  /// A dict of numpy arrays: N, N×3 (position, velocity, acceleration, size) and N×4 (orientation w, x, y, z).
  py::dict ToDict() const {
    py::dict d;
    d["id"] = Column(id);
    d["kind"] = Column(kind);
    d["owner"] = Column(owner);
    d["stamp_ns"] = Column(stamp_ns);
    std::vector<double> t(stamp_ns.size());
    for (size_t i = 0; i < t.size(); ++i) t[i] = NsToS(stamp_ns[i]);
    d["stamp"] = Column(t);
    d["position"] = Rows3(position);
    const auto n = static_cast<py::ssize_t>(id.size());
    py::array_t<double> o({n, py::ssize_t{4}});
    std::copy(orientation.begin(), orientation.end(), o.mutable_data());
    d["orientation"] = o;
    d["yaw"] = Column(yaw);
    d["yaw_rate"] = Column(yaw_rate);
    d["velocity"] = Rows3(velocity);
    d["speed"] = Column(speed);
    d["acceleration"] = Rows3(acceleration);
    d["size"] = Rows3(size);
    d["steer"] = Column(steer);
    d["throttle"] = Column(throttle);
    d["brake"] = Column(brake);
    py::array_t<bool> st(n), ow(n);
    for (py::ssize_t i = 0; i < n; ++i) {
      st.mutable_data()[i] = stale[static_cast<size_t>(i)];
      ow.mutable_data()[i] = own[static_cast<size_t>(i)];
    }
    d["stale"] = st;
    d["own"] = ow;
    return d;
  }
};

/// "HOST:PORT" -> host and port, or a ValueError naming what was expected.
std::pair<std::string, uint16_t> ParseServer(const std::string& text) {
  const std::string example = " (expected HOST:PORT, e.g. 127.0.0.1:7400)";
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw py::value_error("server: \"" + text + "\" has no host or port" + example);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw py::value_error("server: port \"" + port + "\" is not a number" + example);
  const int p = std::stoi(port);
  if (p < 1 || p > 65535) throw py::value_error("server: port " + port + " is out of range 1..65535");
  return {text.substr(0, colon), static_cast<uint16_t>(p)};
}

/// One session client on a background thread.
class Session {
 public:
  Session(const std::string& server, const std::string& name, const std::string& role, bool verbose)
      : def_(MakeDef(name, role, ParseServer(server).second)),
        client_(def_, local_, verbose ? MakeLogger(name) : nullptr),
        link_(context_, ParseServer(server).first, ParseServer(server).second, transport::FaultDef{}),
        server_(server),
        data_(context_, transport::Pattern::kSub, transport::ChannelDef{}),
        connector_(data_) {
    // The server's echo of this client's own entities (the client core's world skips them).
    client_.on_world_broadcast = [this](std::string_view, const protocol::WorldState& w, int64_t) {
      const uint32_t me = client_.NodeId();
      if (protocol::HasKeyframe(w)) {
        const auto listed = protocol::KeyframeListed(w);
        std::erase_if(own_seen_, [&](const auto& kv) {
          return protocol::KeyframeCovers(w, kv.first) && !protocol::Listed(listed, kv.first);
        });
      }
      for (const auto& e : w.entities)
        if (e.owner_node == me && (own_seen_.size() < kMaxOwned || own_seen_.count(e.id))) own_seen_[e.id] = e;
      for (uint64_t id : w.removed_entities) own_seen_.erase(id);
    };
    thread_ = std::thread([this] { Loop(); });
  }
  ~Session() { Close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Leaves the session and stops the thread; idempotent.
  void Close() {
    if (closed_.exchange(true)) return;
    // The loop stops first: a client that has left would join again at its next turn.
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    {
      std::lock_guard g(mutex_);
      client_.Leave("python session closed");
    }
    link_.Flush(client_, mutex_);
  }

  bool WaitJoined(double timeout_s) {
    std::unique_lock lk(mutex_);
    return WaitUntil(lk, timeout_s, [&] { return client_.Joined() || client_.Refused().has_value(); }) &&
           !client_.Refused() && client_.Joined();
  }
  /// Waits until the first world state after the join was applied (a snapshot or a whole keyframe: what
  /// entities() then returns is the whole world); true when it was within `timeout_s`.
  bool WaitWorld(double timeout_s) {
    std::unique_lock lk(mutex_);
    return WaitUntil(lk, timeout_s, [&] { return client_.WorldReceived() || client_.Refused().has_value(); }) &&
           client_.WorldReceived();
  }
  std::string Refusal() {
    std::lock_guard g(mutex_);
    return client_.Refused().value_or("");
  }
  bool Joined() { return Locked([&] { return client_.Joined(); }); }
  uint32_t NodeId() { return Locked([&] { return client_.NodeId(); }); }
  std::string SessionName() { return Locked([&] { return client_.SessionName(); }); }
  std::string SessionFile() { return Locked([&] { return client_.SessionFile(); }); }
  std::string SessionFilePath() { return Locked([&] { return client_.SessionFilePath(); }); }
  int64_t SimNowNs() { return Locked([&] { return client_.SimNowNs(); }); }
  std::string Phase() { return Locked([&] { return std::string(protocol::PhaseName(client_.Phase())); }); }
  int64_t StepNs() { return Locked([&] { return client_.StepNs(); }); }
  const std::string& Name() const { return def_.name; }
  const std::string& Server() const { return server_; }

  py::dict Stats() {
    session::ClientStats s;
    {
      std::lock_guard g(mutex_);
      s = client_.Stats();
    }
    py::dict d;
    d["world_received"] = s.world_received;
    d["world_gaps"] = s.world_gaps;
    d["snapshots"] = s.snapshots;
    d["server_restarts"] = s.server_restarts;
    d["bad_input"] = s.bad_input;
    return d;
  }

  py::dict Entities(bool dead_reckoned) {
    std::vector<protocol::EntityState> remote, own;
    {
      std::lock_guard g(mutex_);
      remote = dead_reckoned ? client_.World().Displayed(client_.SimNowNs()) : client_.World().Received();
      for (const auto& [id, e] : own_seen_) own.push_back(e);
    }
    std::vector<std::pair<const protocol::EntityState*, bool>> all;
    for (const auto& e : remote) all.emplace_back(&e, false);
    for (const auto& e : own) all.emplace_back(&e, true);
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first->id < b.first->id; });
    EntityColumns c;
    for (const auto& [e, is_own] : all) c.Add(*e, is_own);
    return c.ToDict();
  }

  py::list Nodes() {
    std::vector<protocol::NodeInfo> nodes;
    {
      std::lock_guard g(mutex_);
      nodes = client_.Nodes();
    }
    py::list out;
    for (const auto& n : nodes) {
      py::dict d;
      d["id"] = n.node_id;
      d["name"] = n.name;
      d["role"] = std::string(protocol::RoleName(n.role));
      d["host"] = n.host;
      d["pid"] = n.pid;
      d["lost"] = n.lost;
      d["rate_hz"] = n.update_rate_hz;
      d["loss"] = n.loss_fraction;
      d["offset_us"] = static_cast<double>(n.clock_offset_ns) / 1e3;
      d["rtt_us"] = static_cast<double>(n.rtt_ns) / 1e3;
      out.append(d);
    }
    return out;
  }

  /// Publishes one owned entity as a NodeState carrying the state token, as a node's modules do.
  uint64_t Publish(uint64_t id, const std::vector<double>& position, double yaw, const std::vector<double>& velocity,
                   const std::string& kind, const std::vector<double>& size, const std::vector<double>& acceleration,
                   double yaw_rate, double steer, double throttle, double brake, int64_t stamp_ns) {
    if (id == 0) throw py::value_error("entity id 0 is reserved (no entity)");
    if (!std::isfinite(yaw) || !std::isfinite(yaw_rate)) throw py::value_error("yaw and yaw_rate must be finite");
    protocol::EntityState e;
    e.id = id;
    e.kind = KindFromName(kind);
    e.kinematics.pose.position_m = ToVec3(position, "position");
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()));
    e.kinematics.velocity_mps = ToVec3(velocity, "velocity");
    e.kinematics.acceleration_mps2 = ToVec3(acceleration, "acceleration");
    e.kinematics.angular_velocity_radps = Vec3(0, 0, yaw_rate);
    e.box_size_m = ToVec3(size, "size");
    e.controls = protocol::Controls{static_cast<float>(std::clamp(steer, -1.0, 1.0)),
                                    static_cast<float>(std::clamp(throttle, 0.0, 1.0)),
                                    static_cast<float>(std::clamp(brake, 0.0, 1.0))};
    e.lights.brake = brake > 0.05;
    std::lock_guard g(mutex_);
    if (!client_.Joined()) throw std::runtime_error("publish: not joined to the session at " + server_ + " (wait_joined first)");
    if (!published_.count(id) && published_.size() >= kMaxOwned)
      throw std::runtime_error("publish: at most " + std::to_string(kMaxOwned) + " entities per Python session");
    // The server keeps the newest stamp of an entity: each update must be newer than the last.
    int64_t stamp = stamp_ns >= 0 ? stamp_ns : client_.SimNowNs();
    if (auto it = published_.find(id); it != published_.end()) stamp = std::max(stamp, it->second.kinematics.stamp_ns + 1);
    e.kinematics.stamp_ns = stamp;
    e.owner_node = client_.NodeId();
    published_[id] = e;
    SendLocked({e});
    return id;
  }

  // --- parameters, markers, events -------------------------------------------------------------------
  py::list Params(const std::string& prefix, double timeout_s) {
    const auto list = Ask<protocol::ParamList>(protocol::ParamListRequest{prefix}, timeout_s, "param list");
    py::list out;
    for (const auto& p : list.params) out.append(ParamDict(p));
    // Nodes that did not answer in time: their parameters are missing, say so.
    if (!list.errors.empty()) {
      std::string why;
      for (const auto& e : list.errors) why += (why.empty() ? "" : "; ") + e;
      if (PyErr_WarnEx(PyExc_RuntimeWarning, ("param list: " + why).c_str(), 1) < 0) throw py::error_already_set();
    }
    return out;
  }
  py::dict Get(const std::string& path, double timeout_s) {
    const auto r = Ask<protocol::ParamReply>(protocol::ParamGet{path}, timeout_s, "get " + path);
    if (!r.ok) throw Refused(r.error);
    return ParamDict(r.param);
  }
  py::dict Set(const std::string& path, const std::string& value, double timeout_s) {
    const auto r = Ask<protocol::ParamReply>(protocol::ParamSet{path, value}, timeout_s, "set " + path);
    if (!r.ok) throw Refused(r.error);
    return ParamDict(r.param);
  }
  py::dict Mark(const std::string& text, double sim_time_s, double timeout_s) {
    const int64_t at = std::isnan(sim_time_s) ? 0 : SToNsChecked(sim_time_s, "sim_time");
    const auto r = Ask<protocol::EventList>(protocol::Mark{text, at}, timeout_s, "mark");
    if (!r.error.empty()) throw Refused(r.error);
    if (r.events.empty()) throw Refused("mark: the server logged no marker");
    return EventDict(r.events.front());
  }
  py::list Events(uint64_t after, double timeout_s) {
    const auto r = Ask<protocol::EventList>(protocol::EventsRequest{after}, timeout_s, "events");
    if (!r.error.empty()) throw Refused(r.error);
    py::list out;
    for (const auto& e : r.events) out.append(EventDict(e));
    return out;
  }
  /// Events that arrived with world states since the last call, each once.
  py::list TakeEvents() {
    std::deque<protocol::LoggedEvent> events;
    {
      std::lock_guard g(mutex_);
      events.swap(events_);
    }
    py::list out;
    for (const auto& e : events) out.append(EventDict(e));
    return out;
  }

  // --- session control -------------------------------------------------------------------------------
  std::string Control(const std::string& command, double at_sim_s, double timeout_s, const std::string& reason) {
    SessionControl c;
    std::optional<SessionPhase> target;
    if (command == "start") {
      c = SessionControl{SessionControl::Command::kStart, 0, SToNsChecked(at_sim_s, "at_sim"), 1.0, {}};
      target = SessionPhase::kRunning;
    } else if (command == "restart") {
      if (reason.empty()) throw py::value_error("restart: reason must not be empty (the server logs why the session begins again)");
      c = SessionControl{SessionControl::Command::kRestart, 0, SToNsChecked(at_sim_s, "at_sim"), 1.0, reason};
      target = SessionPhase::kRunning;
    } else if (command == "pause") {
      c.command = SessionControl::Command::kPause;
      target = SessionPhase::kPaused;
    } else if (command == "resume") {
      c.command = SessionControl::Command::kResume;
      target = SessionPhase::kRunning;
    } else if (command == "stop") {
      c.command = SessionControl::Command::kStop;
      target = SessionPhase::kStopped;
    } else {
      throw py::value_error("unknown session command \"" + command + "\" (start, restart, pause, resume, stop)");
    }
    std::unique_lock lk(mutex_);
    if (!WaitUntil(lk, timeout_s, [&] { return client_.Joined() && client_.Stats().snapshots > 0; }))
      throw Timeout(command + ": not joined to the session at " + server_ + " within the timeout");
    // A start "now" is stamped on the synced clock.
    if ((command == "start" || command == "restart") && !WaitUntil(lk, timeout_s, [&] { return client_.Clock().IsSet(); }))
      throw Timeout(command + ": the clock did not synchronise with the server in time");
    std::erase_if(replies_, [](const auto& r) { return std::holds_alternative<protocol::SessionStatus>(r); });
    client_.Control(c);
    std::optional<protocol::SessionStatus> status;
    auto got = [&] {
      for (const auto& r : replies_)
        if (const auto* s = std::get_if<protocol::SessionStatus>(&r)) status = *s;
      return status.has_value();
    };
    if (!WaitUntil(lk, timeout_s, got)) throw Timeout(command + ": no reply from the server within the timeout");
    // Refused (a start of a running session, no operator token): the session is as it was.
    if (!status->error.empty()) {
      std::string why = command + ": " + status->error;
      if (why.find("operator token") != std::string::npos && !client_.HasOperatorToken())
        why += "; this Session found no operator token: looked in " +
               session::FindOperatorToken(ParseServer(server_).second).Where();
      throw Refused(why);
    }
    const SessionPhase after = status->phase;
    const std::string now = std::string(protocol::PhaseName(after));
    if (command == "pause" && after != SessionPhase::kPaused)
      throw Refused("pause: the session is " + now + ": only a running session can be paused");
    if (command == "resume" && after != SessionPhase::kRunning)
      throw Refused("resume: the session is " + now + ": only a paused session can be resumed");
    if ((command == "start" || command == "restart") && after != SessionPhase::kStarting &&
        after != SessionPhase::kRunning)
      throw Refused(command + ": the session is " + now + " after the " + command);
    // Done once a world state built after the command shows the new phase.
    auto shown = [&] { return client_.Anchor().ref_ns >= status->server_time_ns && client_.Phase() == *target; };
    if (!WaitUntil(lk, timeout_s, shown))
      throw Timeout(command + ": accepted, but no world state showed phase " + std::string(protocol::PhaseName(*target)) +
                    " in time");
    return std::string(protocol::PhaseName(client_.Phase()));
  }

  /// Waits until sim time reaches `sim_s` (or the timeout); returns the sim time then, in s.
  double WaitSimTime(double sim_s, double timeout_s) {
    const int64_t target = SToNsChecked(sim_s, "sim_time");
    std::unique_lock lk(mutex_);
    WaitUntil(lk, timeout_s, [&] { return client_.SimNowNs() >= target; });
    return NsToS(client_.SimNowNs());
  }

 private:
  static session::ClientDef MakeDef(const std::string& name, const std::string& role, uint16_t control_port) {
    const protocol::Role r = protocol::RoleFromName(role);
    if (r == protocol::Role::kUnknown)
      throw py::value_error("role: unknown role \"" + role + "\" (observer, traffic, driver, sensor, fusion, viewer, recorder)");
    // The server's rule for a Join's name, checked here so that a bad name is a ValueError at once
    // rather than a refusal after connecting.
    if (const std::string why = text::CheckName(name); !why.empty()) throw py::value_error("name: " + why);
    session::ClientDef def = session::DefaultClientDef(name, r);
    def.lockstep_member = false;  // Python steps nothing a lock-step has to wait for
    def.retry_refused = false;
    def.keep_replies = true;
    def.clock.min_fit_span_s = 0.2;  // a start needs "now" on the server's clock soon, as platoon ctl does
    // No CURVE here: commands present the operator token the server wrote for this user, as platoon ctl does.
    def.operator_token = session::FindOperatorToken(control_port).token;
    def.find_operator_token = session::OperatorTokenFinder(control_port);
    return def;
  }
  static std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name);

  template <class F>
  auto Locked(F f) -> decltype(f()) {
    std::lock_guard g(mutex_);
    return f();
  }

  // Waits on the loop's notifications until `done()` or the timeout; `lk` holds the mutex. Python's GIL
  // is released by the binding.
  template <class F>
  bool WaitUntil(std::unique_lock<std::mutex>& lk, double timeout_s, F done) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(std::clamp(timeout_s, 0.0, 1e6)));
    while (!done()) {
      if (closed_) return false;
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout) return done();
    }
    return true;
  }

  // Sends one parameter request under a fresh id and waits for the answer carrying it.
  template <class Reply, class Request>
  Reply Ask(Request request, double timeout_s, const std::string& what) {
    py::gil_scoped_release release;  // the loop thread answers while Python runs on
    std::unique_lock lk(mutex_);
    if (closed_) throw std::runtime_error(what + ": the session is closed");
    request.request_id = ++next_request_id_;
    client_.RequestParams(request);
    std::optional<Reply> reply;
    auto answered = [&] {
      for (auto it = replies_.begin(); it != replies_.end(); ++it)
        if (const auto* r = std::get_if<Reply>(&*it); r && r->request_id == request.request_id) {
          reply = *r;
          replies_.erase(it);
          return true;
        }
      return false;
    };
    if (!WaitUntil(lk, timeout_s, answered))
      throw Timeout(what + ": no reply from the server at " + server_ + " within " + std::to_string(timeout_s) + " s");
    return *reply;
  }

  void SendLocked(std::vector<protocol::EntityState> entities) {
    protocol::NodeState state{client_.NodeId(), ++state_sequence_, std::move(entities), 0, 0, client_.StateToken()};
    client_.SendState(protocol::Encode(state));
  }

 public:
  // --- live data streams (Session.clouds, Session.sensor) ---

  /// Every data stream of the node table: id -> kind ("lidar", "fused", "radar", ...).
  std::map<std::string, std::string> Streams() {
    std::lock_guard g(mutex_);
    std::map<std::string, std::string> out;
    for (const auto& n : client_.Nodes())
      for (const auto& e : n.endpoints) out.emplace(e.stream_id, std::string(protocol::StreamKindName(e.kind)));
    return out;
  }
  /// Starts keeping the messages of `stream` (the newest kMaxQueued, at most kMaxQueuedBytes).
  void Subscribe(const std::string& stream) {
    std::lock_guard g(data_mutex_);
    if (wanted_.emplace(stream, Queue{}).second) ++wanted_version_;
  }
  /// Stops, dropping what was kept.
  void Unsubscribe(const std::string& stream) {
    std::lock_guard g(data_mutex_);
    if (wanted_.erase(stream)) ++wanted_version_;
  }
  /// The clouds of `stream` kept since the last call (at most `max_messages`), waiting up to `timeout_s`
  /// for one; read_clouds' dict, with "dropped" (messages the bound dropped since the last call).
  py::dict TakeClouds(const std::string& stream, size_t max_messages, double timeout_s) {
    CloudColumns clouds;
    py::dict d = TakeInto(clouds, stream, max_messages, timeout_s);
    d["unreadable"] = clouds.unreadable;
    return d;
  }
  /// The same for radar, object-list, IMU and GNSS streams: read_stream's dict, with "dropped".
  py::dict TakeSensor(const std::string& stream, size_t max_messages, double timeout_s) {
    SensorColumns rows;
    return TakeInto(rows, stream, max_messages, timeout_s);
  }

 private:
  /// Messages kept per stream, and their bytes on the wire, at most; older ones are dropped first.
  static constexpr size_t kMaxQueued = 256;
  static constexpr size_t kMaxQueuedBytes = 64u << 20;
  struct Queue {
    std::deque<std::pair<protocol::Message, size_t>> messages;
    size_t bytes = 0;
    uint64_t dropped = 0;
  };

  // Take()'s messages added to `columns` without the GIL; their dict with "dropped".
  template <class Columns>
  py::dict TakeInto(Columns& columns, const std::string& stream, size_t max_messages, double timeout_s) {
    uint64_t dropped = 0;
    {
      py::gil_scoped_release release;
      for (auto& m : Take(stream, max_messages, timeout_s, dropped)) columns.Add(m);
    }
    py::dict d = columns.Dict();
    d["dropped"] = dropped;
    return d;
  }

  std::vector<protocol::Message> Take(const std::string& stream, size_t max_messages, double timeout_s, uint64_t& dropped) {
    std::unique_lock lk(data_mutex_);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(std::clamp(timeout_s, 0.0, 1e6)));
    auto ready = [&] {
      const auto it = wanted_.find(stream);
      return closed_ || (it != wanted_.end() && !it->second.messages.empty());
    };
    while (!ready() && data_cv_.wait_until(lk, deadline) != std::cv_status::timeout) {}
    std::vector<protocol::Message> out;
    const auto it = wanted_.find(stream);
    if (it == wanted_.end()) return out;
    Queue& q = it->second;
    while (!q.messages.empty() && out.size() < std::max<size_t>(max_messages, 1)) {
      q.bytes -= q.messages.front().second;
      out.push_back(std::move(q.messages.front().first));
      q.messages.pop_front();
    }
    dropped = std::exchange(q.dropped, 0);
    return out;
  }

  // The data streams' messages that arrived: kept for the streams Python subscribed to.
  void DrainData() {
    bool kept = false;
    for (int budget = 0; budget < 256; ++budget) {
      auto p = data_.TryReceive();
      if (!p) break;
      const size_t bytes = p->Payload().size();
      auto d = protocol::Decode(p->Payload());
      if (d.error != protocol::DecodeError::kNone || !d.message) continue;
      const std::string id = ros2::DataStreamId(*d.message);
      std::lock_guard g(data_mutex_);
      const auto it = wanted_.find(id);
      if (it == wanted_.end()) continue;
      Queue& q = it->second;
      q.messages.emplace_back(std::move(*d.message), bytes);
      q.bytes += bytes;
      while (q.messages.size() > 1 && (q.messages.size() > kMaxQueued || q.bytes > kMaxQueuedBytes)) {
        q.bytes -= q.messages.front().second;
        q.messages.pop_front();
        ++q.dropped;
      }
      kept = true;
    }
    if (kept) data_cv_.notify_all();
  }

  // Connects to the nodes publishing the streams Python wants, as the node table and the wishes change.
  void FollowStreams() {
    std::set<std::string> wanted;
    uint64_t nodes_version = 0;
    {
      std::lock_guard c(mutex_);
      nodes_version = client_.NodesVersion();
    }
    {
      std::lock_guard g(data_mutex_);
      if (wanted_version_ == wanted_seen_ && nodes_version == nodes_seen_) return;
      wanted_seen_ = wanted_version_;
      nodes_seen_ = nodes_version;
      for (const auto& [id, q] : wanted_) wanted.insert(id);
    }
    std::vector<protocol::NodeInfo> nodes;
    {
      std::lock_guard c(mutex_);
      nodes = client_.Nodes();
    }
    connector_.Resolve(nodes, [&](const protocol::DataEndpoint& e) { return wanted.count(e.stream_id) > 0; });
  }

  void Loop() {
    transport::Channel* const extra[] = {&data_};
    while (!stop_) {
      link_.Turn(client_, mutex_, extra, 5'000'000, [&] { DrainData(); });
      FollowStreams();
      {
        std::lock_guard g(mutex_);
        for (auto& r : client_.TakeReplies()) {
          if (replies_.size() >= kMaxReplies) replies_.pop_front();
          replies_.push_back(std::move(r));
        }
        for (auto& e : client_.TakeEvents()) {
          if (events_.size() >= kMaxEvents) events_.pop_front();
          events_.push_back(std::move(e));
        }
        // A rejoin (a restarted server, a lost link): the entities go out afresh under the new token.
        if (client_.TakeRejoined() && !published_.empty()) {
          std::vector<protocol::EntityState> all;
          for (auto& [id, e] : published_) {
            e.owner_node = client_.NodeId();
            e.kinematics.stamp_ns = std::max(e.kinematics.stamp_ns + 1, client_.SimNowNs());
            all.push_back(e);
          }
          SendLocked(std::move(all));
        }
      }
      cv_.notify_all();
    }
    cv_.notify_all();
  }

  session::ClientDef def_;
  clock::MonotonicOscillator local_;
  zmq::context_t context_{1};
  std::mutex mutex_;
  std::condition_variable cv_;
  session::SessionClient client_;
  session::ClientLink link_;
  std::string server_;
  std::deque<session::ControlReply> replies_;
  std::deque<protocol::LoggedEvent> events_;
  std::map<uint64_t, protocol::EntityState> published_, own_seen_;
  uint64_t next_request_id_ = 0, state_sequence_ = 0;
  std::atomic<bool> stop_{false}, closed_{false};
  transport::Channel data_;
  session::StreamConnector connector_;
  std::mutex data_mutex_;  // after mutex_ when both are held
  std::condition_variable data_cv_;
  std::map<std::string, Queue> wanted_;
  uint64_t wanted_version_ = 0, wanted_seen_ = ~0ull, nodes_seen_ = ~0ull;
  std::thread thread_;
};

}  // namespace
}  // namespace platoon::python

#include "platoon/log/logging.hpp"

namespace platoon::python {
namespace {

std::shared_ptr<spdlog::logger> Session::MakeLogger(const std::string& name) { return log::MakeLogger("py." + name, "info"); }

// --- session logs ------------------------------------------------------------------------------------

/// Every distinct entity state of a log's /platoon/world channel (one row per entity and stamp, sorted by
/// stamp then id), the node names of its node tables, the removals, and what the reader found wrong.
py::dict ReadLogStates(const std::string& path) {
  EntityColumns c;
  std::map<uint32_t, std::string> names;
  std::vector<uint64_t> removed_id;
  std::vector<int64_t> removed_ns;
  uint64_t world_states = 0, undecodable = 0;
  std::vector<std::string> problems;
  {
    py::gil_scoped_release release;
    std::vector<protocol::EntityState> states;
    std::set<std::pair<uint64_t, int64_t>> seen;
    // Streamed, world chunks only: constant memory in the log's length beyond the states themselves.
    session_log::ReadOptions options;
    options.topics = {std::string(session_log::kWorldTopic)};
    const auto result = session_log::ReadStream(path, options, [&](const session_log::Entry& entry) {
      if (entry.topic != session_log::kWorldTopic) return;
      auto decoded = protocol::Decode(
          std::string_view(reinterpret_cast<const char*>(entry.data.data()), entry.data.size()));
      const auto* w = decoded.message ? std::get_if<protocol::WorldState>(&*decoded.message) : nullptr;
      if (!w) {
        ++undecodable;
        return;
      }
      ++world_states;
      for (const auto& e : w->entities)
        if (seen.emplace(e.id, e.kinematics.stamp_ns).second) states.push_back(e);
      for (uint64_t id : w->removed_entities) {
        removed_id.push_back(id);
        removed_ns.push_back(w->sim_time_ns);
      }
      for (const auto& n : w->nodes) names[n.node_id] = n.name;
    });
    for (const auto& p : result.problems) problems.push_back(p.message);
    if (undecodable) problems.push_back(std::to_string(undecodable) + " world state(s) could not be decoded");
    std::stable_sort(states.begin(), states.end(), [](const auto& a, const auto& b) {
      return a.kinematics.stamp_ns != b.kinematics.stamp_ns ? a.kinematics.stamp_ns < b.kinematics.stamp_ns : a.id < b.id;
    });
    for (const auto& e : states) c.Add(e, false);
  }
  py::dict d;
  d["states"] = c.ToDict();
  d["node_names"] = names;
  py::dict removals;
  removals["id"] = Column(removed_id);
  removals["sim_time_ns"] = Column(removed_ns);
  d["removals"] = removals;
  d["world_states"] = world_states;
  d["problems"] = problems;
  return d;
}

/// The JSON texts of a log's /platoon/events and /platoon/session channels, with their log times.
py::dict ReadLogJson(const std::string& path) {
  std::vector<std::string> events, session;
  std::vector<int64_t> times;
  std::vector<std::string> problems;
  {
    py::gil_scoped_release release;
    session_log::ReadOptions options;
    options.topics = {std::string(session_log::kEventsTopic), std::string(session_log::kSessionTopic)};
    const auto result = session_log::ReadStream(path, options, [&](const session_log::Entry& entry) {
      const std::string text(reinterpret_cast<const char*>(entry.data.data()), entry.data.size());
      if (entry.topic == session_log::kEventsTopic) {
        events.push_back(text);
        times.push_back(static_cast<int64_t>(entry.log_time_ns));
      } else if (entry.topic == session_log::kSessionTopic) {
        session.push_back(text);
      }
    });
    for (const auto& p : result.problems) problems.push_back(p.message);
  }
  py::dict d;
  d["events"] = events;
  d["log_time_ns"] = Column(times);
  d["session"] = session;
  d["problems"] = problems;
  return d;
}

// Reads the log at `path` without the GIL and hands every decoded message of its data streams to
// on(stream id, chosen, message): each message of `stream` (chosen), and of the others until `streams`
// holds their id. Undecodable messages of `stream` count in `unreadable`; the log's problems go to
// `problems`.
template <typename StreamMap, typename On>
void ScanDataStreams(const std::string& path, const std::string& stream, const StreamMap& streams, uint64_t& unreadable,
                     std::vector<std::string>& problems, On on) {
  py::gil_scoped_release release;
  const std::string topic = session_log::DataTopic(stream);
  const auto result = session_log::Read(path, [&](const session_log::Entry& entry) {
    if (!entry.topic.starts_with(session_log::kDataTopicPrefix)) return;
    const std::string id(entry.topic.substr(session_log::kDataTopicPrefix.size()));
    const bool chosen = entry.topic == topic;
    if (!chosen && streams.contains(id)) return;
    const auto decoded =
        protocol::Decode(std::string_view(reinterpret_cast<const char*>(entry.data.data()), entry.data.size()));
    if (!decoded.message) {
      unreadable += chosen;
      return;
    }
    on(id, chosen, *decoded.message);
  });
  for (const auto& p : result.problems) problems.push_back(p.message);
}

/// The recorded clouds (PointCloud or FusedCloud) of data stream `stream` with sim time in [from_ns, to_ns],
/// in log order: per cloud stamp_ns, entity_id, fused, mount pose (position m, orientation w x y z; identity
/// for a fused cloud, which is in the vehicle frame) and point_count; `points` all their point records
/// (point_record.hpp, 36 bytes each, recorded order) as one bytes object. `streams`: every data stream of
/// the log and whether it carries clouds.
py::dict ReadLogClouds(const std::string& path, const std::string& stream, int64_t from_ns, int64_t to_ns) {
  CloudColumns clouds;
  clouds.from_ns = from_ns;
  clouds.to_ns = to_ns;
  std::map<std::string, bool> streams;
  std::vector<std::string> problems;
  uint64_t unreadable = 0;
  ScanDataStreams(path, stream, streams, unreadable, problems, [&](const std::string& id, bool chosen, const protocol::Message& m) {
    const bool cloud = CloudColumns::IsCloud(m);
    streams.try_emplace(id, cloud);
    if (chosen && cloud) clouds.Add(m);
  });
  unreadable += clouds.unreadable;
  if (unreadable > 0) problems.push_back(std::to_string(unreadable) + " messages of " + stream + " are no readable cloud");
  py::dict d = clouds.Dict();
  d["streams"] = streams;
  d["problems"] = problems;
  return d;
}

/// The radar, object-list, IMU or GNSS messages of data stream `stream` with sim time in [from_ns, to_ns],
/// as columns of numbers: one row per message (IMU, GNSS) or per detection/object (radar, objects; a
/// message without any gives no row). `kind` names the stream's kind ("" when it has none of these);
/// `streams` maps every data stream of the log to its kind.
py::dict ReadLogSensor(const std::string& path, const std::string& stream, int64_t from_ns, int64_t to_ns) {
  SensorColumns rows;
  rows.from_ns = from_ns;
  rows.to_ns = to_ns;
  std::map<std::string, std::string> streams;
  std::vector<std::string> problems;
  uint64_t unreadable = 0;
  ScanDataStreams(path, stream, streams, unreadable, problems, [&](const std::string& id, bool chosen, const protocol::Message& m) {
    streams.try_emplace(id, SensorKindOf(m));
    if (chosen) rows.Add(m);
  });
  if (unreadable > 0) problems.push_back(std::to_string(unreadable) + " messages of " + stream + " could not be decoded");
  py::dict d = rows.Dict();
  d["streams"] = streams;
  d["problems"] = problems;
  return d;
}

/// session::FindServer for a Session given no server: `session_name` ("": none) is the running session of
/// that name; else PLATOON_SERVER, the one session platoon run announced on this machine, 127.0.0.1:7400.
/// A dict: server ("HOST:PORT"), source ("from PLATOON_SERVER", ...), session_file (the running session's,
/// "" when none), notes (discovery files that could not be read). Raises ValueError (DiscoveryError's
/// message) for a bad PLATOON_SERVER, an unknown session name or several running sessions.
py::dict FindServerFor(const std::string& session_name) {
  session::ResolvedServer found;
  {
    py::gil_scoped_release release;
    session::ServerQuery query;
    query.session_flag = session_name;
    found = session::FindServer(query);
  }
  py::dict d;
  d["server"] = found.endpoint.Text();
  d["source"] = found.from;
  d["session_file"] = found.session ? found.session->session_file : std::string();
  d["notes"] = found.notes;
  return d;
}

}  // namespace
}  // namespace platoon::python

namespace platoon::python {
namespace {

// The standard tasks' scores (platoon/data/standard_tasks.hpp, docs/TASKS.md) as dicts; arguments as lists.
py::dict ScoreLctOfTrace(const std::vector<double>& s_m, const std::vector<double>& lateral_m,
                         const std::vector<std::pair<double, int>>& signs, double lane_width_m, double onset_before_sign_m,
                         double change_length_m, int start_lane, double from_s_m, double to_s_m) {
  if (s_m.size() != lateral_m.size())
    throw py::value_error("score_lct: s_m has " + std::to_string(s_m.size()) + " values, lateral_m " +
                          std::to_string(lateral_m.size()));
  data::LctDef def;
  def.lane_width_m = lane_width_m;
  def.onset_before_sign_m = onset_before_sign_m;
  def.change_length_m = change_length_m;
  def.start_lane = start_lane;
  std::vector<data::LctSign> sign_list;
  for (const auto& [s, lane] : signs) sign_list.push_back({s, lane});
  std::vector<data::LateralPoint> trace;
  for (size_t i = 0; i < s_m.size(); ++i) trace.push_back({s_m[i], lateral_m[i]});
  std::vector<data::LateralPoint> path;
  try {
    path = data::LctNormativePath(def, sign_list);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("score_lct: ") + e.what());
  }
  const auto score = data::ScoreLct(trace, path, from_s_m, to_s_m);
  py::dict out;
  out["mean_deviation_m"] = score.mean_deviation_m;
  out["length_m"] = score.length_m;
  out["samples"] = score.samples;
  out["signs"] = sign_list.size();
  return out;
}

py::dict ScoreDrtOfTimes(std::vector<double> onsets, std::vector<double> responses) {
  std::sort(onsets.begin(), onsets.end());
  std::sort(responses.begin(), responses.end());
  const auto score = data::ScoreDrt(data::DefaultDrtDef(), onsets, responses);
  py::dict out;
  out["stimuli"] = score.trials.size();
  out["hits"] = score.hits;
  out["misses"] = score.misses;
  out["hit_rate"] = score.hit_rate;
  out["mean_rt_s"] = score.mean_rt_s;
  out["median_rt_s"] = score.median_rt_s;
  out["premature"] = score.premature;
  out["extra"] = score.extra;
  py::list trials;
  for (const auto& t : score.trials) {
    py::dict d;
    d["onset_s"] = t.onset_s;
    d["hit"] = t.hit;
    d["response_time_s"] = t.response_time_s;
    d["premature"] = t.premature;
    trials.append(d);
  }
  out["trials"] = trials;
  return out;
}

py::dict ScoreCarFollowingOfSpeeds(const std::vector<double>& t_s, const std::vector<double>& lead_mps,
                                   const std::vector<double>& follower_mps, double frequency_hz, uint32_t periods) {
  if (t_s.size() != lead_mps.size() || t_s.size() != follower_mps.size())
    throw py::value_error("score_car_following: expected t, lead and follower of one length, got " + std::to_string(t_s.size()) +
                          ", " + std::to_string(lead_mps.size()) + ", " + std::to_string(follower_mps.size()));
  data::CarFollowingDef def;
  def.frequency_hz = frequency_hz;
  def.periods_per_segment = periods;
  if (const auto e = data::ValidateCarFollowingDef(def); !e.empty()) throw py::value_error("score_car_following: " + e);
  std::vector<data::SpeedPair> samples;
  for (size_t i = 0; i < t_s.size(); ++i) samples.push_back({t_s[i], lead_mps[i], follower_mps[i]});
  const auto score = data::ScoreCarFollowing(def, samples);
  py::dict out;
  out["gain"] = score.gain;
  out["delay_s"] = score.delay_s;
  out["phase_rad"] = score.phase_rad;
  out["coherence"] = score.coherence;
  out["segments"] = score.segments;
  out["lead_amplitude_mps"] = score.lead_amplitude_mps;
  out["follower_amplitude_mps"] = score.follower_amplitude_mps;
  return out;
}

}  // namespace
}  // namespace platoon::python

namespace platoon::python {
namespace {

// data::DriveMetricsAccumulator over columns named as the data write names them ("speed" or its CSV header
// "speed_mps"), every column as long as sim_time; `settings` as DriveMetricsDef's fields. A dict of the metrics.
py::dict DriveMetricsOfColumns(const py::dict& columns, const py::dict& settings) {
  std::map<data::Column, std::vector<double>> by_column;
  size_t rows = 0;
  bool have_time = false;
  for (const auto& [key, value] : columns) {
    const std::string name = py::str(key);
    const data::ColumnInfo* info = nullptr;
    for (const auto& c : data::Columns())
      if (c.name == name || c.header == name) info = &c;
    if (!info) {
      std::string known;
      for (const auto& c : data::Columns()) known += (known.empty() ? "" : ", ") + std::string(c.header);
      throw py::value_error("drive_metrics: no data-write column \"" + name + "\" (columns: " + known + ")");
    }
    auto values = value.cast<std::vector<double>>();
    if (info->column == data::Column::kSimTime) {
      have_time = true;
      rows = values.size();
    }
    by_column[info->column] = std::move(values);
  }
  if (!have_time) throw py::value_error("drive_metrics: expected a sim_time_s column (sim time of each row, in s)");
  for (const auto& [c, v] : by_column)
    if (v.size() != rows)
      throw py::value_error("drive_metrics: column " + std::string(data::Info(c).header) + " has " + std::to_string(v.size()) +
                            " rows, sim_time_s " + std::to_string(rows));
  data::DriveMetricsDef def;
  const std::map<std::string, double*> fields = {
      {"steering_wheel_lock_deg", &def.steering_wheel_lock_deg}, {"reversal_cutoff_hz", &def.reversal_cutoff_hz},
      {"reversal_gap_deg", &def.reversal_gap_deg}, {"lane_width_m", &def.lane_width_m},
      {"vehicle_width_m", &def.vehicle_width_m}, {"brake_threshold", &def.brake_threshold},
      {"thw_short_s", &def.thw_short_s}, {"event_s", &def.event_s}, {"reaction_window_s", &def.reaction_window_s}};
  for (const auto& [key, value] : settings) {
    const std::string name = py::str(key);
    const auto f = fields.find(name);
    if (f == fields.end()) {
      std::string known;
      for (const auto& [n, p] : fields) known += (known.empty() ? "" : ", ") + n;
      throw py::value_error("drive_metrics: no setting \"" + name + "\" (settings: " + known + ")");
    }
    *f->second = value.is_none() ? std::nan("") : value.cast<double>();
  }
  if (const std::string e = data::ValidateDriveMetricsDef(def); !e.empty()) throw py::value_error("drive_metrics: " + e);
  data::DriveMetricsAccumulator acc(def);
  for (size_t i = 0; i < rows; ++i) {
    data::MetricsRow row;
    for (const auto& [c, v] : by_column) row[c] = v[i];
    acc.Add(row);
  }
  const data::DriveMetrics m = acc.Result();
  py::dict out;
  out["rows"] = m.rows;
  out["duration_s"] = m.duration_s;
  out["speed_mean_mps"] = m.speed_mean_mps;
  out["speed_sd_mps"] = m.speed_sd_mps;
  out["sdlp_m"] = m.sdlp_m;
  out["lane_changes"] = m.lane_changes;
  out["thw_mean_s"] = m.thw_mean_s;
  out["thw_min_s"] = m.thw_min_s;
  out["thw_below_share"] = m.thw_below_share;
  out["ttc_min_s"] = m.ttc_min_s;
  out["tlc_min_s"] = m.tlc_min_s;
  out["reversals"] = m.reversals;
  out["reversal_rate_per_min"] = m.reversal_rate_per_min;
  out["brake_reaction_s"] = m.brake_reaction_s;
  return out;
}

}  // namespace
}  // namespace platoon::python

PYBIND11_MODULE(_platoon, m) {
  using platoon::python::Session;
  namespace pp = platoon::python;
  m.doc() = "platoon's compiled core: the session client and the session-log reader (use the package `platoon`)";
  py::register_exception<pp::Refused>(m, "Refused", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pp::Timeout& e) {
      PyErr_SetString(PyExc_TimeoutError, e.what());
    } catch (const platoon::session::DiscoveryError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.attr("KIND_NAMES") = py::make_tuple("unknown", "car", "truck", "motorcycle", "bicycle", "pedestrian", "static_object");
  m.attr("PROTOCOL_VERSION") = platoon::protocol::kProtocolVersion;

  using R = py::call_guard<py::gil_scoped_release>;
  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::string&, const std::string&, bool>(), py::arg("server"),
           py::arg("name"), py::arg("role"), py::arg("verbose") = false)
      .def("close", &Session::Close, R())
      .def("wait_joined", &Session::WaitJoined, py::arg("timeout"), R())
      .def("wait_world", &Session::WaitWorld, py::arg("timeout"), R())
      .def("refusal", &Session::Refusal)
      .def_property_readonly("joined", &Session::Joined)
      .def_property_readonly("node_id", &Session::NodeId)
      .def_property_readonly("session_name", &Session::SessionName)
      .def_property_readonly("session_file", &Session::SessionFile)
      .def_property_readonly("session_file_path", &Session::SessionFilePath)
      .def_property_readonly("sim_time_ns", &Session::SimNowNs)
      .def_property_readonly("phase", &Session::Phase)
      .def_property_readonly("step_ns", &Session::StepNs)
      .def_property_readonly("name", &Session::Name)
      .def_property_readonly("server", &Session::Server)
      .def("stats", &Session::Stats)
      .def("entities", &Session::Entities, py::arg("dead_reckoned") = false)
      .def("nodes", &Session::Nodes)
      .def("publish", &Session::Publish, py::arg("entity_id"), py::arg("position"), py::arg("yaw"),
           py::arg("velocity"), py::arg("kind"), py::arg("size"), py::arg("acceleration"), py::arg("yaw_rate"),
           py::arg("steer"), py::arg("throttle"), py::arg("brake"), py::arg("stamp_ns"))
            // These release the GIL while they wait (Ask) and build their results with it.
      .def("params", &Session::Params, py::arg("prefix"), py::arg("timeout"))
      .def("get", &Session::Get, py::arg("path"), py::arg("timeout"))
      .def("set", &Session::Set, py::arg("path"), py::arg("value"), py::arg("timeout"))
      .def("mark", &Session::Mark, py::arg("text"), py::arg("sim_time"), py::arg("timeout"))
      .def("events", &Session::Events, py::arg("after"), py::arg("timeout"))
      .def("take_events", &Session::TakeEvents)
      .def("control", &Session::Control, py::arg("command"), py::arg("at_sim"), py::arg("timeout"),
           py::arg("reason") = std::string(), R())
      .def("wait_sim_time", &Session::WaitSimTime, py::arg("sim_time"), py::arg("timeout"), R())
      .def("streams", &Session::Streams, R())
      .def("subscribe", &Session::Subscribe, py::arg("stream"), R())
      .def("unsubscribe", &Session::Unsubscribe, py::arg("stream"), R())
      .def("take_clouds", &Session::TakeClouds, py::arg("stream"), py::arg("max_messages"), py::arg("timeout"))
      .def("take_sensor", &Session::TakeSensor, py::arg("stream"), py::arg("max_messages"), py::arg("timeout"));

  m.def("find_server", &pp::FindServerFor, py::arg("session_name"),
        "session::FindServer: PLATOON_SERVER, the session running on this machine, 127.0.0.1:7400");
  m.def("read_log_states", &pp::ReadLogStates, py::arg("path"));
  m.def("read_log_json", &pp::ReadLogJson, py::arg("path"));
  m.def("read_log_clouds", &pp::ReadLogClouds, py::arg("path"), py::arg("stream"), py::arg("from_ns"), py::arg("to_ns"),
        "The recorded point clouds of one data stream (point records as bytes, docs/RECORDING.md)");
  m.def("read_log_sensor", &pp::ReadLogSensor, py::arg("path"), py::arg("stream"), py::arg("from_ns"), py::arg("to_ns"),
        "The radar, object-list, IMU or GNSS messages of one data stream as columns (docs/RECORDING.md)");
  m.def("drive_metrics_of_columns", &pp::DriveMetricsOfColumns, py::arg("columns"), py::arg("settings"),
        "data::DriveMetricsAccumulator over data-write columns (docs/RECORDING.md, \"Driving metrics\")");
  m.def("score_lct_of_trace", &pp::ScoreLctOfTrace, py::arg("s_m"), py::arg("lateral_m"), py::arg("signs"),
        py::arg("lane_width_m"), py::arg("onset_before_sign_m"), py::arg("change_length_m"), py::arg("start_lane"),
        py::arg("from_s_m"), py::arg("to_s_m"), "data::ScoreLct against data::LctNormativePath (docs/TASKS.md)");
  m.def("score_drt_of_times", &pp::ScoreDrtOfTimes, py::arg("onsets"), py::arg("responses"),
        "data::ScoreDrt with the ISO 17488 windows (docs/TASKS.md)");
  m.def("score_car_following_of_speeds", &pp::ScoreCarFollowingOfSpeeds, py::arg("t_s"), py::arg("lead_mps"),
        py::arg("follower_mps"), py::arg("frequency_hz"), py::arg("periods"), "data::ScoreCarFollowing (docs/TASKS.md)");
  m.def("vehicle_id", &platoon::VehicleId, py::arg("node_name"), py::arg("index"),
        "Session-wide id of a node's vehicle: FNV-1a(node name) << 16 | index");
  m.def("free_ports", &platoon::transport::FreeLoopbackPorts, py::arg("count"),
        "Free TCP ports on 127.0.0.1 (bound together and released)");
}
