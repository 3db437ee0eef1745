#include "platoon/node/sensor_host.hpp"
#include "platoon/node/camera_pinhole.hpp"

#include "platoon/can/object_frames.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/sensors/sensor_registry.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/monitor_window.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/calibration_board.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/session_scene.hpp"
#include "platoon/viewer/viewer_app.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <type_traits>
#include <variant>

namespace platoon::node {
namespace {

using sensors::SemanticClass;
constexpr uint32_t kAsphalt = 1, kConcrete = 2, kCarPaint = 3, kWhiteWall = 4, kVegetation = 5;

uint32_t ClassId(SemanticClass c) { return static_cast<uint32_t>(c); }

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A camera's images through platoon::viewer: its own scene graph and GL context, made at the first
// frame on the module thread, which is the only one that ever uses it. With monitor = "window" or
// "fullscreen", every image it sends is also shown 1:1 in the monitor-HIL window, opened on that thread too.
class ViewerCameraImager final : public sensors::CameraImager {
 public:
  // `conditions`: the host's newest light and weather, which the images are drawn in once the file gave
  // [light] or [weather] or a live change moved them off the session's start values (docs/WORLD.md).
  ViewerCameraImager(const config::SessionDef& session, const sensors::SensorSpec& spec, std::shared_ptr<spdlog::logger> log,
                     std::shared_ptr<const world::WorldConditions> conditions)
      : log_(std::move(log)), id_(spec.id), def_(spec.camera), has_road_(session.has_road), road_(session.road),
        statics_(viewer::SceneBoxEntities(session)), environment_(road::SessionEnvironment(session)),
        signs_(road::SessionPlacedSigns(session)), boards_(session.scene.calibration_boards),
        start_conditions_(session.conditions), conditions_(std::move(conditions)) {
    if (auto given = viewer::GivenConditions(session)) drawn_conditions_ = *given;
  }

  std::string Render(const Pose& camera_world, const std::vector<protocol::EntityState>& others,
                     protocol::CameraFrame& frame) override {
    if (!gl_ && !Start()) return "no GL context";
    if (conditions_ && (drawn_conditions_ ? *drawn_conditions_ != *conditions_ : *conditions_ != start_conditions_)) {
      drawn_conditions_ = *conditions_;
      gl_->scene.SetConditions(*drawn_conditions_);
    }
    gl_->drawn = statics_;
    gl_->drawn.insert(gl_->drawn.end(), others.begin(), others.end());
    gl_->scene.Update(gl_->drawn, frame.header.stamp_ns);  // indicators blink by the frame's sim time
    gl_->boards.Place(id_, camera_world);  // this camera's calibration boards move with it
    gl_->renderer.Render(camera_world, gl_->camera, &gl_->image);
    if (monitor_) Present(frame.header.stamp_ns);
    if (def_.render == "png") {
      if (std::string error = viewer::EncodePng(gl_->image, &frame.image); !error.empty()) {
        log_->warn("camera '{}': {}; sending ROIs only", id_, error);
        frame.image.clear();
        return error;
      }
    } else {
      frame.image.assign(reinterpret_cast<const char*>(gl_->image.rgb.data()), gl_->image.rgb.size());
    }
    frame.encoding = def_.render;
    return "";
  }

  void Summarize(std::string& json_members) const override {
    if (def_.monitor == "none") return;
    json_members += fmt::format(
        ",\"monitor\":\"{}\",\"monitor_open\":{},\"monitor_frames\":{},\"monitor_checked\":{},"
        "\"monitor_mismatched\":{},\"monitor_last_stamp_ns\":{},\"mean_present_ms\":{:.3f}",
        def_.monitor, monitor_ != nullptr, monitor_frames_, monitor_checked_, monitor_mismatched_, monitor_last_stamp_ns_,
        monitor_frames_ ? 1e3 * present_s_ / static_cast<double>(monitor_frames_) : 0.0);
  }

