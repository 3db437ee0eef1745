// `platoon study STUDY.toml` (issue 43 item 1): participants x blocks, each block one lock-step session
// run by the batch's runner (RunLockstep) into OUT/<participant>/<nn>_<block>/, in the counterbalanced order
// of config::StudyBlockOrder; the operator's flow between blocks; `collect` merges the blocks' data writes.
// docs/STUDIES.md.
#include "study_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/study.hpp"
#include "platoon/config/table.hpp"
#include "platoon/data/columns.hpp"
#include "platoon/data/drive_metrics.hpp"
#include "platoon/process/child.hpp"
#include "platoon/server/replay.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace platoon::launcher {
namespace {

namespace fs = std::filesystem;
constexpr const char* kMe = "platoon study";
constexpr int kExitUsage = config::cli::kExitUsage;
constexpr const char* kControlFile = "operator.cmd";  // OUT/operator.cmd: `platoon study ctl` writes one line
constexpr const char* kPlanHeader = "participant,order,block,condition,practice,duration_s,event_marker,folder";
constexpr const char* kLogHeader = "participant,block,condition,order,folder,start_utc,end_utc,wall_s,sim_s,status,reason";

std::atomic<int> g_study_signal{0};
void OnStudySignal(int sig) { g_study_signal.store(sig); }

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}


std::string Join(const std::vector<std::string>& fields) {
  std::string s;
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? "," : "") + data::CsvField(fields[i]);
  return s;
}

// ---------------------------------------------------------------------------------------------------
// The plan: every participant's blocks in order.

struct PlannedBlock {
  std::string participant;
  size_t position = 0;  // 1-based position in the participant's order
  const config::StudyBlock* block = nullptr;
  std::string folder;   // "<participant>/<nn>_<block>"
};

std::vector<PlannedBlock> MakePlan(const config::StudyDef& study) {
  std::vector<PlannedBlock> plan;
  for (size_t p = 0; p < study.participants.size(); ++p) {
    const auto order = config::StudyBlockOrder(study, p);
    for (size_t k = 0; k < order.size(); ++k) {
      const auto& b = study.blocks[order[k]];
      plan.push_back({study.participants[p], k + 1, &b, study.participants[p] + "/" + config::StudyBlockFolder(k + 1, b.name)});
    }
  }
  return plan;
}

std::string PlanCsv(const std::vector<PlannedBlock>& plan) {
  std::string text = std::string(kPlanHeader) + "\n";
  for (const auto& b : plan)
    text += Join({b.participant, std::to_string(b.position), b.block->name, b.block->condition, b.block->practice ? "true" : "false",
                  fmt::format("{}", b.block->duration_s), b.block->event_marker, b.folder}) + "\n";
  return text;
}

LockstepRunDef RunDefOf(const config::StudyDef& study, const PlannedBlock& b, const fs::path& out, const std::string& bin_dir) {
  LockstepRunDef def;
  def.session_file = b.block->session;
  for (const auto& p : b.block->params) def.values.push_back({p.path, p.value, p.where});
  def.dir = (out / b.folder).string();
  def.title = fmt::format("platoon study {}: participant {}, block {} ({} of the order), condition \"{}\"", study.name,
                          b.participant, b.block->name, b.position, b.block->condition);
  def.duration_s = b.block->duration_s;
  def.timeout_s = study.timeout_s;
  def.bin_dir = bin_dir;
  return def;
}

// A block folder that ran to its end holds this file.
constexpr const char* kDoneFile = "block.ok";

bool BlockDone(const fs::path& dir) { return fs::exists(dir / kDoneFile); }

