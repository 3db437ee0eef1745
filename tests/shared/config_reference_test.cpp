// The session key reference (shared/src/config/key_reference.cpp and key_meanings.cpp, the key observer of
// shared/src/config/table.cpp, tools/src/reference_cmd.cpp): docs/CONFIG.md is the generated text, every key
// a reader reads has a meaning line and every meaning line a key, and every key name in the readers'
// sources is in the reference, so a key in a branch the corpus misses is caught too.
#include "platoon/config/key_reference.hpp"
#include "platoon/config/table.hpp"
#include "../../tools/src/reference_cmd.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace {

using platoon::config::KeyRead;
using platoon::config::KeyReference;
using platoon::config::KeyType;

// The reference of the repository's corpus, built once for every test case here.
const KeyReference& CorpusReference() {
  static const KeyReference reference = platoon::launcher::BuildKeyReference(PLATOON_SOURCE_DIR);
  return reference;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

// Every getter call, kept.
struct RecordingObserver : platoon::config::KeyObserver {
  std::vector<KeyRead> reads;
  void OnKeyRead(const KeyRead& read) override { reads.push_back(read); }
  const KeyRead* Find(const std::string& key) const {
    for (const auto& r : reads)
      if (r.key == key) return &r;
    return nullptr;
  }
};

// The files whose readers the reference covers: the key names their getters name.
std::vector<std::string> ReaderSources() {
  const std::string src = PLATOON_SOURCE_DIR;
  std::vector<std::string> files = {src + "/shared/src/config/session.cpp", src + "/shared/src/config/scenario.cpp",
                                    src + "/shared/src/road/road_file.cpp", src + "/sensors/src/sensor_config.cpp",
                                    src + "/node/src/fusion.cpp", src + "/node/input/src/axis_mapping.cpp"};
  std::vector<std::string> kinds;
  for (const auto& e : std::filesystem::directory_iterator(src + "/sensors/src/kinds"))
    if (e.path().extension() == ".cpp") kinds.push_back(e.path().string());
  std::sort(kinds.begin(), kinds.end());
  files.insert(files.end(), kinds.begin(), kinds.end());
  return files;
}

}  // namespace

TEST_CASE("config reference: the observer sees each getter's table pattern, type, default, bounds and value") {
  const auto root = platoon::config::Table::ParseText(R"(
[[node]]
name = "a"
[[node]]
name = "b"
rate_hz = 5
[[node.sensor]]
id = "front"
position = [1, 0, 2]
)", "observed.toml");
  RecordingObserver observer;
  {
    platoon::config::ScopedKeyObserver scope(observer);
    const auto nodes = root.TableArray("node");
    REQUIRE(nodes.size() == 2);
    (void)nodes[1].RequireString("name", {"a", "b"});
    (void)nodes[1].GetDouble("rate_hz", 10.5, 0.1, 1e300);
    (void)nodes[1].GetInt("count", 3);
    (void)nodes[1].GetBool("headless", false);
    const auto sensors = nodes[1].TableArray("sensor");
    REQUIRE(sensors.size() == 1);
    (void)sensors[0].GetDoubleArray("position", {0, 0, 0}, 3, -100, 100);
    (void)sensors[0].GetString("render", "none", {"none", "png"});
  }
  const KeyRead* node = observer.Find("node");
  REQUIRE(node);
  CHECK(node->type == KeyType::kTableArray);
  CHECK(node->table_pattern.empty());
  CHECK(node->value == std::optional<std::string>(""));

  const KeyRead* name = observer.Find("name");
  REQUIRE(name);
  CHECK(name->required);
  CHECK_FALSE(name->fallback);
  CHECK(name->allowed == std::vector<std::string>{"a", "b"});
  CHECK(name->value == std::optional<std::string>("\"b\""));
  CHECK(name->table == "node[1]");
  CHECK(name->table_pattern == "node");

  const KeyRead* rate = observer.Find("rate_hz");
  REQUIRE(rate);
  CHECK(rate->type == KeyType::kNumber);
  CHECK(rate->fallback == std::optional<std::string>("10.5"));
  CHECK(rate->min == std::optional<double>(0.1));
  CHECK_FALSE(rate->max);  // the getter's own sentinel is no bound
  CHECK(rate->value == std::optional<std::string>("5"));

  const KeyRead* count = observer.Find("count");
  REQUIRE(count);
  CHECK(count->type == KeyType::kInteger);
  CHECK(count->fallback == std::optional<std::string>("3"));
  CHECK_FALSE(count->min);
  CHECK_FALSE(count->max);
  CHECK_FALSE(count->value);  // absent

  const KeyRead* headless = observer.Find("headless");
  REQUIRE(headless);
  CHECK(headless->fallback == std::optional<std::string>("false"));

  const KeyRead* position = observer.Find("position");
  REQUIRE(position);
  CHECK(position->table == "node[1].sensor[0]");
  CHECK(position->table_pattern == "node.sensor");
  CHECK(position->type == KeyType::kNumberArray);
  CHECK(position->size == 3);
  CHECK(position->fallback == std::optional<std::string>("[0, 0, 0]"));
  CHECK(position->value == std::optional<std::string>("[1, 0, 2]"));

  const KeyRead* render = observer.Find("render");
  REQUIRE(render);
  CHECK(render->fallback == std::optional<std::string>("\"none\""));
  CHECK(render->allowed == std::vector<std::string>{"none", "png"});

  // Once the scope ends nothing is reported.
  const size_t before = observer.reads.size();
  (void)root.TableArray("node");
  CHECK(observer.reads.size() == before);
  CHECK(platoon::config::TablePattern("node[12].sensor[3].class_rules[0]") == "node.sensor.class_rules");
}

