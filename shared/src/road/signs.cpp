#include "platoon/road/signs.hpp"

#include "platoon/entity_id.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <random>

namespace platoon::road {
namespace signs_detail {

constexpr const char* kTypeNames[kSignTypeCount] = {
    "speed_limit",        "end_of_limit",        "end_of_restrictions", "stop",           "give_way",
    "no_overtaking",      "end_of_no_overtaking", "warning_curve_left", "warning_curve_right",
    "warning_crossing",   "warning_general",     "direction",           "blank"};

// 53 random bits to [0, 1): identical on every standard library.
double Unit01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether sign `g` is for `direction` and lies ahead of s (d >= 0 when ahead) at along-road distance d.
double Ahead(const Sign& g, double s_m, int direction) { return direction > 0 ? g.s_m - s_m : s_m - g.s_m; }

}  // namespace signs_detail

const char* SignTypeName(SignType t) {
  const int i = static_cast<int>(t);
  return i >= 0 && i < kSignTypeCount ? signs_detail::kTypeNames[i] : "?";
}

std::optional<SignType> SignTypeFromName(std::string_view name) {
  for (int i = 0; i < kSignTypeCount; ++i)
    if (name == signs_detail::kTypeNames[i]) return static_cast<SignType>(i);
  return std::nullopt;
}

bool SignHasValue(SignType t) {
  return t == SignType::kSpeedLimit || t == SignType::kEndOfLimit || t == SignType::kDirection;
}

const char* SignCountryName(SignCountry c) { return c == SignCountry::kUk ? "uk" : "de"; }

std::optional<SignCountry> SignCountryFromName(std::string_view name) {
  const std::string n = signs_detail::Lower(name);
  if (n == "de") return SignCountry::kDe;
  if (n == "uk" || n == "gb") return SignCountry::kUk;
  return std::nullopt;
}

double SpeedUnitMps(SignCountry c) { return c == SignCountry::kUk ? 0.44704 : 1.0 / 3.6; }

const char* SignMountName(SignMount m) { return m == SignMount::kGantry ? "gantry" : "post"; }

double SignLimitMps(const Sign& s) {
  return s.type == SignType::kSpeedLimit ? s.value * SpeedUnitMps(s.country) : 0.0;
}

SignPose PlaceSign(const Road& road, const Sign& sign) {
  SignPose p;
  const double s = std::clamp(sign.s_m, 0.0, road.Length());
  const double heading = road.Heading(s);
  // The face looks against the traffic it is for.
  p.facing_rad = sign.direction > 0 ? heading + std::numbers::pi : heading;
  const double z0 = road.Height(s);
  if (sign.mount == SignMount::kGantry) {
    const double t_left = road.LeftEdgeOffset() + sign.lateral_m, t_right = road.RightEdgeOffset() - sign.lateral_m;
    p.posts_m = {road.PointAt(s, t_left), road.PointAt(s, t_right)};
    p.beam_width_m = t_left - t_right;
    p.post_height_m = sign.height_m + 0.5 * sign.size_m + 0.2;
    // Over the middle of the lanes of its direction (right lanes for +s), or of the road when it has none.
    const double lo = sign.direction > 0 ? road.RightEdgeOffset() : 0.0;
    const double hi = sign.direction > 0 ? 0.0 : road.LeftEdgeOffset();
    const double t = hi > lo ? 0.5 * (lo + hi) : 0.5 * (road.LeftEdgeOffset() + road.RightEdgeOffset());
    p.plate_m = road.PointAt(s, t);
  } else {
    const double t = sign.side > 0 ? road.LeftEdgeOffset() + sign.lateral_m : road.RightEdgeOffset() - sign.lateral_m;
    p.posts_m = {road.PointAt(s, t)};
    p.post_height_m = sign.height_m + 0.5 * sign.size_m;
    p.plate_m = p.posts_m[0];
  }
  for (auto& q : p.posts_m) q.z() = z0;
  p.plate_m.z() = z0 + sign.height_m;
  // The plate sits just in front of its post, on the side the traffic comes from.
  if (sign.mount == SignMount::kPost)
    p.plate_m += 0.06 * Vec3(std::cos(p.facing_rad), std::sin(p.facing_rad), 0);
  return p;
}

std::vector<PlacedSign> PlaceSigns(const Road& road, const std::vector<Sign>& signs) {
  std::vector<PlacedSign> out;
  out.reserve(signs.size());
  for (const auto& g : signs) out.push_back(PlacedSign{g, PlaceSign(road, g)});
  return out;
}

SignGeneratorDef DefaultSignGeneratorDef() { return SignGeneratorDef{}; }

std::string ValidateSignGeneratorDef(const SignGeneratorDef& d) {
  for (int i = 0; i < kSignTypeCount; ++i)
    if (!(d.per_km[i] >= 0 && d.per_km[i] <= 100))
      return std::string(SignTypeName(static_cast<SignType>(i))) + "_per_km must be in [0, 100]";
  if (d.speed_values.empty()) return "speed_values must not be empty";
  for (double v : d.speed_values)
    if (!(v > 0 && v <= 300)) return "speed_values must be in (0, 300]";
  if (!(d.gantry_share >= 0 && d.gantry_share <= 1)) return "gantry_share must be in [0, 1]";
  if (!(d.variable_share >= 0 && d.variable_share <= 1)) return "variable_share must be in [0, 1]";
  if (!(d.min_spacing_m >= 0 && d.min_spacing_m <= 10000)) return "min_spacing_m must be in [0, 10000]";
  if (!(d.lateral_m >= 0 && d.lateral_m <= 50)) return "lateral_m must be in [0, 50]";
  return {};
}

std::vector<Sign> GenerateSigns(const Road& road, const SignGeneratorDef& def, uint32_t first_id) {
  assert(ValidateSignGeneratorDef(def).empty());
  std::vector<Sign> out;
  if (!def.enabled) return out;
  const bool has_left = road.LanesLeft() > 0, has_right = road.LanesRight() > 0;
  for (int direction : {1, -1}) {
    if (direction > 0 && !has_right && has_left) continue;
    if (direction < 0 && (!def.both_directions || !has_left || !has_right)) continue;
    std::vector<Sign> placed;
    // One stream per (type, direction): changing one frequency leaves the other types' draws alone
    // (only which of them the spacing rejects).
    for (int ti = 0; ti < kSignTypeCount; ++ti) {
      const auto type = static_cast<SignType>(ti);
      const double per_km = def.per_km[ti];
      if (per_km <= 0 || type == SignType::kBlank) continue;
      std::mt19937_64 rng(SplitMix64(def.seed ^ SplitMix64(0x5161u + static_cast<uint64_t>(ti) * 2 + (direction > 0 ? 0 : 1))));
      const double spacing_m = 1000.0 / per_km;
      double s = 0;
      for (;;) {
        s += -std::log(1.0 - signs_detail::Unit01(rng)) * spacing_m;
        // Every draw happens whether or not the sign is kept, so the stream stays aligned.
        const double u_value = signs_detail::Unit01(rng), u_mount = signs_detail::Unit01(rng),
                     u_variable = signs_detail::Unit01(rng);
        if (s > road.Length()) break;
        Sign g;
        g.type = type;
        g.country = def.country;
        g.s_m = s;
        g.direction = direction;
        g.side = direction > 0 ? -1 : 1;
        g.lateral_m = def.lateral_m;
        if (type == SignType::kSpeedLimit || type == SignType::kEndOfLimit) {
          const size_t k = std::min(def.speed_values.size() - 1,
                                    static_cast<size_t>(u_value * static_cast<double>(def.speed_values.size())));
          g.value = def.speed_values[k];
        } else if (type == SignType::kDirection) {
          g.value = std::floor(1 + 30 * u_value);
          g.size_m = 1.6;
        }
        if (u_mount < def.gantry_share) {
          g.mount = SignMount::kGantry;
          g.height_m = 6.0;
          g.size_m = std::max(g.size_m, 1.2);
          g.variable = u_variable < def.variable_share;
        }
        const bool crowded = std::any_of(placed.begin(), placed.end(), [&](const Sign& o) {
          return std::abs(o.s_m - g.s_m) < def.min_spacing_m;
        });
        if (!crowded) placed.push_back(g);
      }
    }
    out.insert(out.end(), placed.begin(), placed.end());
  }
  std::stable_sort(out.begin(), out.end(), [](const Sign& a, const Sign& b) {
    return a.s_m < b.s_m || (a.s_m == b.s_m && a.direction > b.direction);
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = first_id + static_cast<uint32_t>(i);
  return out;
}

std::optional<Sign> SignFromOpenDrive(std::string_view type, std::string_view subtype, double value,
                                      std::string_view unit, std::string_view country, double s_m, double t_m,
                                      std::string_view orientation) {
  const auto c = SignCountryFromName(country).value_or(SignCountry::kDe);
  Sign g;
  g.country = c;
  g.s_m = s_m;
  g.side = t_m >= 0 ? 1 : -1;
  g.direction = orientation == "-" ? -1 : 1;
  // A value from the subtype when the signal gives none (the German catalogue writes 274-50).
  auto number = [&]() -> double {
    if (value > 0) return value;
    double v = 0;
    for (char ch : subtype) {
      if (ch < '0' || ch > '9') return 0;
      v = v * 10 + (ch - '0');
    }
    return v;
  };
  // A value given in the other unit than the country's is converted to the country's.
  auto speed = [&](double v) {
    const std::string u = signs_detail::Lower(unit);
    const double mps = u == "mph" ? v * 0.44704 : u == "km/h" ? v / 3.6 : u == "m/s" ? v : v * SpeedUnitMps(c);
    return std::round(mps / SpeedUnitMps(c));
  };
  if (c == SignCountry::kUk) {
    if (type == "670") g.type = SignType::kSpeedLimit, g.value = speed(number());
    else if (type == "671") g.type = SignType::kEndOfRestrictions;
    else if (type == "601") g.type = SignType::kStop;
    else if (type == "602") g.type = SignType::kGiveWay;
    else if (type == "632") g.type = SignType::kNoOvertaking;
    else return std::nullopt;
  } else {
    if (type == "274") g.type = SignType::kSpeedLimit, g.value = speed(number());
    else if (type == "278") g.type = SignType::kEndOfLimit, g.value = speed(number());
    else if (type == "282") g.type = SignType::kEndOfRestrictions;
    else if (type == "206") g.type = SignType::kStop;
    else if (type == "205") g.type = SignType::kGiveWay;
    else if (type == "276") g.type = SignType::kNoOvertaking;
    else if (type == "280") g.type = SignType::kEndOfNoOvertaking;
    else if (type == "103") g.type = subtype == "20" ? SignType::kWarningCurveRight : SignType::kWarningCurveLeft;
    else if (type == "102") g.type = SignType::kWarningCrossing;
    else if (type == "101") g.type = SignType::kWarningGeneral;
    else return std::nullopt;
  }
  if (g.type == SignType::kSpeedLimit && !(g.value > 0)) return std::nullopt;
  return g;
}

SignSighting NextSign(const std::vector<Sign>& signs, double s_m, int direction, double range_m) {
  SignSighting best;
  for (const Sign& g : signs) {
    if (g.direction != direction) continue;
    const double d = signs_detail::Ahead(g, s_m, direction);
    if (d >= 0 && d <= range_m && (!best.sign || d < best.distance_m)) best = {&g, d};
  }
  return best;
}

SignSighting LastSign(const std::vector<Sign>& signs, double s_m, int direction, double range_m) {
  SignSighting best;
  for (const Sign& g : signs) {
    if (g.direction != direction) continue;
    const double d = -signs_detail::Ahead(g, s_m, direction);
    if (d > 0 && d <= range_m && (!best.sign || d < best.distance_m)) best = {&g, d};
  }
  return best;
}

double SpeedLimitAt(const std::vector<Sign>& signs, double s_m, int direction, double road_limit_mps) {
  // The most recent passed sign that says something about speed decides; at equal distance the later
  // in the list wins (a limit and its end at one post cannot both hold).
  const Sign* decisive = nullptr;
  double nearest = 0;
  for (const Sign& g : signs) {
    if (g.direction != direction) continue;
    if (g.type != SignType::kSpeedLimit && g.type != SignType::kEndOfLimit && g.type != SignType::kEndOfRestrictions)
      continue;
    const double behind = -signs_detail::Ahead(g, s_m, direction);
    if (behind < 0) continue;
    if (!decisive || behind <= nearest) decisive = &g, nearest = behind;
  }
  if (decisive && decisive->type == SignType::kSpeedLimit) return SignLimitMps(*decisive);
  return road_limit_mps;
}

bool NoOvertakingAt(const std::vector<Sign>& signs, double s_m, int direction) {
  const Sign* decisive = nullptr;
  double nearest = 0;
  for (const Sign& g : signs) {
    if (g.direction != direction) continue;
    if (g.type != SignType::kNoOvertaking && g.type != SignType::kEndOfNoOvertaking &&
        g.type != SignType::kEndOfRestrictions)
      continue;
    const double behind = -signs_detail::Ahead(g, s_m, direction);
    if (behind < 0) continue;
    if (!decisive || behind <= nearest) decisive = &g, nearest = behind;
  }
  return decisive && decisive->type == SignType::kNoOvertaking;
}

bool SetVariableContent(std::vector<Sign>& signs, uint32_t id, SignType type, double value) {
  for (Sign& g : signs)
    if (g.id == id && g.variable) {
      g.type = type;
      g.value = SignHasValue(type) ? value : 0.0;
      return true;
    }
  return false;
}

std::vector<world::VariableSignContent> VariableContents(const std::vector<Sign>& signs) {
  std::vector<world::VariableSignContent> out;
  for (const Sign& g : signs)
    if (g.variable) out.push_back({g.id, static_cast<uint8_t>(g.type), g.value});
  return out;
}

namespace {
template <typename Get>
bool ApplyContents(size_t n, Get sign_at, const std::vector<world::VariableSignContent>& contents) {
  bool changed = false;
  for (const auto& c : contents) {
    if (c.type >= kSignTypeCount) continue;
    const auto type = static_cast<SignType>(c.type);
    for (size_t i = 0; i < n; ++i) {
      Sign& g = sign_at(i);
      if (g.id != c.id || !g.variable) continue;
      const double value = SignHasValue(type) ? c.value : 0.0;
      if (g.type != type || g.value != value) {
        g.type = type;
        g.value = value;
        changed = true;
      }
    }
  }
  return changed;
}
}  // namespace

bool ApplyVariableContents(std::vector<Sign>& signs, const std::vector<world::VariableSignContent>& contents) {
  return ApplyContents(signs.size(), [&](size_t i) -> Sign& { return signs[i]; }, contents);
}

bool ApplyVariableContents(std::vector<PlacedSign>& signs, const std::vector<world::VariableSignContent>& contents) {
  return ApplyContents(signs.size(), [&](size_t i) -> Sign& { return signs[i].sign; }, contents);
}

std::string SignContentText(SignType type, double value) {
  std::string text = SignTypeName(type);
  if (SignHasValue(type)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %g", value);
    text += buf;
  }
  return text;
}

std::optional<std::pair<SignType, double>> ParseSignContent(std::string_view text, std::string& error) {
  const auto space = text.find(' ');
  const std::string_view name = text.substr(0, space);
  const auto type = SignTypeFromName(name);
  auto fail = [&](const std::string& why) {
    error = "expected \"<type>\" or \"<type> <value>\" (speed_limit 80, end_of_limit 80, stop, blank, ...), " + why;
    return std::nullopt;
  };
  if (!type) return fail("got the type \"" + std::string(name) + "\"");
  double value = 0;
  if (space != std::string_view::npos) {
    const std::string rest(text.substr(space + 1));
    char* end = nullptr;
    value = std::strtod(rest.c_str(), &end);
    if (rest.empty() || *end != '\0' || !std::isfinite(value) || value < 0 || value > 65535)
      return fail("got the value \"" + rest + "\"");
    if (!SignHasValue(*type)) return fail("got a value for " + std::string(name) + ", which has none");
  } else if (*type == SignType::kSpeedLimit || *type == SignType::kEndOfLimit) {
    return fail("got " + std::string(name) + " without its value");
  }
  return std::pair{*type, value};
}

uint32_t SignDetail(SignType type, double value) {
  const double v = std::clamp(std::round(value), 0.0, 65535.0);
  return static_cast<uint32_t>(type) * 65536u + static_cast<uint32_t>(v);
}

std::optional<SignType> SignDetailType(uint32_t detail) {
  const uint32_t t = detail >> 16;
  if (t >= static_cast<uint32_t>(kSignTypeCount)) return std::nullopt;
  return static_cast<SignType>(t);
}

std::string ValidateSign(const Sign& s) {
  if (!std::isfinite(s.s_m) || s.s_m < 0) return "s_m must be >= 0";
  if (s.direction != 1 && s.direction != -1) return "direction must be +1 or -1";
  if (s.side != 1 && s.side != -1) return "side must be \"left\" or \"right\"";
  if (s.type == SignType::kSpeedLimit && !(s.value > 0 && s.value <= 300)) return "a speed_limit needs a value in (0, 300]";
  if (!(s.value >= 0 && s.value <= 65535)) return "value must be in [0, 65535]";
  if (!(s.lateral_m >= 0 && s.lateral_m <= 50)) return "lateral_m must be in [0, 50]";
  if (!(s.size_m > 0.1 && s.size_m <= 10)) return "size_m must be in (0.1, 10]";
  if (!(s.height_m > 0 && s.height_m <= 20)) return "height_m must be in (0, 20]";
  return {};
}

}  // namespace platoon::road
