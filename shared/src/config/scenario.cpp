#include "platoon/config/scenario.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace platoon::config {
namespace {

const std::vector<std::string> kQuantities = {"speed", "region", "gap", "time_headway", "ttc", "lane", "lane_offset",
                                              "distance", "relative_speed", "traveled", "standstill", "acceleration",
                                              "sign_ahead_distance", "sign_ahead_value", "sign_passed_distance",
                                              "sign_passed_value"};
const std::vector<std::string> kActions = {"set_param", "brake", "stop", "change_lane", "speed_profile", "resume",
                                           "spawn", "remove", "message", "mark", "speed", "lane_offset",
                                           "scenario_param", "synchronize", "follow_path"};
const std::vector<std::string> kShapes = {"step", "linear", "sinusoidal", "cubic"};
const std::vector<std::string> kEdges = {"none", "rising", "falling", "rising_or_falling"};

// The seat keys: every name once, in the order the docs list them.
std::vector<std::string> MakeSeatKeyNames() {
  std::vector<std::string> names = {"space", "return"};
  for (char c = 'a'; c <= 'z'; ++c) names.emplace_back(1, c);
  for (char c = '0'; c <= '9'; ++c) names.emplace_back(1, c);
  for (int f = 1; f <= 12; ++f) names.push_back("f" + std::to_string(f));
  return names;
}

// Checks an entity reference's form: "<node>", "<node>:<index>", "id:<n>".
void CheckEntityRef(const Table& t, const std::string& key, const std::string& ref, bool allow_ahead) {
  if (ref.empty()) t.Fail(key, "expected \"<node>\", \"<node>:<index>\" or \"id:<n>\", got \"\"");
  if (allow_ahead && (ref == "ahead" || ref == "self")) return;
  // "ahead:<ref>": the vehicle ahead of that vehicle when the event fires, whatever its condition.
  if (allow_ahead && ref.rfind("ahead:", 0) == 0 && EntityRefId(ref.substr(6)) != 0) return;
  if (EntityRefId(ref) == 0)
    t.Fail(key, std::string("expected ") + (allow_ahead ? "\"ahead\", \"self\", \"ahead:<node>\", " : "") +
                    "\"<node>\", \"<node>:<index 0..65535>\" or \"id:<n>\", got \"" + ref + "\"");
}

// A parameter value as TOML literal text: strings quoted, numbers and booleans as written.
std::string ReadValueText(const Table& t) {
  if (!t.Has("value")) t.Fail("value", "is required (a number, true/false or a string)");
  try {
    return "\"" + t.GetString("value", "") + "\"";
  } catch (const ConfigError&) {
  }
  try {
    return fmt::format("{}", t.GetDouble("value", 0));
  } catch (const ConfigError&) {
  }
  try {
    return t.GetBool("value", false) ? "true" : "false";
  } catch (const ConfigError&) {
  }
  t.Fail("value", "expected a number, true/false or a string");
}

ConditionDef ReadCondition(const Table& t) {
  ConditionDef c;
  const int kinds = (t.Has("sim_time") ? 1 : 0) + (t.Has("marker") ? 1 : 0) + (t.Has("key") ? 1 : 0) +
                    (t.Has("entity") ? 1 : 0) + (t.Has("event") ? 1 : 0) + (t.Has("parameter") ? 1 : 0);
  if (kinds != 1)
    t.Fail("", "expected exactly one of sim_time = <s>, marker = \"<text>\", key = \"<key>\", entity = \"<node>\" "
               "(with quantity and below/above), event = \"<name>\" (with state) or parameter = \"<name>\", got " +
                   std::to_string(kinds));
  // The edge of the value the event sees, and its negation (both kinds of scenario; OpenSCENARIO's conditionEdge).
  const std::string edge = t.GetString("edge", "none", kEdges);
  for (size_t i = 0; i < kEdges.size(); ++i)
    if (kEdges[i] == edge) c.edge = static_cast<ConditionDef::Edge>(i);
  c.negate = t.GetBool("not", false);
  if (t.Has("event")) {
    c.kind = ConditionDef::Kind::kEventState;
    c.text = t.GetString("event", "");
    if (c.text.empty()) t.Fail("event", "expected an event name, got \"\"");
    c.state = t.GetString("state", "started", {"started", "running", "done"});
  } else if (t.Has("parameter")) {
    c.kind = ConditionDef::Kind::kParameter;
    c.text = t.GetString("parameter", "");
    if (c.text.empty()) t.Fail("parameter", "expected a scenario parameter name, got \"\"");
    if (t.Has("below")) c.below = t.GetDouble("below", 0);
    if (t.Has("above")) c.above = t.GetDouble("above", 0);
    if (t.Has("equals_text")) c.equals_text = t.GetString("equals_text", "");
    else if (t.Has("equals")) c.equals = t.GetDouble("equals", 0);
    if (!c.below && !c.above && !c.equals && !t.Has("equals_text"))
      t.Fail("parameter", "a parameter condition needs below, above, equals = <number> or equals_text = \"<text>\"");
  } else if (t.Has("sim_time")) {
    c.kind = ConditionDef::Kind::kSimTime;
    c.sim_time_s = t.GetDouble("sim_time", 0, 0, 1e7);
  } else if (t.Has("marker")) {
    c.kind = ConditionDef::Kind::kMarker;
    c.text = t.GetString("marker", "");
    if (c.text.empty()) t.Fail("marker", "expected the marker text, got \"\"");
  } else if (t.Has("key")) {
    c.kind = ConditionDef::Kind::kKey;
    c.text = t.GetString("key", "");
    if (!IsSeatKeyName(c.text))
      t.Fail("key", "expected a key a seat sends: \"space\", \"return\", \"a\"..\"z\", \"0\"..\"9\" or \"f1\"..\"f12\" "
                    "(lower case), got \"" + c.text + "\"");
    c.seat = t.GetString("seat", "");
  } else {
    c.kind = ConditionDef::Kind::kQuantity;
    c.entity = t.GetString("entity", "");
    CheckEntityRef(t, "entity", c.entity, false);
    const std::string q = t.RequireString("quantity", kQuantities);
    for (size_t i = 0; i < kQuantities.size(); ++i)
      if (kQuantities[i] == q) c.quantity = static_cast<Quantity>(i);
    c.other = t.GetString("other", "");
    if (!c.other.empty()) {
      CheckEntityRef(t, "other", c.other, false);
      if (c.quantity != Quantity::kGap && c.quantity != Quantity::kTimeHeadway && c.quantity != Quantity::kTtc &&
          c.quantity != Quantity::kDistance && c.quantity != Quantity::kRelativeSpeed)
        t.Fail("other", "is for the pair quantities gap, time_headway, ttc, distance and relative_speed, got quantity \"" +
                            q + "\"");
    }
    if ((c.quantity == Quantity::kDistance || c.quantity == Quantity::kRelativeSpeed) && c.other.empty())
      t.Fail("other", "a " + q + " condition needs other = \"<node>\" (the vehicle it is measured to)");
    if (c.quantity >= Quantity::kSignAheadDistance) {
      std::vector<std::string> types;
      for (int k = 0; k < road::kSignTypeCount; ++k) types.emplace_back(road::SignTypeName(static_cast<road::SignType>(k)));
      c.sign = t.GetString("sign", "", types);
    }
    if (c.quantity == Quantity::kDistance) {
      c.measure = t.GetString("measure", c.measure, {"cartesian", "longitudinal", "lateral"});
      c.freespace = t.GetBool("freespace", false);
    }
    if (c.quantity == Quantity::kRegion) {
      const bool box = t.Has("box"), circle = t.Has("center") || t.Has("radius_m");
      if (box == circle)
        t.Fail("quantity", "a region needs box = [x_min, y_min, x_max, y_max] or center = [x, y] with radius_m (in m)");
      if (box) {
        const auto b = t.GetDoubleArray("box", {}, 4, -1e7, 1e7);
        if (!(b[0] < b[2] && b[1] < b[3]))
          t.Fail("box", fmt::format("expected x_min < x_max and y_min < y_max, got [{}, {}, {}, {}]", b[0], b[1], b[2], b[3]));
        for (int i = 0; i < 4; ++i) c.box_m[i] = b[static_cast<size_t>(i)];
      } else {
        c.circle = true;
        if (!t.Has("center") || !t.Has("radius_m")) t.Fail("quantity", "a circle region needs both center = [x, y] and radius_m");
        const auto ctr = t.GetDoubleArray("center", {}, 2, -1e7, 1e7);
        c.center_m[0] = ctr[0];
        c.center_m[1] = ctr[1];
        c.radius_m = t.GetDouble("radius_m", 0, 0, 1e7);
        if (c.radius_m <= 0) t.Fail("radius_m", "expected a radius > 0, in m");
      }
    } else if (c.quantity == Quantity::kLane) {
      if (!t.Has("equals")) t.Fail("quantity", "a lane condition needs equals = <lane> (-1 the first right of the reference line)");
      c.lane = static_cast<int>(t.GetInt("equals", 0, -8, 8));
    } else {
      if (t.Has("below")) c.below = t.GetDouble("below", 0);
      if (t.Has("above")) c.above = t.GetDouble("above", 0);
      if (t.Has("equals")) c.equals = t.GetDouble("equals", 0);
      if (!c.below && !c.above && !c.equals)
        t.Fail("quantity", "a " + q + " condition needs below = <value> and/or above = <value> (or equals = <value>)");
      if (c.below && c.above && *c.above >= *c.below)
        t.Fail("above", fmt::format("expected above < below (a band), got above = {} and below = {}", *c.above, *c.below));
    }
  }
  t.RejectUnknownKeys();
  return c;
}

ActionDef ReadAction(const Table& t) {
  ActionDef a;
  a.where = t.Where() + ": " + t.Path();
  a.name = t.RequireString("action", kActions);
  using K = ActionDef::Kind;
  const K kinds[] = {K::kSetParam, K::kBrake, K::kStop,   K::kChangeLane, K::kSpeedProfile, K::kResume,
                     K::kSpawn,    K::kRemove, K::kMessage, K::kMark,    K::kSpeed,  K::kLaneOffset,
                     K::kScenarioParam, K::kSynchronize, K::kFollowPath};
  for (size_t i = 0; i < kActions.size(); ++i)
    if (kActions[i] == a.name) a.kind = kinds[i];
  const bool on_vehicle = a.kind == K::kBrake || a.kind == K::kStop || a.kind == K::kChangeLane ||
                          a.kind == K::kSpeedProfile || a.kind == K::kResume || a.kind == K::kRemove ||
                          a.kind == K::kSpeed || a.kind == K::kLaneOffset || a.kind == K::kSynchronize ||
                          a.kind == K::kFollowPath;
  if (on_vehicle) {
    a.target = t.RequireString("target");
    CheckEntityRef(t, "target", a.target, true);
  }
  switch (a.kind) {
    case K::kSetParam:
      a.path = t.RequireString("path");
      if (a.path.empty() || a.path.find_first_of(" \t") != std::string::npos)
        t.Fail("path", "expected a parameter path such as \"server.broadcast_hz\", got \"" + a.path + "\"");
      a.value = ReadValueText(t);
      break;
    case K::kBrake:
      a.decel_mps2 = t.GetDouble("decel_mps2", a.decel_mps2, 0.1, 15);
      a.duration_s = t.GetDouble("duration_s", 0, 0, 3600);
      break;
    case K::kStop:
      a.decel_mps2 = t.GetDouble("decel_mps2", 4.0, 0.1, 15);
      break;
    case K::kChangeLane: {
      const bool has_lane = t.Has("lane"), has_dir = t.Has("direction"), has_rel = t.Has("relative_to");
      if ((has_lane ? 1 : 0) + (has_dir ? 1 : 0) + (has_rel ? 1 : 0) != 1)
        t.Fail("action", "change_lane needs lane = <lane>, direction = \"left\"/\"right\" or relative_to = \"<node>\" "
                         "with lanes = <n> (left positive)");
      if (has_rel) {
        // A lane relative to a vehicle's lane at the firing: its lane plus `lanes` (left positive).
        a.relative_to = t.GetString("relative_to", "");
        if (a.relative_to != "self") CheckEntityRef(t, "relative_to", a.relative_to, false);
        a.direction = static_cast<int>(t.GetInt("lanes", 0, -8, 8));
      } else if (has_lane) {
        a.lane = static_cast<int>(t.GetInt("lane", 0, -8, 8));
        if (a.lane == 0) t.Fail("lane", "expected a lane -8..-1 or 1..8, got 0");
      } else {
        a.direction = t.GetString("direction", "", {"left", "right"}) == "left" ? 1 : -1;
      }
      // The change's shape and duration (default: the traffic's own smooth 3 s change).
      a.shape = t.GetString("shape", a.shape, kShapes);
      a.duration_s = t.GetDouble("duration_s", 0, 0, 600);
      if (t.Has("shape") && a.shape != "step" && a.duration_s <= 0)
        t.Fail("duration_s", "a " + a.shape + " lane change needs duration_s > 0, in s");
      a.offset_m = t.GetDouble("offset_m", 0, -10, 10);
      break;
    }
    case K::kSpeed: {
      // An absolute target, or one relative to a vehicle's speed at the firing.
      const bool abs = t.Has("speed_mps"), rel = t.Has("delta_mps") || t.Has("factor");
      if (abs == rel) t.Fail("action", "speed needs speed_mps = <m/s> or delta_mps = <m/s> / factor = <x> (with relative_to)");
      if (abs) {
        a.speed_mps = t.GetDouble("speed_mps", 0, 0, 150);
      } else {
        a.relative_to = t.GetString("relative_to", "self");
        if (a.relative_to != "self") CheckEntityRef(t, "relative_to", a.relative_to, false);
        if (t.Has("delta_mps") && t.Has("factor")) t.Fail("factor", "expected delta_mps or factor, not both");
        a.factor = t.Has("factor");
        a.delta_mps = a.factor ? t.GetDouble("factor", 1, 0, 100) : t.GetDouble("delta_mps", 0, -150, 150);
      }
      a.shape = t.GetString("shape", "linear", kShapes);
      a.dimension = t.GetString("dimension", "time", {"time", "rate", "distance"});
      a.amount = t.GetDouble("value", 0, 0, 1e6);
      if (a.shape != "step" && a.amount <= 0)
        t.Fail("value", "a " + a.shape + " speed change needs value > 0 (s, m/s^2 or m as dimension says)");
      if (a.dimension == "rate" && a.shape != "linear" && a.shape != "step")
        t.Fail("dimension", "a rate is for linear speed changes, got shape \"" + a.shape + "\"");
      break;
    }
    case K::kLaneOffset:
      a.offset_m = t.GetDouble("offset_m", 0, -10, 10);
      a.shape = t.GetString("shape", "cubic", kShapes);
      a.duration_s = t.GetDouble("duration_s", 0, 0, 600);
      if (a.shape != "step" && a.duration_s <= 0) t.Fail("duration_s", "a " + a.shape + " lane offset needs duration_s > 0, in s");
      break;
    case K::kScenarioParam:
      a.path = t.RequireString("name");
      if (a.path.empty()) t.Fail("name", "expected a scenario parameter name, got \"\"");
      a.op = t.GetString("op", "set", {"set", "add", "multiply"});
      if (a.op == "set") {
        a.text = t.Has("value") ? ReadValueText(t) : std::string();
        if (a.text.size() >= 2 && a.text.front() == '"') a.text = a.text.substr(1, a.text.size() - 2);
        if (!t.Has("value")) t.Fail("value", "is required (a number, true/false or a string)");
      } else {
        a.amount = t.GetDouble("value", 0);
      }
      break;
    case K::kSpeedProfile: {
      if (!t.Has("points")) t.Fail("action", "speed_profile needs points = [t0, v0, t1, v1, ...] (s since firing, m/s)");
      const auto p = t.GetDoubleArray("points", {}, 0, 0, 1e6);
      if (p.size() < 2 || p.size() % 2 != 0 || p.size() / 2 > kMaxProfilePoints)
        t.Fail("points", "expected pairs t_s, speed_mps (1 to " + std::to_string(kMaxProfilePoints) + " of them), got " +
                             std::to_string(p.size()) + " numbers");
      for (size_t i = 0; i < p.size(); i += 2) {
        if (i > 0 && !(p[i] > p[i - 2]))
          t.Fail("points", fmt::format("times must increase, got {} after {}", p[i], p[i - 2]));
        if (p[i + 1] > 100) t.Fail("points", fmt::format("expected speeds in [0, 100] m/s, got {}", p[i + 1]));
        a.profile.emplace_back(p[i], p[i + 1]);
      }
      break;
    }
    case K::kSynchronize:
      a.master = t.RequireString("master");
      CheckEntityRef(t, "master", a.master, false);
      if (!t.Has("point") || !t.Has("master_point"))
        t.Fail("action", "synchronize needs point = [x, y] (the target's) and master_point = [x, y] (the master's), in m");
      a.point = t.GetDoubleArray("point", {}, 2, -1e7, 1e7);
      a.master_point = t.GetDoubleArray("master_point", {}, 2, -1e7, 1e7);
      // The arrival speed: absolute, or relative to the master's speed at the firing.
      if ((t.Has("final_speed_mps") ? 1 : 0) + (t.Has("final_delta_mps") ? 1 : 0) + (t.Has("final_factor") ? 1 : 0) > 1)
        t.Fail("action", "synchronize takes one of final_speed_mps, final_delta_mps and final_factor");
      a.final_speed = t.Has("final_speed_mps") || t.Has("final_delta_mps") || t.Has("final_factor");
      a.speed_mps = t.GetDouble("final_speed_mps", 0, 0, 150);
      if (t.Has("final_delta_mps") || t.Has("final_factor")) {
        a.relative_to = a.master;
        a.factor = t.Has("final_factor");
        a.delta_mps = a.factor ? t.GetDouble("final_factor", 1, 0, 100) : t.GetDouble("final_delta_mps", 0, -150, 150);
      }
      break;
    case K::kFollowPath: {
      if (!t.Has("path")) t.Fail("action", "follow_path needs path = [x0, y0, x1, y1, ...] (world points, m)");
      a.path_xy = t.GetDoubleArray("path", {}, 0, -1e7, 1e7);
      if (a.path_xy.size() < 4 || a.path_xy.size() % 2 != 0 || a.path_xy.size() / 2 > kMaxProfilePoints)
        t.Fail("path", "expected pairs x, y (2 to " + std::to_string(kMaxProfilePoints) + " points), got " +
                           std::to_string(a.path_xy.size()) + " numbers");
      a.times_s = t.GetDoubleArray("times_s", {}, 0, 0, 1e6);
      if (!a.times_s.empty() && a.times_s.size() != a.path_xy.size() / 2)
        t.Fail("times_s", fmt::format("expected one time per point ({}), got {}", a.path_xy.size() / 2, a.times_s.size()));
      for (size_t i = 1; i < a.times_s.size(); ++i)
        if (!(a.times_s[i] > a.times_s[i - 1]))
          t.Fail("times_s", fmt::format("times must increase, got {} after {}", a.times_s[i], a.times_s[i - 1]));
      a.absolute_times = t.GetBool("absolute_times", false);
      if (a.absolute_times && a.times_s.empty()) t.Fail("absolute_times", "is for times_s: give the points' times too");
      break;
    }
    case K::kSpawn:
      a.node = t.RequireString("node");
      a.s_m = t.GetDouble("s_m", 0, 0, 1e7);
      a.lane = static_cast<int>(t.GetInt("lane", -1, -8, 8));
      if (a.lane == 0) t.Fail("lane", "expected a lane -8..-1 or 1..8, got 0");
      a.speed_mps = t.GetDouble("speed_mps", 0, 0, 100);
      break;
    case K::kMessage:
      a.text = t.RequireString("text");
      a.node = t.GetString("seat", "");
      a.duration_s = t.GetDouble("duration_s", 4.0, 0.1, 3600);
      break;
    case K::kMark:
      a.text = t.RequireString("text");
      break;
    case K::kResume:
    case K::kRemove:
      break;
  }
  if ((a.kind == K::kMessage || a.kind == K::kMark) && (a.text.empty() || a.text.size() > 1024))
    t.Fail("text", "expected 1 to 1024 bytes of text, got " + std::to_string(a.text.size()));
  t.RejectUnknownKeys();
  return a;
}

}  // namespace

