// [[variator]] tables of a session file (variators.hpp).
#include "platoon/config/variators.hpp"

#include "platoon/config/session.hpp"
#include "platoon/config/params.hpp"
#include "platoon/config/conditions.hpp"

#include <algorithm>
#include <string>

namespace platoon::config {

const char* VariatorKindName(VariatorDef::Kind kind) {
  switch (kind) {
    case VariatorDef::Kind::kTriangle: return "triangle";
    case VariatorDef::Kind::kStep: return "step";
    case VariatorDef::Kind::kToggle: return "toggle";
  }
  return "?";
}

std::vector<VariatorDef> ReadVariators(const Table& root) {
  std::vector<VariatorDef> out;
  const std::vector<Table> tables = root.TableArray("variator");
  if (tables.size() > kMaxVariators)
    tables[kMaxVariators].Fail("", "at most " + std::to_string(kMaxVariators) + " [[variator]] tables in a session");
  for (const Table& t : tables) {
    VariatorDef v;
    v.where = t.Where() + ": " + t.Path();
    v.param = t.RequireString("param");
    if (v.param.empty() || v.param.find_first_of(" \t\"\\") != std::string::npos || v.param.front() == '.' ||
        v.param.back() == '.' || v.param.find('.') == std::string::npos)
      t.Fail("param", "expected a live parameter path such as \"node.<name>.<key>\" or \"server.broadcast_hz\", got \"" +
                          v.param + "\"");
    const std::string kind = t.RequireString("kind", {"triangle", "step", "toggle"});
    v.kind = kind == "triangle" ? VariatorDef::Kind::kTriangle
             : kind == "step"   ? VariatorDef::Kind::kStep
                                : VariatorDef::Kind::kToggle;
    if (v.kind == VariatorDef::Kind::kToggle) {
      if (t.Has("min") || t.Has("max")) t.Fail(t.Has("min") ? "min" : "max", "is not for kind = \"toggle\" (a boolean: use initial)");
      v.initial = t.GetBool("initial", true);
    } else {
      if (!t.Has("min")) t.Fail("min", "is required for kind = \"" + kind + "\"");
      if (!t.Has("max")) t.Fail("max", "is required for kind = \"" + kind + "\"");
      v.min = t.GetDouble("min", 0, -1e12, 1e12);
      v.max = t.GetDouble("max", 1, -1e12, 1e12);
      if (v.min > v.max)
        t.Fail("max", "expected max >= min (" + FormatNumber(v.min) + "), got " + FormatNumber(v.max));
      if (t.Has("initial")) t.Fail("initial", "is for kind = \"toggle\"");
    }
    if (!t.Has("duration_s")) t.Fail("duration_s", "is required: duration_s = [lo, hi] in s (0 < lo <= hi)");
    const std::vector<double> d = t.GetDoubleArray("duration_s", {10, 10}, 2, 0.001, 1e6);
    if (d[0] > d[1])
      t.Fail("duration_s", "expected [lo, hi] with lo <= hi, got [" + FormatNumber(d[0]) + ", " + FormatNumber(d[1]) + "]");
    v.duration_lo_s = d[0];
    v.duration_hi_s = d[1];
    v.start_s = t.GetDouble("start_s", 0, 0, 1e7);
    v.period_s = t.GetDouble("period_s", 0.1, 0.001, 3600);
    if (t.Has("period_s") && v.kind != VariatorDef::Kind::kTriangle) t.Fail("period_s", "is for kind = \"triangle\"");
    v.seed = static_cast<uint64_t>(t.GetInt("seed", 1, 0));
    t.RejectUnknownKeys();
    out.push_back(std::move(v));
  }
  return out;
}

void ValidateVariators(const SessionDef& session) {
  for (const VariatorDef& v : session.variators) {
    if (v.param.rfind("node.", 0) == 0) {
      const auto dot = v.param.find('.', 5);
      const std::string name = v.param.substr(5, dot == std::string::npos ? std::string::npos : dot - 5);
      if (dot == std::string::npos || dot + 1 >= v.param.size())
        throw ConfigError(v.where + ".param: expected \"node.<name>.<key>\", got \"" + v.param + "\"");
      if (!session.FindNode(name)) {
        std::string names;
        for (const auto& n : session.nodes) names += (names.empty() ? "" : ", ") + n.name;
        throw ConfigError(v.where + ".param: \"" + v.param + "\" names no node of this session (nodes: " +
                          (names.empty() ? std::string("none") : names) + ")");
      }
    } else if (v.param.rfind("light.", 0) == 0 || v.param.rfind("weather.", 0) == 0) {
      // The world's conditions: one of their live parameters (docs/WORLD.md).
      const auto& paths = ConditionParamPaths();
      if (std::find(paths.begin(), paths.end(), v.param) == paths.end()) {
        std::string names;
        for (const auto& p : paths) names += (names.empty() ? "" : ", ") + p;
        throw ConfigError(v.where + ".param: expected one of " + names + ", got \"" + v.param + "\"");
      }
    } else if (v.param.rfind("server.", 0) != 0 && v.param.rfind("session.", 0) != 0) {
      throw ConfigError(v.where + ".param: expected a path under node.<name>., server., session., light. or weather., got \"" +
                        v.param + "\"");
    }
  }
}

}  // namespace platoon::config
