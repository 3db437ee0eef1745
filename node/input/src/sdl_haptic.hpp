#pragma once
// The SDL implementation of input::HapticDevice (internal to platoon_input: it names SDL types).
#include "platoon/input/haptic.hpp"

#include <SDL.h>

#include <memory>
#include <string>

namespace platoon::input {

// A constant-force effect on `joystick`'s haptic device, or nullptr and `*why` ("\"G27\" has no force
// feedback", "... has no constant-force effect: ...") when it cannot play one.
std::unique_ptr<HapticDevice> OpenSdlHaptic(SDL_Joystick* joystick, const std::string& name, std::string* why);

}  // namespace platoon::input
