#include "platoon/config/key_reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace platoon::config {
namespace {

namespace fs = std::filesystem;

// A bound as text: integral values without a fraction, others to 6 significant digits.
std::string BoundText(double v) {
  if (std::abs(v) < 1e15 && v == std::floor(v))
    return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.6g}", v);
}

// "[min, max]", ">= min", "<= max", the allowed values, or "" when the read has no limit.
std::string RangeOfRead(const KeyRead& r) {
  if (!r.allowed.empty()) {
    std::string out;
    for (const auto& a : r.allowed) out += (out.empty() ? "" : ", ") + ("\"" + a + "\"");
    return out;
  }
  if (r.min && r.max) return "[" + BoundText(*r.min) + ", " + BoundText(*r.max) + "]";
  if (r.min) return ">= " + BoundText(*r.min);
  if (r.max) return "<= " + BoundText(*r.max);
  return "";
}

std::string TypeOfRead(const KeyRead& r) {
  if (r.type == KeyType::kNumberArray && r.size > 0) return "array of " + std::to_string(r.size) + " numbers";
  return KeyTypeName(r.type);
}

// "a", "a or b", "a, b or c".
std::string JoinOr(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

template <typename T>
void AddUnique(std::vector<T>& v, const T& item) {
  if (std::find(v.begin(), v.end(), item) == v.end()) v.push_back(item);
}

std::string Unquoted(const std::string& s) {
  return s.size() >= 2 && s.front() == '"' && s.back() == '"' ? s.substr(1, s.size() - 2) : s;
}

const KeyMeaning* FindMeaning(ConfigFileKind kind, const std::string& name) {
  for (const auto& m : KeyMeanings())
    if (m.file == kind && name == m.name) return &m;
  return nullptr;
}

// Levenshtein distance, for the close matches of an unknown key.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Markdown table cell: pipes escaped.
std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string TableHeading(const KeyEntry& table_entry) {
  return table_entry.table_is_array ? "[[" + table_entry.Name() + "]]" : "[" + table_entry.Name() + "]";
}

}  // namespace

const char* ConfigFileKindName(ConfigFileKind kind) {
  switch (kind) {
    case ConfigFileKind::kSession: return "session file";
    case ConfigFileKind::kRoad: return "road file";
  }
  return "?";
}

std::string KeyUnit(const std::string& key) {
  // Longest suffix first: "_w_per_m2_nm" before "_m", "_mps2" before "_mps" before "_s".
  static const std::pair<const char*, const char*> kSuffixes[] = {
      {"_w_per_m2_nm", "W/(m² nm)"}, {"_per_mps", "1/(m/s)"}, {"_per_m", "1/m"}, {"_per_s", "1/s"},
      {"_mps2", "m/s²"},             {"_mps", "m/s"},         {"_kmh", "km/h"},   {"_1pm", "1/m"},
      {"_ppm", "ppm"},               {"_hz", "Hz"},           {"_fps", "Hz"},     {"_deg", "deg"},
      {"_mm", "mm"},                 {"_ms", "ms"},           {"_us", "µs"},      {"_px", "px"},
      {"_bytes", "bytes"},           {"_frames", "frames"},   {"_w", "W"},        {"_m", "m"},
      {"_s", "s"},
  };
  for (const auto& [suffix, unit] : kSuffixes) {
    const std::string s = suffix;
    if (key.size() > s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0) return unit;
  }
  return "";
}

