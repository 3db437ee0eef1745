#pragma once
/// Starts a session once every named node has joined, instead of a fixed delay after the first join: a
/// lock-step run (platoon run --lockstep, platoon batch) then has every node from step 1 on, however long
/// a loaded machine takes to start them, and does not wait longer than it must; a replay re-measured by
/// sensor hosts sees its first step.

#include "platoon/server/world_core.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace platoon::server {

/// How a StartWhenJoined starts the session.
struct StartWhenJoinedDef {
  std::vector<std::string> names;  ///< Nodes that must have joined (names as in the session file).
  int64_t sim_t0_ns = 0;           ///< Sim time at the start instant.
  double speed = 1.0;              ///< Sim rate after the start (replays); 1: live.
  bool paused = false;             ///< Start paused at sim_t0_ns (replays).
  /// From the last join to the start instant, in ns: the last node's first clock exchanges finish first.
  int64_t countdown_ns = 200'000'000;
};

/// A WorldSystem (priority kPolicy) that sends the start once the last named node joined.
class StartWhenJoined final : public WorldSystem {
 public:
  StartWhenJoined(WorldCore& core, StartWhenJoinedDef def);
  void OnNodeEvent(const NodeEvent& event) override;
  /// True once the start was sent.
  bool Started() const { return started_; }

 private:
  WorldCore& core_;
  StartWhenJoinedDef def_;
  std::set<std::string> waiting_;
  bool started_ = false;
};

}  // namespace platoon::server
