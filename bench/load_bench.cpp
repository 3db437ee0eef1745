// Server capacity: N simulated nodes in one process against a real platoon-server.
// Each simulated node is a session::SessionClient with its own four sockets (join, heartbeats, time sync,
// snapshot, world stream) and publishes E vehicles on circles through the send policy (dr::SendPolicy, the
// dead-reckoning thresholds) or at every step. A few threads drive all of them with one zmq_poll each.
// A few receiving nodes run the full client path on the world stream and measure relay latency (owner
// stamp -> server -> receiver, on the synced sim clock); the others read and drop their world stream, so
// that the server still writes it to N peers. Server CPU comes from /proc/<pid>/stat.
// Floor, same run and same process: one PUB -> N SUB sockets polled the same way, at 60 Hz, with a
// payload as large as the mean world-state broadcast of the platoon run; and, as a diagnostic, the same at
// the platoon run's broadcast rate.
#include "percentile.hpp"
#include "platoon/clock/oscillator.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/process/child.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/session/session_client.hpp"
#include "platoon/transport/channel.hpp"

#include "bench_support.hpp"

#include <CLI/CLI.hpp>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using platoon::process::Child;
using namespace std::chrono_literals;
namespace session = platoon::session;
namespace transport = platoon::transport;
namespace protocol = platoon::protocol;

namespace {

using platoon::bench::CpuSeconds;
using platoon::bench::Percentile;

int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Options {
  int entities = 16;
  double step_hz = 60;
  bool threshold = true;
  int receivers = 8;            // in all
  int threads = 2;              // for the other nodes
  bool receiver_thread = true;  // the receivers on a thread of their own (else spread over `threads`)
  double warmup_s = 4, seconds = 6;
  int keyframe_parts = 0;  // [server] keyframe_parts of the session: 0 auto (rolling past 512 entities), 1 whole
  double min_forward_ms = -1;  // [server] min_forward_interval_ms of the session; < 0: the server's default
  bool rate_floor = true;      // also the floor at the relay's broadcast rate (a diagnostic)
};

// One simulated node: the session client core and its four sockets (what session::ClientLink holds,
// driven here from a shared poll loop instead of a thread of its own).
struct SimNode {
  SimNode(zmq::context_t& ctx, const std::string& name, bool receiver, const platoon::clock::Oscillator& osc,
          const std::string& control_endpoint, double warmup_s)
      : client(MakeDef(name, warmup_s), osc, nullptr),
        name(name),
        receiver(receiver),
        control(ctx, transport::Pattern::kDealer, Io(kSendIo)),
        time(ctx, transport::Pattern::kDealer, Io(kSendIo)),
        world(ctx, transport::Pattern::kSub, Io(kWorldIo)),
        state(ctx, transport::Pattern::kPush, Io(kSendIo)) {
    control.Connect(control_endpoint);
  }
  // The generator's two I/O threads: one reads the N world streams, the other carries the nodes' own
  // messages, so that hundreds of broadcasts arriving never hold up a state on its way to the server (as
  // they would not in N processes on N PCs).
  static constexpr uint64_t kSendIo = 1, kWorldIo = 2;
  static transport::ChannelDef Io(uint64_t affinity) { return transport::ChannelDef{.io_affinity = affinity}; }
  static session::ClientDef MakeDef(const std::string& name, double warmup_s) {
    session::ClientDef d = session::DefaultClientDef(name, protocol::Role::kTraffic);
    d.stats_warmup_s = warmup_s;
    return d;
  }

