// The streaming reader's memory on a long log: a synthetic log of ~450 MB written by the writer (not by a
// session: big messages, fast), read whole and sought to its middle by log_read_probe in a child process,
// whose peak RSS (VmHWM) must stay under 200 MB; a whole-file reader would need more than the file.
// Registered RUN_SERIAL in tests/serial_tests.cmake.
#include "platoon/log/mcap.hpp"

#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace log_read_memory_test_detail {

// key=value pairs of the probe's one line.
std::map<std::string, std::string> ParsePairs(const std::string& line) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < line.size()) {
    const size_t end = std::min(line.find_first_of(" \n", at), line.size());
    const std::string pair = line.substr(at, end - at);
    if (const size_t eq = pair.find('='); eq != std::string::npos) out[pair.substr(0, eq)] = pair.substr(eq + 1);
    at = end + 1;
  }
  return out;
}

}  // namespace log_read_memory_test_detail

TEST_CASE("log reader: a 450 MB log is read whole and sought to its middle with peak RSS under 200 MB") {
  namespace fs = std::filesystem;
  using namespace platoon::mcap;
  using namespace log_read_memory_test_detail;
  const fs::path path = fs::path(platoon::testing::BinDir()).parent_path() / ("log_read_memory_" + std::to_string(::getpid()) + ".mcap");

  // 1500 clouds of 300 kB on one channel and a small world message every 10 ms on another, 60 s of log time;
  // the cloud's sim time lags the world by up to 80 ms, so chunks overlap in time as in a recording.
  constexpr uint64_t kMs = 1'000'000;
  constexpr uint32_t kClouds = 1500;
  constexpr size_t kCloudBytes = 300'000;
  std::vector<uint64_t> log_times;  // every message's log time, for the expected seek result
  std::vector<uint32_t> sequences;
  uint64_t payload_bytes = 0;
  {
    std::string error;
    auto sink = FileSink::Open(path.string(), &error);
    REQUIRE_MESSAGE(sink, error);
    Writer w(*sink);  // no compression: the file is as big as its payload
    REQUIRE(w.AddChannel({1, 0, "/platoon/world", "capnp", {}}).Ok());
    REQUIRE(w.AddChannel({2, 0, "/platoon/data/lidar", "capnp", {}}).Ok());
    std::mt19937_64 rng(17);
    std::vector<uint8_t> cloud(kCloudBytes), world(200);
    uint32_t seq = 0;
    for (uint32_t i = 0; i < kClouds; ++i) {
      const uint64_t t = 1000 * kMs + uint64_t{i} * 40 * kMs;
      for (int k = 0; k < 4; ++k) {
        const uint64_t wt = t + k * 10 * kMs;
        world[0] = static_cast<uint8_t>(seq);
        REQUIRE(w.WriteMessage({1, seq, wt, wt}, world).Ok());
        log_times.push_back(wt);
        sequences.push_back(seq++);
        payload_bytes += world.size();
      }
      for (size_t k = 0; k < kCloudBytes; k += 8) {
        const uint64_t v = rng();
        std::memcpy(cloud.data() + k, &v, 8);
      }
      const uint64_t ct = t - (rng() % 80) * kMs;
      REQUIRE(w.WriteMessage({2, seq, ct, ct}, cloud).Ok());
      log_times.push_back(ct);
      sequences.push_back(seq++);
      payload_bytes += cloud.size();
    }
    REQUIRE(w.Close().Ok());
  }
  const uint64_t file_bytes = fs::file_size(path);
  CHECK(file_bytes > 440'000'000);

  // The expected seek result by a linear scan: the smallest log time at or after the middle, and among
  // equal times the first written.
  const uint64_t first = *std::min_element(log_times.begin(), log_times.end());
  const uint64_t last = *std::max_element(log_times.begin(), log_times.end());
  const uint64_t middle = first + (last - first) / 2 + 3 * kMs;  // between world messages
  size_t best = log_times.size();
  for (size_t i = 0; i < log_times.size(); ++i)
    if (log_times[i] >= middle && (best == log_times.size() || log_times[i] < log_times[best])) best = i;
  REQUIRE(best < log_times.size());

  // The probe in a child process: its VmHWM is the reader's alone.
  const std::string command = platoon::testing::BinDir() + "/log_read_probe " + path.string() + " --seek " + std::to_string(middle);
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  const int status = ::pclose(pipe);
  fs::remove(path);
  INFO("probe: " << out);
  CHECK(status == 0);
  auto pairs = ParsePairs(out);
  REQUIRE(pairs.count("vmhwm_kb"));
  CHECK(std::stoull(pairs["messages"]) == log_times.size());
  CHECK(std::stoull(pairs["bytes"]) == payload_bytes);
  CHECK(std::stoull(pairs["first_log_ns"]) == log_times[best]);
  CHECK(std::stoull(pairs["first_sequence"]) == sequences[best]);
  const uint64_t peak_kb = std::stoull(pairs["vmhwm_kb"]);
  MESSAGE("log of " << file_bytes / 1'000'000 << " MB read with peak RSS " << peak_kb / 1024 << " MB in "
                    << pairs["seconds"] << " s");
  CHECK(peak_kb > 0);
  CHECK(peak_kb < 200 * 1024);
}