const std::vector<std::string>& SeatKeyNames() {
  static const std::vector<std::string> names = MakeSeatKeyNames();
  return names;
}

bool IsSeatKeyName(std::string_view name) {
  const auto& names = SeatKeyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string SeatKeyMarker(std::string_view name) { return "key:" + std::string(name); }

const char* EdgeName(ConditionDef::Edge e) {
  const auto i = static_cast<size_t>(e);
  return i < kEdges.size() ? kEdges[i].c_str() : "?";
}

double TransitionShape(const std::string& shape, double u) {
  u = std::clamp(u, 0.0, 1.0);
  if (shape == "step") return 1.0;
  if (shape == "linear") return u;
  if (shape == "sinusoidal") return 0.5 * (1.0 - std::cos(M_PI * u));
  return u * u * (3.0 - 2.0 * u);  // cubic: zero slope at both ends
}

double ActionDuration(const ActionDef& a, double from_speed_mps, double target_speed_mps) {
  switch (a.kind) {
    case ActionDef::Kind::kSpeed: {
      if (a.shape == "step") return 0;
      const double dv = std::abs(target_speed_mps - from_speed_mps);
      if (a.dimension == "rate") return dv / a.amount;
      if (a.dimension == "distance") {
        // Over a distance d the mean speed of the transition is (v0 + v1) / 2 for every symmetric shape.
        const double mean = 0.5 * (from_speed_mps + target_speed_mps);
        return mean > 1e-9 ? a.amount / mean : 0;
      }
      return a.amount;
    }
    case ActionDef::Kind::kChangeLane:
    case ActionDef::Kind::kLaneOffset: return a.shape == "step" ? 0 : a.duration_s;
    default: return 0;
  }
}

std::vector<std::pair<double, double>> SpeedProfilePoints(const ActionDef& a, double from_speed_mps,
                                                          double target_speed_mps) {
  std::vector<std::pair<double, double>> p;
  const double T = ActionDuration(a, from_speed_mps, target_speed_mps);
  if (T <= 0 || a.shape == "step" || a.shape == "linear") {
    p.emplace_back(0.0, T > 0 ? from_speed_mps : target_speed_mps);
    if (T > 0) p.emplace_back(T, target_speed_mps);
  } else {
    // Sampled at 20 Hz (at least 8 pieces): linear between samples of the smooth shape.
    const int n = std::clamp(static_cast<int>(std::ceil(T * 20.0)), 8, static_cast<int>(kMaxProfilePoints) - 2);
    for (int i = 0; i <= n; ++i) {
      const double u = static_cast<double>(i) / n;
      p.emplace_back(u * T, from_speed_mps + (target_speed_mps - from_speed_mps) * TransitionShape(a.shape, u));
    }
  }
  // Held afterwards: a point far in the future at the target.
  p.emplace_back(p.back().first + 1e6, target_speed_mps);
  return p;
}

std::vector<std::pair<double, double>> TimedPathProfile(const std::vector<double>& t_s, const std::vector<double>& s_m,
                                                        double from_speed_mps, bool* exact) {
  std::vector<std::pair<double, double>> p;
  if (exact) *exact = true;
  double t0 = 0, s0 = 0, v_prev = from_speed_mps;
  for (size_t k = 0; k < t_s.size() && k < s_m.size(); ++k) {
    const double dt = t_s[k] - t0, d = s_m[k] - s0;
    if (!(dt > 0)) continue;
    // Ramp from v_prev over 2r, then hold v: r (v_prev + v) + v (dt - 2r) = d.
    const double r = std::min(0.25, dt / 4);
    double v = (d - r * v_prev) / (dt - r);
    if (v < 0) {
      v = 0;
      if (exact) *exact = false;
    }
    p.emplace_back(t0, v_prev);
    p.emplace_back(t0 + 2 * r, v);
    v_prev = v;
    t0 = t_s[k];
    s0 = s_m[k];
  }
  p.emplace_back(t0, v_prev);
  p.emplace_back(t0 + 1e6, v_prev);  // held afterwards
  return p;
}

std::vector<std::pair<double, double>> SynchronizeProfile(double distance_m, double time_s, double from_speed_mps,
                                                          std::optional<double> final_speed_mps) {
  std::vector<std::pair<double, double>> p;
  if (!(time_s > 0) || !(distance_m >= 0)) return p;
  p.emplace_back(0.0, from_speed_mps);
  if (final_speed_mps) {
    // Two ramps of T/2: T/4 (v0 + 2 vm + vf) = d.
    const double vm = 2 * distance_m / time_s - 0.5 * (from_speed_mps + *final_speed_mps);
    if (vm < 0) return {};
    p.emplace_back(0.5 * time_s, vm);
    p.emplace_back(time_s, *final_speed_mps);
  } else {
    // One ramp: T (v0 + v1) / 2 = d.
    const double v1 = 2 * distance_m / time_s - from_speed_mps;
    if (v1 < 0) return {};
    p.emplace_back(time_s, v1);
  }
  p.emplace_back(time_s + 1e6, p.back().second);
  return p;
}

const char* QuantityName(Quantity q) {
  const auto i = static_cast<size_t>(q);
  return i < kQuantities.size() ? kQuantities[i].c_str() : "?";
}

uint64_t EntityRefId(const std::string& ref) {
  if (ref.rfind("id:", 0) == 0) {
    const std::string n = ref.substr(3);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 20) return 0;
    return std::strtoull(n.c_str(), nullptr, 10);
  }
  if (ref.empty() || ref.find_first_of(" \t/\\") != std::string::npos) return 0;
  try {
    return AttachedVehicleId(ref);
  } catch (const ConfigError&) {
    return 0;
  }
}

