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
  std::string KeyPath(const std::string& key) const;

  std::shared_ptr<Doc> doc_;
  const void* table_;  // toml::table*, owned by doc_
  std::string file_;
  std::string path_;
  std::shared_ptr<std::vector<std::string>> used_;
};

}  // namespace platoon::config
