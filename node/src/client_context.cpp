#include "platoon/node/client_context.hpp"

#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/protocol/codec_in_place.hpp"
#include "platoon/transport/send_shared.hpp"

#include <algorithm>

namespace platoon::node {

using protocol::Encode;

ClientModuleContext::ClientModuleContext(session::SessionClient& client, std::mutex& mutex,
                                         std::function<void(std::string)> outbox, const dr::SendPolicyDef& policy,
                                         bool every_step)
    : client_(client), mutex_(mutex), outbox_(std::move(outbox)), policy_def_(policy), every_step_(every_step) {}

std::vector<RemoteEntity> ClientModuleContext::RemoteEntities(int64_t sim_ns) const {
  std::vector<std::pair<protocol::EntityState, Pose>> shown;
  {
    std::lock_guard lock(mutex_);
    shown = client_.World().WithDisplayedPose(sim_ns);
  }
  std::vector<RemoteEntity> out;
  out.reserve(shown.size());
  for (auto& [state, pose] : shown) out.push_back(RemoteEntity{std::move(state), pose});
  return out;
}

void ClientModuleContext::Publish(const protocol::EntityState& truth) {
  truth_[truth.id] = truth;
  if (truth_tap_) truth_tap_(truth);
  const uint32_t id = NodeId();
  if (id == 0) return;
  if (resend_all.exchange(false)) policies_.clear();
  auto it = policies_.find(truth.id);
  if (it == policies_.end()) {
    // Drift is judged with the model every receiver extrapolates this kind with (RemoteWorld does the same).
    dr::SendPolicyDef def = policy_def_;
    def.model = dr::ModelForKind(truth.kind);
    it = policies_.emplace(truth.id, dr::SendPolicy(def, EntityPhase(truth.id))).first;
  }
  if (!every_step_ && !it->second.ShouldSend(truth.kinematics, truth.kinematics.stamp_ns)) return;
  it->second.MarkSent(truth.kinematics);
  pending_.push_back(truth);
  pending_.back().owner_node = id;
}

void ClientModuleContext::WorldStats(uint64_t& received, int64_t& max_gap_ns) const {
  std::lock_guard lock(mutex_);
  received = client_.Stats().world_received;
  max_gap_ns = client_.Stats().world_max_gap_ns;
}

uint32_t ClientModuleContext::NodeId() const {
  std::lock_guard lock(mutex_);
  return client_.NodeId();
}

void ClientModuleContext::PublishData(const protocol::Message& message) {
  data_hash_.Measurement(message);
  ++data_messages_;
  if (data_sink_) {
    data_sink_(message);
    return;
  }
  if (data_pub_) data_pub_->Send(Encode(message));
}

void ClientModuleContext::PublishEncoded(std::string_view wire, std::shared_ptr<const void> owner) {
  // The hash needs the message's fields; the point blob is viewed in place, never copied. It is the last
  // field Measurement mixes, so the digest equals PublishData's for the same message.
  std::string_view blob;
  auto d = protocol::DecodeInPlace(wire, &blob);
  if (!d.message) return;  // not a message of this build: nothing to publish
  ++data_messages_;
  if (data_sink_) {
    data_hash_.Measurement(*d.message);
    data_hash_.Words(blob.data(), blob.size());
    data_sink_(*protocol::Decode(wire).message);
    return;
  }
  // Sent first, hashed after: hashing a fused frame's 12.7 MB blob takes about 2 ms, which must not sit
  // between the last cloud and the fused frame on the wire. `owner` keeps `wire` alive until then.
  if (data_pub_) transport::SendShared(*data_pub_, wire, owner);
  data_hash_.Measurement(*d.message);
  data_hash_.Words(blob.data(), blob.size());
}

void ClientModuleContext::SubscribeData(const std::vector<std::string>& stream_ids) {
  subscribed_ = stream_ids;
  nodes_seen_ = ~0ull;  // re-resolve at the next ReceiveData
}

std::optional<transport::SharedBytes> ClientModuleContext::ReceiveData(int64_t wait_ns) {
  if (!data_sub_) return std::nullopt;
  ResolveSubscriptions();
  auto p = wait_ns > 0 ? data_sub_->Receive(std::chrono::nanoseconds(wait_ns)) : data_sub_->TryReceive();
  if (!p) return std::nullopt;
  return p->TakePayload();
}

std::vector<protocol::NodeInfo> ClientModuleContext::Nodes() const {
  std::lock_guard lock(mutex_);
  return client_.Nodes();
}

int64_t ClientModuleContext::StepNs() const {
  std::lock_guard lock(mutex_);
  return client_.StepNs();
}

std::optional<world::WorldConditions> ClientModuleContext::Conditions() const {
  std::lock_guard lock(mutex_);
  return client_.Conditions();
}

void ClientModuleContext::TapWorld(WorldTap tap) {
  std::lock_guard lock(mutex_);
  client_.on_world_broadcast = std::move(tap);
}

void ClientModuleContext::Mark(const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    // The node's sim time now, so the marker sits at the call; before the session clock is known the
    // server stamps it on arrival (sim time 0 means that on the wire).
    const bool clock_known = client_.Clock().IsSet() || client_.StepNs() > 0;
    const int64_t sim_ns = clock_known ? std::max<int64_t>(client_.SimNowNs(), 0) : 0;
    client_.RequestParams(protocol::Mark{text, sim_ns, ++markers_});
  }
  if (wake_) wake_();
}

