// mcap_selftest: writes a sample MCAP (three channels, a known number of messages, default 1 MiB /
// 100 ms chunks) and prints the writer's own counts as JSON, for check.sh to compare with an
// independent reader.
//   mcap_selftest OUT.mcap             a closed file; prints {"channels":{topic:count},"messages":N}
//   ... --compression zstd|lz4         chunks compressed so (default: none)
//   mcap_selftest OUT.mcap --unclosed  stops without Close, as a kill -9 would; prints
//                                      {"must_recover":K,"written":N}: K messages are older than
//                                      100 ms before the last one and must be readable.
#include "platoon/log/mcap.hpp"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mcap = platoon::mcap;

int main(int argc, char** argv) {
  bool unclosed = false;
  mcap::WriterDef def = mcap::DefaultWriterDef();
  bool usage = argc < 2;
  for (int i = 2; i < argc && !usage; ++i) {
    if (std::strcmp(argv[i], "--unclosed") == 0) {
      unclosed = true;
    } else if (std::strcmp(argv[i], "--compression") == 0 && i + 1 < argc &&
               mcap::CompressionSupported(argv[i + 1])) {
      def.compression = argv[++i];
    } else {
      usage = true;
    }
  }
  if (usage) {
    std::fprintf(stderr, "usage: mcap_selftest OUT.mcap [--unclosed] [--compression zstd|lz4]\n");
    return 2;
  }
  std::string error;
  auto sink = mcap::FileSink::Open(argv[1], &error);
  if (!sink) {
    std::fprintf(stderr, "mcap_selftest: %s\n", error.c_str());
    return 1;
  }
  mcap::Writer w(*sink, def);
  auto check = [](const mcap::Status& s) {
    if (!s.Ok()) {
      std::fprintf(stderr, "mcap_selftest: %s\n", s.error.c_str());
      std::exit(1);
    }
  };
  const std::string scene_schema = R"({"type":"object"})";
  check(w.AddSchema({1, "platoon.EntityUpdate", "x-capnp", {0xDE, 0xAD, 0xBE, 0xEF}}));
  check(w.AddSchema({2, "platoon.Event", "jsonschema", {scene_schema.begin(), scene_schema.end()}}));
  check(w.AddChannel({1, 1, "/world/entities", "x-capnp", {{"rate_hz", "1000"}}}));
  check(w.AddChannel({2, 2, "/session/events", "json", {}}));
  check(w.AddChannel({3, 0, "/sensors/lidar_front", "x-platoon-points", {{"frame", "lidar_front"}}}));

  // 3 s: entity updates at 1 kHz (200 B), events at 10 Hz (JSON), lidar at 20 Hz (600 kB: chunks
  // also close on size). The last second is cut short in --unclosed mode at an odd moment.
  const uint64_t ms = 1'000'000;
  const uint64_t end_ms = unclosed ? 2873 : 3000;
  std::vector<uint8_t> entity(200), cloud(600'000);
  uint32_t seq[4] = {0, 0, 0, 0};
  uint64_t last_ns = 0;
  std::vector<uint64_t> log_times;
  for (uint64_t t = 0; t < end_ms; ++t) {
    const uint64_t ns = 1'700'000'000'000'000'000ull + t * ms;
    entity[0] = static_cast<uint8_t>(t);
    check(w.WriteMessage({1, seq[1]++, ns, ns}, entity));
    log_times.push_back(ns);
    if (t % 100 == 0) {
      const std::string json = R"({"event":"tick","t_ms":)" + std::to_string(t) + "}";
      check(w.WriteMessage({2, seq[2]++, ns, ns}, {reinterpret_cast<const uint8_t*>(json.data()), json.size()}));
      log_times.push_back(ns);
    }
    if (t % 50 == 0) {
      cloud[0] = static_cast<uint8_t>(t);
      check(w.WriteMessage({3, seq[3]++, ns, ns}, cloud));
      log_times.push_back(ns);
    }
    last_ns = ns;
  }

  if (unclosed) {
    uint64_t must = 0;
    for (uint64_t t : log_times) must += t + 100 * ms <= last_ns;
    std::printf("{\"must_recover\":%llu,\"written\":%llu}\n", static_cast<unsigned long long>(must),
                static_cast<unsigned long long>(w.Stats().message_count));
    return 0;  // no Close, no Flush: the open chunk is lost, as in a kill -9
  }
  check(w.Close());

  // The writer's own counts, keys sorted, in the same shape as count.mjs prints.
  const char* topics[4] = {"", "/world/entities", "/session/events", "/sensors/lidar_front"};
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (const auto& [id, n] : w.Stats().channel_message_counts) counts.emplace_back(topics[id], n);
  std::sort(counts.begin(), counts.end());
  std::string json = "{\"channels\":{";
  for (size_t i = 0; i < counts.size(); ++i) {
    json += (i ? "," : "") + ("\"" + counts[i].first + "\":" + std::to_string(counts[i].second));
  }
  json += "},\"messages\":" + std::to_string(w.Stats().message_count) + "}";
  std::printf("%s\n", json.c_str());
  return 0;
}
