// `platoon batch PLAN.toml` (seed 004 §2.4 batch mode, §5.4 random test variators): a base
// session run once per variant, each run a `platoon run --lockstep` child in its own folder, its outputs
// computed from its session log with the export's metric code. docs/EXPERIMENTS.md, "Batch runs".
#include "batch_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/config/table.hpp"
#include "platoon/data/columns.hpp"
#include "platoon/data/recorded_tracks.hpp"
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/geometry.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/scenario/osc.hpp"
#include "platoon/server/replay.hpp"
#include "platoon/transport/channel.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

namespace platoon::launcher {

void WriteFileAtomic(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".part";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

namespace {

namespace fs = std::filesystem;
using Vec2 = Eigen::Vector2d;
constexpr const char* kMe = "platoon batch";
constexpr int kExitUsage = config::cli::kExitUsage;
constexpr int kMaxRuns = 100000;        // bound on the runs of one plan
constexpr int kMaxRunLogLines = 200000; // bound on the lines one run's log keeps

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------------
// The plan.

/// One value a variation sets: what TOML scalars a session file holds.
using Scalar = std::variant<int64_t, double, bool, std::string>;

// The value as the results CSV writes it (numbers in their shortest exact form).
std::string ScalarText(const Scalar& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

std::optional<Scalar> ScalarOf(const toml::node& n) {
  if (auto v = n.value_exact<int64_t>()) return Scalar(*v);
  if (auto v = n.value_exact<double>()) return Scalar(*v);
  if (auto v = n.value_exact<bool>()) return Scalar(*v);
  if (auto v = n.value_exact<std::string>()) return Scalar(*v);
  return std::nullopt;
}

/// [[vary]]: a session path and the values it takes (incremental variants).
struct Variant {
  std::string path;
  std::vector<Scalar> values;
  std::string where;  // "plan.toml:12: vary[0]"
};

/// [[random]]: a session path and the distribution its value is drawn from, per run.
struct Variator {
  std::string path;
  std::string dist;                  // "uniform", "normal", "choice"
  double min = 0, max = 1;           // uniform
  double mean = 0, stddev = 1;       // normal
  std::vector<Scalar> choices;       // choice
  std::vector<double> weights;       // choice: relative weights (empty: equal)
  bool truncated = false;            // normal: redrawn until within [min, max]
  double round_to = 0;               // uniform/normal: rounded to a multiple of this (0: not rounded)
  bool integer = false;              // uniform/normal: the value is written as an integer
  std::string where;
};

/// The outputs a plan may name, with their CSV headers.
const std::vector<std::pair<std::string, std::string>>& OutputNames() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"stop_time", "stop_time_s"},          {"stop_reason", "stop_reason"},
      {"distance", "distance_m"},            {"max_speed", "max_speed_mps"},
      {"min_headway", "min_headway_m"},      {"min_time_headway", "min_time_headway_s"},
      {"min_ttc", "min_ttc_s"},              {"max_lane_offset", "max_abs_lane_offset_m"},
      {"max_decel", "max_decel_mps2"},       {"collisions", "collisions"},
      {"event_time", "event_time_s"},        {"reaction_time", "reaction_time_s"},
  };
  return names;
}

struct Plan {
  std::string file;              // as given
  std::string text;              // the plan file's text
  fs::path dir;                  // its folder (absolute)
  fs::path session;              // the base session file (absolute)
  std::string session_text;
  std::string out;               // output folder as the plan says it
  uint64_t seed = 1;
  int repeat = 1;
  bool zip = false;
  int jobs = 1;
  double timeout_s = 600;
  // [stop]
  double duration_s = 60;
  double distance_m = 0;         // 0: no distance stop
  std::string stop_event;        // "": no event stop
  double tail_s = 0;
  // [outputs]
  std::string subject;           // node name (its first vehicle) or "node:index"
  std::vector<std::string> outputs;
  std::string event;             // the event reaction_time and event_time refer to
  double brake_threshold = 0.1;  // reaction: first brake input at or above this
  double decel_threshold_mps2 = 0; // reaction: or the first deceleration at or above this (0: not used)
  double rate_hz = 100;
  std::vector<Variant> vary;
  std::vector<Variator> random;
  std::string title;             // first comment line of a run's session file ("": "platoon batch: run N of PLAN")
};

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UsageError(p.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The values of an array key as scalars (a plan's values and choices), or a usage error naming the line.
std::vector<Scalar> ScalarArray(const toml::table& raw, const config::Table& t, const std::string& key, bool required) {
  const auto* arr = raw[key].as_array();
  if (!arr) {
    if (required || raw.contains(key)) t.Fail(key, "expected an array of values, e.g. [1.0, 1.5, 2.0]");
    return {};
  }
  if (arr->empty()) t.Fail(key, "expected at least one value");
  std::vector<Scalar> out;
  for (const auto& n : *arr) {
    auto s = ScalarOf(n);
    if (!s) t.Fail(key, "expected numbers, strings or booleans (no arrays or tables)");
    out.push_back(*s);
  }
  return out;
}

// Unknown keys of a [[vary]] or [[random]] table (its values are read from the raw document, so the
// reader's own check does not see them as used).
void RejectUnknown(const toml::table& raw, const config::Table& t, const std::vector<std::string>& known) {
  for (const auto& [key, node] : raw) {
    const std::string k(key.str());
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    t.Fail(k, "unknown key (known here: " + list + ")");
  }
}

void CheckPath(const config::Table& t, const std::string& path) {
  if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
    t.Fail("path", "expected a session path such as node.<name>.<key>, event.<name>.<key> or road.seed, got \"" +
                       path + "\"");
  const auto dot = path.find('.');
  const std::string head = path.substr(0, dot);
  if ((head == "node" || head == "event") && std::count(path.begin(), path.end(), '.') < 2)
    t.Fail("path", "expected " + head + ".<name>.<key>, got \"" + path + "\"");
}

// A scalar from a distribution's value text: an integer, a number, true/false, else the text.
Scalar ScalarFromText(const std::string& text) {
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return Scalar(static_cast<int64_t>(i));
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0' && std::isfinite(d)) return Scalar(d);
  if (text == "true" || text == "false") return Scalar(text == "true");
  return Scalar(text);
}

/// The plan of an OpenSCENARIO parameter value distribution (docs/SCENARIOS.md, "Parameter distributions as
/// batches"): its scenario as the base session, a [[vary]] per single-parameter list (product) or per parameter
/// of the value sets (zip), a [[random]] per stochastic parameter repeated numberOfTestRuns times; 30 s of sim
/// time; outputs of the scenario's first entity.
Plan DistributionPlan(const std::string& path, const std::string& text) {
  Plan p;
  p.file = path;
  p.text = text;
  p.dir = fs::absolute(fs::path(path)).parent_path();
  const scenario::ParameterDistribution d = scenario::ReadParameterDistribution(text, path, p.dir.string());
  p.session = fs::path(d.scenario_file).lexically_normal();
  if (!fs::is_regular_file(p.session))
    throw config::ConfigError(path + ": ScenarioFile: no scenario file " + p.session.string());
  p.session_text = scenario::SessionTextFor(p.session.string(), true, 0);
  p.out = "batch/" + fs::path(path).stem().string();
  p.duration_s = 30;
  const scenario::OscMapping m = scenario::LoadOpenScenarioFile(p.session.string());
  if (m.entity_node.empty()) throw config::ConfigError(p.session.string() + ": the scenario has no entities to measure");
  p.subject = m.nodes.empty() ? m.entity_node.begin()->second : m.nodes.front().name;
  for (const auto& [name, header] : OutputNames())
    if (name != "event_time" && name != "reaction_time") p.outputs.push_back(name);
  const std::string param_path = "scenario.parameters.";
  for (const auto& l : d.lists) {
    Variant v;
    v.path = param_path + l.parameter;
    for (const auto& t : l.values) v.values.push_back(ScalarFromText(t));
    v.where = l.where + ": DeterministicSingleParameterDistribution " + l.parameter;
    p.vary.push_back(std::move(v));
  }
  if (!d.sets.empty()) {
    p.zip = true;
    for (const auto& [name, value] : d.sets.front()) {
      Variant v;
      v.path = param_path + name;
      for (const auto& set : d.sets) v.values.push_back(ScalarFromText(set.at(name)));
      v.where = d.sets_where + ": ValueSetDistribution " + name;
      p.vary.push_back(std::move(v));
    }
  }
  for (const auto& r : d.draws) {
    Variator v;
    v.path = param_path + r.parameter;
    v.dist = r.dist;
    v.min = r.min;
    v.max = r.max;
    v.mean = r.mean;
    v.stddev = r.stddev;
    v.truncated = r.truncated;
    for (const auto& t : r.values) v.choices.push_back(ScalarFromText(t));
    v.weights = r.weights;
    v.where = r.where + ": StochasticDistribution " + r.parameter;
    p.random.push_back(std::move(v));
  }
  if (!d.draws.empty()) {
    p.repeat = d.runs;
    p.seed = d.seed;
  }
  return p;
}

Plan LoadPlan(const std::string& path) {
  if (scenario::IsOpenScenarioPath(path)) {
    const std::string text = ReadText(path);
    if (!scenario::IsParameterDistribution(text))
      throw UsageError(path + ": an OpenSCENARIO file that is no ParameterValueDistribution (run a scenario with "
                              "platoon run, or vary it from a plan with [batch] session = a session naming it)");
    return DistributionPlan(path, text);
  }
  Plan p;
  p.file = path;
  p.text = ReadText(path);
  p.dir = fs::absolute(fs::path(path)).parent_path();
  const auto t = config::Table::ParseText(p.text, path);
  toml::table raw;
  try {
    raw = toml::parse(p.text, path);
  } catch (const toml::parse_error& e) {
    throw config::ConfigError(e.what());
  }
  const auto b = t.Sub("batch");
  if (!b) throw config::ConfigError(path + ": missing [batch] table (with session = \"FILE\")");
  const std::string session = b->RequireString("session");
  p.session = fs::path(session).is_absolute() ? fs::path(session) : p.dir / session;
  p.session = p.session.lexically_normal();
  if (!fs::is_regular_file(p.session)) b->Fail("session", "no session file " + p.session.string());
  p.session_text = ReadText(p.session);
  p.out = b->GetString("out", "batch/" + fs::path(path).stem().string());
  p.seed = static_cast<uint64_t>(b->GetInt("seed", 1, 0));
  p.repeat = static_cast<int>(b->GetInt("repeat", 1, 1, kMaxRuns));
  p.zip = b->GetString("combine", "product", {"product", "zip"}) == "zip";
  p.jobs = static_cast<int>(b->GetInt("jobs", 1, 1, 256));
  p.timeout_s = b->GetDouble("timeout_s", 600, 1, 1e6);
  b->RejectUnknownKeys();

  if (auto s = t.Sub("stop")) {
    p.duration_s = s->GetDouble("duration_s", p.duration_s, 0.01, 1e6);
    p.distance_m = s->GetDouble("distance_m", 0, 0, 1e9);
    p.stop_event = s->GetString("event", "");
    p.tail_s = s->GetDouble("tail_s", 0, 0, 1e6);
    if (s->Has("tail_s") && p.stop_event.empty()) s->Fail("tail_s", "a tail follows an event: give [stop] event too");
    s->RejectUnknownKeys();
  }

  const auto o = t.Sub("outputs");
  if (!o) throw config::ConfigError(path + ": missing [outputs] table (with subject = \"<node name>\")");
  p.subject = o->RequireString("subject");
  std::vector<std::string> all;
  for (const auto& [name, header] : OutputNames()) all.push_back(name);
  p.event = o->GetString("event", p.stop_event);
  // The default: every output, those of an event only when there is one.
  std::vector<std::string> defaults;
  for (const auto& name : all)
    if (!p.event.empty() || (name != "event_time" && name != "reaction_time")) defaults.push_back(name);
  p.outputs = o->GetStringArray("list", defaults);
  for (const auto& name : p.outputs)
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      std::string known;
      for (const auto& a : all) known += (known.empty() ? "" : ", ") + a;
      o->Fail("list", "unknown output \"" + name + "\" (known: " + known + ")");
    }
  p.brake_threshold = o->GetDouble("brake_threshold", p.brake_threshold, 0.001, 1);
  p.decel_threshold_mps2 = o->GetDouble("decel_threshold_mps2", 0, 0, 100);
  p.rate_hz = o->GetDouble("rate_hz", p.rate_hz, 1, 1000);
  const bool needs_event = std::any_of(p.outputs.begin(), p.outputs.end(),
                                       [](const std::string& n) { return n == "reaction_time" || n == "event_time"; });
  if (needs_event && p.event.empty())
    o->Fail("list", "reaction_time and event_time need an event: give [outputs] event (or [stop] event)");
  o->RejectUnknownKeys();

  std::set<std::string> paths;
  const auto* vary_raw = raw["vary"].as_array();
  const auto vary = t.TableArray("vary");
  for (size_t i = 0; i < vary.size(); ++i) {
    Variant v;
    v.path = vary[i].RequireString("path");
    CheckPath(vary[i], v.path);
    v.values = ScalarArray(*(*vary_raw)[i].as_table(), vary[i], "values", true);
    v.where = vary[i].Where("values") + ": " + vary[i].Path();
    if (!paths.insert(v.path).second) vary[i].Fail("path", "\"" + v.path + "\" is varied twice");
    RejectUnknown(*(*vary_raw)[i].as_table(), vary[i], {"path", "values"});
    p.vary.push_back(std::move(v));
  }
  const auto* random_raw = raw["random"].as_array();
  const auto random = t.TableArray("random");
  for (size_t i = 0; i < random.size(); ++i) {
    const auto& r = random[i];
    Variator v;
    v.path = r.RequireString("path");
    CheckPath(r, v.path);
    v.dist = r.RequireString("dist", {"uniform", "normal", "choice"});
    if (v.dist == "uniform") {
      v.min = r.GetDouble("min", 0);
      v.max = r.GetDouble("max", 1);
      if (!(v.max >= v.min)) r.Fail("max", fmt::format("expected max >= min ({}), got {}", v.min, v.max));
    } else if (v.dist == "normal") {
      v.mean = r.GetDouble("mean", 0);
      v.stddev = r.GetDouble("stddev", 1, 0);
    } else {
      v.choices = ScalarArray(*(*random_raw)[i].as_table(), r, "values", true);
    }
    if (v.dist != "choice") {
      v.round_to = r.GetDouble("round_to", 0, 0);
      v.integer = r.GetBool("integer", false);
    }
    v.where = r.Where("path") + ": " + r.Path();
    if (!paths.insert(v.path).second) r.Fail("path", "\"" + v.path + "\" is varied twice");
    RejectUnknown(*(*random_raw)[i].as_table(), r, {"path", "dist", "min", "max", "mean", "stddev", "values", "round_to", "integer"});
    p.random.push_back(std::move(v));
  }
  t.RejectUnknownKeys();

  if (p.zip && !p.vary.empty())
    for (const auto& v : p.vary)
      if (v.values.size() != p.vary.front().values.size())
        throw config::ConfigError(v.where + ": combine = \"zip\" needs as many values in every [[vary]] (" +
                                  std::to_string(p.vary.front().values.size()) + " in " + p.vary.front().where + ", " +
                                  std::to_string(v.values.size()) + " here)");
  return p;
}

// ---------------------------------------------------------------------------------------------------
// The runs.

/// One run: its number and the values it sets, in plan order ([[vary]] then [[random]]).
struct RunSpec {
  int number = 0;  // 1-based
  std::vector<std::pair<std::string, Scalar>> values;
  std::vector<std::string> wheres;  // the plan line of each value
};

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A generator seeded from the plan seed, the run number and the variator's index: a run's draws do
/// not depend on the order the runs go in, nor on the PC that runs it.
class RunRng {
 public:
  RunRng(uint64_t seed, int run, size_t variator) : state_(Mix(Mix(Mix(seed) ^ static_cast<uint64_t>(run)) ^ variator)) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

Scalar Draw(const Variator& v, uint64_t seed, int run, size_t index) {
  RunRng rng(seed, run, index);
  if (v.dist == "choice") {
    if (v.weights.empty()) return v.choices[rng.Next() % v.choices.size()];
    // By weight: the first choice whose cumulative weight passes a uniform draw.
    double total = 0;
    for (double w : v.weights) total += w;
    double u = rng.Uniform() * total;
    for (size_t k = 0; k < v.choices.size(); ++k) {
      if (u < v.weights[k]) return v.choices[k];
      u -= v.weights[k];
    }
    return v.choices.back();
  }
  double x;
  if (v.dist == "uniform") {
    x = v.min + (v.max - v.min) * rng.Uniform();
  } else {
    // Box-Muller with u1 in (0, 1]; truncated: redrawn until inside the range (at most 1000 draws, then clamped).
    for (int tries = 0;; ++tries) {
      const double u1 = 1.0 - rng.Uniform(), u2 = rng.Uniform();
      x = v.mean + v.stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      if (!v.truncated || (x >= v.min && x <= v.max)) break;
      if (tries >= 1000) {
        x = std::clamp(x, v.min, v.max);
        break;
      }
    }
  }
  if (v.round_to > 0) {
    // Rounded, then written with round_to's decimals and read back: 1.15, not 1.1500000000000001.
    x = std::round(x / v.round_to) * v.round_to;
    int decimals = 0;  // the decimals of round_to itself (0.25: 2)
    while (decimals < 12 && std::abs(v.round_to * std::pow(10.0, decimals) - std::round(v.round_to * std::pow(10.0, decimals))) >
                                1e-6 * std::pow(10.0, decimals) * v.round_to)
      ++decimals;
    x = std::stod(fmt::format("{:.{}f}", x, decimals));
  }
  if (v.integer) return Scalar(static_cast<int64_t>(std::llround(x)));
  return Scalar(x);
}

std::vector<RunSpec> ExpandRuns(const Plan& p) {
  // Incremental variants: the cartesian product (first [[vary]] slowest) or the zip of the lists.
  size_t combos = p.vary.empty() ? 1 : (p.zip ? p.vary.front().values.size() : 1);
  if (!p.zip)
    for (const auto& v : p.vary) {
      combos *= v.values.size();
      if (combos > static_cast<size_t>(kMaxRuns)) break;
    }
  if (combos * static_cast<size_t>(p.repeat) > static_cast<size_t>(kMaxRuns))
    throw config::ConfigError(fmt::format("{}: the plan makes more than {} runs", p.file, kMaxRuns));
  std::vector<RunSpec> runs;
  for (size_t c = 0; c < combos; ++c)
    for (int r = 0; r < p.repeat; ++r) {
      RunSpec run;
      run.number = static_cast<int>(runs.size()) + 1;
      size_t rest = c;
      std::vector<size_t> pick(p.vary.size());
      for (size_t k = p.vary.size(); k-- > 0;) {
        if (p.zip) {
          pick[k] = c;
        } else {
          pick[k] = rest % p.vary[k].values.size();
          rest /= p.vary[k].values.size();
        }
      }
      for (size_t k = 0; k < p.vary.size(); ++k) {
        run.values.emplace_back(p.vary[k].path, p.vary[k].values[pick[k]]);
        run.wheres.push_back(p.vary[k].where);
      }
      for (size_t k = 0; k < p.random.size(); ++k) {
        run.values.emplace_back(p.random[k].path, Draw(p.random[k], p.seed, run.number, k));
        run.wheres.push_back(p.random[k].where);
      }
      runs.push_back(std::move(run));
    }
  return runs;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) out.push_back(item);
  return out;
}

// Sets `path` (node.<name>.<key...>, event.<name>.<key...>, or table.key...) in a session document;
// returns what is wrong, or "".
std::string SetPath(toml::table& root, const std::string& path, const Scalar& value) {
  const auto parts = Split(path, '.');
  if (parts.size() == 3 && parts[0] == "scenario" && parts[1] == "parameters") {
    // An OpenSCENARIO parameter: an entry "<name>=<value>" of [scenario] parameters (replacing one of that name).
    auto* sc = root["scenario"].as_table();
    if (!sc) return "the session has no [scenario] whose parameters could be set";
    if (!(*sc)["parameters"].as_array()) sc->insert_or_assign("parameters", toml::array{});
    auto* arr = (*sc)["parameters"].as_array();
    const std::string entry = parts[2] + "=" + ScalarText(value);
    for (size_t k = 0; k < arr->size(); ++k)
      if (auto str = (*arr)[k].value<std::string>(); str && str->rfind(parts[2] + "=", 0) == 0) {
        arr->replace(arr->cbegin() + static_cast<std::ptrdiff_t>(k), entry);
        return "";
      }
    arr->push_back(entry);
    return "";
  }
  toml::table* cur = &root;
  size_t i = 0;
  if (parts[0] == "node" || parts[0] == "event") {
    auto* arr = root[parts[0]].as_array();
    cur = nullptr;
    std::string names;
    if (arr)
      for (auto& n : *arr)
        if (auto* t = n.as_table()) {
          const auto name = (*t)["name"].value<std::string>().value_or("");
          names += (names.empty() ? "" : ", ") + name;
          if (name == parts[1]) cur = t;
        }
    if (!cur)
      return fmt::format("the session has no [[{}]] named \"{}\" (its {}s: {})", parts[0], parts[1], parts[0],
                         names.empty() ? "none" : names);
    i = 2;
  }
  // Tables by key, arrays by index ("event.lead_brakes.do.0.decel_mps2": the first action).
  toml::node* node = cur;
  for (; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (auto* arr = node->as_array()) {
      const bool digits = !parts[i].empty() && parts[i].find_first_not_of("0123456789") == std::string::npos;
      if (!digits || parts[i].size() > 6 || std::stoul(parts[i]) >= arr->size())
        return fmt::format("\"{}\" in {}: expected an index 0..{} of that array", parts[i], path,
                           arr->empty() ? 0 : arr->size() - 1);
      toml::node& elem = (*arr)[std::stoul(parts[i])];
      if (last) {
        if (elem.is_table() || elem.is_array()) return path + " is a table or array in the session, not a value";
        std::visit([&](const auto& v) { arr->replace(arr->cbegin() + static_cast<std::ptrdiff_t>(std::stoul(parts[i])), v); }, value);
        return "";
      }
      node = &elem;
      continue;
    }
    auto* table = node->as_table();
    if (!table) return "\"" + parts[i - 1] + "\" in " + path + " is a value in the session, not a table or array";
    if (last) {
      if (auto* existing = table->get(parts[i]); existing && (existing->is_table() || existing->is_array()))
        return path + " is a table or array in the session, not a value";
      std::visit([&](const auto& v) { table->insert_or_assign(parts[i], v); }, value);
      return "";
    }
    toml::node* next = table->get(parts[i]);
    if (!next) next = &table->insert_or_assign(parts[i], toml::table{}).first->second;
    node = next;
  }
  return "";
}

// Quotes a word for a POSIX shell.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The run's session file: the base with the run's values, relative paths made absolute (the file lives
/// in the run's folder), driver seats headless, one recorder writing session.mcap in the run's folder,
/// and, when `ports` is given, the server on 127.0.0.1 at those ports. Throws UsageError naming the plan
/// line of a value the session cannot take.
std::string RunSessionText(const Plan& p, const RunSpec& run, const std::vector<uint16_t>& ports) {
  toml::table root;
  try {
    root = toml::parse(p.session_text, p.session.string());
  } catch (const toml::parse_error& e) {
    throw config::ConfigError(std::string(e.what()));
  }
  for (size_t k = 0; k < run.values.size(); ++k) {
    const std::string error = SetPath(root, run.values[k].first, run.values[k].second);
    if (!error.empty()) throw UsageError(run.wheres[k] + ": path " + run.values[k].first + ": " + error);
  }
  const fs::path base_dir = p.session.parent_path();
  if (auto* road = root["road"].as_table())
    if (auto file = (*road)["file"].value<std::string>(); file && !file->empty() && fs::path(*file).is_relative())
      road->insert_or_assign("file", (base_dir / *file).lexically_normal().string());
  bool have_recorder = false;
  if (auto* nodes = root["node"].as_array()) {
    for (auto& n : *nodes) {
      auto* t = n.as_table();
      if (!t) continue;
      const auto role = (*t)["role"].value<std::string>().value_or("");
      if (role == "driver") {
        t->insert_or_assign("headless", true);
        if (auto input = (*t)["input"].value<std::string>(); input && input->rfind("scripted:", 0) == 0) {
          const std::string script = input->substr(9);
          if (fs::path(script).is_relative())
            t->insert_or_assign("input", "scripted:" + (base_dir / script).lexically_normal().string());
        }
      }
      if (role == "recorder") {
        t->insert_or_assign("path", have_recorder ? std::string("{node}.mcap") : std::string("session.mcap"));
        t->insert_or_assign("overwrite", true);
        t->insert_or_assign("foxglove", false);  // the outputs need the world only; Foxglove costs time
        have_recorder = true;
      }
    }
  }
  if (!have_recorder) {
    if (!root["node"].as_array()) root.insert_or_assign("node", toml::array{});
    root["node"].as_array()->push_back(toml::table{{"name", "batch_recorder"}, {"role", "recorder"},
                                                   {"path", "session.mcap"}, {"overwrite", true}, {"foxglove", false}});
  }
  if (!ports.empty()) {
    if (!root["session"].as_table()) root.insert_or_assign("session", toml::table{});
    root["session"].as_table()->insert_or_assign("server_host", "127.0.0.1");
    if (!root["server"].as_table()) root.insert_or_assign("server", toml::table{});
    auto* server = root["server"].as_table();
    server->insert_or_assign("bind_address", "127.0.0.1");
    const char* keys[] = {"control_port", "time_port", "world_port", "state_port"};
    for (int k = 0; k < 4; ++k) server->insert_or_assign(keys[k], static_cast<int64_t>(ports[k]));
  }
  std::ostringstream os;
  if (p.title.empty()) os << "# platoon batch: run " << run.number << " of " << p.file << " (base " << p.session.string() << ")\n";
  else os << "# " << p.title << " (base " << p.session.string() << ")\n";
  for (const auto& [path, value] : run.values) os << "#   " << path << " = " << ScalarText(value) << "\n";
  os << root << "\n";
  return os.str();
}

/// Loads and checks a run's session text as platoon check does; throws UsageError naming the run and the
/// plan lines of its values.
config::SessionDef CheckRunSession(const RunSpec& run, const std::string& text,
                                   const std::string& file, const SessionValidator& validate) {
  try {
    auto s = config::LoadSessionText(text, file);
    validate(s);
    return s;
  } catch (const config::ConfigError& e) {
    std::string values;
    for (size_t k = 0; k < run.values.size(); ++k)
      values += fmt::format("\n  {} = {} ({})", run.values[k].first, ScalarText(run.values[k].second), run.wheres[k]);
    throw UsageError(fmt::format("{}: {}{}", run.number > 0 ? fmt::format("run {}: the varied session is refused", run.number)
                                                             : std::string("the session with these values is refused"),
                                 e.what(), values.empty() ? "" : "\n  the run's values:" + values));
  }
}

// ---------------------------------------------------------------------------------------------------
// Outputs of a run, from its session log.

// Corners of an entity's footprint (its box about BoxCentreInBody), in the world frame.
std::array<Vec2, 4> Footprint(const protocol::EntityState& e) {
  const Vec3 size = e.box_size_m;
  const Vec3 c = e.kinematics.pose.position_m + e.kinematics.pose.orientation * BoxCentreInBody(size);
  const Vec3 fwd = e.kinematics.pose.orientation * Vec3::UnitX();
  Vec2 f(fwd.x(), fwd.y());
  if (f.norm() < 1e-9) f = Vec2(1, 0);
  f.normalize();
  const Vec2 l(-f.y(), f.x());
  const Vec2 centre(c.x(), c.y());
  const double hl = 0.5 * size.x(), hw = 0.5 * size.y();
  return {centre + hl * f + hw * l, centre + hl * f - hw * l, centre - hl * f - hw * l, centre - hl * f + hw * l};
}

// Whether two convex quadrilaterals overlap (separating axes: the edge normals of both).
bool Overlap(const std::array<Vec2, 4>& a, const std::array<Vec2, 4>& b) {
  for (const auto* poly : {&a, &b})
    for (int i = 0; i < 4; ++i) {
      const Vec2 e = (*poly)[(i + 1) % 4] - (*poly)[i];
      const Vec2 n(-e.y(), e.x());
      double amin = 1e300, amax = -1e300, bmin = 1e300, bmax = -1e300;
      for (const auto& q : a) amin = std::min(amin, n.dot(q)), amax = std::max(amax, n.dot(q));
      for (const auto& q : b) bmin = std::min(bmin, n.dot(q)), bmax = std::max(bmax, n.dot(q));
      if (amax < bmin || bmax < amin) return false;
    }
  return true;
}

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v + 0.0) : std::string(); }

