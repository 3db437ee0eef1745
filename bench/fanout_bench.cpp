// Fan-out benchmark over loopback: N platoon-node processes each publish E entities at 60 Hz through
// a real platoon-server; every node measures, for every remote entity update, the time from the
// owner computing it to the node having it (owner -> server -> node). Server CPU is read from /proc.
// Floor, same run: a plain ZeroMQ PUB -> N SUB processes echo of the same payload size (one hop).
// With --kill, one node is killed -9 half-way and every other node's world-state gap histogram shows
// whether anybody waited for it.
#include "percentile.hpp"
#include "platoon/process/child.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/transport/security.hpp"

#include "bench_support.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using platoon::process::Child;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

using platoon::bench::CpuSeconds;
using platoon::bench::Percentile;
using platoon::bench::Summary;
using platoon::bench::Field;

int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// --echo-sub mode: subscribe, print "ready" on the first message, then latencies until "stop".
int EchoSub(const std::string& endpoint) {
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect(endpoint);
  std::vector<double> lat;
  bool ready = false;
  while (true) {
    zmq::message_t m;
    if (!sub.recv(m)) continue;
    const int64_t now = MonoNs();
    if (m.size() < 9) continue;
    int64_t stamp = 0;
    std::memcpy(&stamp, m.data(), 8);
    const char kind = static_cast<const char*>(m.data())[8];
    if (kind == 'S') break;
    if (!ready) {
      std::printf("ready\n");
      std::fflush(stdout);
      ready = true;
    }
    if (kind == 'D') lat.push_back(static_cast<double>(now - stamp) / 1e3);
  }
  std::printf("ECHO p50 %.1f p99 %.1f n %zu\n", Percentile(lat, 50), Percentile(lat, 99), lat.size());
  return 0;
}

struct Floor {
  double p50_us = 0, p99_us = 0;
};

// Plain PUB/SUB: one publisher (this process) -> n subscriber processes, 60 Hz, `bytes` per message.
Floor MeasureFloor(const std::string& self, int n, size_t bytes, double seconds) {
  zmq::context_t ctx(1);
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  pub.set(zmq::sockopt::sndhwm, 100000);
  pub.bind("tcp://127.0.0.1:*");
  const std::string ep = pub.get(zmq::sockopt::last_endpoint);
  std::vector<Child> subs;
  for (int i = 0; i < n; ++i) subs.push_back(Child::Spawn({self, "--echo-sub", ep}));
  std::string msg(std::max<size_t>(bytes, 9), '\0');
  auto send = [&](char kind) {
    const int64_t t = MonoNs();
    std::memcpy(msg.data(), &t, 8);
    msg[8] = kind;
    pub.send(zmq::buffer(msg), zmq::send_flags::dontwait);
  };
  // Handshake: probe until every subscriber has seen a message (PUB/SUB joins late).
  for (auto& s : subs) {
    const auto deadline = Clock::now() + 20s;
    while (Clock::now() < deadline) {
      send('P');
      if (s.WaitForLine("ready", 20ms)) break;
    }
  }
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / 60));
  auto next = Clock::now();
  for (int k = 0; k < static_cast<int>(seconds * 60); ++k) {
    next += period;
    std::this_thread::sleep_until(next);
    send('D');
  }
  std::vector<double> p50, p99;
  for (auto& s : subs) {
    std::optional<std::string> line;
    for (int tries = 0; tries < 100 && !line; ++tries) {
      send('S');
      line = s.WaitForLine("ECHO", 50ms);
    }
    if (line) {
      p50.push_back(std::stod(line->substr(line->find("p50 ") + 4)));
      p99.push_back(std::stod(line->substr(line->find("p99 ") + 4)));
    }
    s.WaitFor(2s);
  }
  return Floor{Percentile(p50, 50), Percentile(p99, 100)};
}

struct Result {
  double p50_us = 0, p99_us = 0, p99_max_us = 0, server_cpu = 0, samples = 0;
  std::array<double, 5> gaps{};
  int ok_nodes = 0;
};

