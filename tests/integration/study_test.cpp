// platoon study end to end: 4 simulated participants (the model driver) x 3 blocks in a balanced Latin square,
// run unattended in lock-step; every block folder complete, the log and plan as the square says, the long CSV
// with every block and every marker of the blocks' logs, and the same study run again gives byte-identical
// summary.csv. The operator's flow: `platoon study ctl` starts a block, repeats it (old folder kept) and aborts
// the next with a reason that lands in study_log.csv. Bad study files and options are usage errors.
#include "../support/session_fixture.hpp"

#include "platoon/config/study.hpp"
#include "platoon/server/replay.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace study_test_detail {

namespace fs = std::filesystem;

// A lead car kept 30 m ahead of the model driver; at 2 s a marker, at 3 s it brakes (the condition sets how
// hard) with a second marker. 100 Hz data write of the driver.
const std::string kStudySession = R"(
[session]
name = "study-small"

[road]
generate_length_m = 1500
seed = 2
lanes = 2

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
start_s_m = 90
start_lane = -1
start_speed_mps = 20
lane_changes = false
lead = "driver"
lead_gap_m = 30

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
start_s_m = 55
start_lane = -1
start_speed_mps = 20
headless = true

[node.data_write]
rate_hz = 100
path = "data/{node}.csv"
variables = ["sim_time", "speed", "lane", "lane_offset", "headway", "time_headway", "steer", "brake"]

[[event]]
name = "ready"
when = { sim_time = 2.0 }
do = [ { action = "mark", text = "get ready" } ]

[[event]]
name = "lead_brakes"
when = { sim_time = 3.0 }
do = [ { action = "brake", target = "ahead:driver", decel_mps2 = 6.0, duration_s = 1.5 },
       { action = "mark", text = "lead braking" } ]
)";

const std::string kStudy = R"(
[study]
name = "small"
participants = 4
order = "latin"
duration_s = 5

[[study.block]]
name = "mild"
session = "session.toml"
condition = "decel 3"
event_marker = "lead braking"
[study.block.params]
"event.lead_brakes.do.0.decel_mps2" = 3.0

[[study.block]]
name = "hard"
session = "session.toml"
condition = "decel 8"
event_marker = "lead braking"
[study.block.params]
"event.lead_brakes.do.0.decel_mps2" = 8.0

[[study.block]]
name = "gap"
session = "session.toml"
condition = "gap 15 m"
event_marker = "lead braking"
[study.block.params]
"node.lead.lead_gap_m" = 15
"node.lead.start_s_m" = 75
)";

struct Ran {
  int status = -1;
  std::string output;
};

