// libFuzzer target: a session log as `platoon replay`, `platoon export` and `platoon validate` load it:
// server::LoadReplayLog (session_log::Read -> mcap::Read with the channel table -> protocol::Decode of
// /platoon/world -> ReplayLogBuilder; /platoon/session through ParseSessionInfo). LoadReplayLog takes a
// path, so each input goes through one temporary file. A bad log must come back with problems, never a
// crash or an exception.
#include "platoon/server/replay.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

namespace {

const std::string& TempPath() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/platoon_fuzz_replay_" + std::to_string(getpid()) + ".mcap";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = TempPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::fprintf(stderr, "fuzz_replay_log: cannot write %s\n", path.c_str());
    std::abort();
  }
  const server::ReplayLog log = server::LoadReplayLog(path);
  if (log.world_states == 0 && log.problems.empty()) {
    std::fprintf(stderr, "fuzz_replay_log: a log without world states and without a problem\n");
    std::abort();
  }
  if (log.states.size() > 1 && log.first_ns > log.last_ns) {
    std::fprintf(stderr, "fuzz_replay_log: states not sorted by stamp\n");
    std::abort();
  }
  std::remove(path.c_str());
  return 0;
}