// Renames a block's folder out of the way ("02_urban" -> "02_urban-old1", the first free number); returns the new name.
std::string KeepOldFolder(const fs::path& dir) {
  for (int k = 1;; ++k) {
    const fs::path old = dir.string() + "-old" + std::to_string(k);
    if (!fs::exists(old)) {
      fs::rename(dir, old);
      return old.filename().string();
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// The operator: lines from the keyboard (stdin) and from `platoon study ctl OUT ...` (OUT/operator.cmd).

class OperatorInput {
 public:
  explicit OperatorInput(fs::path control) : control_(std::move(control)) {}
  /// The next line within `timeout_ms`, if one came.
  std::optional<std::string> Poll(int timeout_ms) {
    if (auto l = Pop()) return l;
    if (stdin_open_) {
      pollfd fd{STDIN_FILENO, POLLIN, 0};
      if (poll(&fd, 1, timeout_ms) > 0) {
        char buf[512];
        const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) stdin_open_ = false;  // end of input: the control file only
        else buffer_.append(buf, static_cast<size_t>(n));
      }
    } else {
      poll(nullptr, 0, timeout_ms);
    }
    if (std::error_code ec; fs::exists(control_, ec)) {
      buffer_ += ReadAll(control_);
      if (buffer_.empty() || buffer_.back() != '\n') buffer_ += '\n';
      fs::remove(control_, ec);
    }
    return Pop();
  }
  bool StdinOpen() const { return stdin_open_; }

 private:
  std::optional<std::string> Pop() {
    const auto nl = buffer_.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    while (!line.empty() && line.front() == ' ') line.erase(0, 1);
    return line;
  }
  fs::path control_;
  std::string buffer_;
  bool stdin_open_ = true;
};

// What the operator said: start, repeat the last block, abort with a reason, or something else.
struct OperatorWord {
  enum Kind { kStart, kRepeat, kAbort, kUnknown } kind = kUnknown;
  std::string reason;
};

OperatorWord ParseWord(const std::string& line) {
  OperatorWord w;
  const std::string head = line.substr(0, line.find(' '));
  const std::string rest = line.size() > head.size() ? line.substr(head.size() + 1) : "";
  if (line.empty() || head == "next" || head == "n") w.kind = OperatorWord::kStart;
  else if (head == "r" || head == "repeat") w.kind = OperatorWord::kRepeat;
  else if (head == "a" || head == "abort") {
    w.kind = OperatorWord::kAbort;
    w.reason = rest.empty() ? "aborted by the operator" : rest;
  }
  return w;
}

// ---------------------------------------------------------------------------------------------------
// collect: the blocks' data writes as one long CSV and the drive metrics per block and seat.

struct PlanRow {
  std::string participant, order, block, condition, event_marker, folder;
};

std::vector<PlanRow> ReadPlanCsv(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path.string() + ": cannot be read (is this a study's output folder? platoon study writes it first)");
  std::string line;
  std::getline(in, line);
  if (line != kPlanHeader) throw UsageError(fmt::format("{}:1: expected the header \"{}\", got \"{}\"", path.string(), kPlanHeader, line));
  std::vector<PlanRow> rows;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = data::SplitCsvLine(line);
    if (f.size() != 8) throw UsageError(fmt::format("{}:{}: expected 8 fields, got {}", path.string(), n, f.size()));
    rows.push_back({f[0], f[1], f[2], f[3], f[6], f[7]});
  }
  return rows;
}

// The last status study_log.csv gives each participant/block ("" when it never ran).
std::map<std::pair<std::string, std::string>, std::string> LastStatus(const fs::path& path) {
  std::map<std::pair<std::string, std::string>, std::string> status;
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return status;
  while (std::getline(in, line)) {
    const auto f = data::SplitCsvLine(line);
    if (f.size() == 11) status[{f[0], f[1]}] = f[9];
  }
  return status;
}

