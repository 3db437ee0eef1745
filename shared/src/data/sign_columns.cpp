#include "platoon/data/sign_columns.hpp"

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

}  // namespace platoon::data