std::vector<CorpusFile> ReferenceCorpus(const std::string& source_dir) {
  std::vector<CorpusFile> out;
  for (const char* folder : {"configs", "configs/roads", "tests/data/config_tour", "tests/data/config_tour/roads"}) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(source_dir) / folder, ec))
      if (e.is_regular_file() && e.path().extension() == ".toml") names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      CorpusFile f;
      f.name = std::string(folder) + "/" + n;
      f.path = (fs::path(source_dir) / folder / n).string();
      // What the file is: a batch plan ([batch]) is left out; a root [[road]] array makes a road file.
      try {
        const Table root = Table::ParseFile(f.path);
        if (root.Has("batch")) continue;
        if (root.Has("road")) {
          try {
            (void)root.Sub("road");
          } catch (const ConfigError&) {
            f.kind = ConfigFileKind::kRoad;
          }
        }
      } catch (const ConfigError&) {
        // Read as a session: the reader says what is wrong, as a corpus error.
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

void KeyReference::ReadFile(const CorpusFile& file, const std::function<void(const std::string& path)>& read) {
  current_ = &file;
  {
    ScopedKeyObserver observe(*this);
    try {
      read(file.path);
    } catch (const std::exception& e) {
      corpus_errors_.push_back(file.name + ": " + e.what());
    }
  }
  current_ = nullptr;
}

void KeyReference::OnKeyRead(const KeyRead& read) {
  if (current_ && read.file == current_->path) reads_.push_back(Read{read, current_->kind, current_->name});
}

std::vector<KeyEntry> KeyReference::Entries() const {
  // Reads by file kind and table pattern; per table, each instance's variant and whether a key that
  // shifts the defaults was given in it.
  struct Pattern {
    std::vector<const Read*> reads;
    std::map<std::string, std::string> variant_of;  // instance ("file\ttable") -> variant value
    std::set<std::string> shifted;                   // instances that give a default-shifting key
    std::vector<std::string> variants;               // variant values, in the variant key's allowed order
    std::string variant_key;                         // the VariantKeys key of this table; "" none
    std::string shift_key;                           // the DefaultShiftingKeys key of this table; "" none
  };
  std::map<std::pair<ConfigFileKind, std::string>, Pattern> patterns;
  auto instance_of = [](const Read& r) { return r.read.file + "\t" + r.read.table; };
  for (const auto& r : reads_) patterns[{r.kind, r.read.table_pattern}].reads.push_back(&r);
  for (auto& [id, p] : patterns) {
    std::string& variant_key = p.variant_key;
    std::string& shift_key = p.shift_key;
    for (const auto& [table, key] : VariantKeys())
      if (table == id.second) variant_key = key;
    for (const auto& [table, key] : DefaultShiftingKeys())
      if (table == id.second) shift_key = key;
    std::vector<std::string> allowed;
    for (const Read* r : p.reads) {
      if (!variant_key.empty() && r->read.key == variant_key && r->read.value) {
        p.variant_of[instance_of(*r)] = Unquoted(*r->read.value);
        for (const auto& a : r->read.allowed) AddUnique(allowed, a);
      }
      if (!shift_key.empty() && r->read.key == shift_key && r->read.value) p.shifted.insert(instance_of(*r));
    }
    std::set<std::string> seen;
    for (const auto& [instance, value] : p.variant_of) seen.insert(value);
    for (const auto& a : allowed)
      if (seen.count(a)) p.variants.push_back(a);
    for (const auto& v : seen) AddUnique(p.variants, v);
  }
  // Whether a table is an array of tables: its parent read it with TableArray.
  auto is_array = [&](ConfigFileKind kind, const std::string& pattern) {
    for (const auto& r : reads_)
      if (r.kind == kind && r.read.type == KeyType::kTableArray &&
          (r.read.table_pattern.empty() ? r.read.key : r.read.table_pattern + "." + r.read.key) == pattern)
        return true;
    return false;
  };

  // One entry from the reads of one (file kind, table, variant, key).
  auto merge = [&](ConfigFileKind kind, const std::string& table, const std::string& variant,
                   const std::vector<const Read*>& reads, const Pattern& p) {
    KeyEntry e;
    e.file = kind;
    e.table = table;
    e.table_is_array = is_array(kind, table);
    e.variant = variant;
    e.key = reads.front()->read.key;
    e.unit = KeyUnit(e.key);
    std::vector<std::string> types, ranges, fallbacks, all_fallbacks;
    for (const Read* r : reads) {
      AddUnique(types, TypeOfRead(r->read));
      e.is_table |= r->read.type == KeyType::kTable || r->read.type == KeyType::kTableArray;
      e.required |= r->read.required;
      if (const std::string range = RangeOfRead(r->read); !range.empty()) AddUnique(ranges, range);
      if (r->read.fallback) {
        AddUnique(all_fallbacks, *r->read.fallback);
        // A table that gives the shifting key read the others' defaults from it (the shifting key's own stays).
        if (r->read.key == p.shift_key || !p.shifted.count(instance_of(*r))) AddUnique(fallbacks, *r->read.fallback);
      }
      if (e.example.empty() && r->read.value && !r->read.value->empty()) {
        e.example = *r->read.value;
        e.example_file = r->corpus_name;
      }
    }
    if (fallbacks.empty()) fallbacks = all_fallbacks;
    e.type = JoinOr(types);
    e.range = ranges.size() == 1 ? ranges.front() : JoinOr(ranges);
    const KeyMeaning* m = FindMeaning(kind, e.Name());
    if (m) e.meaning = m->meaning;
    if (m && m->default_text) {
      e.default_text = m->default_text;
      e.default_in_words = true;
    } else if (!e.required && !e.is_table && !fallbacks.empty()) {
      e.default_text = fallbacks.front();
      if (fallbacks.size() > 1) {
        e.default_settled = false;
        e.default_text = "varies: " + JoinOr(fallbacks);
        e.default_in_words = true;
      }
    }
    return e;
  };
  auto signature = [](const KeyEntry& e) {
    return e.type + "\n" + (e.required ? "r" : "") + "\n" + e.default_text + "\n" + e.range;
  };

  // The entries of one table, then its sub-tables in the order they are read, depth first.
  std::vector<KeyEntry> out;
  std::set<std::pair<ConfigFileKind, std::string>> done;
  std::function<void(ConfigFileKind, const std::string&)> walk = [&](ConfigFileKind kind, const std::string& table) {
    if (!done.insert({kind, table}).second) return;
    const auto found = patterns.find({kind, table});
    if (found == patterns.end()) return;
    const Pattern& p = found->second;
    // Keys in the readers' order: each instance's keys in the order it read them, merged; a key only some
    // instances read (a branch) goes right after the key read before it.
    std::vector<std::string> instances;
    std::map<std::string, std::vector<std::string>> sequence;
    for (const Read* r : p.reads) {
      const std::string instance = instance_of(*r);
      if (!sequence.count(instance)) instances.push_back(instance);
      AddUnique(sequence[instance], r->read.key);
    }
    std::vector<std::string> keys;
    for (const auto& instance : instances) {
      auto at = keys.begin();
      for (const auto& key : sequence[instance]) {
        auto place = std::find(keys.begin(), keys.end(), key);
        if (place == keys.end()) place = keys.insert(at, key);
        at = place + 1;
      }
    }
    std::vector<std::string> sub_tables;
    std::vector<KeyEntry> common;
    std::map<std::string, std::vector<KeyEntry>> by_variant;
    for (const auto& key : keys) {
      std::vector<const Read*> reads;
      std::map<std::string, std::vector<const Read*>> per_variant;
      for (const Read* r : p.reads) {
        if (r->read.key != key) continue;
        reads.push_back(r);
        const auto v = p.variant_of.find(instance_of(*r));
        per_variant[v == p.variant_of.end() ? std::string() : v->second].push_back(r);
      }
      const KeyEntry all = merge(kind, table, "", reads, p);
      if (all.is_table) sub_tables.push_back(all.Name());
      // A key of a variant table is common when every variant reads it alike; else one entry per variant.
      bool alike = p.variants.empty() || per_variant.count("");
      std::vector<KeyEntry> parts;
      if (!alike) {
        alike = true;
        for (const auto& v : p.variants) {
          if (!per_variant.count(v)) {
            alike = false;
            continue;
          }
          parts.push_back(merge(kind, table, v, per_variant[v], p));
          if (signature(parts.back()) != signature(parts.front())) alike = false;
        }
      }
      if (alike) {
        common.push_back(all);
        continue;
      }
      for (auto& e : parts) {
        const std::string value = e.variant;
        e.variant = p.variant_key + " = \"" + value + "\"";
        by_variant[value].push_back(std::move(e));
      }
    }
    // Common keys first, then each variant's keys together, in the variant key's order.
    out.insert(out.end(), common.begin(), common.end());
    for (const auto& v : p.variants) out.insert(out.end(), by_variant[v].begin(), by_variant[v].end());
    for (const auto& t : sub_tables) walk(kind, t);
  };
  for (ConfigFileKind kind : {ConfigFileKind::kSession, ConfigFileKind::kRoad}) walk(kind, "");
  return out;
}

std::vector<KeyEntry> KeyReference::Find(const std::string& query) const {
  std::string q;
  for (char c : query)
    if (c != '[' && c != ']') q += c;
  const auto all = Entries();
  std::vector<KeyEntry> out;
  for (const auto& e : all)
    if (e.Name() == q) out.push_back(e);
  if (!out.empty()) return out;
  for (const auto& e : all)
    if (e.key == q) out.push_back(e);
  return out;
}

std::vector<std::string> KeyReference::CloseNames(const std::string& query, size_t count) const {
  std::map<std::string, size_t> score;
  for (const auto& e : Entries()) {
    const std::string name = e.Name();
    size_t s = std::min(EditDistance(query, name), EditDistance(query, e.key));
    // A query inside a name (or a name inside the query) is close whatever the distance.
    if (query.size() >= 3 && (name.find(query) != std::string::npos || query.find(e.key) != std::string::npos)) s = 1;
    const auto it = score.find(name);
    if (it == score.end() || s < it->second) score[name] = s;
  }
  const size_t limit = std::max<size_t>(2, query.size() / 3);
  std::vector<std::pair<size_t, std::string>> close;
  for (const auto& [name, s] : score)
    if (s <= limit) close.emplace_back(s, name);
  std::sort(close.begin(), close.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < close.size() && i < count; ++i) out.push_back(close[i].second);
  return out;
}

std::string KeyReference::Markdown(const std::string& example_text) const {
  std::string out(ReferenceIntro());
  out += "## A worked example\n\n";
  out += std::string("`") + kWorkedExamplePath + "` is a small session that uses most tables; `platoon check` "
         "accepts it as it stands.\n\n```toml\n" + example_text;
  if (!example_text.empty() && example_text.back() != '\n') out += '\n';
  out += "```\n\n";

  const auto entries = Entries();
  auto row = [](const KeyEntry& e) {
    std::string def = e.required ? "required" : e.default_in_words ? e.default_text
                                              : e.default_text.empty() ? "" : "`" + e.default_text + "`";
    std::string meaning = e.meaning.empty() ? "**no meaning line** (shared/src/config/key_meanings.cpp)" : e.meaning;
    return "| `" + Cell(e.key) + "` | " + Cell(e.type) + " | " + Cell(e.unit) + " | " + Cell(def) + " | " +
           Cell(e.range.empty() ? "" : e.range) + " | " + Cell(meaning) + " |\n";
  };
  const std::string header = "| Key | Type | Unit | Default | Range or values | Meaning |\n|---|---|---|---|---|---|\n";
  for (ConfigFileKind kind : {ConfigFileKind::kSession, ConfigFileKind::kRoad}) {
    out += std::string("## ") + (kind == ConfigFileKind::kSession ? "Session files" : "Road files") + "\n\n";
    std::string table = "\x01", variant;
    for (size_t i = 0; i < entries.size(); ++i) {
      const KeyEntry& e = entries[i];
      if (e.file != kind) continue;
      if (e.table != table) {
        table = e.table;
        variant.clear();
        if (table.empty()) {
          out += "### Top level\n\nThe tables of a " + std::string(ConfigFileKindName(kind)) + ".\n\n";
        } else {
          // The table's heading and, as its description, the meaning of the key that holds it.
          KeyEntry holder;
          holder.table_is_array = e.table_is_array;
          holder.key = table;
          std::string description;
          for (const auto& h : entries)
            if (h.file == kind && h.is_table && h.Name() == table) description = h.meaning;
          out += "### " + TableHeading(holder) + "\n\n" + (description.empty() ? "" : description + "\n\n");
        }
        out += header;
      }
      if (e.variant != variant) {
        variant = e.variant;
        KeyEntry holder;
        holder.table_is_array = e.table_is_array;
        holder.key = table;
        out += "\n#### " + TableHeading(holder) + " with " + variant + "\n\n" + header;
      }
      out += row(e);
      const bool last_of_table =
          i + 1 == entries.size() || entries[i + 1].file != kind || entries[i + 1].table != table;
      if (last_of_table) out += "\n";
    }
  }
  return out;
}

std::string KeyReference::Explain(const KeyEntry& e) {
  KeyEntry holder;
  holder.table_is_array = e.table_is_array;
  holder.key = e.table;
  std::string out = e.Name() + "  (" + ConfigFileKindName(e.file) +
                    (e.table.empty() ? std::string(", top level") : ", " + TableHeading(holder)) +
                    (e.variant.empty() ? "" : " with " + e.variant) + ")\n";
  out += "  type:    " + e.type + "\n";
  const std::string meaning = "  meaning: " + (e.meaning.empty() ? std::string("(no meaning line)") : e.meaning) + "\n";
  if (e.is_table) return out + meaning;  // its keys are the table's own entries
  out += "  unit:    " + (e.unit.empty() ? std::string("-") : e.unit) + "\n";
  out += "  range:   " + (e.range.empty() ? std::string("any") : e.range) + "\n";
  const std::string def = e.required ? "none: required" : e.default_text.empty() ? "-" : e.default_text;
  out += "  default: " + def + "\n";
  out += meaning;
  if (!e.example.empty())
    out += "  example: " + e.key + " = " + e.example + "    # " + e.example_file + "\n";
  else if (!e.default_text.empty() && !e.default_in_words)
    out += "  example: " + e.key + " = " + e.default_text + "    # the default\n";
  return out;
}

std::vector<std::string> KeyReference::MissingMeanings() const {
  std::vector<std::string> out;
  for (const auto& e : Entries())
    if (e.meaning.empty()) AddUnique(out, std::string(ConfigFileKindName(e.file)) + ": " + e.Name());
  return out;
}

std::vector<std::string> KeyReference::UnusedMeanings() const {
  std::set<std::pair<ConfigFileKind, std::string>> read;
  for (const auto& e : Entries()) read.insert({e.file, e.Name()});
  std::vector<std::string> out;
  for (const auto& m : KeyMeanings())
    if (!read.count({m.file, m.name})) out.push_back(std::string(ConfigFileKindName(m.file)) + ": " + m.name);
  return out;
}

std::vector<std::string> KeyReference::UnsettledDefaults() const {
  std::vector<std::string> out;
  for (const auto& e : Entries())
    if (!e.default_settled)
      out.push_back(std::string(ConfigFileKindName(e.file)) + ": " + e.Name() +
                    (e.variant.empty() ? "" : " (" + e.variant + ")") + ": " + e.default_text);
  return out;
}

}  // namespace platoon::config