void ClientModuleContext::SetDataChannels(transport::Channel* pub, transport::Channel* sub) {
  data_pub_ = pub;
  data_sub_ = sub;
  if (sub) connector_.emplace(*sub);
}

void ClientModuleContext::Flush(uint64_t step_done, uint64_t next_step) {
  if (pending_.empty() && step_done == 0) return;
  uint32_t id = 0;
  uint64_t token = 0;
  {
    std::lock_guard lock(mutex_);
    id = client_.NodeId();
    token = client_.StateToken();
  }
  protocol::NodeState state{id, ++sequence_, std::move(pending_), step_done, next_step, token};
  pending_.clear();
  sent_entities_ += state.entities.size();
  ++sent_states_;
  outbox_(Encode(state));
}

std::vector<protocol::EntityState> ClientModuleContext::OwnedTruth() const {
  std::vector<protocol::EntityState> out;
  for (const auto& [id, e] : truth_) out.push_back(e);
  return out;
}

void ClientModuleContext::ResolveSubscriptions() {
  // Module thread: connects the data SUB socket to every endpoint publishing a subscribed stream.
  std::vector<protocol::NodeInfo> nodes;
  {
    std::lock_guard lock(mutex_);
    if (client_.NodesVersion() == nodes_seen_) return;
    nodes_seen_ = client_.NodesVersion();
    nodes = client_.Nodes();
  }
  connector_->Resolve(nodes, [&](const protocol::DataEndpoint& e) {
    return std::find(subscribed_.begin(), subscribed_.end(), e.stream_id) != subscribed_.end();
  });
}

std::vector<protocol::LoggedEvent> ClientModuleContext::TakeEvents() {
  std::lock_guard lock(mutex_);
  return client_.TakeEvents();
}

std::optional<protocol::Message> NodeParams::Answer(const protocol::Message& request, bool apply_now) {
  std::lock_guard lock(mutex_);
  if (const auto* l = std::get_if<protocol::ParamListRequest>(&request))
    return protocol::ParamList{registry_.List(l->prefix), l->request_id, {}};
  if (const auto* g = std::get_if<protocol::ParamGet>(&request)) {
    auto reply = registry_.Get(g->path);
    reply.request_id = g->request_id;
    return reply;
  }
  const auto& s = std::get<protocol::ParamSet>(request);
  protocol::ParamReply reply = registry_.Get(s.path);
  reply.request_id = s.request_id;
  std::string error;
  const auto value = registry_.Check(s.path, s.value, error);
  if (!value || (!apply_now && queued_.size() >= kMaxQueued)) {
    reply.ok = false;
    reply.error = value ? s.path + ": " + std::to_string(kMaxQueued) + " sets already wait for the next step" : error;
    return reply;
  }
  if (!apply_now) {
    // Answered by ApplyQueued once in force: until then a get still reads the old value.
    queued_.push_back(QueuedSet{s.path, *value, s.request_id});
    return std::nullopt;
  }
  registry_.Apply(s.path, *value);
  reply.param.value = registry_.Get(s.path).param.value;
  return reply;
}

