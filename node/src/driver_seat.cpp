#include "platoon/node/driver_seat.hpp"

#include "platoon/data/sign_columns.hpp"

#include "platoon/can/mapping.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/config/scenario.hpp"
#include "platoon/data/csv_writer.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/input/axis_mapping.hpp"
#include "platoon/input/external_stream.hpp"
#include "platoon/input/haptic.hpp"
#include "platoon/input/scripted_input.hpp"
#include "platoon/input/sdl_input.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/node/route_traffic.hpp"
#include "platoon/node/stadium_track.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/vehicle/bullet_vehicle.hpp"
#include "platoon/vehicle/driver_models.hpp"
#include "platoon/vehicle/fmu.hpp"
#include "platoon/vehicle/lane_keeping.hpp"
#include "platoon/viewer/calibration_board.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/session_scene.hpp"
#include "platoon/viewer/screen_frustum.hpp"
#include "platoon/viewer/seat_audio.hpp"
#include "platoon/viewer/seat_window.hpp"
#include "platoon/viewer/viewer_app.hpp"

#include "fmu_open.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cctype>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <thread>

namespace platoon::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

// At most this much sim time is caught up in one module step (1,000 dynamics steps, 1 s: about 13 ms of
// single-track model on one core, so a node descheduled for half a second by a loaded machine loses no
// dynamics and no data-write row); a longer stall (a suspended process, a re-anchored session clock) is
// skipped and counted rather than replayed, and the data-write rows it passes over are counted as missed.
constexpr int64_t kMaxCatchUpSteps = 1000;
// Remote entities are copied for the seat and the summary at this period, in ns (100 Hz).
constexpr int64_t kRemotePeriodNs = 10'000'000;
// Copies older than this are shown where they are, not extrapolated (a paused session, a stalled
// module thread), in s.
constexpr double kMaxExtrapolationS = 0.1;

double SecondsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// `ns` rounded down to a whole multiple of `step_ns` (also for negative times).
int64_t FloorToGrid(int64_t ns, int64_t step_ns) {
  const int64_t q = ns / step_ns;
  return (ns % step_ns != 0 && ns < 0 ? q - 1 : q) * step_ns;
}


// `k`'s pose moved on by its velocity for `dt_s` seconds (a frame a few ms after the copy).
Pose Ahead(const KinematicState& k, double dt_s) {
  if (dt_s < 0 || dt_s > kMaxExtrapolationS) dt_s = 0;
  const double yaw = k.angular_velocity_radps.z() * dt_s;
  return Pose{k.pose.position_m + k.velocity_mps * dt_s, Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ())) * k.pose.orientation};
}

// Slip angles of the front and rear axle, in rad, from the CG state as the single-track tyre model takes
// them (V2): the contact-patch velocity across each tyre over its rolling speed (at least 0.1 m/s).
std::array<double, 2> AxleSlipRad(const vehicle::VehicleDef& def, const vehicle::VehicleState& s) {
  const double vy_front = s.vy_mps + def.cg_to_front_m * s.yaw_rate_radps;
  const double c = std::cos(s.steer_rad), sn = std::sin(s.steer_rad);
  const double v_long_f = s.vx_mps * c + vy_front * sn, v_lat_f = -s.vx_mps * sn + vy_front * c;
  const double v_lat_r = s.vy_mps - def.cg_to_rear_m * s.yaw_rate_radps;
  return {std::atan(v_lat_f / std::max(std::abs(v_long_f), 0.1)), std::atan(v_lat_r / std::max(std::abs(s.vx_mps), 0.1))};
}

}  // namespace

Pose DriverStartPose(const config::SessionDef& session, const config::NodeDef& node) {
  const std::string where = session.file.empty() ? "node \"" + node.name + "\"" : session.file + ": node \"" + node.name + "\"";
  if (!session.has_road) {
    StadiumTrack track;
    track.center_m = node.track_center_m.value_or(Vec3::Zero());
    return track.At(node.start_s_m, 0.0, 0).pose;
  }
  const road::Road road = road::SessionRoad(session.road);
  if (node.start_s_m > road.Length())
    throw config::ConfigError(where + ": start_s_m " + fmt::format("{:.1f}", node.start_s_m) +
                              " m is beyond the end of the road (" + fmt::format("{:.1f}", road.Length()) + " m)");
  // The lanes where the seat starts (an OpenDRIVE road's lanes vary along s).
  const int right = road.LanesRightAt(node.start_s_m), left = road.LanesLeftAt(node.start_s_m);
  const int lanes = node.start_lane > 0 ? left : right;
  if (std::abs(node.start_lane) > lanes)
    throw config::ConfigError(where + ": start_lane " + std::to_string(node.start_lane) + " is not on the road at s = " +
                              fmt::format("{:.1f}", node.start_s_m) + " m (it has " + std::to_string(right) +
                              " lanes right (-1..-" + std::to_string(right) + ") and " + std::to_string(left) +
                              " left of its reference line there)");
  if (!road.IsDrivingLane(node.start_s_m, node.start_lane))
    throw config::ConfigError(where + ": start_lane " + std::to_string(node.start_lane) + " is not a driving lane at s = " +
                              fmt::format("{:.1f}", node.start_s_m) + " m (its type: " +
                              road::LaneTypeName(road.LaneTypeAt(node.start_s_m, node.start_lane)) + ")");
  // Right lanes (negative) run along s, left lanes against it.
  const double heading = road.Heading(node.start_s_m) + (node.start_lane > 0 ? M_PI : 0.0);
  return Pose{road.LaneCenter(node.start_s_m, node.start_lane), Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()))};
}

std::unique_ptr<vehicle::FmuVehicle> OpenDriverFmu(const config::SessionDef& session, const config::NodeDef& node,
                                                   std::shared_ptr<spdlog::logger> log) {
  // The CG cg_to_rear_m ahead of the start pose's rear axle, as the single-track model starts.
  const Pose start = DriverStartPose(session, node);
  const vehicle::VehicleDef def = NodeVehicleDef(node);
  const Vec3 forward = start.orientation * Vec3::UnitX();
  const Vec3 cg = start.position_m + def.cg_to_rear_m * forward;
  return OpenNodeFmu(session, node, node.name,
                     vehicle::FmuStart{cg.x(), cg.y(), std::atan2(forward.y(), forward.x()), node.start_speed_mps},
                     NsToS(kDriverStepNs), log);
}

// The seat window's mirrors: the three defaults, changed, removed or added to by the [[node.mirror]] tables.
std::vector<viewer::MirrorDef> SeatMirrors(const std::vector<config::SeatMirrorDef>& tables) {
  std::vector<viewer::MirrorDef> mirrors = viewer::DefaultMirrors();
  for (const config::SeatMirrorDef& t : tables) {
    auto it = std::find_if(mirrors.begin(), mirrors.end(), [&](const viewer::MirrorDef& m) { return m.name == t.name; });
    if (!t.enabled) {
      if (it != mirrors.end()) mirrors.erase(it);
      continue;
    }
    if (it == mirrors.end()) {
      mirrors.emplace_back();
      it = mirrors.end() - 1;
      it->name = t.name;
    }
    if (t.position_m) it->position_m = *t.position_m;
    if (t.yaw_deg) it->yaw_deg = *t.yaw_deg;
    if (t.pitch_deg) it->pitch_deg = *t.pitch_deg;
    if (t.hfov_deg) it->hfov_deg = *t.hfov_deg;
    if (t.screen) it->screen = *t.screen;
  }
  return mirrors;
}

// The main screen's view in the vehicle frame, for the eye tracker: the [[node.screen]] marked main (its
// off-axis frustum from the rest eye), else the seat window's symmetric view_hfov_deg frustum.
input::GazeView SeatGazeView(const config::NodeDef& node) {
  for (const auto& screen : node.screen) {
    if (!screen.main) continue;
    const viewer::ScreenCorners corners{screen.lower_left_m, screen.lower_right_m, screen.upper_left_m};
    const viewer::ScreenFrustum f = viewer::OffAxisFrustum(corners, node.eye_m, 0.1);
    return input::GazeViewOf(node.eye_m, f.orientation, f.left_m, f.right_m, f.bottom_m, f.top_m, f.near_m);
  }
  input::GazeView v;
  v.eye_m = node.eye_m;
  v.right = std::tan(0.5 * node.view_hfov_deg * M_PI / 180.0);
  v.left = -v.right;
  v.top = v.right * static_cast<double>(node.view_height_px) / static_cast<double>(node.view_width_px);
  v.bottom = -v.top;
  return v;
}

// --- The seat thread: SDL, GL and OSG live here only ---

class DriverSeatModule::Seat {
 public:
  struct Setup {
    bool window = false;                        // try to open the seat window
    viewer::SeatWindowDef window_def;
    std::optional<input::AxisMappingDef> live;  // read this device (nullopt: scripted input)
    // Force feedback: open the wheel's motor and hand it to the module (nullptr at the end), update it every 2 ms.
    bool force_feedback = false;
    std::function<void(std::shared_ptr<input::HapticDevice>)> on_haptic;
    std::function<void()> ffb_tick;
    road::RoadNetwork roads;
    std::vector<road::EnvObject> environment;   // the road's environment objects, as the lidars see them
    std::vector<road::PlacedSign> signs;        // traffic signs (docs/WORLD.md "Signs")
    std::vector<config::CalibrationBoardDef> boards;  // [[scene.calibration_board]]: the world's are drawn
    Vec3 eye_m = Vec3::Zero();
    double fps = 60;
    viewer::SeatWindow::KeyCallback on_key;     // seat keys pressed in the window (seat thread)
    std::optional<viewer::SeatAudioDef> sound;  // play the seat's sound while there is a window (nullopt: silent)
    world::WorldConditions start_conditions;    // the session's light and weather at the start ([light], [weather])
    std::optional<world::WorldConditions> conditions;  // drawn from the start: set when the file gives them
  };

  // Starts the thread and waits until it has opened what it needs. Throws std::runtime_error when the
  // live input cannot be opened; a window that cannot be opened is a warning (the seat runs headless).
  Seat(Setup setup, std::shared_ptr<spdlog::logger> log) : setup_(std::move(setup)), log_(std::move(log)) {
    auto ready = started_.get_future();
    thread_ = std::thread([this] { Run(started_); });
    const std::string error = ready.get();
    if (!error.empty()) {
      thread_.join();
      throw std::runtime_error(error);
    }
  }

