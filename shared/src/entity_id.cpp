#include "platoon/entity_id.hpp"

#include "platoon/config/table.hpp"

#include <cstdio>
#include <cstdlib>

namespace platoon {

uint64_t VehicleId(const std::string& node_name, uint32_t index) {
  uint32_t h = 2166136261u;
  for (unsigned char c : node_name) h = (h ^ c) * 16777619u;
  return (static_cast<uint64_t>(h) << 16) | (index & 0xffff);
}

std::string VehicleName(uint64_t id, std::span<const std::string> node_names) {
  const uint32_t index = static_cast<uint32_t>(id & 0xffff);
  for (const auto& name : node_names)
    if (VehicleId(name, index) == id) return name + ":" + std::to_string(index);
  return "";
}

std::string EntityDisplayName(uint64_t id, std::span<const NodeNaming> nodes) {
  const uint32_t index = static_cast<uint32_t>(id & 0xffff);
  for (const auto& n : nodes) {
    if (VehicleId(n.node, index) != id) continue;
    if (index < n.vehicle_names.size() && !n.vehicle_names[index].empty()) return n.vehicle_names[index];
    if (n.driver && index == 0) return n.node;
    return n.node + ":" + std::to_string(index);
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "#%016llx", static_cast<unsigned long long>(id));
  return hex;
}

uint64_t AttachedVehicleId(const std::string& attach_to) {
  // The index follows the last colon, so a node name may itself hold colons.
  const auto colon = attach_to.rfind(':');
  std::string name = attach_to;
  uint32_t index = 0;
  if (colon != std::string::npos) {
    name = attach_to.substr(0, colon);
    const std::string idx = attach_to.substr(colon + 1);
    char* end = nullptr;
    const unsigned long v = std::strtoul(idx.c_str(), &end, 10);
    if (idx.empty() || *end != '\0' || v > 0xffff || idx.find_first_not_of("0123456789") != std::string::npos)
      throw config::ConfigError("attach_to \"" + attach_to + "\": expected \"<node name>[:<vehicle index 0..65535>]\"");
    index = static_cast<uint32_t>(v);
  }
  if (name.empty()) throw config::ConfigError("attach_to \"" + attach_to + "\": the node name is empty");
  return VehicleId(name, index);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double EntityPhase(uint64_t id) { return static_cast<double>(SplitMix64(id) >> 11) * 0x1.0p-53; }

}  // namespace platoon
