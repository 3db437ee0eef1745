// Parameters by path: the typed registry every process keeps (platoon/config/params.hpp).
#include "platoon/config/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace platoon::config {
namespace {

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A TOML basic string "..." (escapes \" and \\), or nullopt when `t` is not one.
std::optional<std::string> Unquote(const std::string& t) {
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i] == '\\' && i + 2 < t.size()) ++i;
    out += t[i];
  }
  return out;
}

// How a value that was refused looks in a message (long ones cut).
std::string Shown(const std::string& t) {
  if (t.empty()) return "nothing";
  return t.size() > 40 ? t.substr(0, 40) + "..." : t;
}

std::string RangeText(const protocol::Parameter& p) {
  const bool lo = std::isfinite(p.min), hi = std::isfinite(p.max);
  if (lo && hi) return fmt::format(" in [{}, {}]", FormatNumber(p.min), FormatNumber(p.max));
  if (lo) return fmt::format(" >= {}", FormatNumber(p.min));
  if (hi) return fmt::format(" <= {}", FormatNumber(p.max));
  return "";
}

}  // namespace

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string FormatValue(const ParamValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return FormatNumber(*d);
  return Quote(std::get<std::string>(value));
}

std::string ExpectedText(const ParamEntry& e) {
  const auto& p = e.def;
  const std::string unit = p.unit.empty() ? "" : " " + p.unit;
  if (p.type == "float") return "a number" + RangeText(p) + unit;
  if (p.type == "int") return "an integer" + RangeText(p) + unit;
  if (p.type == "bool") return "true or false";
  if (e.choices.empty()) return "a string";
  std::string names;
  for (const auto& c : e.choices) names += (names.empty() ? "" : ", ") + Quote(c);
  return "one of " + names;
}

void ParamRegistry::Add(ParamEntry entry) {
  if (entries_.size() >= kMaxEntries) throw std::length_error("parameter registry full at " + entry.def.path);
  if (entries_.count(entry.def.path)) throw std::logic_error("parameter registered twice: " + entry.def.path);
  entry.def.writable = static_cast<bool>(entry.set);
  const std::string path = entry.def.path;
  entries_.emplace(path, std::move(entry));
}

void ParamRegistry::AddFloat(const std::string& path, const std::string& unit, Range range,
                             const std::string& description, std::function<double()> get,
                             std::function<void(double)> set) {
  ParamEntry e;
  e.def = protocol::Parameter{path, "", false, description, "float", unit, range.min, range.max};
  e.get = [get = std::move(get)] { return FormatNumber(get()); };
  if (set) e.set = [set = std::move(set)](const ParamValue& v) { set(std::get<double>(v)); };
  Add(std::move(e));
}

void ParamRegistry::AddInt(const std::string& path, const std::string& unit, Range range,
                           const std::string& description, std::function<int64_t()> get,
                           std::function<void(int64_t)> set) {
  ParamEntry e;
  e.def = protocol::Parameter{path, "", false, description, "int", unit, range.min, range.max};
  e.get = [get = std::move(get)] { return std::to_string(get()); };
  if (set) e.set = [set = std::move(set)](const ParamValue& v) { set(std::get<int64_t>(v)); };
  Add(std::move(e));
}

void ParamRegistry::AddBool(const std::string& path, const std::string& description, std::function<bool()> get,
                            std::function<void(bool)> set) {
  ParamEntry e;
  e.def = protocol::Parameter{path, "", false, description, "bool", "", -INFINITY, INFINITY};
  e.get = [get = std::move(get)] { return std::string(get() ? "true" : "false"); };
  if (set) e.set = [set = std::move(set)](const ParamValue& v) { set(std::get<bool>(v)); };
  Add(std::move(e));
}

void ParamRegistry::AddString(const std::string& path, const std::string& description,
                              std::function<std::string()> get, std::function<void(const std::string&)> set,
                              std::vector<std::string> choices) {
  ParamEntry e;
  e.def = protocol::Parameter{path, "", false, description, "string", "", -INFINITY, INFINITY};
  e.get = [get = std::move(get)] { return Quote(get()); };
  if (set) e.set = [set = std::move(set)](const ParamValue& v) { set(std::get<std::string>(v)); };
  e.choices = std::move(choices);
  Add(std::move(e));
}

void ParamRegistry::AddCheck(const std::string& path, std::function<std::string(const ParamValue&)> check) {
  auto it = entries_.find(path);
  if (it == entries_.end()) throw std::logic_error("no parameter " + path + " to add a check to");
  it->second.check = std::move(check);
}

void ParamRegistry::Merge(const ParamRegistry& other) {
  for (const auto& [path, e] : other.entries_) Add(e);
}

std::vector<protocol::Parameter> ParamRegistry::List(const std::string& prefix) const {
  std::vector<protocol::Parameter> out;
  for (auto it = entries_.lower_bound(prefix); it != entries_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.push_back(it->second.def);
    out.back().value = it->second.get();
  }
  return out;
}

