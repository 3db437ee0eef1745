#include "platoon/dead_reckoning.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace platoon::dr {
namespace {

/// Below this rotation angle over the horizon, RVB uses Taylor series instead of the closed forms.
constexpr double kSeriesAngleRad = 0.05;
/// Half step of the central difference that gives the displayed velocity while blending, in ns.
constexpr int64_t kVelocityProbeNs = 100'000;
/// A running blend is retargeted, not restarted, when the new track is this close to its target, in m.
/// The display then moves by at most this much at once.
constexpr double kRetargetM = 0.001;
/// ... and this close in orientation, in rad.
constexpr double kRetargetRad = 0.001;
/// Largest T dV.E0 / |E0|^2 a blend may have: bounds its overshoot to 2 % of the correction.
constexpr double kMaxRunawayRatio = 1.5;
/// Relative slack on the send-rate cap, so ticks at exactly max_rate_hz pass despite rounding.
constexpr double kRateSlack = 1e-6;
/// CCA takes the body's forward axis as the direction of travel below this speed, in m/s.
constexpr double kCcaDirectionMps = 1e-6;
/// CCA divides the yaw rate by at least this speed to get the path curvature, in m/s; a car this
/// slow turns on the spot by no more than its yaw rate allows.
constexpr double kCcaMinSpeedMps = 0.2;

bool Finite(const Vec3& v) { return v.allFinite(); }

bool Finite(const KinematicState& s) {
  return Finite(s.pose.position_m) && s.pose.orientation.coeffs().allFinite() && Finite(s.velocity_mps) &&
         Finite(s.acceleration_mps2) && Finite(s.angular_velocity_radps);
}

bool FinitePositive(double x) { return std::isfinite(x) && x > 0; }

/// Weights of the RVB position integrals for rotation rate |w| = w_radps over dt_s (see Rvb below).
struct RvbWeights {
  double c1, c2, d0, d1, d2;
};

RvbWeights ComputeRvbWeights(double w_radps, double dt_s) {
  const double t = dt_s;
  const double t2 = t * t, t3 = t2 * t, t4 = t3 * t;
  const double th = w_radps * t;
  const double th2 = th * th;
  RvbWeights k{};
  k.d0 = 0.5 * t2;
  if (std::abs(th) < kSeriesAngleRad) {
    // Taylor series; the closed forms below cancel catastrophically as th -> 0. Next terms < 1e-17.
    const double th4 = th2 * th2, th6 = th4 * th2;
    k.c1 = t2 * (1.0 / 2 - th2 / 24 + th4 / 720 - th6 / 40320);
    k.c2 = t3 * (1.0 / 6 - th2 / 120 + th4 / 5040 - th6 / 362880);
    k.d1 = t3 * (1.0 / 3 - th2 / 30 + th4 / 840 - th6 / 45360);
    k.d2 = t4 * (1.0 / 8 - th2 / 144 + th4 / 5760 - th6 / 403200);
    return k;
  }
  const double w = w_radps, w2 = w * w, w3 = w2 * w;
  const double s = std::sin(th), c = std::cos(th);
  k.c1 = (1 - c) / w2;
  k.c2 = (t - s / w) / w2;
  k.d1 = (s - th * c) / w3;
  k.d2 = (0.5 * t2 - (c + th * s - 1) / w2) / w2;
  return k;
}

/// DRM 8 (RVB), written in world coordinates. The body turns at constant w; velocity v0 and the
/// tangential acceleration ar = a0 - w x v0 (the part not explained by turning) are constant in
/// the body frame, so with R(s) = exp([w]s):
///   v(t) = R(t) (v0 + ar t),   a(t) = w x v(t) + R(t) ar
///   p(t) = p0 + (int_0^t R ds) v0 + (int_0^t s R ds) ar
/// where int R = t I + c1 [w] + c2 [w]^2 and int s R = t^2/2 I + d1 [w] + d2 [w]^2.
/// With `pose_only`, the velocity and acceleration of the result are left as they were (the send policy
/// compares poses only; the pose's bits are the same either way).
KinematicState Rvb(const KinematicState& last, double dt_s, bool pose_only = false) {
  const Vec3& w = last.angular_velocity_radps;
  const Vec3& v0 = last.velocity_mps;
  const Vec3 ar = last.acceleration_mps2 - w.cross(v0);
  const RvbWeights k = ComputeRvbWeights(w.norm(), dt_s);
  const Vec3 wv = w.cross(v0), wa = w.cross(ar);
  KinematicState out = last;
  out.pose.position_m += dt_s * v0 + k.c1 * wv + k.c2 * w.cross(wv) + k.d0 * ar + k.d1 * wa + k.d2 * w.cross(wa);
  const Quat turn = QuatFromAngularVelocity(w, dt_s);
  out.pose.orientation = (turn * last.pose.orientation).normalized();
  if (pose_only) return out;
  out.velocity_mps = turn * (v0 + ar * dt_s);
  out.acceleration_mps2 = w.cross(out.velocity_mps) + turn * ar;
  return out;
}

// CCA's terms of `last` (docs on Cca below).
detail::CcaTerms PrepareCca(const KinematicState& last) {
  detail::CcaTerms c;
  const Vec3& v0 = last.velocity_mps;
  c.speed_mps = v0.norm();
  // Direction of travel; at a standstill the body's forward axis, where a pull-away goes.
  c.u0 = c.speed_mps > kCcaDirectionMps ? Vec3(v0 / c.speed_mps) : Vec3(last.pose.orientation * Vec3::UnitX());
  c.at_mps2 = last.acceleration_mps2.dot(c.u0);
  c.zero_s = c.at_mps2 != 0.0 ? -c.speed_mps / c.at_mps2 : 0.0;  // when the speed would reach zero
  // Curvature per metre; below kCcaMinSpeedMps the yaw rate is divided by that floor instead.
  c.k = last.angular_velocity_radps / std::max(c.speed_mps, kCcaMinSpeedMps);
  c.k_norm = c.k.norm();
  c.k_axis = c.k.normalized();
  c.ku = c.k.cross(c.u0);
  c.kku = c.k.cross(c.ku);
  // The rest of the acceleration, neither along the track nor the turn's (a side-slip change), is
  // held in the turning frame as RVB holds it, for the time moved.
  const Vec3& w = last.angular_velocity_radps;
  c.side = last.acceleration_mps2 - w.cross(v0) - c.at_mps2 * c.u0;
  c.w_norm = w.norm();
  c.ws = w.cross(c.side);
  c.wws = w.cross(c.ws);
  return c;
}

/// CCA's motion over dt_s from the terms: how long it moved, how far, the position change and the turn.
struct CcaMove {
  bool stopped = false;
  double moved_s = 0, s_m = 0;
  Vec3 dp = Vec3::Zero();
  Quat turn = Quat::Identity();
};

CcaMove MoveCca(const detail::CcaTerms& c, double dt_s) {
  CcaMove m;
  // Time actually moved: the speed |v0| + at t must not cross zero, forwards or backwards in time.
  m.stopped = (dt_s > 0 && c.at_mps2 < 0 && c.zero_s <= dt_s) || (dt_s < 0 && c.at_mps2 > 0 && c.zero_s >= dt_s);
  m.moved_s = m.stopped ? c.zero_s : dt_s;
  m.s_m = c.speed_mps * m.moved_s + 0.5 * c.at_mps2 * m.moved_s * m.moved_s;
  const RvbWeights a = ComputeRvbWeights(c.k_norm, m.s_m);
  const RvbWeights ks = ComputeRvbWeights(c.w_norm, m.moved_s);
  m.dp = m.s_m * c.u0 + a.c1 * c.ku + a.c2 * c.kku + ks.d0 * c.side + ks.d1 * c.ws + ks.d2 * c.wws;
  // QuatFromAngularVelocity(k, s_m), with |k| and k's axis from the terms.
  const double angle = c.k_norm * m.s_m;
  if (std::abs(angle) >= 1e-12) m.turn = Quat(Eigen::AngleAxisd(angle, c.k_axis));
  return m;
}

/// CCA: constant path curvature and constant tangential acceleration, stopping at zero speed (see
/// docs/ARCHITECTURE.md, "Dead reckoning"). A car turns by distance travelled, not by time: its yaw
/// rate is speed times the path curvature, which the road and the steering fix. So the curvature
/// k = w / |v0| is held, and the distance s(t) = |v0| t + at t^2 / 2 along the track, with
/// at = a0 . u0 (u0 = v0 / |v0|), ends where the speed reaches zero: braking never runs backwards.
/// With the rotation R(s) = exp([k] s) that turns u0 along the path:
///   p(t) = p0 + (int_0^s R ds') u0 = p0 + (s I + c1 [k] + c2 [k]^2) u0,   q(t) = R(s) q0
///   v(t) = R(s) u0 (|v0| + at t),   w(t) = k |v(t)|,   a(t) = w(t) x v(t) + at R(s) u0
/// with c1, c2 those of RVB for rate |k| over s. The rest of a0, a side-slip change, is carried as RVB
/// carries its tangential acceleration. At constant speed this is RVB: exact on circles.
KinematicState Cca(const KinematicState& last, double dt_s, bool pose_only = false) {
  const detail::CcaTerms c = PrepareCca(last);
  const CcaMove m = MoveCca(c, dt_s);
  KinematicState out = last;
  out.pose.position_m += m.dp;
  out.pose.orientation = (m.turn * last.pose.orientation).normalized();
  if (pose_only) return out;
  const Vec3& w = last.angular_velocity_radps;
  const double speed_out = m.stopped ? 0.0 : c.speed_mps + c.at_mps2 * dt_s;
  const Vec3 u = m.turn * c.u0;
  const Quat side_turn = QuatFromAngularVelocity(w, m.moved_s);
  out.angular_velocity_radps = speed_out * c.k;
  if (m.stopped) {
    out.velocity_mps.setZero();
    out.acceleration_mps2.setZero();
  } else {
    out.velocity_mps = speed_out * u + side_turn * c.side * m.moved_s;
    out.acceleration_mps2 = out.angular_velocity_radps.cross(speed_out * u) + c.at_mps2 * u +
                            w.cross(side_turn * c.side * m.moved_s) + side_turn * c.side;
  }
  return out;
}

}  // namespace

