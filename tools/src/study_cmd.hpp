#pragma once
/// `platoon study STUDY.toml`: participants x blocks, each block a session run in lock-step (the batch's
/// runner, batch_cmd.hpp) into OUT/<participant>/<nn>_<block>/, practice first and the other blocks
/// counterbalanced (config/study.hpp); OUT/plan.csv before anything runs, OUT/study_log.csv one row per block
/// run. Between blocks the operator starts, repeats or aborts (keyboard or `platoon study ctl OUT ...`);
/// `--unattended` runs through. `platoon study collect OUT` merges every block's data write into one
/// long-format CSV and one summary row of drive metrics per participant x block x seat. docs/STUDIES.md.
#include "batch_cmd.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// Command-line settings of platoon study.
struct StudyOptions {
  std::string study_path;     ///< The study file (TOML).
  std::string out_dir;        ///< Output folder; overrides the study's out.
  std::string participant;    ///< --participant ID: only this participant ("": every one).
  std::string block;          ///< --block NAME: only this block.
  std::string from;           ///< --from NAME: this block and the ones after it in each participant's order.
  std::string repeat;         ///< --repeat NAME: this block again (its old folder kept, renamed).
  bool unattended = false;    ///< Run every block without waiting for the operator.
  bool show = false;          ///< Print the plan (plan.csv) and exit; nothing runs.
  std::string bin_dir;        ///< Where platoon is (default: this executable's folder).
  std::string collect_dir;    ///< `collect OUT`: the study folder to merge.
  std::string ctl_dir;        ///< `ctl OUT WORD...`: the study folder whose waiting study gets the word.
  std::vector<std::string> ctl_words;  ///< next | repeat | abort REASON...
  CLI::App* collect = nullptr;  ///< The collect subcommand (parsed() when given).
  CLI::App* ctl = nullptr;      ///< The ctl subcommand.
};

/// `platoon study ctl OUT WORD...` and `platoon ctl study OUT WORD...`: hands next, repeat or abort REASON to the
/// study waiting in OUT. Exit codes: 0 handed over, 1 the word could not be written, 2 OUT holds no study or the
/// word is none of those.
int SendStudyWord(const std::string& out_dir, const std::vector<std::string>& words);

/// Adds the `study` subcommand (with `collect` and `ctl`) to `app`.
CLI::App* AddStudyCommand(CLI::App& app, StudyOptions& options);

/// Runs `platoon study`. Exit codes: 0 every selected block ran ok (collect: written), 1 a block failed or the
/// operator aborted, 2 usage error (bad study file, unknown participant or block, a session the values break),
/// 130 interrupted.
int RunStudy(const StudyOptions& options, const SessionValidator& validate);

}  // namespace platoon::launcher
