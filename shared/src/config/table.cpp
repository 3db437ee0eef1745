#include "platoon/config/table.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <sstream>

namespace platoon::config {

struct Table::Doc {
  toml::table root;
};

namespace {
const toml::table& T(const void* p) { return *static_cast<const toml::table*>(p); }

// The observer of this thread (ScopedKeyObserver); null almost always.
thread_local KeyObserver* g_key_observer = nullptr;

// A reader's default as TOML text: integral values without a fraction, others to 5 significant digits (a
// default in degrees converted from radians reads 0.25, not 0.249999).
std::string TomlNumberText(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.5g}", v);
}

std::string TomlQuotedText(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A value of the file as TOML text, for the observer.
std::string TomlValueText(const toml::node& n) {
  if (n.is_string()) return TomlQuotedText(n.value_or(std::string{}));
  if (n.is_integer()) return std::to_string(n.value_or<int64_t>(0));
  if (n.is_floating_point()) return fmt::format("{}", n.value_or(0.0));
  if (n.is_boolean()) return n.value_or(false) ? "true" : "false";
  if (const auto* arr = n.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < arr->size(); ++i) out += (i ? ", " : "") + TomlValueText((*arr)[i]);
    return out + "]";
  }
  return "";
}

// Reports one getter call to the thread's observer; `read` carries what the getter was asked.
void ReportKeyRead(const Table& t, const std::string& key, const toml::node* n, KeyRead read) {
  read.file = t.File();
  read.table = t.Path();
  read.table_pattern = TablePattern(t.Path());
  read.key = key;
  const bool table = read.type == KeyType::kTable || read.type == KeyType::kTableArray;
  if (n) read.value = table ? std::string() : TomlValueText(*n);
  g_key_observer->OnKeyRead(read);
}

std::optional<double> DoubleBound(double v, double sentinel) {
  return v == sentinel ? std::nullopt : std::optional<double>(v);
}

std::optional<double> IntBound(int64_t v, int64_t sentinel) {
  return v == sentinel ? std::nullopt : std::optional<double>(static_cast<double>(v));
}

std::string Describe(const toml::node& n) {
  std::ostringstream os;
  if (n.is_string()) os << '"' << n.value_or(std::string{}) << '"';
  else if (n.is_table()) os << "a table";
  else if (n.is_array()) os << "an array";
  else if (n.is_integer()) os << n.value_or<int64_t>(0);
  else if (n.is_floating_point()) os << n.value_or(0.0);
  else if (n.is_boolean()) os << (n.value_or(false) ? "true" : "false");
  else os << "a " << n.type();
  return os.str();
}
}  // namespace

const char* KeyTypeName(KeyType type) {
  switch (type) {
    case KeyType::kNumber: return "number";
    case KeyType::kInteger: return "integer";
    case KeyType::kBoolean: return "boolean";
    case KeyType::kString: return "string";
    case KeyType::kNumberArray: return "array of numbers";
    case KeyType::kStringArray: return "array of strings";
    case KeyType::kTable: return "table";
    case KeyType::kTableArray: return "array of tables";
  }
  return "?";
}

ScopedKeyObserver::ScopedKeyObserver(KeyObserver& observer) : previous_(g_key_observer) { g_key_observer = &observer; }

ScopedKeyObserver::~ScopedKeyObserver() { g_key_observer = previous_; }

std::string TablePattern(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    // "[<digits>]" is an index into an array of tables: dropped.
    if (path[i] == '[') {
      size_t j = i + 1;
      while (j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) ++j;
      if (j > i + 1 && j < path.size() && path[j] == ']') {
        i = j;
        continue;
      }
    }
    out += path[i];
  }
  return out;
}

Table::Table(std::shared_ptr<Doc> doc, const void* table, std::string file, std::string path)
    : doc_(std::move(doc)), table_(table), file_(std::move(file)), path_(std::move(path)),
      used_(std::make_shared<std::vector<std::string>>()) {}

Table Table::ParseText(const std::string& text, const std::string& source_name) {
  auto doc = std::make_shared<Doc>();
  try {
    doc->root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << source_name << ":" << e.source().begin.line << ":" << e.source().begin.column << ": TOML syntax error: "
       << e.description();
    throw ConfigError(os.str());
  }
  const void* root = &doc->root;
  return Table(std::move(doc), root, source_name, "");
}

