// Helpers the multi-process benchmarks share: a process's CPU time, the SUMMARY line a platoon process
// prints at exit with its numeric fields, the wall time of a shell command, and a synthetic traffic log.
#pragma once

#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
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

/// Writes a session log of `vehicles` cars of one node "traffic", `states` + 1 world states at `rate_hz` (every state
/// keyframed, as a recorder logs them); `place(i, t_ns, state)` sets car i's pose and velocity at t_ns. A failed write
/// prints "<bench>: ..." and exits with 1.
template <class Place>
void WriteTrafficLog(const std::string& path, int vehicles, int states, double rate_hz, Place&& place, const char* bench) {
  std::string error;
  auto w = session_log::Writer::Open(path, &error);
  if (!w) {
    std::fprintf(stderr, "%s: %s\n", bench, error.c_str());
    std::exit(1);
  }
  bool ok = w->WriteJson(session_log::kSessionTopic, "", "", session_log::SessionInfoJson({"bench", "", "", "rec"}), 0, 0).Ok();
  protocol::NodeInfo node;
  node.node_id = 1;
  node.name = "traffic";
  for (int k = 0; k <= states && ok; ++k) {
    const int64_t t = static_cast<int64_t>(std::llround(k * 1e9 / rate_hz));
    protocol::WorldState ws;
    ws.sequence = static_cast<uint64_t>(k + 1);
    ws.sim_time_ns = ws.server_time_ns = t;
    ws.phase = protocol::SessionPhase::kRunning;
    ws.nodes = {node};
    ws.entities.reserve(static_cast<size_t>(vehicles));
    for (int i = 0; i < vehicles; ++i) {
      protocol::EntityState e;
      e.id = VehicleId("traffic", static_cast<uint32_t>(i));
      e.owner_node = 1;
      e.kind = protocol::EntityKind::kCar;
      e.kinematics.stamp_ns = t;
      place(i, t, e);
      ws.entities.push_back(e);
    }
    ok = w->WriteWorld(ws).Ok() && (k % 10 != 0 || w->Flush().Ok());
  }
  ok = ok && w->Close().Ok();
  if (!ok) {
    std::fprintf(stderr, "%s: writing %s: %s\n", bench, path.c_str(), w->Error().c_str());
    std::exit(1);
  }
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
