// Bridge latency over loopback: a real session (`platoon run`: a server and a traffic node of V vehicles)
// served by `platoon bridge`; for every world state, the time from the server building it (its
// server_time_ns, CLOCK_MONOTONIC on this machine) to a Foxglove WebSocket client having the transforms
// message made from it (matched by sim time, the message's log time). Baseline, same run: the ZeroMQ hop,
// the same world states received by a plain SUB socket on the server's world port.
//   bridge_latency_bench [--vehicles 50] [--seconds 10] [--bin-dir DIR]
#include "bridge_ws_client.hpp"
#include "percentile.hpp"

#include "platoon/clock/oscillator.hpp"
#include "platoon/process/child.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/transport/channel.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

namespace fs = std::filesystem;
using namespace platoon;

int main(int argc, char** argv) {
  CLI::App app{"Bridge latency: world state published -> received by a Foxglove client, beside the ZeroMQ hop"};
  int vehicles = 50;
  double seconds = 10;
  double broadcast_hz = 30;
  std::string bin_dir = fs::path(argv[0]).parent_path().string();
  app.add_option("--vehicles", vehicles, "Vehicles of the traffic node")->check(CLI::Range(1, 5000));
  app.add_option("--seconds", seconds, "Measured wall seconds")->check(CLI::Range(1.0, 600.0));
  app.add_option("--broadcast-hz", broadcast_hz, "The server's world broadcast rate")->check(CLI::Range(1.0, 240.0));
  app.add_option("--bin-dir", bin_dir, "Where platoon is");
  CLI11_PARSE(app, argc, argv);
  const std::string platoon = (fs::path(bin_dir) / "platoon").string();

  // The session on free loopback ports.
  const auto ports = transport::FreeLoopbackPorts(5);
  const fs::path work = fs::temp_directory_path() / fmt::format("bridge_latency_{}", getpid());
  fs::create_directories(work);
  const fs::path session = work / "session.toml";
  std::ofstream(session) << fmt::format(
      "[session]\nname = \"bridge-latency\"\nserver_host = \"127.0.0.1\"\n[server]\nbind_address = \"127.0.0.1\"\n"
      "control_port = {}\ntime_port = {}\nworld_port = {}\nstate_port = {}\nbroadcast_hz = {}\n"
      "[[node]]\nname = \"traffic\"\nrole = \"traffic\"\nvehicles = {}\nspeed_mps = 20\n",
      ports[0], ports[1], ports[2], ports[3], broadcast_hz, vehicles);
  auto run = process::Child::Spawn(
      {"/bin/sh", "-c", fmt::format("exec '{}' run '{}' > '{}' 2>&1", platoon, session.string(), (work / "run.log").string())},
      false);

  // The ZeroMQ hop: a SUB on the world port, from the start.
  zmq::context_t context(1);
  transport::Channel sub(context, transport::Pattern::kSub);
  sub.Connect(fmt::format("tcp://127.0.0.1:{}", ports[2]));
  clock::MonotonicOscillator mono;
  std::map<int64_t, int64_t> built;     // sim ns -> server_time_ns
  std::map<int64_t, int64_t> zmq_at;    // sim ns -> received (monotonic ns)
  auto drain = [&](std::chrono::milliseconds wait) {
    for (auto p = sub.Receive(wait); p; p = sub.TryReceive()) {
      const int64_t now = mono.NowNs();
      auto d = protocol::Decode(p->Payload());
      if (d.error != protocol::DecodeError::kNone || !d.message) continue;
      if (const auto* w = std::get_if<protocol::WorldState>(&*d.message)) {
        built.emplace(w->sim_time_ns, w->server_time_ns);
        zmq_at.emplace(w->sim_time_ns, now);
      }
    }
  };
  // The session runs once world states flow.
  const auto start_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (zmq_at.size() < 20 && std::chrono::steady_clock::now() < start_deadline) drain(std::chrono::milliseconds(50));
  if (zmq_at.size() < 20) {
    std::fprintf(stderr, "bridge_latency: no world states from the session (see %s)\n", (work / "run.log").c_str());
    return 1;
  }

  auto bridge = process::Child::Spawn({platoon, "bridge", session.string(), "--port", std::to_string(ports[4])});
  if (!bridge.WaitForLine("served on ws://", std::chrono::seconds(20))) {
    std::fprintf(stderr, "bridge_latency: the bridge did not start\n");
    return 1;
  }

  // The Foxglove client: subscribes to the transforms when advertised; records each one's arrival.
  std::mutex mutex;
  std::map<int64_t, int64_t> ws_at;  // sim ns -> received (monotonic ns)
  bench::FoxgloveWsClient* client_ptr = nullptr;
  std::atomic<bool> subscribed{false};
  bench::FoxgloveWsClient client(
      [&](const std::string& text) {
        // {"op":"advertise","channels":[{"id":N,"topic":"/foxglove/tf",...
        static const std::regex tf("\"id\":(\\d+),\"topic\":\"/foxglove/tf\"");
        std::smatch m;
        if (!subscribed && std::regex_search(text, m, tf)) {
          subscribed = true;
          client_ptr->SendText(fmt::format("{{\"op\":\"subscribe\",\"subscriptions\":[{{\"id\":1,\"channelId\":{}}}]}}",
                                           m[1].str()));
        }
      },
      [&](const std::string& bytes) {
        const int64_t now = mono.NowNs();
        if (bytes.size() < 13 || bytes[0] != 0x01) return;
        uint64_t log_ns = 0;
        std::memcpy(&log_ns, bytes.data() + 5, 8);  // little-endian on this machine
        std::lock_guard lock(mutex);
        ws_at.emplace(static_cast<int64_t>(log_ns), now);
      });
  client_ptr = &client;
  client.Start(fmt::format("ws://127.0.0.1:{}", ports[4]));

  // Measure: both receivers from the same moment on.
  const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < settle) drain(std::chrono::milliseconds(10));
  built.clear();
  zmq_at.clear();
  {
    std::lock_guard lock(mutex);
    ws_at.clear();
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < end) drain(std::chrono::milliseconds(10));
  client.Stop();
  bridge.Signal(SIGINT);
  run.Signal(SIGINT);
  bridge.WaitFor(std::chrono::seconds(5));
  run.WaitFor(std::chrono::seconds(10));

  std::vector<double> hop_ms, bridge_ms;
  size_t missed = 0;
  std::lock_guard lock(mutex);
  for (const auto& [sim, server_ns] : built) {
    hop_ms.push_back(static_cast<double>(zmq_at[sim] - server_ns) / 1e6);
    const auto w = ws_at.find(sim);
    if (w == ws_at.end()) {
      ++missed;
      continue;
    }
    bridge_ms.push_back(static_cast<double>(w->second - server_ns) / 1e6);
  }
  std::printf("bridge latency, %d vehicles, %g Hz broadcast, %g s, %zu world states\n", vehicles, broadcast_hz, seconds,
              built.size());
  std::printf("  ZeroMQ hop (server -> SUB):                   p50 %7.3f ms  p99 %7.3f ms\n", bench::Percentile(hop_ms, 50),
              bench::Percentile(hop_ms, 99));
  std::printf("  bridge (server -> bridge -> Foxglove client): p50 %7.3f ms  p99 %7.3f ms  (%zu of %zu world states "
              "not received)\n",
              bench::Percentile(bridge_ms, 50), bench::Percentile(bridge_ms, 99), missed, built.size());
  fs::remove_all(work);
  return bridge_ms.empty() ? 1 : 0;
}
