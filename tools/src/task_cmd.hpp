#pragma once
// `platoon task`: the standard tasks of driving studies (tools/src/task_cmd.cpp; the scoring is
// platoon/data/standard_tasks.hpp; docs/TASKS.md). `task score` scores a drive's CSV (the seat's data write or
// `platoon export --markers`) or, for the detection response task, a session log; `task events` prints the
// scenario events of a task (lane change signs, DRT stimuli) for a session file.
#include <CLI/CLI.hpp>

#include <limits>
#include <string>
#include <vector>

namespace platoon::launcher {

/// Options of `platoon task`.
struct TaskOptions {
  std::string action;                   ///< "score" or "events".
  std::string task;                     ///< "lct", "drt" or "car-following".
  std::string input;                    ///< score: the drive's CSV, or (drt) a session log (.mcap).
  std::string lead_csv;                 ///< score car-following: the lead vehicle's CSV.
  std::string out_path;                 ///< score: the score CSV; "" standard output.
  std::string trials_path;              ///< score drt: one row per stimulus to this CSV.
  std::vector<std::string> signs;       ///< lct: S:LANE pairs, e.g. 150:-1; empty: from the markers (score).
  double lane_width_m = 3.5;            ///< lct: lane width, in m.
  double onset_before_sign_m = 10.0;    ///< lct: the normative change starts this far before the sign, in m.
  double change_length_m = 20.0;        ///< lct: the normative change's length, in m.
  int start_lane = -2;                  ///< lct: lane before the first sign.
  double from = -std::numeric_limits<double>::infinity();  ///< Scored from (lct: s in m; others: sim time in s).
  double to = std::numeric_limits<double>::infinity();     ///< Scored to.
  std::string stimulus = "drt:stimulus";  ///< drt: marker text of a stimulus onset.
  std::vector<std::string> responses{"key:space"};  ///< drt: marker texts of a response.
  double frequency_hz = 0;              ///< car-following: the lead's speed frequency, in Hz.
  unsigned periods_per_segment = 2;     ///< car-following: whole periods per averaged segment.
  // events
  uint64_t seed = 1;                    ///< events: seed of the random draws.
  std::string driver = "participant";   ///< events: the driver node the task is for.
  double visible_m = 40.0;              ///< events lct: a sign shows this far before it, in m.
  unsigned sign_count = 18;             ///< events lct: signs when --signs is not given.
  double first_sign_m = 200.0;          ///< events lct: s of the first sign, in m.
  double spacing_m = 150.0;             ///< events lct: distance between signs, in m.
  double road_start_x_m = 0.0;          ///< events lct: world x of s = 0 on the straight road along +x.
  double stimulus_s = 1.0;              ///< events drt: how long the stimulus shows, in s.
  std::string stimulus_text = "  (O)  ";  ///< events drt: the seat message of a stimulus.
  double mean_speed_mps = 22.0;         ///< events car-following: the lead's mean speed, in m/s.
  double amplitude_mps = 2.0;           ///< events car-following: amplitude of the lead's speed sine, in m/s.
  double point_step_s = 0.5;            ///< events car-following: time between the speed profile's points, in s.
};

/// Adds the `task` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddTaskCommand(CLI::App& app, TaskOptions& options);
/// Runs it; exit code 0 done, 1 nothing to score (no rows, no stimuli), 2 usage (bad option, unreadable or
/// malformed input, a failed write).
int RunTask(const TaskOptions& options);

}  // namespace platoon::launcher
