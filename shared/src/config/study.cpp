// The study file (platoon study): participants, blocks with their sessions and condition parameters, and
// the counterbalanced order of the blocks per participant. docs/STUDIES.md.
#include "platoon/config/study.hpp"

#include "platoon/config/table.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace platoon::config {
namespace study_detail {

namespace fs = std::filesystem;

constexpr int64_t kMaxParticipants = 9999;
constexpr size_t kMaxBlocks = 64;
constexpr size_t kMaxIdBytes = 64;

// Ids become folder names and CSV fields: letters, digits, '_' and '-' only.
bool IsId(const std::string& s) {
  if (s.empty() || s.size() > kMaxIdBytes) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; });
}

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The condition parameters under `node` (a [study.block.params] table) as session paths: nested tables (dotted
// keys written unquoted) are walked, "a.b.c" = 1 written quoted is taken as it is.
void CollectParams(const toml::table& node, const std::string& prefix, const Table& block, const std::string& file,
                   std::vector<std::pair<uint64_t, StudyParam>>& out) {
  for (const auto& [key, value] : node) {
    const std::string path = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    const auto line = value.source().begin.line;
    const std::string where = fmt::format("{}:{}: {}.params.{}", file, line, block.Path(), path);
    if (const auto* sub = value.as_table()) {
      CollectParams(*sub, path, block, file, out);
      continue;
    }
    StudyParam p;
    p.path = path;
    p.where = where;
    if (auto v = value.value_exact<int64_t>()) p.value = *v;
    else if (auto d = value.value_exact<double>()) p.value = *d;
    else if (auto b = value.value_exact<bool>()) p.value = *b;
    else if (auto s = value.value_exact<std::string>()) p.value = *s;
    else throw ConfigError(where + ": expected a number, string or boolean (a session value), got an array or a date");
    if (path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
      throw ConfigError(where + ": expected a session path such as node.<name>.<key> or road.seed, got \"" + path + "\"");
    const std::string head = path.substr(0, path.find('.'));
    if ((head == "node" || head == "event") && std::count(path.begin(), path.end(), '.') < 2)
      throw ConfigError(where + ": expected " + head + ".<name>.<key>, got \"" + path + "\"");
    for (const auto& [earlier_line, earlier] : out)
      if (earlier.path == path) throw ConfigError(where + ": \"" + path + "\" is set twice (also " + earlier.where + ")");
    out.emplace_back(line, std::move(p));
  }
}

}  // namespace study_detail

std::string StudyValueText(const StudyValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

StudyDef LoadStudy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > static_cast<size_t>(kMaxConfigBytes))
    throw ConfigError(fmt::format("{}: expected a study file of at most {} bytes, got {}", path, kMaxConfigBytes, ss.str().size()));
  return LoadStudyText(ss.str(), path);
}

