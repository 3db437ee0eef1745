#include "platoon/input/axis_mapping.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace platoon::input {
namespace {

// Key names the SDL back end can resolve with SDL_GetKeyFromName (which ignores case). Kept here so
// a typo is reported at file:line when the config is read, not when a window opens.
const std::vector<std::string> kNamedKeys = {
    "Up",        "Down",       "Left",      "Right",      "Space",    "Return",    "Tab",
    "Backspace", "Left Shift", "Right Shift", "Left Ctrl", "Right Ctrl", "Left Alt", "Right Alt",
    "Keypad 0",  "Keypad 1",   "Keypad 2",  "Keypad 3",   "Keypad 4", "Keypad 5",  "Keypad 6",
    "Keypad 7",  "Keypad 8",   "Keypad 9",
};

bool EqualsNoCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The canonical spelling of a key name, or "" when it is not one we accept.
std::string CanonicalKeyName(const std::string& name) {
  if (name.size() == 1 && std::isalnum(static_cast<unsigned char>(name[0])))
    return std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(name[0]))));
  for (const auto& k : kNamedKeys)
    if (EqualsNoCase(name, k)) return k;
  return {};
}

std::string ReadKey(const config::Table& t, const std::string& key, const std::string& fallback) {
  const std::string name = t.GetString(key, fallback);
  const std::string canonical = CanonicalKeyName(name);
  if (canonical.empty()) {
    std::string list;
    for (const auto& k : kNamedKeys) list += (list.empty() ? "" : ", ") + k;
    t.Fail(key, "expected a key name: a letter, a digit or one of " + list + "; got \"" + name + "\"");
  }
  return canonical;
}

int ReadRaw(const config::Table& t, const std::string& key, int fallback) {
  return static_cast<int>(t.GetInt(key, fallback, kAxisRawMin, kAxisRawMax));
}

int ReadIndex(const config::Table& t, const std::string& key, int fallback) {
  return static_cast<int>(t.GetInt(key, fallback, -1, 255));
}

// Raw axis value if the device has that axis.
bool AxisValue(const std::vector<int16_t>& axes, int index, int* raw) {
  if (index < 0 || static_cast<size_t>(index) >= axes.size()) return false;
  *raw = axes[static_cast<size_t>(index)];
  return true;
}

bool ButtonDown(const std::vector<bool>& buttons, int index) {
  return index >= 0 && static_cast<size_t>(index) < buttons.size() && buttons[static_cast<size_t>(index)];
}

// Removes a dead band of width `dz` at 0 from a 0..1 magnitude and rescales the rest to 0..1.
double ApplyDeadzone(double magnitude, double dz) {
  if (magnitude <= dz) return 0.0;
  return std::min(1.0, (magnitude - dz) / (1.0 - dz));
}

double Pedal(const std::vector<int16_t>& axes, const std::vector<bool>& buttons, int axis, int rest, int full,
             bool invert, double dz, int button) {
  if (ButtonDown(buttons, button)) return 1.0;
  int raw = 0;
  if (!AxisValue(axes, axis, &raw)) return 0.0;
  const double p = invert ? NormalizePedalRaw(raw, full, rest) : NormalizePedalRaw(raw, rest, full);
  return ApplyDeadzone(p, dz);
}

// Moves `value` toward `target` by at most `step` (>= 0; infinity jumps).
double Approach(double value, double target, double step) {
  if (std::abs(target - value) <= step) return target;
  return value + (target > value ? step : -step);
}

}  // namespace

std::string ValidateAxisMappingDef(const AxisMappingDef& d) {
  auto between = [](int lo, int mid, int hi) { return (lo < mid && mid < hi) || (hi < mid && mid < lo); };
  if (d.api != "joystick" && d.api != "gamecontroller")
    return "api must be \"joystick\" or \"gamecontroller\", got \"" + d.api + "\"";
  if (d.steer_left == d.steer_right) return "steer_left and steer_right must differ, both are " + std::to_string(d.steer_left);
  if (!between(d.steer_left, d.steer_centre, d.steer_right))
    return "steer_centre must lie strictly between steer_left (" + std::to_string(d.steer_left) + ") and steer_right (" +
           std::to_string(d.steer_right) + "), got " + std::to_string(d.steer_centre);
  if (d.throttle_rest == d.throttle_full)
    return "throttle_rest and throttle_full must differ, both are " + std::to_string(d.throttle_rest);
  if (d.brake_rest == d.brake_full) return "brake_rest and brake_full must differ, both are " + std::to_string(d.brake_rest);
  if (!(d.steer_deadzone >= 0 && d.steer_deadzone <= 0.9))
    return "steer_deadzone must be in [0, 0.9], got " + std::to_string(d.steer_deadzone);
  if (!(d.pedal_deadzone >= 0 && d.pedal_deadzone <= 0.9))
    return "pedal_deadzone must be in [0, 0.9], got " + std::to_string(d.pedal_deadzone);
  if (!(d.steer_gamma >= 0.2 && d.steer_gamma <= 5)) return "steer_gamma must be in [0.2, 5], got " + std::to_string(d.steer_gamma);
  if (!(d.keyboard_steer_rate_per_s > 0)) return "keyboard_steer_rate_per_s must be > 0";
  if (!(d.keyboard_centre_rate_per_s > 0)) return "keyboard_centre_rate_per_s must be > 0";
  if (!(d.keyboard_pedal_rate_per_s >= 0)) return "keyboard_pedal_rate_per_s must be >= 0";
  for (double m : {d.keyboard_max_steer, d.keyboard_max_throttle, d.keyboard_max_brake})
    if (!(m >= 0 && m <= 1)) return "keyboard_max_* must be in [0, 1], got " + std::to_string(m);
  return {};
}