  ~Seat() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  // Module thread: the driver's own entity and the command it drives with, every step.
  void SetOwn(const protocol::EntityState& own, const vehicle::VehicleInput& in) {
    std::lock_guard lock(mutex_);
    own_ = own;
    own_input_ = in;
    own_at_ = SteadyClock::now();
    has_own_ = true;
  }
  // Module thread: the axles' slip angles from the tyre model, for the tyres' sound, in rad.
  void SetTyreSlip(const std::array<double, 2>& slip_rad) {
    std::lock_guard lock(mutex_);
    slip_rad_ = slip_rad;
  }
  // Module thread: the eye in the vehicle frame (head tracking moves it).
  void SetEye(const Pose& eye_in_vehicle) {
    std::lock_guard lock(mutex_);
    eye_vehicle_ = eye_in_vehicle;
    has_eye_ = true;
  }
  // Module thread: the session's newest light and weather (ModuleContext::Conditions). The window draws
  // them once the file gave [light] or [weather] or a live change moved them off the start values; until
  // then it keeps its fixed daylight.
  void OfferConditions(const world::WorldConditions& c) {
    std::lock_guard lock(mutex_);
    if (conditions_ ? *conditions_ == c : c == setup_.start_conditions) return;
    conditions_ = c;
    ++conditions_version_;
  }
  // Module thread: the remote entities as this node displays them (pose = displayed pose).
  void SetOthers(std::vector<protocol::EntityState> others, int64_t sim_ns) {
    std::lock_guard lock(mutex_);
    others_ = std::move(others);
    others_at_ = SteadyClock::now();
    sim_ns_ = sim_ns;
  }
  // Module thread: a message shown on top of the view for `duration_s` of wall time.
  void SetMessage(const std::string& text, double duration_s) {
    std::lock_guard lock(mutex_);
    message_ = text;
    message_until_ = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double>(std::clamp(duration_s, 0.0, 3600.0)));
  }
  // Module thread: the latest command read from the live device (neutral until the first read).
  vehicle::VehicleInput Input() const {
    std::lock_guard lock(mutex_);
    return live_input_;
  }

  // Module thread: the participant's indicator (-1 left, 0 off, +1 right), toggled by "," and "." in the window.
  int Indicator() const { return indicator_.load(); }
  uint64_t Frames() const { return frames_.load(); }
  double RenderMeanMs() const {
    const uint64_t n = frames_.load();
    return n ? render_total_ms_.load() / static_cast<double>(n) : 0.0;
  }
  double RenderMaxMs() const { return render_max_ms_.load(); }
  bool HasWindow() const { return has_window_.load(); }

 private:
  void Run(std::promise<std::string>& started) {
    std::unique_ptr<viewer::SceneGraph> scene;
    std::unique_ptr<viewer::SeatWindow> window;
    std::unique_ptr<input::SdlInput> device;
    bool has_haptic = false;
    std::string device_line;
    uint64_t drawn_conditions_version = 0;  // the conditions_version_ the scene draws
    // The window first: SDL's keyboard needs its video subsystem.
    if (setup_.window) {
      try {
        scene = std::make_unique<viewer::SceneGraph>();
        if (!setup_.roads.Roads().empty()) scene->SetRoads(setup_.roads);
        if (!setup_.environment.empty()) scene->SetEnvironment(setup_.environment);
        if (!setup_.signs.empty()) scene->SetSigns(setup_.signs);
        if (setup_.conditions) scene->SetConditions(*setup_.conditions);  // docs/WORLD.md
        scene->Root()->addChild(viewer::CalibrationBoards(setup_.boards).Root());  // world boards (docs/WORLD.md)
        window = std::make_unique<viewer::SeatWindow>(setup_.window_def, *scene);
        window->SetKeyCallback(setup_.on_key);
        // A press turns that side's indicator on (the other off), a second press turns it off.
        window->SetIndicatorCallback([this](int side) { indicator_.store(indicator_.load() == side ? 0 : side); });
        log_->info("seat window {} x {} px, {:.0f} deg, debug text {} (Tab toggles it), OpenGL: {}",
                   setup_.window_def.width_px, setup_.window_def.height_px, setup_.window_def.hfov_deg,
                   setup_.window_def.hud ? "on" : "off", window->GlInfo());
        if (!setup_.window_def.screens.empty()) {
          // With screens the line above gives the window defaults, not what opened: each screen's window here.
          std::string each;
          for (const viewer::SeatScreen& sc : setup_.window_def.screens)
            each += fmt::format("{}{}", each.empty() ? "" : "; ",
                                sc.fullscreen ? fmt::format("fullscreen on display {}", sc.display)
                                              : fmt::format("{} x {} px on display {}", sc.width_px, sc.height_px, sc.display));
          log_->info("seat screens: {} window(s) ({}), off-axis frustums from the screens' corners and the eye",
                     setup_.window_def.screens.size(), each);
        }
        has_window_.store(true);
      } catch (const viewer::WindowError& e) {
        log_->warn("no seat window, running headless: {}", e.what());
        window.reset();
      }
    }
    if (setup_.live) {
      std::string error;
      device = input::SdlInput::Open(*setup_.live, &error);
      if (!device) {
        window.reset();
        started.set_value("driver input: " + error);
        return;
      }
      device_line = device->DeviceName() + (device->Note().empty() ? "" : " (" + device->Note() + ")");
      if (device->Note().empty()) log_->info("driver input: {}", device->DeviceName());
      else log_->warn("driver input: {}: {}", device->DeviceName(), device->Note());
      // The wheel's motor, when it has one: force feedback; without, one line and none.
      if (setup_.force_feedback) {
        std::string why;
        if (auto haptic = device->OpenHaptic(&why)) {
          log_->info("force feedback: on ({})", device->DeviceName());
          setup_.on_haptic(std::shared_ptr<input::HapticDevice>(std::move(haptic)));
          has_haptic = true;
        } else {
          log_->info("force feedback: none: {}", why);
        }
      }
    } else {
      device_line = "input script";
    }
    // The seat's sound with its window; without an audio device the seat runs silent.
    std::unique_ptr<viewer::SeatAudio> audio;
    if (window && setup_.sound) {
      std::string error;
      audio = viewer::SeatAudio::Open(*setup_.sound, &error);
      if (audio) log_->info("seat sound: {} at {:g} Hz, {} samples a buffer", audio->DeviceName(), audio->SampleRateHz(),
                            setup_.sound->buffer_frames);
      else log_->warn("seat sound: {}; the seat runs silent", error);
    }
    started.set_value("");

    const auto period = std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(1.0 / setup_.fps));
    auto next_frame = SteadyClock::now();
    auto last_poll = SteadyClock::now();
    auto next_ffb = SteadyClock::now();
    std::vector<protocol::EntityState> others;
    while (!stop_.load(std::memory_order_relaxed) && (window || device)) {
      // The device between frames, about every millisecond: the dynamics read it at 1 kHz.
      if (device) {
        const auto now = SteadyClock::now();
        const vehicle::VehicleInput in = device->Poll(SecondsBetween(last_poll, now));
        last_poll = now;
        std::lock_guard lock(mutex_);
        live_input_ = in;
      }
      if (has_haptic && SteadyClock::now() >= next_ffb) {
        setup_.ffb_tick();
        next_ffb = SteadyClock::now() + std::chrono::milliseconds(2);
      }
      if (window && SteadyClock::now() >= next_frame) {
        if (!window->PollEvents()) {
          // The driver closed the seat: the node leaves the session, as on Ctrl-C.
          log_->info("seat window closed: leaving the session");
          audio.reset();  // before the window: its teardown quits SDL
          window.reset();
          has_window_.store(false);
          std::raise(SIGINT);
          break;
        }
        const auto t0 = SteadyClock::now();
        protocol::EntityState own;
        vehicle::VehicleInput own_input;
        bool has_own;
        SteadyClock::time_point own_at, others_at;
        int64_t sim_ns;
        std::array<double, 2> slip_rad;
        std::string message;
        Pose eye_v{setup_.eye_m, Quat::Identity()};
        {
          std::lock_guard lock(mutex_);
          if (has_eye_) eye_v = eye_vehicle_;
          if (SteadyClock::now() < message_until_) message = message_;
          own = own_;
          own_input = own_input_;
          has_own = has_own_;
          own_at = own_at_;
          others = others_;
          others_at = others_at_;
          sim_ns = sim_ns_;
          slip_rad = slip_rad_;
          if (conditions_version_ != drawn_conditions_version && conditions_) {
            scene->SetConditions(*conditions_);
            drawn_conditions_version = conditions_version_;
          }
        }
        // Everyone where they are at this frame: the copies are a few ms old.
        for (auto& e : others) e.kinematics.pose = Ahead(e.kinematics, SecondsBetween(others_at, t0));
        // Sim time at this frame, for the indicators' blink: the copies' time moved on by their age.
        const Pose body = has_own ? Ahead(own.kinematics, SecondsBetween(own_at, t0)) : Pose{};
        // The own car is not drawn (the cockpit is), but its headlights light the road at night.
        if (has_own) {
          protocol::EntityState own_now = own;
          own_now.kinematics.pose = body;
          scene->SetOwnVehicle(own_now);
        }
        scene->Update(others, sim_ns + static_cast<int64_t>(1e9 * SecondsBetween(others_at, t0)));
        const Pose eye{body.position_m + body.orientation * eye_v.position_m, body.orientation * eye_v.orientation};
        const double speed = own.kinematics.velocity_mps.norm();
        std::vector<std::string> lines = {fmt::format("{:.0f} km/h   sim {:.1f} s", speed * 3.6, NsToS(sim_ns)),
                             fmt::format("steer {:+.2f}  throttle {:.2f}  brake {:.2f}", own_input.steer,
                                         own_input.throttle, own_input.brake),
                             fmt::format("{} other vehicles", others.size()), device_line};
        // The own car's instruments: what the vehicle sent (speed, lamps), a displayed gear and engine speed.
        viewer::CockpitState cockpit;
        cockpit.speed_mps = own.kinematics.velocity_mps.dot(body.orientation * Vec3::UnitX());
        const viewer::GearRpm gear = viewer::AutomaticGearDisplay(cockpit.speed_mps, own_input.throttle);
        cockpit.gear = gear.gear;
        cockpit.rpm = gear.rpm;
        cockpit.indicator_left = own.lights.indicator_left;
        cockpit.indicator_right = own.lights.indicator_right;
        cockpit.headlights = own.lights.headlights;
        cockpit.sim_ns = sim_ns + static_cast<int64_t>(1e9 * SecondsBetween(others_at, t0));
        cockpit.eye_in_vehicle = eye_v;
        cockpit.interior_light = viewer::InteriorLight(scene->Look());
        window->SetCockpit(cockpit);
        if (audio) {
          // The sound of this frame: the cockpit's engine speed, the pedal as load, the lamp as the tell-tale shows it.
          viewer::SoundState sound;
          sound.rpm = cockpit.rpm;
          sound.load = own_input.throttle;
          sound.speed_mps = speed;
          sound.slip_front_rad = slip_rad[0];
          sound.slip_rear_rad = slip_rad[1];
          sound.indicator_lamp = (cockpit.indicator_left || cockpit.indicator_right) && viewer::SceneGraph::IndicatorLit(cockpit.sim_ns);
          audio->Set(sound);
        }
        window->Render(eye, lines, message);
        const double ms = 1e3 * SecondsBetween(t0, SteadyClock::now());
        frames_.fetch_add(1);
        render_total_ms_.store(render_total_ms_.load() + ms);
        if (ms > render_max_ms_.load()) render_max_ms_.store(ms);
        next_frame += period;
        if (next_frame < SteadyClock::now()) next_frame = SteadyClock::now() + period;  // slow frame: skip, never burst
      }
      auto wake = SteadyClock::now() + std::chrono::milliseconds(1);
      if (window && !device) wake = next_frame;
      else if (window) wake = std::min(wake, next_frame);
      std::this_thread::sleep_until(wake);
    }
    if (has_haptic) setup_.on_haptic(nullptr);  // zero torque, the motor closed while SDL is still up
    // The device and the sound before the window: the window's teardown quits SDL.
    if (audio)
      log_->info("seat sound: {:.1f} s played, synthesis {:.2f} ms per s of sound",
                 static_cast<double>(audio->SamplesRendered()) / audio->SampleRateHz(), audio->RenderCostMsPerS());
    audio.reset();
    device.reset();
    window.reset();
  }

  Setup setup_;
  std::shared_ptr<spdlog::logger> log_;
  std::promise<std::string> started_;  // "" once the seat runs, else why it cannot
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> has_window_{false};
  std::atomic<int> indicator_{0};
  std::atomic<uint64_t> frames_{0};
  std::atomic<double> render_total_ms_{0}, render_max_ms_{0};

  mutable std::mutex mutex_;
  protocol::EntityState own_;
  vehicle::VehicleInput own_input_;
  bool has_own_ = false;
  Pose eye_vehicle_;
  bool has_eye_ = false;
  SteadyClock::time_point own_at_, others_at_;
  std::vector<protocol::EntityState> others_;
  int64_t sim_ns_ = 0;
  std::array<double, 2> slip_rad_{};     // front, rear axle slip angle, in rad
  vehicle::VehicleInput live_input_;
  std::string message_;                  // the seat message and until when it shows
  std::optional<world::WorldConditions> conditions_;  // light and weather to draw (OfferConditions)
  uint64_t conditions_version_ = 0;      // counts the changes of conditions_
  SteadyClock::time_point message_until_{};
};