Model ModelFromName(std::string_view name) {
  if (name == "static") return Model::kStatic;
  if (name == "fpw") return Model::kFpw;
  if (name == "rvw") return Model::kRvw;
  if (name == "rvb") return Model::kRvb;
  if (name == "cca") return Model::kCca;
  throw std::invalid_argument("unknown dead-reckoning model '" + std::string(name) +
                              "'; expected one of: static, fpw, rvw, rvb, cca");
}

std::string_view ModelName(Model model) {
  switch (model) {
    case Model::kStatic: return "static";
    case Model::kFpw: return "fpw";
    case Model::kRvw: return "rvw";
    case Model::kRvb: return "rvb";
    case Model::kCca: return "cca";
  }
  assert(false && "unhandled dead-reckoning model");
  return "?";
}

namespace {

KinematicState ExtrapolateImpl(Model model, const KinematicState& last, int64_t t_ns, bool pose_only) {
  const double dt_s = NsToS(t_ns - last.stamp_ns);
  KinematicState out = last;
  switch (model) {
    case Model::kStatic:
      // DRM 1: nothing moves.
      out.velocity_mps.setZero();
      out.acceleration_mps2.setZero();
      out.angular_velocity_radps.setZero();
      break;
    case Model::kFpw:
      // DRM 2: p = p0 + v0 dt; orientation held.
      out.pose.position_m += last.velocity_mps * dt_s;
      out.acceleration_mps2.setZero();
      out.angular_velocity_radps.setZero();
      break;
    case Model::kRvw: {
      // DRM 4: p = p0 + v0 dt + a0 dt^2 / 2; q = exp([w] dt) q0.
      out.pose.position_m += last.velocity_mps * dt_s + 0.5 * dt_s * dt_s * last.acceleration_mps2;
      out.velocity_mps += last.acceleration_mps2 * dt_s;
      out.pose.orientation =
          (QuatFromAngularVelocity(last.angular_velocity_radps, dt_s) * last.pose.orientation).normalized();
      break;
    }
    case Model::kRvb:
      out = Rvb(last, dt_s, pose_only);
      break;
    case Model::kCca:
      out = Cca(last, dt_s, pose_only);
      break;
  }
  out.stamp_ns = t_ns;
  return out;
}

}  // namespace

