#pragma once
/// The sign columns of per-vehicle data (seed 004 §5.3: "meta information about the sign the vehicle is
/// approaching or that has just been passed"): the next sign ahead and the last sign passed, with class,
/// value and along-road distance, for the direction the vehicle drives along the signs' road. Pure.

#include "platoon/data/columns.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"

#include <vector>

namespace platoon::data {

/// Fills kNextSign* and kLastSign* of `row` from its kRoadId, kS and kYaw (ComputeMetrics' foot point and
/// heading): signs for direction +1 when the vehicle heads along +s of `road` (cos(yaw - road heading at
/// s) >= 0), else -1. Left empty (NaN) when the row is on another road or off every road, and a side
/// without a sign within `range_m` stays empty. The driver seat's data write and `platoon export` call it.
void FillSignColumns(MetricsRow& row, const road::Road& road, const std::vector<road::Sign>& signs,
                     double range_m = 1000.0);

}  // namespace platoon::data