// --- The module ---

DriverSeatModule::DriverSeatModule(const config::SessionDef& session, const config::NodeDef& node,
                                   std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), id_(VehicleId(node.name, 0)), def_(NodeVehicleDef(node)), controller_(MakeController(node.controller)) {
  // Start: the rear axle at the start pose, so the CG sits cg_to_rear_m ahead of it.
  const Pose start = DriverStartPose(session, node);
  const Vec3 forward = start.orientation * Vec3::UnitX();
  const Vec3 cg = start.position_m + def_.cg_to_rear_m * forward;
  state_.x_m = cg.x();
  state_.y_m = cg.y();
  state_.yaw_rad = std::atan2(forward.y(), forward.x());
  state_.vx_mps = node.start_speed_mps;
  ground_z_m_ = start.position_m.z();
  if (node.vehicle_model == "bullet") {
    // The Bullet vehicle stands on the session road's mesh (or a flat ground at the start's height), at rest.
    if (node.start_speed_mps > 0)
      throw config::ConfigError(node.where + ": start_speed_mps: the Bullet vehicle starts at rest, got " +
                                fmt::format("{:g}", node.start_speed_mps));
    bullet_world_ = std::make_unique<vehicle::BulletWorld>();
    if (session.has_road) bullet_world_->AddRoadGround(road::SessionRoad(session.road));
    else bullet_world_->AddFlatGround(ground_z_m_);
    bullet_ = std::make_unique<vehicle::BulletVehicle>(*bullet_world_, def_, vehicle::DefaultBulletVehicleDef(), start.position_m,
                                                       state_.yaw_rad);
    log_->info("driver vehicle model: Bullet raycast vehicle on {}", session.has_road ? "the road mesh" : "a flat ground");
  }
  if (node.vehicle_model == "fmu") {
    fmu_ = OpenDriverFmu(session, node, log_);
    state_ = fmu_->State();
    log_->info("driver vehicle model: FMU {} (\"{}\", {}), optional variables: {}{}", node.fmu, fmu_->Description().model_name,
               fmu_->Description().model_identifier, fmu_->OptionalVariables(),
               fmu_->TakesStartPose() ? "" : "; no start parameters x0, y0, yaw0: its pose is moved onto the start");
  }
  if (controller_.Size() > 0) {
    std::string names;
    for (const auto& n : controller_.Names()) names += (names.empty() ? "" : ", ") + n;
    log_->info("driver controller layer: {}", names);
  }

  Seat::Setup setup;
  const std::string prefix = "scripted:";
  if (node.input.rfind(prefix, 0) == 0) {
    try {
      script_ = std::make_unique<input::ScriptedInput>(input::ScriptedInput::Load(node.input.substr(prefix.size())));
    } catch (const input::ScriptError& e) {
      throw config::ConfigError(std::string("node \"") + node.name + "\" input: " + e.what());
    }
    log_->info("driver input: script {} ({} rows, {:.1f} s)", script_->Source(), script_->Rows().size(), script_->EndS());
  } else if (node.input == "model:follow") {
    // The driver model keeps its start lane on the session road (straight ahead without one).
    model_ = true;
    model_def_ = node.driver_model;
    model_lane_ = node.start_lane;
    if (session.has_road) {
      model_road_ = std::make_unique<road::Road>(road::SessionRoad(session.road));
      model_roads_ = road::SessionRoadNetwork(session.road);
    }
    log_->info("driver input: model (IDM to {:.1f} m/s, time gap {:.2f} s, reaction {:.2f} s)", model_def_.desired_speed_mps,
               model_def_.time_gap_s, model_def_.reaction_time_s);
  } else if (node.input == "sdl") {
    setup.live = node.input_mapping ? input::ReadAxisMapping(*node.input_mapping) : input::DefaultAxisMappingDef();
    // The keys that drive the car send no marker (SDL's names in lower case, as seat keys are named).
    for (const std::string* k : {&setup.live->key_left, &setup.live->key_right, &setup.live->key_throttle, &setup.live->key_brake}) {
      std::string lower = *k;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      driving_keys_.insert(lower);
    }
  } else if (node.input == "stream") {
    // The control stream: UDP datagrams from another process (docs/PROTOCOL.md, "External streams").
    try {
      control_stream_.socket = std::make_unique<input::StreamSocket>(node.stream_address, node.stream_port);
    } catch (const std::runtime_error& e) {
      throw config::ConfigError(node.where + ": stream_port: " + e.what());
    }
    stream_input_.brake = 1.0;  // held until the first command
    log_->info("driver input: control stream on udp://{}:{} (timeout {:.0f} ms)", node.stream_address, node.stream_port,
               node.stream_timeout_s * 1e3);
  } else if (node.input == "can") {
    // The commands of an ECU over CAN (docs/CAN.md); the bus and the mapping are opened below.
    can_input_ = true;
  } else {
    throw config::ConfigError("node \"" + node.name + "\": input must be \"sdl\", \"scripted:<file>\", \"model:follow\", \"stream\" or \"can\", got \"" + node.input + "\"");
  }
  stream_timeout_s_ = node.stream_timeout_s;
  if (!node.can_bus.empty()) {
    // CAN: the mapping (and its DBC), then the bus; relative candump logs are found next to the session file.
    const std::string where = node.can_where.empty() ? "node \"" + node.name + "\" can_map" : node.can_where;
    try {
      can_ = std::make_unique<can::CanMapping>(can::LoadMapping(node.can_map), node.can_timeout_s);
    } catch (const std::exception& e) {
      throw config::ConfigError(where + ": " + e.what());
    }
    if (can_input_ && !can_->HasRx())
      throw config::ConfigError(where + ": input = \"can\" needs an rx message (steer, throttle, brake) in " + node.can_map);
    // Live parameters: checked against what the seat knows of its node's registry at start, its own
    // parameters and the node's faults.* (the runtime's registration; only getters are read here). The
    // runtime's role, sim_time_s and module_rate_hz are not for a signal.
    {
      config::ParamRegistry known;
      Params(known, "node." + node.name + ".");
      transport::FaultDef faults;
      config::AddFaultParams(known, "node." + node.name + ".faults.", faults, [] {});
      try {
        can_params_ = ResolveCanParams(can_->Def(), known, node.name);
      } catch (const config::ConfigError& e) {
        throw config::ConfigError(where + ": " + e.what());
      }
      can_param_values_.assign(can_params_.size(), std::nan(""));
    }
    const auto slash = session.file.rfind('/');
    try {
      can_bus_ = can::OpenBus(node.can_bus, slash == std::string::npos ? std::string() : session.file.substr(0, slash));
    } catch (const can::BusError& e) {
      throw config::ConfigError(where + ": can_bus: " + e.what());
    }
    log_->info("driver CAN: {} with {} ({} messages){}", can_bus_->Name(), node.can_map, can_->Def().messages.size(),
               can_input_ ? fmt::format(", commands from the bus (timeout {:.0f} ms of sim time)", node.can_timeout_s * 1e3)
                          : can_->HasRx() ? ", its rx messages unused (input is not \"can\")" : "");
    if (!can_params_.empty())
      log_->info("driver CAN: {} live parameter signal(s){}", can_params_.size(), can_->HasParamRx() ? ", received values set them" : "");
  }
  head_tracking_timeout_s_ = node.head_tracking_timeout_s;
  eye_rest_m_ = node.eye_m;
  if (node.head_tracking_port != 0) {
    try {
      pose_stream_.socket = std::make_unique<input::StreamSocket>(node.stream_address, node.head_tracking_port);
    } catch (const std::runtime_error& e) {
      throw config::ConfigError(node.where + ": head_tracking_port: " + e.what());
    }
    log_->info("driver head tracking: pose stream on udp://{}:{} (timeout {:.0f} ms)", node.stream_address,
               node.head_tracking_port, node.head_tracking_timeout_s * 1e3);
  }

  setup.window = !node.headless;
  if (setup.window && session.has_road) setup.roads = road::SessionRoadNetwork(session.road);
  if (setup.window) setup.environment = road::SessionEnvironment(session);
  if (setup.window) setup.signs = road::SessionPlacedSigns(session);
  setup.start_conditions = session.conditions;
  setup.conditions = viewer::GivenConditions(session);
  setup.boards = session.scene.calibration_boards;
  setup.window_def.title = "platoon driver seat: " + node.name;
  setup.window_def.width_px = node.view_width_px;
  setup.window_def.height_px = node.view_height_px;
  setup.window_def.hfov_deg = node.view_hfov_deg;
  setup.window_def.hud = node.hud;
  setup.window_def.cockpit = node.cockpit;
  setup.window_def.mirrors = node.mirrors ? SeatMirrors(node.mirror) : std::vector<viewer::MirrorDef>{};
  // [[node.screen]]: a window per screen, each with the off-axis frustum of its corners (docs/INPUTS.md, "Screens").
  for (const config::SeatScreenDef& sd : node.screen)
    setup.window_def.screens.push_back(viewer::SeatScreen{viewer::ScreenCorners{sd.lower_left_m, sd.lower_right_m, sd.upper_left_m},
                                                          sd.display, sd.fullscreen, sd.width_px, sd.height_px, sd.position_px,
                                                          sd.main, sd.where});
  setup.eye_m = node.eye_m;
  setup.fps = node.view_fps;
  setup.on_key = [this](const std::string& key) { OnSeatKey(key); };
  // Force feedback (docs/INPUTS.md): the settings, and the wheel's motor from the seat thread.
  ffb_def_ = ForceFeedbackDef{node.ffb_gain, node.ffb_spring, node.ffb_damping, node.ffb_max_torque};
  if (const std::string err = ValidateForceFeedbackDef(ffb_def_); !err.empty())
    throw config::ConfigError(session.file + ": node \"" + node.name + "\": " + err);
  ffb_enabled_ = node.force_feedback && setup.live.has_value();
  setup.force_feedback = ffb_enabled_;
  if (ffb_enabled_ && session.server.broadcast_hz * NsToS(kForceFeedbackLossNs) < 2.0)
    log_->warn("force feedback: broadcast_hz {:g} sends world states further apart than half the {} ms loss timeout: "
               "the wheel may go slack between them", session.server.broadcast_hz, kForceFeedbackLossNs / 1'000'000);
  setup.on_haptic = [this](std::shared_ptr<input::HapticDevice> d) { 
    SetHapticDevice(std::move(d), [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count(); });
  };
  setup.ffb_tick = [this] { ForceFeedbackTick(); };
  if (node.sound) {
    viewer::SeatAudioDef& a = setup.sound.emplace();
    a.sound.volume = node.sound_volume;
    a.sound.engine = node.sound_engine;
    a.sound.tyres = node.sound_tyres;
    a.sound.wind = node.sound_wind;
    a.sound.indicator = node.sound_indicator;
    a.sound.engine_cylinders = node.engine_cylinders;
  }
  if (setup.window || setup.live) {
    seat_ = std::make_unique<Seat>(std::move(setup), log_);
    seat_->SetOwn(Truth(), input_);  // the view from the start until the session runs
  }
  // Data write: the road for the road-relative columns, the leader search only when a column needs it.
  if (node.data_write) {
    const config::DataWriteDef& w = *node.data_write;
    sample_period_ns_ = w.PeriodNs();
    if (session.has_road) roads_ = road::SessionRoadNetwork(session.road);
    signs_ = road::SessionSigns(session);
    if (!signs_.empty()) sign_road_.emplace(road::SessionRoad(session.road));
    metrics_def_.leader = std::any_of(w.columns.begin(), w.columns.end(), [](data::Column c) {
      return c == data::Column::kHeadway || c == data::Column::kTimeHeadway || c == data::Column::kTtc;
    });
    data::CsvWriterDef write_def = data::DefaultCsvWriterDef(w.path, w.columns);
    std::vector<NodeNaming> naming = config::SessionNaming(session);
    naming.push_back(NodeNaming{node.name, true, node.vehicle_names});  // a node the file does not list
    write_def.name = EntityDisplayName(id_, naming);  // the first column, "ego" for the node "ego"
    write_def.markers = true;  // the last column: the session's markers in each row's period (OnEvent)
    writer_ = std::make_unique<data::CsvWriter>(std::move(write_def), log_);
    if (writer_->Ok())
      log_->info("data write: {} columns at {:g} Hz of sim time to {}", w.columns.size(), w.rate_hz, writer_->Stats().path);
  }
  // The eye tracker: Pupil's gaze through the main screen's view onto vehicles and mirrors (docs/INPUTS.md "Eye tracker").
  if (!node.gaze.empty()) {
    GazeRecorderDef g;
    g.pupil.remote = node.gaze;
    g.path = node.gaze_path;
    g.min_confidence = node.gaze_min_confidence;
    g.view_in_vehicle = SeatGazeView(node);
    // Mirror insets: the window's rectangles (left, top, right, bottom; y down) as gaze rectangles (y up).
    if (node.mirrors)
      for (const auto& m : SeatMirrors(node.mirror)) g.mirrors.push_back({m.name, m.screen[0], 1 - m.screen[3], m.screen[2], 1 - m.screen[1]});
    gaze_naming_ = config::SessionNaming(session);
    gaze_naming_.push_back(NodeNaming{node.name, true, node.vehicle_names});
    log_->info("gaze: Pupil Remote {}, samples to {}", node.gaze, node.gaze_path);
    gaze_ = std::make_unique<GazeRecorder>(std::move(g), log_);
  }
  log_->info("driver vehicle {} starts at ({:.1f}, {:.1f}) m heading {:.1f} deg; dynamics every {} ms{}", id_,
             start.position_m.x(), start.position_m.y(), state_.yaw_rad * 180.0 / M_PI, kDriverStepNs / 1'000'000,
             seat_ && seat_->HasWindow() ? "" : ", no window");
}

