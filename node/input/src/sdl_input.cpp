#include "platoon/input/sdl_input.hpp"

#include "sdl_haptic.hpp"

#include <SDL.h>

#include <algorithm>
#include <cctype>

namespace platoon::input {
namespace {

constexpr double kReopenIntervalS = 1.0;  // how often an unplugged device is looked for again

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string NameForIndex(int index, bool gamecontroller) {
  const char* name = gamecontroller ? SDL_GameControllerNameForIndex(index) : SDL_JoystickNameForIndex(index);
  return name ? name : "unnamed device";
}

// A device that `def` selects, by SDL device index.
struct Match {
  int index = -1;     // -1: none
  std::string seen;   // every device present, for messages: "0: \"Virtual Wheel\", 1: ..."
};

Match FindDevice(const AxisMappingDef& def) {
  const bool gc = def.api == "gamecontroller";
  Match m;
  const int count = SDL_NumJoysticks();
  for (int i = 0; i < count; ++i) {
    const std::string name = NameForIndex(i, false);
    m.seen += (m.seen.empty() ? "" : ", ") + std::to_string(i) + ": \"" + name + "\"";
    if (m.index >= 0) continue;
    if (def.device_index >= 0 && i != def.device_index) continue;
    if (gc && !SDL_IsGameController(i)) continue;
    if (!def.device_name.empty() && Lower(NameForIndex(i, gc)).find(Lower(def.device_name)) == std::string::npos &&
        Lower(name).find(Lower(def.device_name)) == std::string::npos)
      continue;
    m.index = i;
  }
  if (m.seen.empty()) m.seen = "none";
  return m;
}

std::string Wanted(const AxisMappingDef& def) {
  std::string s = def.api == "gamecontroller" ? "game controller" : "joystick";
  if (def.device_index >= 0) s += " at index " + std::to_string(def.device_index);
  if (!def.device_name.empty()) s += " matching \"" + def.device_name + "\"";
  return s;
}

}  // namespace

struct SdlInput::Impl {
  AxisMappingDef def;
  Uint32 sdl_flags = 0;             // subsystems this object initialized (and quits)
  bool keyboard = false;
  KeyboardDriver keys;
  SDL_Scancode sc_left = SDL_SCANCODE_UNKNOWN, sc_right = SDL_SCANCODE_UNKNOWN;
  SDL_Scancode sc_throttle = SDL_SCANCODE_UNKNOWN, sc_brake = SDL_SCANCODE_UNKNOWN;
  SDL_Joystick* joystick = nullptr;
  SDL_GameController* controller = nullptr;
  std::string name;
  std::string note;
  std::string keyboard_note;        // why the keyboard is used
  std::vector<int16_t> axes;
  std::vector<bool> buttons;
  double since_reopen_s = 0;

  explicit Impl(const AxisMappingDef& d) : def(d), keys(d) {}
  ~Impl() {
    CloseDevice();
    if (sdl_flags) SDL_QuitSubSystem(sdl_flags);
  }

  void CloseDevice() {
    if (controller) SDL_GameControllerClose(controller);
    else if (joystick) SDL_JoystickClose(joystick);
    controller = nullptr;
    joystick = nullptr;
  }

  // Opens device `index`; "" on success, else why not (the device stays closed).
  std::string OpenDevice(int index) {
    if (def.api == "gamecontroller") {
      controller = SDL_GameControllerOpen(index);
      if (!controller) return "cannot open game controller " + std::to_string(index) + ": " + SDL_GetError();
      joystick = SDL_GameControllerGetJoystick(controller);
      name = NameForIndex(index, true);
      axes.assign(SDL_CONTROLLER_AXIS_MAX, 0);
      buttons.assign(SDL_CONTROLLER_BUTTON_MAX, false);
    } else {
      joystick = SDL_JoystickOpen(index);
      if (!joystick) return "cannot open joystick " + std::to_string(index) + ": " + SDL_GetError();
      name = NameForIndex(index, false);
      axes.assign(static_cast<size_t>(std::max(0, SDL_JoystickNumAxes(joystick))), 0);
      buttons.assign(static_cast<size_t>(std::max(0, SDL_JoystickNumButtons(joystick))), false);
    }
    // A configured axis or button the device lacks is a set-up error, not something to drive on.
    const int need_axes = MaxAxisIndex(def) + 1;
    const int need_buttons = std::max(def.throttle_button, def.brake_button) + 1;
    std::string err;
    if (static_cast<int>(axes.size()) < need_axes)
      err = "\"" + name + "\" has " + std::to_string(axes.size()) + " axes; the [input] axes (steer " +
            std::to_string(def.steer_axis) + ", throttle " + std::to_string(def.throttle_axis) + ", brake " +
            std::to_string(def.brake_axis) + ") need " + std::to_string(need_axes);
    else if (static_cast<int>(buttons.size()) < need_buttons)
      err = "\"" + name + "\" has " + std::to_string(buttons.size()) + " buttons; the [input] buttons need " +
            std::to_string(need_buttons);
    if (!err.empty()) CloseDevice();
    return err;
  }

  // Looks for the configured device again after it was unplugged.
  void TryReopen(double dt_s) {
    since_reopen_s += dt_s;
    if (since_reopen_s < kReopenIntervalS) return;
    since_reopen_s = 0;
    const Match m = FindDevice(def);
    if (m.index >= 0 && OpenDevice(m.index).empty()) note.clear();
  }

