#pragma once
/// Node modules (seed 004 §2): each runs at its own rate on the session's sim clock. Modules read the
/// world through a const view and hand their owned entities to the runtime; they never touch sockets.

#include "platoon/config/params.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/transport/shared_bytes.hpp"
#include "platoon/world/conditions.hpp"

#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::node {

/// The session's sim clock as modules see it. The runtime's implementation follows the synced
/// reference clock and the server's session phase; a lock-step implementation would advance only
/// on the server's grants, with no change to any module.
class SimClock {
 public:
  virtual ~SimClock() = default;
  /// True while sim time advances (session running).
  virtual bool Running() const = 0;
  /// Current sim time, in ns.
  virtual int64_t SimNowNs() const = 0;
};

/// One remote entity as the node displays it at a given sim time.
struct RemoteEntity {
  protocol::EntityState state;  ///< Last received state (stale flag as the server set it).
  Pose displayed;               ///< Dead-reckoned, blended pose at the view's sim time.
};

/// What a module may do during a step.
class ModuleContext {
 public:
  virtual ~ModuleContext() = default;
  /// Remote entities (owned by other nodes), displayed at `sim_ns`.
  virtual std::vector<RemoteEntity> RemoteEntities(int64_t sim_ns) const = 0;
  /// Offers the current truth of an owned entity; the runtime's send policy decides when it goes out.
  virtual void Publish(const protocol::EntityState& truth) = 0;
  /// World states received so far, and the longest gap between two of them, in ns.
  virtual void WorldStats(uint64_t& received, int64_t& max_gap_ns) const = 0;
  /// This node's id (0 before the first join).
  virtual uint32_t NodeId() const = 0;

  // --- Data streams (sensor outputs, fused clouds): host -> subscriber directly, never via the server ---
  /// Publishes a sensor message on this node's data socket (dropped when nobody subscribes).
  virtual void PublishData(const protocol::Message& message) { (void)message; }
  /// Subscribes to the data streams with these ids, wherever the session's node table says they are
  /// published; follows hosts that restart or move.
  virtual void SubscribeData(const std::vector<std::string>& stream_ids) { (void)stream_ids; }
  /// Next received data message (encoded), waiting at most `wait_ns`; nullopt when none. A large message
  /// (a point cloud) is shared with the socket's buffer, never copied.
  virtual std::optional<transport::SharedBytes> ReceiveData(int64_t wait_ns) { (void)wait_ns; return std::nullopt; }
  /// The server's latest node table.
  virtual std::vector<protocol::NodeInfo> Nodes() const { return {}; }
  /// Lock-step period, in ns, while the session runs in lock-step (sim time advances only on the
  /// server's grants; typical 10'000'000); 0 in real time.
  virtual int64_t StepNs() const { return 0; }
  /// The session's light and weather as last received with the world (docs/WORLD.md "Light", "Weather");
  /// nullopt before any arrived (the session file's [light] and [weather] hold until then).
  virtual std::optional<world::WorldConditions> Conditions() const { return std::nullopt; }

  /// Puts a marker with `text` (1 to 1000 bytes; "key:space") on the synced clock at this node's sim time
  /// now, so it sits at the instant of the call, not at its arrival at the server; the server logs it with
  /// this node's name as source (docs/EXPERIMENTS.md, "Markers and events"). Default: dropped.
  virtual void Mark(const std::string& text) { (void)text; }

  /// This node's live parameter `path` (as `platoon ctl param list` shows it, "node.<name>.tyre_mu") with
  /// its value, the registry the node answers `platoon ctl param` from; ok false with the error when there
  /// is none by that path. Default: none (a context without the node's parameters).
  virtual protocol::ParamReply GetParam(const std::string& path) const {
    return protocol::ParamReply{false, {path, "", false, ""}, path + ": this context holds no node parameters", 0};
  }
  /// Sets this node's live parameter `path` to `text` (a TOML literal) through the registry's checks (writable,
  /// type, range, the entry's own check), now, on the thread that steps the modules: the reply carries the
  /// value in force, or the error (and then nothing changed). Nothing is logged to the session: the caller
  /// marks what it applied (Mark). Default: refused.
  virtual protocol::ParamReply SetParam(const std::string& path, const std::string& text) {
    (void)text;
    return protocol::ParamReply{false, {path, "", false, ""}, path + ": this context sets no node parameters", 0};
  }

  /// Hands every world-state broadcast this node receives to `tap` (nullptr: none), as it arrives:
  /// its envelope bytes as received, the decoded state and the local receive time in ns. `tap` runs
  /// on the network thread and must only copy and return (session::SessionClient::on_world_broadcast).
  using WorldTap = std::function<void(std::string_view bytes, const protocol::WorldState& state, int64_t local_ns)>;
  virtual void TapWorld(WorldTap tap) { (void)tap; }
};

/// Timing of one step.
struct StepInfo {
  int64_t sim_ns = 0;  ///< Sim time of this step.
  int64_t dt_ns = 0;   ///< Sim time since this module's previous step (0 on the first).
};

/// A unit of node behaviour, stepped at RateHz() while the session runs.
class Module {
 public:
  virtual ~Module() = default;
  /// Name for logs, e.g. "traffic".
  virtual std::string Name() const = 0;
  /// Step rate, in Hz.
  virtual double RateHz() const = 0;
  /// One step at `info.sim_ns`.
  virtual void Step(const StepInfo& info, ModuleContext& context) = 0;
  /// Data streams this module publishes (port and address are filled in by the runtime).
  virtual std::vector<protocol::DataEndpoint> Streams() const { return {}; }
  /// Once before the first step, before the node joins: a module that observes the whole session
  /// (the recorder) installs its taps here. Not called by in-process sessions.
  virtual void Attach(ModuleContext& context) { (void)context; }
  /// Once at shutdown, after the last step and before Summarize: removes the taps and finishes what
  /// Attach started (the recorder closes its file).
  virtual void Detach(ModuleContext& context) { (void)context; }
  /// A session event (marker, parameter change, scenario firing, action, seat message) that arrived with
  /// the world, each once, before the step that follows its arrival. In lock-step an event logged before
  /// grant k arrives with grant k, so it is handled before step k on every run. Actions name the node
  /// that carries them out (event.target_node == context.NodeId()) and the entity (event.entity_id).
  virtual void OnEvent(const protocol::LoggedEvent& event, ModuleContext& context) { (void)event; (void)context; }
  /// Once before the node joins: registers what an experimenter may read or tune live under `prefix`
  /// ("node.<name>."; a sensor's under "node.<name>.<sensor id>."). Setters run on the thread that steps
  /// the module, between steps, so they may change the module's state directly.
  virtual void Params(config::ParamRegistry& registry, const std::string& prefix) { (void)registry; (void)prefix; }
  /// Once at shutdown: appends "key":value pairs (JSON fragments) for the node's SUMMARY line.
  virtual void Summarize(std::vector<std::string>& fields) const { (void)fields; }
};

}  // namespace platoon::node