std::vector<EventDef> ReadEvents(const Table& root) {
  std::vector<EventDef> out;
  std::set<std::string> names;
  const std::vector<Table> tables = root.TableArray("event");
  if (tables.size() > kMaxEvents)
    tables[kMaxEvents].Fail("", "at most " + std::to_string(kMaxEvents) + " [[event]] tables in a session");
  for (const Table& t : tables) {
    EventDef e;
    e.where = t.Where() + ": " + t.Path();
    e.name = t.RequireString("name");
    if (e.name.empty() || e.name.size() > 128 || e.name.find_first_of(" \t\"\\") != std::string::npos)
      t.Fail("name", "expected a name of 1..128 characters without spaces or quotes, got \"" + e.name + "\"");
    if (!names.insert(e.name).second) t.Fail("name", "duplicate event name \"" + e.name + "\"");
    const auto when = t.Sub("when");
    if (when && t.Has("any")) t.Fail("any", "expected when = { ... } or any = [ { all = [ ... ] } ], not both");
    if (!when && !t.Has("any"))
      t.Fail("when", "is required: when = { sim_time = <s> }, { marker = \"<text>\" }, { key = \"<key>\" } or "
                     "{ entity = \"<node>\", quantity = \"time_headway\", below = 1.5 } (or any = [ { all = [ ... ] } ])");
    if (when) e.when = ReadCondition(*when);
    // OR of AND groups: any = [ { all = [ {...}, {...} ] }, { all = [ ... ] } ].
    for (const Table& g : t.TableArray("any")) {
      std::vector<ConditionDef> group;
      for (const Table& c : g.TableArray("all")) group.push_back(ReadCondition(c));
      if (group.empty()) g.Fail("all", "expected at least one condition: all = [ { sim_time = 1.0 } ]");
      g.RejectUnknownKeys();
      e.any.push_back(std::move(group));
    }
    if (t.Has("any") && e.any.empty()) t.Fail("any", "expected at least one group: any = [ { all = [ ... ] } ]");
    // The first quantity condition is the one "ahead" and "self" are relative to.
    if (!when)
      for (const auto& g : e.any)
        for (const auto& c : g)
          if (c.kind == ConditionDef::Kind::kQuantity && e.when.kind != ConditionDef::Kind::kQuantity) e.when = c;
    e.max_count = static_cast<int>(t.GetInt("max_count", 0, 0, 1000000));
    if (t.Has("max_count") && !t.Has("repeat")) e.repeat = e.max_count != 1;
    e.group = t.GetString("group", "");
    e.priority = t.GetString("priority", "parallel", {"parallel", "overwrite", "skip"});
    e.delay_s = t.GetDouble("delay_s", 0, 0, 1e6);
    e.repeat = t.GetBool("repeat", e.repeat);
    e.min_interval_s = t.GetDouble("min_interval_s", 0, 0, 1e6);
    if (t.Has("min_interval_s") && !e.repeat) t.Fail("min_interval_s", "is for repeat = true events");
    const std::vector<Table> actions = t.TableArray("do");
    if (actions.empty())
      t.Fail("do", "expected at least one action: do = [ { action = \"brake\", target = \"ahead\", decel_mps2 = 6.0 } ]");
    if (actions.size() > kMaxActionsPerEvent)
      t.Fail("do", "at most " + std::to_string(kMaxActionsPerEvent) + " actions per event, got " + std::to_string(actions.size()));
    for (const Table& a : actions) {
      e.actions.push_back(ReadAction(a));
      // "ahead" and "self" need a condition entity to be relative to.
      const ActionDef& back = e.actions.back();
      if ((back.target == "ahead" || back.target == "self") && e.when.kind != ConditionDef::Kind::kQuantity)
        a.Fail("target", "\"" + back.target + "\" is relative to the condition's entity: it needs when = { entity = ... } "
                         "(or name the vehicle it is relative to: target = \"ahead:<node>\")");
    }
    t.RejectUnknownKeys();
    out.push_back(std::move(e));
  }
  return out;
}

