#include "in_process_session.hpp"

#include "platoon/node/roles.hpp"
#include "platoon/node/view_monitor.hpp"
#include "platoon/protocol/codec.hpp"

#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace platoon::testing {
namespace {

using session::Socket;

std::shared_ptr<spdlog::logger> Quiet(const std::string& name) {
  return std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::null_sink_mt>());
}

// One node: its session client, modules and the states its last step published.
struct Node {
  config::NodeDef def;
  std::mutex mutex;
  std::unique_ptr<session::SessionClient> client;
  std::vector<std::unique_ptr<node::Module>> modules;
  std::unique_ptr<node::ClientModuleContext> context;
  node::NodeParams params;  // node.<name>.*, answered between steps (lock-step: applied at once)
  node::ModuleScheduler scheduler;
  std::vector<std::string> states;     // NodeStates of the last step, in order
  std::vector<std::string> data;       // measurement digests of the last step, in order
  std::vector<protocol::Message> published;  // the measurements themselves, for options.on_data
  uint64_t data_messages = 0;
};

std::vector<std::unique_ptr<node::Module>> MakeModules(const config::SessionDef& s, const config::NodeDef& d) {
  // A driver runs headless on a script or the driver model: no window, no live device.
  const bool headless_driver = d.role == protocol::Role::kDriver && d.headless && d.input != "sdl";
  if (d.role != protocol::Role::kTraffic && d.role != protocol::Role::kSensor && d.role != protocol::Role::kObserver &&
      !headless_driver)
    throw std::invalid_argument("in-process sessions run traffic, sensor and observer nodes, and headless drivers "
                                "without a live input");
  auto m = node::roles::MakeModules(s, d, Quiet(d.name));
  m.push_back(std::make_unique<node::ViewMonitor>(s, d.name, Quiet(d.name)));
  return m;
}

// A measurement's content, without what differs between process runs (host epoch) by design.
std::string Digest(const protocol::Message& m) {
  session::Hasher h;
  if (const auto* c = std::get_if<protocol::PointCloud>(&m)) {
    h.Bytes(c->header.sensor_id.data(), c->header.sensor_id.size());
    h.Value(c->header.stamp_ns);
    h.Value(c->header.sequence);
    h.Bytes(c->points.data(), c->points.size());
  } else if (const auto* r = std::get_if<protocol::RadarScan>(&m)) {
    h.Value(r->header.stamp_ns);
    for (const auto& d : r->detections) {
      h.Value(d.range_m);
      h.Value(d.azimuth_rad);
      h.Value(d.range_rate_mps);
      h.Value(d.entity_id);
    }
  } else {
    const std::string bytes = protocol::Encode(m);
    h.Value(bytes.size());
  }
  return std::to_string(h.Digest());
}

}  // namespace

