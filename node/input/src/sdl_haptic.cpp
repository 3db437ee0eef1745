#include "sdl_haptic.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::input {
namespace {

// A constant force along the wheel's axis, its level set at each update; SDL_HAPTIC_INFINITY keeps it
// playing between updates. SDL's direction is where the force comes from: cartesian x = +1 is "from
// the right", so a positive level pushes the rim left, the sign of a positive torque (docs/INPUTS.md).
class SdlHaptic final : public HapticDevice {
 public:
  SdlHaptic(SDL_Haptic* haptic, int effect, const SDL_HapticEffect& e, bool quit)
      : haptic_(haptic), effect_id_(effect), effect_(e), quit_(quit) {}
  ~SdlHaptic() override {
    Stop();
    SDL_HapticDestroyEffect(haptic_, effect_id_);
    SDL_HapticClose(haptic_);
    if (quit_) SDL_QuitSubSystem(SDL_INIT_HAPTIC);
  }
  void SetTorque(double torque) override {
    const auto level = static_cast<Sint16>(std::lround(std::clamp(torque, -1.0, 1.0) * 32767.0));
    // Only a change goes to the device: an update is a USB transfer.
    if (playing_ && level == effect_.constant.level) return;
    effect_.constant.level = level;
    if (SDL_HapticUpdateEffect(haptic_, effect_id_, &effect_) != 0) return;
    if (!playing_ && SDL_HapticRunEffect(haptic_, effect_id_, 1) == 0) playing_ = true;
  }
  void Stop() override {
    effect_.constant.level = 0;
    SDL_HapticUpdateEffect(haptic_, effect_id_, &effect_);
    SDL_HapticStopEffect(haptic_, effect_id_);
    playing_ = false;
  }

 private:
  SDL_Haptic* haptic_;
  int effect_id_;
  SDL_HapticEffect effect_;
  bool quit_;  // this object initialized SDL's haptic subsystem
  bool playing_ = false;
};

}  // namespace

std::unique_ptr<HapticDevice> OpenSdlHaptic(SDL_Joystick* joystick, const std::string& name, std::string* why) {
  const auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return std::unique_ptr<HapticDevice>();
  };
  if (!joystick) return fail("no wheel is open");
  const bool init = SDL_WasInit(SDL_INIT_HAPTIC) == 0;
  if (init && SDL_InitSubSystem(SDL_INIT_HAPTIC) != 0)
    return fail(std::string("SDL haptic subsystem unavailable: ") + SDL_GetError());
  // Every refusal below gives the subsystem back.
  const auto refuse = [&](SDL_Haptic* h, const std::string& w) {
    if (h) SDL_HapticClose(h);
    if (init) SDL_QuitSubSystem(SDL_INIT_HAPTIC);
    return fail(w);
  };
  if (SDL_JoystickIsHaptic(joystick) != 1) return refuse(nullptr, "\"" + name + "\" has no force feedback");
  SDL_Haptic* haptic = SDL_HapticOpenFromJoystick(joystick);
  if (!haptic) return refuse(nullptr, "cannot open \"" + name + "\"'s force feedback: " + SDL_GetError());
  if ((SDL_HapticQuery(haptic) & SDL_HAPTIC_CONSTANT) == 0)
    return refuse(haptic, "\"" + name + "\" has no constant-force effect");
  // The device's own gain and autocenter off where it has them: the torque equation is the whole force.
  if (SDL_HapticQuery(haptic) & SDL_HAPTIC_GAIN) SDL_HapticSetGain(haptic, 100);
  if (SDL_HapticQuery(haptic) & SDL_HAPTIC_AUTOCENTER) SDL_HapticSetAutocenter(haptic, 0);
  SDL_HapticEffect e{};
  e.type = SDL_HAPTIC_CONSTANT;
  e.constant.direction.type = SDL_HAPTIC_CARTESIAN;
  e.constant.direction.dir[0] = 1;
  e.constant.length = SDL_HAPTIC_INFINITY;
  e.constant.level = 0;
  const int id = SDL_HapticNewEffect(haptic, &e);
  if (id < 0) return refuse(haptic, "cannot create \"" + name + "\"'s constant-force effect: " + std::string(SDL_GetError()));
  return std::make_unique<SdlHaptic>(haptic, id, e, init);
}

}  // namespace platoon::input