/// The run's outputs by name (OutputNames), computed from its session log; throws std::runtime_error
/// when the log holds no state of the subject.
std::map<std::string, std::string> Analyse(const Plan& p, const config::SessionDef& session, const fs::path& log_path) {
  // 1. World states and the scenario firings they carried.
  server::ReplayLogBuilder builder;
  std::map<std::string, int64_t> fired;  // event name -> first firing, sim ns
  const auto read = session_log::Read(log_path.string(), [&](const session_log::Entry& e) {
    if (e.topic != session_log::kWorldTopic) return;
    auto decoded = protocol::Decode(std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
    const auto* w = decoded.message ? std::get_if<protocol::WorldState>(&*decoded.message) : nullptr;
    if (decoded.error != protocol::DecodeError::kNone || !w) return;
    for (const auto& ev : w->events)
      if (ev.kind == protocol::LoggedEvent::Kind::kFired) {
        auto [it, inserted] = fired.emplace(ev.text, ev.sim_time_ns);
        if (!inserted) it->second = std::min(it->second, ev.sim_time_ns);
      }
    builder.Add(*w);
  });
  server::ReplayLog log = builder.Finish();
  if (log.world_states == 0)
    throw std::runtime_error(log_path.string() + ": no world states" +
                             (read.problems.empty() ? "" : ": " + read.problems.front().message));

  // 2. The subject's track.
  std::vector<data::TrackRemoval> removals;
  for (const auto& r : log.removals) removals.push_back({r.id, r.sim_ns});
  const data::RecordedTracks tracks(std::move(log.states), removals, log.last_world_ns);
  std::vector<std::string> names;
  for (const auto& [id, name] : log.node_names) names.push_back(name);
  for (const auto& n : session.nodes) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const std::string want = p.subject.find(':') == std::string::npos ? p.subject + ":0" : p.subject;
  std::optional<size_t> subject;
  for (size_t i = 0; i < tracks.Tracks().size(); ++i)
    if (VehicleName(tracks.Tracks()[i].id, names) == want) subject = i;
  if (!subject) throw std::runtime_error(log_path.string() + ": no recorded vehicle " + want + " ([outputs] subject)");

  // 3. Its data-write rows up to the duration, as platoon export computes them.
  road::RoadNetwork roads;
  if (session.has_road) roads = road::SessionRoadNetwork(session.road);
  data::ExportDef def = data::DefaultExportDef();
  def.rate_hz = p.rate_hz;
  def.from_ns = 0;
  def.to_ns = SToNs(p.duration_s);
  def.threads = 1;
  std::vector<data::MetricsRow> rows;
  const size_t selected[] = {*subject};
  data::ExportRows(tracks, selected, roads, def, [&](size_t, const data::MetricsRow& row) { rows.push_back(row); });
  if (rows.empty()) throw std::runtime_error(log_path.string() + ": " + want + " has no state in the run");

  // 4. Where the run stops: the duration, the distance, or the event plus its tail.
  using data::Column;
  double stop_s = p.duration_s;
  std::string reason = "duration";
  if (!p.stop_event.empty())
    if (auto it = fired.find(p.stop_event); it != fired.end() && NsToS(it->second) + p.tail_s < stop_s) {
      stop_s = NsToS(it->second) + p.tail_s;
      reason = "event";
    }
  double distance = 0;
  std::vector<double> cumulative(rows.size(), 0.0);
  for (size_t i = 1; i < rows.size(); ++i) {
    distance += std::hypot(rows[i][Column::kX] - rows[i - 1][Column::kX], rows[i][Column::kY] - rows[i - 1][Column::kY]);
    cumulative[i] = distance;
    if (p.distance_m > 0 && distance >= p.distance_m && rows[i][Column::kSimTime] < stop_s) {
      stop_s = rows[i][Column::kSimTime];
      reason = "distance";
      break;
    }
  }
  const double last_s = rows.back()[Column::kSimTime];
  stop_s = std::min(stop_s, last_s);
  size_t n = 0;
  while (n < rows.size() && rows[n][Column::kSimTime] <= stop_s + 1e-9) ++n;

  // 5. The outputs over the rows up to the stop.
  double max_speed = NAN, min_headway = NAN, min_thw = NAN, min_ttc = NAN, max_offset = NAN, max_decel = NAN;
  auto lower = [](double& acc, double v) { if (std::isfinite(v) && !(acc <= v)) acc = v; };
  auto upper = [](double& acc, double v) { if (std::isfinite(v) && !(acc >= v)) acc = v; };
  for (size_t i = 0; i < n; ++i) {
    upper(max_speed, rows[i][Column::kSpeed]);
    lower(min_headway, rows[i][Column::kHeadway]);
    lower(min_thw, rows[i][Column::kTimeHeadway]);
    lower(min_ttc, rows[i][Column::kTtc]);
    upper(max_offset, std::abs(rows[i][Column::kLaneOffset]));
    upper(max_decel, 0.0 - rows[i][Column::kAccelLong]);
  }
  std::optional<int64_t> event_ns;
  if (auto it = fired.find(p.event); !p.event.empty() && it != fired.end() && NsToS(it->second) <= stop_s)
    event_ns = it->second;
  double reaction = NAN;
  if (event_ns)
    for (size_t i = 0; i < n; ++i) {
      const double t = rows[i][Column::kSimTime];
      if (t < NsToS(*event_ns) - 1e-9) continue;
      const bool braking = rows[i][Column::kBrake] >= p.brake_threshold ||
                           (p.decel_threshold_mps2 > 0 && -rows[i][Column::kAccelLong] >= p.decel_threshold_mps2);
      if (braking) {
        reaction = t - NsToS(*event_ns);
        break;
      }
    }
  const bool want_collisions = std::find(p.outputs.begin(), p.outputs.end(), "collisions") != p.outputs.end();
  std::set<uint64_t> hit;
  if (want_collisions)
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = SToNs(rows[i][Column::kSimTime]);
      const auto own = tracks.StateAt(*subject, t, def.method);
      if (!own) continue;
      const auto own_box = Footprint(*own);
      for (size_t k = 0; k < tracks.Tracks().size(); ++k) {
        if (k == *subject || hit.count(tracks.Tracks()[k].id) || !data::IsVehicle(tracks.Tracks()[k].kind)) continue;
        const auto other = tracks.StateAt(k, t, def.method);
        if (!other) continue;
        const Vec3 d = other->kinematics.pose.position_m - own->kinematics.pose.position_m;
        if (d.head<2>().norm() > 0.6 * (own->box_size_m.head<2>().norm() + other->box_size_m.head<2>().norm()) + 1.0)
          continue;
        if (Overlap(own_box, Footprint(*other))) hit.insert(tracks.Tracks()[k].id);
      }
    }
  std::map<std::string, std::string> out;
  out["stop_time"] = Num(stop_s);
  out["stop_reason"] = reason;
  out["distance"] = Num(n > 0 ? cumulative[n - 1] : 0.0);
  out["max_speed"] = Num(max_speed);
  out["min_headway"] = Num(min_headway);
  out["min_time_headway"] = Num(min_thw);
  out["min_ttc"] = Num(min_ttc);
  out["max_lane_offset"] = Num(max_offset);
  out["max_decel"] = Num(max_decel);
  out["collisions"] = std::to_string(hit.size());
  out["event_time"] = event_ns ? Num(NsToS(*event_ns)) : "";
  out["reaction_time"] = Num(reaction);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Result files.

std::string ResultHeader(const Plan& p) {
  std::string h = "run";
  for (const auto& v : p.vary) h += "," + data::CsvField(v.path);
  for (const auto& v : p.random) h += "," + data::CsvField(v.path);
  for (const auto& name : p.outputs)
    for (const auto& [n, header] : OutputNames())
      if (n == name) h += "," + header;
  return h;
}

std::string RunDirName(int number) { return fmt::format("run_{:03d}", number); }

// Ports a run's server takes: control, time, world, state.
constexpr int kPortsPerRun = 4;

// The ports of run `number` (1-based) under --port-base `base`: base + 4 (number - 1) and the three after.
std::vector<uint16_t> RunPorts(int base, int number) {
  std::vector<uint16_t> ports;
  for (int k = 0; k < kPortsPerRun; ++k) ports.push_back(static_cast<uint16_t>(base + kPortsPerRun * (number - 1) + k));
  return ports;
}

// Throws UsageError when run `last` (the highest run number to do) would take ports beyond 65535.
void CheckPortBase(int base, int last, size_t runs) {
  if (base < 1 || base > 65535)
    throw UsageError(fmt::format("--port-base {}: expected a port in 1..65535", base));
  const long top = static_cast<long>(base) + static_cast<long>(kPortsPerRun) * last - 1;
  if (top <= 65535) return;
  const long most = 65535 - static_cast<long>(kPortsPerRun) * last + 1;
  throw UsageError(fmt::format(
      "--port-base {}: run {} would take ports {}..{}, beyond 65535 (each run's server takes {} ports: run K uses "
      "{} + {}(K-1) and the three after; the plan has {} run(s)){}",
      base, last, top - kPortsPerRun + 1, top, kPortsPerRun, base, kPortsPerRun, runs,
      most >= 1 ? fmt::format("; give a base of at most {}", most) : std::string("; run fewer runs at once (--run K)")));
}

// Counts the fields of a CSV line (quotes respected).
size_t FieldCount(const std::string& line) {
  size_t count = 1;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) ++count;
  }
  return count;
}

