// Long logs and chunk compression, in one run (docs/BENCHMARKS.md, "Long logs and chunk compression"):
//   1. compression: every message of a recording (a lidar-farm session log) written again through the
//      MCAP writer with chunks uncompressed (the baseline), zstd and lz4: file size, ratio, writer CPU
//      (this thread's CPU time inside the writer's calls) and the recording's rate in MB per sim second;
//   2. reading: a synthetic log of --gigabytes GB (300 kB clouds and small world messages, written by the
//      writer) read whole and sought to its middle by log_read_probe in a child process, streaming
//      (mcap::StreamReader) against the whole-file baseline (the file in memory, then mcap::ReadBytes):
//      peak RSS (VmHWM) and MB/s. The log is removed after.
//   log_read_bench --recording FILE.mcap [--gigabytes 2] [--dir /tmp] [--skip-whole]
#include "platoon/log/mcap.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace platoon;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The probe's output line, or "" when it could not run.
std::string RunProbe(const std::string& probe, const std::string& path, bool whole) {
  const std::string command = probe + " " + path + (whole ? " --whole" : "");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  ::pclose(pipe);
  return out;
}

std::string Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=");
  if (at == std::string::npos) return "?";
  const size_t start = at + key.size() + 1;
  return line.substr(start, line.find_first_of(" \n", start) - start);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chunk compression and long-log reading (docs/BENCHMARKS.md)"};
  std::string recording, dir = "/tmp";
  double gigabytes = 2.0;
  bool skip_whole = false;
  app.add_option("--recording", recording, "A session log to write again with each compression (a lidar-farm recording)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--gigabytes", gigabytes, "Size of the synthetic log read in part 2, in GB; 0 skips part 2");
  app.add_option("--dir", dir, "Where the synthetic log is written (removed after)");
  app.add_flag("--skip-whole", skip_whole, "Skip the whole-file baseline (it needs the file's size in memory)");
  CLI11_PARSE(app, argc, argv);

  // 1. Compression: the recording's messages (read once into memory) written with each compression.
  std::string error;
  auto reader = mcap::StreamReader::Open(recording, &error);
  if (!reader) {
    std::fprintf(stderr, "log_read_bench: %s\n", error.c_str());
    return 2;
  }
  std::vector<mcap::Message> messages;
  uint64_t payload = 0;
  for (mcap::Message m; reader->Next(m);) {
    payload += m.data.size();
    messages.push_back(std::move(m));
  }
  const auto [first_ns, last_ns] = reader->TimeRange();
  const double sim_s = static_cast<double>(last_ns - first_ns) * 1e-9;
  std::printf("recording %s: %zu messages, %.1f MB of payload, %.1f s of sim time\n", recording.c_str(), messages.size(),
              static_cast<double>(payload) / 1e6, sim_s);
  std::printf("| chunks | MB | ratio | MB per sim s | writer CPU s | writer CPU per sim s |\n|---|---|---|---|---|---|\n");
  double plain_mb = 0;
  for (const std::string compression : {"", "zstd", "lz4"}) {
    mcap::WriterDef def = mcap::DefaultWriterDef();
    def.compression = compression;
    mcap::MemorySink sink;
    mcap::Writer w(sink, def);
    const double cpu0 = ThreadCpuSeconds();
    for (const auto& [id, schema] : reader->Schemas()) (void)w.AddSchema(schema);
    for (const auto& [id, channel] : reader->Channels()) (void)w.AddChannel(channel);
    for (const auto& m : messages)
      (void)w.WriteMessage({m.channel_id, m.sequence, m.log_time_ns, m.publish_time_ns}, m.data);
    const auto closed = w.Close();
    const double cpu = ThreadCpuSeconds() - cpu0;
    if (!closed.Ok()) {
      std::fprintf(stderr, "log_read_bench: %s\n", closed.error.c_str());
      return 1;
    }
    const double mb = static_cast<double>(sink.Bytes().size()) / 1e6;
    if (compression.empty()) plain_mb = mb;
    std::printf("| %s | %.1f | %.2f | %.2f | %.2f | %.1f %% of a core |\n", compression.empty() ? "none" : compression.c_str(),
                mb, plain_mb / mb, mb / sim_s, cpu, 100.0 * cpu / sim_s);
  }
  messages.clear();
  messages.shrink_to_fit();
  if (gigabytes <= 0) return 0;

  // 2. Reading a long log: written fast by the writer, read by the probe in a process of its own.
  const std::string path = dir + "/log_read_bench_" + std::to_string(::getpid()) + ".mcap";
  {
    auto sink = mcap::FileSink::Open(path, &error);
    if (!sink) {
      std::fprintf(stderr, "log_read_bench: %s\n", error.c_str());
      return 1;
    }
    mcap::Writer w(*sink);
    (void)w.AddChannel({1, 0, "/platoon/world", "capnp", {}});
    (void)w.AddChannel({2, 0, "/platoon/data/lidar", "capnp", {}});
    std::mt19937_64 rng(1);
    std::vector<uint8_t> cloud(300'000), world(200);
    const auto clouds = static_cast<uint64_t>(gigabytes * 1e9 / 300'800);
    uint32_t seq = 0;
    for (uint64_t i = 0; i < clouds; ++i) {
      const uint64_t t = 1'000'000'000 + i * 40'000'000;
      for (int k = 0; k < 4; ++k) (void)w.WriteMessage({1, seq++, t + k * 10'000'000ull, t}, world);
      for (size_t k = 0; k < cloud.size(); k += 8) {
        const uint64_t v = rng();
        std::memcpy(cloud.data() + k, &v, 8);
      }
      const uint64_t ct = t - (rng() % 80) * 1'000'000;
      if (!w.WriteMessage({2, seq++, ct, ct}, cloud).Ok()) break;
    }
    if (auto s = w.Close(); !s.Ok()) {
      std::fprintf(stderr, "log_read_bench: %s\n", s.error.c_str());
      std::filesystem::remove(path);
      return 1;
    }
  }
  const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  const std::string probe = (std::filesystem::path(argv[0]).parent_path() / "log_read_probe").string();
  std::printf("\nlog of %.0f MB (%s)\n| reader | peak RSS MB | s | MB/s | messages | seek: first log ns |\n|---|---|---|---|---|---|\n",
              file_mb, path.c_str());
  for (const bool whole : {false, true}) {
    if (whole && skip_whole) continue;
    const std::string line = RunProbe(probe, path, whole);
    const double seconds = std::atof(Field(line, "seconds").c_str());
    std::printf("| %s | %.0f | %.2f | %.0f | %s | %s |\n", whole ? "whole file (baseline)" : "StreamReader",
                std::atof(Field(line, "vmhwm_kb").c_str()) / 1024.0, seconds, seconds > 0 ? file_mb / seconds : 0.0,
                Field(line, "messages").c_str(), whole ? "-" : Field(line, "first_log_ns").c_str());
  }
  std::filesystem::remove(path);
  return 0;
}
