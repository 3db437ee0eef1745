#include "platoon/viewer/seat_keys.hpp"

#include "platoon/config/scenario.hpp"

#include <SDL.h>

namespace platoon::viewer {

std::string SeatKeyName(int32_t sdl_keycode, bool repeat) {
  if (repeat) return {};
  // SDL's own key names in lower case ("Space" -> "space", "F5" -> "f5").
  std::string name;
  if (sdl_keycode == SDLK_SPACE) name = "space";
  else if (sdl_keycode == SDLK_RETURN) name = "return";
  else if (sdl_keycode >= SDLK_a && sdl_keycode <= SDLK_z) name = std::string(1, static_cast<char>(sdl_keycode));
  else if (sdl_keycode >= SDLK_0 && sdl_keycode <= SDLK_9) name = std::string(1, static_cast<char>(sdl_keycode));
  else if (sdl_keycode >= SDLK_F1 && sdl_keycode <= SDLK_F12) name = "f" + std::to_string(sdl_keycode - SDLK_F1 + 1);
  // The scenario config's list is the one definition of what a seat sends.
  return config::IsSeatKeyName(name) ? name : std::string();
}

int IndicatorKeySide(int32_t sdl_keycode, bool repeat) {
  if (repeat) return 0;
  if (sdl_keycode == SDLK_COMMA) return -1;
  if (sdl_keycode == SDLK_PERIOD) return 1;
  return 0;
}

}  // namespace platoon::viewer
