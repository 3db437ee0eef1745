#pragma once
/// A state between two recorded states of one entity: cubic Hermite position from both states'
/// positions and velocities, slerped orientation, linearly blended rates. The counterpart of dead
/// reckoning (platoon/dead_reckoning.hpp) for tools that know the next state too: validation against a
/// recording, export of a recording to CSV. Pure: no clock, no I/O.
/// Equations: docs/RECORDING.md, "Validation reports" ("Ground truth at a stamp").

#include "platoon/dead_reckoning.hpp"
#include "platoon/geometry.hpp"

#include <cstdint>

namespace platoon {

/// Kinematics at `t_ns` between two states of one entity (a.stamp_ns <= t_ns <= b.stamp_ns; clamped
/// to that span): cubic Hermite position p = h00 p_a + h10 h v_a + h01 p_b + h11 h v_b (exact for
/// constant acceleration), slerped orientation, velocity, acceleration and angular velocity blended
/// linearly. stamp_ns = t_ns. Equal stamps give `a`.
KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns);

/// Kinematics at `t_ns` between two recorded states of one entity, as its owner's send policy vouches
/// for them: dead reckoning from `a` with `model` (the model every receiver used, dr::ModelForKind),
/// plus the correction that `b` brought at its stamp, phased in smoothly over the span (weight
/// 3s^2 - 2s^3 of position, velocity and orientation; accelerations and angular velocity blended linearly
/// between the two states). A threshold send policy sends `b` only when that
/// dead reckoning drifted past its bound, so the result stays within the bound of the truth however far
/// apart the states are (a car braking to a stop, a lane change: motions a cubic through both states
/// misses by decimetres over seconds). Exact where the model is; equals `a` at its stamp and `b` at its.
KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns, dr::Model model);

/// True when `b` cannot follow from `a` by driving, so that nothing is to be interpolated across them
/// (a respawn, a teleport): b lies farther from a than max(|v_a|, |v_b|) (t_b - t_a) + 1 m.
bool IsJump(const KinematicState& a, const KinematicState& b);

}  // namespace platoon