void ValidateEvents(const SessionDef& session) {
  // What names nodes must name a node of this session with the right role.
  auto node_of = [&](std::string ref) -> std::string {
    if (ref.rfind("ahead:", 0) == 0) ref = ref.substr(6);  // the vehicle it is relative to
    if (ref.empty() || ref == "ahead" || ref == "self" || ref.rfind("id:", 0) == 0) return {};
    const auto colon = ref.rfind(':');
    return session.FindNode(ref) || colon == std::string::npos ? ref : ref.substr(0, colon);
  };
  auto vehicle_nodes = [&] {
    std::string known;
    for (const auto& n : session.nodes)
      if (n.role == protocol::Role::kTraffic || n.role == protocol::Role::kDriver)
        known += (known.empty() ? "" : ", ") + n.name;
    return known.empty() ? std::string("none") : known;
  };
  auto check_vehicle = [&](const std::string& where, const std::string& key, const std::string& ref) {
    const std::string name = node_of(ref);
    if (name.empty()) return;
    const NodeDef* n = session.FindNode(name);
    if (!n || (n->role != protocol::Role::kTraffic && n->role != protocol::Role::kDriver))
      throw ConfigError(where + "." + key + ": \"" + ref + "\" names no vehicle of this session (nodes with vehicles: " +
                        vehicle_nodes() + ")");
  };
  std::set<std::string> event_names;
  for (const auto& e : session.events) event_names.insert(e.name);
  for (const auto& e : session.events) {
    if (e.when.kind == ConditionDef::Kind::kQuantity) {
      check_vehicle(e.where + ".when", "entity", e.when.entity);
      check_vehicle(e.where + ".when", "other", e.when.other);
    }
    // Every condition of the OR-of-AND groups, and what event-state conditions name.
    for (size_t g = 0; g < e.any.size(); ++g)
      for (size_t k = 0; k < e.any[g].size(); ++k) {
        const ConditionDef& c = e.any[g][k];
        const std::string where = e.where + fmt::format(".any[{}].all[{}]", g, k);
        if (c.kind == ConditionDef::Kind::kQuantity) {
          check_vehicle(where, "entity", c.entity);
          check_vehicle(where, "other", c.other);
        }
        if (c.kind == ConditionDef::Kind::kEventState && !event_names.count(c.text))
          throw ConfigError(where + ".event: \"" + c.text + "\" names no event of this session");
      }
    if (e.when.kind == ConditionDef::Kind::kEventState && !event_names.count(e.when.text))
      throw ConfigError(e.where + ".when.event: \"" + e.when.text + "\" names no event of this session");
    if (e.when.kind == ConditionDef::Kind::kKey && !e.when.seat.empty()) {
      const NodeDef* n = session.FindNode(e.when.seat);
      if (!n || n->role != protocol::Role::kDriver)
        throw ConfigError(e.where + ".when.seat: \"" + e.when.seat + "\" is not a driver node of this session");
    }
    for (const auto& a : e.actions) {
      check_vehicle(a.where, "target", a.target);
      if (!a.relative_to.empty() && a.relative_to != "self") check_vehicle(a.where, "relative_to", a.relative_to);
      if (!a.master.empty()) check_vehicle(a.where, "master", a.master);
      // Vehicle commands are carried out by road traffic: a seat's car is driven by its driver.
      const std::string target_node = a.target.rfind("ahead:", 0) == 0 ? std::string() : node_of(a.target);
      // Network traffic carries out brake, stop and resume (and remove, as every node).
      const bool network_ok = a.kind == ActionDef::Kind::kBrake || a.kind == ActionDef::Kind::kStop ||
                              a.kind == ActionDef::Kind::kResume;
      // Pedestrians walk on at a new speed (speed, speed_profile), stop and resume.
      const bool walker_ok = a.kind == ActionDef::Kind::kSpeed || a.kind == ActionDef::Kind::kSpeedProfile ||
                             a.kind == ActionDef::Kind::kStop || a.kind == ActionDef::Kind::kResume;
      if (const NodeDef* n = target_node.empty() ? nullptr : session.FindNode(target_node);
          n && a.kind != ActionDef::Kind::kRemove &&
          (n->role != protocol::Role::kTraffic ||
           (n->traffic_model != "road" && !(n->traffic_model == "network" && network_ok) &&
            !(n->traffic_model == "pedestrians" && walker_ok))))
        throw ConfigError(a.where + ".target: \"" + a.target + "\": " + a.name +
                          " acts on road traffic vehicles (a traffic node with traffic_model = \"road\"; brake, stop "
                          "and resume also on \"network\"; speed, speed_profile, stop and resume on \"pedestrians\"), "
                          "and \"" + n->name + "\" is not one");
      if (a.kind == ActionDef::Kind::kSpawn) {
        const NodeDef* n = session.FindNode(a.node);
        if (!n || n->role != protocol::Role::kTraffic || n->traffic_model != "road")
          throw ConfigError(a.where + ".node: spawn needs a traffic node with traffic_model = \"road\", got \"" + a.node + "\"");
      }
      if (a.kind == ActionDef::Kind::kMessage && !a.node.empty()) {
        const NodeDef* n = session.FindNode(a.node);
        if (!n || n->role != protocol::Role::kDriver)
          throw ConfigError(a.where + ".seat: \"" + a.node + "\" is not a driver node of this session");
      }
    }
  }
}

}  // namespace platoon::config
