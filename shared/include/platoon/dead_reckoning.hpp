#pragma once
/// DIS-style dead reckoning (after IEEE 1278.1, Annex E): extrapolation models, a receiver-side
/// track that hides corrections by projective velocity blending, and a sender-side policy that
/// decides when a new state must go on the wire.
///
/// Pure and deterministic: every call is given the time; nothing here reads a clock, logs or
/// touches a socket. The equations are written out beside each model in dead_reckoning.cpp.

#include "platoon/geometry.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace platoon::dr {

/// Dead-reckoning model, after the IEEE 1278.1 DIS algorithms of the same names, plus CCA. CCA is the
/// default for ground vehicles: in a bend RVW's error grows as (v^3 / 6 R^2) t^3, RVB's and CCA's not
/// at all; braking to a stop RVB runs backwards through zero speed, CCA stops (docs/BENCHMARKS.md,
/// "Dead reckoning on real courses").
enum class Model {
  kStatic,  ///< DRM 1 "static": the last pose holds.
  kFpw,     ///< DRM 2 "fpw": constant world-frame velocity, orientation held.
  kRvw,     ///< DRM 4 "rvw": constant world-frame acceleration; orientation turned by the angular velocity.
  kRvb,     ///< DRM 8 "rvb": velocity and tangential acceleration turn with the body; exact on circles.
  kCca,     ///< "cca": constant path curvature (yaw rate / speed) and tangential acceleration, stops at
            ///< zero speed; a car's turn follows its distance, not time. Exact on circles like RVB.
};

/// Model from its name: "static", "fpw", "rvw", "rvb" or "cca". Throws std::invalid_argument naming the
/// bad name and the accepted ones.
Model ModelFromName(std::string_view name);

/// Name of a model as ModelFromName accepts it, e.g. "rvw".
std::string_view ModelName(Model model);

/// Full kinematic state predicted by `model` from `last` at sim time `t_ns` (stamp_ns = t_ns).
/// Velocity, acceleration and angular velocity are those of the model's motion (zero for static).
KinematicState ExtrapolateState(Model model, const KinematicState& last, int64_t t_ns);

/// Pose predicted by `model` from `last` at sim time `t_ns`; what a receiver displays without blending.
Pose Extrapolate(Model model, const KinematicState& last, int64_t t_ns);

namespace detail {
/// What CCA derives from the state alone: speed, direction of travel, tangential acceleration, path
/// curvature and the side-slip term, with the products of them that every extrapolation uses.
struct CcaTerms {
  double speed_mps = 0, at_mps2 = 0, zero_s = 0, k_norm = 0, w_norm = 0;
  Vec3 u0 = Vec3::Zero(), k = Vec3::Zero(), k_axis = Vec3::Zero(), ku = Vec3::Zero(), kku = Vec3::Zero(),
       side = Vec3::Zero(), ws = Vec3::Zero(), wws = Vec3::Zero();
};
}  // namespace detail

/// A state prepared to be extrapolated with one model to many times: what Extrapolate derives from the
/// state alone (for CCA: speed, direction, curvature, the side term, their cross products) is derived once.
/// At(t) is Extrapolate(model, state, t), bit for bit. The send policy keeps one for each state it sent,
/// which its checks extrapolate nine times a step. Plain copyable data.
class PreparedState {
 public:
  PreparedState() = default;
  PreparedState(Model model, const KinematicState& state);
  /// Extrapolate(model, State(), t_ns).
  Pose At(int64_t t_ns) const;
  const KinematicState& State() const { return state_; }

 private:
  Model model_ = Model::kStatic;
  KinematicState state_{};
  detail::CcaTerms cca_;  // model_ == kCca
};

// ---------------------------------------------------------------------------------------------
// Receiver side
// ---------------------------------------------------------------------------------------------

/// How a receiver displays one remote entity. Read-only while the track runs.
struct TrackDef {
  /// Model to extrapolate with; must match the sender's.
  Model model = Model::kCca;
  /// Nominal time a correction is blended over, in s; 0 shows every correction at once. Typical 0.1-0.3.
  /// Stretched for large corrections (max_correction_mps) and shortened when the old display runs
  /// away from the new track.
  double blend_time_s = 0.15;
  /// Longest time a correction is blended over, in s. Typical 0.5-2.
  double max_blend_time_s = 1.0;
  /// Blends stretch so the correction moves the display at most this fast, in m/s. Typical 0.2-0.5
  /// (0.3 m/s is 5 mm per 60 Hz frame).
  double max_correction_mps = 0.3;
  /// Corrections longer than this are shown at once (teleport), in m. Typical 2-10.
  double snap_distance_m = 5.0;
  /// Corrections turning more than this are shown at once, in rad. Typical 30 deg.
  double snap_angle_rad = 0.5235987755982988;
};

/// The default track definition: CCA, 0.15 s blends, snap beyond 5 m or 30 deg.
TrackDef DefaultTrackDef();