  session::SessionClient client;
  std::string name;
  bool receiver;
  transport::Channel control, time, world, state;
  session::ServerPorts connected;
  std::vector<platoon::dr::SendPolicy> policies;
  int64_t next_step_ns = 0;
  uint64_t sequence = 0;
};

// What the world streams showed, over the measured window.
struct WorldSeen {
  uint64_t broadcasts = 0, bytes = 0, keyframes = 0, keyframe_bytes = 0, largest = 0, dropped_reads = 0;
};

struct PlatoonResult {
  double p50_us = 0, p99_us = 0, server_cpu = 0, self_cpu = 0, entities_per_s = 0, mean_world_bytes = 0,
         keyframe_bytes = 0, largest_world_bytes = 0, broadcasts_per_s = 0;
  double to_server_p50_us = 0, to_server_p99_us = 0, fan_out_p50_us = 0, fan_out_p99_us = 0;  // the latency's two halves
  size_t samples = 0;
  int joined = 0, synced = 0;
  size_t world_min = 0, world_max = 0;  // entities in the receivers' worlds at the end (each: (N - 1) * E)
};

// A vehicle on a circle: radius from its index, 10-20 m/s, so that the send policy sends on its own terms.
platoon::KinematicState Truth(int node, int index, int64_t sim_ns) {
  const double r = 30.0 + 5.0 * index, v = 10.0 + (index % 5) * 2.0, w = v / r;
  const double t = static_cast<double>(sim_ns) / 1e9, a = w * t + node * 0.1;
  // One sincos of a / 2 gives a's (double angle) and the heading a + pi/2's half-angle quaternion, so that
  // the generator spends its time on the nodes' work rather than on trigonometry.
  const double sh = std::sin(0.5 * a), ch = std::cos(0.5 * a);
  const double ca = ch * ch - sh * sh, sa = 2 * sh * ch;
  platoon::KinematicState k;
  k.stamp_ns = sim_ns;
  k.pose.position_m = platoon::Vec3(r * ca + 500.0 * node, r * sa, 0);
  k.pose.orientation = platoon::Quat(M_SQRT1_2 * (ch - sh), 0, 0, M_SQRT1_2 * (sh + ch));
  k.velocity_mps = platoon::Vec3(-v * sa, v * ca, 0);
  k.acceleration_mps2 = platoon::Vec3(-v * w * ca, -v * w * sa, 0);
  k.angular_velocity_radps = platoon::Vec3(0, 0, w);
  return k;
}

// A send policy per vehicle, each with its own heartbeat phase, as a node's ClientModuleContext makes them.
void ResetPolicies(SimNode& n, int entities) {
  n.policies.clear();
  for (int k = 0; k < entities; ++k)
    n.policies.emplace_back(platoon::dr::DefaultSendPolicyDef(),
                            platoon::EntityPhase(platoon::VehicleId(n.name, static_cast<uint32_t>(k))));
}

void Follow(SimNode& n) {
  const auto ports = n.client.Ports();
  auto follow = [&](transport::Channel& c, uint16_t& current, uint16_t port) {
    if (current == port || port == 0) return;
    if (current) c.Disconnect(transport::TcpEndpoint("127.0.0.1", current));
    c.Connect(transport::TcpEndpoint("127.0.0.1", port));
    current = port;
  };
  follow(n.time, n.connected.time, ports.time);
  follow(n.world, n.connected.world, ports.world);
  follow(n.state, n.connected.state, ports.state);
}

// Sends what the client queued; returns a mask of the sockets sent on (1 time, 2 control).
unsigned SendQueued(SimNode& n) {
  unsigned sent_on = 0;
  for (auto& o : n.client.TakeOutgoing()) {
    switch (o.socket) {
      case session::Socket::kControl:
        n.control.Send(o.bytes);
        sent_on |= 2;
        break;
      case session::Socket::kTime:
        n.time.Send(o.bytes);
        sent_on |= 1;
        break;
      case session::Socket::kWorld: break;
      case session::Socket::kState:
        if (n.connected.state) n.state.Send(o.bytes);
        break;
    }
  }
  return sent_on;
}

bool Readable(transport::Channel& c) { return (c.Socket().get(zmq::sockopt::events) & ZMQ_POLLIN) != 0; }

// Drives `nodes` until `end_ns`: the clients' timed work, each node's vehicles at step_hz (each node at its
// own phase, as independent processes would be), and their sockets' input. The sockets are watched through
// their ZMQ_FD in one epoll set, so that a turn costs what is ready, not a look at every socket (zmq_poll
// over hundreds of sockets costs more than the nodes' own work). A socket's FD only says its state may have
// changed: a signalled socket is read until empty, and so is a socket just sent on (the send may have taken
// the signal of a message that arrived meanwhile).
void DriveNodes(std::vector<SimNode*> nodes, const Options& o, int64_t measure_from_ns, int64_t end_ns,
                WorldSeen& seen, std::atomic<uint64_t>& entities_sent) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::runtime_error("epoll_create1 failed");
  for (size_t i = 0; i < nodes.size(); ++i) {
    transport::Channel* socks[3] = {&nodes[i]->time, &nodes[i]->control, &nodes[i]->world};
    for (uint64_t j = 0; j < 3; ++j) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = 3 * i + j;
      const int fd = socks[j]->Socket().get(zmq::sockopt::fd);
      if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error("epoll_ctl failed");
    }
  }
  const auto period = static_cast<int64_t>(1e9 / o.step_hz);
  uint64_t sent = 0;
  std::vector<epoll_event> events(256);
  auto read_socket = [&](SimNode& n, uint64_t which) {
    switch (which) {
      case 0:
        while (auto p = n.time.TryReceive()) n.client.OnMessage(session::Socket::kTime, p->data, MonoNs());
        break;
      case 1:
        while (auto p = n.control.TryReceive()) n.client.OnMessage(session::Socket::kControl, p->data, MonoNs());
        break;
      default:
        while (auto p = n.world.TryReceive()) {
          if (n.receiver) n.client.OnMessage(session::Socket::kWorld, p->data, MonoNs());
          else ++seen.dropped_reads;
        }
    }
  };
  // Every socket once before the first wait: a message may have come before its FD was watched.
  for (auto* n : nodes)
    for (uint64_t j = 0; j < 3; ++j) read_socket(*n, j);
  while (true) {
    const int64_t now = MonoNs();
    if (now >= end_ns) break;
    int64_t due = end_ns;
    for (auto* n : nodes) due = std::min({due, n->client.NextDueNs(), n->next_step_ns});
    // epoll waits in whole ms: round up, so that work due within the next ms waits for it (at most 1 ms
    // late, as a node process's own scheduling may be) instead of spinning until it is due.
    const int timeout_ms = static_cast<int>(std::clamp<int64_t>((due - now + 999'999) / 1'000'000, 0, 5));
    const int ready = epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int k = 0; k < ready; ++k) {
      const uint64_t idx = events[static_cast<size_t>(k)].data.u64;
      SimNode& n = *nodes[idx / 3];
      transport::Channel* socks[3] = {&n.time, &n.control, &n.world};
      if (Readable(*socks[idx % 3])) read_socket(n, idx % 3);
    }
    const int64_t t = MonoNs();
    for (auto* np : nodes) {
      SimNode& n = *np;
      if (t >= n.client.NextDueNs()) n.client.Poll(t);
      // The node's vehicles, while sim time runs here.
      if (t >= n.next_step_ns) {
        n.next_step_ns = std::max(n.next_step_ns + period, t);
        if (n.client.TakeRejoined()) ResetPolicies(n, o.entities);
        if (n.client.Joined() && n.client.Advancing()) {
          const int64_t sim = n.client.SimNowNs();
          protocol::NodeState ns;
          ns.node_id = n.client.NodeId();
          ns.sequence = ++n.sequence;
          ns.token = n.client.StateToken();
          for (int k = 0; k < o.entities; ++k) {
            const auto truth = Truth(static_cast<int>(n.client.NodeId()), k, sim);
            auto& policy = n.policies[static_cast<size_t>(k)];
            if (o.threshold && !policy.ShouldSend(truth, sim)) continue;
            policy.MarkSent(truth);
            protocol::EntityState e;
            e.id = platoon::VehicleId(n.name, static_cast<uint32_t>(k));
            e.owner_node = ns.node_id;
            e.kind = protocol::EntityKind::kCar;
            e.kinematics = truth;
            ns.entities.push_back(e);
          }
          if (!ns.entities.empty()) {
            if (t >= measure_from_ns) sent += ns.entities.size();
            n.client.SendState(protocol::Encode(ns));
          }
        }
      }
      Follow(n);
      const unsigned sent_on = SendQueued(n);
      if ((sent_on & 1) && Readable(n.time)) read_socket(n, 0);
      if ((sent_on & 2) && Readable(n.control)) read_socket(n, 1);
    }
  }
  close(ep);
  entities_sent += sent;
}

std::string WriteSession(const std::string& dir, int n, int entities, int keyframe_parts, double min_forward_ms) {
  const std::string path = dir + "/load.toml";
  std::ofstream f(path);
  // Raised limits (said in the bench's header line): room for n nodes and their entities.
  f << "[session]\nname = \"load\"\n[server]\nbind_address = \"127.0.0.1\"\nstatus_interval_s = 0\n"
    << "max_nodes = " << n + 16 << "\nmax_entities = " << std::max(20000, 2 * n * entities) << "\n"
    << "keyframe_parts = " << keyframe_parts << "\n"
    << (min_forward_ms >= 0 ? "min_forward_interval_ms = " + std::to_string(min_forward_ms) + "\n" : "")
    << "[security]\nmode = \"off\"\n";
  return path;
}

PlatoonResult MeasurePlatoon(const std::string& bin, int n, const Options& o) {
  namespace fs = std::filesystem;
  const std::string dir = fs::temp_directory_path() / ("platoon-load-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string ready = dir + "/ready.json";
  Child server = Child::Spawn({bin + "/platoon-server", "--config", WriteSession(dir, n, o.entities, o.keyframe_parts, o.min_forward_ms), "--bind",
                               "127.0.0.1", "--port", "0", "--ready-file", ready, "--autostart", "0", "--log-level",
                               "warn"});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!fs::exists(ready)) {
    if (server.TryWait() || std::chrono::steady_clock::now() > deadline) throw std::runtime_error("server did not start");
    server.ReadLine(20ms);
  }
  std::ifstream rf(ready);
  const std::string json((std::istreambuf_iterator<char>(rf)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"control\":(\\d+)"))) throw std::runtime_error("bad ready file");
  const std::string control = "tcp://127.0.0.1:" + m[1].str();

  zmq::context_t ctx(2);
  ctx.set(zmq::ctxopt::max_sockets, 8 * n + 64);
  const platoon::clock::MonotonicOscillator osc;
  std::vector<std::unique_ptr<SimNode>> nodes;
  const int64_t start = MonoNs();
  const auto period = static_cast<int64_t>(1e9 / o.step_hz);
  // The first `receivers` nodes run on a thread of their own, as a node process's network thread is its own
  // (its simulation never holds up the world stream it applies); the other nodes run on `threads` threads,
  // node i on thread i % threads. Without receiver_thread the receivers are spread over those threads too.
  for (int i = 0; i < n; ++i) {
    const bool receiver = i < o.receivers;
    nodes.push_back(std::make_unique<SimNode>(ctx, "sim" + std::to_string(i), receiver, osc, control, o.warmup_s));
    nodes.back()->next_step_ns = start + period * i / n;
    ResetPolicies(*nodes.back(), o.entities);
  }
  // The receivers' world taps count broadcast and keyframe sizes in the measured window, and split the
  // latency of each state new to the receiver at the server's build stamp: owner stamp -> built (the owner's
  // send, the server's read, merge and wait for the next broadcast) and built -> applied (the fan-out).
  // The owner's sim stamp is put on the reference clock with the receiver's own sim-to-reference offset
  // (every process here reads CLOCK_MONOTONIC, the server's reference).
  const int64_t measure_from = start + static_cast<int64_t>(o.warmup_s * 1e9);
  const int64_t end = measure_from + static_cast<int64_t>(o.seconds * 1e9);
  const int loops = o.threads + (o.receiver_thread ? 1 : 0);
  std::vector<WorldSeen> seen(static_cast<size_t>(loops));
  std::mutex tap_mutex;
  WorldSeen tapped;
  std::vector<double> to_server_us, fan_out_us;
  for (auto& node : nodes)
    if (node->receiver)
      node->client.on_world_broadcast = [&, me = node.get(), newest = std::unordered_map<uint64_t, int64_t>()](
                                            std::string_view bytes, const protocol::WorldState& w, int64_t local_ns) mutable {
        const int64_t sim_to_ref = MonoNs() - me->client.SimNowNs();
        std::vector<int64_t> fresh;  // stamps of the states new to this receiver
        for (const auto& e : w.entities) {
          int64_t& seen_stamp = newest[e.id];
          if (e.kinematics.stamp_ns <= seen_stamp) continue;
          seen_stamp = e.kinematics.stamp_ns;
          fresh.push_back(e.kinematics.stamp_ns);
        }
        if (local_ns < measure_from) return;
        std::lock_guard lock(tap_mutex);
        for (int64_t stamp : fresh) {
          to_server_us.push_back(static_cast<double>(w.server_time_ns - (stamp + sim_to_ref)) / 1e3);
          fan_out_us.push_back(static_cast<double>(local_ns - w.server_time_ns) / 1e3);
        }
        ++tapped.broadcasts;
        tapped.bytes += bytes.size();
        tapped.largest = std::max<uint64_t>(tapped.largest, bytes.size());
        if (w.keyframe) {
          ++tapped.keyframes;
          tapped.keyframe_bytes += bytes.size();
        }
      };
  std::atomic<uint64_t> entities_sent{0};
  std::vector<std::thread> threads;
  double cpu0 = 0, self0 = 0;
  std::vector<std::vector<SimNode*>> by_loop(static_cast<size_t>(loops));
  for (int i = 0; i < n; ++i) {
    const bool own = o.receiver_thread && nodes[static_cast<size_t>(i)]->receiver;
    by_loop[static_cast<size_t>(own ? o.threads : i % o.threads)].push_back(nodes[static_cast<size_t>(i)].get());
  }
  for (int t = 0; t < loops; ++t)
    threads.emplace_back([&, t] {
      DriveNodes(by_loop[static_cast<size_t>(t)], o, measure_from, end, seen[static_cast<size_t>(t)], entities_sent);
    });
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(measure_from)));
  cpu0 = CpuSeconds(server.Pid());
  self0 = SelfCpuSeconds();
  const int64_t w0 = MonoNs();
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(end - 100'000'000)));
  const double cpu1 = CpuSeconds(server.Pid()), self1 = SelfCpuSeconds();
  const double window = static_cast<double>(MonoNs() - w0) / 1e9;
  for (auto& th : threads) th.join();

  PlatoonResult r;
  r.server_cpu = (cpu1 - cpu0) / window;
  r.self_cpu = (self1 - self0) / window;
  r.entities_per_s = static_cast<double>(entities_sent.load()) / o.seconds;
  std::vector<double> lat;
  r.world_min = SIZE_MAX;
  for (auto& node : nodes) {
    r.joined += node->client.Joined();
    r.synced += node->client.Clock().IsSet();
    if (!node->receiver) continue;
    r.world_min = std::min(r.world_min, node->client.World().Size());
    r.world_max = std::max(r.world_max, node->client.World().Size());
    for (int64_t v : node->client.Stats().latencies_ns) lat.push_back(static_cast<double>(v) / 1e3);
  }
  r.samples = lat.size();
  r.p50_us = Percentile(lat, 50);
  r.p99_us = Percentile(lat, 99);
  r.mean_world_bytes = tapped.broadcasts ? static_cast<double>(tapped.bytes) / static_cast<double>(tapped.broadcasts) : 0;
  r.keyframe_bytes = tapped.keyframes ? static_cast<double>(tapped.keyframe_bytes) / static_cast<double>(tapped.keyframes) : 0;
  r.largest_world_bytes = static_cast<double>(tapped.largest);
  r.broadcasts_per_s = static_cast<double>(tapped.broadcasts) / o.seconds / o.receivers;
  r.to_server_p50_us = Percentile(to_server_us, 50);
  r.to_server_p99_us = Percentile(to_server_us, 99);
  r.fan_out_p50_us = Percentile(fan_out_us, 50);
  r.fan_out_p99_us = Percentile(fan_out_us, 99);
  nodes.clear();
  server.Signal(SIGTERM);
  server.WaitFor(5s);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