 private:
  struct Gl {
    viewer::SceneGraph scene;
    viewer::CalibrationBoards boards;  // [[scene.calibration_board]]: the world's and this camera's
    viewer::OffscreenRenderer renderer;
    viewer::PinholeCamera camera;
    std::vector<protocol::EntityState> drawn;  // statics + the vehicles of this frame
    viewer::Image image;
    Gl(const std::vector<config::CalibrationBoardDef>& board_defs, uint32_t width_px, uint32_t height_px)
        : boards(board_defs), renderer(width_px, height_px) {}
  };

  // Makes the GL context and the scene graph; false (warned once) when there is no GL context.
  bool Start() {
    try {
      gl_ = std::make_unique<Gl>(boards_, def_.image_width_px, def_.image_height_px);
    } catch (const viewer::RenderError& e) {
      log_->warn("camera '{}': cannot render images ({}); sending ROIs only", id_, e.what());
      return false;
    }
    if (has_road_) gl_->scene.SetRoads(road::SessionRoadNetwork(road_));
    if (!environment_.empty()) gl_->scene.SetEnvironment(environment_);
    if (!signs_.empty()) gl_->scene.SetSigns(signs_);
    if (drawn_conditions_) gl_->scene.SetConditions(*drawn_conditions_);
    gl_->scene.Root()->addChild(gl_->boards.Root());
    gl_->camera = SensorPinhole(def_);
    gl_->renderer.SetScene(gl_->scene.Root(), gl_->scene.SkyColour());
    log_->info("camera '{}': rendering {} x {} px {} images ({})", id_, def_.image_width_px, def_.image_height_px,
               def_.render, gl_->renderer.GlInfo());
    if (def_.monitor != "none") OpenMonitor();
    return true;
  }

  // Opens the monitor window; without one (no display, no such screen) the camera renders and sends on.
  void OpenMonitor() {
    viewer::MonitorWindowDef w = viewer::DefaultMonitorWindowDef();
    w.title = "platoon monitor: camera " + id_;
    w.width_px = def_.image_width_px;
    w.height_px = def_.image_height_px;
    w.fullscreen = def_.monitor == "fullscreen";
    w.display = def_.monitor_display;
    try {
      monitor_ = std::make_unique<viewer::MonitorWindow>(w);
    } catch (const viewer::WindowError& e) {
      log_->warn("camera '{}': cannot open the monitor window ({}); rendering and sending go on without it", id_,
                 e.what());
      return;
    }
    const uint32_t W = monitor_->WidthPx(), H = monitor_->HeightPx();
    const viewer::MonitorOrigin o = viewer::MonitorImageOrigin(W, H, def_.image_width_px, def_.image_height_px);
    log_->info("camera '{}': monitor {} on display {}: {} x {} px, image at ({}, {}) ({})", id_, def_.monitor,
               def_.monitor_display, W, H, o.x_px, o.y_px, monitor_->GlInfo());
    if (W < def_.image_width_px || H < def_.image_height_px)
      log_->warn("camera '{}': the {} x {} px image is larger than the {} x {} px monitor: only its centre part is shown",
                 id_, def_.image_width_px, def_.image_height_px, W, H);
  }

  // Shows the image just rendered (the one this frame sends) in the monitor window; with monitor_check,
  // reads the shown frame back and compares.
  void Present(int64_t stamp_ns) {
    const auto t0 = std::chrono::steady_clock::now();
    monitor_->Present(gl_->image, def_.monitor_check ? &capture_ : nullptr);
    present_s_ += SecondsSince(t0);
    ++monitor_frames_;
    monitor_last_stamp_ns_ = stamp_ns;
    if (!def_.monitor_check) return;
    ++monitor_checked_;
    if (const uint64_t bad = viewer::MonitorDifferingPixels(capture_, gl_->image); bad > 0) {
      if (monitor_mismatched_++ == 0)
        log_->warn("camera '{}': the monitor window shows {} px that differ from the frame at {} ns", id_, bad, stamp_ns);
    }
  }

