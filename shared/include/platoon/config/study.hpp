#pragma once
/// A study file (STUDY.toml, `platoon study`): participants x blocks, each block a session file with its
/// condition's parameter overrides, practice blocks first, the other blocks counterbalanced per participant
/// (balanced Latin square after Williams 1949, seeded random orders, or the file's order). Read once, checked
/// with file:line and key like every config (table.hpp). Pure: the counterbalancing takes the study and a
/// participant's index, nothing else. docs/STUDIES.md.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace platoon::config {

/// A value a block sets in its session: what TOML scalars a session file holds.
using StudyValue = std::variant<int64_t, double, bool, std::string>;

/// The value as a CSV or a message writes it ("1.5", "true", "urban").
std::string StudyValueText(const StudyValue& value);

/// One condition parameter of a block: a session path (node.<name>.<key>, event.<name>.<key...>, road.seed)
/// and the value it takes in that block.
struct StudyParam {
  std::string path;   ///< Session path, e.g. "event.lead_brakes.do.0.decel_mps2".
  StudyValue value;   ///< The value.
  std::string where;  ///< "study.toml:14: study.block[1].params.<path>" for messages.
};

/// One block of a study: a session run once per participant.
struct StudyBlock {
  std::string name;                ///< Block name, [A-Za-z0-9_-], unique; the folder is <nn>_<name>.
  std::string session;             ///< The session file, absolute (relative to the study file as written).
  std::string condition;           ///< The condition's name as the logs and the long CSV write it ("" none).
  bool practice = false;           ///< Runs before the counterbalanced blocks, in file order.
  double duration_s = 60;          ///< Sim time of the block's drive, in s (lock-step). Typical 60..600.
  std::vector<StudyParam> params;  ///< Condition parameter overrides, in file order.
  std::string event_marker;        ///< A marker text: the summary's brake reaction time counts from its first occurrence ("" none).
  std::string where;               ///< "study.toml:12: study.block[0]".
};

/// How the blocks that are not practice are ordered per participant.
enum class StudyOrder {
  kLatin,   ///< Balanced Latin square (Williams design): participant k takes row k mod rows.
  kRandom,  ///< A seeded random permutation per participant (the study seed and the participant's index).
  kFixed,   ///< The file's order for everyone.
};

/// A study as its file defines it.
struct StudyDef {
  std::string file;                       ///< The study file as given.
  std::string name;                       ///< Study name (default: the file's stem).
  uint64_t seed = 1;                      ///< Seeds the random orders.
  std::string out;                        ///< Output folder as the file says it (default "studies/<name>"), relative to the working directory.
  std::vector<std::string> participants;  ///< Participant ids in file order (participants = 4: P01..P04).
  StudyOrder order = StudyOrder::kLatin;  ///< Counterbalancing of the blocks that are not practice.
  double timeout_s = 600;                 ///< A block still running after this much wall time is stopped and failed, in s.
  std::vector<StudyBlock> blocks;         ///< Blocks in file order.
};

/// Reads a study file; throws ConfigError "file:line: key: expected ..., got ..." (and for a missing session file).
StudyDef LoadStudy(const std::string& path);
/// Reads study text; `source_name` names it in messages and its folder is where relative session files are found.
StudyDef LoadStudyText(const std::string& text, const std::string& source_name);

/// The rows of a balanced Latin square of `n` >= 1 treatments (Williams design): every row a permutation of
/// 0..n-1 in which each treatment follows each other one equally often over all rows. n rows for even n (each
/// ordered pair adjacent once), 2n for odd n (the n rows and their mirror images: each pair adjacent twice).
std::vector<std::vector<int>> BalancedLatinSquare(int n);

/// The order participant `participant_index` (0-based, in study.participants) runs the blocks in: indices into
/// study.blocks, practice blocks first in file order, then the others as study.order counterbalances them.
std::vector<size_t> StudyBlockOrder(const StudyDef& study, size_t participant_index);

/// The folder of a block run at position `position` (1-based) of a participant's order: "03_urban".
std::string StudyBlockFolder(size_t position, const std::string& block_name);

}  // namespace platoon::config
