// platoon batch end to end: a plan of three short lock-step runs of a small session (road traffic and a
// scripted seat) run directly, interrupted after one run and resumed, and spread as --list commands then
// merged with --collect: the three results.csv are the same bytes. Variators drawn per run number are
// reproducible and within their range; bad plans are usage errors that name the plan line and key.
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

const std::string kBatchSession = R"(
[session]
name = "batch-small"

[road]
generate_length_m = 1200
seed = 2
lanes = 2

[[node]]
name = "traffic"
role = "traffic"
traffic_model = "road"
vehicles = 4
speed_mps = 14

[[node]]
name = "robot"
role = "driver"
input = "scripted:)" + std::string(PLATOON_SOURCE_DIR) + R"(/configs/inputs/lane_change.csv"
start_s_m = 60
start_lane = -1
headless = true
)";

std::string Plan(const std::string& extra = "") {
  return R"(
[batch]
session = "session.toml"
seed = 11

[stop]
duration_s = 3

[outputs]
subject = "robot"
list = ["stop_time", "distance", "max_speed", "min_headway", "max_lane_offset", "collisions"]

[[vary]]
path = "node.traffic.speed_mps"
values = [10, 13.5, 17]

[[random]]
path = "node.robot.start_s_m"
dist = "uniform"
min = 40
max = 90
round_to = 0.25
)" + extra;
}

struct BatchRun {
  int status = -1;
  std::string output;
};

BatchRun Batch(const std::vector<std::string>& args, std::chrono::seconds timeout = 180s) {
  std::vector<std::string> argv = {BinDir() + "/platoon", "batch"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = process::Child::Spawn(argv);
  BatchRun r;
  r.status = RunToExit(c, timeout).value_or(-1);
  for (const auto& l : c.Lines()) r.output += l + "\n";
  return r;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// Whether TCP ports first .. first + count - 1 of 127.0.0.1 can be bound now (each bound and released).
bool BatchPortsFree(int first, int count) {
  for (int port = first; port < first + count; ++port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) close(fd);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("batch: the same plan twice, an interrupted and resumed batch, and --list with --collect give the same results") {
  TempDir dir;
  dir.Write("session.toml", kBatchSession);
  const std::string plan = dir.Write("plan.toml", Plan());
  const std::string a = dir.Path() + "/a", b = dir.Path() + "/b", c = dir.Path() + "/c";

  // 1. The whole batch.
  const BatchRun first = Batch({plan, "--out", a});
  REQUIRE_MESSAGE(first.status == 0, first.output << ReadAll(a + "/run_001/run.log"));
  const std::string results = ReadAll(a + "/results.csv");
  const auto rows = Lines(results);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "run,node.traffic.speed_mps,node.robot.start_s_m,stop_time_s,distance_m,max_speed_mps,min_headway_m,"
                   "max_abs_lane_offset_m,collisions");
  CHECK(rows[1].rfind("1,10,", 0) == 0);
  CHECK(rows[2].rfind("2,13.5,", 0) == 0);
  CHECK(rows[3].rfind("3,17,", 0) == 0);
  for (int run = 1; run <= 3; ++run) {
    const std::string rd = a + "/run_00" + std::to_string(run);
    CHECK(std::filesystem::exists(rd + "/session.toml"));
    CHECK(std::filesystem::exists(rd + "/session.mcap"));
    CHECK(ReadAll(rd + "/summary.jsonl").find("\"node\":\"robot\"") != std::string::npos);
    // Each row: stop at the duration, the seat moved.
    const std::string row = rows[static_cast<size_t>(run)];
    CHECK(row.find(",3.000000,") != std::string::npos);
  }
  CHECK(first.output.find("x real time") != std::string::npos);

  // 2. Interrupted after one run, then resumed: only runs 2 and 3 run again, same bytes.
  const BatchRun stopped = Batch({plan, "--out", b, "--stop-after", "1"});
  CHECK_MESSAGE(stopped.status == 1, stopped.output);
  CHECK(std::filesystem::exists(b + "/run_001/result.csv"));
  CHECK_FALSE(std::filesystem::exists(b + "/run_002"));
  CHECK_FALSE(std::filesystem::exists(b + "/results.csv"));
  const auto run1_time = std::filesystem::last_write_time(b + "/run_001/session.mcap");
  const BatchRun resumed = Batch({plan, "--out", b});
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(resumed.output.find("1 of 3 runs already have their result") != std::string::npos);
  CHECK(std::filesystem::last_write_time(b + "/run_001/session.mcap") == run1_time);
  CHECK(ReadAll(b + "/results.csv") == results);

  // 3. One command per run (what GNU parallel or a Slurm array runs), then --collect.
  const BatchRun list = Batch({plan, "--out", c, "--list"});
  REQUIRE(list.status == 0);
  const auto commands = Lines(list.output);
  REQUIRE(commands.size() == 3);
  const BatchRun early = Batch({plan, "--out", c, "--collect"});
  CHECK(early.status == 1);
  CHECK(early.output.find("runs 1, 2, 3") != std::string::npos);
  for (const auto& command : commands) {
    CHECK(command.find("--run") != std::string::npos);
    auto sh = process::Child::Spawn({"/bin/sh", "-c", command});
    const auto st = RunToExit(sh, 120s);
    std::string log;
    for (const auto& l : sh.Lines()) log += l + "\n";
    REQUIRE_MESSAGE(st == std::optional<int>(0), log);
  }
  const BatchRun collected = Batch({plan, "--out", c, "--collect"});
  REQUIRE_MESSAGE(collected.status == 0, collected.output);
  CHECK(ReadAll(c + "/results.csv") == results);
}

TEST_CASE("batch: random variators are drawn from the plan seed and the run number, within their range") {
  TempDir dir;
  dir.Write("session.toml", kBatchSession);
  const std::string extra = R"(
[[random]]
path = "node.traffic.vehicles"
dist = "choice"
values = [2, 3, 5]

[[random]]
path = "road.seed"
dist = "normal"
mean = 100
stddev = 10
integer = true
)";
  const std::string plan = dir.Write("plan.toml", Plan(extra + "\n"));
  const BatchRun one = Batch({plan, "--show"}), two = Batch({plan, "--show"});
  REQUIRE_MESSAGE(one.status == 0, one.output);
  CHECK(one.output == two.output);
  auto text = Plan(extra);
  text.replace(text.find("seed = 11"), 9, "seed = 12");
  const BatchRun other = Batch({dir.Write("plan2.toml", text), "--show"});
  REQUIRE(other.status == 0);
  CHECK(other.output != one.output);
  const auto rows = Lines(one.output);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "run,node.traffic.speed_mps,node.robot.start_s_m,node.traffic.vehicles,road.seed");
  std::set<std::string> starts;
  for (size_t i = 1; i < rows.size(); ++i) {
    std::stringstream ss(rows[i]);
    std::vector<std::string> f;
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    REQUIRE(f.size() == 5);
    const double start = std::stod(f[2]);
    CHECK(start >= 40);
    CHECK(start <= 90);
    CHECK(std::fmod(start, 0.25) == 0.0);
    starts.insert(f[2]);
    CHECK((f[3] == "2" || f[3] == "3" || f[3] == "5"));
    CHECK(f[4].find('.') == std::string::npos);  // integer = true
    CHECK(std::abs(std::stod(f[4]) - 100) < 60);
  }
  CHECK(starts.size() > 1);
  // A run's values do not depend on which runs the plan has before it: with a fourth value in the
  // [[vary]] list, runs 1..3 draw the same.
  auto longer = Plan(extra);
  longer.replace(longer.find("values = [10, 13.5, 17]"), 23, "values = [10, 13.5, 17, 20]");
  const BatchRun more = Batch({dir.Write("plan3.toml", longer), "--show"});
  REQUIRE(more.status == 0);
  const auto more_rows = Lines(more.output);
  REQUIRE(more_rows.size() == 5);
  for (size_t i = 1; i < 4; ++i) CHECK(more_rows[i] == rows[i]);
}

