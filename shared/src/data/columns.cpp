#include "platoon/data/columns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <iterator>

namespace platoon::data {
namespace {

// Decimals: 1 us of time, 0.1 mm of position, 1e-6 rad of angle; enough that a file reproduces the
// 1 kHz state to well within what any analysis of it needs.
constexpr std::array<ColumnInfo, kColumnCount> kColumns = {{
    {Column::kSimTime, "sim_time", "sim_time_s", "s", "session sim time of the sample", 6},
    {Column::kX, "x", "x_m", "m", "world x (east) of the reference point, the rear-axle centre on the ground", 4},
    {Column::kY, "y", "y_m", "m", "world y (north) of the reference point", 4},
    {Column::kZ, "z", "z_m", "m", "world z (up) of the reference point", 4},
    {Column::kYaw, "yaw", "yaw_rad", "rad", "heading, counter-clockwise from +x, in [-pi, pi]", 6},
    {Column::kSpeed, "speed", "speed_mps", "m/s", "horizontal speed of the reference point", 4},
    {Column::kAccelLong, "accel_long", "accel_long_mps2", "m/s^2", "acceleration of the reference point along body x (forward +)", 4},
    {Column::kAccelLat, "accel_lat", "accel_lat_mps2", "m/s^2", "acceleration of the reference point along body y (left +)", 4},
    {Column::kYawRate, "yaw_rate", "yaw_rate_radps", "rad/s", "yaw rate, counter-clockwise +", 6},
    {Column::kSteer, "steer", "steer_norm", "1", "steering command, -1 (full right) .. 1 (full left)", 4},
    {Column::kThrottle, "throttle", "throttle_norm", "1", "throttle command, 0 .. 1", 4},
    {Column::kBrake, "brake", "brake_norm", "1", "brake command, 0 .. 1", 4},
    {Column::kRoadId, "road_id", "road_id", "-", "id of the nearest road; empty without a road", 0},
    {Column::kS, "s", "s_m", "m", "arc length of the foot point along the road's reference line", 4},
    {Column::kLane, "lane", "lane", "-", "signed lane index (-1 first lane right of the reference line, +1 first left; 0 off the carriageway)", 0},
    {Column::kLaneOffset, "lane_offset", "lane_offset_m", "m", "lateral offset from the lane centre, left of the lane's direction of travel +; empty off the carriageway", 4},
    {Column::kHeadway, "headway", "headway_m", "m", "bumper-to-bumper distance along the lane to the vehicle ahead in the same lane; empty when none within range", 3},
    {Column::kTimeHeadway, "time_headway", "time_headway_s", "s", "headway / own speed; empty without a leader or at standstill", 3},
    {Column::kTtc, "ttc", "ttc_s", "s", "headway / closing speed while closing on the leader; empty otherwise", 3},
    {Column::kNextSignType, "next_sign_type", "next_sign_type", "-", "class of the next sign ahead for the vehicle's direction (docs/WORLD.md \"Signs\": 0 speed_limit, 1 end_of_limit, ...); empty when none within range", 0},
    {Column::kNextSignValue, "next_sign_value", "next_sign_value", "-", "number on that sign: a speed in the sign country's unit (km/h, mph), a direction sign's km; 0 none", 0},
    {Column::kNextSignDistance, "next_sign_distance", "next_sign_distance_m", "m", "along-road distance from the reference point's foot point ahead to that sign", 2},
    {Column::kLastSignType, "last_sign_type", "last_sign_type", "-", "class of the last sign passed for the vehicle's direction; empty when none within range", 0},
    {Column::kLastSignValue, "last_sign_value", "last_sign_value", "-", "number on that sign", 0},
    {Column::kLastSignDistance, "last_sign_distance", "last_sign_distance_m", "m", "along-road distance back to that sign", 2},
}};

constexpr bool InColumnOrder() {
  for (size_t i = 0; i < kColumns.size(); ++i)
    if (static_cast<size_t>(kColumns[i].column) != i) return false;
  return true;
}
static_assert(InColumnOrder(), "kColumns must list every Column in enum order");

}  // namespace

std::span<const ColumnInfo> Columns() { return kColumns; }

const ColumnInfo& Info(Column c) {
  assert(c < Column::kCount);
  return kColumns[static_cast<size_t>(c)];
}

std::optional<Column> FindColumn(std::string_view name) {
  for (const auto& c : kColumns)
    if (c.name == name || c.header == name) return c.column;
  return std::nullopt;
}

std::string ColumnNameList() {
  std::string out;
  for (const auto& c : kColumns) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

std::vector<Column> AllColumns() {
  std::vector<Column> out;
  for (const auto& c : kColumns) out.push_back(c.column);
  return out;
}

std::string ColumnsFromVariables(std::span<const std::string> names, std::vector<Column>& out) {
  if (names.empty()) return "expected at least one variable (known: " + ColumnNameList() + ")";
  std::vector<Column> columns = {Column::kSimTime};
  for (const auto& name : names) {
    const auto c = FindColumn(name);
    if (!c) return "unknown variable \"" + name + "\" (known: " + ColumnNameList() + ")";
    if (*c == Column::kSimTime) continue;
    if (std::find(columns.begin(), columns.end(), *c) != columns.end()) return "\"" + name + "\" is listed twice";
    columns.push_back(*c);
  }
  out = std::move(columns);
  return "";
}

std::string CsvHeader(std::span<const Column> columns) {
  std::string out;
  for (const Column c : columns) out += (out.empty() ? "" : ",") + std::string(Info(c).header);
  return out;
}

void AppendCsvRow(const MetricsRow& row, std::span<const Column> columns, std::string& out) {
  auto it = std::back_inserter(out);
  bool first = true;
  for (const Column c : columns) {
    if (!first) out.push_back(',');
    first = false;
    const double v = row[c];
    if (!std::isfinite(v)) continue;  // empty field
    const int decimals = Info(c).decimals;
    if (decimals == 0) fmt::format_to(it, "{}", static_cast<int64_t>(std::llround(v)));
    else fmt::format_to(it, "{:.{}f}", v, decimals);
  }
  out.push_back('\n');
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace platoon::data