DriverSeatModule::~DriverSeatModule() {
  // The seat thread first (it zeroes and closes the SDL motor), then a device handed in: zero at exit.
  seat_.reset();
  SetHapticDevice(nullptr, {});
}

protocol::EntityState DriverSeatModule::Truth() const {
  protocol::EntityState e;
  e.id = id_;
  e.kind = protocol::EntityKind::kCar;
  if (bullet_) {
    e.kinematics = bullet_->State(vehicle_ns_);
  } else {
    e.kinematics = vehicle::ToKinematic(def_, state_, vehicle_ns_);
    e.kinematics.pose.position_m.z() += ground_z_m_;
  }
  e.controls = protocol::Controls{static_cast<float>(input_.steer), static_cast<float>(input_.throttle),
                                  static_cast<float>(input_.brake)};
  e.lights.headlights = true;
  e.lights.brake = input_.brake > 0.05;
  e.lights.reverse = state_.vx_mps < -0.1;
  // The indicator an ECU commands over CAN (1 left, 2 right).
  if (can_input_ && can_indicator_ != 0) {
    e.lights.indicator_left = can_indicator_ == 1;
    e.lights.indicator_right = can_indicator_ == 2;
  }
  // The participant's own indicators (keys "," and "."), sent on the wire like traffic's.
  if (seat_) {
    const int indicator = seat_->Indicator();
    e.lights.indicator_left = indicator < 0;
    e.lights.indicator_right = indicator > 0;
  }
  return e;
}