/// Checks a TrackDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateTrackDef(const TrackDef& def);

/// Counters of what a track did with the updates it was handed.
struct TrackStats {
  uint64_t accepted = 0;  ///< Updates taken as the new latest state.
  uint64_t stale = 0;     ///< Updates ignored because their stamp was not newer than the latest.
  uint64_t invalid = 0;   ///< Updates ignored because a field was NaN or infinite or the quaternion degenerate.
  uint64_t blends = 0;    ///< Corrections hidden by blending.
  uint64_t retargets = 0; ///< Updates within 1 mm of a running blend's target; the blend heads for them instead.
  uint64_t snaps = 0;     ///< Corrections shown at once because they exceeded the snap thresholds.
};

/// Receiver-side view of one remote entity: the newest state received, plus the blend that hides
/// the jump between the trajectory shown before that state arrived and its dead-reckoned track.
/// Plain copyable data; holds a copy of its TrackDef.
class RemoteTrack {
 public:
  /// A track with no state yet; `def` must pass ValidateTrackDef.
  explicit RemoteTrack(const TrackDef& def = DefaultTrackDef());

  /// Hands the track an update received at local sim time `now_ns`. Returns false, and changes
  /// nothing but the counters, when the update is not newer than the latest one, or has a NaN or
  /// infinite field or a degenerate quaternion.
  bool OnUpdate(const KinematicState& state, int64_t now_ns);

  /// Pose to display at sim time `now_ns`. Precondition: HasState().
  Pose At(int64_t now_ns) const;

  /// Displayed pose, velocity (m/s) and angular velocity (rad/s) at `now_ns`; the acceleration
  /// field is that of the dead-reckoned track. Precondition: HasState().
  KinematicState DisplayedState(int64_t now_ns) const;

  /// True once an update has been accepted.
  bool HasState() const { return has_state_; }

  /// Newest accepted state, as received. Precondition: HasState().
  const KinematicState& Latest() const { return latest_; }

  /// Age of the newest accepted state at `now_ns`, in ns (now_ns minus its stamp).
  int64_t AgeNs(int64_t now_ns) const { return now_ns - latest_.stamp_ns; }

  /// True while a correction is still being blended at `now_ns`.
  bool Blending(int64_t now_ns) const;

  /// Counters since construction.
  const TrackStats& Stats() const { return stats_; }

  /// The definition this track runs with.
  const TrackDef& Def() const { return def_; }

 private:
  TrackDef def_;
  bool has_state_ = false;
  KinematicState latest_;
  // Blend of the correction that arrived at blend_start_ns_: `from_` is what was displayed then
  // (pose, velocity, angular velocity); `to_` is the new dead-reckoned track at that instant.
  bool blending_ = false;
  int64_t blend_start_ns_ = 0;
  int64_t blend_length_ns_ = 0;
  KinematicState from_;
  KinematicState to_;
  TrackStats stats_;
};

// ---------------------------------------------------------------------------------------------
// Sender side
// ---------------------------------------------------------------------------------------------

/// Most consecutive losses a SendPolicy can be asked to cover.
inline constexpr int kMaxLossCover = 3;

/// When a sender publishes its state. Read-only while the policy runs.
struct SendPolicyDef {
  /// Model receivers extrapolate with.
  Model model = Model::kCca;
  /// Send when the receivers' estimate drifts this far from the truth, in m. Typical 0.02-0.1.
  double position_threshold_m = 0.05;
  /// Send when the estimate's orientation is this far off, in rad. Typical 2 deg.
  double angle_threshold_rad = 0.03490658503988659;
  /// Drift is also checked this far ahead, in s, so receivers get the update before they reach the
  /// threshold: one-way latency plus a display frame. Typical 0.01-0.05.
  double lead_time_s = 0.02;
  /// Outage horizon, in s; 0 turns the check off. A receiver cut off for this long shows the last
  /// send's estimate that far ahead, so a new state is sent when that estimate and the truth's own
  /// (the same model run from the current state) part by more than horizon_threshold_m there. Keeps the
  /// state receivers hold fresh through changes of curvature or acceleration. Typical 0.5.
  double horizon_s = 0.5;
  /// Largest gap between the two estimates at horizon_s, in m. Typical 0.05-0.2.
  double horizon_threshold_m = 0.05;
  /// Heartbeat period, in s. Typical 1-5. Heartbeats fall on the entity's own slots (its phase of the
  /// period, on the sim clock), the first slot at least heartbeat_s / 2 after the last send: a vehicle
  /// that only heartbeats sends exactly every heartbeat_s, and no two sends are more than 1.5 heartbeat_s
  /// apart. Entities of nodes that started together thus spread their heartbeats over the period.
  double heartbeat_s = 1.0;
  /// Highest send rate, in Hz. Typical 30-60.
  double max_rate_hz = 60.0;
  /// Consecutive losses covered, 0 to kMaxLossCover: the last loss_cover + 1 states sent must all
  /// stay within the thresholds. Typical 0 on a clean LAN, 3 at 10 % loss.
  int loss_cover = 3;
};

