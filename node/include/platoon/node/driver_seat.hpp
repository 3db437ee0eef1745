#pragma once
/// The driver role (seed 004 §5.9 "Steering Wheel Plug-in", §5.11 multi-driver coupling): one car
/// driven by a person through platoon::input (wheel, pedals, gamepad, keyboard fallback) or by an input
/// script, simulated by the single-track model (platoon::vehicle) in fixed 1 ms steps on this node, so
/// the steering latency never depends on the network, and published like every entity (the runtime's
/// send policy applies the dead-reckoning thresholds). The seat window (platoon::viewer) shows the
/// session's scene from the driver's eye point with every remote vehicle where this node displays it
/// (dead-reckoned), so drivers on different PCs see each other.
///
/// Threads: the module thread steps the dynamics at 1 kHz. The seat thread, started only when there is
/// a window or a live input device, owns SDL, GL and OSG: it reads the device, and renders a copy of the
/// entity list taken under a mutex. Neither thread waits on the other's work. With [node.data_write]
/// the module thread also computes one row of data::ComputeMetrics at every sample instant of sim time
/// (whole multiples of the sample period, on the 1 ms dynamics grid) and hands it to a
/// data::CsvWriter, whose own thread formats and writes it (docs/RECORDING.md, "Data write").

#include "platoon/config/session.hpp"
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/force_feedback.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/gaze_recorder.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/controller.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <spdlog/logger.h>

#include <array>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace platoon::input {
class HapticDevice;
class ScriptedInput;
class StreamSocket;
}
namespace platoon::data {
class CsvWriter;
}
namespace platoon::can {
class Bus;
class CanMapping;
struct MappingDef;
}
namespace platoon::vehicle {
class BulletWorld;
class BulletVehicle;
class FmuVehicle;
}

