#pragma once
/// The sign columns of per-vehicle data (seed 004 §5.3: "meta information about the sign the vehicle is
/// approaching or that has just been passed"): the next sign ahead and the last sign passed, with class,
/// value and along-road distance, for the direction the vehicle drives along the signs' road. Pure.

#include "platoon/data/columns.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace platoon::data {

/// Fills kNextSign* and kLastSign* of `row` from its kRoadId, kS and kYaw (ComputeMetrics' foot point and
/// heading): signs for direction +1 when the vehicle heads along +s of `road` (cos(yaw - road heading at
/// s) >= 0), else -1. Left empty (NaN) when the row is on another road or off every road, and a side
/// without a sign within `range_m` stays empty. The driver seat's data write and `platoon export` call it.
void FillSignColumns(MetricsRow& row, const road::Road& road, const std::vector<road::Sign>& signs,
                     double range_m = 1000.0);

/// The signs as a recording had them over time: the placed signs, with each recorded content of the variable
/// signs (the world states' conditions) in force from its sim time on. `platoon export` fills the sign
/// columns of a row from At(its time).
class SignTimeline {
 public:
  /// A recorded change: sim time, in ns, and every variable sign's content from then on.
  using Change = std::pair<int64_t, std::vector<world::VariableSignContent>>;
  /// `changes` in any order (sorted here by sim time, recorded order kept among equal times).
  SignTimeline(std::vector<road::Sign> placed, std::vector<Change> changes);
  /// The signs in force at `sim_ns`: as placed before the first change, else with the newest change not
  /// after it. Cheap for rows in time order (the signs are rebuilt only when another change is in force).
  const std::vector<road::Sign>& At(int64_t sim_ns);
  size_t Changes() const { return changes_.size(); }

 private:
  std::vector<road::Sign> placed_, signs_;
  std::vector<Change> changes_;
  std::ptrdiff_t current_ = -1;  // the change in force in signs_ (-1: none, as placed)
};

}  // namespace platoon::data