AxisMappingDef ReadAxisMapping(const config::Table& t) {
  AxisMappingDef d = DefaultAxisMappingDef();
  // Device selection.
  d.api = t.GetString("api", d.api, {"joystick", "gamecontroller"});
  d.device_index = ReadIndex(t, "device_index", d.device_index);
  d.device_name = t.GetString("device_name", d.device_name);
  d.keyboard_fallback = t.GetBool("keyboard_fallback", d.keyboard_fallback);

  // Steering.
  d.steer_axis = ReadIndex(t, "steer_axis", d.steer_axis);
  d.steer_left = ReadRaw(t, "steer_left", d.steer_left);
  d.steer_right = ReadRaw(t, "steer_right", d.steer_right);
  d.steer_centre = ReadRaw(t, "steer_centre", d.steer_centre);
  d.steer_invert = t.GetBool("steer_invert", d.steer_invert);
  d.steer_deadzone = t.GetDouble("steer_deadzone", d.steer_deadzone, 0, 0.9);
  d.steer_gamma = t.GetDouble("steer_gamma", d.steer_gamma, 0.2, 5);
  if (d.steer_left == d.steer_right) t.Fail("steer_right", "must differ from steer_left (" + std::to_string(d.steer_left) + ")");
  if (!((d.steer_left < d.steer_centre && d.steer_centre < d.steer_right) ||
        (d.steer_right < d.steer_centre && d.steer_centre < d.steer_left)))
    t.Fail("steer_centre", "expected a raw value strictly between steer_left (" + std::to_string(d.steer_left) +
                               ") and steer_right (" + std::to_string(d.steer_right) + "), got " +
                               std::to_string(d.steer_centre));

  // Pedals: pedal_rest / pedal_full for both, then per-pedal overrides.
  const int pedal_rest = ReadRaw(t, "pedal_rest", d.throttle_rest);
  const int pedal_full = ReadRaw(t, "pedal_full", d.throttle_full);
  d.throttle_axis = ReadIndex(t, "throttle_axis", d.throttle_axis);
  d.brake_axis = ReadIndex(t, "brake_axis", d.brake_axis);
  d.throttle_rest = ReadRaw(t, "throttle_rest", pedal_rest);
  d.throttle_full = ReadRaw(t, "throttle_full", pedal_full);
  d.brake_rest = ReadRaw(t, "brake_rest", pedal_rest);
  d.brake_full = ReadRaw(t, "brake_full", pedal_full);
  d.throttle_invert = t.GetBool("throttle_invert", d.throttle_invert);
  d.brake_invert = t.GetBool("brake_invert", d.brake_invert);
  d.pedal_deadzone = t.GetDouble("pedal_deadzone", d.pedal_deadzone, 0, 0.9);
  d.throttle_button = ReadIndex(t, "throttle_button", d.throttle_button);
  d.brake_button = ReadIndex(t, "brake_button", d.brake_button);
  if (d.throttle_rest == d.throttle_full)
    t.Fail(t.Has("throttle_full") ? "throttle_full" : "pedal_full",
           "must differ from the rest value (" + std::to_string(d.throttle_rest) + ")");
  if (d.brake_rest == d.brake_full)
    t.Fail(t.Has("brake_full") ? "brake_full" : "pedal_full",
           "must differ from the rest value (" + std::to_string(d.brake_rest) + ")");
  if (d.steer_axis >= 0 && (d.steer_axis == d.throttle_axis || d.steer_axis == d.brake_axis))
    t.Fail("steer_axis", "axis " + std::to_string(d.steer_axis) + " is also used by a pedal");

  // Keyboard fallback.
  d.key_left = ReadKey(t, "key_left", d.key_left);
  d.key_right = ReadKey(t, "key_right", d.key_right);
  d.key_throttle = ReadKey(t, "key_throttle", d.key_throttle);
  d.key_brake = ReadKey(t, "key_brake", d.key_brake);
  d.keyboard_steer_rate_per_s = t.GetDouble("keyboard_steer_rate_per_s", d.keyboard_steer_rate_per_s, 0.01, 100);
  d.keyboard_centre_rate_per_s = t.GetDouble("keyboard_centre_rate_per_s", d.keyboard_centre_rate_per_s, 0.01, 100);
  d.keyboard_pedal_rate_per_s = t.GetDouble("keyboard_pedal_rate_per_s", d.keyboard_pedal_rate_per_s, 0, 100);
  d.keyboard_max_steer = t.GetDouble("keyboard_max_steer", d.keyboard_max_steer, 0, 1);
  d.keyboard_max_throttle = t.GetDouble("keyboard_max_throttle", d.keyboard_max_throttle, 0, 1);
  d.keyboard_max_brake = t.GetDouble("keyboard_max_brake", d.keyboard_max_brake, 0, 1);

  if (auto err = ValidateAxisMappingDef(d); !err.empty()) t.Fail("", err);
  t.RejectUnknownKeys();
  return d;
}

