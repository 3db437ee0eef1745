// Helpers the multi-process benchmarks share: a process's CPU time, the SUMMARY line a platoon process
// prints at exit with its numeric fields, and the wall time of a shell command.
#pragma once

#include "platoon/process/child.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

namespace platoon::bench {

/// Wall seconds `cmd` took in the shell; a failure prints "<bench>: '<cmd>' failed (rc)" and exits with 1.
inline double TimeCommand(const std::string& cmd, const char* bench) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::fprintf(stderr, "%s: '%s' failed (%d)\n", bench, cmd.c_str(), rc);
    std::exit(1);
  }
  return s;
}

/// CPU seconds (user + system) of a process so far, from /proc/<pid>/stat; 0 when it cannot be read.
inline double CpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string tok;
  double utime = 0, stime = 0;
  for (int field = 3; rest >> tok; ++field) {
    if (field == 14) utime = std::stod(tok);
    if (field == 15) {
      stime = std::stod(tok);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// The last SUMMARY line a child printed; empty when none.
inline std::string Summary(const process::Child& c) {
  for (auto it = c.Lines().rbegin(); it != c.Lines().rend(); ++it)
    if (it->find("SUMMARY") != std::string::npos) return *it;
  return {};
}

/// A numeric field `"key":value` of a JSON line; -1 when absent.
inline double Field(const std::string& line, const std::string& key) {
  std::smatch m;
  if (std::regex_search(line, m, std::regex("\"" + key + "\":(-?[0-9.]+)"))) return std::stod(m[1]);
  return -1;
}

}  // namespace platoon::bench