InProcessResult RunInProcess(config::SessionDef session, int worker_threads, const InProcessOptions& options) {
  if (session.step.end_s <= 0) throw std::invalid_argument("RunInProcess needs [session] end_s > 0");
  session.step.lockstep = true;
  // One reference time for everyone: every node's local oscillator is the server's clock.
  clock::ManualOscillator clock(1'000'000'000);
  server::WorldCore core(session, Quiet("server"));
  core.SetBoundPorts(server::BoundPorts{7400, 7401, 7402, 7403});
  core.SetAutostart(0);
  if (options.setup_core) options.setup_core(core);

  std::vector<std::unique_ptr<Node>> nodes;
  for (const auto& def : session.nodes) {
    auto n = std::make_unique<Node>();
    n->def = def;
    session::ClientDef cd;
    cd.name = def.name;
    cd.role = def.role;
    cd.host = "in-process";
    cd.lockstep_member = true;
    cd.clock = session.clock;
    n->client = std::make_unique<session::SessionClient>(cd, clock, nullptr);
    n->modules = MakeModules(session, def);
    if (options.on_modules) options.on_modules(def, n->modules);
    Node* raw = n.get();
    n->context = std::make_unique<node::ClientModuleContext>(
        *n->client, n->mutex, [raw](std::string b) { raw->states.push_back(std::move(b)); }, dr::DefaultSendPolicyDef(),
        options.publish_every_step);
    const bool keep = static_cast<bool>(options.on_data);
    n->context->SetDataSink([raw, keep](const protocol::Message& m) {
      raw->data.push_back(Digest(m));
      if (keep) raw->published.push_back(m);
    });
    const std::string prefix = "node." + def.name + ".";
    for (auto& m : n->modules) m->Params(n->params.Registry(), prefix);
    n->context->SetParams(&n->params);
    n->client->on_param_request = [raw](const protocol::Message& request) { return raw->params.Answer(request, true); };
    nodes.push_back(std::move(n));
  }
  auto find = [&](const std::string& peer) -> Node* {
    for (auto& n : nodes)
      if (n->def.name == peer) return n.get();
    return nullptr;
  };

  // Hands every queued message to its receiver until nothing moves.
  auto deliver = [&] {
    const int64_t now = clock.NowNs();
    if (options.on_poll) options.on_poll(core, now);
    for (bool moved = true; moved;) {
      moved = false;
      for (auto& n : nodes) {
        n->client->Poll(now);
        for (auto& out : n->client->TakeOutgoing()) {
          moved = true;
          const auto decoded = protocol::Decode(out.bytes);
          if (out.socket == Socket::kControl) core.OnControl(n->def.name, "127.0.0.1", decoded, now);
          else if (out.socket == Socket::kState) core.OnState(decoded, now);
          else if (out.socket == Socket::kTime)
            if (auto reply = core.AnswerTime(decoded, now, now)) n->client->OnMessage(Socket::kTime, protocol::Encode(*reply), now);
        }
      }
      core.Poll(now);
      for (auto& o : core.TakeOutgoing()) {
        moved = true;
        const std::string bytes = protocol::Encode(o.message);
        if (o.target == server::Outgoing::Target::kBroadcast) {
          if (options.on_world)
            if (const auto* w = std::get_if<protocol::WorldState>(&o.message)) options.on_world(*w, bytes);
          for (auto& n : nodes) n->client->OnMessage(Socket::kWorld, bytes, now);
        } else if (Node* n = find(o.peer)) {
          n->client->OnMessage(Socket::kControl, bytes, now);
        } else if (options.on_reply) {
          options.on_reply(o.peer, o.message);
        }
      }
    }
  };

  // Steps one node at its granted step: its modules, then one NodeState carrying the acknowledgement.
  auto step_node = [](Node& n) { node::StepGranted(n.modules, *n.client, n.mutex, *n.context, n.scheduler); };

  InProcessResult result;
  session::Hasher data_hash;
  const int threads = std::max(1, worker_threads);
  for (int guard = 0; !core.Finished() && guard < 10'000'000; ++guard) {
    deliver();
    std::vector<Node*> due;
    for (auto& n : nodes)
      if (n->client->Advancing()) due.push_back(n.get());
    if (due.empty()) {
      clock.Advance(100'000);  // 0.1 ms of reference time: the start instant, time exchanges
      continue;
    }
    // Nodes step in parallel: each touches only its own modules, context and client.
    std::vector<std::thread> workers;
    for (int w = 1; w < threads; ++w)
      workers.emplace_back([&, w] {
        for (size_t i = w; i < due.size(); i += threads) step_node(*due[i]);
      });
    for (size_t i = 0; i < due.size(); i += threads) step_node(*due[i]);
    for (auto& t : workers) t.join();
    // What they published goes to the server in node order, whatever the thread count.
    for (Node* n : due) {
      for (auto& s : n->states) n->client->SendState(std::move(s));
      n->states.clear();
      for (const auto& d : n->data) data_hash.Bytes(d.data(), d.size());
      n->data_messages += n->data.size();
      n->data.clear();
      for (const auto& m : n->published) options.on_data(m);
      n->published.clear();
    }
    clock.Advance(10'000);
  }
  deliver();

  result.steps = core.StepsGranted();
  result.sim_time_ns = core.SimTimeAt(clock.NowNs());
  std::vector<protocol::EntityState> merged;
  for (const auto& [id, e] : core.Entities()) merged.push_back(e.state);
  result.entities = merged.size();
  result.server_hash = session::WorldHash(merged);
  for (auto& n : nodes) {
    std::vector<protocol::EntityState> seen = n->context->OwnedTruth();
    for (auto& e : n->client->World().Received()) seen.push_back(std::move(e));
    result.node_hash[n->def.name] = session::WorldHash(std::move(seen));
    result.data_messages += n->data_messages;
  }
  result.data_hash = data_hash.Digest();
  return result;
}

}  // namespace platoon::testing
