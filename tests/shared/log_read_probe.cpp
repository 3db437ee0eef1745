// log_read_probe: reads an MCAP log as the tools do and reports the process's peak resident memory, so
// that a test (and bench/log_read_bench.sh) measures the reader alone, in a process of its own.
//   log_read_probe FILE [--seek NS] [--whole]
// Streams every message with mcap::StreamReader (or, with --whole, loads the file and reads it with
// mcap::ReadBytes: the whole-file reader, as a baseline), then seeks to NS (default: the middle of the
// log's time range) and reads the first message there. Prints one line of key=value pairs:
//   messages=N bytes=B seconds=S seek_ns=T first_log_ns=L first_sequence=Q vmhwm_kb=K problems=P
// Exit 0 on a read without problems, 1 with problems, 2 for usage errors.
#include "platoon/log/mcap.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

// Peak resident set size of this process (VmHWM), in kB; 0 when /proc is not there.
long PeakRssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  namespace mcap = platoon::mcap;
  std::string path;
  bool whole = false;
  bool seek_given = false;
  uint64_t seek_ns = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--whole") {
      whole = true;
    } else if (arg == "--seek" && i + 1 < argc) {
      char* end = nullptr;
      seek_ns = std::strtoull(argv[++i], &end, 10);
      if (!end || *end != '\0') {
        std::fprintf(stderr, "log_read_probe: --seek: expected a time in ns, got \"%s\"\n", argv[i]);
        return 2;
      }
      seek_given = true;
    } else if (path.empty() && arg[0] != '-') {
      path = arg;
    } else {
      std::fprintf(stderr, "usage: log_read_probe FILE [--seek NS] [--whole]\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: log_read_probe FILE [--seek NS] [--whole]\n");
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  uint64_t messages = 0, bytes = 0, problems = 0;
  uint64_t first_log_ns = 0, first_sequence = 0;
  if (whole) {
    // The baseline: the file in memory, then the full check over it.
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const mcap::ReadResult r = mcap::ReadBytes(data, [&](const mcap::Message& m) {
      ++messages;
      bytes += m.data.size();
    });
    problems = r.problems.size();
  } else {
    std::string error;
    auto reader = mcap::StreamReader::Open(path, &error);
    if (!reader) {
      std::fprintf(stderr, "log_read_probe: %s\n", error.c_str());
      return 1;
    }
    mcap::Message m;
    while (reader->Next(m)) {
      ++messages;
      bytes += m.data.size();
    }
    const auto [first, last] = reader->TimeRange();
    if (!seek_given) seek_ns = first + (last - first) / 2;
    reader->Seek(seek_ns);
    if (reader->Next(m)) {
      first_log_ns = m.log_time_ns;
      first_sequence = m.sequence;
    }
    problems = reader->Problems().size();
    for (const auto& p : reader->Problems()) std::fprintf(stderr, "log_read_probe: %s\n", p.message.c_str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("messages=%llu bytes=%llu seconds=%.3f seek_ns=%llu first_log_ns=%llu first_sequence=%llu vmhwm_kb=%ld "
              "problems=%llu\n",
              static_cast<unsigned long long>(messages), static_cast<unsigned long long>(bytes), seconds,
              static_cast<unsigned long long>(seek_ns), static_cast<unsigned long long>(first_log_ns),
              static_cast<unsigned long long>(first_sequence), PeakRssKb(), static_cast<unsigned long long>(problems));
  return problems == 0 ? 0 : 1;
}