KinematicState ExtrapolateState(Model model, const KinematicState& last, int64_t t_ns) {
  return ExtrapolateImpl(model, last, t_ns, false);
}

// The pose alone (the send policy evaluates about ten of these per entity and step): the same bits as
// ExtrapolateState's pose, without the velocity, acceleration and second rotation it also computes.
Pose Extrapolate(Model model, const KinematicState& last, int64_t t_ns) {
  return ExtrapolateImpl(model, last, t_ns, true).pose;
}

PreparedState::PreparedState(Model model, const KinematicState& state) : model_(model), state_(state) {
  if (model_ == Model::kCca) cca_ = PrepareCca(state_);
}

Pose PreparedState::At(int64_t t_ns) const {
  if (model_ != Model::kCca) return Extrapolate(model_, state_, t_ns);
  // Cca(state_, dt, pose_only) with the terms derived once: the same operations on the same values.
  const CcaMove m = MoveCca(cca_, NsToS(t_ns - state_.stamp_ns));
  Pose out = state_.pose;
  out.position_m += m.dp;
  out.orientation = (m.turn * state_.pose.orientation).normalized();
  return out;
}

// ---------------------------------------------------------------------------------------------
// RemoteTrack
// ---------------------------------------------------------------------------------------------

TrackDef DefaultTrackDef() { return TrackDef{}; }

