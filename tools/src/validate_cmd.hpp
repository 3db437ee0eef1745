#pragma once
// `platoon validate`: compares a sensor's object list in a session log with the recorded ground truth
// (tools/src/validate_cmd.cpp; the comparison itself is platoon/validation/object_validation.hpp).
#include <CLI/CLI.hpp>

#include <string>

namespace platoon::launcher {

/// Options of `platoon validate`.
struct ValidateOptions {
  std::string log_path;                 ///< Session log (MCAP).
  std::string sensor_id;                ///< Stream id of the sensor to validate.
  std::string out_dir;                  ///< Where the CSVs and plots go ("" = validation_<sensor>).
  std::string bins = "0,10,20,40,80";   ///< Range-bin edges, m, comma-separated.
  double gate_m = 2.0;                  ///< Nearest-neighbour gate, m.
  double fov_half_deg = -1;             ///< Evaluated half-angle, deg (< 0: from the recorded sensor definition).
  std::string truth = "interpolate";    ///< "interpolate" or "dead_reckon".
  std::string match = "id";             ///< "id" (track ids, then nearest) or "nearest".
  bool no_plots = false;                ///< Skip the PNG plots.
};

/// Adds the `validate` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddValidateCommand(CLI::App& app, ValidateOptions& options);
/// Runs the validation. Exit code: 0 done, 1 nothing to compare, 2 usage.
int RunValidate(const ValidateOptions& options);

}  // namespace platoon::launcher
