#pragma once
/// The ground truth of a recording: every entity state the session's world broadcasts carried
/// (keyframes and deltas, as on /platoon/world of a session log), by entity and sim time, and the
/// state of any entity at any sim time from them. Pure: handed decoded world states, it reads no file.
/// Used by `platoon validate` (docs/RECORDING.md, "Validation reports").

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace platoon::validation {

/// How an entity's state between (or after) its recorded states is found.
enum class TruthMethod : uint8_t {
  /// Between the two recorded states that bracket t: cubic Hermite position (from both states' positions
  /// and velocities), slerped orientation, linear velocities. After the last state, and across a jump
  /// (the next state farther than the speed allows + 1 m: a respawn), dead reckoning.
  kInterpolate,
  /// Dead reckoning from the latest recorded state at or before t with the kind's model
  /// (dr::ModelForKind): the world exactly as every receiver of the broadcasts saw it.
  kDeadReckon,
};

/// "interpolate" or "dead_reckon".
std::string_view TruthMethodName(TruthMethod m);
/// Parses a method name; nullopt for anything else.
std::optional<TruthMethod> TruthMethodFromName(std::string_view name);

/// Every recorded entity state, by entity and sim time.
class RecordedWorld {
 public:
  /// How far past the last broadcast an entity's state is still extrapolated, in ns. Typical 0.5 s.
  static constexpr int64_t kHorizonNs = 500'000'000;

  /// Adds one world broadcast, in log order. A keyframe lists every entity: one it leaves out was
  /// removed at its sim time; a delta lists changed entities and removed ids.
  void Add(const protocol::WorldState& world);

  /// State of entity `id` at sim time `t_ns` (kinematics at t_ns; other fields as last recorded before
  /// t_ns), or nullopt when it did not exist then: before its first recorded state, after a removal with
  /// no state since, or more than kHorizonNs after the last broadcast.
  std::optional<protocol::EntityState> StateAt(uint64_t id, int64_t t_ns, TruthMethod method) const;

  /// Every entity that exists at `t_ns` except `exclude_id`, with its state at t_ns, by id.
  std::vector<protocol::EntityState> EntitiesAt(int64_t t_ns, TruthMethod method, uint64_t exclude_id = 0) const;

  /// Entities ever seen.
  size_t EntityCount() const { return entities_.size(); }
  /// World broadcasts added.
  uint64_t Broadcasts() const { return broadcasts_; }
  /// Sim time of the first and the last broadcast, in ns (0 before any).
  int64_t FirstNs() const { return first_ns_; }
  int64_t LastNs() const { return last_ns_; }

 private:
  struct History {
    std::vector<protocol::EntityState> states;  // by kinematics.stamp_ns, strictly increasing
    std::vector<int64_t> removed_ns;            // sim times of removals, increasing
    bool present = false;                       // in the world as of the last broadcast
  };
  void Record(const protocol::EntityState& e);

  std::map<uint64_t, History> entities_;
  uint64_t broadcasts_ = 0;
  int64_t first_ns_ = 0, last_ns_ = 0;
};

/// Kinematics at `t_ns` between two states of one entity (a.stamp_ns <= t_ns <= b.stamp_ns): cubic
/// Hermite position, slerped orientation, linearly blended velocity, acceleration and angular velocity.
/// The shared platoon::InterpolateKinematics (platoon/state_interpolation.hpp), which export uses too.
KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns);

}  // namespace platoon::validation
