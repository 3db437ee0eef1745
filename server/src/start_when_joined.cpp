#include "platoon/server/start_when_joined.hpp"

namespace platoon::server {

StartWhenJoined::StartWhenJoined(WorldCore& core, StartWhenJoinedDef def)
    : core_(core), def_(std::move(def)), waiting_(def_.names.begin(), def_.names.end()) {}

void StartWhenJoined::OnNodeEvent(const NodeEvent& e) {
  if (started_ || (e.kind != NodeEvent::Kind::kJoined && e.kind != NodeEvent::Kind::kRejoined)) return;
  waiting_.erase(e.name);
  if (!waiting_.empty()) return;
  started_ = true;
  using Command = protocol::SessionControl::Command;
  const int64_t at = e.ref_ns + def_.countdown_ns;
  core_.Control(protocol::SessionControl{Command::kStart, at, def_.sim_t0_ns}, e.ref_ns);
  if (def_.speed != 1.0) core_.Control(protocol::SessionControl{Command::kSpeed, at, 0, def_.speed}, e.ref_ns);
  if (def_.paused) core_.Control(protocol::SessionControl{Command::kPause, at, 0}, e.ref_ns);
}

}  // namespace platoon::server
