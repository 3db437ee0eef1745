#pragma once
/// Mapping raw input-device axes and buttons to a vehicle::VehicleInput (seed 004 §5.9 "Steering
/// Wheel Plug-in"), and a keyboard driver for seats without a wheel. Pure: no SDL, no clock; the
/// caller passes raw values and elapsed time. The [input] keys and a wheel set-up: docs/INPUTS.md.

#include "platoon/config/table.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::input {

/// Raw axis range of SDL joysticks: -32768 .. 32767.
constexpr int kAxisRawMin = -32768;
constexpr int kAxisRawMax = 32767;

/// Read-only description of how a driver seat's device becomes a VehicleInput ([input] table).
struct AxisMappingDef {
  // Device selection.
  std::string api = "joystick";       ///< "joystick" (raw axes: wheels) or "gamecontroller" (SDL's standard gamepad layout).
  int device_index = -1;              ///< SDL device index to open; -1: the first that matches device_name.
  std::string device_name;            ///< Case-insensitive substring of the device name ("G27"); "" matches any.
  bool keyboard_fallback = true;      ///< Use the keyboard when no device matches (else Open fails).

  // Steering.
  int steer_axis = 0;                 ///< Axis index of the steering wheel; -1 none (steer 0).
  int steer_left = kAxisRawMin;       ///< Raw value at full left lock. SDL default -32768.
  int steer_right = kAxisRawMax;      ///< Raw value at full right lock. SDL default 32767.
  int steer_centre = 0;               ///< Raw value with the wheel straight ahead. Typical 0.
  bool steer_invert = false;          ///< Swap left and right.
  double steer_deadzone = 0.0;        ///< Dead band around centre, as a fraction of half travel. Typical 0 (wheel) .. 0.1 (stick).
  double steer_gamma = 1.0;           ///< Response curve |s|^gamma; 1 linear, >1 finer near centre. Typical 1..2.

  // Pedals (each may override pedal_rest / pedal_full).
  int throttle_axis = 2;              ///< Axis index of the accelerator; -1 none.
  int brake_axis = 3;                 ///< Axis index of the brake; -1 none.
  int throttle_rest = kAxisRawMax;    ///< Raw accelerator value when released. Wheels often 32767, triggers 0 or -32768.
  int throttle_full = kAxisRawMin;    ///< Raw accelerator value when fully pressed. Wheels often -32768.
  int brake_rest = kAxisRawMax;       ///< Raw brake value when released.
  int brake_full = kAxisRawMin;       ///< Raw brake value when fully pressed.
  bool throttle_invert = false;       ///< Swap throttle_rest and throttle_full.
  bool brake_invert = false;          ///< Swap brake_rest and brake_full.
  double pedal_deadzone = 0.02;       ///< Travel ignored next to rest, as a fraction of full travel. Typical 0.01..0.05.
  int throttle_button = -1;           ///< Button that gives full throttle (pads without analog triggers); -1 none.
  int brake_button = -1;              ///< Button that gives full brake; -1 none.

  // Keyboard fallback (SDL key names, e.g. "Up", "Left", "W", "Space").
  std::string key_left = "Left";      ///< Key that steers left.
  std::string key_right = "Right";    ///< Key that steers right.
  std::string key_throttle = "Up";    ///< Key for the accelerator.
  std::string key_brake = "Down";     ///< Key for the brake.
  double keyboard_steer_rate_per_s = 1.5;   ///< Steer ramp while a steering key is held, in 1/s (full lock in 1/rate s).
  double keyboard_centre_rate_per_s = 3.0;  ///< Return-to-centre rate with no steering key held, in 1/s.
  double keyboard_pedal_rate_per_s = 4.0;   ///< Pedal ramp up and down, in 1/s; 0 means instant.
  double keyboard_max_steer = 1.0;    ///< Steer reached by holding a key, 0..1. Typical 0.5..1.
  double keyboard_max_throttle = 1.0; ///< Throttle reached by holding the key, 0..1.
  double keyboard_max_brake = 1.0;    ///< Brake reached by holding the key, 0..1.
};

/// Default definition: a racing wheel (steer axis 0, accelerator 2, brake 3, pedals resting at +32767
/// and pressed toward -32768), arrow keys as fallback.
inline AxisMappingDef DefaultAxisMappingDef() { return AxisMappingDef{}; }

/// Checks a definition; "" when valid, else a message naming the field and its value.
std::string ValidateAxisMappingDef(const AxisMappingDef& def);

/// Reads an [input] table over the defaults; unknown keys are errors. `pedal_rest` / `pedal_full`
/// set both pedals, `throttle_*` / `brake_*` override one. Throws config::ConfigError naming file:line and key.
AxisMappingDef ReadAxisMapping(const config::Table& t);

/// Largest axis index the definition reads, or -1 when it reads none.
int MaxAxisIndex(const AxisMappingDef& def);

/// Maps raw axes (SDL order and range) and buttons to a driver input. Axes the device lacks read as
/// their rest value (centre for steering), so a short vector gives neutral input, never garbage.
vehicle::VehicleInput MapAxes(const AxisMappingDef& def, const std::vector<int16_t>& axes,
                              const std::vector<bool>& buttons = {});

/// Normalizes a raw steering value to -1 (left) .. 1 (right) device travel, before deadzone and gamma.
double NormalizeSteerRaw(const AxisMappingDef& def, int raw);
/// Normalizes a raw pedal value to 0 (rest) .. 1 (full), clamped, before the deadzone.
double NormalizePedalRaw(int raw, int rest, int full);

/// The keys the keyboard driver knows.
enum class DriverKey { kLeft, kRight, kThrottle, kBrake };

/// Keyboard driving as a pure state machine: the caller reports key changes and elapsed time.
/// Steering ramps toward the held side at keyboard_steer_rate_per_s and returns to centre at
/// keyboard_centre_rate_per_s when no (or both) steering keys are held; pedals ramp at keyboard_pedal_rate_per_s.
class KeyboardDriver {
 public:
  explicit KeyboardDriver(const AxisMappingDef& def = DefaultAxisMappingDef());
  /// Records a key going down (`down` true) or up.
  void Key(DriverKey key, bool down);
  /// Advances the ramps by `dt_s` seconds (>= 0) and returns the current input.
  vehicle::VehicleInput Update(double dt_s);
  /// The current input without advancing time.
  const vehicle::VehicleInput& Current() const { return current_; }
  /// Releases every key and centres everything (e.g. when the window loses focus).
  void Reset();

 private:
  AxisMappingDef def_;
  bool left_ = false, right_ = false, throttle_ = false, brake_ = false;
  vehicle::VehicleInput current_;
};

}  // namespace platoon::input