// The run's result row when its result file is complete (header as expected, one whole row), else "".
std::string CompleteRow(const fs::path& dir, const std::string& header) {
  std::ifstream in(dir / "result.csv");
  std::string h, row, extra;
  if (!in || !std::getline(in, h) || h != header || !std::getline(in, row) || std::getline(in, extra)) return "";
  return FieldCount(row) == FieldCount(header) ? row : "";
}


// ---------------------------------------------------------------------------------------------------
// Running.

/// A run going on: its child (`platoon run`), log file and start time.
struct Active {
  const RunSpec* run = nullptr;
  fs::path dir;
  config::SessionDef session;
  std::optional<process::Child> child;
  std::ofstream log;
  std::vector<std::string> summary;
  int log_lines = 0;
  std::chrono::steady_clock::time_point start;
};

void PumpActive(Active& a) {
  std::vector<std::string> lines;
  a.child->Pump(lines);
  for (const auto& l : lines) {
    if (a.log_lines++ < kMaxRunLogLines) a.log << l << "\n";
    if (auto pos = l.find("SUMMARY {"); pos != std::string::npos && a.summary.size() < 1000)
      a.summary.push_back(l.substr(pos));
  }
}

/// Starts `run` of `p` in `dir` (emptied first): its session file written there and checked as platoon check
/// does, then `platoon run session.toml --lockstep` as a child in that folder. Throws on what stops it.
std::unique_ptr<Active> StartRun(const Plan& p, const RunSpec& run, const fs::path& dir, const std::vector<uint16_t>& ports,
                                 const SessionValidator& validate, const std::string& self) {
  auto a = std::make_unique<Active>();
  a->run = &run;
  a->dir = dir;
  fs::remove_all(a->dir);
  fs::create_directories(a->dir);
  const std::string text = RunSessionText(p, run, ports);
  const std::string file = (a->dir / "session.toml").string();
  a->session = CheckRunSession(run, text, file, validate);
  WriteFileAtomic(file, text);
  a->log.open(a->dir / "run.log", std::ios::trunc);
  const std::string command = "cd " + ShellQuote(a->dir.string()) + " && exec " + ShellQuote(self) +
                              " run session.toml --lockstep --duration " + fmt::format("{}", p.duration_s);
  a->child.emplace(process::Child::Spawn({"/bin/sh", "-c", command}));
  a->start = std::chrono::steady_clock::now();
  return a;
}

