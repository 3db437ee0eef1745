#pragma once
/// Reading TOML configs with errors a human can act on: every error names the file, the line,
/// the key and what was expected ("demo.toml:14: clock.max_slew_ppm: expected a number > 0, got -5").
/// Unknown keys are errors too, so a typo never silently falls back to a default.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::config {

/// A config error; what() is the full message with file and line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Largest config file ParseFile reads (session and road files), in bytes.
inline constexpr long kMaxConfigBytes = 16L << 20;

/// The kind of value a getter of Table reads.
enum class KeyType : uint8_t {
  kNumber,       ///< GetDouble (integer literals accepted).
  kInteger,      ///< GetInt.
  kBoolean,      ///< GetBool.
  kString,       ///< GetString, RequireString.
  kNumberArray,  ///< GetDoubleArray.
  kStringArray,  ///< GetStringArray.
  kTable,        ///< Sub: a [table].
  kTableArray,   ///< TableArray: an [[array of tables]].
};

/// "number", "integer", "boolean", "string", "array of numbers", "array of strings", "table",
/// "array of tables".
const char* KeyTypeName(KeyType type);

/// One getter call as a KeyObserver sees it: what the reader asked for and what the file holds.
struct KeyRead {
  std::string file;                     ///< The file the table came from.
  std::string table;                    ///< Path of the table with its array indices, "node[3].sensor[1]"; "" the root.
  std::string table_pattern;            ///< The same without indices, "node.sensor" (TablePattern).
  std::string key;                      ///< The key asked for.
  KeyType type = KeyType::kString;      ///< What the getter reads.
  bool required = false;                ///< RequireString: an absent key is an error.
  std::optional<std::string> fallback;  ///< The reader's default as TOML text: 7400, "info" (quoted), [0, 0, 0]; nullopt: none.
  std::optional<double> min;            ///< Lower bound, when the reader gave one (not -1e300 or INT64_MIN).
  std::optional<double> max;            ///< Upper bound, when the reader gave one (not 1e300 or INT64_MAX).
  size_t size = 0;                      ///< Arrays of numbers: exactly this many (0: any number).
  std::vector<std::string> allowed;     ///< Strings: the values allowed (empty: any).
  std::optional<std::string> value;     ///< The value in the file as TOML text ("" for tables); nullopt: absent.
};

/// Sees every getter call of every Table on this thread while installed (ScopedKeyObserver). The session
/// key reference (key_reference.hpp) is built this way, from the readers themselves.
class KeyObserver {
 public:
  virtual ~KeyObserver() = default;
  /// Called by each getter before it checks the value, so a read that then fails is seen too.
  virtual void OnKeyRead(const KeyRead& read) = 0;
};

/// Installs `observer` for this thread for the object's lifetime, then restores the previous one. Without
/// an observer a getter pays one thread-local load.
class ScopedKeyObserver {
 public:
  explicit ScopedKeyObserver(KeyObserver& observer);
  ~ScopedKeyObserver();
  ScopedKeyObserver(const ScopedKeyObserver&) = delete;
  ScopedKeyObserver& operator=(const ScopedKeyObserver&) = delete;

 private:
  KeyObserver* previous_;
};

/// A table path without its array indices: "node[3].sensor[1]" -> "node.sensor".
std::string TablePattern(const std::string& path);

/// One TOML table of a parsed file. Cheap to copy; keeps the document alive.
class Table {
 public:
  /// Parses a file; throws ConfigError with file:line:column on a syntax error, and "path: not a regular file",
  /// a too-large file (over kMaxConfigBytes) or a missing or unreadable file without ever blocking.
  static Table ParseFile(const std::string& path);
  /// Parses text; `source_name` stands in for the file name in messages.
  static Table ParseText(const std::string& text, const std::string& source_name);

  /// Optional number (integer literals accepted), checked against [min, max].
  double GetDouble(const std::string& key, double fallback, double min = -1e300, double max = 1e300) const;
  /// Optional integer, checked against [min, max].
  int64_t GetInt(const std::string& key, int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  /// Optional boolean.
  bool GetBool(const std::string& key, bool fallback) const;
  /// Optional string; when `allowed` is non-empty the value must be one of them.
  std::string GetString(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& allowed = {}) const;
  /// Required string.
  std::string RequireString(const std::string& key, const std::vector<std::string>& allowed = {}) const;

  /// Optional array of numbers; `size` > 0 requires exactly that many; each checked against [min, max].
  std::vector<double> GetDoubleArray(const std::string& key, const std::vector<double>& fallback, size_t size = 0,
                                     double min = -1e300, double max = 1e300) const;
  /// Optional array of strings.
  std::vector<std::string> GetStringArray(const std::string& key, const std::vector<std::string>& fallback) const;

  /// Whether the key is present.
  bool Has(const std::string& key) const;
  /// Sub-table, if present (error if present but not a table).
  std::optional<Table> Sub(const std::string& key) const;
  /// Array of tables ([[key]]); empty if absent.
  std::vector<Table> TableArray(const std::string& key) const;

  /// Throws on any key of this table that no getter asked for ("unknown key").
  void RejectUnknownKeys() const;

  /// "file:line" of the table itself, or of `key` within it when present.
  std::string Where(const std::string& key = {}) const;
  /// Dotted path of this table, e.g. "node[1]".
  const std::string& Path() const { return path_; }
  /// The file this table came from.
  const std::string& File() const { return file_; }

  /// Throws ConfigError "file:line: path.key: message".
  [[noreturn]] void Fail(const std::string& key, const std::string& message) const;

 private:
  struct Doc;
  Table(std::shared_ptr<Doc> doc, const void* table, std::string file, std::string path);
  const void* Node(const std::string& key) const;
  // GetString's reading and checks of `node` (a toml::node*, null when absent), without reporting the read.
  std::string ReadString(const std::string& key, const void* node, const std::string& fallback,
                         const std::vector<std::string>& allowed) const;
  std::string KeyPath(const std::string& key) const;

  std::shared_ptr<Doc> doc_;
  const void* table_;  // toml::table*, owned by doc_
  std::string file_;
  std::string path_;
  std::shared_ptr<std::vector<std::string>> used_;
};

}  // namespace platoon::config
