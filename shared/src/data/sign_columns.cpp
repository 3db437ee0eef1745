#include "platoon/data/sign_columns.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::data {

void FillSignColumns(MetricsRow& row, const road::Road& road, const std::vector<road::Sign>& signs, double range_m) {
  const double road_id = row[Column::kRoadId], s = row[Column::kS], yaw_rad = row[Column::kYaw];
  if (signs.empty() || !std::isfinite(road_id) || !std::isfinite(s) || !std::isfinite(yaw_rad) ||
      static_cast<int>(road_id) != road.Id())
    return;
  const int direction = std::cos(yaw_rad - road.Heading(s)) >= 0 ? 1 : -1;
  if (const auto next = road::NextSign(signs, s, direction, range_m); next.sign) {
    row[Column::kNextSignType] = static_cast<double>(next.sign->type);
    row[Column::kNextSignValue] = next.sign->value;
    row[Column::kNextSignDistance] = next.distance_m;
  }
  if (const auto last = road::LastSign(signs, s, direction, range_m); last.sign) {
    row[Column::kLastSignType] = static_cast<double>(last.sign->type);
    row[Column::kLastSignValue] = last.sign->value;
    row[Column::kLastSignDistance] = last.distance_m;
  }
}

SignTimeline::SignTimeline(std::vector<road::Sign> placed, std::vector<Change> changes)
    : placed_(std::move(placed)), signs_(placed_), changes_(std::move(changes)) {
  std::stable_sort(changes_.begin(), changes_.end(), [](const Change& a, const Change& b) { return a.first < b.first; });
}

const std::vector<road::Sign>& SignTimeline::At(int64_t sim_ns) {
  const auto after = std::upper_bound(changes_.begin(), changes_.end(), sim_ns,
                                      [](int64_t t, const Change& c) { return t < c.first; });
  const std::ptrdiff_t in_force = (after - changes_.begin()) - 1;
  if (in_force != current_) {
    signs_ = placed_;
    if (in_force >= 0) road::ApplyVariableContents(signs_, changes_[static_cast<size_t>(in_force)].second);
    current_ = in_force;
  }
  return signs_;
}

}  // namespace platoon::data
