#pragma once
/// The reference of every key a session file (and a road file) can hold, generated from the readers
/// themselves: the readers run over a corpus of files with a KeyObserver installed (table.hpp), and every
/// getter call says which table, key, type, default, range and allowed values it reads. The meaning of
/// each key is one hand-written line (key_meanings.cpp). `platoon check --reference` prints the result as
/// Markdown (docs/CONFIG.md); `platoon check --explain KEY` prints one entry.
///
/// The readers of sensors, fusion and input live in higher layers: whoever builds the reference hands
/// them in as the function that reads one file.

#include "platoon/config/table.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::config {

/// The kinds of file whose keys the reference lists.
enum class ConfigFileKind : uint8_t {
  kSession,  ///< A session file (configs/*.toml): [session], [server], [[node]], ...
  kRoad,     ///< A road file (configs/roads/*.toml): [[road]] with [[road.section]].
};

/// "session file" or "road file".
const char* ConfigFileKindName(ConfigFileKind kind);

/// The hand-written line of one key: what the reader does with it.
struct KeyMeaning {
  ConfigFileKind file;        ///< The kind of file the key is in.
  const char* name;           ///< Table pattern and key, "server.control_port" ("session" for a root key).
  const char* meaning;        ///< One line: what the key does, for the reference and --explain.
  /// The default in words, where the reader's fallback depends on other keys or on the file
  /// ("control_port + 1", "from the id"); nullptr: the fallback the reader passes.
  const char* default_text = nullptr;
};

/// Every meaning line (key_meanings.cpp).
const std::vector<KeyMeaning>& KeyMeanings();

/// Tables whose keys depend on one key's value (a sensor's `type`, an action's `action`): the reference
/// lists the keys of each value apart. Pairs of table pattern and key.
const std::vector<std::pair<std::string, std::string>>& VariantKeys();

/// Keys that change the defaults of the other keys of their table (a lidar's `preset`): a table that
/// gives one is left out when the default of the others is taken. Pairs of table pattern and key.
const std::vector<std::pair<std::string, std::string>>& DefaultShiftingKeys();

/// The hand-written text at the top of the reference (Markdown, ends with a blank line).
std::string_view ReferenceIntro();

/// The worked example session, relative to the source tree; the reference prints it whole.
inline constexpr const char* kWorkedExamplePath = "tests/data/config_tour/worked_example.toml";

/// One file of the corpus the readers run over.
struct CorpusFile {
  ConfigFileKind kind = ConfigFileKind::kSession;
  std::string path;           ///< Path to open.
  std::string name;           ///< Path relative to the source tree, for messages ("configs/demo.toml").
};

/// The corpus under `source_dir`: configs/*.toml (batch plans, with a [batch] table, left out),
/// configs/roads/*.toml and tests/data/config_tour/*.toml (plus its roads/*.toml), sorted by name within
/// each folder. A file whose root [road] is an array of tables is a road file.
std::vector<CorpusFile> ReferenceCorpus(const std::string& source_dir);

/// The unit a key's name ends in ("_mps" -> "m/s", "_hz" -> "Hz"); "" when it names none.
std::string KeyUnit(const std::string& key);

/// One key of the reference: every read of (file kind, table, variant, key) in the corpus, merged.
struct KeyEntry {
  ConfigFileKind file = ConfigFileKind::kSession;
  std::string table;            ///< Table pattern, "node.sensor"; "" the root.
  bool table_is_array = false;  ///< The table is an [[array of tables]] (or an element of one).
  std::string variant;          ///< "type = \"lidar\"" when the key belongs to one value of VariantKeys; "" all.
  std::string key;
  std::string type;             ///< "number", "array of 3 numbers", "string, number or boolean", ...
  bool is_table = false;        ///< The key is a table or an array of tables.
  bool required = false;
  std::string default_text;     ///< As TOML text, or the meaning line's default_text; "" for tables and required keys.
  bool default_in_words = false;  ///< default_text is words (a meaning line's default_text), not TOML text.
  bool default_settled = true;  ///< false: the readers' fallbacks differ across the corpus and no default_text says why.
  std::string range;            ///< "[0, 65535]", ">= 1", "\"freeze\", \"remove\"", or "".
  std::string unit;             ///< From the key's suffix; "" none.
  std::string meaning;          ///< The hand-written line; "" when there is none.
  std::string example;          ///< The first value the corpus gives it, as TOML text; "" none.
  std::string example_file;     ///< The corpus file of the example.
  /// "server.control_port": table pattern and key.
  std::string Name() const { return table.empty() ? key : table + "." + key; }
};

/// The catalog: install it as the observer while the readers read, then ask for the merged entries.
class KeyReference : public KeyObserver {
 public:
  /// Reads one corpus file with `read` (which runs the readers of its kind), recording every key read
  /// from that file (reads of other files it opens, such as a session's road file, are left to their
  /// own corpus entry). A ConfigError is kept as a corpus error: the file stops being read there.
  void ReadFile(const CorpusFile& file, const std::function<void(const std::string& path)>& read);

  /// Keeps a read of the file ReadFile is reading; reads of other files are dropped.
  void OnKeyRead(const KeyRead& read) override;

  /// The merged entries, in the order of the tables and of the readers' reads.
  std::vector<KeyEntry> Entries() const;
  /// The entries named by `query`: "server.control_port", or a bare key that one table has
  /// ("control_port"); every variant and file kind of that name. Empty when none.
  std::vector<KeyEntry> Find(const std::string& query) const;
  /// Names close to `query` (edit distance, shared parts), best first, at most `count`.
  std::vector<std::string> CloseNames(const std::string& query, size_t count = 5) const;

  /// The whole reference as Markdown: the intro, the worked example (`example_text`), then a section per
  /// file kind and a table per config table.
  std::string Markdown(const std::string& example_text) const;
  /// One entry as plain text for --explain: type, unit, range, default, meaning and an example.
  static std::string Explain(const KeyEntry& entry);

  /// "file: message" of each corpus file that failed to read.
  const std::vector<std::string>& CorpusErrors() const { return corpus_errors_; }
  /// Names of keys the readers read that have no meaning line.
  std::vector<std::string> MissingMeanings() const;
  /// Meaning lines whose name no reader read.
  std::vector<std::string> UnusedMeanings() const;
  /// Keys whose default depends on the file, without a default_text in their meaning line.
  std::vector<std::string> UnsettledDefaults() const;

 private:
  struct Read {
    KeyRead read;
    ConfigFileKind kind;
    std::string corpus_name;  // the corpus file's name
  };
  std::vector<Read> reads_;
  std::vector<std::string> corpus_errors_;
  const CorpusFile* current_ = nullptr;  // the file ReadFile is reading
};

}  // namespace platoon::config