void DriverSeatModule::Step(const StepInfo& info, ModuleContext& context) {
  const auto wall_start = SteadyClock::now();
  if (start_ns_ < 0) {
    start_ns_ = last_step_ns_ = info.sim_ns;
    // The dynamics run on the session's 1 ms grid, whenever the module first wakes up.
    script_t0_ns_ = vehicle_ns_ = FloorToGrid(info.sim_ns, kDriverStepNs);
    SampleIfDue(context);
    CanSendIfDue(context);
  } else {
    max_step_gap_ns_ = std::max(max_step_gap_ns_, info.sim_ns - last_step_ns_);
    last_step_ns_ = info.sim_ns;
  }
  ++steps_;

  // Seat keys pressed since the last step: one marker each, at this step's sim time.
  std::vector<std::string> keys;
  {
    std::lock_guard lock(keys_mutex_);
    keys.swap(keys_);
  }
  for (const auto& key : keys) {
    context.Mark(config::SeatKeyMarker(key));
    ++key_markers_;
    log_->info("seat key {} at sim {:.3f} s", key, NsToS(info.sim_ns));
  }

  // Dynamics in fixed 1 ms steps up to this step's sim time; a script is read at each step's own time,
  // so a scripted run is the same whatever the module's wake-up jitter.
  PollStreams();
  CanReceive(context);
  const vehicle::VehicleInput live = control_stream_.socket ? stream_input_
                                     : seat_ && !script_    ? seat_->Input()
                                                            : vehicle::VehicleInput{};
  int64_t n = std::max<int64_t>(0, (info.sim_ns - vehicle_ns_) / kDriverStepNs);
  if (n > kMaxCatchUpSteps) {
    skipped_steps_ += static_cast<uint64_t>(n - kMaxCatchUpSteps);
    const int64_t skip_to_ns = vehicle_ns_ + (n - kMaxCatchUpSteps) * kDriverStepNs;
    if (writer_) {
      // Sample instants in (vehicle_ns_, skip_to_ns]: no state was computed for them.
      const int64_t from = FloorToGrid(vehicle_ns_, sample_period_ns_), to = FloorToGrid(skip_to_ns, sample_period_ns_);
      const uint64_t missed = static_cast<uint64_t>(std::max<int64_t>(0, (to - from) / sample_period_ns_));
      if (missed > 0 && samples_missed_ == 0)
        log_->warn("data write: the node stalled for {:.2f} s of sim time; {} rows were not written (counted as missed)",
                   NsToS(n * kDriverStepNs), missed);
      samples_missed_ += missed;
    }
    vehicle_ns_ = skip_to_ns;
    n = kMaxCatchUpSteps;
  }
  for (int64_t i = 0; i < n; ++i) {
    driver_input_ = script_      ? script_->At(NsToS(vehicle_ns_ - script_t0_ns_))
                    : model_     ? ModelInput(vehicle_ns_)
                    : can_input_ ? CanInput(vehicle_ns_)
                                 : live;
    // The controller layer corrects the command before the vehicle model takes it.
    input_ = controller_.Apply(def_, state_, driver_input_);
    if (!(input_ == driver_input_)) ++controller_active_steps_;
    if (bullet_) {
      bullet_->SetInput(input_);
      bullet_world_->Step(NsToS(kDriverStepNs));
      vehicle_ns_ += kDriverStepNs;
      SyncFromBullet();
    } else if (fmu_) {
      StepFmu();
      vehicle_ns_ += kDriverStepNs;
    } else {
      state_ = vehicle::Step(def_, state_, input_, NsToS(kDriverStepNs));
      vehicle_ns_ += kDriverStepNs;
    }
    ++dynamics_steps_;
    SampleIfDue(context);
    CanSendIfDue(context);
  }
  if (n > 0) NoteApplied(control_stream_);
  if (n > 0) FeedForceFeedback(context, n);

  // The runtime's send policy decides what goes out; the seat gets every step.
  const protocol::EntityState truth = Truth();
  context.Publish(truth);
  // Gaze samples that came in: stamped with this step's sim time, mapped among the displayed vehicles.
  if (gaze_ && gaze_->Pending()) {
    gaze_boxes_.clear();
    for (const auto& r : context.RemoteEntities(info.sim_ns)) {
      if (r.state.id == id_) continue;
      input::GazeBox b;
      b.id = r.state.id;
      b.orientation = r.displayed.orientation;
      b.centre_m = r.displayed.position_m + r.displayed.orientation * BoxCentreInBody(r.state.box_size_m);
      b.half_extents_m = 0.5 * r.state.box_size_m;
      gaze_boxes_.push_back(b);
    }
    gaze_->Step(info.sim_ns, truth.kinematics.pose, gaze_boxes_, [this](uint64_t id) { return EntityDisplayName(id, gaze_naming_); });
  }
  if (seat_) seat_->SetOwn(truth, input_);
  if (seat_) seat_->SetTyreSlip(AxleSlipRad(def_, state_));

  if (info.sim_ns >= next_remote_ns_) {
    next_remote_ns_ = info.sim_ns + kRemotePeriodNs;
    const std::vector<RemoteEntity> remote = context.RemoteEntities(info.sim_ns);
    TrackRemote(remote);
    if (model_) Perceive(remote, info.sim_ns);
    if (seat_ && seat_->HasWindow()) {
      std::vector<protocol::EntityState> others;
      others.reserve(remote.size());
      for (const auto& r : remote) {
        if (r.state.id == id_) continue;
        others.push_back(r.state);
        others.back().kinematics.pose = r.displayed;
      }
      seat_->SetOthers(std::move(others), info.sim_ns);
      if (auto c = context.Conditions()) seat_->OfferConditions(*c);  // live light and weather
    }
  }

  if (script_ && !script_end_logged_ && NsToS(vehicle_ns_ - script_t0_ns_) > script_->EndS() &&
      std::abs(state_.vx_mps) < 0.05) {
    script_end_logged_ = true;
    log_->info("input script done, vehicle at rest at ({:.2f}, {:.2f}) m after {:.1f} m", truth.kinematics.pose.position_m.x(),
               truth.kinematics.pose.position_m.y(), state_.distance_m);
  }

  const double wall_us = 1e6 * SecondsBetween(wall_start, SteadyClock::now());
  step_wall_sum_us_ += wall_us;
  step_wall_max_us_ = std::max(step_wall_max_us_, wall_us);
  ++step_wall_hist_[std::min<size_t>(static_cast<size_t>(wall_us), step_wall_hist_.size() - 1)];
}

namespace {
int64_t SteadyNs() { return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count(); }
}  // namespace

void DriverSeatModule::SetHapticDevice(std::shared_ptr<input::HapticDevice> device, std::function<int64_t()> now_ns) {
  std::shared_ptr<input::HapticDevice> old;
  const bool set = device != nullptr;
  {
    std::lock_guard lock(ffb_mutex_);
    old = std::move(haptic_);
    haptic_ = std::move(device);
    if (now_ns) ffb_now_ns_ = std::move(now_ns);
    // A new device starts from zero: nothing is fed until the next dynamics step and world state.
    ffb_feed_ns_ = ffb_world_ns_ = -1;
    ffb_zero_reason_ = "start";
  }
  if (old) old->Stop();
  if (set && (bullet_ || fmu_))
    log_->info("force feedback: vehicle_model \"{}\" gives no aligning torque: centring spring and damping only",
               bullet_ ? "bullet" : "fmu");
}

void DriverSeatModule::FeedForceFeedback(ModuleContext& context, int64_t steps) {
  std::lock_guard lock(ffb_mutex_);
  if (!haptic_ || !ffb_now_ns_) return;
  const int64_t now = ffb_now_ns_();
  // The wheel's own position and rate (the driver's command), and the tyres' torque of this state.
  ForceFeedbackFeed feed;
  feed.steer = std::clamp(driver_input_.steer, -1.0, 1.0);
  feed.steer_rate_ps = (feed.steer - ffb_last_steer_) / NsToS(steps * kDriverStepNs);
  ffb_last_steer_ = feed.steer;
  feed.aligning_nm = bullet_ || fmu_ ? 0.0 : vehicle::FrontAligningTorqueNm(def_, state_);
  ffb_feed_ = feed;
  ffb_feed_ns_ = now;
  // A world state received since the last step: the server is there.
  uint64_t received = 0;
  int64_t gap_ns = 0;
  context.WorldStats(received, gap_ns);
  if (received != ffb_world_received_) {
    ffb_world_received_ = received;
    ffb_world_ns_ = now;
  }
}

ForceFeedbackOutput DriverSeatModule::ForceFeedbackTick() {
  std::shared_ptr<input::HapticDevice> device;
  ForceFeedbackOutput out;
  std::string was;
  {
    std::lock_guard lock(ffb_mutex_);
    const int64_t now = ffb_now_ns_ ? ffb_now_ns_() : 0;
    out = ForceFeedbackUpdate(ffb_def_, ffb_feed_, ffb_feed_ns_, ffb_world_ns_, now);
    device = haptic_;
    was = ffb_zero_reason_;
    ffb_zero_reason_ = out.zero_reason;
    ++ffb_updates_;
    if (!out.zero_reason.empty()) ++ffb_zero_updates_;
    ffb_max_abs_ = std::max(ffb_max_abs_, std::abs(out.torque));
  }
  if (device) device->SetTorque(out.torque);
  // Changes between live and zero, once each (pause and resume, the server lost and back).
  if (device && was != out.zero_reason) {
    if (out.zero_reason.empty()) log_->info("force feedback: live");
    else if (was != "start" || out.zero_reason != "no dynamics") log_->info("force feedback: zero ({})", out.zero_reason);
  }
  return out;
}

void DriverSeatModule::Drain(StreamState& st, bool control) {
  std::vector<uint8_t> buffer;
  // At most 256 datagrams a step: a flood cannot hold the 1 kHz loop; the rest wait for the next step.
  for (int i = 0; i < 256 && st.socket->Receive(buffer); ++i) {
    std::string error;
    bool taken = false;
    uint32_t seq = 0;
    int64_t sent_ns = 0;
    if (control) {
      if (auto c = input::DecodeControl(buffer.data(), buffer.size(), error)) {
        seq = c->seq, sent_ns = c->sent_ns;
        if (st.stats.received == 0 || input::SeqNewer(seq, st.stats.last_seq)) {
          stream_input_ = vehicle::VehicleInput{};
          stream_input_.steer = c->steer, stream_input_.throttle = c->throttle, stream_input_.brake = c->brake;
          taken = true;
        }
      }
    } else if (auto p = input::DecodePose(buffer.data(), buffer.size(), error)) {
      seq = p->seq, sent_ns = p->sent_ns;
      if (pose_stream_.stats.received == 0 || input::SeqNewer(seq, st.stats.last_seq)) {
        eye_offset_.position_m = Vec3(p->x_m, p->y_m, p->z_m);
        eye_offset_.orientation = Quat(Eigen::AngleAxisd(p->yaw_rad, Vec3::UnitZ()) * Eigen::AngleAxisd(p->pitch_rad, Vec3::UnitY()) *
                                       Eigen::AngleAxisd(p->roll_rad, Vec3::UnitX()));
        taken = true;
      }
    }
    if (!error.empty()) {
      ++st.stats.bad;
      ++st.bad_unlogged;
      const int64_t now = SteadyNs();
      if (now - st.bad_logged_ns >= 1'000'000'000) {  // once a second per stream
        log_->warn("{} stream: {} bad datagram(s) refused, the last: {}", control ? "control" : "pose", st.bad_unlogged, error);
        st.bad_logged_ns = now;
        st.bad_unlogged = 0;
      }
      continue;
    }
    if (!taken) {
      ++st.stats.stale;
      continue;
    }
    if (!st.stats.active)
      log_->info("{} stream: live (seq {})", control ? "control" : "pose", seq);
    ++st.stats.received;
    st.stats.last_seq = seq;
    st.stats.active = true;
    st.last_wall_ns = SteadyNs();
    st.pending_sent_ns = sent_ns;
  }
}