std::string ValidateTrackDef(const TrackDef& def) {
  std::ostringstream err;
  if (!(std::isfinite(def.blend_time_s) && def.blend_time_s >= 0)) {
    err << "blend_time_s must be >= 0, got " << def.blend_time_s;
  } else if (!(std::isfinite(def.max_blend_time_s) && def.max_blend_time_s >= def.blend_time_s)) {
    err << "max_blend_time_s must be >= blend_time_s (" << def.blend_time_s << "), got " << def.max_blend_time_s;
  } else if (!FinitePositive(def.max_correction_mps)) {
    err << "max_correction_mps must be > 0, got " << def.max_correction_mps;
  } else if (!FinitePositive(def.snap_distance_m)) {
    err << "snap_distance_m must be > 0, got " << def.snap_distance_m;
  } else if (!(FinitePositive(def.snap_angle_rad) && def.snap_angle_rad <= std::numbers::pi)) {
    err << "snap_angle_rad must be in (0, pi], got " << def.snap_angle_rad;
  }
  return err.str();
}

RemoteTrack::RemoteTrack(const TrackDef& def) : def_(def) { assert(ValidateTrackDef(def).empty()); }

bool RemoteTrack::OnUpdate(const KinematicState& state, int64_t now_ns) {
  // Bad or out-of-date input is counted and dropped; the display carries on undisturbed.
  if (!Finite(state) || state.pose.orientation.norm() < 0.5) {
    ++stats_.invalid;
    return false;
  }
  if (has_state_ && state.stamp_ns <= latest_.stamp_ns) {
    ++stats_.stale;
    return false;
  }
  ++stats_.accepted;
  const bool first = !has_state_;
  // The trajectory displayed so far, and the track it was heading for, must be read before
  // latest_ changes.
  const KinematicState shown = first ? KinematicState{} : DisplayedState(now_ns);
  const bool was_blending = !first && Blending(now_ns);
  const Pose old_target = first ? Pose{} : Extrapolate(def_.model, latest_, now_ns);
  latest_ = state;
  latest_.pose.orientation.normalize();
  has_state_ = true;
  const KinematicState target = ExtrapolateState(def_.model, latest_, now_ns);

  // An update that only confirms the track a running blend is heading for (a repeat sent to cover
  // losses) retargets that blend instead of restarting it: restarting from the display's current
  // velocity, which includes the blend's own correction, would compound into a faster correction.
  if (was_blending && (old_target.position_m - target.pose.position_m).norm() <= kRetargetM &&
      AngleBetween(old_target.orientation, target.pose.orientation) <= kRetargetRad) {
    ++stats_.retargets;
    to_ = ExtrapolateState(def_.model, latest_, blend_start_ns_);
    return true;
  }
  blending_ = false;
  if (first) return true;

  // Teleports (and blends switched off) jump straight onto the new track.
  const double jump_m = (shown.pose.position_m - target.pose.position_m).norm();
  const double turn_rad = AngleBetween(shown.pose.orientation, target.pose.orientation);
  if (jump_m > def_.snap_distance_m || turn_rad > def_.snap_angle_rad || def_.blend_time_s <= 0) {
    ++stats_.snaps;
    return true;
  }

  // Blend length: nominally blend_time_s, stretched so the correction itself never moves faster
  // than max_correction_mps. The old projection keeps the old velocity at first, so the shown
  // offset from the new track, D(a) = (1-a) E0 + (1-a)^2 a T dV, first grows when the old display
  // was running away (dV.E0 > 0). With T dV.E0 = k |E0|^2 it peaks at 1.02 |E0| for k = 1.5 while
  // the offset moves at most |dV| (1/k + 1/3) = |dV|, no faster than the old display was already
  // drifting; so T is shortened to keep k <= 1.5.
  double length_s = std::clamp(jump_m / def_.max_correction_mps, def_.blend_time_s, def_.max_blend_time_s);
  const Vec3 offset_m = shown.pose.position_m - target.pose.position_m;
  const double runaway = (shown.velocity_mps - target.velocity_mps).dot(offset_m);  // m^2/s
  if (runaway * length_s > kMaxRunawayRatio * offset_m.squaredNorm()) {
    length_s = kMaxRunawayRatio * offset_m.squaredNorm() / runaway;
  }
  ++stats_.blends;
  blending_ = true;
  blend_start_ns_ = now_ns;
  blend_length_ns_ = std::max<int64_t>(1, SToNs(length_s));
  from_ = shown;
  to_ = target;
  return true;
}

