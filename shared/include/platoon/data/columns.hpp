#pragma once
/// The columns of per-vehicle data (seed 004 §5.6 "data write"): one table of names, units and
/// descriptions, one row of numbers and one CSV formatter. The driver seat's live data write and a
/// later export of a recording use this same table, so their files have the same columns.
/// docs/RECORDING.md, "Data write (per-driver CSV)", lists the table with the equations.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::data {

/// One column of per-vehicle data. The order is the default column order of a file.
enum class Column : uint8_t {
  kSimTime,      ///< Session sim time of the sample, s.
  kX,            ///< World x of the reference point (rear-axle centre), m.
  kY,            ///< World y of the reference point, m.
  kZ,            ///< World z of the reference point, m.
  kYaw,          ///< Heading, counter-clockwise from +x, rad in [-pi, pi].
  kSpeed,        ///< Horizontal speed of the reference point, m/s.
  kAccelLong,    ///< Acceleration of the reference point along body x (forward +), m/s^2.
  kAccelLat,     ///< Acceleration of the reference point along body y (left +), m/s^2.
  kYawRate,      ///< Yaw rate (counter-clockwise +), rad/s.
  kSteer,        ///< Normalised steering command, -1 (right) .. 1 (left).
  kThrottle,     ///< Normalised throttle command, 0 .. 1.
  kBrake,        ///< Normalised brake command, 0 .. 1.
  kRoadId,       ///< Id of the nearest road.
  kS,            ///< Arc length of the foot point along that road's reference line, m.
  kLane,         ///< Signed lane index as the road numbers it (-1 first right of the reference line; 0 off the carriageway).
  kLaneOffset,   ///< Lateral offset from the lane centre, left of the lane's direction of travel positive, m.
  kHeadway,      ///< Bumper-to-bumper distance to the vehicle ahead in the same lane, m.
  kTimeHeadway,  ///< Headway / own speed, s.
  kTtc,          ///< Time to collision: headway / closing speed while closing, s.
  kNextSignType,      ///< Class of the next sign ahead for the vehicle's direction (road::SignType number).
  kNextSignValue,     ///< Its number (speed in the country's unit, km for direction signs; 0 none).
  kNextSignDistance,  ///< Along-road distance to it, m.
  kLastSignType,      ///< Class of the last sign passed (road::SignType number).
  kLastSignValue,     ///< Its number.
  kLastSignDistance,  ///< Along-road distance back to it, m.
  kCount
};

/// Number of columns.
inline constexpr size_t kColumnCount = static_cast<size_t>(Column::kCount);

/// What a column is.
struct ColumnInfo {
  Column column;
  std::string_view name;         ///< Config name (`variables`), e.g. "speed".
  std::string_view header;       ///< CSV header with the unit, e.g. "speed_mps".
  std::string_view unit;         ///< Unit for documentation, e.g. "m/s"; "1" for normalised, "-" for ids.
  std::string_view description;  ///< One line.
  int decimals;                  ///< Decimals written; 0: an integer column.
};

/// Every column, in Column order.
std::span<const ColumnInfo> Columns();
/// The row of the table for `c`.
const ColumnInfo& Info(Column c);
/// The column with this config name or CSV header ("speed" or "speed_mps"); nullopt when none.
std::optional<Column> FindColumn(std::string_view name);
/// Every config name, comma separated, for error messages: "sim_time, x, y, ...".
std::string ColumnNameList();
/// Every column in table order (sim_time first): the columns when no `variables` are given.
std::vector<Column> AllColumns();
/// The file columns of a `variables` list (`[node.data_write] variables`, `platoon export --variables`):
/// sim_time first whether listed or not, then the listed columns in their order, names or headers.
/// Returns "" and fills `out`, or the reason: an empty list ("expected at least one variable"), an
/// unknown name ("unknown variable \"gear\" (known: sim_time, x, ...)"), a column listed twice.
std::string ColumnsFromVariables(std::span<const std::string> names, std::vector<Column>& out);

/// One sample of every column. NaN is an empty field (no leader, off the road, ...).
struct MetricsRow {
  std::array<double, kColumnCount> value;  ///< Indexed by Column.
  MetricsRow() { value.fill(std::nan("")); }
  double& operator[](Column c) { return value[static_cast<size_t>(c)]; }
  double operator[](Column c) const { return value[static_cast<size_t>(c)]; }
};

/// The CSV header line of `columns` (no newline), e.g. "sim_time_s,x_m,y_m".
std::string CsvHeader(std::span<const Column> columns);
/// Appends one CSV line of `row`'s `columns` and a newline to `out`. NaN and infinities give empty
/// fields; integer columns are written without decimals. Allocates only when `out` must grow.
void AppendCsvRow(const MetricsRow& row, std::span<const Column> columns, std::string& out);
/// `text` as one CSV field: as it is, or quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& text);
/// One CSV line (without its newline) split into fields, the reverse of CsvField: a quoted field may hold
/// commas, doubled quotes stand for one; a carriage return outside quotes is dropped. "" gives one empty field.
std::vector<std::string> SplitCsvLine(const std::string& line);

}  // namespace platoon::data