void DriverSeatModule::NoteApplied(StreamState& st) {
  if (st.pending_sent_ns <= 0) return;
  const double us = static_cast<double>(input::RealtimeNowNs() - st.pending_sent_ns) / 1e3;
  st.pending_sent_ns = -1;
  if (st.latency_us.size() < 1'000'000) st.latency_us.push_back(static_cast<float>(us));
}

void DriverSeatModule::PollStreams() {
  const int64_t now = SteadyNs();
  if (control_stream_.socket) {
    Drain(control_stream_, true);
    if (control_stream_.stats.active && now - control_stream_.last_wall_ns > static_cast<int64_t>(stream_timeout_s_ * 1e9)) {
      // Silent for too long: throttle off, full brake, steer held, until the next command.
      control_stream_.stats.active = false;
      ++control_stream_.stats.timeouts;
      stream_input_.throttle = 0;
      stream_input_.brake = 1;
      log_->warn("control stream: no command for {:.0f} ms, braking to a stop", stream_timeout_s_ * 1e3);
    }
  }
  if (pose_stream_.socket) {
    Drain(pose_stream_, false);
    if (pose_stream_.stats.active && now - pose_stream_.last_wall_ns > static_cast<int64_t>(head_tracking_timeout_s_ * 1e9)) {
      pose_stream_.stats.active = false;
      ++pose_stream_.stats.timeouts;
      eye_offset_ = Pose{};
      log_->warn("pose stream: no pose for {:.0f} ms, the eye returns to its rest point", head_tracking_timeout_s_ * 1e3);
    }
    NoteApplied(pose_stream_);  // the eye moves in this step
    if (seat_) seat_->SetEye(EyeInVehicle());
  }
}

Pose DriverSeatModule::EyeInVehicle() const {
  return Pose{eye_rest_m_ + eye_offset_.position_m, eye_offset_.orientation};
}

DriverSeatModule::StreamStats DriverSeatModule::Stats(const StreamState& st) {
  StreamStats s = st.stats;
  if (!st.latency_us.empty()) {
    std::vector<float> v = st.latency_us;
    std::sort(v.begin(), v.end());
    const auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))] / 1e3; };
    s.latency_p50_ms = at(0.5);
    s.latency_p99_ms = at(0.99);
    s.latency_max_ms = v.back() / 1e3;
    s.latency_samples = v.size();
  }
  return s;
}

DriverSeatModule::StreamStats DriverSeatModule::ControlStream() const { return Stats(control_stream_); }
DriverSeatModule::StreamStats DriverSeatModule::PoseStream() const { return Stats(pose_stream_); }

void DriverSeatModule::SyncFromBullet() {
  // The single-track view of the Bullet vehicle (CG on the ground plane, body-frame velocities), which the
  // controller layer, the driver model and the summary read.
  const KinematicState k = bullet_->State(vehicle_ns_);
  const Quat to_body = k.pose.orientation.conjugate();
  const Vec3 forward = k.pose.orientation * Vec3::UnitX();
  const double yaw = std::atan2(forward.y(), forward.x());
  const double cg_x = k.pose.position_m.x() + def_.cg_to_rear_m * std::cos(yaw);
  const double cg_y = k.pose.position_m.y() + def_.cg_to_rear_m * std::sin(yaw);
  state_.distance_m += std::hypot(cg_x - state_.x_m, cg_y - state_.y_m);
  state_.x_m = cg_x;
  state_.y_m = cg_y;
  state_.yaw_rad = yaw;
  state_.vx_mps = bullet_->SpeedMps();
  state_.vy_mps = (to_body * k.velocity_mps).y();
  state_.yaw_rate_radps = k.angular_velocity_radps.z();
  const Vec3 a = to_body * k.acceleration_mps2;
  state_.ax_mps2 = a.x();
  state_.ay_mps2 = a.y();
  state_.steer_rad = bullet_->SteerRad();
}

void DriverSeatModule::StepFmu() {
  if (!fmu_->Failed()) {
    // The command and the road as the FMU's inputs take them: a flat road at the start's height.
    vehicle::FmuInput in;
    in.steer = input_.steer;
    in.throttle = std::max(0.0, input_.throttle);
    in.brake = input_.brake;
    in.gear = input_.throttle < 0 ? -1 : 1;
    in.mu.fill(def_.mu);
    in.contact_z_m.fill(ground_z_m_);
    if (fmu_->Step(in)) {
      state_ = fmu_->State();
      return;
    }
    // A failed step: the car stops where it is and stays; the session goes on.
    log_->error("driver vehicle model: {}; the car is held where it stands for the rest of the session", fmu_->Error());
    if (seat_) seat_->SetMessage("vehicle model stopped: " + fmu_->Error(), 30);
  }
  ++fmu_held_steps_;
  state_.vx_mps = state_.vy_mps = state_.yaw_rate_radps = 0;
  state_.ax_mps2 = state_.ay_mps2 = state_.yaw_accel_radps2 = 0;
}

std::vector<CanParamTarget> ResolveCanParams(const can::MappingDef& mapping, const config::ParamRegistry& known,
                                             const std::string& node_name) {
  const std::string prefix = "node." + node_name + ".";
  // What a signal can carry (numbers and booleans) or set (writable ones too), relative to the node.
  const auto names = [&](bool writable) {
    std::string out;
    for (const auto& p : known.List(prefix))
      if (p.type != "string" && (p.writable || !writable)) out += (out.empty() ? "" : ", ") + p.path.substr(prefix.size());
    return out.empty() ? std::string("none") : out;
  };
  std::vector<CanParamTarget> out;
  std::map<std::string, std::string> received;  // full path -> where
  for (const can::ParamMapDef& p : mapping.params) {
    const bool rx = p.direction == can::Direction::kRx;
    std::string path = p.path;
    if (path.rfind("node.", 0) == 0 && path.rfind(prefix, 0) != 0)
      throw config::ConfigError(p.where + ": expected a parameter of this seat's node (" + prefix + "<name>, or <name> alone), got \"" +
                                path + "\"");
    if (path.rfind(prefix, 0) != 0) path = prefix + path;
    const protocol::ParamReply reply = known.Get(path);
    if (!reply.ok)
      throw config::ConfigError(p.where + ": expected a parameter of node \"" + node_name + "\" that a signal can " +
                                (rx ? "set (" + names(true) : "carry (" + names(false)) + "; each may be written " + prefix +
                                "<name>), got \"" + p.path + "\"");
    if (reply.param.type == "string")
      throw config::ConfigError(p.where + ": " + path + " is a string parameter; a signal carries numbers and booleans (1/0) only");
    if (rx) {
      if (!reply.param.writable)
        throw config::ConfigError(p.where + ": " + path + " is read-only; an rx signal sets a parameter (writable: " + names(true) + ")");
      // The entry's own check on its current value: a parameter fixed at start (by the vehicle model) is refused now.
      if (std::string error; !known.Check(path, reply.param.value, error))
        throw config::ConfigError(p.where + ": an rx signal cannot set it: " + error);
      if (auto [it, fresh] = received.emplace(path, p.where); !fresh)
        throw config::ConfigError(p.where + ": " + path + " is already received at " + it->second);
    }
    out.push_back(CanParamTarget{path, reply.param.type});
  }
  return out;
}

void DriverSeatModule::ApplyCanParams(ModuleContext& context) {
  // Each received value that changed, through the node's registry (the checks `platoon ctl param set`
  // passes); an applied one is marked in the session record, a refused one counted.
  for (const can::ParamUpdate& u : can_->TakeParamUpdates()) {
    const CanParamTarget& p = can_params_[u.param];
    const can::ParamMapDef& def = can_->Def().params[u.param];
    std::string error;
    protocol::ParamReply reply;
    if (const auto text = can::ParamText(u.value, p.type, error)) {
      reply = context.SetParam(p.path, *text);
      error = reply.error;
    } else {
      error = p.path + ": " + error;
    }
    can_->CountParam(reply.ok);
    if (reply.ok) {
      context.Mark("can: " + p.path + " = " + reply.param.value);
      log_->debug("CAN: {} = {} from {}.{} at sim {:.3f} s", p.path, reply.param.value, def.message, def.signal, NsToS(u.sim_ns));
    } else {
      can_param_error_ = fmt::format("{} (from {}.{} at sim {:.3f} s)", error, def.message, def.signal, NsToS(u.sim_ns));
    }
  }
  // Refusals: counted, logged at most once a second, never fatal.
  const uint64_t refused = can_->Counters().param_refused;
  if (refused > can_param_refused_logged_) {
    const int64_t now = SteadyNs();
    if (now - can_param_log_ns_ >= 1'000'000'000) {
      log_->warn("CAN parameters: {} received value(s) refused since the last report; the last: {}", refused - can_param_refused_logged_,
                 can_param_error_.empty() ? "a value that is not finite" : can_param_error_);
      can_param_log_ns_ = now;
      can_param_refused_logged_ = refused;
    }
  }
}

void DriverSeatModule::CanReceive(ModuleContext& context) {
  if (!can_bus_) return;
  // Frames are taken at the state's sim time: the commands apply from the next dynamics step on. At most
  // 256 a step, so a flood cannot hold the 1 kHz loop.
  can_bus_->SetTimeNs(vehicle_ns_);
  for (int i = 0; i < 256; ++i) {
    const auto frame = can_bus_->Receive();
    if (!frame) break;
    can_->Take(*frame, vehicle_ns_);
  }
  if (can_->HasParamRx()) ApplyCanParams(context);
  // Bad bus input and failed sends: counted, logged at most once a second.
  const can::BusCounters& c = can_bus_->Counters();
  if (c.rejected + c.send_errors > can_rejects_logged_ + can_send_errors_logged_) {
    const int64_t now = SteadyNs();
    if (now - can_reject_log_ns_ >= 1'000'000'000) {
      log_->warn("CAN {}: {} frame(s) refused, {} send error(s) since the last report; the last: {}", can_bus_->Name(),
                 c.rejected - can_rejects_logged_, c.send_errors - can_send_errors_logged_, c.last_error);
      can_reject_log_ns_ = now;
      can_rejects_logged_ = c.rejected;
      can_send_errors_logged_ = c.send_errors;
    }
  }
}