bool RemoteTrack::Blending(int64_t now_ns) const {
  return blending_ && now_ns < blend_start_ns_ + blend_length_ns_;
}

Pose RemoteTrack::At(int64_t now_ns) const {
  assert(has_state_);
  const Pose target = Extrapolate(def_.model, latest_, now_ns);
  if (!Blending(now_ns)) return target;

  // Projective velocity blending (Murphy, "Believable Dead Reckoning for Networked Games", 2011):
  // the old display is projected from where it was when the correction arrived, with a velocity
  // and turn rate that slide linearly from the old ones to the new track's; the shown pose then
  // slides linearly (and by slerp) from that projection to the new track.
  const double alpha =
      std::clamp(static_cast<double>(now_ns - blend_start_ns_) / static_cast<double>(blend_length_ns_), 0.0, 1.0);
  KinematicState projected = from_;
  projected.stamp_ns = blend_start_ns_;
  projected.velocity_mps = from_.velocity_mps + alpha * (to_.velocity_mps - from_.velocity_mps);
  projected.angular_velocity_radps =
      from_.angular_velocity_radps + alpha * (to_.angular_velocity_radps - from_.angular_velocity_radps);
  projected.acceleration_mps2 = to_.acceleration_mps2;
  const Pose old_path = Extrapolate(def_.model, projected, now_ns);

  Pose out;
  out.position_m = old_path.position_m + alpha * (target.position_m - old_path.position_m);
  out.orientation = old_path.orientation.slerp(alpha, target.orientation).normalized();
  return out;
}

