#pragma once
/// Variators during a run ([[variator]]; docs/EXPERIMENTS.md, "Variators"). The pure core (Variators) is
/// given sim time and says which parameter values are due; the VariatorSystem sets them through
/// WorldCore::RequestParamSet, the path of set_param scenario actions, so every change is logged as a
/// parameter event with the source "variator:<index>".

#include "platoon/config/variators.hpp"
#include "platoon/server/world_core.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace platoon::server {

/// One value a variator sets.
struct VariatorChange {
  size_t index = 0;        ///< The variator's index in the session.
  std::string param;       ///< Parameter path.
  double value = 0;        ///< The value (a toggle: 0 or 1).
  std::string text;        ///< The value as set_param text ("12.5", "true").
  int64_t due_ns = 0;      ///< Sim time the value belongs to, in ns (<= the Step time).
};

/// One random segment of a variator: a triangle's cycle, or a step's or toggle's dwell.
struct VariatorSegment {
  int64_t start_ns = 0;     ///< Sim time it begins, in ns.
  int64_t duration_ns = 0;  ///< Its length, in ns.
  double value = 0;         ///< Step, toggle: the value held (toggle 0 or 1); triangle: 0.
};

/// The variators' values over sim time. Deterministic: each variator draws its durations and values from
/// its own SplitMix64 stream of (seed, index); no clocks.
class Variators {
 public:
  /// Segments kept per variator for Segments().
  static constexpr size_t kMaxSegments = 100000;

  explicit Variators(std::vector<config::VariatorDef> defs);

  /// The values due since the last call up to sim time `sim_ns`: at most one per variator (the latest due),
  /// and only values that differ from the last one set (a triangle's every period_s). Times must not go back.
  std::vector<VariatorChange> Step(int64_t sim_ns);

  /// Variator `i`'s value at `sim_ns` (before start_s: NaN).
  double ValueAt(size_t i, int64_t sim_ns);
  /// The segments of variator `i` drawn so far, oldest first.
  const std::vector<VariatorSegment>& Segments(size_t i) const { return state_.at(i).segments; }
  /// The definitions.
  const std::vector<config::VariatorDef>& Defs() const { return defs_; }

  /// A triangle's value at phase `u` in [0, 1] of its cycle: min at 0 and 1, max at 0.5.
  static double TriangleValue(const config::VariatorDef& def, double u);

 private:
  struct State {
    uint64_t rng = 0;
    std::vector<VariatorSegment> segments;
    int64_t next_emit_ns = 0;  // triangle: the next period tick
    uint64_t ticks = 0;        // triangle: ticks emitted
    bool has_last = false;
    std::string last_text;
  };
  double Uniform(State& s);
  // Draws segments until one covers `sim_ns` (sim_ns >= start); returns it.
  const VariatorSegment& SegmentAt(size_t i, int64_t sim_ns);
  std::string Text(size_t i, double value) const;

  std::vector<config::VariatorDef> defs_;
  std::vector<State> state_;
};

/// Sets the session's variators' values on the world core it is added to, at each OnAdvance.
class VariatorSystem final : public WorldSystem {
 public:
  /// `core` must outlive the system.
  VariatorSystem(WorldCore& core, std::vector<config::VariatorDef> defs, std::shared_ptr<spdlog::logger> log);

  void OnAdvance(int64_t sim_ns, int64_t now_ns) override;

  /// The core (for tests).
  const Variators& Core() const { return variators_; }
  /// Values set so far (requests made; a refused one is logged by the core).
  uint64_t Sets() const { return sets_; }

 private:
  WorldCore& core_;
  Variators variators_;
  std::shared_ptr<spdlog::logger> log_;
  std::vector<bool> stopped_;  // a server parameter refused its value: that variator stops
  uint64_t sets_ = 0;
};

/// Adds a VariatorSystem (priority kStepper) to `core` when its session has [[variator]]s; returns it, or
/// nullptr when there are none.
std::shared_ptr<VariatorSystem> InstallVariators(WorldCore& core, std::shared_ptr<spdlog::logger> log);

}  // namespace platoon::server