TEST_CASE("batch: bad plans are usage errors naming the plan line and key") {
  TempDir dir;
  dir.Write("session.toml", kBatchSession);
  struct Case {
    std::string name, from, to, expect;
  };
  const std::vector<Case> cases = {
      {"unknown node", "node.traffic.speed_mps", "node.trafic.speed_mps", "no [[node]] named \"trafic\""},
      {"unknown key", "round_to = 0.25", "round_to = 0.25\nsigma = 3", "random[0].sigma: unknown key"},
      {"bad distribution", "dist = \"uniform\"", "dist = \"gauss\"", "random[0].dist"},
      {"value the session refuses", "values = [10, 13.5, 17]", "values = [10, -13.5]", "run 2: the varied session is refused"},
      {"unknown output", "\"collisions\"]", "\"crashes\"]", "unknown output \"crashes\""},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto text = Plan();
    REQUIRE(text.find(c.from) != std::string::npos);
    text.replace(text.find(c.from), c.from.size(), c.to);
    const std::string plan = dir.Write("bad.toml", text);
    const BatchRun r = Batch({plan, "--out", dir.Path() + "/out"});
    CHECK_MESSAGE(r.status == 2, r.output);
    CHECK_MESSAGE(r.output.find(c.expect) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("bad.toml:") != std::string::npos, r.output);
    CHECK_FALSE(std::filesystem::exists(dir.Path() + "/out/run_001"));
  }
  // No [batch] table.
  const BatchRun none = Batch({dir.Write("empty.toml", "[outputs]\nsubject = \"robot\"\n")});
  CHECK(none.status == 2);
  CHECK(none.output.find("missing [batch]") != std::string::npos);
}