KinematicState RemoteTrack::DisplayedState(int64_t now_ns) const {
  assert(has_state_);
  KinematicState out = ExtrapolateState(def_.model, latest_, now_ns);
  if (!Blending(now_ns)) return out;

  // While blending, the display has no closed-form velocity; a central difference is exact to
  // O(h^2) and keeps the next blend starting with the velocity actually shown.
  out.pose = At(now_ns);
  const Vec3 ahead = At(now_ns + kVelocityProbeNs).position_m;
  const Vec3 behind = At(now_ns - kVelocityProbeNs).position_m;
  out.velocity_mps = (ahead - behind) / NsToS(2 * kVelocityProbeNs);
  const double alpha =
      std::clamp(static_cast<double>(now_ns - blend_start_ns_) / static_cast<double>(blend_length_ns_), 0.0, 1.0);
  out.angular_velocity_radps =
      from_.angular_velocity_radps + alpha * (to_.angular_velocity_radps - from_.angular_velocity_radps);
  return out;
}

// ---------------------------------------------------------------------------------------------
// SendPolicy
// ---------------------------------------------------------------------------------------------

SendPolicyDef DefaultSendPolicyDef() { return SendPolicyDef{}; }

std::string ValidateSendPolicyDef(const SendPolicyDef& def) {
  std::ostringstream err;
  if (!FinitePositive(def.position_threshold_m)) {
    err << "position_threshold_m must be > 0, got " << def.position_threshold_m;
  } else if (!FinitePositive(def.angle_threshold_rad)) {
    err << "angle_threshold_rad must be > 0, got " << def.angle_threshold_rad;
  } else if (!(std::isfinite(def.lead_time_s) && def.lead_time_s >= 0)) {
    err << "lead_time_s must be >= 0, got " << def.lead_time_s;
  } else if (!(std::isfinite(def.horizon_s) && def.horizon_s >= 0)) {
    err << "horizon_s must be >= 0, got " << def.horizon_s;
  } else if (!FinitePositive(def.horizon_threshold_m)) {
    err << "horizon_threshold_m must be > 0, got " << def.horizon_threshold_m;
  } else if (!FinitePositive(def.heartbeat_s) || def.heartbeat_s > 3600) {
    err << "heartbeat_s must be in (0, 3600], got " << def.heartbeat_s;
  } else if (!FinitePositive(def.max_rate_hz)) {
    err << "max_rate_hz must be > 0, got " << def.max_rate_hz;
  } else if (def.loss_cover < 0 || def.loss_cover > kMaxLossCover) {
    err << "loss_cover must be in [0, " << kMaxLossCover << "], got " << def.loss_cover;
  }
  return err.str();
}

SendPolicy::SendPolicy(const SendPolicyDef& def, double heartbeat_phase)
    : def_(def), heartbeat_ns_(std::max<int64_t>(1, SToNs(def.heartbeat_s))) {
  assert(ValidateSendPolicyDef(def).empty());
  assert(heartbeat_phase >= 0.0 && heartbeat_phase < 1.0);
  heartbeat_phase_ns_ = std::clamp<int64_t>(static_cast<int64_t>(heartbeat_phase * static_cast<double>(heartbeat_ns_)), 0,
                                            heartbeat_ns_ - 1);
}

