#include "platoon/node/sensor_host.hpp"

#include "platoon/dead_reckoning.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/node/traffic.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/scene.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace platoon::node {
namespace {

using sensors::SemanticClass;
constexpr uint32_t kAsphalt = 1, kConcrete = 2, kCarPaint = 3, kWhiteWall = 4, kVegetation = 5;

uint32_t ClassId(SemanticClass c) { return static_cast<uint32_t>(c); }
// Ground-truth labels in points are 32 bits: the low half of the 48-bit entity id.
uint32_t Label(uint64_t entity_id) { return static_cast<uint32_t>(entity_id & 0xffffffffu); }

sensors::RadarClass RadarClassOf(protocol::EntityKind k) {
  switch (k) {
    case protocol::EntityKind::kCar: return sensors::RadarClass::kCar;
    case protocol::EntityKind::kTruck: return sensors::RadarClass::kTruck;
    case protocol::EntityKind::kMotorcycle: return sensors::RadarClass::kMotorcycle;
    case protocol::EntityKind::kBicycle: return sensors::RadarClass::kBicycle;
    case protocol::EntityKind::kPedestrian: return sensors::RadarClass::kPedestrian;
    default: return sensors::RadarClass::kUnknown;
  }
}

Pose BoxPose(const KinematicState& k, const Vec3& size) {
  return Pose{k.pose.position_m + k.pose.orientation * BoxCentreInBody(size), k.pose.orientation};
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

uint64_t AttachedVehicleId(const std::string& attach_to) {
  const auto colon = attach_to.rfind(':');
  std::string name = attach_to;
  uint32_t index = 0;
  if (colon != std::string::npos) {
    name = attach_to.substr(0, colon);
    const std::string idx = attach_to.substr(colon + 1);
    char* end = nullptr;
    const unsigned long v = std::strtoul(idx.c_str(), &end, 10);
    if (idx.empty() || *end != '\0' || v > 0xffff)
      throw config::ConfigError("attach_to \"" + attach_to + "\": expected \"<node name>[:<vehicle index 0..65535>]\"");
    index = static_cast<uint32_t>(v);
  }
  if (name.empty()) throw config::ConfigError("attach_to \"" + attach_to + "\": the node name is empty");
  return VehicleId(name, index);
}

void AddStaticScene(const config::SessionDef& session, sensors::Scene& scene) {
  const auto& def = session.scene;
  if (def.ground) {
    const double h = def.ground_half_size_m;
    const std::vector<Vec3> v = {Vec3(-h, -h, 0), Vec3(h, -h, 0), Vec3(h, h, 0), Vec3(-h, h, 0)};
    const std::vector<std::array<uint32_t, 3>> tri = {{0, 1, 2}, {0, 2, 3}};
    scene.AddMesh(v, tri, sensors::SurfaceTag{kAsphalt, 0, ClassId(SemanticClass::kGround)});
  }
  for (const auto& b : def.boxes) {
    const Quat q(Eigen::AngleAxisd(b.yaw_rad, Vec3::UnitZ()));
    const Pose p{b.position_m + Vec3(0, 0, 0.5 * b.size_m.z()), q};
    const bool pole = b.size_m.x() < 0.5 && b.size_m.y() < 0.5;
    scene.AddBox(p, 0.5 * b.size_m, sensors::SurfaceTag{b.material, b.id, ClassId(pole ? SemanticClass::kPole : SemanticClass::kStaticObject)});
  }
  if (def.road_environment && session.has_road) {
    const road::Road road = BuildSessionRoad(session.road);
    road::EnvironmentDef env = road::DefaultEnvironmentDef();
    env.seed = session.road.seed;
    uint32_t id = 0xE0000000u;  // environment objects: ids from 0xE0000000 up
    for (const auto& o : road::GenerateEnvironment(road, env)) {
      uint32_t material = kConcrete;
      SemanticClass cls = SemanticClass::kStaticObject;
      switch (o.kind) {
        case road::ObjectKind::kBuilding: material = kWhiteWall; cls = SemanticClass::kBuilding; break;
        case road::ObjectKind::kTree: material = kVegetation; cls = SemanticClass::kVegetation; break;
        case road::ObjectKind::kGuardRail: material = kConcrete; cls = SemanticClass::kGuardRail; break;
        case road::ObjectKind::kStreetLight: material = kConcrete; cls = SemanticClass::kPole; break;
        case road::ObjectKind::kSign: material = 6; cls = SemanticClass::kSign; break;
      }
      const Pose p{o.position_m + Vec3(0, 0, 0.5 * o.size_m.z()), Quat(Eigen::AngleAxisd(o.yaw_rad, Vec3::UnitZ()))};
      scene.AddBox(p, 0.5 * o.size_m, sensors::SurfaceTag{material, ++id, ClassId(cls)});
    }
  }
}

std::string PackPoints(const std::vector<sensors::CloudPoint>& points) {
  static_assert(std::endian::native == std::endian::little, "the wire records are little-endian");
  std::string out(points.size() * sizeof(sensors::CloudPoint), '\0');
  if (!points.empty()) std::memcpy(out.data(), points.data(), out.size());
  return out;
}

std::vector<sensors::CloudPoint> UnpackPoints(const std::string& bytes, uint16_t stride) {
  std::vector<sensors::CloudPoint> out;
  if (stride != sizeof(sensors::CloudPoint) || bytes.size() % stride != 0) return out;
  out.resize(bytes.size() / stride);
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// --- SensorWorld ---

SensorWorld::SensorWorld(const config::SessionDef& session, uint64_t ego_id) : ego_id_(ego_id) {
  AddStaticScene(session, scene_);
  scene_.Commit();
}

void SensorWorld::Update(const std::vector<RemoteEntity>& remote) {
  has_ego_ = false;
  others_.clear();
  std::map<uint64_t, sensors::DynamicId> keep;
  for (const auto& r : remote) {
    if (r.state.id == ego_id_) {
      ego_ = r.state;
      has_ego_ = true;
      continue;
    }
    others_.push_back(r.state);
    auto it = slots_.find(r.state.id);
    if (it != slots_.end()) {
      keep.emplace(it->first, it->second);
      slots_.erase(it);
      continue;
    }
    const sensors::SurfaceTag tag{kCarPaint, Label(r.state.id), ClassId(SemanticClass::kVehicle)};
    sensors::DynamicId id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = scene_.AddDynamicBox(0.5 * r.state.box_size_m, tag, BoxPose(r.state.kinematics, r.state.box_size_m));
    }
    dirty_ = true;
    keep.emplace(r.state.id, id);
  }
  // Boxes of entities that left are parked far below the ground, for reuse.
  // (A reused box keeps its first entity's size and label: acceptable for traffic of one kind; see docs.)
  for (const auto& [entity, id] : slots_) {
    scene_.SetDynamicPose(id, Pose{Vec3(0, 0, -1e5), Quat::Identity()});
    free_.push_back(id);
    dirty_ = true;
  }
  slots_ = std::move(keep);
}

void SensorWorld::PoseAt(int64_t t_ns) {
  // Nothing moves: the committed scene is current (parked boxes were committed by the last pose).
  if (others_.empty() && !dirty_) return;
  dirty_ = false;
  for (const auto& e : others_) {
    const auto it = slots_.find(e.id);
    if (it == slots_.end()) continue;
    const KinematicState k = dr::ExtrapolateState(dr::Model::kRvb, e.kinematics, t_ns);
    scene_.SetDynamicPose(it->second, BoxPose(k, e.box_size_m));
  }
  scene_.Commit();
}

// --- SensorHostModule ---

// A camera's image maker: its own scene graph and GL context, on the module thread only.
struct SensorHostModule::CameraImager {
  viewer::SceneGraph scene;
  viewer::OffscreenRenderer renderer;
  viewer::PinholeCamera camera;
  std::vector<protocol::EntityState> statics;  // [[scene.box]] entries, drawn as static objects
  std::vector<protocol::EntityState> drawn;    // statics + the vehicles of this frame
  viewer::Image image;
  CameraImager(uint32_t width_px, uint32_t height_px) : renderer(width_px, height_px) {}
};

struct SensorHostModule::Sensor {
  sensors::SensorSpec spec;
  std::unique_ptr<CameraImager> imager;  // made at the first frame that needs it
  bool render_failed = false;            // no GL context (or no PNG encoder): ROIs only, warned once
  uint64_t images = 0;
  double render_s = 0;
  std::mt19937_64 rng;
  int64_t period_ns = 0;
  int64_t next_ns = -1;
  uint64_t sequence = 0;
  sensors::ImuState imu_state;
  uint64_t frames = 0, points = 0;
  double compute_s = 0;
};

SensorHostModule::SensorHostModule(const config::SessionDef& session, const config::NodeDef& node,
                                   std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), session_(session), ego_id_(AttachedVehicleId(node.attach_to)), attach_to_(node.attach_to) {
  if (node.sensors.empty())
    throw config::ConfigError(session.file + ": node \"" + node.name + "\" has role sensor but no [[node.sensor]]");
  std::random_device rd;
  host_epoch_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  // The module polls at 1 kHz; each sensor measures at whole multiples of its own period.
  rate_hz_ = 1000.0;
  for (const auto& t : node.sensors) {
    auto s = std::make_unique<Sensor>();
    s->spec = sensors::ReadSensorSpec(t);
    for (const auto& other : sensors_)
      if (other->spec.id == s->spec.id) t.Fail("id", "duplicate sensor id \"" + s->spec.id + "\"");
    s->rng.seed(s->spec.seed);
    s->period_ns = SToNs(1.0 / s->spec.rate_hz);
    if (s->spec.kind == protocol::StreamKind::kImu) s->imu_state = sensors::InitialImuState(s->spec.imu, s->rng);
    sensors_.push_back(std::move(s));
  }
  world_ = std::make_unique<SensorWorld>(session, ego_id_);
}

SensorHostModule::~SensorHostModule() = default;

std::vector<protocol::DataEndpoint> SensorHostModule::Streams() const {
  std::vector<protocol::DataEndpoint> out;
  for (const auto& s : sensors_) out.push_back(protocol::DataEndpoint{s->spec.id, s->spec.kind, 0, ""});
  return out;
}

protocol::SensorHeader SensorHostModule::Header(Sensor& s, int64_t stamp_ns, uint32_t node_id) const {
  protocol::SensorHeader h;
  h.sensor_id = s.spec.id;
  h.kind = s.spec.kind;
  h.node_id = node_id;
  h.sequence = ++s.sequence;
  h.stamp_ns = stamp_ns;
  h.entity_id = ego_id_;
  h.mount_position_m = s.spec.mounting.position_m;
  h.mount_orientation = s.spec.mounting.orientation;
  h.host_epoch = host_epoch_;
  return h;
}

void SensorHostModule::Step(const StepInfo& info, ModuleContext& context) {
  bool updated = false;
  for (auto& s : sensors_) {
    // Phase lock: every host measures at whole multiples of its period on the shared sim clock, so
    // lidars on different PCs finish their scans together (like PTP-locked hardware).
    if (s->next_ns < 0) s->next_ns = (info.sim_ns / s->period_ns + 1) * s->period_ns;
    if (info.sim_ns < s->next_ns) continue;
    if (!updated) {
      world_->Update(context.RemoteEntities(info.sim_ns));
      updated = true;
    }
    if (!world_->Ego()) {
      ++no_ego_steps_;
      if (!warned_no_ego_ && no_ego_steps_ > 20) {
        log_->warn("vehicle '{}' (entity {}) is not in the world yet; sensors wait for it", attach_to_, ego_id_);
        warned_no_ego_ = true;
      }
      return;
    }
    // Measured at its scheduled instant (the module polls at 1 kHz, so at most 1 ms after it).
    Measure(*s, s->next_ns, context);
    s->next_ns += s->period_ns;
    if (s->next_ns <= info.sim_ns) s->next_ns = info.sim_ns + s->period_ns;  // overrun: skip, never burst
  }
}

void SensorHostModule::Measure(Sensor& s, int64_t t_ns, ModuleContext& context) {
  const auto t0 = std::chrono::steady_clock::now();
  const protocol::EntityState& ego = *world_->Ego();
  const auto& spec = s.spec;
  const uint32_t node_id = context.NodeId();
  switch (spec.kind) {
    case protocol::StreamKind::kLidar: {
      // The scan that completes now: it started one scan period ago (flash: now).
      const bool flash = spec.lidar.kind == sensors::ScanKind::kFlash;
      const int64_t duration = flash ? 0 : SToNs(1.0 / spec.lidar.rotation_rate_hz);
      const int64_t start = t_ns - duration;
      const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, ego.kinematics, start);
      const KinematicState mount = sensors::MountPointKinematics(vehicle, spec.mounting);
      const auto raw = sensors::Scan(world_->Scene(), sensors::SensorPoseInWorld(vehicle.pose, spec.mounting),
                                     mount.velocity_mps, vehicle.angular_velocity_radps, spec.lidar, s.rng,
                                     [&](double t_s) { world_->PoseAt(start + SToNs(t_s)); });
      std::vector<sensors::CloudPoint> pts;
      pts.reserve(raw.size());
      for (const auto& p : raw) pts.push_back(sensors::ToCloudPoint(p, 0));
      protocol::PointCloud msg;
      msg.header = Header(s, start, node_id);
      msg.duration_ns = duration;
      msg.point_count = static_cast<uint32_t>(pts.size());
      msg.point_stride = sizeof(sensors::CloudPoint);
      msg.points = PackPoints(pts);
      s.points += pts.size();
      context.PublishData(msg);
      break;
    }
    case protocol::StreamKind::kRadar: {
      world_->PoseAt(t_ns);
      const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, ego.kinematics, t_ns);
      const KinematicState mount = sensors::MountPointKinematics(vehicle, spec.mounting);
      std::vector<sensors::RadarTarget> targets;
      for (const auto& e : world_->Others()) {
        const KinematicState k = dr::ExtrapolateState(dr::Model::kRvb, e.kinematics, t_ns);
        targets.push_back(sensors::RadarTarget{Label(e.id), RadarClassOf(e.kind), BoxPose(k, e.box_size_m), k.velocity_mps,
                                               e.box_size_m});
      }
      const auto objects = sensors::Measure(targets, &world_->Scene(), sensors::SensorPoseInWorld(vehicle.pose, spec.mounting),
                                            mount.velocity_mps, spec.radar, s.rng);
      protocol::RadarScan msg;
      msg.header = Header(s, t_ns, node_id);
      for (const auto& o : objects)
        msg.detections.push_back(protocol::RadarDetection{
            static_cast<float>(o.range_m), static_cast<float>(o.azimuth_rad), static_cast<float>(o.range_rate_mps),
            static_cast<float>(o.rcs_dbsm), static_cast<uint8_t>(o.object_class), o.entity_id, o.is_false_positive,
            static_cast<float>(o.length_m), static_cast<float>(o.width_m), static_cast<float>(o.orientation_rad),
            static_cast<float>(o.x_m), static_cast<float>(o.y_m)});
      s.points += msg.detections.size();
      context.PublishData(msg);
      break;
    }
    case protocol::StreamKind::kCamera: {
      world_->PoseAt(t_ns);
      const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, ego.kinematics, t_ns);
      std::vector<sensors::CameraTarget> targets;
      for (const auto& e : world_->Others()) {
        const KinematicState k = dr::ExtrapolateState(dr::Model::kRvb, e.kinematics, t_ns);
        targets.push_back(sensors::CameraTarget{Label(e.id), ClassId(SemanticClass::kVehicle), BoxPose(k, e.box_size_m),
                                                e.box_size_m});
      }
      const auto rois = sensors::GroundTruth(targets, &world_->Scene(), sensors::SensorPoseInWorld(vehicle.pose, spec.mounting),
                                             spec.camera);
      const auto k = sensors::Intrinsics(spec.camera);
      protocol::CameraFrame msg;
      msg.header = Header(s, t_ns, node_id);
      msg.width = spec.camera.image_width_px;
      msg.height = spec.camera.image_height_px;
      msg.fx = k.fx_px;
      msg.fy = k.fy_px;
      msg.cx = k.cx_px;
      msg.cy = k.cy_px;
      for (const auto& r : rois)
        msg.rois.push_back(protocol::CameraRoi{r.entity_id, r.class_id, static_cast<float>(r.u_min_px),
                                               static_cast<float>(r.v_min_px), static_cast<float>(r.u_max_px),
                                               static_cast<float>(r.v_max_px), static_cast<float>(r.depth_m),
                                               static_cast<float>(r.occlusion_ratio), r.truncated});
      s.points += msg.rois.size();
      if (spec.camera.render != "none")
        RenderImage(s, sensors::SensorPoseInWorld(vehicle.pose, spec.mounting), t_ns, msg);
      context.PublishData(msg);
      break;
    }
    case protocol::StreamKind::kImu: {
      const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, ego.kinematics, t_ns);
      const auto sample = sensors::Measure(vehicle, spec.imu, s.imu_state, s.rng);
      context.PublishData(protocol::ImuMeasurement{Header(s, t_ns, node_id), sample.angular_velocity_radps,
                                                   sample.acceleration_mps2});
      break;
    }
    case protocol::StreamKind::kGnss: {
      const KinematicState vehicle = dr::ExtrapolateState(dr::Model::kRvb, ego.kinematics, t_ns);
      const auto fix = sensors::Measure(vehicle, spec.gnss, s.rng);
      context.PublishData(protocol::GnssMeasurement{Header(s, t_ns, node_id), fix.position.latitude_deg,
                                                    fix.position.longitude_deg, fix.position.altitude_m,
                                                    fix.velocity_enu_mps, fix.horizontal_sigma_m, fix.vertical_sigma_m});
      break;
    }
    default: break;
  }
  ++s.frames;
  s.compute_s += SecondsSince(t0);
}

