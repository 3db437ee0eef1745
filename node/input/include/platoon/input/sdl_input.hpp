#pragma once
/// A driver seat's live input (seed 004 §5.9 "Steering Wheel Plug-in"): a wheel, pedals or gamepad
/// read through SDL2's joystick / game-controller API and mapped by an AxisMappingDef, with the
/// keyboard as fallback. SDL stays out of this header (pimpl). Set-up: docs/INPUTS.md.
///
/// Threading: create, poll and destroy on the thread that owns SDL (the one that made the window, if
/// any). Poll() does not consume SDL events: it reads joystick and keyboard *state*, so a viewer in the
/// same process keeps its event loop. With no SDL video (headless), keyboard mode gives neutral input.

#include "platoon/input/axis_mapping.hpp"
#include "platoon/input/haptic.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace platoon::input {

/// Live driver input from SDL. Not copyable.
class SdlInput {
 public:
  /// Initializes SDL's joystick subsystem (reference counted; SDL_Quit is left to the owner), opens
  /// the device that `def` selects, or falls back to the keyboard when none matches and
  /// def.keyboard_fallback is set. Returns nullptr and sets `*error` (if given) when the definition
  /// is invalid, the device lacks a configured axis or button, or nothing can be used.
  static std::unique_ptr<SdlInput> Open(const AxisMappingDef& def, std::string* error);
  ~SdlInput();
  SdlInput(const SdlInput&) = delete;
  SdlInput& operator=(const SdlInput&) = delete;

  /// Reads the device (or keyboard) now, advancing keyboard ramps by `dt_s` seconds (typical 0.01).
  /// Neutral input while the device is unplugged; it is reopened when it comes back (checked each second).
  vehicle::VehicleInput Poll(double dt_s);
  /// The device's name as SDL reports it ("Logitech G27 Racing Wheel"), or "keyboard".
  std::string DeviceName() const;
  /// Whether input comes from the keyboard fallback.
  bool UsingKeyboard() const;
  /// Why input is not from the configured device or is neutral ("no joystick matching \"G27\" ...",
  /// "no SDL video: the keyboard needs a window; input is neutral", "device unplugged"); "" when fine.
  std::string Note() const;
  /// The wheel's force-feedback motor (a constant-force effect; docs/INPUTS.md, "Force feedback"), or
  /// nullptr and `*why` when the device has none, is the keyboard, or SDL cannot play the effect. The
  /// device is valid while this object lives and the wheel stays plugged in; same thread as Poll().
  std::unique_ptr<HapticDevice> OpenHaptic(std::string* why);
  /// Raw axes read by the last Poll(), in SDL order and range (for calibration displays); empty on keyboard.
  const std::vector<int16_t>& RawAxes() const;

 private:
  struct Impl;
  explicit SdlInput(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::input