// A data-write CSV of a block: its header fields and rows of fields.
struct DataFile {
  std::string path;  // relative to the block folder
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::vector<DataFile> ReadBlockData(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file() && it->path().extension() == ".csv") files.push_back(it->path());
    }
  std::sort(files.begin(), files.end());
  std::vector<DataFile> out;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    if (!std::getline(in, line)) continue;
    DataFile d;
    d.path = fs::relative(f, dir).string();
    d.header = data::SplitCsvLine(line);
    if (std::find(d.header.begin(), d.header.end(), "sim_time_s") == d.header.end()) continue;  // not a data write
    while (std::getline(in, line))
      if (!line.empty()) d.rows.push_back(data::SplitCsvLine(line));
    out.push_back(std::move(d));
  }
  return out;
}

// The block log's markers (sim ns, text), in time order; empty without a log.
std::vector<std::pair<int64_t, std::string>> LogMarkers(const fs::path& log_path) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (!fs::exists(log_path)) return out;
  const auto log = server::LoadReplayLog(log_path.string());
  for (const auto& m : log.markers) out.emplace_back(m.sim_ns, m.text);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

int RunCollect(const StudyOptions& o) {
  const fs::path out = fs::absolute(o.collect_dir).lexically_normal();
  std::vector<PlanRow> plan;
  try {
    plan = ReadPlanCsv(out / "plan.csv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s collect: %s\n", kMe, e.what());
    return kExitUsage;
  }
  const auto status = LastStatus(out / "study_log.csv");

  // Pass 1: every block's data files; the union of their columns (first seen first, marker last).
  struct Block {
    const PlanRow* plan;
    std::vector<DataFile> files;
    std::vector<std::pair<int64_t, std::string>> log_markers;
  };
  std::vector<Block> blocks;
  std::vector<std::string> columns;
  size_t missing = 0;
  for (const auto& p : plan) {
    Block b{&p, ReadBlockData(out / p.folder), {}};
    if (b.files.empty()) ++missing;
    bool have_marker_column = true;
    for (const auto& f : b.files) {
      for (const auto& h : f.header)
        if (h != "marker" && std::find(columns.begin(), columns.end(), h) == columns.end()) columns.push_back(h);
      if (std::find(f.header.begin(), f.header.end(), "marker") == f.header.end()) have_marker_column = false;
    }
    // No marker column in the data write: the block log's markers are joined by sim time.
    if (!b.files.empty() && !have_marker_column) b.log_markers = LogMarkers(out / p.folder / "session.mcap");
    blocks.push_back(std::move(b));
  }

  // Pass 2: the long CSV, and the drive metrics of each data file.
  std::string long_csv = "participant,block,condition,order";
  for (const auto& c : columns) long_csv += "," + data::CsvField(c);
  long_csv += ",marker\n";
  std::map<std::string, std::string> per_participant;  // participant -> its rows of the long CSV
  std::string summary = "participant,block,condition,order,status,name,file,event_marker,event_s," + data::DriveMetricsCsvHeader() + "\n";
  size_t rows_total = 0, markers_total = 0;
  for (const auto& b : blocks) {
    const std::string st = [&] {
      auto it = status.find({b.plan->participant, b.plan->block});
      return it == status.end() ? std::string("not run") : it->second;
    }();
    const std::string prefix = Join({b.plan->participant, b.plan->block, b.plan->condition, b.plan->order});
    if (b.files.empty()) {
      summary += prefix + "," + data::CsvField(st) + ",,," + data::CsvField(b.plan->event_marker) + ",," +
                 data::DriveMetricsCsvRow(data::DriveMetrics{}) + "\n";
      continue;
    }
    for (const auto& f : b.files) {
      // Where each long column is in this file.
      std::vector<int> at(columns.size(), -1);
      int time_at = -1, marker_at = -1, name_at = -1;
      for (size_t i = 0; i < f.header.size(); ++i) {
        for (size_t c = 0; c < columns.size(); ++c)
          if (columns[c] == f.header[i]) at[c] = static_cast<int>(i);
        if (f.header[i] == "sim_time_s") time_at = static_cast<int>(i);
        if (f.header[i] == "marker") marker_at = static_cast<int>(i);
        if (f.header[i] == "name") name_at = static_cast<int>(i);
      }
      std::vector<std::optional<data::Column>> metric_col(f.header.size());
      for (size_t i = 0; i < f.header.size(); ++i) metric_col[i] = data::FindColumn(f.header[i]);
      // Rows' sim times (ns) and their markers: the file's column, or the log's markers in (previous row, row],
      // those before the first row on the first row and those after the last on the last.
      const size_t n = f.rows.size();
      std::vector<int64_t> t_ns(n, 0);
      for (size_t r = 0; r < n; ++r)
        if (time_at >= 0 && static_cast<size_t>(time_at) < f.rows[r].size())
          t_ns[r] = std::llround(std::strtod(f.rows[r][static_cast<size_t>(time_at)].c_str(), nullptr) * 1e9);
      std::vector<std::string> marker(n);
      if (marker_at >= 0) {
        for (size_t r = 0; r < n; ++r)
          if (static_cast<size_t>(marker_at) < f.rows[r].size()) marker[r] = f.rows[r][static_cast<size_t>(marker_at)];
      } else if (n > 0) {
        size_t r = 0;
        for (const auto& [ns, text] : b.log_markers) {
          while (r + 1 < n && t_ns[r] < ns) ++r;
          marker[r] += (marker[r].empty() ? "" : " | ") + text;
        }
      }
      // The metrics, from the event marker's first row when the block names one.
      data::DriveMetricsDef def;
      std::string event_s;
      if (!b.plan->event_marker.empty())
        for (size_t r = 0; r < n; ++r) {
          bool hit = false;
          for (size_t pos = 0; pos <= marker[r].size();) {
            const size_t end = std::min(marker[r].find(" | ", pos), marker[r].size());
            if (marker[r].substr(pos, end - pos) == b.plan->event_marker) hit = true;
            pos = end + 3;
          }
          if (hit) {
            def.event_s = static_cast<double>(t_ns[r]) * 1e-9;
            event_s = fmt::format("{:.3f}", def.event_s);
            break;
          }
        }
      data::DriveMetricsAccumulator acc(def);
      for (size_t r = 0; r < n; ++r) {
        const auto& row = f.rows[r];
        std::string line = prefix;
        for (size_t c = 0; c < columns.size(); ++c)
          line += "," + (at[c] >= 0 && static_cast<size_t>(at[c]) < row.size() ? data::CsvField(row[static_cast<size_t>(at[c])]) : std::string());
        line += "," + data::CsvField(marker[r]) + "\n";
        long_csv += line;
        per_participant[b.plan->participant] += line;
        if (!marker[r].empty()) markers_total += 1 + static_cast<size_t>(std::count(marker[r].begin(), marker[r].end(), '|'));
        data::MetricsRow m;
        for (size_t i = 0; i < row.size() && i < metric_col.size(); ++i)
          if (metric_col[i] && !row[i].empty()) m[*metric_col[i]] = std::strtod(row[i].c_str(), nullptr);
        acc.Add(m);
      }
      rows_total += n;
      const std::string name = name_at >= 0 && n > 0 && static_cast<size_t>(name_at) < f.rows[0].size() ? f.rows[0][static_cast<size_t>(name_at)] : "";
      summary += prefix + "," + Join({st, name, f.path, b.plan->event_marker, event_s}) + "," + data::DriveMetricsCsvRow(acc.Result()) + "\n";
    }
  }
  try {
    WriteFileAtomic(out / "study_long.csv", long_csv);
    WriteFileAtomic(out / "summary.csv", summary);
    // One CSV per participant: that participant's rows of the long CSV, in its block order.
    const std::string header = long_csv.substr(0, long_csv.find('\n') + 1);
    for (const auto& [participant, rows] : per_participant)
      WriteFileAtomic(out / participant / (participant + ".csv"), header + rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s collect: %s\n", kMe, e.what());
    return 1;
  }
  std::printf("%s collect: %zu blocks (%zu without data), %zu rows, %zu markers -> %s, %s, <participant>/<participant>.csv\n",
              kMe, plan.size(), missing, rows_total, markers_total, (out / "study_long.csv").c_str(), (out / "summary.csv").c_str());
  return missing == 0 ? 0 : 1;
}

}  // namespace