vehicle::VehicleInput DriverSeatModule::CanInput(int64_t sim_ns) {
  const can::CanCommand& c = can_->Command(sim_ns);
  if (c.active != can_live_) {
    if (c.active) log_->info("CAN commands: live at sim {:.3f} s", NsToS(sim_ns));
    else log_->warn("CAN commands: none for {:.0f} ms of sim time, braking to a stop", NsToS(sim_ns - c.received_sim_ns) * 1e3);
    can_live_ = c.active;
  }
  can_indicator_ = c.indicator;
  vehicle::VehicleInput in;
  in.steer = c.steer;
  in.throttle = c.throttle;
  in.brake = c.brake;
  return in;
}

void DriverSeatModule::CanSendIfDue(ModuleContext& context) {
  if (!can_ || !can_->AnyDue(vehicle_ns_)) return;
  // The live parameters sent: their values in the node's registry now (NaN, sent as raw 0, when unreadable).
  for (size_t i = 0; i < can_params_.size(); ++i) {
    if (can_->Def().params[i].direction != can::Direction::kTx) continue;
    const protocol::ParamReply r = context.GetParam(can_params_[i].path);
    can_param_values_[i] = r.ok ? can::ParamNumber(r.param.value).value_or(std::nan("")) : std::nan("");
  }
  // The seat's variables now (the published truth: rear-axle position, lamps), in the mapping's units.
  const protocol::EntityState e = Truth();
  can::VariableValues v{};
  const auto set = [&v](can::Variable k, double x) { v[static_cast<size_t>(k)] = x; };
  set(can::Variable::kSpeedMps, state_.vx_mps);
  set(can::Variable::kYawRateRadps, state_.yaw_rate_radps);
  set(can::Variable::kAxMps2, state_.ax_mps2);
  set(can::Variable::kAyMps2, state_.ay_mps2);
  set(can::Variable::kXM, e.kinematics.pose.position_m.x());
  set(can::Variable::kYM, e.kinematics.pose.position_m.y());
  set(can::Variable::kYawRad, state_.yaw_rad);
  set(can::Variable::kSteer, input_.steer);
  set(can::Variable::kThrottle, input_.throttle);
  set(can::Variable::kBrake, input_.brake);
  set(can::Variable::kIndicator, e.lights.indicator_left ? 1 : e.lights.indicator_right ? 2 : 0);
  set(can::Variable::kGear, state_.vx_mps < -0.1 ? -1 : 1);
  // Wheel speeds of the rigid body at the CG state, with the mapping's track width (docs/CAN.md).
  const auto wheels = can::WheelSpeeds(state_.vx_mps, state_.vy_mps, state_.yaw_rate_radps, state_.steer_rad, def_.cg_to_front_m,
                                       def_.cg_to_rear_m, can_->Def().track_m);
  set(can::Variable::kWheelSpeedFlMps, wheels[0]);
  set(can::Variable::kWheelSpeedFrMps, wheels[1]);
  set(can::Variable::kWheelSpeedRlMps, wheels[2]);
  set(can::Variable::kWheelSpeedRrMps, wheels[3]);
  can_bus_->SetTimeNs(vehicle_ns_);
  for (const can::StampedFrame& s : can_->Due(vehicle_ns_, v, can_param_values_)) can_bus_->Send(s.frame);
}

DriverSeatModule::CanStats DriverSeatModule::Can() const {
  CanStats s;
  if (!can_bus_) return s;
  const can::BusCounters& b = can_bus_->Counters();
  const can::MappingCounters& m = can_->Counters();
  s.sent = b.sent, s.received = b.received, s.rejected = b.rejected, s.send_errors = b.send_errors;
  s.rx_frames = m.rx_frames, s.rx_ignored = m.rx_ignored, s.rx_clamped = m.rx_clamped, s.timeouts = m.timeouts;
  s.param_updates = m.param_updates, s.param_refused = m.param_refused;
  s.active = can_live_;
  return s;
}

void DriverSeatModule::SampleIfDue(ModuleContext& context) {
  // One row per whole multiple of the period, each instant once: a paused session (no steps) and a
  // clock that went back (no steps until it is past the last state) write nothing twice.
  if (!writer_ || vehicle_ns_ % sample_period_ns_ != 0 || vehicle_ns_ <= last_sample_ns_) return;
  last_sample_ns_ = vehicle_ns_;
  const auto t0 = SteadyClock::now();
  // The other vehicles where this node displays them at the sample's time.
  others_.clear();
  if (metrics_def_.leader)
    for (const auto& r : context.RemoteEntities(vehicle_ns_))
      if (r.state.id != id_ && data::IsVehicle(r.state.kind)) others_.push_back(data::SampleOf(r.state, r.displayed));
  data::MetricsRow row = data::ComputeMetrics(vehicle_ns_, data::SampleOf(Truth()), others_, roads_, metrics_def_);
  if (sign_road_) {
    // A variable message sign shows what the conditions say now (signs.vms_<id>).
    if (const auto c = context.Conditions(); c && c->variable_signs != sign_contents_) {
      sign_contents_ = c->variable_signs;
      road::ApplyVariableContents(signs_, sign_contents_);
    }
    data::FillSignColumns(row, *sign_road_, signs_);
  }
  writer_->Push(row);
  ++samples_;
  const double us = 1e6 * SecondsBetween(t0, SteadyClock::now());
  sample_wall_sum_us_ += us;
  sample_wall_max_us_ = std::max(sample_wall_max_us_, us);
}

void DriverSeatModule::Perceive(const std::vector<RemoteEntity>& remote, int64_t sim_ns) {
  // The vehicle ahead as the data write measures it (same lane, bumper to bumper), where this node shows it.
  std::vector<data::VehicleSample> others;
  for (const auto& r : remote)
    if (r.state.id != id_ && data::IsVehicle(r.state.kind)) others.push_back(data::SampleOf(r.state, r.displayed));
  uint64_t leader = 0;
  const road::RoadNetwork& roads = model_roads_;
  const data::MetricsRow row = data::ComputeMetrics(sim_ns, data::SampleOf(Truth()), others, roads,
                                                    data::DefaultMetricsDef(), &leader);
  SeenAhead seen{sim_ns, row[data::Column::kHeadway], 0};
  // Its speed now: the last state's velocity moved on by its acceleration (owners send on thresholds, so
  // a braking leader's last state may be a while old), never reversing.
  for (const auto& r : remote)
    if (r.state.id == leader && leader != 0) {
      const KinematicState& k = r.state.kinematics;
      const double dt = std::clamp(NsToS(sim_ns - k.stamp_ns), 0.0, 1.0);
      const Vec3 v = k.velocity_mps + k.acceleration_mps2 * dt;
      seen.speed_mps = v.dot(k.velocity_mps) < 0 ? 0.0 : std::hypot(v.x(), v.y());
      seen.accel_mps2 = seen.speed_mps > 0 && k.velocity_mps.norm() > 1e-6
                            ? k.acceleration_mps2.dot(k.velocity_mps.normalized()) : 0.0;
    }
  seen.own_speed_mps = state_.vx_mps;
  // Keep what the reaction time still needs (and a bound).
  const int64_t keep_ns = static_cast<int64_t>((model_def_.reaction_time_s + 1.0) * 1e9);
  size_t drop = 0;
  while (drop < perceived_.size() && (perceived_[drop].sim_ns < sim_ns - keep_ns || perceived_.size() - drop > 2000)) ++drop;
  perceived_.erase(perceived_.begin(), perceived_.begin() + static_cast<long>(drop));
  perceived_.push_back(seen);
}

vehicle::VehicleInput DriverSeatModule::ModelInput(int64_t sim_ns) const {
  vehicle::VehicleInput in;
  const double v = state_.vx_mps;
  // Car following (IDM) on what was seen a reaction time ago; a free road before anything was seen.
  vehicle::IdmDef idm = vehicle::DefaultIdmDef();
  idm.desired_speed_mps = model_def_.desired_speed_mps;
  idm.time_headway_s = model_def_.time_gap_s;
  idm.min_gap_m = model_def_.min_gap_m;
  idm.max_accel_mps2 = model_def_.max_accel_mps2;
  idm.comfort_decel_mps2 = model_def_.comfort_decel_mps2;
  const int64_t seen_at = sim_ns - static_cast<int64_t>(model_def_.reaction_time_s * 1e9);
  const SeenAhead* seen = nullptr;
  for (const auto& p : perceived_)
    if (p.sim_ns <= seen_at) seen = &p;
  double accel = 0;
  if (seen && std::isfinite(seen->gap_m)) {
    // What it saw, carried forward to now as a driver anticipates: the leader keeps its acceleration
    // (stopping at rest), the gap changes by the mean speed difference since.
    const double dt = NsToS(sim_ns - seen->sim_ns);
    const double lead_now = std::max(0.0, seen->speed_mps + seen->accel_mps2 * dt);
    const double gap_now = seen->gap_m + 0.5 * (seen->speed_mps + lead_now - seen->own_speed_mps - v) * dt;
    accel = vehicle::IdmAccel(idm, v, std::max(gap_now, 0.01), v - lead_now);
  }
  else accel = vehicle::IdmAccel(idm, v, std::numeric_limits<double>::infinity(), 0);
  // Lane keeping of its start lane (docs/VEHICLES.md, "Lane keeping"): where the CG is on the road, and no
  // faster than the curves ahead allow.
  vehicle::LaneKeepingDef keeping = vehicle::DefaultLaneKeepingDef();
  keeping.max_lateral_accel_mps2 = model_def_.lateral_accel_mps2;
  road::RoadCoord at;
  if (model_road_) {
    at = model_road_->Project(Vec3(state_.x_m, state_.y_m, 0));
    accel = std::min(accel, vehicle::CurveAccelMps2(keeping, v, vehicle::CurveSpeedLimitMps(keeping, *model_road_, model_lane_, at, v)));
  }
  // Pedals from the force the acceleration needs against drag and rolling resistance.
  const double force = def_.mass_kg * accel + 0.5 * def_.air_density_kgm3 * def_.drag_area_m2 * v * v +
                       def_.rolling_resistance * def_.mass_kg * 9.80665;
  if (force >= 0) in.throttle = std::clamp(force / std::max(vehicle::MaxDriveForceN(def_, v), 1.0), 0.0, 1.0);
  else in.brake = std::clamp(-force / (def_.max_brake_torque_nm / def_.wheel_radius_m), 0.0, 1.0);
  if (v < 0.05 && accel < 0) in.brake = std::max(in.brake, 0.3);  // hold at rest
  // Steering: curvature feed-forward and feedback on the lateral and course errors.
  if (model_road_) {
    const double steer_rad =
        vehicle::LaneKeepingSteerRad(keeping, def_, state_, vehicle::LaneErrorsOf(keeping, *model_road_, model_lane_, at, state_));
    in.steer = std::clamp(steer_rad / def_.max_steer_rad, -1.0, 1.0);
  }
  return in;
}

