#include "platoon/protocol/messages.hpp"

#include <algorithm>
#include <array>

namespace platoon::protocol {
namespace {
constexpr std::array<std::string_view, 8> kRoleNames = {"unknown", "observer", "traffic", "driver",
                                                        "sensor",  "fusion",   "viewer",  "recorder"};
constexpr std::array<std::string_view, 5> kPhaseNames = {"waiting", "starting", "running", "paused", "stopped"};
constexpr std::array<std::string_view, 28> kMessageNames = {
    "join",          "welcome",        "refuse",     "leave",     "heartbeat",  "time_request",
    "time_reply",    "node_state",     "world_state", "session_control", "session_status",
    "param_list",    "param_list_reply", "param_get", "param_set", "param_reply", "status_request",
    "point_cloud",   "radar_scan",     "imu_measurement", "gnss_measurement", "camera_frame", "fused_cloud",
    "object_list",   "mark",           "events_request", "event_list", "operator_hello"};
constexpr std::array<std::string_view, 8> kStreamKindNames = {"unknown", "lidar", "radar", "camera",
                                                              "imu",     "gnss",  "fused", "objects"};
constexpr std::array<std::string_view, 3> kSourceStatusNames = {"ok", "late", "missing"};
static_assert(kMessageNames.size() == std::variant_size_v<Message>);
}  // namespace

std::string_view RoleName(Role role) {
  const auto i = static_cast<size_t>(role);
  return i < kRoleNames.size() ? kRoleNames[i] : "unknown";
}

Role RoleFromName(std::string_view name) {
  for (size_t i = 0; i < kRoleNames.size(); ++i)
    if (kRoleNames[i] == name) return static_cast<Role>(i);
  return Role::kUnknown;
}

std::string_view PhaseName(SessionPhase phase) {
  const auto i = static_cast<size_t>(phase);
  return i < kPhaseNames.size() ? kPhaseNames[i] : "unknown";
}

std::string_view StreamKindName(StreamKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kStreamKindNames.size() ? kStreamKindNames[i] : "unknown";
}

StreamKind StreamKindFromName(std::string_view name) {
  for (size_t i = 0; i < kStreamKindNames.size(); ++i)
    if (kStreamKindNames[i] == name) return static_cast<StreamKind>(i);
  return StreamKind::kUnknown;
}

std::string_view SourceStatusName(SourceStatus s) {
  const auto i = static_cast<size_t>(s);
  return i < kSourceStatusNames.size() ? kSourceStatusNames[i] : "unknown";
}

std::string DataEndpoint::Endpoint() const {
  const bool v6 = address.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

std::string_view MessageName(const Message& message) { return kMessageNames[message.index()]; }

std::string_view EventKindName(LoggedEvent::Kind kind) {
  constexpr std::array<std::string_view, 5> kNames = {"marker", "param", "fired", "action", "message"};
  const auto i = static_cast<size_t>(kind);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<std::vector<std::pair<uint32_t, uint32_t>>> FusedGroups(const FusedCloud& frame) {
  std::vector<std::pair<uint32_t, uint32_t>> groups;
  groups.reserve(frame.sources.size());
  size_t given = 0;
  for (const auto& s : frame.sources) given += s.first_point != FusedSource::kInSourceOrder;
  if (given == 0) {  // before first_point: one group after the other, in source order
    uint64_t at = 0;
    for (const auto& s : frame.sources) {
      const uint64_t first = std::min<uint64_t>(at, frame.point_count);
      const uint64_t count = std::min<uint64_t>(s.point_count, frame.point_count - first);
      groups.emplace_back(static_cast<uint32_t>(first), static_cast<uint32_t>(count));
      at += s.point_count;
    }
    return groups;
  }
  if (given != frame.sources.size()) return std::nullopt;
  for (const auto& s : frame.sources) {
    if (uint64_t{s.first_point} + s.point_count > frame.point_count) return std::nullopt;
    groups.emplace_back(s.first_point, s.point_count);
  }
  return groups;
}

std::vector<uint64_t> KeyframeListed(const WorldState& w) {
  std::vector<uint64_t> listed;
  listed.reserve(w.entities.size() + w.kept_entities.size());
  for (const auto& e : w.entities) listed.push_back(e.id);
  listed.insert(listed.end(), w.kept_entities.begin(), w.kept_entities.end());
  std::sort(listed.begin(), listed.end());
  return listed;
}

bool Listed(const std::vector<uint64_t>& listed, uint64_t id) { return std::binary_search(listed.begin(), listed.end(), id); }

}  // namespace platoon::protocol