SendReason SendPolicy::Drift(const PreparedState& ref, const KinematicState& truth, const Pose& truth_ahead) const {
  // Drift now, and lead_time_s ahead: receivers see a new state only after the network delay and
  // their next frame, and the drift keeps growing meanwhile.
  const Pose estimate = ref.At(truth.stamp_ns);
  const Pose estimate_ahead = ref.At(truth.stamp_ns + SToNs(def_.lead_time_s));
  const double drift_m = std::max((estimate.position_m - truth.pose.position_m).norm(),
                                  (estimate_ahead.position_m - truth_ahead.position_m).norm());
  if (drift_m > def_.position_threshold_m) return SendReason::kPosition;
  const double turn_rad = std::max(AngleBetween(estimate.orientation, truth.pose.orientation),
                                   AngleBetween(estimate_ahead.orientation, truth_ahead.orientation));
  if (turn_rad > def_.angle_threshold_rad) return SendReason::kAngle;
  return SendReason::kNone;
}

SendReason SendPolicy::Evaluate(const KinematicState& truth, int64_t now_ns) const {
  if (sent_count_ == 0) return SendReason::kFirst;
  const double since_s = NsToS(now_ns - sent_[0].State().stamp_ns);
  // The rate cap wins over everything else, the heartbeat included. The slack lets a caller that
  // ticks at exactly max_rate_hz through despite ns rounding of its tick period.
  if (since_s * def_.max_rate_hz < 1.0 - kRateSlack) return SendReason::kNone;
  // The heartbeat: the entity's first slot at least half a period after the last send.
  const int64_t earliest = sent_[0].State().stamp_ns + heartbeat_ns_ / 2;
  if (now_ns >= earliest) {
    int64_t to_slot = (heartbeat_phase_ns_ - earliest) % heartbeat_ns_;
    if (to_slot < 0) to_slot += heartbeat_ns_;
    if (now_ns >= earliest + to_slot) return SendReason::kHeartbeat;
  }
  // The sender knows its full state, so its own near future is predicted with the richest model.
  const Pose truth_ahead = Extrapolate(Model::kRvb, truth, truth.stamp_ns + SToNs(def_.lead_time_s));
  if (const SendReason r = Drift(sent_[0], truth, truth_ahead); r != SendReason::kNone) return r;
  // Receivers that lost the newest i packets still extrapolate sent_[i] (or show nothing yet).
  for (int i = 1; i <= def_.loss_cover; ++i) {
    if (i >= sent_count_ || Drift(sent_[i], truth, truth_ahead) != SendReason::kNone) return SendReason::kCover;
  }
  // Through an outage receivers keep extrapolating the last send; its estimate horizon_s ahead must
  // stay near what the current state would predict there, or an outage starting now would show the gap.
  if (def_.horizon_s > 0) {
    const int64_t horizon_ns = truth.stamp_ns + SToNs(def_.horizon_s);
    const double gap_m = (sent_[0].At(horizon_ns).position_m -
                          Extrapolate(def_.model, truth, horizon_ns).position_m)
                             .norm();
    if (gap_m > def_.horizon_threshold_m) return SendReason::kHorizon;
  }
  return SendReason::kNone;
}

void SendPolicy::MarkSent(const KinematicState& sent) {
  ++stats_.sent;
  switch (Evaluate(sent, sent.stamp_ns)) {
    case SendReason::kNone: ++stats_.forced; break;
    case SendReason::kFirst: ++stats_.first; break;
    case SendReason::kHeartbeat: ++stats_.heartbeat; break;
    case SendReason::kPosition: ++stats_.position; break;
    case SendReason::kAngle: ++stats_.angle; break;
    case SendReason::kCover: ++stats_.cover; break;
    case SendReason::kHorizon: ++stats_.horizon; break;
  }
  std::move_backward(sent_.begin(), sent_.end() - 1, sent_.end());
  sent_[0] = PreparedState(def_.model, sent);
  sent_count_ = std::min<int>(sent_count_ + 1, static_cast<int>(sent_.size()));
}

double SendPolicy::PositionDriftM(const KinematicState& truth) const {
  if (sent_count_ == 0) return 0.0;
  return (sent_[0].At(truth.stamp_ns).position_m - truth.pose.position_m).norm();
}

}  // namespace platoon::dr
