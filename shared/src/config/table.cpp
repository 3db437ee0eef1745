#include "platoon/config/table.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace platoon::config {

struct Table::Doc {
  toml::table root;
};

namespace {
const toml::table& T(const void* p) { return *static_cast<const toml::table*>(p); }

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
  if (!n) return fallback;
  auto b = n->value_exact<bool>();
  if (!b) Fail(key, "expected true or false, got " + Describe(*n));
  return *b;
}

std::string Table::GetString(const std::string& key, const std::string& fallback,
                             const std::vector<std::string>& allowed) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
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
  if (!Has(key)) Fail(key, "is required (a string)");
  return GetString(key, {}, allowed);
}

std::vector<double> Table::GetDoubleArray(const std::string& key, const std::vector<double>& fallback, size_t size,
                                          double min, double max) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
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
  if (!n) return std::nullopt;
  const auto* t = n->as_table();
  if (!t) Fail(key, "expected a table ([" + KeyPath(key) + "]), got " + Describe(*n));
  return Table(doc_, t, file_, KeyPath(key));
}

std::vector<Table> Table::TableArray(const std::string& key) const {
  const auto* n = static_cast<const toml::node*>(Node(key));
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
