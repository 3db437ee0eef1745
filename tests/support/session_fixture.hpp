#pragma once
// Helpers for multi-process tests: start platoon processes, wait on handshakes with deadlines.

#include "platoon/process/child.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace platoon::testing {

/// Directory of the built executables (set by CMake).
std::string BinDir();

/// A fresh temporary directory, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& Path() const { return path_; }
  /// Writes `text` to `name` inside the directory; returns the full path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

/// A platoon-server on free loopback ports, started with a ready-file handshake.
struct ServerProcess {
  process::Child child;
  uint16_t control_port = 0;
};

/// Starts platoon-server on 127.0.0.1 with every port chosen by the OS; waits (deadline 10 s)
/// for its ready file. `extra` arguments are appended.
ServerProcess StartServer(const TempDir& dir, const std::vector<std::string>& extra = {});

/// Free TCP ports on 127.0.0.1 (bound and released; good enough for a test's lifetime).
std::vector<uint16_t> FreePorts(int count);

/// Value of "key":<number> in the last SUMMARY line of `lines`; nullopt when absent.
std::optional<double> SummaryValue(const std::vector<std::string>& lines, const std::string& key);

/// True when any line contains `needle`.
bool AnyLineContains(const std::vector<std::string>& lines, const std::string& needle);

/// Pid of a running process whose command line contains every one of `parts`; 0 if none.
int FindPid(const std::vector<std::string>& parts);

}  // namespace platoon::testing