/// The run's SUMMARY lines into DIR/summary.jsonl.
void WriteSummaryLines(const Active& a) {
  std::ofstream summary(a.dir / "summary.jsonl", std::ios::trunc);
  for (const auto& l : a.summary) summary << l << "\n";
}

/// Progress on stderr: a bar with the ETA redrawn on a terminal, one line per run otherwise.
class BatchProgress {
 public:
  BatchProgress(size_t total, size_t done) : total_(total), done_(done), skipped_(done), tty_(isatty(STDERR_FILENO) != 0) {}
  void RunDone(int number, bool ok, double wall_s, double sim_s) {
    ++done_;
    ++ran_;
    sim_s_ += sim_s;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double eta = elapsed / static_cast<double>(ran_) * static_cast<double>(total_ - done_);
    if (tty_) {
      const int width = 30, filled = static_cast<int>(width * done_ / std::max<size_t>(total_, 1));
      std::fprintf(stderr, "\r%s: [%s%s] %zu/%zu runs, %.1fx real time, ETA %.0f s   ", kMe,
                   std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done_, total_,
                   elapsed > 0 ? sim_s_ / elapsed : 0.0, eta);
      if (done_ == total_) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%s: run %d %s in %.1f s (%.1f s sim), %zu/%zu done, ETA %.0f s\n", kMe, number,
                   ok ? "done" : "FAILED", wall_s, sim_s, done_, total_, eta);
    }
    std::fflush(stderr);
  }
  void End() {
    if (tty_ && done_ < total_) std::fprintf(stderr, "\n");
  }
  double SimSeconds() const { return sim_s_; }

 private:
  using Clock = std::chrono::steady_clock;
  size_t total_, done_, skipped_, ran_ = 0;
  bool tty_;
  double sim_s_ = 0;
  Clock::time_point start_ = Clock::now();
};