int SendStudyWord(const std::string& out_dir, const std::vector<std::string>& words) {
  const fs::path out = fs::absolute(out_dir);
  if (!fs::exists(out / "plan.csv")) {
    std::fprintf(stderr, "%s ctl: %s holds no study (no plan.csv)\n", kMe, out.c_str());
    return kExitUsage;
  }
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
  const auto word = ParseWord(line);
  if (word.kind == OperatorWord::kUnknown || line.find('\n') != std::string::npos) {
    std::fprintf(stderr, "%s ctl: expected next, repeat or abort REASON, got \"%s\"\n", kMe, line.c_str());
    return kExitUsage;
  }
  try {
    WriteFileAtomic(out / kControlFile, (word.kind == OperatorWord::kStart ? std::string("next") : line) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s ctl: %s\n", kMe, e.what());
    return 1;
  }
  std::printf("%s ctl: \"%s\" sent to the study in %s\n", kMe, line.c_str(), out.c_str());
  return 0;
}

CLI::App* AddStudyCommand(CLI::App& app, StudyOptions& o) {
  auto* cmd = app.add_subcommand(
      "study",
      "Run a study: participants x blocks, each block a session (with its condition's parameters) run in lock-step "
      "into OUT/<participant>/<nn>_<block>/, practice blocks first and the others counterbalanced (balanced Latin "
      "square, seeded random or fixed order). OUT/plan.csv is written before anything runs, OUT/study_log.csv gets "
      "one row per block run. Without --unattended the study waits before each block: Enter (or `platoon study ctl "
      "OUT next`) starts it, `r` repeats the last block, `a REASON` aborts (the reason goes into study_log.csv); "
      "`a REASON` while a block runs stops it.\n\n"
      "  platoon study examples/study/braking_study.toml --unattended   every participant and block, no pauses\n"
      "  platoon study braking_study.toml --participant P02              one participant, the operator starts each block\n"
      "  platoon study braking_study.toml --participant P02 --repeat short_gap   that block again (old folder kept as -old1)\n"
      "  platoon study braking_study.toml --participant P02 --from short_gap     from that block on in P02's order\n"
      "  platoon study braking_study.toml --show                         the counterbalanced plan; nothing runs\n"
      "  platoon study ctl studies/braking next                          start the next block of a waiting study\n"
      "  platoon study collect studies/braking                           study_long.csv and summary.csv\n\n"
      "Exit codes: 0 done, 1 a block failed or was aborted, 2 usage error (bad study file, unknown participant or "
      "block, a session the block's parameters break), 130 interrupted. docs/STUDIES.md.");
  cmd->add_option("study", o.study_path, "Study file (TOML)");
  cmd->add_option("--out", o.out_dir, "Output folder (default: the study's out, else studies/<name>)");
  cmd->add_option("--participant", o.participant, "Only this participant (an id of the study's participants)");
  auto* block = cmd->add_option("--block", o.block, "Only this block (of each selected participant)");
  auto* from = cmd->add_option("--from", o.from, "This block and the ones after it in each participant's order (done ones run again, their old folders kept)");
  auto* repeat = cmd->add_option("--repeat", o.repeat, "This block again; its old folder is kept, renamed <folder>-old1 (-old2, ...)");
  block->excludes(from)->excludes(repeat);
  from->excludes(repeat);
  cmd->add_flag("--unattended", o.unattended, "Run every block without waiting for the operator");
  cmd->add_flag("--show", o.show, "Print the plan (participant, order, block, condition, folder) as CSV and exit");
  cmd->add_option("--bin-dir", o.bin_dir, "Where platoon is (default: next to this executable)");
  o.collect = cmd->add_subcommand("collect", "Merge a study's block data writes: OUT/study_long.csv (participant, block, condition, order, "
                                             "the data-write columns, marker), OUT/<participant>/<participant>.csv (one participant's rows) "
                                             "and OUT/summary.csv (drive metrics per participant x block x seat)");
  o.collect->add_option("out", o.collect_dir, "The study's output folder")->required();
  o.ctl = cmd->add_subcommand("ctl", "Tell a study waiting in OUT what to do: next (start the next block), repeat (the last block "
                                     "again), abort REASON");
  o.ctl->add_option("out", o.ctl_dir, "The study's output folder")->required();
  o.ctl->add_option("word", o.ctl_words, "next | repeat | abort REASON...")->required();
  return cmd;
}

int RunStudy(const StudyOptions& o, const SessionValidator& validate) {
  if (o.collect && o.collect->parsed()) return RunCollect(o);
  if (o.ctl && o.ctl->parsed()) return SendStudyWord(o.ctl_dir, o.ctl_words);
  if (o.study_path.empty()) {
    std::fprintf(stderr, "%s: expected a study file (platoon study STUDY.toml), or collect OUT, or ctl OUT WORD\n", kMe);
    return kExitUsage;
  }
  // 1. The study, its plan and every block's session checked before anything runs.
  config::StudyDef study;
  std::vector<PlannedBlock> plan;
  std::vector<const PlannedBlock*> queue;
  fs::path out;
  const std::string bin_dir = o.bin_dir.empty() ? process::ExecutableDir() : o.bin_dir;
  try {
    if (!fs::is_regular_file(o.study_path)) throw UsageError(o.study_path + ": no such study file");
    study = config::LoadStudy(o.study_path);
    plan = MakePlan(study);
    out = fs::absolute(o.out_dir.empty() ? study.out : o.out_dir).lexically_normal();
    std::string ids, names;
    for (const auto& p : study.participants) ids += (ids.empty() ? "" : ", ") + p;
    for (const auto& b : study.blocks) names += (names.empty() ? "" : ", ") + b.name;
    if (!o.participant.empty() && std::find(study.participants.begin(), study.participants.end(), o.participant) == study.participants.end())
      throw UsageError(fmt::format("--participant {}: not a participant of {} (its participants: {})", o.participant, o.study_path, ids));
    for (const auto* name : {&o.block, &o.from, &o.repeat})
      if (!name->empty() && std::none_of(study.blocks.begin(), study.blocks.end(), [&](const auto& b) { return b.name == *name; }))
        throw UsageError(fmt::format("\"{}\": not a block of {} (its blocks: {})", *name, o.study_path, names));
    for (const auto& b : study.blocks) {
      // Checked once per block, as the first participant's run of it (the session does not depend on who drives).
      const auto probe = std::find_if(plan.begin(), plan.end(), [&](const PlannedBlock& x) { return x.block == &b; });
      try {
        CheckLockstepRun(RunDefOf(study, *probe, out, bin_dir), validate);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("{}: block {} (session {}): {}", b.where, b.name, b.session, e.what()));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return kExitUsage;
  }
  const std::string plan_csv = PlanCsv(plan);
  if (o.show) {
    std::printf("%s", plan_csv.c_str());
    return 0;
  }

  // 2. The output folder: the study file's copy (a folder of another study is refused) and plan.csv.
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    std::fprintf(stderr, "%s: cannot create the output folder %s\n", kMe, out.c_str());
    return kExitUsage;
  }
  const std::string study_text = ReadAll(o.study_path);
  if (fs::exists(out / "study.toml") && ReadAll(out / "study.toml") != study_text) {
    std::fprintf(stderr, "%s: %s holds another study (its study.toml differs from %s); give another --out or remove that folder\n",
                 kMe, out.c_str(), o.study_path.c_str());
    return kExitUsage;
  }
  fs::remove(out / kControlFile, ec);  // a word left from an earlier study run is not for this one
  WriteFileAtomic(out / "study.toml", study_text);
  WriteFileAtomic(out / "plan.csv", plan_csv);
  std::printf("%s: plan of %zu participant(s) x %zu block(s) in %s\n", kMe, study.participants.size(), study.blocks.size(),
              (out / "plan.csv").c_str());

  // 3. The blocks to run.
  for (const auto& b : plan) {
    if (!o.participant.empty() && b.participant != o.participant) continue;
    const bool done = BlockDone(out / b.folder);
    if (!o.block.empty()) {
      if (b.block->name != o.block) continue;
      if (done) {
        std::fprintf(stderr, "%s: %s already ran to its end in %s; --repeat %s runs it again (the old folder kept)\n", kMe,
                     b.block->name.c_str(), (out / b.folder).c_str(), b.block->name.c_str());
        return kExitUsage;
      }
    } else if (!o.repeat.empty()) {
      if (b.block->name != o.repeat) continue;
    } else if (!o.from.empty()) {
      const auto& mine = plan;
      const auto start = std::find_if(mine.begin(), mine.end(), [&](const PlannedBlock& x) {
        return x.participant == b.participant && x.block->name == o.from;
      });
      if (b.position < start->position) continue;
    } else if (done) {
      std::printf("%s: %s %s already done (%s); skipped\n", kMe, b.participant.c_str(), b.block->name.c_str(), b.folder.c_str());
      continue;
    }
    queue.push_back(&b);
  }
  if (queue.empty()) {
    std::printf("%s: nothing to run\n", kMe);
    return 0;
  }

  // 4. The runs, one block after the other.
  std::signal(SIGINT, OnStudySignal);
  std::signal(SIGTERM, OnStudySignal);
  std::signal(SIGPIPE, SIG_IGN);
  OperatorInput input(out / kControlFile);
  const fs::path log_path = out / "study_log.csv";
  if (!fs::exists(log_path)) WriteFileAtomic(log_path, std::string(kLogHeader) + "\n");
  auto log_row = [&](const PlannedBlock& b, const std::string& start, const std::string& end, double wall_s, const std::string& sim_s,
                     const std::string& status, const std::string& reason) {
    std::ofstream log(log_path, std::ios::app);
    log << Join({b.participant, b.block->name, b.block->condition, std::to_string(b.position), b.folder, start, end,
                 fmt::format("{:.3f}", wall_s), sim_s, status, reason})
        << "\n";
  };
  std::deque<const PlannedBlock*> todo(queue.begin(), queue.end());
  const PlannedBlock* last = nullptr;
  size_t ran = 0, failed = 0;
  double wall_total = 0, sim_total = 0;
  const size_t total = todo.size();
  int exit_code = 0;
  while (!todo.empty()) {
    const PlannedBlock& b = *todo.front();
    const size_t of = std::count_if(plan.begin(), plan.end(), [&](const PlannedBlock& x) { return x.participant == b.participant; });
    const std::string what = fmt::format("{} block {}/{} \"{}\"{}", b.participant, b.position, of, b.block->name,
                                         b.block->condition.empty() ? "" : " (condition " + b.block->condition + ")");
    // The operator starts it, repeats the last block, or aborts.
    if (!o.unattended) {
      std::printf("%s: next: %s -> %s\n  Enter (or `platoon study ctl %s next`) starts it%s; a REASON aborts the study\n", kMe,
                  what.c_str(), b.folder.c_str(), out.c_str(), last ? "; r repeats the last block" : "");
      std::fflush(stdout);
      std::optional<OperatorWord> word;
      while (!word && !g_study_signal.load()) {
        if (auto line = input.Poll(200)) {
          word = ParseWord(*line);
          if (word->kind == OperatorWord::kUnknown || (word->kind == OperatorWord::kRepeat && !last)) {
            std::printf("%s: \"%s\": expected Enter (start), %sa REASON (abort)\n", kMe, line->c_str(), last ? "r (repeat), " : "");
            std::fflush(stdout);
            word.reset();
          }
        }
      }
      if (g_study_signal.load()) break;
      if (word->kind == OperatorWord::kAbort) {
        const std::string now = UtcNow();
        log_row(b, now, now, 0, "", "aborted", word->reason);
        std::printf("%s: aborted before %s: %s\n", kMe, what.c_str(), word->reason.c_str());
        exit_code = 1;
        break;
      }
      if (word->kind == OperatorWord::kRepeat) {
        todo.push_front(last);
        continue;
      }
    }
    todo.pop_front();
    last = &b;
    // The block's folder: an old one is kept under another name.
    if (fs::exists(out / b.folder)) {
      const std::string kept = KeepOldFolder(out / b.folder);
      std::printf("%s: the earlier %s kept as %s\n", kMe, b.folder.c_str(), kept.c_str());
    }
    std::printf("%s: %s running (%.0f s of sim time)\n", kMe, what.c_str(), b.block->duration_s);
    std::fflush(stdout);
    const std::string start = UtcNow();
    std::string abort_reason;
    const auto result = RunLockstep(RunDefOf(study, b, out, bin_dir), validate, [&] {
      if (g_study_signal.load()) {
        abort_reason = g_study_signal.load() == SIGINT ? "interrupted (Ctrl-C)" : "interrupted (SIGTERM)";
        return true;
      }
      if (auto line = input.Poll(0)) {
        const auto word = ParseWord(*line);
        if (word.kind == OperatorWord::kAbort) {
          abort_reason = word.reason;
          return true;
        }
        std::printf("%s: \"%s\" ignored while a block runs (a REASON stops it)\n", kMe, line->c_str());
        std::fflush(stdout);
      }
      return false;
    });
    const std::string end = UtcNow();
    ++ran;
    wall_total += result.wall_s;
    std::string status = "ok";
    if (result.stopped) status = "aborted";
    else if (!result.error.empty()) status = "failed";
    std::string reason = result.stopped ? abort_reason : result.error;
    // Ctrl-C on the terminal reaches platoon run too: a block that ended under it was interrupted, not failed.
    if (status == "failed" && g_study_signal.load()) {
      status = "aborted";
      reason = g_study_signal.load() == SIGINT ? "interrupted (Ctrl-C)" : "interrupted (SIGTERM)";
    }
    if (status == "ok") {
      sim_total += b.block->duration_s;
      WriteFileAtomic(out / b.folder / kDoneFile, fmt::format("{}\n", b.block->duration_s));
    }
    log_row(b, start, end, result.wall_s, status == "ok" ? fmt::format("{}", b.block->duration_s) : "", status, reason);
    const double per_block = wall_total / static_cast<double>(ran);
    std::printf("%s: %s %s in %.1f s%s; %zu/%zu done, %.1fx real time, ETA %.0f s\n", kMe, what.c_str(), status.c_str(),
                result.wall_s, reason.empty() ? "" : (": " + reason).c_str(), ran, total,
                wall_total > 0 ? sim_total / wall_total : 0.0, per_block * static_cast<double>(todo.size()));
    std::fflush(stdout);
    if (status == "aborted") {
      exit_code = g_study_signal.load() ? 130 : 1;
      break;
    }
    if (status == "failed") {
      ++failed;
      exit_code = 1;
    }
  }
  if (g_study_signal.load()) {
    std::fprintf(stderr, "%s: interrupted; `platoon study %s` again resumes (blocks done are skipped)\n", kMe, o.study_path.c_str());
    return 130;
  }
  if (failed > 0) std::fprintf(stderr, "%s: %zu block(s) failed (see study_log.csv)\n", kMe, failed);
  if (exit_code == 0) std::printf("%s: done: %zu block(s); `platoon study collect %s` merges their data\n", kMe, ran, out.c_str());
  return exit_code;
}

}  // namespace platoon::launcher
