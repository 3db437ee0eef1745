#pragma once
/// Variators during a run ([[variator]] in a session file; docs/EXPERIMENTS.md, "Variators"): a live
/// parameter the server sets again and again while the session runs, by a triangle (min -> max -> min over
/// a random duration), a step (a new random value after each random dwell) or a toggle (a boolean flipped
/// after each random dwell). Seeded, so two runs of the same session set the same values at the same times.

#include "platoon/config/table.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::config {

struct SessionDef;

/// Most [[variator]] tables in one session.
inline constexpr size_t kMaxVariators = 64;

/// One variator ([[variator]]).
struct VariatorDef {
  enum class Kind : uint8_t {
    kTriangle,  ///< min -> max -> min over each random duration, re-set every period_s.
    kStep,      ///< A uniformly random value in [min, max], held for a random dwell, then a new one.
    kToggle,    ///< A boolean, flipped after each random dwell.
  };
  Kind kind = Kind::kTriangle;
  std::string param;           ///< Parameter path: "node.<name>.<key>" or a server parameter ("server.broadcast_hz").
  double min = 0;              ///< Triangle, step: lowest value (unit of the parameter).
  double max = 1;              ///< Triangle, step: highest value.
  double duration_lo_s = 10;   ///< Triangle: shortest cycle; step, toggle: shortest dwell, in s.
  double duration_hi_s = 10;   ///< Triangle: longest cycle; step, toggle: longest dwell, in s.
  double start_s = 0;          ///< Sim time of the first value, in s.
  double period_s = 0.1;       ///< Triangle: how often the value is re-set, in s.
  bool initial = true;         ///< Toggle: the value set at start_s.
  uint64_t seed = 1;           ///< Seed of its random durations and values (mixed with its index).
  std::string where;           ///< "file:line: variator[i]", for later messages.
};

/// Config name of a kind ("triangle").
const char* VariatorKindName(VariatorDef::Kind kind);

/// Reads every [[variator]] of a session file's root table. Throws ConfigError with file:line, the key and
/// what was expected.
std::vector<VariatorDef> ReadVariators(const Table& root);

/// Checks what the variators name against the session: a node path names a node of this session.
/// ValidateSession calls it. Throws ConfigError.
void ValidateVariators(const SessionDef& session);

}  // namespace platoon::config