struct Floor {
  double p50_us = 0, p99_us = 0;
  size_t samples = 0;
};

// One PUB (its own thread, `rate_hz` messages a second, `bytes` each, a send-time stamp in front) -> n SUB
// sockets in this process, read as the simulated nodes read theirs: the first `receivers` measure the
// latency, on a thread of their own with receiver_thread, the others are read and dropped by `threads`
// poll loops.
Floor MeasureFloor(int n, size_t bytes, double rate_hz, const Options& o) {
  zmq::context_t ctx(2);
  ctx.set(zmq::ctxopt::max_sockets, 2 * n + 64);
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  pub.set(zmq::sockopt::sndhwm, 1000);
  pub.bind("tcp://127.0.0.1:*");
  const std::string ep = pub.get(zmq::sockopt::last_endpoint);
  std::vector<zmq::socket_t> subs;
  for (int i = 0; i < n; ++i) {
    subs.emplace_back(ctx, zmq::socket_type::sub);
    subs.back().set(zmq::sockopt::subscribe, "");
    subs.back().connect(ep);
  }
  const double seconds = std::min(o.seconds, 5.0);
  const int64_t start = MonoNs(), measure_from = start + 1'000'000'000, end = measure_from + static_cast<int64_t>(seconds * 1e9);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    std::string msg(std::max<size_t>(bytes, 8), 'x');
    const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / rate_hz));
    auto next = std::chrono::steady_clock::now();
    while (!stop.load()) {
      next += period;
      std::this_thread::sleep_until(next);
      const int64_t t = MonoNs();
      std::memcpy(msg.data(), &t, 8);
      pub.send(zmq::buffer(msg), zmq::send_flags::dontwait);
    }
  });
  const int loops = o.threads + (o.receiver_thread ? 1 : 0);
  std::vector<std::vector<size_t>> by_loop(static_cast<size_t>(loops));
  for (int i = 0; i < n; ++i) {
    const bool own = o.receiver_thread && i < o.receivers;
    by_loop[static_cast<size_t>(own ? o.threads : i % o.threads)].push_back(static_cast<size_t>(i));
  }
  std::vector<std::vector<double>> lat(static_cast<size_t>(loops));
  std::vector<std::thread> readers;
  // Each loop watches its sockets' ZMQ_FD in one epoll set and reads a signalled socket until empty, as
  // DriveNodes reads the simulated nodes' world streams.
  for (int t = 0; t < loops; ++t)
    readers.emplace_back([&, t] {
      const auto& mine = by_loop[static_cast<size_t>(t)];
      const int epfd = epoll_create1(EPOLL_CLOEXEC);
      if (epfd < 0) throw std::runtime_error("epoll_create1 failed");
      for (size_t k = 0; k < mine.size(); ++k) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = k;
        const int fd = subs[mine[k]].get(zmq::sockopt::fd);
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error("epoll_ctl failed");
      }
      auto drain = [&](size_t k) {
        zmq::socket_t& s = subs[mine[k]];
        const bool measures = static_cast<int>(mine[k]) < o.receivers;
        zmq::message_t m;
        while (s.recv(m, zmq::recv_flags::dontwait)) {
          if (!measures) continue;
          const int64_t now = MonoNs();
          int64_t stamp = 0;
          std::memcpy(&stamp, m.data(), 8);
          if (stamp >= measure_from) lat[static_cast<size_t>(t)].push_back(static_cast<double>(now - stamp) / 1e3);
        }
      };
      for (size_t k = 0; k < mine.size(); ++k) drain(k);
      std::vector<epoll_event> events(256);
      while (MonoNs() < end) {
        const int ready = epoll_wait(epfd, events.data(), static_cast<int>(events.size()), 5);
        for (int i = 0; i < ready; ++i) {
          const size_t k = events[static_cast<size_t>(i)].data.u64;
          if (subs[mine[k]].get(zmq::sockopt::events) & ZMQ_POLLIN) drain(k);
        }
      }
      close(epfd);
    });
  for (auto& r : readers) r.join();
  stop.store(true);
  sender.join();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  return Floor{Percentile(all, 50), Percentile(all, 99), all.size()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"load_bench: N simulated nodes (each a session client with its own sockets) against a real\n"
               "platoon-server: server CPU, relay latency p50/p99 and world-state sizes, beside a PUB -> N SUB floor\n"
               "measured in the same run and process."};
  std::vector<int> counts = {64, 128, 256};
  Options o;
  std::string publish = "threshold";
  app.add_option("--nodes", counts, "Simulated node counts")->delimiter(',')->capture_default_str();
  app.add_option("--entities", o.entities, "Vehicles per node")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--publish", publish, "threshold: the send policy (dead-reckoning thresholds); fixed: every vehicle every step")
      ->check(CLI::IsMember({"fixed", "threshold"}))
      ->capture_default_str();
  app.add_option("--receivers", o.receivers, "Nodes that apply the world stream and measure latency (in all)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--receiver-thread", o.receiver_thread,
                 "true: the receivers on a thread of their own, as a node's network thread is; false: spread over "
                 "--threads with the other nodes (each loop's work then delays the world stream it reads)")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Threads driving the other simulated nodes")->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--warmup", o.warmup_s, "Seconds before measuring (joins, clock sync)")->capture_default_str();
  app.add_option("--seconds", o.seconds, "Measured seconds per node count")->check(CLI::Range(1.0, 60.0))->capture_default_str();
  std::vector<int> parts_list = {0};
  app.add_option("--keyframe-parts", parts_list,
                 "[server] keyframe_parts to run each node count with: 0 auto (a rolling keyframe past 512 entities), "
                 "1 whole keyframes; e.g. 1,0 measures both in one run")
      ->delimiter(',')
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--min-forward-ms", o.min_forward_ms,
                 "[server] min_forward_interval_ms of the session (deltas at least this far apart); default: the "
                 "server's own (0)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--rate-floor", o.rate_floor,
                 "Also measure the floor at the relay's own broadcast rate (bc/s) instead of 60 Hz: what carrying "
                 "that many messages to N subscribers costs ZeroMQ and this machine alone (a diagnostic; the ratio "
                 "column stays against the 60 Hz floor)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.threshold = publish == "threshold";

  // Four sockets per node, each with a descriptor or two: raise the open-file limit (the server inherits it).
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);

  const std::string bin = platoon::process::ExecutableDir();
  std::printf("load_bench: %d vehicles per simulated node at %.0f Hz, %s publishing, %d threads, %d receivers, %.0f s "
              "measured after %.0f s warm-up, loopback, %u cores; session file raises [server] max_nodes to N + 16 "
              "and max_entities to max(20000, 2 N E)\n\n",
              o.entities, o.step_hz, publish.c_str(), o.threads, o.receivers, o.seconds, o.warmup_s,
              std::thread::hardware_concurrency());
  if (o.min_forward_ms >= 0) std::printf("[server] min_forward_interval_ms = %.1f\n", o.min_forward_ms);
  std::printf("%6s | %5s | %19s | %19s | %6s | %19s | %19s | %19s | %6s | %6s | %5s | %8s | %8s | %9s | %9s | %s\n",
              "nodes", "parts", "relay p50 / p99 ms", "floor p50 / p99 ms", "ratio", "floor at bc/s p99", "to server p50/p99",
              "fan-out p50/p99", "server", "bench", "bc/s", "ent/s", "mean B", "largest B", "egress MB/s", "keyframe B");
  for (int n : counts) {
    if (o.receivers > n) {
      std::fprintf(stderr, "load_bench: --receivers %d is more than --nodes %d\n", o.receivers, n);
      return 2;
    }
    for (int parts : parts_list) {
      o.keyframe_parts = parts;
      const PlatoonResult r = MeasurePlatoon(bin, n, o);
      const size_t mean_bytes = static_cast<size_t>(std::max(64.0, r.mean_world_bytes));
      const Floor f = MeasureFloor(n, mean_bytes, o.step_hz, o);
      // The same floor at the relay's own broadcast rate: what carrying that many messages to n
      // subscribers costs ZeroMQ and this machine alone (a diagnostic, not the goal's floor).
      const Floor fr = o.rate_floor ? MeasureFloor(n, mean_bytes, std::max(o.step_hz, r.broadcasts_per_s), o) : Floor{};
      // What the server writes: every broadcast to every one of the n subscribers.
      const double egress_mbps = static_cast<double>(n) * r.mean_world_bytes * r.broadcasts_per_s / 1e6;
      std::printf("%6d | %5s | %8.2f / %8.2f | %8.2f / %8.2f | %5.2fx | %8.2f (%6.2fx) | %8.2f / %8.2f | %8.2f / %8.2f | "
                  "%5.0f%% | %5.0f%% | %5.0f | %8.0f | %8.0f | %9.0f | %11.0f | %.0f  (%d joined, %d synced, %zu relay "
                  "samples, %zu floor samples, receivers' worlds %zu-%zu entities of %d)\n",
                  n, parts == 0 ? "auto" : std::to_string(parts).c_str(), r.p50_us / 1e3, r.p99_us / 1e3,
                  f.p50_us / 1e3, f.p99_us / 1e3, f.p99_us > 0 ? r.p99_us / f.p99_us : 0, fr.p99_us / 1e3,
                  fr.p99_us > 0 ? r.p99_us / fr.p99_us : 0, r.to_server_p50_us / 1e3,
                  r.to_server_p99_us / 1e3, r.fan_out_p50_us / 1e3, r.fan_out_p99_us / 1e3, 100 * r.server_cpu,
                  100 * r.self_cpu, r.broadcasts_per_s, r.entities_per_s, r.mean_world_bytes, r.largest_world_bytes,
                  egress_mbps, r.keyframe_bytes, r.joined, r.synced, r.samples, f.samples, r.world_min, r.world_max,
                  (n - 1) * o.entities);
      std::fflush(stdout);
    }
  }
  return 0;
}
