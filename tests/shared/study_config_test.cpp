// The study file (config::LoadStudyText) and its counterbalancing: the balanced Latin square (each block once
// per row and per column, Williams' first-order carry-over balance), block orders per participant (practice
// first, seeded random orders reproducible), and errors that name the file, line and key.
#include "platoon/config/study.hpp"
#include "platoon/config/table.hpp"

#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

using namespace platoon;

namespace study_config_test_detail {

const char* kSession = R"(
[session]
name = "s"

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
)";

// The error LoadStudyText throws for `text` (a study next to a session file s.toml), or "" when none.
std::string StudyError(const testing::TempDir& dir, const std::string& text) {
  dir.Write("s.toml", kSession);
  try {
    (void)config::LoadStudyText(text, dir.Path() + "/study.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string Blocks(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "[[study.block]]\nname = \"b" + std::to_string(i) + "\"\nsession = \"s.toml\"\n";
  return s;
}

}  // namespace study_config_test_detail

using namespace study_config_test_detail;

TEST_CASE("study: the balanced Latin square has each block once per row and per column for 1 to 9 blocks") {
  for (int n = 1; n <= 9; ++n) {
    const auto rows = config::BalancedLatinSquare(n);
    REQUIRE(rows.size() == static_cast<size_t>(n % 2 == 0 ? n : 2 * n));
    // Each half of n rows is a Latin square: every row and every column a permutation of 0..n-1.
    for (size_t half = 0; half < rows.size(); half += static_cast<size_t>(n)) {
      for (int r = 0; r < n; ++r) {
        const auto& row = rows[half + static_cast<size_t>(r)];
        CHECK(std::set<int>(row.begin(), row.end()).size() == static_cast<size_t>(n));
        CHECK(*std::min_element(row.begin(), row.end()) == 0);
        CHECK(*std::max_element(row.begin(), row.end()) == n - 1);
      }
      for (int c = 0; c < n; ++c) {
        std::set<int> column;
        for (int r = 0; r < n; ++r) column.insert(rows[half + static_cast<size_t>(r)][static_cast<size_t>(c)]);
        CHECK(column.size() == static_cast<size_t>(n));
      }
    }
  }
}

TEST_CASE("study: the Latin square balances first-order carry-over (Williams) for even and odd block counts") {
  for (int n = 2; n <= 10; ++n) {
    const auto rows = config::BalancedLatinSquare(n);
    // Count every ordered pair (a directly before b) over all rows.
    std::map<std::pair<int, int>, int> follows;
    for (const auto& row : rows)
      for (size_t j = 1; j < row.size(); ++j) ++follows[{row[j - 1], row[j]}];
    // Rows x (n - 1) adjacent pairs spread evenly over the n (n - 1) ordered pairs.
    const int expected = static_cast<int>(rows.size()) * (n - 1) / (n * (n - 1));
    CHECK(expected == (n % 2 == 0 ? 1 : 2));
    CHECK(follows.size() == static_cast<size_t>(n * (n - 1)));
    for (const auto& [pair, count] : follows) {
      INFO("n = " << n << ", " << pair.first << " before " << pair.second);
      CHECK(pair.first != pair.second);
      CHECK(count == expected);
    }
  }
}

TEST_CASE("study: block orders put practice first and counterbalance the rest per participant") {
  testing::TempDir dir;
  dir.Write("s.toml", kSession);
  // Blocks(1) and Blocks(4) both start at b0: the practice block is renamed.
  std::string study_text = "[study]\nparticipants = 4\norder = \"latin\"\n" + Blocks(1) + "practice = true\n" + Blocks(4);
  study_text.replace(study_text.find("\"b0\""), 4, "\"warmup\"");
  const auto study = config::LoadStudyText(study_text, dir.Path() + "/study.toml");
  REQUIRE(study.participants == std::vector<std::string>{"P01", "P02", "P03", "P04"});
  REQUIRE(study.blocks.size() == 5);
  CHECK(study.blocks[0].practice);
  const auto square = config::BalancedLatinSquare(4);
  for (size_t p = 0; p < 4; ++p) {
    const auto order = config::StudyBlockOrder(study, p);
    REQUIRE(order.size() == 5);
    CHECK(order[0] == 0);  // the practice block
    for (size_t k = 0; k < 4; ++k) CHECK(order[k + 1] == static_cast<size_t>(square[p][k]) + 1);
  }
  // Participant 5 would start the square again.
  CHECK(config::StudyBlockOrder(study, 4) == config::StudyBlockOrder(study, 0));
  CHECK(config::StudyBlockFolder(2, "urban") == "02_urban");
}

TEST_CASE("study: random orders are permutations drawn from the seed and the participant, fixed keeps the file order") {
  testing::TempDir dir;
  dir.Write("s.toml", kSession);
  auto load = [&](const std::string& order, int seed) {
    return config::LoadStudyText("[study]\nparticipants = [\"ann\", \"bob\", \"cy\"]\nseed = " + std::to_string(seed) +
                                     "\norder = \"" + order + "\"\n" + Blocks(6),
                                 dir.Path() + "/study.toml");
  };
  const auto a = load("random", 5), b = load("random", 5), c = load("random", 6);
  std::set<std::vector<size_t>> distinct;
  bool seed_matters = false;
  for (size_t p = 0; p < 3; ++p) {
    const auto order = config::StudyBlockOrder(a, p);
    CHECK(order == config::StudyBlockOrder(b, p));
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<size_t>{0, 1, 2, 3, 4, 5});
    distinct.insert(order);
    if (config::StudyBlockOrder(c, p) != order) seed_matters = true;
  }
  CHECK(distinct.size() > 1);  // 720 orders: three participants drawing the same one would be a broken draw
  CHECK(seed_matters);
  const auto fixed = load("fixed", 5);
  for (size_t p = 0; p < 3; ++p) CHECK(config::StudyBlockOrder(fixed, p) == std::vector<size_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("study: block parameters become session paths with their values and places") {
  testing::TempDir dir;
  dir.Write("s.toml", kSession);
  const auto s = config::LoadStudyText(R"([study]
participants = 1
[[study.block]]
name = "a"
session = "s.toml"
condition = "fast"
duration_s = 12.5
[study.block.params]
"node.lead.speed_mps" = 30
event.go.when.sim_time = 2.5
road.seed = 4
"node.lead.model" = "idm"
)", dir.Path() + "/study.toml");
  REQUIRE(s.blocks.size() == 1);
  const auto& b = s.blocks[0];
  CHECK(b.condition == "fast");
  CHECK(b.duration_s == 12.5);
  CHECK(b.session == dir.Path() + "/s.toml");
  REQUIRE(b.params.size() == 4);
  CHECK(b.params[1].path == "event.go.when.sim_time");  // file order
  CHECK(b.params[3].path == "node.lead.model");
  std::map<std::string, std::string> got;
  for (const auto& p : b.params) got[p.path] = config::StudyValueText(p.value);
  CHECK(got["node.lead.speed_mps"] == "30");
  CHECK(got["event.go.when.sim_time"] == "2.5");
  CHECK(got["road.seed"] == "4");
  CHECK(got["node.lead.model"] == "idm");
  CHECK(b.params[0].where.find("study.toml:9: study.block[0].params.node.lead.speed_mps") != std::string::npos);
  CHECK(s.name == "study");
  CHECK(s.out == "studies/study");
}

TEST_CASE("study: bad study files are refused naming the file line and key") {
  testing::TempDir dir;
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {"[stud]\nparticipants = 2\n", "study.toml:1: expected a [study] table"},
      {"[study]\n" + Blocks(2), "participants: expected a number of participants"},
      {"[study]\nparticipants = 0\n" + Blocks(2), "study.toml:2: study.participants"},
      {"[study]\nparticipants = \"P01\"\n" + Blocks(2), "study.toml:2: study.participants: expected a number of participants (4: P01..P04) or an array of ids"},
      {"[study]\nparticipants = [\"P01\", \"P01\"]\n" + Blocks(2), "study.toml:2: study.participants: expected distinct ids, got \"P01\" twice"},
      {"[study]\nparticipants = [\"P 1\"]\n" + Blocks(2), "study.toml:2: study.participants: expected ids of letters"},
      {"[study]\nparticipants = 2\n", "expected at least one [[study.block]]"},
      {"[study]\nparticipants = 2\norder = \"shuffled\"\n" + Blocks(2), "study.toml:3: study.order"},
      {"[study]\nparticipants = 2\n[[study.block]]\nname = \"a\"\nsession = \"missing.toml\"\n",
       "study.toml:5: study.block[0].session: expected a session file, got \"missing.toml\""},
      {"[study]\nparticipants = 2\n[[study.block]]\nsession = \"s.toml\"\n", "study.block[0].name"},
      {"[study]\nparticipants = 2\n" + Blocks(1) + Blocks(1), "study.toml:7: study.block[1].name: expected a name no other block has, got \"b0\" again"},
      {"[study]\nparticipants = 2\n" + Blocks(1) + "practice = true\n", "expected at least one block that is not practice"},
      {"[study]\nparticipants = 2\n" + Blocks(1) + "colour = \"red\"\n", "study.toml:6: study.block[0].colour: unknown key"},
      {"[study]\nparticipants = 2\nduration = 3\n" + Blocks(1), "study.toml:3: study.duration: unknown key"},
      {"[study]\nparticipants = 2\n" + Blocks(1) + "duration_s = -1\n", "study.toml:6: study.block[0].duration_s"},
      {"[study]\nparticipants = 2\n" + Blocks(1) + "[study.block.params]\n\"node.lead\" = 3\n",
       "study.toml:7: study.block[0].params.node.lead: expected node.<name>.<key>, got \"node.lead\""},
      {"[study]\nparticipants = 2\n" + Blocks(1) + "[study.block.params]\n\"road.seeds\" = [1, 2]\n",
       "study.toml:7: study.block[0].params.road.seeds: expected a number, string or boolean"},
  };
  for (const auto& c : cases) {
    const std::string error = StudyError(dir, c.text);
    INFO("study file:\n" << c.text << "\nerror: " << error);
    CHECK(error.find(c.expected) != std::string::npos);
  }
}