  void ReadDevice() {
    if (controller) {
      SDL_GameControllerUpdate();
      for (size_t i = 0; i < axes.size(); ++i)
        axes[i] = SDL_GameControllerGetAxis(controller, static_cast<SDL_GameControllerAxis>(i));
      for (size_t i = 0; i < buttons.size(); ++i)
        buttons[i] = SDL_GameControllerGetButton(controller, static_cast<SDL_GameControllerButton>(i)) != 0;
    } else {
      SDL_JoystickUpdate();
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = SDL_JoystickGetAxis(joystick, static_cast<int>(i));
      for (size_t i = 0; i < buttons.size(); ++i)
        buttons[i] = SDL_JoystickGetButton(joystick, static_cast<int>(i)) != 0;
    }
  }

  vehicle::VehicleInput PollDevice(double dt_s) {
    // Headless, nobody drains SDL's queue: drop the device events our updates queue so it cannot fill.
    const bool headless = SDL_WasInit(SDL_INIT_VIDEO) == 0;
    if (joystick && !SDL_JoystickGetAttached(joystick)) {
      CloseDevice();
      note = "\"" + name + "\" was unplugged; input is neutral until it is back";
      since_reopen_s = 0;
    }
    vehicle::VehicleInput in;
    if (!joystick) {
      SDL_JoystickUpdate();  // lets SDL notice the device coming back
      TryReopen(dt_s);
    }
    if (joystick) {
      ReadDevice();
      in = MapAxes(def, axes, buttons);
    }
    if (headless) SDL_FlushEvents(SDL_JOYAXISMOTION, SDL_CONTROLLERSENSORUPDATE);
    return in;
  }

  vehicle::VehicleInput PollKeyboard(double dt_s) {
    // Key state needs a window; without video there is none, so the seat stays neutral.
    if (SDL_WasInit(SDL_INIT_VIDEO) == 0) {
      note = keyboard_note + "; no SDL video: the keyboard needs a window; input is neutral";
      keys.Reset();
      return keys.Current();
    }
    note = keyboard_note;
    SDL_PumpEvents();
    int count = 0;
    const Uint8* state = SDL_GetKeyboardState(&count);
    auto down = [&](SDL_Scancode sc) { return sc > SDL_SCANCODE_UNKNOWN && sc < count && state[sc] != 0; };
    keys.Key(DriverKey::kLeft, down(sc_left));
    keys.Key(DriverKey::kRight, down(sc_right));
    keys.Key(DriverKey::kThrottle, down(sc_throttle));
    keys.Key(DriverKey::kBrake, down(sc_brake));
    return keys.Update(dt_s);
  }

  // Switches to the keyboard; "" on success, else why not.
  std::string UseKeyboard(const std::string& why) {
    keyboard = true;
    name = "keyboard";
    note = keyboard_note = why;
    axes.clear();
    buttons.clear();
    const std::pair<const std::string*, SDL_Scancode*> keys_to_resolve[] = {
        {&def.key_left, &sc_left}, {&def.key_right, &sc_right}, {&def.key_throttle, &sc_throttle}, {&def.key_brake, &sc_brake}};
    for (const auto& [key_name, sc] : keys_to_resolve) {
      *sc = SDL_GetScancodeFromName(key_name->c_str());
      if (*sc == SDL_SCANCODE_UNKNOWN) return "SDL does not know the key \"" + *key_name + "\"";
    }
    return {};
  }
};

SdlInput::SdlInput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SdlInput::~SdlInput() = default;

std::unique_ptr<SdlInput> SdlInput::Open(const AxisMappingDef& def, std::string* error) {
  auto fail = [error](const std::string& message) {
    if (error) *error = message;
    return std::unique_ptr<SdlInput>();
  };
  if (auto err = ValidateAxisMappingDef(def); !err.empty()) return fail("input: " + err);
  auto impl = std::make_unique<Impl>(def);

  // A wheel keeps working while another window (or none) has focus. Normal priority: the
  // SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS environment variable still wins.
  SDL_SetHint(SDL_HINT_JOYSTICK_ALLOW_BACKGROUND_EVENTS, "1");
  const Uint32 flags = SDL_INIT_JOYSTICK | (def.api == "gamecontroller" ? SDL_INIT_GAMECONTROLLER : 0);
  std::string why_keyboard;
  if (SDL_InitSubSystem(flags) == 0) {
    impl->sdl_flags = flags;
    const Match m = FindDevice(def);
    if (m.index >= 0) {
      if (auto err = impl->OpenDevice(m.index); !err.empty()) return fail("input: " + err);
      return std::unique_ptr<SdlInput>(new SdlInput(std::move(impl)));
    }
    why_keyboard = "no " + Wanted(def) + " (devices: " + m.seen + ")";
  } else {
    why_keyboard = std::string("SDL joystick subsystem unavailable: ") + SDL_GetError();
  }

  // No device: the keyboard, if allowed.
  if (!def.keyboard_fallback) return fail("input: " + why_keyboard + "; keyboard_fallback is off");
  if (auto err = impl->UseKeyboard(why_keyboard + "; using the keyboard"); !err.empty()) return fail("input: " + err);
  return std::unique_ptr<SdlInput>(new SdlInput(std::move(impl)));
}

vehicle::VehicleInput SdlInput::Poll(double dt_s) {
  return impl_->keyboard ? impl_->PollKeyboard(dt_s) : impl_->PollDevice(dt_s);
}

std::unique_ptr<HapticDevice> SdlInput::OpenHaptic(std::string* why) {
  if (impl_->keyboard) {
    if (why) *why = "the keyboard has no force feedback";
    return nullptr;
  }
  return OpenSdlHaptic(impl_->joystick, impl_->name, why);
}

std::string SdlInput::DeviceName() const { return impl_->name; }
bool SdlInput::UsingKeyboard() const { return impl_->keyboard; }
std::string SdlInput::Note() const { return impl_->note; }
const std::vector<int16_t>& SdlInput::RawAxes() const { return impl_->axes; }

}  // namespace platoon::input