namespace {

// The whole file, or a ConfigError. Only a regular file of at most kMaxConfigBytes is read: a FIFO would
// block forever and /dev/zero would never end. The checks are made on the opened descriptor (fstat), so
// a path swapped between a check and the open cannot slip through; O_NONBLOCK keeps open() itself from
// waiting for a FIFO's writer.
std::string ReadConfigFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st{};
  if (fstat(fd, &st) != 0) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw ConfigError(path + ": not a regular file");
  if (st.st_size > kMaxConfigBytes)
    throw ConfigError(path + ": " + std::to_string(st.st_size) + " bytes is too large for a config file (at most " +
                      std::to_string(kMaxConfigBytes >> 20) + " MiB)");
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // A file that grows while it is read is held to the same bound.
    if (text.size() > static_cast<size_t>(kMaxConfigBytes))
      throw ConfigError(path + ": more than " + std::to_string(kMaxConfigBytes >> 20) + " MiB: too large for a config file");
  }
  return text;
}

}  // namespace

Table Table::ParseFile(const std::string& path) {
  auto doc = std::make_shared<Doc>();
  const std::string text = ReadConfigFile(path);
  try {
    doc->root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    const auto& src = e.source();
    if (src.begin.line == 0)
      os << path << ": cannot read config file: " << e.description();
    else
      os << path << ":" << src.begin.line << ":" << src.begin.column << ": TOML syntax error: " << e.description();
    throw ConfigError(os.str());
  }
  const void* root = &doc->root;
  return Table(std::move(doc), root, path, "");
}

const void* Table::Node(const std::string& key) const {
  used_->push_back(key);
  return T(table_).get(key);
}

std::string Table::KeyPath(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

std::string Table::Where(const std::string& key) const {
  const toml::node* n = key.empty() ? static_cast<const toml::node*>(&T(table_)) : T(table_).get(key);
  const auto line = n ? n->source().begin.line : T(table_).source().begin.line;
  return file_ + ":" + std::to_string(line == 0 ? 1 : line);
}

void Table::Fail(const std::string& key, const std::string& message) const {
  throw ConfigError(Where(key) + ": " + KeyPath(key) + ": " + message);
}

bool Table::Has(const std::string& key) const { return T(table_).contains(key); }

double Table::GetDouble(const std::string& key, double fallback, double min, double max) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kNumber;
    r.fallback = TomlNumberText(fallback);
    r.min = DoubleBound(min, -1e300);
    r.max = DoubleBound(max, 1e300);
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return fallback;
  double v = 0;
  if (auto f = n->value_exact<double>()) v = *f;
  else if (auto i = n->value_exact<int64_t>()) v = static_cast<double>(*i);
  else Fail(key, "expected a number, got " + Describe(*n));
  if (!(v >= min && v <= max)) {
    std::ostringstream os;
    os << "expected a number in [" << min << ", " << max << "], got " << v;
    Fail(key, os.str());
  }
  return v;
}

int64_t Table::GetInt(const std::string& key, int64_t fallback, int64_t min, int64_t max) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kInteger;
    r.fallback = std::to_string(fallback);
    r.min = IntBound(min, INT64_MIN);
    r.max = IntBound(max, INT64_MAX);
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return fallback;
  auto i = n->value_exact<int64_t>();
  if (!i) Fail(key, "expected an integer, got " + Describe(*n));
  if (*i < min || *i > max)
    Fail(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(*i));
  return *i;
}

bool Table::GetBool(const std::string& key, bool fallback) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kBoolean;
    r.fallback = fallback ? "true" : "false";
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return fallback;
  auto b = n->value_exact<bool>();
  if (!b) Fail(key, "expected true or false, got " + Describe(*n));
  return *b;
}

std::string Table::GetString(const std::string& key, const std::string& fallback,
                             const std::vector<std::string>& allowed) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kString;
    r.fallback = TomlQuotedText(fallback);
    r.allowed = allowed;
    ReportKeyRead(*this, key, n, std::move(r));
  }
  return ReadString(key, n, fallback, allowed);
}