  std::shared_ptr<spdlog::logger> log_;
  std::string id_;
  sensors::CameraDef def_;
  bool has_road_;
  config::RoadSessionDef road_;
  std::vector<protocol::EntityState> statics_;  // [[scene.box]] entries, drawn as static objects
  std::vector<road::EnvObject> environment_;    // the road's environment objects, as the lidar sees them
  std::vector<road::PlacedSign> signs_;         // traffic signs (docs/WORLD.md "Signs")
  std::vector<config::CalibrationBoardDef> boards_;  // [[scene.calibration_board]] entries
  world::WorldConditions start_conditions_;               // the session's at the start
  std::shared_ptr<const world::WorldConditions> conditions_;  // the host's newest
  std::optional<world::WorldConditions> drawn_conditions_;    // what the scene draws (none: fixed daylight)
  std::unique_ptr<Gl> gl_;
  std::unique_ptr<viewer::MonitorWindow> monitor_;  // null: no monitor (monitor = "none" or it did not open)
  viewer::Image capture_;                           // the monitor's last frame read back (monitor_check)
  uint64_t monitor_frames_ = 0, monitor_checked_ = 0, monitor_mismatched_ = 0;
  int64_t monitor_last_stamp_ns_ = -1;  // sim time of the last frame shown, ns; -1 before the first
  double present_s_ = 0;
};

}  // namespace

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
  {
    uint32_t id = 0xE0000000u;  // environment objects: ids from 0xE0000000 up
    for (const auto& o : road::SessionEnvironment(session)) {
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
  // Traffic signs ([signs], [[sign]]; docs/WORLD.md "Signs"): the plate a thin box of class sign whose detail
  // carries type and value (ROI ground truth), posts and gantry beams poles; ids 0xD0000000 + sign id.
  if (session.has_road) {
    const auto signs = road::SessionSigns(session);
    if (!signs.empty()) {
      const road::Road road = road::SessionRoad(session.road);
      for (const auto& g : signs) {
        const road::SignPose sp = road::PlaceSign(road, g);
        const Quat q(Eigen::AngleAxisd(sp.facing_rad, Vec3::UnitZ()));
        const uint32_t sign_id = 0xD0000000u + g.id;
        scene.AddBox(Pose{sp.plate_m, q}, Vec3(0.025, 0.5 * g.size_m, 0.5 * g.size_m),
                     sensors::SurfaceTag{6, sign_id, ClassId(SemanticClass::kSign), road::SignDetail(g.type, g.value)});
        for (const auto& foot : sp.posts_m)
          scene.AddBox(Pose{foot + Vec3(0, 0, 0.5 * sp.post_height_m), q}, Vec3(0.05, 0.05, 0.5 * sp.post_height_m),
                       sensors::SurfaceTag{kConcrete, sign_id, ClassId(SemanticClass::kPole)});
        if (sp.beam_width_m > 0) {
          const Vec3 mid = 0.5 * (sp.posts_m[0] + sp.posts_m[1]) + Vec3(0, 0, sp.post_height_m - 0.2);
          scene.AddBox(Pose{mid, q}, Vec3(0.15, 0.5 * sp.beam_width_m, 0.2),
                       sensors::SurfaceTag{kConcrete, sign_id, ClassId(SemanticClass::kPole)});
        }
      }
    }
  }
}

void SensorWorld::SetConditions(const world::WorldConditions& conditions) {
  if (conditions.variable_signs != conditions_.variable_signs)
    for (const auto& c : conditions.variable_signs)
      if (c.type < road::kSignTypeCount)
        scene_.SetStaticDetail(0xD0000000u + c.id, ClassId(SemanticClass::kSign),
                               road::SignDetail(static_cast<road::SignType>(c.type), c.value));
  conditions_ = conditions;
}

KinematicState DisplayedState(const RemoteEntity& remote, dr::Model model, int64_t at_ns) {
  KinematicState k = dr::ExtrapolateState(model, remote.state.kinematics, at_ns);
  // A running blend turns the display slightly off the dead-reckoned track; the motion continues
  // from what is displayed, so the model's velocities turn with it.
  const Quat turn = (remote.displayed.orientation * k.pose.orientation.inverse()).normalized();
  k.velocity_mps = turn * k.velocity_mps;
  k.acceleration_mps2 = turn * k.acceleration_mps2;
  k.angular_velocity_radps = turn * k.angular_velocity_radps;
  k.pose = remote.displayed;
  k.stamp_ns = at_ns;
  return k;
}

// --- SensorWorld ---

SensorWorld::SensorWorld(const config::SessionDef& session, uint64_t ego_id)
    : ego_id_(ego_id), conditions_(session.conditions) {
  AddStaticScene(session, scene_);
  scene_.Commit();
}

void SensorWorld::Update(const std::vector<RemoteEntity>& remote, int64_t displayed_ns) {
  has_ego_ = false;
  others_.clear();
  std::map<uint64_t, sensors::DynamicId> keep;
  for (const auto& r : remote) {
    SensedEntity e{r.state, dr::ModelForKind(r.state.kind)};
    e.state.kinematics = DisplayedState(r, e.model, displayed_ns);
    if (r.state.id == ego_id_) {
      ego_ = std::move(e);
      has_ego_ = true;
      continue;
    }
    others_.push_back(std::move(e));
    auto it = slots_.find(r.state.id);
    if (it != slots_.end()) {
      keep.emplace(it->first, it->second);
      slots_.erase(it);
      continue;
    }
    const sensors::SurfaceTag tag{kCarPaint, sensors::TruthLabel(r.state.id), ClassId(SemanticClass::kVehicle)};
    sensors::DynamicId id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = scene_.AddDynamicBox(0.5 * r.state.box_size_m, tag, sensors::EntityBoxPose(others_.back().state.kinematics, r.state.box_size_m));
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

KinematicState SensorWorld::EgoAt(int64_t t_ns) const {
  return dr::ExtrapolateState(ego_.model, ego_.state.kinematics, t_ns);
}

std::vector<protocol::EntityState> SensorWorld::OthersAt(int64_t t_ns) const {
  std::vector<protocol::EntityState> out;
  out.reserve(others_.size());
  for (const auto& e : others_) {
    out.push_back(e.state);
    out.back().kinematics = dr::ExtrapolateState(e.model, e.state.kinematics, t_ns);
  }
  return out;
}

const sensors::Scene& SensorWorld::SceneAt(int64_t t_ns) const {
  // Nothing moves: the committed scene is current (parked boxes were committed by the last pose).
  if (others_.empty() && !dirty_) return scene_;
  dirty_ = false;
  for (const auto& e : others_) {
    const auto it = slots_.find(e.state.id);
    if (it == slots_.end()) continue;
    const KinematicState k = dr::ExtrapolateState(e.model, e.state.kinematics, t_ns);
    scene_.SetDynamicPose(it->second, sensors::EntityBoxPose(k, e.state.box_size_m));
  }
  scene_.Commit();
  return scene_;
}

// --- SensorHostModule ---

struct SensorHostModule::Sensor {
  sensors::SensorSpec spec;
  std::unique_ptr<sensors::SensorInstance> instance;  // what the kind's registry row made
  int64_t period_ns = 0;
  int64_t next_ns = -1;
  uint64_t sequence = 0;
  uint64_t frames = 0, points = 0;
  uint64_t skipped = 0;  // instants skipped because the host was more than a period late
  double compute_s = 0;
  std::unique_ptr<can::Bus> can_bus;                  // objects with can_bus: where the lists also go as frames
  std::unique_ptr<can::ObjectListEncoder> can_objects;  // ... and how (the object mapping file)
};

namespace {

// An object list as the CAN encoder takes it (the encoder lives in shared, below the sensors library).
std::vector<can::ObjectFrameInput> CanObjects(const protocol::ObjectList& list) {
  std::vector<can::ObjectFrameInput> out;
  out.reserve(list.objects.size());
  for (const auto& o : list.objects)
    out.push_back(can::ObjectFrameInput{o.track_id, o.object_class, o.position_m.x(), o.position_m.y(), o.position_m.z(),
                                        o.velocity_mps.x(), o.velocity_mps.y(), o.size_m.x(), o.size_m.y(), o.size_m.z()});
  return out;
}

}  // namespace

SensorHostModule::SensorHostModule(const config::SessionDef& session, const config::NodeDef& node,
                                   std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), ego_id_(AttachedVehicleId(node.attach_to)), attach_to_(node.attach_to) {
  if (node.sensors.empty())
    throw config::ConfigError(session.file + ": node \"" + node.name + "\" has role sensor but no [[node.sensor]]");
  std::random_device rd;
  host_epoch_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  // Cameras draw their images through the viewer library, which sensors cannot depend on.
  sensors::SensorServices services;
  camera_conditions_ = std::make_shared<world::WorldConditions>(session.conditions);
  services.make_camera_imager = [session, log = log_, conditions = camera_conditions_](
                                    const sensors::SensorSpec& spec) -> std::unique_ptr<sensors::CameraImager> {
    return std::make_unique<ViewerCameraImager>(session, spec, log, conditions);
  };
  // The module polls at 1 kHz; each sensor measures at whole multiples of its own period.
  rate_hz_ = 1000.0;
  for (const auto& t : node.sensors) {
    auto s = std::make_unique<Sensor>();
    s->spec = sensors::ReadSensorSpec(t);
    for (const auto& other : sensors_)
      if (other->spec.id == s->spec.id) t.Fail("id", "duplicate sensor id \"" + s->spec.id + "\"");
    s->period_ns = SToNs(1.0 / s->spec.rate_hz);
    s->instance = sensors::MakeSensorInstance(s->spec, services);
    if (!s->spec.can_bus.empty()) OpenCan(*s);
    sensors_.push_back(std::move(s));
  }
  world_ = std::make_unique<SensorWorld>(session, ego_id_);
}

SensorHostModule::~SensorHostModule() = default;

void SensorHostModule::OpenCan(Sensor& s) {
  // The object mapping file and the bus; their errors name the sensor's can_map line.
  const sensors::SensorSpec& spec = s.spec;
  try {
    s.can_objects = std::make_unique<can::ObjectListEncoder>(can::LoadObjectMapping(spec.can_map));
  } catch (const std::exception& e) {
    throw config::ConfigError(spec.can_where + ": " + e.what());
  }
  try {
    s.can_bus = can::OpenBus(spec.can_bus, spec.can_dir);
  } catch (const can::BusError& e) {
    throw config::ConfigError(spec.can_where + ": can_bus: " + e.what());
  }
  const can::ObjectMappingDef& d = s.can_objects->Def();
  log_->info("sensor '{}': object lists on CAN {} with {} ({} + {}, up to {} objects)", spec.id, s.can_bus->Name(),
             spec.can_map, d.header->name, d.object->name, d.max_objects);
}

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
      world_->Update(context.RemoteEntities(info.sim_ns), info.sim_ns);
      if (auto c = context.Conditions()) {  // live light and weather (docs/WORLD.md)
        world_->SetConditions(*c);
        *camera_conditions_ = *c;
      }
      updated = true;
    }
    if (!world_->HasEgo()) {
      ++no_ego_steps_;
      if (!warned_no_ego_ && no_ego_steps_ > 20) {
        log_->warn("vehicle '{}' (entity {}) is not in the world yet; sensors wait for it", attach_to_, ego_id_);
        warned_no_ego_ = true;
      }
      return;
    }
    // Real time, more than a period late (a slow step, a starved core, the wait for the ego): the instants
    // missed are skipped, never measured in a burst, and the host measures at the latest one due. The phase
    // stays on the whole multiples of the period, so this host's scans still end with the others'. In
    // lock-step no instant is skipped: a fusion node awaits every one of them; the host catches up one
    // instant a step.
    if (const int64_t latest = info.sim_ns / s->period_ns * s->period_ns; context.StepNs() == 0 && latest > s->next_ns) {
      s->skipped += static_cast<uint64_t>((latest - s->next_ns) / s->period_ns);
      s->next_ns = latest;
    }
    // Measured at its scheduled instant (the module polls at 1 kHz, so at most 1 ms after it).
    Measure(*s, s->next_ns, context);
    s->next_ns += s->period_ns;
  }
}

void SensorHostModule::Measure(Sensor& s, int64_t t_ns, ModuleContext& context) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<sensors::Measurement> m = s.instance->Measure(*world_, t_ns);
  if (m) {
    // The instance stamps its message; the stream header (id, sequence, mounting, epoch) is the host's.
    std::visit(
        [&](auto& msg) {
          if constexpr (requires { requires std::is_same_v<decltype(msg.header), protocol::SensorHeader>; })
            msg.header = Header(s, msg.header.stamp_ns, context.NodeId());
        },
        m->message);
    s.points += m->items;
    context.PublishData(m->message);
    // The same list on CAN: a header and one frame per object, stamped with the frame's sim time.
    if (s.can_objects)
      if (const auto* list = std::get_if<protocol::ObjectList>(&m->message)) {
        s.can_bus->SetTimeNs(list->header.stamp_ns);
        for (const can::StampedFrame& f : s.can_objects->Encode(list->header.stamp_ns, CanObjects(*list))) s.can_bus->Send(f.frame);
      }
  }
  ++s.frames;
  s.compute_s += SecondsSince(t0);
}

void SensorHostModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  for (auto& s : sensors_) {
    const std::string p = prefix + s->spec.id + ".";
    registry.AddFloat(p + "rate_hz", "Hz", config::Range{0, 1e6}, "Measurement rate (fixed at start)",
                      [raw = s.get()] { return raw->spec.rate_hz; });
    registry.AddString(p + "kind", "Sensor kind", [raw = s.get()] { return std::string(protocol::StreamKindName(raw->spec.kind)); });
    s->instance->Params(registry, p);
  }
}

void SensorHostModule::Summarize(std::vector<std::string>& fields) const {
  std::string list;
  for (const auto& s : sensors_) {
    std::string kind_members;
    s->instance->Summarize(kind_members);
    if (s->can_objects) {
      const can::ObjectEncoderCounters& c = s->can_objects->Counters();
      const can::BusCounters& b = s->can_bus->Counters();
      kind_members += fmt::format(",\"can_bus\":{},\"can_lists\":{},\"can_frames\":{},\"can_objects\":{},\"can_truncated\":{},"
                                  "\"can_clamped\":{},\"can_sent\":{},\"can_send_errors\":{}",
                                  session_log::JsonQuote(s->can_bus->Name()), c.lists, c.frames, c.objects, c.truncated, c.clamped, b.sent, b.send_errors);
    }
    list += fmt::format("{}{{\"id\":\"{}\",\"kind\":\"{}\",\"frames\":{},\"skipped\":{},\"items\":{},"
                        "\"mean_compute_ms\":{:.3f}{}}}",
                        list.empty() ? "" : ",", s->spec.id, protocol::StreamKindName(s->spec.kind), s->frames, s->skipped,
                        s->points, s->frames ? 1e3 * s->compute_s / static_cast<double>(s->frames) : 0.0, kind_members);
  }
  fields.push_back(fmt::format("\"sensors\":[{}],\"sensor_waits_no_ego\":{}", list, no_ego_steps_));
}

viewer::PinholeCamera SensorPinhole(const sensors::CameraDef& def) {
  const sensors::CameraIntrinsics k = sensors::Intrinsics(def);
  viewer::PinholeCamera cam;
  cam.fx_px = k.fx_px;
  cam.fy_px = k.fy_px;
  cam.cx_px = k.cx_px;
  cam.cy_px = k.cy_px;
  cam.width_px = def.image_width_px;
  cam.height_px = def.image_height_px;
  cam.near_m = std::max(0.01, def.near_clip_m);
  cam.far_m = 20000.0;
  return cam;
}

}  // namespace platoon::node
