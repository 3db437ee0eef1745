#include "platoon/can/mapping.hpp"

#include "platoon/config/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace platoon::can {
namespace {

constexpr std::array<std::string_view, kVariableCount> kVariableNames = {
    "speed_mps", "yaw_rate_radps", "ax_mps2", "ay_mps2", "x_m", "y_m", "yaw_rad",
    "steer",     "throttle",       "brake",   "indicator", "gear",
    "wheel_speed_fl_mps", "wheel_speed_fr_mps", "wheel_speed_rl_mps", "wheel_speed_rr_mps"};

std::string KnownVariables() {
  std::string out;
  for (const auto& n : kVariableNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// The range a received command variable is clamped into.
void RxRange(Variable v, double& lo, double& hi) {
  lo = 0, hi = 1;
  if (v == Variable::kSteer) lo = -1;
  if (v == Variable::kIndicator) hi = 2;
}

}  // namespace

std::string_view VariableName(Variable v) { return kVariableNames[static_cast<size_t>(v)]; }

std::optional<Variable> VariableByName(std::string_view name) {
  for (size_t i = 0; i < kVariableNames.size(); ++i)
    if (kVariableNames[i] == name) return static_cast<Variable>(i);
  return std::nullopt;
}

std::array<double, 4> WheelSpeeds(double vx_mps, double vy_mps, double yaw_rate_radps, double steer_rad, double cg_to_front_m,
                                  [[maybe_unused]] double cg_to_rear_m, double track_m) {
  // The rear wheels roll along the body x axis: their lateral velocity (vy - r b) turns no wheel, so the
  // distance b from the CG to the rear axle does not enter. Velocity of the point (px, py) of the body (CG frame): (vx - r py, vy + r px).
  const double half = track_m / 2;
  const double left_vx = vx_mps - yaw_rate_radps * half, right_vx = vx_mps + yaw_rate_radps * half;
  const double front_vy = vy_mps + yaw_rate_radps * cg_to_front_m;
  // Front wheels: along their heading (cos d, sin d); rear wheels: along the body x axis.
  const double c = std::cos(steer_rad), s = std::sin(steer_rad);
  return {left_vx * c + front_vy * s, right_vx * c + front_vy * s, left_vx, right_vx};
}

namespace {

// A parameter path: dot-separated names of letters, digits, '_' and '-', none empty.
bool ValidParamPath(std::string_view path) {
  if (path.empty() || path.size() > 200 || path.front() == '.' || path.back() == '.') return false;
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '.' && path[i + 1] == '.') return false;
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> ParamText(double value, std::string_view type, std::string& error) {
  if (!std::isfinite(value)) {
    error = fmt::format("expected a finite value, got {}", value);
    return std::nullopt;
  }
  if (type == "string") {
    error = "a string parameter cannot be carried by a signal (numbers and booleans only)";
    return std::nullopt;
  }
  if (type == "bool") {
    if (value == 0) return "false";
    if (value == 1) return "true";
    error = fmt::format("expected 1 or 0 for a boolean, got {}", value);
    return std::nullopt;
  }
  if (type == "int") {
    if (std::abs(value) >= 9.2e18) {
      error = fmt::format("expected an integer, got {}", value);
      return std::nullopt;
    }
    return fmt::format("{}", std::llround(value));
  }
  // fmt's shortest round-trip form: the registry reads back exactly `value`.
  return fmt::format("{}", value);
}

std::optional<double> ParamNumber(std::string_view text) {
  if (text == "true") return 1.0;
  if (text == "false") return 0.0;
  if (text.empty() || text.front() == '"') return std::nullopt;
  const std::string t(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

bool Receivable(Variable v) {
  return v == Variable::kSteer || v == Variable::kThrottle || v == Variable::kBrake || v == Variable::kIndicator;
}

namespace {

MappingDef FromTable(const config::Table& t, const std::string& source) {
  MappingDef d;
  d.source = source;
  // The DBC, next to the mapping file when relative.
  if (!t.Has("dbc")) t.Fail("dbc", "expected dbc = \"<file>.dbc\", the bus definition the mapping refers to");
  d.dbc_path = t.GetString("dbc", "");
  if (d.dbc_path.empty()) t.Fail("dbc", "expected a DBC file path, got \"\"");
  d.track_m = t.GetDouble("track_m", kDefaultTrackM, 0.1, 10.0);
  const auto slash = source.rfind('/');
  if (d.dbc_path.front() != '/' && slash != std::string::npos) d.dbc_path = source.substr(0, slash + 1) + d.dbc_path;
  try {
    d.dbc = LoadDbc(d.dbc_path);
  } catch (const DbcError& e) {
    throw config::ConfigError(t.Where("dbc") + ": dbc: " + e.what());
  }
  // The messages and their signals.
  const auto tables = t.TableArray("message");
  if (tables.empty()) t.Fail("message", "expected at least one [[message]] table (name, direction, [[message.signal]])");
  std::map<Variable, std::string> rx_seen;  // rx variable -> where it is mapped
  for (const auto& m : tables) {
    MessageMapDef md;
    const std::string name = m.RequireString("name");
    md.message = d.dbc.FindMessage(name);
    if (!md.message) {
      std::string names;
      for (const auto& msg : d.dbc.messages) names += (names.empty() ? "" : ", ") + msg.name;
      m.Fail("name", "expected a message of " + d.dbc_path + " (" + (names.empty() ? "none" : names) + "), got \"" + name + "\"");
    }
    for (const auto& other : d.messages)
      if (other.message == md.message) m.Fail("name", "message \"" + name + "\" is mapped twice");
    md.direction = m.RequireString("direction", {"tx", "rx"}) == "tx" ? Direction::kTx : Direction::kRx;
    if (md.direction == Direction::kTx) {
      md.on_change = m.GetBool("on_change", false);
      if (md.on_change && m.Has("period_ms")) m.Fail("period_ms", "a message goes either every period_ms or on_change, got both");
      if (!md.on_change) {
        const int64_t dbc_ms = md.message->cycle_time_ms;
        if (!m.Has("period_ms") && dbc_ms == 0)
          m.Fail("name", "tx message \"" + name + "\" needs period_ms = <ms> or on_change = true (the DBC gives no GenMsgCycleTime)");
        md.period_ns = m.GetInt("period_ms", dbc_ms, 1, 60'000) * 1'000'000;
      }
    } else {
      for (const char* key : {"period_ms", "on_change"})
        if (m.Has(key)) m.Fail(key, "is for tx messages; an rx message is taken whenever it comes");
    }
    const auto signals = m.TableArray("signal");
    if (signals.empty()) m.Fail("signal", "expected at least one [[message.signal]] table (name, variable, factor, offset)");
    for (const auto& s : signals) {
      SignalMapDef sd;
      const std::string sname = s.RequireString("name");
      sd.signal = md.message->FindSignal(sname);
      if (!sd.signal)
        s.Fail("name", "expected a signal of message " + name + " (" + md.message->SignalNames() + "), got \"" + sname + "\"");
      // A simulator variable or a live parameter (the seat checks that the parameter exists).
      const bool has_variable = s.Has("variable"), has_param = s.Has("param");
      if (has_variable && has_param)
        s.Fail("param", "a signal carries either a variable or a param, got both (variable at " + s.Where("variable") + ")");
      if (!has_variable && !has_param)
        s.Fail("name", "expected variable = \"<simulator variable>\" or param = \"<live parameter>\" for signal \"" + sname + "\"");
      if (has_param) {
        const std::string path = s.RequireString("param");
        if (!ValidParamPath(path))
          s.Fail("param", "expected a parameter path as `platoon ctl param list` shows it (\"node.<name>.tyre_mu\") or one "
                          "relative to the seat's node (\"tyre_mu\"), got \"" + path + "\"");
        sd.param = static_cast<int>(d.params.size());
        d.params.push_back(ParamMapDef{path, s.Where("param") + ": " + s.Path() + ".param", md.direction, name, sname});
      } else {
        const std::string vname = s.RequireString("variable");
        const auto v = VariableByName(vname);
        if (!v) s.Fail("variable", "expected a simulator variable (" + KnownVariables() + "), got \"" + vname + "\"");
        sd.variable = *v;
      }
      if (md.direction == Direction::kRx && !has_param) {
        const std::string vname = std::string(VariableName(sd.variable));
        if (!Receivable(sd.variable))
          s.Fail("variable", "an rx signal drives the seat: expected steer, throttle, brake or indicator, got \"" + vname + "\"");
        if (auto [it, fresh] = rx_seen.emplace(sd.variable, s.Where("variable")); !fresh)
          s.Fail("variable", "\"" + vname + "\" is already received at " + it->second);
      }
      for (const auto& other : md.signals)
        if (other.signal == sd.signal) s.Fail("name", "signal \"" + sname + "\" is mapped twice in message " + name);
      sd.factor = s.GetDouble("factor", 1.0, -1e12, 1e12);
      if (sd.factor == 0 || !std::isfinite(sd.factor)) s.Fail("factor", "expected a non-zero factor, got 0");
      sd.offset = s.GetDouble("offset", 0.0, -1e12, 1e12);
      s.RejectUnknownKeys();
      md.signals.push_back(sd);
    }
    m.RejectUnknownKeys();
    d.messages.push_back(std::move(md));
  }
  t.RejectUnknownKeys();
  return d;
}

}  // namespace

MappingDef ParseMapping(const std::string& text, const std::string& source) {
  return FromTable(config::Table::ParseText(text, source), source);
}

MappingDef LoadMapping(const std::string& path) { return FromTable(config::Table::ParseFile(path), path); }

CanMapping::CanMapping(MappingDef def, double timeout_s)
    : def_(std::move(def)), timeout_ns_(static_cast<int64_t>(std::llround(timeout_s * 1e9))),
      last_slot_(def_.messages.size(), INT64_MIN), last_(def_.messages.size()) {
  for (const auto& m : def_.messages) {
    if (m.direction == Direction::kTx) has_tx_ = true;
    for (const auto& s : m.signals)
      if (m.direction == Direction::kRx) (s.param >= 0 ? has_param_rx_ : has_rx_) = true;
  }
  param_reported_.assign(def_.params.size(), std::nan(""));
}

bool CanMapping::AnyDue(int64_t sim_ns) const {
  for (size_t i = 0; i < def_.messages.size(); ++i) {
    const MessageMapDef& m = def_.messages[i];
    if (m.direction != Direction::kTx) continue;
    if (m.on_change || FloorDiv(sim_ns, m.period_ns) > last_slot_[i]) return true;
  }
  return false;
}

std::vector<StampedFrame> CanMapping::Due(int64_t sim_ns, const VariableValues& values, const std::vector<double>& params) {
  std::vector<StampedFrame> out;
  std::map<std::string, double> physical;
  for (size_t i = 0; i < def_.messages.size(); ++i) {
    const MessageMapDef& m = def_.messages[i];
    if (m.direction != Direction::kTx) continue;
    // Periodic: once in each period slot [k P, (k + 1) P), at the first call in it.
    int64_t slot = 0;
    if (!m.on_change) {
      slot = FloorDiv(sim_ns, m.period_ns);
      if (slot <= last_slot_[i]) continue;
    }
    // The DBC's physical value of each mapped signal: (simulator value - offset) / factor.
    physical.clear();
    for (const auto& s : m.signals) {
      // A parameter without a value goes as raw 0 (left out of the map).
      double v = 0;
      if (s.param < 0) v = values[static_cast<size_t>(s.variable)];
      else if (static_cast<size_t>(s.param) < params.size() && !std::isnan(params[static_cast<size_t>(s.param)]))
        v = params[static_cast<size_t>(s.param)];
      else continue;
      physical[s.signal->name] = (v - s.offset) / s.factor;
    }
    Frame f = EncodeMessage(*m.message, physical);
    if (m.on_change) {
      if (last_[i] && *last_[i] == f) continue;
      last_[i] = f;
    } else {
      last_slot_[i] = slot;
    }
    out.push_back(StampedFrame{sim_ns, f});
    ++counters_.tx_frames;
  }
  return out;
}

bool CanMapping::Take(const Frame& frame, int64_t sim_ns) {
  const MessageMapDef* m = nullptr;
  for (const auto& md : def_.messages)
    if (md.direction == Direction::kRx && md.message->id == frame.id && md.message->extended == frame.extended) m = &md;
  if (!m) {
    ++counters_.rx_ignored;
    return false;
  }
  ++counters_.rx_frames;
  if (frame.len < m->message->length) ++counters_.rx_refused;  // the signals it still holds are taken
  bool commands = false;
  for (const auto& s : m->signals) commands |= s.param < 0;
  // Coming back from silence (or the first frame): a pedal no rx message carries is released.
  if (commands && !command_.active) {
    bool throttle = false, brake = false;
    for (const auto& md : def_.messages)
      if (md.direction == Direction::kRx)
        for (const auto& s : md.signals) throttle |= s.variable == Variable::kThrottle, brake |= s.variable == Variable::kBrake;
    if (!throttle) command_.throttle = 0;
    if (!brake) command_.brake = 0;
  }
  bool taken = false;
  for (const auto& s : m->signals) {
    if (!SignalPresent(*m->message, *s.signal, frame)) continue;
    double v = DecodeSignal(*s.signal, frame) * s.factor + s.offset;
    if (!std::isfinite(v)) {
      ++counters_.rx_refused;
      if (s.param >= 0) ++counters_.param_refused;
      continue;
    }
    if (s.param >= 0) {
      // A live parameter: reported when it differs from the value last reported (the newest per step).
      const auto p = static_cast<size_t>(s.param);
      if (v == param_reported_[p]) continue;
      param_reported_[p] = v;
      auto it = std::find_if(param_updates_.begin(), param_updates_.end(), [p](const ParamUpdate& u) { return u.param == p; });
      if (it != param_updates_.end()) param_updates_.erase(it);
      param_updates_.push_back(ParamUpdate{p, v, sim_ns});
      continue;
    }
    double lo = 0, hi = 1;
    RxRange(s.variable, lo, hi);
    if (v < lo || v > hi) {
      ++counters_.rx_clamped;
      v = std::clamp(v, lo, hi);
    }
    switch (s.variable) {
      case Variable::kSteer: command_.steer = v; break;
      case Variable::kThrottle: command_.throttle = v; break;
      case Variable::kBrake: command_.brake = v; break;
      case Variable::kIndicator: command_.indicator = std::round(v); break;
      default: break;
    }
    taken = true;
  }
  if (taken) {
    command_.received_sim_ns = sim_ns;
    command_.active = true;
  }
  return true;
}

std::vector<ParamUpdate> CanMapping::TakeParamUpdates() {
  std::vector<ParamUpdate> out;
  out.swap(param_updates_);
  return out;
}

const CanCommand& CanMapping::Command(int64_t sim_ns) {
  // Silent for longer than the timeout: throttle off, full brake, steer held, until the next command.
  if (command_.active && sim_ns - command_.received_sim_ns > timeout_ns_) {
    command_.active = false;
    command_.throttle = 0;
    command_.brake = 1;
    ++counters_.timeouts;
  }
  return command_;
}

}  // namespace platoon::can
