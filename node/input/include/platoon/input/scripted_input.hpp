#pragma once
/// Scripted driver inputs (seed 004 §5.9 "Steering Wheel Plug-in", replayed from a file): a text
/// table of (time, steer, throttle, brake) rows for headless tests and repeatable experiments.
/// Format (docs/INPUTS.md): one row per line "time_s, steer, throttle, brake"; '#' starts a comment;
/// blank lines are skipped; an optional header line "time_s,steer,throttle,brake". Errors name
/// file:line and what was expected ("lane_change.csv:7: steer: expected a number in [-1, 1], got 1.5").

#include "platoon/vehicle/single_track.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::input {

/// A malformed input script; what() is the full message with file and line.
class ScriptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One row of a script: the driver input that holds at `time_s`.
struct ScriptRow {
  double time_s = 0;               ///< Script time of the row, in s; strictly increasing down the file.
  vehicle::VehicleInput input;     ///< Steer -1..1 (left positive), throttle 0..1, brake 0..1.
};

/// A loaded script; immutable, cheap to query. At() is pure.
class ScriptedInput {
 public:
  /// Reads and parses a file; throws ScriptError naming file:line (or the file when it cannot be read).
  static ScriptedInput Load(const std::string& path);
  /// Parses text; `source_name` stands in for the file name in messages. Throws ScriptError.
  static ScriptedInput Parse(const std::string& text, const std::string& source_name);

  /// Input at script time `t_s`, in s: linear interpolation between rows; the first row holds
  /// before it and the last row after it.
  vehicle::VehicleInput At(double t_s) const;
  /// Time of the last row, in s (after it the input holds).
  double EndS() const { return rows_.back().time_s; }
  /// The rows, in file order (at least one).
  const std::vector<ScriptRow>& Rows() const { return rows_; }
  /// The file name (or source name) the script came from.
  const std::string& Source() const { return source_; }

 private:
  ScriptedInput(std::vector<ScriptRow> rows, std::string source) : rows_(std::move(rows)), source_(std::move(source)) {}
  std::vector<ScriptRow> rows_;
  std::string source_;
};

}  // namespace platoon::input