void SensorHostModule::RenderImage(Sensor& s, const Pose& camera_world, int64_t t_ns, protocol::CameraFrame& frame) {
  const sensors::CameraDef& def = s.spec.camera;
  if (s.render_failed) return;
  if (!s.imager) {
    // The GL context is made here, on the module thread, which is the only one that ever uses it.
    try {
      s.imager = std::make_unique<CameraImager>(def.image_width_px, def.image_height_px);
    } catch (const viewer::RenderError& e) {
      s.render_failed = true;
      log_->warn("camera '{}': cannot render images ({}); sending ROIs only", s.spec.id, e.what());
      return;
    }
    CameraImager& m = *s.imager;
    if (session_.has_road) m.scene.SetRoads(road::SessionRoadNetwork(session_.road));
    for (const auto& b : session_.scene.boxes) {
      // The footprint centre is the box's centre; an entity's origin sits BoxCentreInBody behind it.
      protocol::EntityState e;
      e.id = b.id;
      e.kind = protocol::EntityKind::kStaticObject;
      e.box_size_m = b.size_m;
      e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(b.yaw_rad, Vec3::UnitZ()));
      const Vec3 centre_in_body(BoxCentreInBody(b.size_m).x(), 0, 0);
      e.kinematics.pose.position_m = b.position_m - e.kinematics.pose.orientation * centre_in_body;
      m.statics.push_back(e);
    }
    const auto k = sensors::Intrinsics(def);
    m.camera.fx_px = k.fx_px;
    m.camera.fy_px = k.fy_px;
    m.camera.cx_px = k.cx_px;
    m.camera.cy_px = k.cy_px;
    m.camera.width_px = def.image_width_px;
    m.camera.height_px = def.image_height_px;
    m.camera.near_m = std::max(0.01, def.near_clip_m);
    m.camera.far_m = 20000.0;
    m.renderer.SetScene(m.scene.Root(), m.scene.SkyColour());
    log_->info("camera '{}': rendering {} x {} px {} images ({})", s.spec.id, def.image_width_px, def.image_height_px,
               def.render, m.renderer.GlInfo());
  }
  CameraImager& m = *s.imager;
  const auto t0 = std::chrono::steady_clock::now();
  // The vehicles where the ROIs put them: dead-reckoned to the frame's time.
  m.drawn = m.statics;
  for (const auto& e : world_->Others()) {
    m.drawn.push_back(e);
    m.drawn.back().kinematics = dr::ExtrapolateState(dr::Model::kRvb, e.kinematics, t_ns);
  }
  m.scene.Update(m.drawn);
  m.renderer.Render(camera_world, m.camera, &m.image);
  if (def.render == "png") {
    if (const std::string error = viewer::EncodePng(m.image, &frame.image); !error.empty()) {
      s.render_failed = true;
      log_->warn("camera '{}': {}; sending ROIs only", s.spec.id, error);
      frame.image.clear();
      return;
    }
  } else {
    frame.image.assign(reinterpret_cast<const char*>(m.image.rgb.data()), m.image.rgb.size());
  }
  frame.encoding = def.render;
  ++s.images;
  s.render_s += SecondsSince(t0);
}

void SensorHostModule::Summarize(std::vector<std::string>& fields) const {
  std::string list;
  for (const auto& s : sensors_)
    list += fmt::format("{}{{\"id\":\"{}\",\"kind\":\"{}\",\"frames\":{},\"items\":{},\"mean_compute_ms\":{:.3f}{}}}",
                        list.empty() ? "" : ",", s->spec.id, protocol::StreamKindName(s->spec.kind), s->frames, s->points,
                        s->frames ? 1e3 * s->compute_s / static_cast<double>(s->frames) : 0.0,
                        s->spec.kind == protocol::StreamKind::kCamera && s->spec.camera.render != "none"
                            ? fmt::format(",\"images\":{},\"mean_render_ms\":{:.3f}", s->images,
                                          s->images ? 1e3 * s->render_s / static_cast<double>(s->images) : 0.0)
                            : "");
  fields.push_back(fmt::format("\"sensors\":[{}],\"sensor_waits_no_ego\":{}", list, no_ego_steps_));
}

}  // namespace platoon::node