/// Finishes a run whose child exited: its SUMMARY lines, its outputs and its result file. Returns what
/// went wrong, or "".
std::string FinishRun(const Plan& p, Active& a, int status, const std::string& header, double& sim_s) {
  PumpActive(a);
  a.log.flush();
  WriteSummaryLines(a);
  if (status != 0) return fmt::format("platoon run exited with status {} (see {})", status, (a.dir / "run.log").string());
  std::map<std::string, std::string> out;
  try {
    out = Analyse(p, a.session, a.dir / "session.mcap");
  } catch (const std::exception& e) {
    return e.what();
  }
  // The run simulated its whole duration (the outputs may end earlier, at a stop condition).
  sim_s = p.duration_s;
  std::string row = std::to_string(a.run->number);
  for (const auto& [path, value] : a.run->values) row += "," + data::CsvField(ScalarText(value));
  for (const auto& name : p.outputs) row += "," + data::CsvField(out[name]);
  WriteFileAtomic(a.dir / "result.csv", header + "\n" + row + "\n");
  return "";
}

}  // namespace

CLI::App* AddBatchCommand(CLI::App& app, BatchOptions& o) {
  auto* cmd = app.add_subcommand(
      "batch",
      "Run a base session many times with varied parameters (a plan: [[vary]] lists, seeded [[random]] variators, "
      "stop conditions, outputs), each run in lock-step in its own folder; OUT/results.csv gets one row per run. "
      "An interrupted batch resumes where it stopped (runs with a complete result are skipped).\n\n"
      "  platoon batch configs/headway_brake_batch.toml              every run here, results in batch/<plan>/\n"
      "  platoon batch plan.toml --jobs 2 --out /data/study1         two runs at a time, into /data/study1\n"
      "  platoon batch plan.toml --show                              each run's values, nothing runs\n"
      "  platoon batch plan.toml --list > runs.txt                   one self-contained command per run\n"
      "  parallel -S host1,host2 < runs.txt                          ... spread over PCs with GNU parallel\n"
      "  platoon batch plan.toml --run 7                             run 7 alone (what --list prints)\n"
      "  platoon batch plan.toml --jobs 4 --port-base 20000          run K's server on ports 20000 + 4(K-1) .. +3\n"
      "  platoon batch plan.toml --collect                           merge the runs' results into results.csv\n"
      "  platoon batch examples/scenarios/cut_in_speeds.xosc         an OpenSCENARIO parameter distribution as a plan\n\n"
      "Exit codes: 0 done, 1 runs failed or still to do (run again to resume; --collect: results missing), "
      "2 usage error (bad plan, a variation the session refuses), 130 interrupted. docs/EXPERIMENTS.md, \"Batch runs\".");
  cmd->add_option("plan", o.plan_path, "Batch plan (TOML), or an OpenSCENARIO ParameterValueDistribution (.xosc)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o.out_dir, "Output folder (default: the plan's [batch] out, else batch/<plan name>)");
  cmd->add_option("--run", o.run, "Only this run (1-based), as --list prints it")->check(CLI::Range(1, kMaxRuns));
  cmd->add_flag("--list", o.list, "Print one self-contained command per run (for GNU parallel or a Slurm array) and exit");
  cmd->add_flag("--collect", o.collect, "Merge OUT/run_*/result.csv into OUT/results.csv in run order and exit");
  cmd->add_flag("--show", o.show, "Print each run's varied values as CSV and exit; nothing runs");
  cmd->add_option("--jobs", o.jobs, "Runs at a time on this PC (default: the plan's [batch] jobs, else 1)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--stop-after", o.stop_after, "Stop after running this many runs (the batch resumes later)")
      ->check(CLI::Range(1, kMaxRuns));
  cmd->add_flag("--force", o.force, "Redo runs whose result is already there");
  cmd->add_option("--bin-dir", o.bin_dir, "Where platoon is (default: next to this executable)");
  cmd->add_option("--port-base", o.port_base,
                  "Run the servers on these ports instead of ports the OS chooses: run K's server (on 127.0.0.1) "
                  "takes N + 4(K-1) .. N + 4(K-1) + 3 (control, time, world, state), e.g. --port-base 20000 gives "
                  "run 1 ports 20000-20003, run 2 20004-20007; the runs' ports must stay within 65535")
      ->check(CLI::Range(1, 65535));
  return cmd;
}

int RunBatch(const BatchOptions& o, const SessionValidator& validate) {
  const auto t_start = std::chrono::steady_clock::now();
  // 1. The plan, its runs, and every run's session checked before anything runs.
  Plan plan;
  std::vector<RunSpec> runs;
  try {
    plan = LoadPlan(o.plan_path);
    runs = ExpandRuns(plan);
    if (o.run > static_cast<int>(runs.size()))
      throw UsageError(fmt::format("--run {}: the plan has {} runs", o.run, runs.size()));
    if (o.port_base != 0) CheckPortBase(o.port_base, o.run != 0 ? o.run : static_cast<int>(runs.size()), runs.size());
    if (!o.list && !o.collect)
      for (const auto& run : runs)
        if (o.run == 0 || o.run == run.number) {
          const std::string file = (fs::absolute(plan.out) / RunDirName(run.number) / "session.toml").string();
          (void)CheckRunSession(run, RunSessionText(plan, run, {}), file, validate);
        }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return kExitUsage;
  }
  const fs::path out = fs::absolute(o.out_dir.empty() ? plan.out : o.out_dir).lexically_normal();
  const std::string header = ResultHeader(plan);

  if (o.show) {
    std::string h = "run";
    for (const auto& v : plan.vary) h += "," + data::CsvField(v.path);
    for (const auto& v : plan.random) h += "," + data::CsvField(v.path);
    std::printf("%s\n", h.c_str());
    for (const auto& run : runs) {
      std::string row = std::to_string(run.number);
      for (const auto& [path, value] : run.values) row += "," + data::CsvField(ScalarText(value));
      std::printf("%s\n", row.c_str());
    }
    return 0;
  }
  const std::string self = (o.bin_dir.empty() ? process::ExecutableDir() : o.bin_dir) + "/platoon";
  if (o.list) {
    const std::string plan_abs = fs::absolute(o.plan_path).lexically_normal().string();
    for (const auto& run : runs)
      std::printf("%s batch %s --run %d --out %s%s\n", ShellQuote(self).c_str(), ShellQuote(plan_abs).c_str(),
                  run.number, ShellQuote(out.string()).c_str(),
                  o.port_base != 0 ? fmt::format(" --port-base {}", o.port_base).c_str() : "");
    return 0;
  }

  // 2. The output folder: a copy of the plan; a folder of another plan is refused (its results would mix).
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    std::fprintf(stderr, "%s: cannot create the output folder %s%s%s\n", kMe, out.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return kExitUsage;
  }
  const fs::path plan_copy = out / "plan.toml";
  if (fs::exists(plan_copy)) {
    std::string before;
    try {
      before = ReadText(plan_copy);
    } catch (const std::exception&) {
    }
    if (before != plan.text) {
      std::fprintf(stderr, "%s: %s holds the runs of another plan (its plan.toml differs from %s); give another --out or "
                           "remove that folder\n", kMe, out.c_str(), o.plan_path.c_str());
      return kExitUsage;
    }
  } else if (!o.collect) {
    WriteFileAtomic(plan_copy, plan.text);
  }

  // 3. --collect: the runs' rows in run order.
  auto collect = [&](bool quiet) -> int {
    std::string text = header + "\n";
    std::vector<int> missing;
    for (const auto& run : runs) {
      const std::string row = CompleteRow(out / RunDirName(run.number), header);
      if (row.empty()) missing.push_back(run.number);
      else text += row + "\n";
    }
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 30; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
      if (missing.size() > 30) list += ", ...";
      std::fprintf(stderr, "%s: %zu of %zu runs have no result yet in %s (runs %s); results.csv not written\n", kMe,
                   missing.size(), runs.size(), out.c_str(), list.c_str());
      return 1;
    }
    WriteFileAtomic(out / "results.csv", text);
    if (!quiet) std::printf("%s: %zu runs -> %s\n", kMe, runs.size(), (out / "results.csv").c_str());
    return 0;
  };
  if (o.collect) return collect(false);

  // 4. The runs to do: complete ones are skipped (resume), unless --force.
  std::vector<const RunSpec*> runs_left;
  for (const auto& run : runs)
    if (o.run == 0 || o.run == run.number)
      if (o.force || CompleteRow(out / RunDirName(run.number), header).empty()) runs_left.push_back(&run);
  const size_t selected = o.run == 0 ? runs.size() : 1;
  if (runs_left.size() < selected)
    std::fprintf(stderr, "%s: %zu of %zu runs already have their result in %s (skipped)\n", kMe,
                 selected - runs_left.size(), selected, out.c_str());
  if (!fs::exists(self)) {
    std::fprintf(stderr, "%s: %s not found (build the project, or pass --bin-dir)\n", kMe, self.c_str());
    return kExitUsage;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  const int jobs = o.jobs > 0 ? o.jobs : plan.jobs;
  BatchProgress progress(selected, selected - runs_left.size());
  std::vector<std::unique_ptr<Active>> active;
  std::vector<int> failed;
  size_t next = 0;
  int started = 0;
  bool interrupted = false;
  while (true) {
    // Start runs while there is room.
    while (!interrupted && active.size() < static_cast<size_t>(jobs) && next < runs_left.size() &&
           (o.stop_after == 0 || started < o.stop_after)) {
      const RunSpec& run = *runs_left[next++];
      std::unique_ptr<Active> a;
      try {
        a = StartRun(plan, run, out / RunDirName(run.number),
                     o.port_base != 0 ? RunPorts(o.port_base, run.number) : transport::FreeLoopbackPorts(kPortsPerRun),
                     validate, self);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: run %d: %s\n", kMe, run.number, e.what());
        failed.push_back(run.number);
        continue;
      }
      ++started;
      active.push_back(std::move(a));
    }
    if (active.empty()) break;

    // Pump their output; finish the ones that exited.
    std::vector<pollfd> fds;
    for (auto& a : active)
      if (a->child->OutputFd() >= 0) fds.push_back(pollfd{a->child->OutputFd(), POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    if (g_signal.load() && !interrupted) {
      interrupted = true;
      std::fprintf(stderr, "\n%s: interrupted: stopping %zu run(s); they are redone when the batch resumes\n", kMe,
                   active.size());
      for (auto& a : active) a->child->Signal(SIGTERM);
    }
    for (size_t i = 0; i < active.size();) {
      Active& a = *active[i];
      PumpActive(a);
      const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a.start).count();
      auto status = a.child->TryWait();
      if (!status && wall_s > plan.timeout_s) {
        std::fprintf(stderr, "%s: run %d: still running after %.0f s ([batch] timeout_s): stopping it\n", kMe,
                     a.run->number, plan.timeout_s);
        a.child->Signal(SIGTERM);
        status = a.child->WaitFor(std::chrono::seconds(10));
        if (!status) {
          a.child->Signal(SIGKILL);
          status = a.child->WaitFor(std::chrono::seconds(2)).value_or(137);
        }
        status = 124;
      }
      if (!status) {
        ++i;
        continue;
      }
      if (interrupted) {
        PumpActive(a);
        fs::remove(a.dir / "result.csv", ec);
      } else {
        double sim_s = 0;
        const std::string error = FinishRun(plan, a, *status, header, sim_s);
        if (!error.empty()) {
          std::fprintf(stderr, "%s: run %d failed: %s\n", kMe, a.run->number, error.c_str());
          failed.push_back(a.run->number);
        }
        progress.RunDone(a.run->number, error.empty(), wall_s, error.empty() ? sim_s : 0.0);
      }
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  progress.End();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  if (interrupted) {
    std::fprintf(stderr, "%s: interrupted; run the same command again to resume\n", kMe);
    return 130;
  }
  if (progress.SimSeconds() > 0)
    std::printf("%s: ran %d run(s): %.1f s of sim time in %.1f s of wall time (%.1fx real time)\n", kMe,
                started - static_cast<int>(failed.size()), progress.SimSeconds(), wall_s, progress.SimSeconds() / wall_s);
  if (!failed.empty()) {
    std::string list;
    for (size_t i = 0; i < failed.size(); ++i) list += (i ? ", " : "") + std::to_string(failed[i]);
    std::fprintf(stderr, "%s: %zu run(s) failed (%s); run the same command again to redo them\n", kMe, failed.size(),
                 list.c_str());
    return 1;
  }
  if (o.run != 0) return 0;
  if (next < runs_left.size()) {
    std::fprintf(stderr, "%s: stopped after %d run(s) (--stop-after); %zu still to do: run the same command again to resume\n",
                 kMe, started, runs_left.size() - next);
    return 1;
  }
  return collect(false);
}

namespace {

// A lock-step run as a one-run plan: the base session, no variation lists, the run's values.
std::pair<Plan, RunSpec> LockstepPlan(const LockstepRunDef& def) {
  Plan p;
  p.file = def.session_file;
  p.session = fs::absolute(fs::path(def.session_file)).lexically_normal();
  p.session_text = ReadText(p.session);
  p.dir = p.session.parent_path();
  p.duration_s = def.duration_s;
  p.timeout_s = def.timeout_s;
  p.title = def.title;
  RunSpec run;
  run.number = 0;  // not a batch run: messages name no run number
  for (const auto& v : def.values) {
    run.values.emplace_back(v.path, std::visit([](const auto& x) { return Scalar(x); }, v.value));
    run.wheres.push_back(v.where);
  }
  return {std::move(p), std::move(run)};
}

}  // namespace

void CheckLockstepRun(const LockstepRunDef& def, const SessionValidator& validate) {
  const auto [p, run] = LockstepPlan(def);
  const std::string file = (fs::absolute(fs::path(def.dir)) / "session.toml").string();
  (void)CheckRunSession(run, RunSessionText(p, run, {}), file, validate);
}

LockstepRunResult RunLockstep(const LockstepRunDef& def, const SessionValidator& validate, const std::function<bool()>& stop) {
  LockstepRunResult r;
  const auto t0 = std::chrono::steady_clock::now();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  try {
    const auto [p, run] = LockstepPlan(def);
    const std::string self = (def.bin_dir.empty() ? process::ExecutableDir() : def.bin_dir) + "/platoon";
    if (!fs::exists(self)) throw std::runtime_error(self + " not found (build the project, or pass --bin-dir)");
    auto a = StartRun(p, run, fs::absolute(fs::path(def.dir)), transport::FreeLoopbackPorts(kPortsPerRun), validate, self);
    std::optional<int> status;
    while (!status) {
      pollfd fd{a->child->OutputFd(), POLLIN, 0};
      poll(&fd, fd.fd >= 0 ? 1 : 0, 100);
      PumpActive(*a);
      status = a->child->TryWait();
      if (status) break;
      const bool stopping = !r.stopped && stop && stop();
      if (!stopping && wall() <= def.timeout_s) continue;
      // Asked to stop, or over time: SIGTERM, then SIGKILL after 10 s.
      r.stopped = stopping;
      a->child->Signal(SIGTERM);
      status = a->child->WaitFor(std::chrono::seconds(10));
      if (!status) {
        a->child->Signal(SIGKILL);
        status = a->child->WaitFor(std::chrono::seconds(2)).value_or(137);
      }
      if (!stopping) status = 124;
    }
    PumpActive(*a);
    a->log.flush();
    WriteSummaryLines(*a);
    r.status = *status;
    if (r.stopped) r.error = "stopped before its end";
    else if (r.status == 124) r.error = fmt::format("still running after {:.0f} s of wall time (timeout): stopped", def.timeout_s);
    else if (r.status != 0) r.error = fmt::format("platoon run exited with status {} (see {})", r.status, (a->dir / "run.log").string());
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.wall_s = wall();
  return r;
}

}  // namespace platoon::launcher
