#pragma once
/// What a node's modules see, over the session client core: remote entities from its world, owned
/// entities out through DIS-style send policies, data streams, the node table. And the scheduler that
/// steps each module at its own rate. Used by the node runtime (module thread) and by in-process
/// sessions (tests, batch runs), so both step modules the same way.

#include "platoon/config/params.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/node/encoded_publisher.hpp"
#include "platoon/node/module.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/session/stream_connector.hpp"
#include "platoon/session/world_hash.hpp"
#include "platoon/transport/channel.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace platoon::node {

/// A node's parameters (node.<name>.*) and the sets waiting to be applied. Requests the server forwards
/// arrive on the network thread while modules step on the module thread (real time): a set is checked at
/// once, applied before the modules' next step (ApplyQueued) and answered then, so that the server's
/// answer means "in force" and the asker's next get reads the new value; when the caller steps the
/// modules on the same thread (lock-step) it is applied and answered at once. Gets and sets are
/// serialised by an internal mutex.
class NodeParams {
 public:
  /// Sets waiting for the next step at most; further ones are refused.
  static constexpr size_t kMaxQueued = 256;
  /// Registers parameters (before any request arrives): Module::Params and the runtime's own.
  config::ParamRegistry& Registry() { return registry_; }
  /// Answers a forwarded ParamListRequest, ParamGet or ParamSet with a ParamList or ParamReply carrying
  /// its request id. A set that passes the checks is applied now when `apply_now`; else it is queued and
  /// nullopt returned: ApplyQueued applies it and gives its answer. A refused set is answered at once.
  std::optional<protocol::Message> Answer(const protocol::Message& request, bool apply_now);
  /// Applies the queued sets, oldest first (the thread that steps the modules, before they step), and
  /// returns their answers: ParamReply with each request's id and the value now in force.
  std::vector<protocol::ParamReply> ApplyQueued();
  /// One parameter with its value (ParamRegistry::Get), under the lock.
  protocol::ParamReply Get(const std::string& path);
  /// Check() then Apply() now, under the lock (the thread that steps the modules: a seat's CAN mapping):
  /// the reply carries the value in force or the error.
  protocol::ParamReply SetNow(const std::string& path, const std::string& text);

 private:
  struct QueuedSet {
    std::string path;
    config::ParamValue value;
    uint64_t request_id = 0;
  };
  std::mutex mutex_;
  config::ParamRegistry registry_;
  std::vector<QueuedSet> queued_;
};

/// A ModuleContext over a SessionClient guarded by `mutex`. Lives on the module thread.
class ClientModuleContext final : public ModuleContext, public EncodedPublisher {
 public:
  /// `outbox` takes each encoded NodeState, in order (the network thread sends it on the state socket).
  ClientModuleContext(session::SessionClient& client, std::mutex& mutex, std::function<void(std::string)> outbox,
                      const dr::SendPolicyDef& policy, bool every_step);

  std::vector<RemoteEntity> RemoteEntities(int64_t sim_ns) const override;
  void Publish(const protocol::EntityState& truth) override;
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override;
  uint32_t NodeId() const override;
  void PublishData(const protocol::Message& message) override;
  void PublishEncoded(std::string_view wire, std::shared_ptr<const void> owner) override;
  void SubscribeData(const std::vector<std::string>& stream_ids) override;
  std::optional<transport::SharedBytes> ReceiveData(int64_t wait_ns) override;
  std::vector<protocol::NodeInfo> Nodes() const override;
  int64_t StepNs() const override;
  /// The client's newest received conditions (session::SessionClient::Conditions).
  std::optional<world::WorldConditions> Conditions() const override;
  void TapWorld(WorldTap tap) override;
  /// Queues a protocol::Mark on the client's control socket, stamped with the client's sim time now
  /// (0 before the session clock is known: the server stamps it on arrival).
  void Mark(const std::string& text) override;
  /// The node's parameter (NodeParams::Get); an error without SetParams.
  protocol::ParamReply GetParam(const std::string& path) const override;
  /// Sets the node's parameter now (NodeParams::SetNow); an error without SetParams.
  protocol::ParamReply SetParam(const std::string& path, const std::string& text) override;
  /// Markers sent so far.
  uint64_t Markers() const { return markers_; }