// --curve: a session file with n [[node]] entries sharing one client key, [security] mode "curve" or "off"
// (the same file otherwise), so both series run the same processes with the same arguments.
std::string CurveSession(const std::string& dir, int n, bool curve) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir + "/keys/server.key")) {
    fs::create_directories(dir + "/keys/clients");
    const auto server = platoon::transport::NewKeyPair(), client = platoon::transport::NewKeyPair();
    platoon::transport::WriteKeyFile(dir + "/keys/server.key_secret", server.secret_key, "bench server", true);
    platoon::transport::WriteKeyFile(dir + "/keys/server.key", server.public_key, "bench server", false);
    platoon::transport::WriteKeyFile(dir + "/keys/clients/bench.key_secret", client.secret_key, "bench client", true);
    platoon::transport::WriteKeyFile(dir + "/keys/clients/bench.key", client.public_key, "bench client", false);
  }
  const std::string path = dir + (curve ? "/curve.toml" : "/plain.toml");
  std::ofstream f(path);
  f << "[session]\nname = \"fanout\"\n[server]\nbind_address = \"127.0.0.1\"\nstatus_interval_s = 0\n"
    << "[security]\nmode = \"" << (curve ? "curve" : "off") << "\"\nserver_key = \"keys/server.key_secret\"\n"
    << "server_public_key = \"keys/server.key\"\nclients = \"keys/clients\"\nkey = \"keys/clients/bench.key_secret\"\n";
  for (int i = 0; i < n; ++i) f << "[[node]]\nname = \"n" << i << "\"\nrole = \"traffic\"\n";
  return path;
}

// One hop's own cost of CURVE, apart from any scheduling: DEALER -> ROUTER -> DEALER round trips of
// `bytes`-byte messages over loopback TCP in this process (an echo thread), plain or CURVE (with a ZAP
// handler admitting the one client key). Returns {p50, p99} of the round trip, in us.
std::pair<double, double> PingPong(size_t bytes, bool curve, int rounds) {
  using namespace platoon::transport;
  zmq::context_t ctx(1);
  const KeyPair server = NewKeyPair(), client = NewKeyPair();
  std::unique_ptr<ZapHandler> zap;
  ChannelDef sdef, cdef;
  if (curve) {
    zap = std::make_unique<ZapHandler>(ctx, std::map<std::string, std::string>{{"bench", client.public_key}}, nullptr);
    sdef.curve = CurveDef{true, server.secret_key, server.public_key, {}};
    cdef.curve = CurveDef{false, client.secret_key, client.public_key, server.public_key};
  }
  Channel router(ctx, Pattern::kRouter, sdef), dealer(ctx, Pattern::kDealer, cdef);
  const std::string endpoint = router.Bind("tcp://127.0.0.1:*");
  dealer.Connect(endpoint);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    while (!stop.load())
      if (auto p = router.Receive(std::chrono::milliseconds(20))) router.Send(*p);
  });
  const std::string payload(bytes, 'x');
  std::vector<double> rtt;
  // The first exchanges include the handshake: warm up, then measure.
  for (int k = -50; k < rounds; ++k) {
    const int64_t t0 = MonoNs();
    while (!dealer.Send(payload)) std::this_thread::sleep_for(1ms);
    if (!dealer.Receive(std::chrono::seconds(5))) continue;
    if (k >= 0) rtt.push_back(static_cast<double>(MonoNs() - t0) / 1e3);
  }
  stop.store(true);
  echo.join();
  return {Percentile(rtt, 50), Percentile(rtt, 99)};
}

