#pragma once
/// Random roads after seed 004 §4.1 ("created randomly, according to configurable distributions of
/// curviness"): alternating straights and arcs with clothoid transitions between, drawn from the
/// distributions below. Seeded and deterministic on every platform (std::mt19937_64 with our own
/// uniform mapping; no std distributions, whose output differs between standard libraries).
/// The generator is incremental: Next() continues the same road, so a caller can build road ahead
/// of a vehicle as it drives (the seed's "2 km ahead").

#include "platoon/road/road_network.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace platoon::road {

/// Curviness distribution of a random road.
struct RoadGeneratorDef {
  uint64_t seed = 1;                       ///< Random seed; same seed and settings: same road.
  double straight_probability = 0.3;       ///< Chance that the next element is a straight, in [0, 1]. Typical 0.2-0.5.
  double straight_length_min_m = 50.0;     ///< Shortest straight, in m.
  double straight_length_max_m = 300.0;    ///< Longest straight, in m.
  double arc_length_min_m = 30.0;          ///< Shortest constant-curvature part of a curve, in m.
  double arc_length_max_m = 200.0;         ///< Longest constant-curvature part of a curve, in m.
  double curvature_min_1pm = 0.002;        ///< Gentlest curve, |k| in 1/m (radius 500 m).
  double curvature_max_1pm = 0.01;         ///< Sharpest curve, |k| in 1/m (radius 100 m). All curvatures stay within +-this.
  double curvature_shape = 1.0;            ///< |k| = min + (max - min) * u^shape, u uniform: 1 uniform, > 1 favours gentle curves.
  double left_turn_probability = 0.5;      ///< Chance that a curve turns left, in [0, 1].
  double max_curvature_rate_1pm2 = 2e-4;   ///< Steepest curvature change in transitions, |dk/ds| in 1/m^2. Typical 1e-4-1e-3.
  double transition_min_length_m = 20.0;   ///< Shortest clothoid transition, in m.
  RoadDef layout = DefaultRoadDef();       ///< Start pose, lanes, markings and grade of generated roads; its sections are ignored.
};

/// Rural two-lane road: 30 % straights 50-300 m, curves of radius 100-500 m, transitions >= 20 m.
RoadGeneratorDef DefaultRoadGeneratorDef();

/// Checks a RoadGeneratorDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateRoadGeneratorDef(const RoadGeneratorDef& def);

/// Draws sections of one random road, in order.
class RoadGenerator {
 public:
  /// Starts a road at zero curvature; asserts ValidateRoadGeneratorDef(def) is empty.
  explicit RoadGenerator(const RoadGeneratorDef& def);
  /// The next sections, at least `length_m` metres of them (the last element is never cut).
  std::vector<SectionDef> Next(double length_m);
  /// Length generated so far, in m.
  double GeneratedLength() const { return generated_m_; }

 private:
  double Uniform(double lo, double hi);

  RoadGeneratorDef def_;
  std::mt19937_64 rng_;
  double curvature_1pm_ = 0.0;  // curvature at the end of what was generated
  double generated_m_ = 0.0;
};

/// A whole random road of at least `length_m` metres: def.layout with generated sections.
RoadDef GenerateRoad(const RoadGeneratorDef& def, double length_m);

/// `count` random roads of at least `length_m` metres each from one generator, ids first_id, first_id + 1,
/// ...: each starts where the one before ends, with its heading, linked successor to predecessor (one
/// continuous winding road in junction-free pieces, for large networks in tests and benchmarks).
std::vector<RoadDef> GenerateRoadChain(const RoadGeneratorDef& def, int count, double length_m, int first_id = 1);

}  // namespace platoon::road