  /// Called after a marker is queued on the client (nullptr: none): platoon-node wakes its network thread,
  /// which sends it at once instead of at its next turn (up to 50 ms later).
  void SetWake(std::function<void()> wake) { wake_ = std::move(wake); }
  /// The data PUB socket (nullptr: none) and SUB socket (nullptr: none) modules use.
  void SetDataChannels(transport::Channel* pub, transport::Channel* sub);
  /// In-process sessions: data messages go to `sink` instead of a socket.
  void SetDataSink(std::function<void(const protocol::Message&)> sink) { data_sink_ = std::move(sink); }
  /// Sends what the step published, as one NodeState, to the outbox. In lock-step every step ends with
  /// one (`step_done` > 0), carrying the acknowledgement after the states.
  void Flush(uint64_t step_done = 0, uint64_t next_step = 0);
  /// Session events that arrived with world states since the last call, each once, oldest first.
  std::vector<protocol::LoggedEvent> TakeEvents();
  /// The node's parameters, whose queued sets StepDue applies before the modules step (nullptr: none).
  void SetParams(NodeParams* params) { params_ = params; }
  NodeParams* Params() const { return params_; }
  /// Applies the parameter sets that wait (NodeParams::ApplyQueued) and queues their answers on the
  /// client, waking the network thread to send them. The thread that steps the modules calls it before
  /// they step (StepDue) and while the session stands still, so that a set is answered within one turn.
  void ApplyParams();
  /// Hands every truth a module publishes to `tap` (nullptr: none), before the send policy sees it; on
  /// the module thread (PoseLog).
  void TapTruth(std::function<void(const protocol::EntityState&)> tap) { truth_tap_ = std::move(tap); }
  /// The newest truth of every owned entity, for the session hash.
  std::vector<protocol::EntityState> OwnedTruth() const;
  /// Node states and entity states sent so far.
  uint64_t SentStates() const { return sent_states_; }
  uint64_t SentEntities() const { return sent_entities_; }
  /// Hash of every measurement published so far, in order (session::Hasher::Measurement): equal in two
  /// runs that measured the same (a lock-step replay re-measured twice).
  uint64_t DataHash() const { return data_hash_.Digest(); }
  /// Measurements published so far.
  uint64_t DataMessages() const { return data_messages_; }

  /// Set by the network thread after a (re)join: every owned entity is sent afresh.
  std::atomic<bool> resend_all{false};

 private:
  void ResolveSubscriptions();

  session::SessionClient& client_;
  std::mutex& mutex_;
  std::function<void(std::string)> outbox_;
  dr::SendPolicyDef policy_def_;
  bool every_step_;
  std::function<void(const protocol::EntityState&)> truth_tap_;
  std::map<uint64_t, dr::SendPolicy> policies_;
  std::map<uint64_t, protocol::EntityState> truth_;
  std::vector<protocol::EntityState> pending_;
  uint64_t sequence_ = 0, sent_entities_ = 0, sent_states_ = 0;
  session::Hasher data_hash_;
  uint64_t data_messages_ = 0;
  transport::Channel* data_pub_ = nullptr;
  transport::Channel* data_sub_ = nullptr;
  std::function<void(const protocol::Message&)> data_sink_;
  std::optional<session::StreamConnector> connector_;
  std::vector<std::string> subscribed_;
  uint64_t nodes_seen_ = ~0ull;
  NodeParams* params_ = nullptr;
  uint64_t markers_ = 0;
  std::function<void()> wake_;
};

/// Steps each module at its own rate on sim time: a module is due when sim time reaches its next slot;
/// overruns skip slots, never burst.
class ModuleScheduler {
 public:
  /// Hands the session events that arrived since the last call to every module (Module::OnEvent), then
  /// steps every module due at `sim_ns`; flushes the context after each module when `flush_each`
  /// (real time), else the caller flushes once (lock-step: one NodeState per step).
  void StepDue(std::vector<std::unique_ptr<Module>>& modules, int64_t sim_ns, ClientModuleContext& context,
               bool flush_each = true);
  /// Sim time at which the next module is due, in ns (INT64_MAX before the first StepDue).
  int64_t NextDueNs() const;
  /// Forgets the schedule (sim time stood still: paused or not started).
  void Reset() { next_.clear(); last_.clear(); lockstep_next_ = 0; }

 private:
  friend bool StepGranted(std::vector<std::unique_ptr<Module>>&, session::SessionClient&, std::mutex&,
                          ClientModuleContext&, ModuleScheduler&);
  std::vector<int64_t> next_, last_;
  uint64_t lockstep_next_ = 0;  // lock-step: no module is due before this step
};

/// Lock-step: takes the client's newest grant, if not done yet. When a module is due, steps the due
/// modules at the granted sim time and queues one NodeState with the states and the acknowledgement,
/// naming the next step at which a module is due (the server does not wait for this node before it);
/// otherwise only marks the step done. Returns true when a NodeState was queued. Used by platoon-node's
/// network thread and by in-process sessions alike.
bool StepGranted(std::vector<std::unique_ptr<Module>>& modules, session::SessionClient& client, std::mutex& mutex,
                 ClientModuleContext& context, ModuleScheduler& scheduler);

}  // namespace platoon::node