StudyDef LoadStudyText(const std::string& text, const std::string& source_name) {
  using namespace study_detail;
  StudyDef s;
  s.file = source_name;
  const auto root = Table::ParseText(text, source_name);
  toml::table raw;
  try {
    raw = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw ConfigError(e.what());
  }
  const auto st = root.Sub("study");
  if (!st) throw ConfigError(source_name + ":1: expected a [study] table (with participants and [[study.block]]), got none");
  const fs::path dir = fs::absolute(fs::path(source_name)).parent_path();

  // [study]: name, seed, out, order, participants.
  s.name = st->GetString("name", fs::path(source_name).stem().string());
  if (!IsId(s.name)) st->Fail("name", "expected letters, digits, '_' or '-' (1 to 64), got \"" + s.name + "\"");
  s.seed = static_cast<uint64_t>(st->GetInt("seed", 1, 0));
  s.out = st->GetString("out", "studies/" + s.name);
  if (s.out.empty()) st->Fail("out", "expected an output folder, got \"\"");
  const std::string order = st->GetString("order", "latin", {"latin", "random", "fixed"});
  s.order = order == "latin" ? StudyOrder::kLatin : order == "random" ? StudyOrder::kRandom : StudyOrder::kFixed;
  s.timeout_s = st->GetDouble("timeout_s", s.timeout_s, 1, 1e6);
  const double duration_s = st->GetDouble("duration_s", 60, 0.01, 1e6);
  const toml::node* participants = raw["study"]["participants"].node();
  if (!participants) st->Fail("participants", "expected a number of participants (4: P01..P04) or their ids ([\"P01\", \"P02\"]), got none");
  if (participants->is_integer()) {
    const int64_t n = st->GetInt("participants", 1, 1, kMaxParticipants);
    const int width = n >= 1000 ? 4 : n >= 100 ? 3 : 2;
    for (int64_t i = 1; i <= n; ++i) s.participants.push_back(fmt::format("P{:0{}d}", i, width));
  } else if (participants->is_array()) {
    s.participants = st->GetStringArray("participants", {});
    if (s.participants.empty()) st->Fail("participants", "expected at least one participant id, got []");
    std::set<std::string> seen;
    for (const auto& id : s.participants) {
      if (!IsId(id)) st->Fail("participants", "expected ids of letters, digits, '_' or '-' (1 to 64), got \"" + id + "\"");
      if (!seen.insert(id).second) st->Fail("participants", "expected distinct ids, got \"" + id + "\" twice");
    }
  } else {
    st->Fail("participants", "expected a number of participants (4: P01..P04) or an array of ids ([\"P01\", \"P02\"]), got " +
                                 std::string(participants->is_string() ? "a string" : participants->is_table() ? "a table" : "another kind of value"));
  }

  // [[study.block]].
  const auto blocks = st->TableArray("block");
  if (blocks.empty()) st->Fail("block", "expected at least one [[study.block]] (name, session), got none");
  if (blocks.size() > kMaxBlocks) st->Fail("block", fmt::format("expected at most {} blocks, got {}", kMaxBlocks, blocks.size()));
  const auto* raw_blocks = raw["study"]["block"].as_array();
  std::set<std::string> names;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Table& b = blocks[i];
    StudyBlock block;
    block.where = b.Where() + ": " + b.Path();
    block.name = b.RequireString("name");
    if (!IsId(block.name)) b.Fail("name", "expected letters, digits, '_' or '-' (1 to 64), got \"" + block.name + "\"");
    if (!names.insert(block.name).second) b.Fail("name", "expected a name no other block has, got \"" + block.name + "\" again");
    const std::string session = b.RequireString("session");
    fs::path sp = fs::path(session).is_absolute() ? fs::path(session) : dir / session;
    sp = sp.lexically_normal();
    if (!fs::is_regular_file(sp)) b.Fail("session", "expected a session file, got \"" + session + "\" (no file " + sp.string() + ")");
    block.session = sp.string();
    block.condition = b.GetString("condition", "");
    if (block.condition.find_first_of("\n\r") != std::string::npos) b.Fail("condition", "expected one line of text");
    block.practice = b.GetBool("practice", false);
    block.duration_s = b.GetDouble("duration_s", duration_s, 0.01, 1e6);
    block.event_marker = b.GetString("event_marker", "");
    if (const auto params = b.Sub("params")) {
      const auto* raw_params = (*(*raw_blocks)[i].as_table())["params"].as_table();
      // toml++ keeps keys sorted: the file's order back from the lines.
      std::vector<std::pair<uint64_t, StudyParam>> by_line;
      CollectParams(*raw_params, "", b, source_name, by_line);
      std::stable_sort(by_line.begin(), by_line.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (auto& [line, param] : by_line) block.params.push_back(std::move(param));
    }
    b.RejectUnknownKeys();
    s.blocks.push_back(std::move(block));
  }
  if (std::all_of(s.blocks.begin(), s.blocks.end(), [](const StudyBlock& b) { return b.practice; }))
    st->Fail("block", "expected at least one block that is not practice, got only practice blocks");
  st->RejectUnknownKeys();
  root.RejectUnknownKeys();
  return s;
}

std::vector<std::vector<int>> BalancedLatinSquare(int n) {
  if (n < 1) return {};
  // First row 0, 1, n-1, 2, n-2, ...; row r adds r to each entry (mod n).
  std::vector<int> first(static_cast<size_t>(n));
  for (int j = 1; j < n; ++j) first[static_cast<size_t>(j)] = j % 2 == 1 ? (j + 1) / 2 : n - j / 2;
  std::vector<std::vector<int>> rows;
  for (int r = 0; r < n; ++r) {
    std::vector<int> row;
    for (int j = 0; j < n; ++j) row.push_back((first[static_cast<size_t>(j)] + r) % n);
    rows.push_back(std::move(row));
  }
  // Odd n: the mirror images balance the carry-over (each ordered pair adjacent once more).
  if (n % 2 == 1)
    for (int r = 0; r < n; ++r) rows.emplace_back(rows[static_cast<size_t>(r)].rbegin(), rows[static_cast<size_t>(r)].rend());
  return rows;
}

std::vector<size_t> StudyBlockOrder(const StudyDef& study, size_t participant_index) {
  std::vector<size_t> order, main;
  for (size_t i = 0; i < study.blocks.size(); ++i) (study.blocks[i].practice ? order : main).push_back(i);
  const int n = static_cast<int>(main.size());
  switch (study.order) {
    case StudyOrder::kFixed:
      order.insert(order.end(), main.begin(), main.end());
      break;
    case StudyOrder::kLatin: {
      const auto rows = BalancedLatinSquare(n);
      for (int k : rows[participant_index % rows.size()]) order.push_back(main[static_cast<size_t>(k)]);
      break;
    }
    case StudyOrder::kRandom: {
      // Fisher-Yates from splitmix64 seeded by the study seed and the participant's index.
      uint64_t state = study_detail::Mix(study_detail::Mix(study.seed) ^ static_cast<uint64_t>(participant_index));
      for (int i = n - 1; i > 0; --i) {
        state += 0x9e3779b97f4a7c15ull;
        const auto j = static_cast<size_t>(study_detail::Mix(state) % static_cast<uint64_t>(i + 1));
        std::swap(main[static_cast<size_t>(i)], main[j]);
      }
      order.insert(order.end(), main.begin(), main.end());
      break;
    }
  }
  return order;
}

std::string StudyBlockFolder(size_t position, const std::string& block_name) {
  return fmt::format("{:02d}_{}", position, block_name);
}

}  // namespace platoon::config
