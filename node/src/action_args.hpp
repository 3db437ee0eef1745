#pragma once
// The arguments of a scenario action as the server sends them (LoggedEvent::detail: a flat JSON object), read
// by the traffic modules that carry the actions out.

#include "platoon/entity_id.hpp"
#include "platoon/node/module.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace platoon::node {

// Whether `event` is a scenario action for this node (its target node is this one).
inline bool IsActionForThisNode(const protocol::LoggedEvent& event, const ModuleContext& context) {
  return event.kind == protocol::LoggedEvent::Kind::kAction && event.target_node != 0 &&
         event.target_node == context.NodeId();
}

// The index of the action's vehicle among node `node_name`'s (VehicleId(node_name, index)); nullopt when the
// entity is another node's.
inline std::optional<uint32_t> VehicleIndexOf(const protocol::LoggedEvent& event, const std::string& node_name) {
  if ((event.entity_id >> 16) != (VehicleId(node_name, 0) >> 16)) return std::nullopt;
  return static_cast<uint32_t>(event.entity_id & 0xffff);
}

// The numbers after "key": in a flat JSON object (an action's arguments): one number, or the elements
// of an array of numbers. Empty when the key is missing.
inline std::vector<double> JsonNumbers(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::string k = "\"" + key + "\":";
  const auto at = json.find(k);
  if (at == std::string::npos) return out;
  const char* p = json.c_str() + at + k.size();
  const bool array = *p == '[';
  if (array) ++p;
  while (*p) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) break;
    out.push_back(v);
    p = end;
    if (!array || *p != ',') break;
    ++p;
  }
  return out;
}

inline double JsonNumber(const std::string& json, const std::string& key, double fallback) {
  const auto v = JsonNumbers(json, key);
  return v.empty() ? fallback : v.front();
}

// The string after "key": in a flat JSON object (no escapes in it); empty when missing.
inline std::string JsonString(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":\"";
  const auto at = json.find(k);
  if (at == std::string::npos) return {};
  const auto end = json.find('"', at + k.size());
  return end == std::string::npos ? std::string() : json.substr(at + k.size(), end - at - k.size());
}

}  // namespace platoon::node