TEST_CASE("config reference: every corpus file reads without error") {
  for (const auto& e : CorpusReference().CorpusErrors()) FAIL_CHECK("corpus file fails to read: " << e);
}

TEST_CASE("config reference: docs/CONFIG.md is the text `platoon check --reference` prints") {
  const std::string path = std::string(PLATOON_SOURCE_DIR) + "/docs/CONFIG.md";
  const std::string committed = ReadWholeFile(path);
  const std::string generated = platoon::launcher::ReferenceMarkdown(CorpusReference(), PLATOON_SOURCE_DIR);
  if (committed == generated) return;
  const auto a = SplitLines(committed), b = SplitLines(generated);
  size_t line = 0;
  while (line < a.size() && line < b.size() && a[line] == b[line]) ++line;
  FAIL_CHECK("docs/CONFIG.md differs from the generated reference at line "
             << line + 1 << ":\n  docs/CONFIG.md: " << (line < a.size() ? a[line] : "(end of file)")
             << "\n  generated:      " << (line < b.size() ? b[line] : "(end of text)")
             << "\nRegenerate it from the repository root: build/bin/platoon check --reference > docs/CONFIG.md");
}

TEST_CASE("config reference: every key a reader reads has a meaning line") {
  for (const auto& k : CorpusReference().MissingMeanings())
    FAIL_CHECK(k << " is read by a config reader but has no meaning line: add one to "
                    "shared/src/config/key_meanings.cpp");
}

TEST_CASE("config reference: every meaning line names a key a reader reads") {
  for (const auto& k : CorpusReference().UnusedMeanings())
    FAIL_CHECK("shared/src/config/key_meanings.cpp has a meaning line for " << k
               << ", which no reader reads over the corpus (a removed or renamed key, or a table the corpus lacks: "
                  "extend tests/data/config_tour/)");
}

TEST_CASE("config reference: a default that depends on the file is given in words") {
  for (const auto& k : CorpusReference().UnsettledDefaults())
    FAIL_CHECK("the readers' default of " << k << " differs across the corpus: give its meaning line a default_text");
}

TEST_CASE("config reference: every key name in the readers' sources is in the reference") {
  // Keys in branches the corpus does not reach are not observed; their names in the source are.
  std::set<std::string> known;
  for (const auto& e : CorpusReference().Entries()) known.insert(e.key);
  const std::regex getter(R"re(\b(?:Get\w*|RequireString|Sub|TableArray)\("(\w+)")re");
  // The readers' helpers that take the table first: ReadPort(t, "control_port", ...), ReadVec3(t, "...").
  const std::regex helper(R"re(\bRead\w*\(\s*\*?\w+,\s*"(\w+)")re");
  size_t names = 0;
  for (const auto& file : ReaderSources()) {
    const std::string text = ReadWholeFile(file);
    REQUIRE_MESSAGE(!text.empty(), file << " is missing or empty (the list of reader sources is out of date)");
    for (const auto* re : {&getter, &helper})
      for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
        ++names;
        const std::string key = (*it)[1];
        if (!known.count(key))
          FAIL_CHECK(file << ": key \"" << key << "\" is read here but not in the reference: the corpus (configs/, "
                          "tests/data/config_tour/) never reaches its reader; add it to a tour file");
      }
  }
  CHECK(names > 200);  // the scan found the readers' keys at all
}

TEST_CASE("config reference: --explain finds a key by its full or bare name, and names close ones for a typo") {
  const auto& reference = CorpusReference();
  const auto full = reference.Find("server.control_port");
  REQUIRE(full.size() == 1);
  CHECK(full[0].type == "integer");
  CHECK(full[0].default_text == "7400");
  CHECK_FALSE(full[0].meaning.empty());
  const auto bare = reference.Find("control_port");
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].Name() == "server.control_port");
  const std::string text = KeyReference::Explain(bare[0]);
  CHECK(text.find("range:   [0, 65535]") != std::string::npos);
  // A sensor key of every kind: one entry per kind that reads it differently.
  CHECK(reference.Find("node.sensor.rate_hz").size() > 1);
  const auto close = reference.CloseNames("contrl_port");
  CHECK(std::find(close.begin(), close.end(), "server.control_port") != close.end());

  // The command: an unknown key exits 2 and names the close ones.
  auto c = platoon::process::Child::Spawn(
      {platoon::testing::BinDir() + "/platoon", "check", "--explain", "contrl_port"});
  const auto status = platoon::testing::RunToExit(c, std::chrono::seconds(60));
  CHECK(status == std::optional<int>(2));
  CHECK(platoon::testing::AnyLineContains(platoon::testing::Collect(c), "server.control_port"));
}