Result MeasurePlatoon(const std::string& bin, int n, int entities, double seconds, double warmup, bool kill,
                      const std::string& publish, const std::string& session = "") {
  const std::string ready = std::filesystem::temp_directory_path() / ("platoon-fanout-" + std::to_string(getpid()) + ".json");
  std::filesystem::remove(ready);
  std::vector<std::string> server_args = {bin + "/platoon-server", "--bind", "127.0.0.1", "--port", "0", "--ready-file",
                                          ready, "--autostart", "0", "--log-level", "warn"};
  if (!session.empty()) server_args.insert(server_args.end(), {"--config", session});
  Child server = Child::Spawn(server_args);
  while (!std::filesystem::exists(ready)) {
    if (server.TryWait()) throw std::runtime_error("server did not start");
    server.ReadLine(20ms);
  }
  std::ifstream f(ready);
  std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(ready);
  const std::string port = std::to_string(static_cast<int>(Field(json, "control")));

  const double total = warmup + seconds;
  std::vector<Child> nodes;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args = {bin + "/platoon-node", "--name", "n" + std::to_string(i), "--role", "traffic",
                                     "--vehicles", std::to_string(entities), "--publish", publish, "--module-hz", "60",
                                     "--monitor-hz", "10", "--server", "127.0.0.1", "--port", port, "--log-level",
                                     "warn", "--stats-warmup", std::to_string(warmup), "--exit-after",
                                     std::to_string(total)};
    if (!session.empty()) args.insert(args.end(), {"--config", session});
    nodes.push_back(Child::Spawn(args));
  }
  const auto t0 = Clock::now();
  double cpu0 = 0, cpu1 = 0;
  auto tw0 = t0, tw1 = t0;
  bool killed = false, measured0 = false, measured1 = false;
  std::vector<std::string> sink;
  while (true) {
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!measured0 && t >= warmup) {
      cpu0 = CpuSeconds(server.Pid());
      tw0 = Clock::now();
      measured0 = true;
    }
    if (kill && !killed && t >= warmup + seconds / 2) {
      nodes[0].Signal(SIGKILL);
      killed = true;
    }
    if (!measured1 && t >= total - 0.5) {
      cpu1 = CpuSeconds(server.Pid());
      tw1 = Clock::now();
      measured1 = true;
    }
    bool running = false;
    for (auto& c : nodes) {
      c.Pump(sink);
      running |= !c.TryWait().has_value();
    }
    sink.clear();
    server.Pump(sink);
    if (!running) break;
    std::this_thread::sleep_for(20ms);
  }
  Result r;
  r.server_cpu = (cpu1 - cpu0) / std::chrono::duration<double>(tw1 - tw0).count();
  std::vector<double> p50, p99;
  for (size_t i = kill ? 1 : 0; i < nodes.size(); ++i) {
    const std::string s = Summary(nodes[i]);
    if (s.empty()) {
      // A node without a SUMMARY: say why, so that a missing figure is never silent.
      const auto& lines = nodes[i].Lines();
      std::fprintf(stderr, "fanout_bench: node n%zu reported nothing; its last lines:\n", i);
      for (size_t k = lines.size() > 3 ? lines.size() - 3 : 0; k < lines.size(); ++k)
        std::fprintf(stderr, "  %s\n", lines[k].c_str());
      continue;
    }
    ++r.ok_nodes;
    p50.push_back(Field(s, "update_latency_p50_us"));
    p99.push_back(Field(s, "update_latency_p99_us"));
    r.samples += Field(s, "update_latency_samples");
    std::smatch m;
    if (std::regex_search(s, m, std::regex(R"(world_gap_hist":\[(\d+),(\d+),(\d+),(\d+),(\d+)\])")))
      for (int k = 0; k < 5; ++k) r.gaps[k] += std::stod(m[k + 1]);
  }
  r.p50_us = Percentile(p50, 50);
  r.p99_us = Percentile(p99, 50);
  r.p99_max_us = Percentile(p99, 100);
  server.Signal(SIGTERM);
  server.WaitFor(5s);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fanout_bench: owner -> server -> every node latency of platoon entity updates, server CPU, and\n"
               "world-state gaps while a node is killed, against plain ZeroMQ PUB/SUB measured in the same run."};
  std::vector<int> counts = {4, 16, 64};
  int entities = 16;
  double seconds = 10, warmup = 5;
  std::string echo_sub, publish = "fixed";
  bool no_floor = false, curve = false;
  app.add_flag("--curve", curve,
               "Relay latency with CURVE encryption and authentication against the same session without, in the same "
               "run (docs/BENCHMARKS.md \"CURVE on the relay path\"); no node is killed");
  app.add_option("--publish", publish, "fixed: every entity every step (60 Hz); threshold: dead-reckoning thresholds")
      ->check(CLI::IsMember({"fixed", "threshold"}))
      ->capture_default_str();
  app.add_flag("--no-floor", no_floor, "Skip the PUB/SUB floor");
  app.add_option("--nodes", counts, "Node process counts to run")->delimiter(',')->capture_default_str();
  app.add_option("--entities", entities, "Entities per node")->capture_default_str();
  app.add_option("--seconds", seconds, "Measured seconds per configuration")->capture_default_str();
  app.add_option("--warmup", warmup, "Seconds before measuring (joins, clock sync)")->capture_default_str();
  app.add_option("--echo-sub", echo_sub)->group("");
  CLI11_PARSE(app, argc, argv);
  if (!echo_sub.empty()) return EchoSub(echo_sub);

  const std::string bin = platoon::process::ExecutableDir();
  const std::string self = bin + "/fanout_bench";
  if (curve) {
    // Plain and CURVE alternate per node count, so that a change in the machine's load hits both series.
    const std::string dir = std::filesystem::temp_directory_path() / ("platoon-curve-bench-" + std::to_string(getpid()));
    std::printf("fanout_bench --curve: owner -> server -> node latency, %d entities per node at 60 Hz, %s publishing, "
                "%.0f s measured after %.0f s warm-up, loopback, %u cores\n\n%6s | %23s | %23s | %s\n",
                entities, publish.c_str(), seconds, warmup, std::thread::hardware_concurrency(), "nodes",
                "plain p50 / p99 ms", "CURVE p50 / p99 ms", "added p50 / p99");
    for (int n : counts) {
      platoon::protocol::WorldState w;
      w.entities.resize(static_cast<size_t>(n * entities));
      const size_t bytes = platoon::protocol::Encode(w).size();
      const auto [hop_plain50, hop_plain99] = PingPong(bytes, false, 2000);
      const auto [hop_curve50, hop_curve99] = PingPong(bytes, true, 2000);
      std::printf("%6d | one hop's round trip, %zu-byte messages, 2000 in this process: plain %.0f / %.0f us, CURVE "
                  "%.0f / %.0f us (p50 / p99)\n",
                  n, bytes, hop_plain50, hop_plain99, hop_curve50, hop_curve99);
      const Result plain = MeasurePlatoon(bin, n, entities, seconds, warmup, false, publish, CurveSession(dir, n, false));
      const Result cur = MeasurePlatoon(bin, n, entities, seconds, warmup, false, publish, CurveSession(dir, n, true));
      std::printf("%6d | %10.3f / %10.3f | %10.3f / %10.3f | %+6.1f %% / %+6.1f %%  (%d + %d nodes reported, %.0f + %.0f "
                  "updates, server CPU %.0f %% / %.0f %%)\n",
                  n, plain.p50_us / 1e3, plain.p99_us / 1e3, cur.p50_us / 1e3, cur.p99_us / 1e3,
                  100 * (cur.p50_us / plain.p50_us - 1), 100 * (cur.p99_us / plain.p99_us - 1), plain.ok_nodes,
                  cur.ok_nodes, plain.samples, cur.samples, 100 * plain.server_cpu, 100 * cur.server_cpu);
      std::fflush(stdout);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return 0;
  }
  std::printf("fanout_bench: %d entities per node stepped at 60 Hz, %s publishing, %.0f s measured after %.0f s "
              "warm-up, loopback, %u cores\n",
              entities, publish.c_str(), seconds, warmup, std::thread::hardware_concurrency());
  std::printf("\n%6s | %23s | %23s | %10s | %s\n", "nodes", "update p50 / p99 ms", "PUB/SUB floor p50/p99 ms",
              "server CPU", "world gaps in broadcast periods (<=1.5 / <=2.5 / <=3.5 / <=10.5 / more), one node killed");
  for (int n : counts) {
    // The floor carries a payload as large as one full world state of this size.
    platoon::protocol::WorldState w;
    w.entities.resize(static_cast<size_t>(n * entities));
    const size_t bytes = platoon::protocol::Encode(w).size();
    const Floor floor = no_floor ? Floor{} : MeasureFloor(self, n, bytes, seconds);
    const Result r = MeasurePlatoon(bin, n, entities, seconds, warmup, /*kill=*/true, publish);
    std::printf("%6d | %10.3f / %10.3f | %10.3f / %10.3f | %9.0f%% | %.0f / %.0f / %.0f / %.0f / %.0f  (%d nodes reported, "
                "p99 worst node %.3f ms, %.0f updates, %zu-byte world)\n",
                n, r.p50_us / 1e3, r.p99_us / 1e3, floor.p50_us / 1e3, floor.p99_us / 1e3, 100 * r.server_cpu,
                r.gaps[0], r.gaps[1], r.gaps[2], r.gaps[3], r.gaps[4], r.ok_nodes, r.p99_max_us / 1e3, r.samples, bytes);
    std::fflush(stdout);
  }
  return 0;
}