TEST_CASE("batch: --port-base gives run K the ports base + 4(K-1) .. +3, and a range beyond 65535 is a usage error") {
  TempDir dir;
  dir.Write("session.toml", kBatchSession);
  const std::string plan = dir.Write("plan.toml", Plan());  // three runs
  const std::string out = dir.Path() + "/out";

  // Three runs from 65530 would need ports up to 65541: refused before anything runs, with the largest base.
  const BatchRun high = Batch({plan, "--port-base", "65530", "--out", out});
  CHECK_MESSAGE(high.status == 2, high.output);
  CHECK_MESSAGE(high.output.find("--port-base 65530: run 3 would take ports 65538..65541, beyond 65535") !=
                    std::string::npos,
                high.output);
  CHECK_MESSAGE(high.output.find("give a base of at most 65524") != std::string::npos, high.output);
  CHECK_FALSE(std::filesystem::exists(out + "/run_001"));
  // Ports outside 1..65535 are refused by the option itself.
  for (const char* bad : {"0", "65536", "-4", "many"}) {
    const BatchRun r = Batch({plan, "--port-base", bad, "--show"});
    CHECK_MESSAGE(r.status == 2, bad << ": " << r.output);
  }
  // The largest base that fits, and run 1 alone from 65530, pass; --list hands the base to every command.
  CHECK(Batch({plan, "--port-base", "65524", "--show"}).status == 0);
  CHECK(Batch({plan, "--port-base", "65530", "--run", "1", "--show"}).status == 0);
  const BatchRun list = Batch({plan, "--port-base", "20000", "--list", "--out", out});
  REQUIRE(list.status == 0);
  const auto commands = Lines(list.output);
  CHECK(commands.size() == 3);
  for (const auto& c : commands) CHECK_MESSAGE(c.find(" --port-base 20000") != std::string::npos, c);
  // --help shows it with an example.
  const BatchRun help = Batch({"--help"});
  CHECK(help.output.find("--port-base 20000") != std::string::npos);

  // Run 2 on a base whose ports 4..7 are free now: its server is on base + 4 .. base + 7, and the run works.
  int base = 0;
  for (int tries = 0; tries < 50 && base == 0; ++tries) {
    const int candidate = FreePorts(1)[0] - 4;
    if (candidate >= 1024 && candidate + 7 <= 65535 && BatchPortsFree(candidate + 4, 4)) base = candidate;
  }
  REQUIRE(base != 0);
  const BatchRun two = Batch({plan, "--run", "2", "--port-base", std::to_string(base), "--out", out});
  CHECK_MESSAGE(two.status == 0, two.output);
  const std::string text = ReadAll(out + "/run_002/session.toml");
  CHECK_MESSAGE(text.find("control_port = " + std::to_string(base + 4)) != std::string::npos, text);
  CHECK_MESSAGE(text.find("state_port = " + std::to_string(base + 7)) != std::string::npos, text);
}

TEST_CASE("batch: an OpenSCENARIO distribution of 8 variants runs as a batch and gives the same results twice") {
  // cut_in_variants.xosc: EgoSpeed {22, 25} x CutInDistance 10..25 step 5 over cut_in.xosc, 30 s each.
  const std::string dist = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/cut_in_variants.xosc";
  const TempDir dir;
  const BatchRun a = Batch({dist, "--out", dir.Path() + "/a"});
  const BatchRun b = Batch({dist, "--out", dir.Path() + "/b"});
  INFO(a.output);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const std::string csv = ReadAll(dir.Path() + "/a/results.csv");
  CHECK(csv == ReadAll(dir.Path() + "/b/results.csv"));
  const auto lines = Lines(csv);
  REQUIRE(lines.size() == 9);  // header and 8 runs
  CHECK(lines[0].rfind("run,scenario.parameters.EgoSpeed,scenario.parameters.CutInDistance,", 0) == 0);
  // Each run took its values: Ego drives at EgoSpeed (max_speed), and the cutter cuts in at CutInDistance ahead
  // (the smallest headway), the product in order (the first list slowest).
  const auto header = Lines(csv)[0];
  std::vector<std::string> cols;
  {
    std::stringstream ss(header);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
  }
  const auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  REQUIRE(col("max_speed_mps") < cols.size());
  REQUIRE(col("min_headway_m") < cols.size());
  const double speeds[] = {22, 22, 22, 22, 25, 25, 25, 25}, gaps[] = {10, 15, 20, 25, 10, 15, 20, 25};
  for (size_t r = 1; r <= 8; ++r) {
    std::vector<std::string> f;
    std::stringstream ss(lines[r]);
    for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
    REQUIRE(f.size() >= cols.size() - 1);
    CHECK(std::stod(f[1]) == speeds[r - 1]);
    CHECK(std::stod(f[2]) == gaps[r - 1]);
    CHECK(std::stod(f[col("max_speed_mps")]) == doctest::Approx(speeds[r - 1]).epsilon(1e-6));
    CHECK(std::abs(std::stod(f[col("min_headway_m")]) - gaps[r - 1]) < 0.5);
  }
  // An .xosc that is a scenario, not a distribution: a usage error naming it.
  const BatchRun wrong = Batch({std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/cut_in.xosc", "--out", dir.Path() + "/c"});
  CHECK(wrong.status == 2);
  CHECK(wrong.output.find("no ParameterValueDistribution") != std::string::npos);
}