std::vector<protocol::ParamReply> NodeParams::ApplyQueued() {
  std::lock_guard lock(mutex_);
  std::vector<protocol::ParamReply> answers;
  answers.reserve(queued_.size());
  for (const auto& q : queued_) {
    registry_.Apply(q.path, q.value);
    protocol::ParamReply reply = registry_.Get(q.path);
    reply.request_id = q.request_id;
    answers.push_back(std::move(reply));
  }
  queued_.clear();
  return answers;
}

protocol::ParamReply NodeParams::Get(const std::string& path) {
  std::lock_guard lock(mutex_);
  return registry_.Get(path);
}

protocol::ParamReply NodeParams::SetNow(const std::string& path, const std::string& text) {
  std::lock_guard lock(mutex_);
  return registry_.Set(path, text);
}

protocol::ParamReply ClientModuleContext::GetParam(const std::string& path) const {
  if (!params_) return ModuleContext::GetParam(path);
  return params_->Get(path);
}

protocol::ParamReply ClientModuleContext::SetParam(const std::string& path, const std::string& text) {
  if (!params_) return ModuleContext::SetParam(path, text);
  return params_->SetNow(path, text);
}

void ClientModuleContext::ApplyParams() {
  if (!params_) return;
  auto answers = params_->ApplyQueued();
  if (answers.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (const auto& a : answers) client_.AnswerParamRequest(a);
  }
  if (wake_) wake_();
}

void ModuleScheduler::StepDue(std::vector<std::unique_ptr<Module>>& modules, int64_t now, ClientModuleContext& context,
                              bool flush_each) {
  // Parameter sets that arrived since the last step take effect before it, and are answered then.
  context.ApplyParams();
  for (const auto& event : context.TakeEvents())
    for (auto& m : modules) m->OnEvent(event, context);
  next_.resize(modules.size(), -1);
  last_.resize(modules.size(), -1);
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto period = static_cast<int64_t>(1e9 / modules[i]->RateHz());
    if (next_[i] < 0) next_[i] = now;
    if (now < next_[i]) continue;
    modules[i]->Step(StepInfo{now, last_[i] < 0 ? 0 : now - last_[i]}, context);
    if (flush_each) context.Flush();
    last_[i] = now;
    next_[i] += period;
    if (next_[i] <= now) next_[i] = now + period;  // overrun: skip, never burst
  }
}

bool StepGranted(std::vector<std::unique_ptr<Module>>& modules, session::SessionClient& client, std::mutex& mutex,
                 ClientModuleContext& context, ModuleScheduler& scheduler) {
  int64_t now, step_ns;
  uint64_t step;
  {
    std::lock_guard lock(mutex);
    if (client.StepNs() == 0 || !client.Advancing()) return false;
    now = client.SimNowNs();
    step = client.GrantedStep();
    step_ns = client.StepNs();
    // Nothing is due before the step this node announced: the grant only moves its sim time.
    if (step < scheduler.lockstep_next_) {
      client.MarkStepDone(step);
      return false;
    }
  }
  // One NodeState per step: the states of every module, then the acknowledgement.
  scheduler.StepDue(modules, now, context, /*flush_each=*/false);
  const int64_t due = scheduler.NextDueNs();
  uint64_t next = 0;
  if (due != INT64_MAX && due > now + step_ns) next = step + static_cast<uint64_t>((due - now + step_ns - 1) / step_ns);
  scheduler.lockstep_next_ = next;
  context.Flush(step, next);
  std::lock_guard lock(mutex);
  client.MarkStepDone(step);
  return true;
}

int64_t ModuleScheduler::NextDueNs() const {
  int64_t due = INT64_MAX;
  for (int64_t n : next_) due = std::min(due, n);
  return due;
}

}  // namespace platoon::node