/// The default send policy: CCA, 5 cm, 2 deg, 20 ms lead, 5 cm at a 0.5 s horizon, 1 s heartbeat,
/// at most 60 Hz, covers 3 losses in a row.
SendPolicyDef DefaultSendPolicyDef();

/// Checks a SendPolicyDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateSendPolicyDef(const SendPolicyDef& def);

/// Why a state is due to be sent.
enum class SendReason {
  kNone,       ///< Not due.
  kFirst,      ///< Nothing was sent yet.
  kHeartbeat,  ///< The entity's heartbeat slot, at least heartbeat_s / 2 after the last send.
  kPosition,   ///< The last send's estimate is, or within lead_time_s will be, beyond position_threshold_m.
  kAngle,      ///< The last send's estimate is, or within lead_time_s will be, beyond angle_threshold_rad.
  kCover,      ///< An earlier send's estimate, still shown by receivers that lost the newer ones, is beyond a
               ///< threshold; or fewer than loss_cover + 1 states were sent yet.
  kHorizon,    ///< The last send's estimate horizon_s ahead is beyond horizon_threshold_m from the current state's.
};

/// Counters of what a sender sent, by reason.
struct SendStats {
  uint64_t sent = 0;       ///< States passed to MarkSent.
  uint64_t first = 0;      ///< ... of which the first one.
  uint64_t heartbeat = 0;  ///< ... of which sent for the heartbeat.
  uint64_t position = 0;   ///< ... of which sent for position drift.
  uint64_t angle = 0;      ///< ... of which sent for orientation drift.
  uint64_t cover = 0;      ///< ... of which sent to cover possible losses.
  uint64_t horizon = 0;    ///< ... of which sent to keep the estimate good through an outage.
  uint64_t forced = 0;     ///< ... of which sent while the policy did not ask for it.
};

/// Sender side of dead reckoning: runs the receivers' model on what it sent and asks for a new
/// send when that estimate drifts from the truth, when the heartbeat expires, or when nothing was
/// sent yet; never faster than max_rate_hz. With no acknowledgements it cannot see a loss, so it
/// also watches the estimates of the loss_cover states sent before the last one, which receivers
/// that lost the newer packets still show. A sudden correction thus goes out loss_cover + 1 times
/// in a row; during a smooth manoeuvre the last loss_cover + 1 states all stay near the truth; a
/// heartbeat is repeated only once the state it replaced starts to drift.
/// Plain copyable data; holds a copy of its def.
class SendPolicy {
 public:
  /// A policy that has sent nothing yet; `def` must pass ValidateSendPolicyDef. `heartbeat_phase`, in
  /// [0, 1), places the heartbeat slots at sim times (heartbeat_phase + k) * heartbeat_s: give each entity
  /// its own (EntityPhase of its id, entity_id.hpp).
  explicit SendPolicy(const SendPolicyDef& def = DefaultSendPolicyDef(), double heartbeat_phase = 0.0);

  /// Why `truth` (valid at truth.stamp_ns) is due to be sent at sim time `now_ns`; kNone if not.
  SendReason Evaluate(const KinematicState& truth, int64_t now_ns) const;

  /// True when `truth` is due to be sent at sim time `now_ns`.
  bool ShouldSend(const KinematicState& truth, int64_t now_ns) const {
    return Evaluate(truth, now_ns) != SendReason::kNone;
  }

  /// Records that `sent` went out; its stamp_ns is taken as the send time.
  void MarkSent(const KinematicState& sent);

  /// Distance between the estimate from the last send and `truth` at truth.stamp_ns, in m; 0 before any send.
  double PositionDriftM(const KinematicState& truth) const;

  /// True once a state was marked sent.
  bool HasSent() const { return sent_count_ > 0; }

  /// Last state marked sent. Precondition: HasSent().
  const KinematicState& LastSent() const { return sent_[0].State(); }

  /// Counters since construction.
  const SendStats& Stats() const { return stats_; }

  /// The definition this policy runs with.
  const SendPolicyDef& Def() const { return def_; }

 private:
  /// Which threshold, if any, the estimate from `ref` breaks against `truth` (now or lead_time_s ahead).
  SendReason Drift(const PreparedState& ref, const KinematicState& truth, const Pose& truth_ahead) const;

  SendPolicyDef def_;
  int64_t heartbeat_ns_;        // heartbeat_s
  int64_t heartbeat_phase_ns_;  // the slots' offset within the period, in [0, heartbeat_ns_)
  // The last states sent, newest first, prepared for the receivers' model; sent_count_ of them are valid.
  std::array<PreparedState, kMaxLossCover + 1> sent_{};
  int sent_count_ = 0;
  SendStats stats_;
};

}  // namespace platoon::dr