namespace platoon::node {

/// A live parameter of a CAN mapping found in the node's registry (docs/CAN.md, "Live parameters").
struct CanParamTarget {
  std::string path;  ///< Full path, "node.<name>.tyre_mu".
  std::string type;  ///< "float", "int" or "bool" (protocol::Parameter::type).
};
/// The mapping's parameters (MappingDef::params, same order) resolved in node `node_name`'s registry
/// `known`: a path is "node.<node_name>.<rest>" or "<rest>". Throws config::ConfigError at the param key's
/// line for another node's path, an unknown one (listing what a signal can carry or set), a string
/// parameter, and for rx a read-only one, one the entry's own check refuses now, or one received twice.
std::vector<CanParamTarget> ResolveCanParams(const can::MappingDef& mapping, const config::ParamRegistry& known,
                                             const std::string& node_name);

/// Step of the driver's dynamics, in ns: 1 ms (1 kHz).
constexpr int64_t kDriverStepNs = 1'000'000;

/// Where a driver starts: the rear-axle pose (vehicle frame origin) on the session road at
/// (node.start_s_m, node.start_lane), facing the lane's direction of travel; without a [road], the point
/// node.start_s_m along the stadium track around node.track_center_m (default: the origin).
/// Throws config::ConfigError when s or the lane is not on the road.
Pose DriverStartPose(const config::SessionDef& session, const config::NodeDef& node);

/// vehicle_model = "fmu": the driver's FMU (node.fmu) loaded, instantiated and initialised at the start pose
/// (the CG cg_to_rear_m ahead of DriverStartPose) and start speed, its log going to `log`. platoon check opens
/// it the same way. Throws config::ConfigError "FILE:LINE: node[i].fmu: <what the FMU lacks>".
std::unique_ptr<vehicle::FmuVehicle> OpenDriverFmu(const config::SessionDef& session, const config::NodeDef& node,
                                                   std::shared_ptr<spdlog::logger> log);

/// The driver role's module.
class DriverSeatModule final : public Module {
 public:
  /// Loads the input script or opens the live input (and, unless headless, the window) on the seat
  /// thread. Throws config::ConfigError for a bad script, input mapping or start position, and
  /// std::runtime_error when the live input device cannot be used.
  DriverSeatModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log);
  ~DriverSeatModule() override;
  std::string Name() const override { return "driver"; }
  double RateHz() const override { return 1e9 / static_cast<double>(kDriverStepNs); }
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// Seat messages (kMessage for this node or every seat): shown in the window for their duration_s
  /// and logged.
  void OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) override;
  /// vehicle_mass_kg and tyre_mu (live, checked like the vehicle definition at start).
  void Params(config::ParamRegistry& registry, const std::string& prefix) override;
  /// Appends the driver's figures and, with data write, its counts. Called once at shutdown after the
  /// last Step: it closes the data writer first, so the counts are final and the file complete.
  void Summarize(std::vector<std::string>& fields) const override;

  /// A seat key pressed (viewer::SeatKeyName: "space", "b", "f5"; the seat window's thread calls it, a
  /// test may): queued, and the next Step sends the marker "key:<name>" once (ModuleContext::Mark, at
  /// that step's sim time), which a scenario `key` condition waits for. Ignores "" and the keys that
  /// drive the car (input = "sdl": the mapping's key_left/right/throttle/brake). Thread-safe.
  void OnSeatKey(const std::string& key);
  /// Key markers sent so far.
  uint64_t KeyMarkers() const { return key_markers_; }
  /// Gaze samples received and not yet taken by a Step (false without node.gaze).
  bool GazePending() const { return gaze_ && gaze_->Pending(); }

  /// Force feedback (docs/INPUTS.md, "Force feedback"): `device` plays the wheel torque from now on, with
  /// `now_ns` the clock (steady ns) that times the dynamics' feed, the world states and each update; nullptr
  /// stops the device there was (Stop()) and drops it. The seat thread hands over the SDL wheel's motor;
  /// a test a input::MockHaptic and a fake clock. Thread-safe.
  void SetHapticDevice(std::shared_ptr<input::HapticDevice> device, std::function<int64_t()> now_ns);
  /// One force-feedback update at now_ns(): the device gets ForceFeedbackUpdate of the last dynamics step's
  /// feed (zero when the dynamics or the world states stopped coming). Called by the seat thread every
  /// 2 ms (or by a test); without a device it only returns what it would command. Thread-safe.
  ForceFeedbackOutput ForceFeedbackTick();
  /// The force-feedback settings ([[node]] ffb_* keys).
  const ForceFeedbackDef& ForceFeedback() const { return ffb_def_; }

  /// The vehicle's entity id: VehicleId(node name, 0).
  uint64_t EntityId() const { return id_; }
  /// Current single-track state (CG, body frame velocities).
  const vehicle::VehicleState& State() const { return state_; }
  /// Sim time the state is at, in ns (-1 before the first step).
  int64_t StateTimeNs() const { return vehicle_ns_; }
  /// The command applied in the last dynamics step (after the controller layer).
  const vehicle::VehicleInput& LastInput() const { return input_; }
  /// The driver's own command in the last dynamics step (before the controller layer).
  const vehicle::VehicleInput& DriverInput() const { return driver_input_; }
  /// Whether the vehicle is the Bullet raycast vehicle (vehicle_model = "bullet").
  bool Bullet() const { return bullet_ != nullptr; }
  /// The FMU that drives the vehicle (vehicle_model = "fmu"), or nullptr.
  const vehicle::FmuVehicle* Fmu() const { return fmu_.get(); }
  /// Dynamics steps the car was held at rest after its FMU failed a step (0 while it runs).
  uint64_t FmuHeldSteps() const { return fmu_held_steps_; }
  /// Dynamics steps in which the controller layer changed the driver's command.
  uint64_t ControllerActiveSteps() const { return controller_active_steps_; }
  /// Dynamics steps so far (each kDriverStepNs of sim time).
  uint64_t DynamicsSteps() const { return dynamics_steps_; }
  /// Data-write rows handed to the writer so far (0 without [node.data_write]).
  uint64_t SamplesTaken() const { return samples_; }

  /// External streams (docs/PROTOCOL.md, "External streams"): what came and what it cost.
  struct StreamStats {
    uint64_t received = 0;   ///< valid datagrams taken
    uint64_t bad = 0;        ///< datagrams refused (size, magic, range)
    uint64_t stale = 0;      ///< valid datagrams older than the newest taken (sequence number)
    uint64_t timeouts = 0;   ///< times the stream fell silent for longer than its timeout
    uint32_t last_seq = 0;   ///< sequence number of the newest datagram taken
    bool active = false;     ///< the stream is live (not timed out, something came)
    double latency_p50_ms = 0, latency_p99_ms = 0, latency_max_ms = 0;  ///< sent_ns -> applied, sender's clock
    uint64_t latency_samples = 0;
  };
  /// Cheap reads for a lock-step controller: valid control datagrams taken, and the newest one's seq.
  uint64_t ControlReceived() const { return control_stream_.stats.received; }
  uint32_t ControlLastSeq() const { return control_stream_.stats.last_seq; }

  /// CAN (can_bus + can_map; docs/CAN.md): what went over the bus and what the mapping made of it.
  struct CanStats {
    uint64_t sent = 0;          ///< frames sent (the mapping's tx messages)
    uint64_t received = 0;      ///< frames received from the bus
    uint64_t rejected = 0;      ///< malformed input the bus refused (bad datagrams)
    uint64_t send_errors = 0;   ///< frames the bus could not send
    uint64_t rx_frames = 0;     ///< received frames of a mapped rx message
    uint64_t rx_ignored = 0;    ///< received frames of no mapped rx message
    uint64_t rx_clamped = 0;    ///< received values clamped into their range
    uint64_t timeouts = 0;      ///< times the commands fell silent for longer than can_timeout_s
    uint64_t param_updates = 0; ///< received live-parameter values applied through the node's registry
    uint64_t param_refused = 0; ///< received live-parameter values refused (not finite, or by the registry's checks)
    bool active = false;        ///< input = "can": commands are live
  };
  /// The CAN figures; zeros without can_bus.
  CanStats Can() const;
  /// The control stream (input = "stream"); zeros without one.
  StreamStats ControlStream() const;
  /// The head-tracking pose stream; zeros without one.
  StreamStats PoseStream() const;
  /// The seat's eye in the vehicle frame: the configured eye point moved by the head-tracking offset,
  /// and the head's orientation (yaw, pitch, roll applied in that order). Module thread.
  Pose EyeInVehicle() const;

 private:
  class Seat;
  protocol::EntityState Truth() const;
  void TrackRemote(const std::vector<RemoteEntity>& remote);
  void SampleIfDue(ModuleContext& context);
  // input = "model:follow": what the model sees of the vehicle ahead, and the command it drives with.
  void Perceive(const std::vector<RemoteEntity>& remote, int64_t sim_ns);
  vehicle::VehicleInput ModelInput(int64_t sim_ns) const;

  std::shared_ptr<spdlog::logger> log_;
  uint64_t id_;
  vehicle::VehicleDef def_ = vehicle::DefaultVehicleDef();
  double ground_z_m_ = 0;  // height of the start point: the model drives on a flat plane at it
  vehicle::VehicleState state_;
  vehicle::VehicleInput input_, driver_input_;
  // The controller layer ([node.controller]) between the command and the vehicle model.
  vehicle::VehicleController controller_;
  uint64_t controller_active_steps_ = 0;
  // vehicle_model = "bullet": the world (the road mesh or a flat ground) and the vehicle, owned by the
  // module thread once stepping starts; state_ mirrors the Bullet vehicle after each step.
  std::unique_ptr<vehicle::BulletWorld> bullet_world_;
  std::unique_ptr<vehicle::BulletVehicle> bullet_;
  void SyncFromBullet();
  // vehicle_model = "fmu": the FMU steps in place of the single-track model and state_ holds its outputs;
  // after a failed step the car is held where it stopped (speed 0) for the rest of the session.
  std::unique_ptr<vehicle::FmuVehicle> fmu_;
  uint64_t fmu_held_steps_ = 0;
  void StepFmu();
  std::unique_ptr<input::ScriptedInput> script_;
  std::unique_ptr<Seat> seat_;  // window and/or live input; null when headless with a script

  // start_ns_: the first step's sim time; script_t0_ns_: where the dynamics (and the script) start, on the
  // session's 1 ms grid (the first step's time rounded down), so data-write rows fall on whole multiples.
  int64_t start_ns_ = -1, script_t0_ns_ = -1, vehicle_ns_ = -1, last_step_ns_ = -1, next_remote_ns_ = -1;
  uint64_t steps_ = 0, dynamics_steps_ = 0, skipped_steps_ = 0;
  int64_t max_step_gap_ns_ = 0;
  // Wall time of Step (the whole 1 kHz module step, catch-up and data write included): sum, max and a
  // histogram in 1 us bins (the last bin: 1 ms and more) for the p99.
  double step_wall_sum_us_ = 0, step_wall_max_us_ = 0;
  std::array<uint32_t, 1001> step_wall_hist_{};

  // Data write ([node.data_write]): the writer, what it samples, and the cost of a sample on this thread.
  std::unique_ptr<data::CsvWriter> writer_;
  // The eye tracker (node.gaze): its recorder, the boxes of the step, the names of the session's vehicles.
  std::unique_ptr<GazeRecorder> gaze_;
  std::vector<input::GazeBox> gaze_boxes_;
  std::vector<NodeNaming> gaze_naming_;
  int64_t sample_period_ns_ = 0;
  int64_t last_sample_ns_ = INT64_MIN;
  road::RoadNetwork roads_;
  std::vector<road::Sign> signs_;          // data write: the session's signs (next/last sign columns)
  std::optional<road::Road> sign_road_;    // the road they stand on
  std::vector<world::VariableSignContent> sign_contents_;  // the conditions' variable signs last applied
  data::MetricsDef metrics_def_ = data::DefaultMetricsDef();
  std::vector<data::VehicleSample> others_;
  uint64_t samples_ = 0, samples_missed_ = 0;  // rows sampled; rows passed over by a skipped stall
  double sample_wall_sum_us_ = 0, sample_wall_max_us_ = 0;
  bool script_end_logged_ = false;
  // What this node displayed of each remote entity: first and last displayed position.
  struct Seen {
    Vec3 first_m = Vec3::Zero();
    Vec3 last_m = Vec3::Zero();
  };
  std::map<uint64_t, Seen> seen_;
  size_t remote_max_ = 0;

  // The driver model (input = "model:follow"): settings, the road it keeps its lane on, and what it saw
  // of the vehicle ahead (sim time, gap, leader speed; gap NaN: none), newest last, bounded.
  bool model_ = false;
  config::DriverModelDef model_def_;
  std::unique_ptr<road::Road> model_road_;
  road::RoadNetwork model_roads_;  // the same road as a network, for data::ComputeMetrics
  int model_lane_ = -1;
  struct SeenAhead {
    int64_t sim_ns = 0;
    double gap_m = 0;
    double speed_mps = 0;      // the leader's speed
    double accel_mps2 = 0;     // the leader's acceleration along its velocity
    double own_speed_mps = 0;  // own speed then
  };
  std::vector<SeenAhead> perceived_;
  // External streams: the sockets, the newest command and head pose, when they came (steady clock, for
  // the timeouts), and the latencies (sent_ns -> applied, in us, bounded).
  struct StreamState {
    std::unique_ptr<input::StreamSocket> socket;
    StreamStats stats;
    int64_t last_wall_ns = 0;      // steady ns of the newest datagram taken
    int64_t pending_sent_ns = -1;  // the newest datagram's sent_ns, until a step applies it
    int64_t bad_logged_ns = INT64_MIN / 2;  // "long ago", with room to subtract from a steady time
    uint64_t bad_unlogged = 0;
    std::vector<float> latency_us;
  };
  void PollStreams();
  void Drain(StreamState& s, bool control);
  void NoteApplied(StreamState& s);
  static StreamStats Stats(const StreamState& s);
  StreamState control_stream_, pose_stream_;
  vehicle::VehicleInput stream_input_;
  double stream_timeout_s_ = 0.2, head_tracking_timeout_s_ = 0.5;
  // CAN (docs/CAN.md): the bus, the mapping core (tx every step a message is due, rx with input = "can"),
  // the indicator the commands set (0 off, 1 left, 2 right), and what was logged of the bus's rejects.
  std::unique_ptr<can::Bus> can_bus_;
  std::unique_ptr<can::CanMapping> can_;
  bool can_input_ = false, can_live_ = false;
  double can_indicator_ = 0;
  uint64_t can_rejects_logged_ = 0, can_send_errors_logged_ = 0;
  int64_t can_reject_log_ns_ = INT64_MIN / 2;
  void CanReceive(ModuleContext& context);
  vehicle::VehicleInput CanInput(int64_t sim_ns);
  void CanSendIfDue(ModuleContext& context);
  // CAN live parameters (docs/CAN.md, "Live parameters"): per MappingDef::params entry its full path
  // ("node.<name>.tyre_mu") and type, the values sent, and what was logged of the refused sets.
  std::vector<CanParamTarget> can_params_;
  std::vector<double> can_param_values_;
  uint64_t can_param_refused_logged_ = 0;
  int64_t can_param_log_ns_ = INT64_MIN / 2;
  std::string can_param_error_;
  void ApplyCanParams(ModuleContext& context);
  Vec3 eye_rest_m_ = Vec3::Zero();
  Pose eye_offset_;   // head-tracking offset from the rest eye (identity without a stream)
  // Seat messages shown so far (kMessage events for this seat).
  uint64_t messages_ = 0;
  // Seat keys pressed and not yet sent (seat thread -> module thread), the keys that drive the car (lower
  // case), and the key markers sent.
  std::mutex keys_mutex_;
  std::vector<std::string> keys_;
  std::set<std::string> driving_keys_;
  uint64_t key_markers_ = 0;
  // Force feedback: settings, and what the module thread feeds the seat thread's updates (under
  // ffb_mutex_): the feed, when it came and when the last world state came (ffb_now_ns_ clock; -1 none).
  ForceFeedbackDef ffb_def_ = DefaultForceFeedbackDef();
  bool ffb_enabled_ = false;
  mutable std::mutex ffb_mutex_;
  std::shared_ptr<input::HapticDevice> haptic_;
  std::function<int64_t()> ffb_now_ns_;
  ForceFeedbackFeed ffb_feed_;
  int64_t ffb_feed_ns_ = -1, ffb_world_ns_ = -1;
  uint64_t ffb_world_received_ = 0;
  double ffb_last_steer_ = 0;
  std::string ffb_zero_reason_ = "start";  // the last update's reason for zero ("" live), for the log
  uint64_t ffb_updates_ = 0, ffb_zero_updates_ = 0;
  double ffb_max_abs_ = 0;
  void FeedForceFeedback(ModuleContext& context, int64_t steps);
};

}  // namespace platoon::node
