// Clock-sync benchmark over loopback: a real platoon-server and two platoon-nodes whose oscillators
// drift by +drift and -drift ppm. Each node measures its true error against CLOCK_MONOTONIC (the
// server's reference on this host) on a 1 kHz tick. Baseline, same run: the error of a clock set
// from each single exchange (what stepping to every NTP sample would give).
#include "platoon/process/child.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

using platoon::process::Child;
using namespace std::chrono_literals;

namespace {
double Field(const std::string& line, const std::string& key) {
  std::smatch m;
  if (std::regex_search(line, m, std::regex("\"" + key + "\":(-?[0-9.]+)"))) return std::stod(m[1]);
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"clock_sync_bench: offset p50/p99/max of platoon's slewed clock over loopback, against\n"
               "single-exchange stepping measured in the same run."};
  double duration_s = 120, warmup_s = 40, drift_ppm = 1000;
  app.add_option("--duration", duration_s, "Seconds each node runs")->capture_default_str();
  app.add_option("--warmup", warmup_s, "Seconds after the initial set before statistics start")->capture_default_str();
  app.add_option("--drift", drift_ppm, "Injected drift magnitude, ppm")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (warmup_s >= duration_s) {
    std::fprintf(stderr, "clock_sync_bench: --warmup must be shorter than --duration\n");
    return 2;
  }

  const std::string bin = platoon::process::ExecutableDir();
  const std::string ready = std::filesystem::temp_directory_path() / ("platoon-bench-" + std::to_string(getpid()) + ".json");
  Child server = Child::Spawn({bin + "/platoon-server", "--bind", "127.0.0.1", "--port", "0", "--ready-file", ready,
                               "--autostart", "0", "--log-level", "warn"});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!std::filesystem::exists(ready)) {
    if (std::chrono::steady_clock::now() > deadline || server.TryWait()) {
      std::fprintf(stderr, "clock_sync_bench: server did not start\n");
      return 1;
    }
    server.ReadLine(20ms);
  }
  std::smatch m;
  std::string json;
  {
    FILE* f = std::fopen(ready.c_str(), "r");
    char buf[256] = {0};
    json = std::fgets(buf, sizeof buf, f) ? buf : "";
    std::fclose(f);
    std::filesystem::remove(ready);
  }
  std::regex_search(json, m, std::regex("\"control\":(\\d+)"));
  const std::string port = m[1];

  std::printf("clock_sync_bench: 2 nodes at %+.0f / %+.0f ppm, %.0f s each, statistics after %.0f s\n", drift_ppm,
              -drift_ppm, duration_s, warmup_s);
  std::vector<Child> nodes;
  for (double d : {drift_ppm, -drift_ppm}) {
    nodes.push_back(Child::Spawn({bin + "/platoon-node", "--name", d > 0 ? "fast" : "slow", "--server", "127.0.0.1",
                                  "--port", port, "--drift-ppm", std::to_string(d), "--truth-check", "--truth-warmup",
                                  std::to_string(warmup_s), "--exit-after", std::to_string(duration_s)}));
  }
  // Rate-correction history: one status line per second per node.
  std::vector<std::vector<std::string>> rates(nodes.size());
  bool running = true;
  while (running) {
    running = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      while (auto line = nodes[i].ReadLine(10ms)) {
        std::smatch r;
        if (std::regex_search(*line, r, std::regex("rate ([-+0-9.]+) ppm.*true error ([-+0-9.]+) us")))
          rates[i].push_back(std::string(r[1]) + "/" + std::string(r[2]));
      }
      running |= !nodes[i].TryWait().has_value();
    }
  }
  int rc = 0;
  std::printf("\n%-6s %12s %12s %12s | %14s %14s %14s\n", "node", "p50 us", "p99 us", "max us", "1-sample p50", "1-sample p99",
              "1-sample max");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string summary;
    for (const auto& l : nodes[i].Lines())
      if (l.find("SUMMARY") != std::string::npos) summary = l;
    if (summary.empty() || *nodes[i].Status() != 0) {
      std::printf("node %zu failed (status %d)\n", i, nodes[i].Status().value_or(-1));
      rc = 1;
      continue;
    }
    std::printf("%-6s %12.1f %12.1f %12.1f | %14.1f %14.1f %14.1f\n", i == 0 ? "fast" : "slow",
                Field(summary, "error_p50_ns") / 1e3, Field(summary, "error_p99_ns") / 1e3,
                Field(summary, "error_max_ns") / 1e3, Field(summary, "naive_p50_ns") / 1e3,
                Field(summary, "naive_p99_ns") / 1e3, Field(summary, "naive_max_ns") / 1e3);
    std::printf("       backwards %g, over rate bound %g, estimated drift %+.1f ppm, %g ticks\n", Field(summary, "backwards"),
                Field(summary, "over_bound"), Field(summary, "drift_ppm"), Field(summary, "ticks"));
  }
  std::printf("\nrate correction history (ppm / true error us, once a second):\n");
  for (size_t i = 0; i < rates.size(); ++i) {
    std::printf("%s:", i == 0 ? "fast" : "slow");
    for (size_t k = 0; k < rates[i].size(); ++k) std::printf("%s %s", k % 8 == 0 ? "\n  " : "", rates[i][k].c_str());
    std::printf("\n");
  }
  server.Signal(SIGTERM);
  server.WaitFor(5s);
  return rc;
}
