#pragma once
/// `platoon batch PLAN.toml`: a base session run many times with incremental variants (cartesian product
/// or zip of listed values, times `repeat`) and seeded random variators (uniform, normal, choice), each
/// run in lock-step in its own folder (session file, log, SUMMARY lines, session log, result row), with
/// outputs computed from the run's session log by the export's metric code; results.csv gets one row per
/// run. Interrupted batches resume; `--list` prints one self-contained command per run (GNU parallel,
/// Slurm job arrays) and `--collect` merges their results. docs/EXPERIMENTS.md, "Batch runs".
#include "platoon/config/session.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace platoon::launcher {

/// Command-line settings of platoon batch.
struct BatchOptions {
  std::string plan_path;      ///< The plan (TOML).
  std::string out_dir;        ///< Output folder; overrides the plan's [batch] out.
  int run = 0;                ///< --run K: only run K (1-based); 0: every run.
  bool list = false;          ///< --list: print one command per run and exit.
  bool collect = false;       ///< --collect: merge the runs' result files into results.csv.
  bool show = false;          ///< --show: print each run's varied values and exit (nothing runs).
  int jobs = 0;               ///< Runs at a time on this PC; 0: the plan's [batch] jobs (default 1).
  int stop_after = 0;         ///< Stop after this many runs were run (0: never); the batch resumes later.
  bool force = false;         ///< Redo runs whose result is already there.
  std::string bin_dir;        ///< Where platoon is (default: this executable's folder).
  /// --port-base N: run K's server on 127.0.0.1 ports N + 4(K-1) .. N + 4(K-1) + 3 (control, time, world,
  /// state); 0: ports the OS chooses. Typical 20000.
  int port_base = 0;
};

/// Checks a session as `platoon check` and `platoon run` do; throws config::ConfigError.
using SessionValidator = std::function<void(const config::SessionDef&)>;

/// Adds the `batch` subcommand to `app`.
CLI::App* AddBatchCommand(CLI::App& app, BatchOptions& options);

/// One session run in lock-step in its own folder, as each batch run is (platoon study runs its blocks so):
/// the base session with `values` set, relative paths made absolute, driver seats headless, a recorder
/// writing DIR/session.mcap, the server on free 127.0.0.1 ports; `platoon run --lockstep` started in DIR, its
/// output in DIR/run.log, its SUMMARY lines in DIR/summary.jsonl. Data writes land under DIR.
struct LockstepRunDef {
  std::string session_file;  ///< The base session file.
  /// Session paths (node.<name>.<key>, event.<name>.<key...>, road.seed) and the values the run sets, with the
  /// place each value comes from ("study.toml:14: study.block[1].params.road.seed") for messages.
  struct Value {
    std::string path;
    std::variant<int64_t, double, bool, std::string> value;
    std::string where;
  };
  std::vector<Value> values;
  std::string dir;            ///< The run's folder (created; its contents replaced).
  std::string title;          ///< The first comment line of DIR/session.toml, e.g. "platoon study: P01 block urban".
  double duration_s = 60;     ///< Sim time of the run, in s.
  double timeout_s = 600;     ///< A run still going after this much wall time is stopped (status 124), in s.
  std::string bin_dir;        ///< Where platoon is ("": this executable's folder).
};

/// The run's session checked as platoon check does, before anything runs; throws std::runtime_error naming the
/// session and the places of the values.
void CheckLockstepRun(const LockstepRunDef& def, const SessionValidator& validate);

/// How a lock-step run ended.
struct LockstepRunResult {
  int status = -1;            ///< platoon run's exit status (124: timed out); -1: it never started.
  bool stopped = false;       ///< `stop` asked it to stop (SIGTERM) before it ended.
  std::string error;          ///< "" when it ran to the end with status 0, else what went wrong.
  double wall_s = 0;          ///< Wall time it ran, in s.
};

/// Runs `def` to its end; `stop` is asked about every 100 ms and true stops the run. Never throws.
LockstepRunResult RunLockstep(const LockstepRunDef& def, const SessionValidator& validate, const std::function<bool()>& stop);

/// Writes `text` to `path` through `path`.part and a rename, so a reader never sees half a file; throws
/// std::runtime_error naming the file when it cannot be written.
void WriteFileAtomic(const std::filesystem::path& path, const std::string& text);

/// Runs `platoon batch`. Exit codes: 0 done, 1 runs failed or still to do (rerun to resume; --collect:
/// result files missing), 2 usage error (bad plan, a variation the session loader refuses, bad option),
/// 130 interrupted.
int RunBatch(const BatchOptions& options, const SessionValidator& validate);

}  // namespace platoon::launcher