void DriverSeatModule::OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) {
  // Every marker of the session (ctl, seat keys, scenario marker actions, CAN) goes to the data write's marker column.
  if (event.kind == protocol::LoggedEvent::Kind::kMarker && writer_) writer_->AddMarker(event.sim_time_ns, event.text);
  if (event.kind != protocol::LoggedEvent::Kind::kMessage) return;
  if (event.target_node != 0 && event.target_node != context.NodeId()) return;
  ++messages_;
  double duration_s = 4.0;
  if (const auto at = event.detail.find("\"duration_s\":"); at != std::string::npos)
    duration_s = std::strtod(event.detail.c_str() + at + 13, nullptr);
  log_->info("seat message at sim {:.3f} s from {}: {}", NsToS(event.sim_time_ns), event.source, event.text);
  if (seat_) seat_->SetMessage(event.text, duration_s);
}

void DriverSeatModule::OnSeatKey(const std::string& key) {
  if (key.empty() || driving_keys_.count(key)) return;
  std::lock_guard lock(keys_mutex_);
  // A bounded queue: a module thread that does not step (paused session) cannot make it grow for ever.
  if (keys_.size() < 64) keys_.push_back(key);
}

void DriverSeatModule::TrackRemote(const std::vector<RemoteEntity>& remote) {
  size_t count = 0;
  for (const auto& r : remote) {
    if (r.state.id == id_) continue;
    ++count;
    auto [it, fresh] = seen_.try_emplace(r.state.id);
    if (fresh) it->second.first_m = r.displayed.position_m;
    it->second.last_m = r.displayed.position_m;
  }
  remote_max_ = std::max(remote_max_, count);
}

void DriverSeatModule::Params(config::ParamRegistry& registry, const std::string& prefix) {
  namespace b = config::bounds;
  registry.AddFloat(prefix + "vehicle_mass_kg", "kg", b::kVehicleMassKg, "Total mass of the driven vehicle",
                    [this] { return def_.mass_kg; }, [this](double v) { def_.mass_kg = v; });
  registry.AddFloat(prefix + "tyre_mu", "", b::kTyreFriction, "Road friction scale (1 dry asphalt, ~0.5 wet, ~0.1 ice)",
                    [this] { return def_.mu; }, [this](double v) { def_.mu = v; });
  // The same check the vehicle definition passes at start, on the definition as it would become.
  auto check = [this](void (*apply)(vehicle::VehicleDef&, double)) {
    return [this, apply](const config::ParamValue& v) -> std::string {
      if (bullet_) return "is fixed at start with vehicle_model = \"bullet\"";
      if (fmu_) return "is the FMU's own with vehicle_model = \"fmu\"";
      vehicle::VehicleDef d = def_;
      apply(d, std::get<double>(v));
      return vehicle::ValidateVehicleDef(d);
    };
  };
  registry.AddCheck(prefix + "vehicle_mass_kg", check([](vehicle::VehicleDef& d, double v) { d.mass_kg = v; }));
  registry.AddCheck(prefix + "tyre_mu", check([](vehicle::VehicleDef& d, double v) { d.mu = v; }));
}

void DriverSeatModule::Summarize(std::vector<std::string>& fields) const {
  const double span_s = start_ns_ >= 0 ? NsToS(last_step_ns_ - start_ns_) : 0.0;
  const KinematicState k = bullet_ ? bullet_->State(vehicle_ns_) : vehicle::ToKinematic(def_, state_, vehicle_ns_);
  // The first 100 remote entities by id (a summary line, not a recording).
  std::string remote;
  size_t listed = 0;
  for (const auto& [id, s] : seen_)
    if (++listed <= 100)
      remote += fmt::format("{}{{\"id\":{},\"moved_m\":{:.3f},\"x_m\":{:.3f},\"y_m\":{:.3f}}}", remote.empty() ? "" : ",", id,
                            (s.last_m - s.first_m).norm(), s.last_m.x(), s.last_m.y());
  // Step wall time: mean, p99 (from the 1 us histogram) and max.
  uint64_t below = 0;
  size_t p99_bin = 0;
  for (; p99_bin + 1 < step_wall_hist_.size(); ++p99_bin) {
    below += step_wall_hist_[p99_bin];
    if (below * 100 >= steps_ * 99) break;
  }
  const std::string step_fields =
      fmt::format(",\"driver_step_mean_us\":{:.2f},\"driver_step_p99_us\":{},\"driver_step_max_us\":{:.1f}",
                  steps_ ? step_wall_sum_us_ / static_cast<double>(steps_) : 0.0, steps_ ? p99_bin + 1 : 0, step_wall_max_us_);
  // The vehicle model and the controller layer.
  std::string names;
  for (const auto& n : controller_.Names()) names += (names.empty() ? "\"" : ",\"") + n + "\"";
  std::string model_fields =
      fmt::format(",\"driver_vehicle_model\":\"{}\",\"driver_controller\":[{}],\"driver_controller_active_steps\":{}",
                  bullet_ ? "bullet" : fmu_ ? "fmu" : "single_track", names, controller_active_steps_);
  if (fmu_)
    model_fields += fmt::format(",\"driver_fmu_held_steps\":{},\"driver_fmu_error\":{}", fmu_held_steps_,
                                session_log::JsonQuote(fmu_->Error()));
  fields.push_back(fmt::format(
      "\"driver_id\":{},\"driver_steps\":{},\"driver_module_hz\":{:.1f},\"driver_max_step_gap_ms\":{:.3f},"
      "\"driver_dynamics_steps\":{},\"driver_dynamics_hz\":{:.1f},\"driver_skipped_steps\":{},\"driver_distance_m\":{:.3f},"
      "\"driver_x_m\":{:.3f},\"driver_y_m\":{:.3f},\"driver_yaw_rad\":{:.4f},\"driver_speed_mps\":{:.3f},"
      "\"driver_window\":{},\"driver_frames\":{},\"driver_render_mean_ms\":{:.2f},\"driver_render_max_ms\":{:.2f},"
      "\"driver_remote_max\":{},\"driver_messages\":{},\"driver_remote\":[{}]",
      id_, steps_, span_s > 0 ? static_cast<double>(steps_ - 1) / span_s : 0.0, NsToS(max_step_gap_ns_) * 1e3,
      dynamics_steps_, span_s > 0 ? static_cast<double>(dynamics_steps_) / span_s : 0.0, skipped_steps_, state_.distance_m,
      k.pose.position_m.x(), k.pose.position_m.y(), state_.yaw_rad, std::hypot(state_.vx_mps, state_.vy_mps),
      seat_ && seat_->HasWindow() ? "true" : "false", seat_ ? seat_->Frames() : 0, seat_ ? seat_->RenderMeanMs() : 0.0,
      seat_ ? seat_->RenderMaxMs() : 0.0, remote_max_, messages_, remote) + step_fields + model_fields);
  for (const auto* st : {&control_stream_, &pose_stream_}) {
    if (!st->socket) continue;
    const StreamStats s = Stats(*st);
    const char* name = st == &control_stream_ ? "control_stream" : "pose_stream";
    fields.push_back(fmt::format("\"{0}_received\":{1},\"{0}_bad\":{2},\"{0}_stale\":{3},\"{0}_timeouts\":{4},"
                                 "\"{0}_latency_p50_ms\":{5:.3f},\"{0}_latency_p99_ms\":{6:.3f},\"{0}_latency_max_ms\":{7:.3f}",
                                 name, s.received, s.bad, s.stale, s.timeouts, s.latency_p50_ms, s.latency_p99_ms, s.latency_max_ms));
  }
  if (can_bus_) {
    const CanStats c = Can();
    fields.push_back(fmt::format("\"can_bus\":{},\"can_sent\":{},\"can_received\":{},\"can_rejected\":{},\"can_send_errors\":{},"
                                 "\"can_rx_frames\":{},\"can_rx_ignored\":{},\"can_rx_clamped\":{},\"can_timeouts\":{},"
                                 "\"can_param_updates\":{},\"can_param_refused\":{}",
                                 session_log::JsonQuote(can_bus_->Name()), c.sent, c.received, c.rejected, c.send_errors,
                                 c.rx_frames, c.rx_ignored, c.rx_clamped, c.timeouts, c.param_updates, c.param_refused));
  }
  if (gaze_) {
    gaze_->Close();
    const GazeRecorderStats g = gaze_->Stats();
    fields.push_back(fmt::format("\"gaze_samples\":{},\"gaze_on_entity\":{},\"gaze_on_mirror\":{},\"gaze_on_nothing\":{},"
                                 "\"gaze_low_confidence\":{},\"gaze_dropped\":{},\"gaze_rows\":{},\"gaze_malformed\":{}",
                                 g.samples, g.on_entity, g.on_mirror, g.on_nothing, g.low_confidence, g.dropped, g.rows_written,
                                 g.malformed));
  }
  if (writer_) {
    writer_->Close();  // the last Step is done: write what is queued, so the counts are final
    const data::CsvWriterStats w = writer_->Stats();
    fields.push_back(fmt::format(
        "\"data_write_rows\":{},\"data_write_dropped\":{},\"data_write_failed\":{},\"data_write_samples\":{},\"data_write_missed\":{},"
        "\"data_write_rate_hz\":{:g},\"data_write_sample_mean_us\":{:.2f},\"data_write_sample_max_us\":{:.1f},"
        "\"data_write_markers\":{},\"data_write_markers_late\":{},\"data_write_path\":{},\"data_write_error\":{}",
        w.rows_written, w.rows_dropped, w.rows_failed, samples_, samples_missed_, 1e9 / static_cast<double>(sample_period_ns_),
        samples_ ? sample_wall_sum_us_ / static_cast<double>(samples_) : 0.0, sample_wall_max_us_, w.markers_written, w.markers_late,
        session_log::JsonQuote(w.path),
        session_log::JsonQuote(w.error)));
  }
}

}  // namespace platoon::node