Ran Study(const std::vector<std::string>& args, std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {BinDir() + "/platoon", "study"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = process::Child::Spawn(argv);
  Ran r;
  r.status = RunToExit(c, timeout).value_or(-1);
  for (const auto& l : c.Lines()) r.output += l + "\n";
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> FileLines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// Plain comma split (the test's files quote nothing but the marker column, split apart by the caller).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace study_test_detail

using namespace study_test_detail;

TEST_CASE("study: 4 participants x 3 blocks in a Latin square run unattended in lock-step with complete folders every marker and the same summary twice") {
  TempDir dir;
  dir.Write("session.toml", kStudySession);
  const std::string study = dir.Write("study.toml", kStudy);
  const std::string a = dir.Path() + "/a", b = dir.Path() + "/b";

  const Ran first = Study({study, "--unattended", "--out", a});
  REQUIRE_MESSAGE(first.status == 0, first.output);
  CHECK(first.output.find("ETA") != std::string::npos);

  // The plan: P01..P04 take rows 0..3 of the balanced Latin square of the 3 blocks.
  const std::vector<std::string> names = {"mild", "hard", "gap"};
  const auto square = config::BalancedLatinSquare(3);
  const auto plan = FileLines(a + "/plan.csv");
  REQUIRE(plan.size() == 13);
  std::map<std::pair<std::string, std::string>, std::string> folder_of;
  for (size_t i = 1; i < plan.size(); ++i) {
    const auto f = Fields(plan[i]);
    REQUIRE(f.size() == 8);
    const size_t p = (i - 1) / 3, k = (i - 1) % 3;
    CHECK(f[0] == fmt::format("P0{}", p + 1));
    CHECK(f[1] == std::to_string(k + 1));
    CHECK(f[2] == names[static_cast<size_t>(square[p][k])]);
    CHECK(f[7] == fmt::format("P0{}/0{}_{}", p + 1, k + 1, f[2]));
    folder_of[{f[0], f[2]}] = f[7];
  }
  // Each block once per position over the first three participants (the square's columns).
  for (size_t k = 0; k < 3; ++k) {
    std::set<std::string> column;
    for (size_t p = 0; p < 3; ++p) column.insert(Fields(plan[1 + 3 * p + k])[2]);
    CHECK(column.size() == 3);
  }

  // Every block folder complete; the study log has one ok row per block with its sim seconds.
  const auto log = FileLines(a + "/study_log.csv");
  REQUIRE(log.size() == 13);
  CHECK(log[0] == "participant,block,condition,order,folder,start_utc,end_utc,wall_s,sim_s,status,reason");
  std::map<std::string, size_t> markers_in_log;  // folder -> markers in its session log
  std::map<std::string, std::vector<std::string>> marker_texts;
  for (const auto& [key, folder] : folder_of) {
    const std::string d = a + "/" + folder;
    for (const char* f : {"session.toml", "session.mcap", "run.log", "summary.jsonl", "block.ok", "data/driver.csv"})
      CHECK_MESSAGE(fs::exists(d + "/" + f), d << "/" << f);
    const auto rows = FileLines(d + "/data/driver.csv");
    CHECK(rows.size() == 1 + 501);  // header, 0 .. 5 s at 100 Hz
    const auto replay = server::LoadReplayLog(d + "/session.mcap");
    markers_in_log[folder] = replay.markers.size();
    for (const auto& m : replay.markers) marker_texts[folder].push_back(m.text);
    CHECK(replay.markers.size() == 2);  // "get ready" and "lead braking"
  }
  for (size_t i = 1; i < log.size(); ++i) {
    const auto f = Fields(log[i]);
    REQUIRE(f.size() == 11);
    CHECK(f[9] == "ok");
    CHECK(f[8] == "5");
    CHECK(folder_of.at({f[0], f[1]}) == f[4]);
  }

  // collect: every block's rows in the long CSV with every marker of its log; a summary row per block.
  const Ran collected = Study({"collect", a});
  REQUIRE_MESSAGE(collected.status == 0, collected.output);
  const auto long_rows = FileLines(a + "/study_long.csv");
  REQUIRE(!long_rows.empty());
  CHECK(long_rows[0] ==
        "participant,block,condition,order,name,sim_time_s,speed_mps,lane,lane_offset_m,headway_m,time_headway_s,steer_norm,brake_norm,marker");
  std::map<std::string, size_t> rows_of;
  std::map<std::string, std::vector<std::string>> markers_of;
  for (size_t i = 1; i < long_rows.size(); ++i) {
    const auto f = Fields(long_rows[i]);
    REQUIRE(f.size() == 14);
    const std::string folder = folder_of.at({f[0], f[1]});
    ++rows_of[folder];
    if (!f[13].empty()) {
      for (size_t pos = 0; pos <= f[13].size();) {
        const size_t end = std::min(f[13].find(" | ", pos), f[13].size());
        markers_of[folder].push_back(f[13].substr(pos, end - pos));
        pos = end + 3;
      }
    }
  }
  CHECK(rows_of.size() == 12);
  // One CSV per participant: the long CSV's header and that participant's rows.
  for (int p = 1; p <= 4; ++p) {
    const auto own = FileLines(fmt::format("{}/P0{}/P0{}.csv", a, p, p));
    REQUIRE(own.size() == 1 + 3 * 501);
    CHECK(own[0] == long_rows[0]);
    for (size_t i = 1; i < own.size(); ++i) CHECK(Fields(own[i])[0] == fmt::format("P0{}", p));
  }
  for (const auto& [key, folder] : folder_of) {
    CHECK(rows_of[folder] == 501);
    auto want = marker_texts[folder], got = markers_of[folder];
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    CHECK_MESSAGE(got == want, folder);
  }
  const auto summary = FileLines(a + "/summary.csv");
  REQUIRE(summary.size() == 13);
  for (size_t i = 1; i < summary.size(); ++i) {
    const auto f = Fields(summary[i]);
    CHECK(f[4] == "ok");
    CHECK(f[5] == "driver");
    CHECK(f[7] == "lead braking");
    CHECK(f[8] == "3.000");  // the marker's row: the event at 3 s
  }

  // The same study again, elsewhere: byte-identical summary and long CSV.
  const Ran second = Study({study, "--unattended", "--out", b});
  REQUIRE_MESSAGE(second.status == 0, second.output);
  REQUIRE(Study({"collect", b}).status == 0);
  CHECK(ReadFile(b + "/summary.csv") == ReadFile(a + "/summary.csv"));
  CHECK(ReadFile(b + "/study_long.csv") == ReadFile(a + "/study_long.csv"));
  CHECK(ReadFile(b + "/plan.csv") == ReadFile(a + "/plan.csv"));

  // Run again into the first folder: every block is done, nothing runs.
  const Ran again = Study({study, "--unattended", "--out", a});
  CHECK(again.status == 0);
  CHECK(again.output.find("nothing to run") != std::string::npos);

  // --from: P02's second block and the ones after it run again, the old folders kept; --repeat: one block again.
  const std::string second_of_p2 = Fields(plan[5])[2], third_of_p2 = Fields(plan[6])[2];
  const Ran from = Study({study, "--unattended", "--out", a, "--participant", "P02", "--from", second_of_p2});
  REQUIRE_MESSAGE(from.status == 0, from.output);
  CHECK(fs::exists(a + "/" + folder_of.at({"P02", second_of_p2}) + "-old1/block.ok"));
  CHECK(fs::exists(a + "/" + folder_of.at({"P02", third_of_p2}) + "-old1/block.ok"));
  CHECK(fs::exists(a + "/" + folder_of.at({"P02", third_of_p2}) + "/block.ok"));
  CHECK_FALSE(fs::exists(a + "/" + Fields(plan[4])[7] + "-old1"));  // P02's first block stays
  const Ran repeat = Study({study, "--unattended", "--out", a, "--participant", "P01", "--repeat", "mild"});
  REQUIRE_MESSAGE(repeat.status == 0, repeat.output);
  CHECK(fs::exists(a + "/" + folder_of.at({"P01", "mild"}) + "-old1/block.ok"));
  const auto log_after = FileLines(a + "/study_log.csv");
  REQUIRE(log_after.size() == 13 + 3);
  CHECK(Fields(log_after[13])[1] == second_of_p2);
  CHECK(Fields(log_after[14])[1] == third_of_p2);
  CHECK(Fields(log_after[15])[0] == "P01");
  CHECK(Fields(log_after[15])[1] == "mild");
  const Ran done_block = Study({study, "--unattended", "--out", a, "--participant", "P01", "--block", "mild"});
  CHECK(done_block.status == 2);
  CHECK(done_block.output.find("--repeat mild") != std::string::npos);
}

TEST_CASE("study: the operator starts a block with study ctl next then repeats it and aborts the next with a reason in study_log.csv") {
  TempDir dir;
  dir.Write("session.toml", kStudySession);
  std::string text = kStudy;
  text.replace(text.find("participants = 4"), 16, "participants = [\"ann\"]");
  text.replace(text.find("order = \"latin\""), 15, "order = \"fixed\"");
  text.replace(text.find("duration_s = 5"), 14, "duration_s = 2");
  text.replace(text.find("name = \"gap\""), 12, "name = \"gap\"\nduration_s = 600");  // long enough to be stopped
  const std::string study = dir.Write("study.toml", text);
  const std::string out = dir.Path() + "/o";
  auto ctl = [&](const std::vector<std::string>& words) {
    std::vector<std::string> args = {"ctl", out};
    args.insert(args.end(), words.begin(), words.end());
    return Study(args, 20s).status;
  };
  // The same word through `platoon ctl study OUT ...`.
  auto platoon_ctl = [&](const std::vector<std::string>& words) {
    std::vector<std::string> argv = {BinDir() + "/platoon", "ctl", "study", out};
    argv.insert(argv.end(), words.begin(), words.end());
    auto p = process::Child::Spawn(argv);
    return RunToExit(p, 20s).value_or(-1);
  };

  auto c = process::Child::Spawn({BinDir() + "/platoon", "study", study, "--out", out});
  // 1. It waits before the first block; `next` starts it.
  REQUIRE(c.WaitForLine("next: ann block 1/3 \"mild\"", 20s));
  CHECK_FALSE(fs::exists(out + "/ann/01_mild"));
  REQUIRE(ctl({"next"}) == 0);
  REQUIRE(c.WaitForLine("\"mild\" (condition decel 3) ok", 60s));
  // 2. `repeat` runs the last block again, the first folder kept as 01_mild-old1.
  REQUIRE(c.WaitForLine("next: ann block 2/3 \"hard\"", 20s));
  REQUIRE(platoon_ctl({"repeat"}) == 0);
  REQUIRE(c.WaitForLine("next: ann block 1/3 \"mild\"", 20s));
  REQUIRE(ctl({"next"}) == 0);
  REQUIRE(c.WaitForLine("\"mild\" (condition decel 3) ok", 60s));
  CHECK(fs::exists(out + "/ann/01_mild-old1/block.ok"));
  CHECK(fs::exists(out + "/ann/01_mild/block.ok"));
  // 3. `abort REASON` before the next block ends the study with that reason.
  REQUIRE(c.WaitForLine("next: ann block 2/3 \"hard\"", 20s));
  REQUIRE(ctl({"abort", "participant", "felt", "unwell"}) == 0);
  const auto status = RunToExit(c, 20s);
  CHECK(status == std::optional<int>(1));
  const auto log = FileLines(out + "/study_log.csv");
  REQUIRE(log.size() == 4);
  CHECK(Fields(log[1])[9] == "ok");
  CHECK(Fields(log[2])[9] == "ok");
  CHECK(Fields(log[2])[1] == "mild");
  const auto aborted = Fields(log[3]);
  CHECK(aborted[1] == "hard");
  CHECK(aborted[9] == "aborted");
  CHECK(aborted[10] == "participant felt unwell");
  CHECK_FALSE(fs::exists(out + "/ann/02_hard"));
  // 4. `abort REASON` while a block runs stops it: its row is aborted with the reason, its folder not done.
  auto c2 = process::Child::Spawn({BinDir() + "/platoon", "study", study, "--out", out, "--block", "gap"});
  REQUIRE(c2.WaitForLine("next: ann block 3/3 \"gap\"", 20s));
  REQUIRE(ctl({"next"}) == 0);
  REQUIRE(c2.WaitForLine("\"gap\" (condition gap 15 m) running", 20s));
  REQUIRE(ctl({"abort", "sensor", "fell", "off"}) == 0);
  CHECK(RunToExit(c2, 30s) == std::optional<int>(1));
  const auto log2 = FileLines(out + "/study_log.csv");
  REQUIRE(log2.size() == 5);
  const auto stopped = Fields(log2[4]);
  CHECK(stopped[1] == "gap");
  CHECK(stopped[9] == "aborted");
  CHECK(stopped[10] == "sensor fell off");
  CHECK(stopped[8] == "");  // no sim seconds for a block stopped early
  CHECK(fs::exists(out + "/ann/03_gap/session.toml"));
  CHECK_FALSE(fs::exists(out + "/ann/03_gap/block.ok"));
  // A bad word is refused, and a folder that holds no study.
  CHECK(ctl({"jump"}) == 2);
  CHECK(platoon_ctl({"jump"}) == 2);
  auto none = process::Child::Spawn({BinDir() + "/platoon", "ctl", "study", dir.Path(), "next"});
  CHECK(RunToExit(none, 20s) == std::optional<int>(2));
}

TEST_CASE("study: bad study files and options are usage errors that name the place") {
  TempDir dir;
  dir.Write("session.toml", kStudySession);
  const std::string good = dir.Write("study.toml", kStudy);
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::string bad_param = kStudy;
  bad_param.replace(bad_param.find("\"node.lead.lead_gap_m\""), 22, "\"node.nobody.lead_gap_m\"");
  const std::string bad_param_file = dir.Write("bad_param.toml", bad_param);
  std::string bad_key = kStudy;
  bad_key.replace(bad_key.find("order = \"latin\""), 15, "ordre = \"latin\"");
  const std::string bad_key_file = dir.Write("bad_key.toml", bad_key);
  const std::vector<Case> cases = {
      {{good, "--participant", "P09"}, "--participant P09: not a participant of"},
      {{good, "--block", "urban"}, "\"urban\": not a block of"},
      {{bad_key_file}, "bad_key.toml:5: study.ordre: unknown key"},
      {{bad_param_file}, "the session has no [[node]] named \"nobody\""},
      {{dir.Path() + "/missing.toml"}, "no such study file"},
      {{"collect", dir.Path()}, "plan.csv: cannot be read"},
  };
  for (const auto& c : cases) {
    const Ran r = Study(c.args, 30s);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.expected) != std::string::npos);
  }
  // The parameter's place: the study file's line.
  const Ran r = Study({bad_param_file}, 30s);
  CHECK(r.output.find("bad_param.toml:30: study.block[2].params.node.nobody.lead_gap_m") != std::string::npos);
}