protocol::ParamReply ParamRegistry::Get(const std::string& path) const {
  auto it = entries_.find(path);
  if (it == entries_.end()) return {false, {path, "", false, ""}, path + ": no such parameter", 0};
  protocol::ParamReply reply{true, it->second.def, {}, 0};
  reply.param.value = it->second.get();
  return reply;
}

std::optional<ParamValue> ParamRegistry::Check(const std::string& path, const std::string& text,
                                               std::string& error) const {
  auto it = entries_.find(path);
  if (it == entries_.end()) {
    error = path + ": no such parameter";
    return std::nullopt;
  }
  const ParamEntry& e = it->second;
  if (!e.set) {
    error = path + ": read-only";
    return std::nullopt;
  }
  const std::string t = Trim(text);
  const auto refuse = [&](const std::string& got) {
    error = fmt::format("{}: expected {}, got {}", path, ExpectedText(e), got);
    return std::nullopt;
  };
  std::optional<ParamValue> value;
  if (e.def.type == "float" || e.def.type == "int") {
    // strtod reads "nan" and "inf" too: they are refused below as not finite, by name.
    if (t.empty() || t.front() == '"') return refuse(Shown(t));
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) return refuse(Shown(t));
    if (!std::isfinite(d)) return refuse(std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf"));
    if (!(d >= e.def.min && d <= e.def.max)) return refuse(Shown(t));
    if (e.def.type == "int") {
      int64_t i = 0;
      const auto r = std::from_chars(t.data() + (t.front() == '+' ? 1 : 0), t.data() + t.size(), i);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return refuse(Shown(t));
      value = i;
    } else {
      value = d;
    }
  } else if (e.def.type == "bool") {
    if (t == "true") value = true;
    else if (t == "false") value = false;
    else return refuse(Shown(t));
  } else {
    std::string s = Unquote(t).value_or(t);  // a bare word is taken as the string itself
    if (!e.choices.empty() && std::find(e.choices.begin(), e.choices.end(), s) == e.choices.end())
      return refuse(Quote(s));
    value = std::move(s);
  }
  if (e.check) {
    if (std::string why = e.check(*value); !why.empty()) {
      error = path + ": " + why;
      return std::nullopt;
    }
  }
  return value;
}

void ParamRegistry::Apply(const std::string& path, const ParamValue& value) {
  auto it = entries_.find(path);
  if (it == entries_.end() || !it->second.set) throw std::logic_error("Apply of an unchecked parameter " + path);
  it->second.set(value);
}

protocol::ParamReply ParamRegistry::Set(const std::string& path, const std::string& text) {
  std::string error;
  const auto value = Check(path, text, error);
  if (!value) {
    protocol::ParamReply reply = Get(path);
    reply.ok = false;
    reply.error = error;
    return reply;
  }
  Apply(path, *value);
  return Get(path);
}

void AddFaultParams(ParamRegistry& r, const std::string& prefix, transport::FaultDef& faults,
                    std::function<void()> changed) {
  namespace b = bounds;
  struct Key {
    const char* name;
    double transport::FaultDef::*field;
    Range range;
    const char* unit;
    const char* description;
  };
  const Key keys[] = {
      {"drop", &transport::FaultDef::drop_probability, b::kProbability, "", "Independent loss per received message"},
      {"duplicate", &transport::FaultDef::duplicate_probability, b::kProbability, "", "Chance a message arrives twice"},
      {"reorder", &transport::FaultDef::reorder_probability, b::kReorderFraction, "", "Fraction delivered after their successor"},
      {"delay_ms", &transport::FaultDef::delay_ms, b::kFaultDelayMs, "ms", "Added one-way delay"},
      {"jitter_ms", &transport::FaultDef::jitter_ms, b::kFaultDelayMs, "ms", "Delay varies by +- this"},
      {"burst_every_s", &transport::FaultDef::burst_every_s, b::kBurstEveryS, "s", "Mean time between burst outages (0: none)"},
      {"burst_length_ms", &transport::FaultDef::burst_length_ms, b::kBurstLengthMs, "ms", "Length of each burst outage"},
  };
  for (const Key& k : keys) {
    const std::string path = prefix + k.name;
    r.AddFloat(path, k.unit, k.range, k.description, [&faults, f = k.field] { return faults.*f; },
               [&faults, f = k.field, changed](double v) {
                 faults.*f = v;
                 if (changed) changed();
               });
    // The whole definition must stay valid (transport::ValidateFaultDef, as the config loader checks it).
    r.AddCheck(path, [&faults, f = k.field](const ParamValue& v) {
      transport::FaultDef d = faults;
      d.*f = std::get<double>(v);
      return transport::ValidateFaultDef(d);
    });
  }
}

}  // namespace platoon::config
