#pragma once
/// The keys a seat window sends as markers (docs/EXPERIMENTS.md, "Scenario events"): SDL key-down events
/// named as a scenario `key` condition names them (config::SeatKeyNames: "space", "return", "a".."z",
/// "0".."9", "f1".."f12"). SDL stays out of this header: keycodes are SDL_Keycode values as int32_t.

#include <cstdint>
#include <string>

namespace platoon::viewer {

/// The seat key name of one SDL key-down: its keycode (`SDL_KeyboardEvent::keysym.sym`, the key as the
/// keyboard layout labels it) and SDL's repeat flag. "" for an auto-repeat (a held key is one press) and
/// for keys a seat does not send (Esc, arrows, modifiers, keypad).
std::string SeatKeyName(int32_t sdl_keycode, bool repeat);

/// The participant's own turn indicators from the keyboard: -1 for "," (left), +1 for "." (right), 0 for an
/// auto-repeat and every other key. Neither is a seat key, so they send no marker.
int IndicatorKeySide(int32_t sdl_keycode, bool repeat);

}  // namespace platoon::viewer