int MaxAxisIndex(const AxisMappingDef& def) { return std::max({def.steer_axis, def.throttle_axis, def.brake_axis}); }

double NormalizeSteerRaw(const AxisMappingDef& def, int raw) {
  // Piecewise about the centre so raw == steer_centre is exactly 0 and each lock exactly +-1,
  // even though SDL's range is one count longer on the negative side.
  const double c = def.steer_centre;
  const double end = ((raw - c) * (def.steer_left - c) > 0) ? def.steer_left : def.steer_right;
  if (raw == def.steer_centre) return 0.0;
  const double magnitude = std::min(1.0, (raw - c) / (end - c));
  return end == def.steer_left ? -magnitude : magnitude;
}

double NormalizePedalRaw(int raw, int rest, int full) {
  return std::clamp(static_cast<double>(raw - rest) / static_cast<double>(full - rest), 0.0, 1.0);
}

vehicle::VehicleInput MapAxes(const AxisMappingDef& def, const std::vector<int16_t>& axes,
                              const std::vector<bool>& buttons) {
  vehicle::VehicleInput in;
  // Steering: device travel -1 (left) .. 1 (right), dead band, response curve, then left positive.
  int raw = 0;
  if (AxisValue(axes, def.steer_axis, &raw)) {
    const double x = NormalizeSteerRaw(def, raw);
    const double shaped = std::pow(ApplyDeadzone(std::abs(x), def.steer_deadzone), def.steer_gamma);
    const double left_positive = x < 0 ? shaped : -shaped;
    in.steer = def.steer_invert ? -left_positive : left_positive;
    if (in.steer == 0) in.steer = 0;  // no -0.0 in recorded inputs
  }
  in.throttle = Pedal(axes, buttons, def.throttle_axis, def.throttle_rest, def.throttle_full, def.throttle_invert,
                      def.pedal_deadzone, def.throttle_button);
  in.brake = Pedal(axes, buttons, def.brake_axis, def.brake_rest, def.brake_full, def.brake_invert,
                   def.pedal_deadzone, def.brake_button);
  return in;
}

KeyboardDriver::KeyboardDriver(const AxisMappingDef& def) : def_(def) {}

void KeyboardDriver::Key(DriverKey key, bool down) {
  switch (key) {
    case DriverKey::kLeft: left_ = down; break;
    case DriverKey::kRight: right_ = down; break;
    case DriverKey::kThrottle: throttle_ = down; break;
    case DriverKey::kBrake: brake_ = down; break;
  }
}

vehicle::VehicleInput KeyboardDriver::Update(double dt_s) {
  const double dt = std::max(0.0, dt_s);
  // Steering: toward the held side (left positive); no key or both keys return to centre. Moving
  // back across centre is at least as fast as the return rate, so a reversal never feels sticky.
  const int dir = (left_ ? 1 : 0) - (right_ ? 1 : 0);
  if (dir == 0) {
    current_.steer = Approach(current_.steer, 0.0, def_.keyboard_centre_rate_per_s * dt);
  } else {
    const bool opposite = current_.steer * dir < 0;
    const double rate = opposite ? std::max(def_.keyboard_steer_rate_per_s, def_.keyboard_centre_rate_per_s)
                                 : def_.keyboard_steer_rate_per_s;
    current_.steer = Approach(current_.steer, dir * def_.keyboard_max_steer, rate * dt);
  }
  if (current_.steer == 0) current_.steer = 0;  // no -0.0

  // Pedals ramp both ways at the same rate (0: instant).
  const double pedal_step =
      def_.keyboard_pedal_rate_per_s > 0 ? def_.keyboard_pedal_rate_per_s * dt : std::numeric_limits<double>::infinity();
  current_.throttle = Approach(current_.throttle, throttle_ ? def_.keyboard_max_throttle : 0.0, pedal_step);
  current_.brake = Approach(current_.brake, brake_ ? def_.keyboard_max_brake : 0.0, pedal_step);
  return current_;
}

void KeyboardDriver::Reset() {
  left_ = right_ = throttle_ = brake_ = false;
  current_ = vehicle::VehicleInput{};
}

}  // namespace platoon::input
