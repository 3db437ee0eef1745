#include "platoon/transport/fault_injector.hpp"

#include <stdexcept>

namespace platoon::transport {
namespace {

std::string Probability(const char* name, double p) {
  if (p >= 0 && p <= 1) return {};
  return std::string(name) + " must be a probability in [0, 1], got " + std::to_string(p);
}

std::string NonNegative(const char* name, double v) {
  if (v >= 0) return {};
  return std::string(name) + " must be >= 0, got " + std::to_string(v);
}

}  // namespace

std::string ValidateFaultDef(const FaultDef& d) {
  for (const auto& msg : {Probability("drop", d.drop_probability), Probability("duplicate", d.duplicate_probability),
                          Probability("reorder", d.reorder_probability), NonNegative("delay_ms", d.delay_ms),
                          NonNegative("jitter_ms", d.jitter_ms), NonNegative("burst_every_s", d.burst_every_s),
                          NonNegative("burst_length_ms", d.burst_length_ms)})
    if (!msg.empty()) return msg;
  if (d.reorder_probability > 0.5)
    return "reorder must be <= 0.5 (a held message is released behind its successor), got " +
           std::to_string(d.reorder_probability);
  if (d.burst_every_s > 0 && d.burst_length_ms <= 0) return "burst_every_s is set but burst_length_ms is not";
  return {};
}

FaultDef ParseFaultSpec(const std::string& spec, FaultDef def) {
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("fault spec item '" + item + "': expected key=value");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw std::invalid_argument("fault spec item '" + item + "': expected a number after '='");
    }
    if (key == "drop") def.drop_probability = v;
    else if (key == "dup" || key == "duplicate") def.duplicate_probability = v;
    else if (key == "reorder") def.reorder_probability = v;
    else if (key == "delay_ms") def.delay_ms = v;
    else if (key == "jitter_ms") def.jitter_ms = v;
    else if (key == "burst_every_s") def.burst_every_s = v;
    else if (key == "burst_ms" || key == "burst_length_ms") def.burst_length_ms = v;
    else if (key == "seed") def.seed = static_cast<uint64_t>(v);
    else
      throw std::invalid_argument("fault spec item '" + item +
                                  "': unknown key (expected drop, dup, reorder, delay_ms, jitter_ms, "
                                  "burst_every_s, burst_ms or seed)");
  }
  if (auto err = ValidateFaultDef(def); !err.empty()) throw std::invalid_argument("fault spec: " + err);
  return def;
}

}  // namespace platoon::transport