std::string Table::ReadString(const std::string& key, const void* node, const std::string& fallback,
                              const std::vector<std::string>& allowed) const {
  const auto* n = static_cast<const toml::node*>(node);
  if (!n) return fallback;
  auto s = n->value_exact<std::string>();
  if (!s) Fail(key, "expected a string, got " + Describe(*n));
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
    Fail(key, "expected one of " + list + ", got \"" + *s + "\"");
  }
  return *s;
}

std::string Table::RequireString(const std::string& key, const std::vector<std::string>& allowed) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kString;
    r.required = true;
    r.allowed = allowed;
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) Fail(key, "is required (a string)");
  return ReadString(key, n, {}, allowed);
}

std::vector<double> Table::GetDoubleArray(const std::string& key, const std::vector<double>& fallback, size_t size,
                                          double min, double max) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kNumberArray;
    std::string text = "[";
    for (size_t i = 0; i < fallback.size(); ++i) text += (i ? ", " : "") + TomlNumberText(fallback[i]);
    r.fallback = text + "]";
    r.min = DoubleBound(min, -1e300);
    r.max = DoubleBound(max, 1e300);
    r.size = size;
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return fallback;
  const auto* arr = n->as_array();
  if (!arr) Fail(key, "expected an array of numbers, got " + Describe(*n));
  if (size > 0 && arr->size() != size)
    Fail(key, "expected " + std::to_string(size) + " numbers, got " + std::to_string(arr->size()));
  std::vector<double> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& e = (*arr)[i];
    double v = 0;
    if (auto f = e.value_exact<double>()) v = *f;
    else if (auto k = e.value_exact<int64_t>()) v = static_cast<double>(*k);
    else Fail(key, "element " + std::to_string(i) + ": expected a number, got " + Describe(e));
    if (!(v >= min && v <= max)) {
      std::ostringstream os;
      os << "element " << i << ": expected a number in [" << min << ", " << max << "], got " << v;
      Fail(key, os.str());
    }
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> Table::GetStringArray(const std::string& key, const std::vector<std::string>& fallback) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kStringArray;
    std::string text = "[";
    for (size_t i = 0; i < fallback.size(); ++i) text += (i ? ", " : "") + TomlQuotedText(fallback[i]);
    r.fallback = text + "]";
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return fallback;
  const auto* arr = n->as_array();
  if (!arr) Fail(key, "expected an array of strings, got " + Describe(*n));
  std::vector<std::string> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    auto v = (*arr)[i].value_exact<std::string>();
    if (!v) Fail(key, "element " + std::to_string(i) + ": expected a string, got " + Describe((*arr)[i]));
    out.push_back(*v);
  }
  return out;
}

std::optional<Table> Table::Sub(const std::string& key) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kTable;
    ReportKeyRead(*this, key, n, std::move(r));
  }
  if (!n) return std::nullopt;
  const auto* t = n->as_table();
  if (!t) Fail(key, "expected a table ([" + KeyPath(key) + "]), got " + Describe(*n));
  return Table(doc_, t, file_, KeyPath(key));
}

std::vector<Table> Table::TableArray(const std::string& key) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
  if (g_key_observer) {
    KeyRead r;
    r.type = KeyType::kTableArray;
    ReportKeyRead(*this, key, n, std::move(r));
  }
  std::vector<Table> out;
  if (!n) return out;
  const auto* arr = n->as_array();
  if (!arr) Fail(key, "expected an array of tables ([[" + KeyPath(key) + "]]), got " + Describe(*n));
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto* t = (*arr)[i].as_table();
    if (!t) Fail(key, "element " + std::to_string(i) + ": expected a table, got " + Describe((*arr)[i]));
    out.push_back(Table(doc_, t, file_, KeyPath(key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

void Table::RejectUnknownKeys() const {
  for (const auto& [k, v] : T(table_)) {
    const std::string key(k.str());
    if (std::find(used_->begin(), used_->end(), key) == used_->end()) {
      std::string known;
      for (const auto& u : *used_)
        if (known.find(u) == std::string::npos) known += (known.empty() ? "" : ", ") + u;
      Fail(key, "unknown key (known here: " + (known.empty() ? std::string("none") : known) + ")");
    }
  }
}

}  // namespace platoon::config
