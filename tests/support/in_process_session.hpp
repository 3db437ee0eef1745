#pragma once
// A whole lock-step session in one process: the server's WorldCore and one SessionClient per node,
// wired by hand (no sockets), with the nodes' real modules stepped through the same ClientModuleContext
// and ModuleScheduler as platoon-node. Nodes step in parallel on `worker_threads` threads. Used by the
// determinism tests (STYLE §9: a reference session run twice, and across thread counts, gives the same hash).

#include "platoon/clock/oscillator.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/client_context.hpp"
#include "platoon/node/module.hpp"
#include "platoon/server/world_core.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/session/world_hash.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace platoon::testing {

/// What a finished in-process session leaves.
struct InProcessResult {
  uint64_t steps = 0;                         ///< Steps the core granted.
  int64_t sim_time_ns = 0;                    ///< Sim time at the end.
  uint64_t server_hash = 0;                   ///< WorldHash of the server's merged entities.
  std::map<std::string, uint64_t> node_hash;  ///< Per node: its own truth and its remote world.
  uint64_t data_hash = 0;                     ///< Every sensor measurement published, in step and node order.
  uint64_t data_messages = 0;                 ///< Sensor messages published.
  size_t entities = 0;                        ///< Merged entities at the end.
};

/// How an in-process session runs beyond its session file, and what a caller may watch while it runs
/// (a test recorder): the callbacks run on the stepping thread in a fixed order.
struct InProcessOptions {
  /// Owners send every entity at every step (platoon-node --publish fixed) instead of by the
  /// dead-reckoning thresholds: receivers then see each state within one step.
  bool publish_every_step = false;
  /// Every world state the server broadcast, as on the wire (`bytes`, an encoded Envelope) and decoded.
  std::function<void(const protocol::WorldState& world, const std::string& bytes)> on_world;
  /// Every sensor measurement published, after each step in node order.
  std::function<void(const protocol::Message& measurement)> on_data;
  /// Called once with the server's core before any node joins: add systems (a replay) here.
  std::function<void(server::WorldCore& core)> setup_core;
  /// Called before each round of message delivery with the core and the reference time, in ns: a test
  /// acts as a tool here (core.OnControl from a peer that is not a node, core.RequestParamSet).
  std::function<void(server::WorldCore& core, int64_t now_ns)> on_poll;
  /// Called once per node with its modules, before it joins: a test keeps a pointer to one to drive it
  /// from on_poll (a key on a seat), or adds one.
  std::function<void(const config::NodeDef& node, std::vector<std::unique_ptr<node::Module>>& modules)> on_modules;
  /// What the core sent to a peer that is no node (the tool of on_poll), by peer.
  std::function<void(const std::string& peer, const protocol::Message& message)> on_reply;
};

/// Runs `session` (made lock-step; its end_s must be > 0) with every node in-process.
InProcessResult RunInProcess(config::SessionDef session, int worker_threads, const InProcessOptions& options = {});

}  // namespace platoon::testing
