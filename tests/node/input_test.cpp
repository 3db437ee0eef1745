// Tests for node/input: scripted input files, axis mapping, the keyboard driver and SDL reading
// (through SDL's virtual joystick, so no hardware is needed).
#include "platoon/input/axis_mapping.hpp"
#include "platoon/input/scripted_input.hpp"
#include "platoon/input/sdl_input.hpp"

#include <SDL.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

using platoon::config::ConfigError;
using platoon::config::Table;
using platoon::input::AxisMappingDef;
using platoon::input::DefaultAxisMappingDef;
using platoon::input::DriverKey;
using platoon::input::KeyboardDriver;
using platoon::input::MapAxes;
using platoon::input::ReadAxisMapping;
using platoon::input::ScriptedInput;
using platoon::input::ScriptError;
using platoon::input::SdlInput;
using platoon::vehicle::VehicleInput;

namespace {

std::string ScriptErrorOf(const std::string& text) {
  try {
    ScriptedInput::Parse(text, "drive.csv");
  } catch (const ScriptError& e) {
    return e.what();
  }
  return "";
}

std::string InputConfigErrorOf(const std::string& text) {
  try {
    ReadAxisMapping(*Table::ParseText(text, "seat.toml").Sub("input"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

AxisMappingDef MappingOf(const std::string& text) { return ReadAxisMapping(*Table::ParseText(text, "seat.toml").Sub("input")); }

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Scripted input

TEST_CASE("scripted input: parses rows with header, comments and blank lines") {
  const auto s = ScriptedInput::Parse(
      "# lane change at 10 m/s\n"
      "time_s, steer, throttle, brake\n"
      "\n"
      "0, 0, 0.3, 0      # cruise\n"
      "2.0, 0.2, 0.3, 0\r\n"
      "  4 ,-0.2,0.3,0\n"
      "6, 0, 0, +1\n",
      "drive.csv");
  REQUIRE(s.Rows().size() == 4);
  CHECK(s.EndS() == 6.0);
  CHECK(s.Rows()[2].input.steer == -0.2);
  CHECK(s.Rows()[3].input.brake == 1.0);
  CHECK(s.Source() == "drive.csv");
}

TEST_CASE("scripted input: interpolates linearly and holds outside the rows") {
  const auto s = ScriptedInput::Parse("0,0,0,0\n1,1,0.5,0\n3,-1,0.5,1\n", "drive.csv");
  CHECK(s.At(-5) == VehicleInput{0, 0, 0});
  CHECK(s.At(0) == VehicleInput{0, 0, 0});
  CHECK(s.At(0.5).steer == doctest::Approx(0.5));
  CHECK(s.At(0.5).throttle == doctest::Approx(0.25));
  CHECK(s.At(1) == VehicleInput{1, 0.5, 0});
  CHECK(s.At(2).steer == doctest::Approx(0.0));
  CHECK(s.At(2).brake == doctest::Approx(0.5));
  CHECK(s.At(3) == VehicleInput{-1, 0.5, 1});
  CHECK(s.At(100) == VehicleInput{-1, 0.5, 1});
}

TEST_CASE("scripted input: a single row holds for all time") {
  const auto s = ScriptedInput::Parse("time_s,steer,throttle,brake\n5, 0.1, 0.2, 0\n", "drive.csv");
  CHECK(s.EndS() == 5.0);
  CHECK(s.At(0) == VehicleInput{0.1, 0.2, 0});
  CHECK(s.At(9) == VehicleInput{0.1, 0.2, 0});
}

TEST_CASE("scripted input: every error names file, line and reason") {
  // Non-numeric value.
  auto e = ScriptErrorOf("0,0,0,0\n1,abc,0,0\n");
  CHECK(Contains(e, "drive.csv:2:"));
  CHECK(Contains(e, "steer: expected a number, got \"abc\""));
  // A misspelt header on the first line is reported as such.
  e = ScriptErrorOf("# c\ntime,steer,throttle,brake\n0,0,0,0\n");
  CHECK(Contains(e, "drive.csv:2:"));
  CHECK(Contains(e, "time_s: expected a number, got \"time\""));
  CHECK(Contains(e, "header must read"));
  // Header not first.
  e = ScriptErrorOf("0,0,0,0\ntime_s,steer,throttle,brake\n");
  CHECK(Contains(e, "drive.csv:2:"));
  CHECK(Contains(e, "only allowed as the first row"));
  // Wrong column count, too few and too many (a trailing comma counts).
  e = ScriptErrorOf("0,0,0,0\n\n1,0,0\n");
  CHECK(Contains(e, "drive.csv:3:"));
  CHECK(Contains(e, "expected 4 columns"));
  CHECK(Contains(e, "got 3"));
  e = ScriptErrorOf("0,0,0,0,\n");
  CHECK(Contains(e, "drive.csv:1:"));
  CHECK(Contains(e, "got 5"));
  // Empty field.
  e = ScriptErrorOf("0,,0,0\n");
  CHECK(Contains(e, "drive.csv:1: steer: expected a number, got \"\""));
  // Not finite.
  e = ScriptErrorOf("0,0,nan,0\n");
  CHECK(Contains(e, "drive.csv:1: throttle: expected a number"));
  // Out of range, one per column.
  e = ScriptErrorOf("0,1.5,0,0\n");
  CHECK(Contains(e, "drive.csv:1: steer: expected a number in [-1, 1]"));
  CHECK(Contains(e, "got 1.5"));
  e = ScriptErrorOf("0,0,0,0\n# x\n1,0,-1.5,0\n");
  CHECK(Contains(e, "drive.csv:3: throttle: expected a number in [-1, 1] (negative: reverse gear), got -1.5"));
  e = ScriptErrorOf("0,0,0,2\n");
  CHECK(Contains(e, "drive.csv:1: brake: expected a number in [0, 1], got 2"));
  // Time not strictly increasing (equal and backwards).
  e = ScriptErrorOf("0,0,0,0\n1,0,0,0\n1,0,0,0\n");
  CHECK(Contains(e, "drive.csv:3: time_s:"));
  CHECK(Contains(e, "strictly increasing"));
  e = ScriptErrorOf("0,0,0,0\n2,0,0,0\n1.5,0,0,0\n");
  CHECK(Contains(e, "drive.csv:3:"));
  CHECK(Contains(e, "previous row's 2 s"));
  // No rows at all.
  e = ScriptErrorOf("# nothing\ntime_s,steer,throttle,brake\n");
  CHECK(Contains(e, "drive.csv:2: expected at least one row"));
}

TEST_CASE("scripted input: Load reads a file and names it in errors") {
  const std::string path = "/tmp/platoon_input_test_script.csv";
  {
    std::ofstream out(path);
    out << "time_s,steer,throttle,brake\n0,0,0,0\n1,0,1,0\n2,0,1,x\n";
  }
  try {
    ScriptedInput::Load(path);
    FAIL("expected a ScriptError");
  } catch (const ScriptError& e) {
    CHECK(Contains(e.what(), path + ":4: brake: expected a number, got \"x\""));
  }
  {
    std::ofstream out(path);
    out << "0,0,0,0\n1,0,1,0\n";
  }
  CHECK(ScriptedInput::Load(path).At(0.5).throttle == doctest::Approx(0.5));
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(ScriptedInput::Load(path), doctest::Contains("cannot open"), ScriptError);
}

// ---------------------------------------------------------------------------------------------
// Axis mapping

TEST_CASE("axis mapping: wheel centre, full left and full right (left positive)") {
  AxisMappingDef d = DefaultAxisMappingDef();
  const std::vector<int16_t> rest = {0, 0, 32767, 32767};
  CHECK(MapAxes(d, rest) == VehicleInput{0, 0, 0});
  CHECK(MapAxes(d, {-32768, 0, 32767, 32767}).steer == 1.0);
  CHECK(MapAxes(d, {32767, 0, 32767, 32767}).steer == -1.0);
  CHECK(MapAxes(d, {-16384, 0, 32767, 32767}).steer == doctest::Approx(0.5));
  CHECK(MapAxes(d, {16384, 0, 32767, 32767}).steer == doctest::Approx(-0.5).epsilon(1e-4));
  d.steer_invert = true;
  CHECK(MapAxes(d, {-32768, 0, 32767, 32767}).steer == -1.0);
}

TEST_CASE("axis mapping: pedals resting at +32767 and pressed toward -32768") {
  AxisMappingDef d = DefaultAxisMappingDef();
  d.pedal_deadzone = 0;
  CHECK(MapAxes(d, {0, 0, 32767, 32767}).throttle == 0.0);
  CHECK(MapAxes(d, {0, 0, -32768, 32767}).throttle == 1.0);
  CHECK(MapAxes(d, {0, 0, 32767, -32768}).brake == 1.0);
  CHECK(MapAxes(d, {0, 0, 0, 32767}).throttle == doctest::Approx(0.5).epsilon(1e-4));
  // Inverted: the rest and full ends swap.
  d.brake_invert = true;
  CHECK(MapAxes(d, {0, 0, 32767, -32768}).brake == 0.0);
  CHECK(MapAxes(d, {0, 0, 32767, 32767}).brake == 1.0);
}

TEST_CASE("axis mapping: deadzones and the steering curve") {
  AxisMappingDef d = DefaultAxisMappingDef();
  d.steer_deadzone = 0.1;
  d.pedal_deadzone = 0.05;
  // Inside the dead band: exactly neutral (and never -0.0).
  const auto small = MapAxes(d, {3000, 0, 32767 - 1500, 32767});
  CHECK(small.steer == 0.0);
  CHECK(!std::signbit(small.steer));
  CHECK(small.throttle == 0.0);
  // Outside: rescaled so the ends still reach 1.
  CHECK(MapAxes(d, {-32768, 0, -32768, 32767}) == VehicleInput{1, 1, 0});
  CHECK(MapAxes(d, {-(32768 * 55 / 100), 0, 32767, 32767}).steer == doctest::Approx(0.5).epsilon(1e-3));
  // Gamma 2 halves... squares half travel.
  d.steer_deadzone = 0;
  d.steer_gamma = 2;
  CHECK(MapAxes(d, {-16384, 0, 32767, 32767}).steer == doctest::Approx(0.25));
}

TEST_CASE("axis mapping: missing axes read neutral, buttons press pedals") {
  AxisMappingDef d = DefaultAxisMappingDef();
  CHECK(MapAxes(d, {}) == VehicleInput{0, 0, 0});
  CHECK(MapAxes(d, {-32768}) == VehicleInput{1, 0, 0});
  d.throttle_axis = -1;
  d.throttle_button = 1;
  d.brake_axis = -1;
  d.brake_button = 0;
  CHECK(MapAxes(d, {0}, {false, true}) == VehicleInput{0, 1, 0});
  CHECK(MapAxes(d, {0}, {true, false}) == VehicleInput{0, 0, 1});
}

TEST_CASE("axis mapping: [input] table over defaults, with pedal_rest / pedal_full and overrides") {
  const auto d = MappingOf(R"(
[input]
device_name = "G27"
steer_axis = 0
throttle_axis = 1
brake_axis = 2
pedal_rest = 32767
pedal_full = -32768
brake_rest = -32768
brake_full = 32767
steer_deadzone = 0.05
steer_gamma = 1.5
key_left = "a"
key_right = "D"
key_throttle = "w"
key_brake = "left shift"
)");
  CHECK(d.device_name == "G27");
  CHECK(d.throttle_axis == 1);
  CHECK(d.throttle_rest == 32767);
  CHECK(d.throttle_full == -32768);
  CHECK(d.brake_rest == -32768);
  CHECK(d.brake_full == 32767);
  CHECK(d.steer_gamma == 1.5);
  CHECK(d.key_left == "A");
  CHECK(d.key_brake == "Left Shift");
  // No [input] keys: the defaults.
  const auto e = MappingOf("[input]\n");
  CHECK(e.steer_axis == 0);
  CHECK(e.throttle_axis == 2);
  CHECK(e.brake_axis == 3);
  CHECK(e.throttle_rest == 32767);
  CHECK(e.key_throttle == "Up");
}

TEST_CASE("axis mapping: config errors name file, line and key") {
  auto e = InputConfigErrorOf("[input]\nsteer_axis = 0\nsteer_axs = 1\n");
  CHECK(Contains(e, "seat.toml:3"));
  CHECK(Contains(e, "steer_axs"));
  e = InputConfigErrorOf("[input]\n\nsteer_deadzone = 1.5\n");
  CHECK(Contains(e, "seat.toml:3"));
  CHECK(Contains(e, "steer_deadzone"));
  e = InputConfigErrorOf("[input]\npedal_rest = 40000\n");
  CHECK(Contains(e, "seat.toml:2"));
  CHECK(Contains(e, "pedal_rest"));
  e = InputConfigErrorOf("[input]\npedal_rest = 100\npedal_full = 100\n");
  CHECK(Contains(e, "seat.toml:3"));
  CHECK(Contains(e, "pedal_full"));
  e = InputConfigErrorOf("[input]\nsteer_axis = 2\n");
  CHECK(Contains(e, "seat.toml:2"));
  CHECK(Contains(e, "also used by a pedal"));
  e = InputConfigErrorOf("[input]\nkey_left = \"Lft\"\n");
  CHECK(Contains(e, "seat.toml:2"));
  CHECK(Contains(e, "key_left"));
  CHECK(Contains(e, "got \"Lft\""));
  e = InputConfigErrorOf("[input]\napi = \"directx\"\n");
  CHECK(Contains(e, "seat.toml:2"));
  CHECK(Contains(e, "api"));
  e = InputConfigErrorOf("[input]\nsteer_centre = 32767\n");
  CHECK(Contains(e, "steer_centre"));
}

// ---------------------------------------------------------------------------------------------
// Keyboard driver

TEST_CASE("keyboard driver: steering ramps at its rate and returns to centre") {
  AxisMappingDef d = DefaultAxisMappingDef();
  d.keyboard_steer_rate_per_s = 2.0;
  d.keyboard_centre_rate_per_s = 4.0;
  KeyboardDriver k(d);
  CHECK(k.Update(0.1) == VehicleInput{0, 0, 0});
  k.Key(DriverKey::kLeft, true);
  CHECK(k.Update(0.1).steer == doctest::Approx(0.2));
  CHECK(k.Update(0.1).steer == doctest::Approx(0.4));
  CHECK(k.Update(0.0).steer == doctest::Approx(0.4));  // no time, no change
  for (int i = 0; i < 10; ++i) k.Update(0.1);
  CHECK(k.Current().steer == 1.0);  // saturates at full lock
  // Released: back to centre at the centre rate, exactly 0 and not past it.
  k.Key(DriverKey::kLeft, false);
  CHECK(k.Update(0.1).steer == doctest::Approx(0.6));
  k.Update(0.1);
  const double s = k.Update(0.1).steer;
  CHECK(s == 0.0);
  CHECK(!std::signbit(s));
  // Right steers negative; both keys together centre.
  k.Key(DriverKey::kRight, true);
  CHECK(k.Update(0.25).steer == doctest::Approx(-0.5));
  k.Key(DriverKey::kLeft, true);
  CHECK(k.Update(0.1).steer == doctest::Approx(-0.1));
}

TEST_CASE("keyboard driver: reversing crosses centre at least at the centre rate") {
  AxisMappingDef d = DefaultAxisMappingDef();
  d.keyboard_steer_rate_per_s = 1.0;
  d.keyboard_centre_rate_per_s = 5.0;
  KeyboardDriver k(d);
  k.Key(DriverKey::kLeft, true);
  k.Update(0.5);
  k.Key(DriverKey::kLeft, false);
  k.Key(DriverKey::kRight, true);
  CHECK(k.Update(0.1).steer == doctest::Approx(0.0));
  CHECK(k.Update(0.1).steer == doctest::Approx(-0.1));
}

TEST_CASE("keyboard driver: throttle and brake keys ramp to their maxima and release") {
  AxisMappingDef d = DefaultAxisMappingDef();
  d.keyboard_pedal_rate_per_s = 5.0;
  d.keyboard_max_throttle = 0.6;
  KeyboardDriver k(d);
  k.Key(DriverKey::kThrottle, true);
  CHECK(k.Update(0.1).throttle == doctest::Approx(0.5));
  CHECK(k.Update(0.1).throttle == doctest::Approx(0.6));
  k.Key(DriverKey::kThrottle, false);
  k.Key(DriverKey::kBrake, true);
  const auto in = k.Update(0.1);
  CHECK(in.throttle == doctest::Approx(0.1));
  CHECK(in.brake == doctest::Approx(0.5));
  k.Reset();
  CHECK(k.Current() == VehicleInput{0, 0, 0});
  // Rate 0: instant.
  d.keyboard_pedal_rate_per_s = 0;
  KeyboardDriver instant(d);
  instant.Key(DriverKey::kBrake, true);
  CHECK(instant.Update(0.001).brake == 1.0);
}

// ---------------------------------------------------------------------------------------------
// SDL

namespace {

// SDL's joystick subsystem with a virtual wheel attached; ok() false (with why()) when the
// environment cannot provide one.
class VirtualWheel {
 public:
  VirtualWheel(int axes, int buttons, SDL_JoystickType type = SDL_JOYSTICK_TYPE_WHEEL) {
    SDL_SetHint(SDL_HINT_JOYSTICK_ALLOW_BACKGROUND_EVENTS, "1");
    if (SDL_InitSubSystem(SDL_INIT_JOYSTICK) != 0) {
      why_ = std::string("SDL_InitSubSystem(SDL_INIT_JOYSTICK) failed: ") + SDL_GetError();
      return;
    }
    inited_ = true;
    index_ = SDL_JoystickAttachVirtual(type, axes, buttons, 0);
    if (index_ < 0) {
      why_ = std::string("SDL_JoystickAttachVirtual failed: ") + SDL_GetError();
      return;
    }
    joystick_ = SDL_JoystickOpen(index_);
    if (!joystick_) why_ = std::string("SDL_JoystickOpen(virtual) failed: ") + SDL_GetError();
  }
  ~VirtualWheel() {
    Detach();
    if (inited_) SDL_QuitSubSystem(SDL_INIT_JOYSTICK);
  }
  bool ok() const { return joystick_ != nullptr; }
  const std::string& why() const { return why_; }
  void Axis(int axis, int16_t value) { SDL_JoystickSetVirtualAxis(joystick_, axis, value); }
  void Button(int button, bool down) { SDL_JoystickSetVirtualButton(joystick_, button, down ? 1 : 0); }
  void Detach() {
    if (joystick_) {
      SDL_JoystickClose(joystick_);
      SDL_JoystickDetachVirtual(index_);
      joystick_ = nullptr;
    }
  }

 private:
  bool inited_ = false;
  int index_ = -1;
  SDL_Joystick* joystick_ = nullptr;
  std::string why_;
};

}  // namespace

TEST_CASE("sdl input: reads a virtual wheel's axes through the mapping") {
  VirtualWheel wheel(4, 2);
  if (!wheel.ok()) {
    MESSAGE("skipped: no SDL virtual joystick here: " << wheel.why());
    return;
  }
  AxisMappingDef d = DefaultAxisMappingDef();
  d.device_name = "virtual";  // SDL names it "Virtual Wheel"
  d.pedal_deadzone = 0;
  d.keyboard_fallback = false;
  std::string error;
  auto in = SdlInput::Open(d, &error);
  REQUIRE_MESSAGE(in, error);
  CHECK_FALSE(in->UsingKeyboard());
  CHECK(Contains(in->DeviceName(), "Virtual"));
  CHECK(in->Note().empty());

  // Wheel at rest, pedals released.
  wheel.Axis(0, 0);
  wheel.Axis(2, 32767);
  wheel.Axis(3, 32767);
  CHECK(in->Poll(0.01) == VehicleInput{0, 0, 0});
  REQUIRE(in->RawAxes().size() == 4);
  CHECK(in->RawAxes()[2] == 32767);

  // Full left, half throttle, full brake.
  wheel.Axis(0, -32768);
  wheel.Axis(2, 0);
  wheel.Axis(3, -32768);
  const auto v = in->Poll(0.01);
  CHECK(v.steer == 1.0);
  CHECK(v.throttle == doctest::Approx(0.5).epsilon(1e-4));
  CHECK(v.brake == 1.0);

  // Full right.
  wheel.Axis(0, 32767);
  CHECK(in->Poll(0.01).steer == -1.0);

  // Unplugged: neutral input and a note saying so.
  wheel.Detach();
  CHECK(in->Poll(0.01) == VehicleInput{0, 0, 0});
  CHECK(Contains(in->Note(), "unplugged"));
}

TEST_CASE("sdl input: virtual wheel buttons, and a device short of axes is a set-up error") {
  VirtualWheel wheel(2, 2);
  if (!wheel.ok()) {
    MESSAGE("skipped: no SDL virtual joystick here: " << wheel.why());
    return;
  }
  AxisMappingDef d = DefaultAxisMappingDef();
  d.device_name = "Virtual";
  std::string error;
  CHECK(SdlInput::Open(d, &error) == nullptr);
  CHECK(Contains(error, "has 2 axes"));
  CHECK(Contains(error, "need 4"));

  d.throttle_axis = 1;
  d.brake_axis = -1;
  d.brake_button = 1;
  auto in = SdlInput::Open(d, &error);
  REQUIRE_MESSAGE(in, error);
  wheel.Axis(1, 32767);
  wheel.Button(1, true);
  CHECK(in->Poll(0.01) == VehicleInput{0, 0, 1});
}

TEST_CASE("sdl input: a virtual gamepad through the game-controller layout (triggers as pedals)") {
  VirtualWheel pad(SDL_CONTROLLER_AXIS_MAX, SDL_CONTROLLER_BUTTON_MAX, SDL_JOYSTICK_TYPE_GAMECONTROLLER);
  if (!pad.ok()) {
    MESSAGE("skipped: no SDL virtual game controller here: " << pad.why());
    return;
  }
  const AxisMappingDef d = MappingOf(R"(
[input]
api = "gamecontroller"
device_name = "virtual"
steer_axis = 0      # left stick x
throttle_axis = 5   # right trigger
brake_axis = 4      # left trigger
pedal_rest = 0
pedal_full = 32767
steer_deadzone = 0.1
keyboard_fallback = false
)");
  std::string error;
  auto in = SdlInput::Open(d, &error);
  REQUIRE_MESSAGE(in, error);
  CHECK(Contains(in->DeviceName(), "Virtual"));
  pad.Axis(SDL_CONTROLLER_AXIS_LEFTX, 32767);
  pad.Axis(SDL_CONTROLLER_AXIS_TRIGGERRIGHT, 32767);
  // SDL maps a trigger's joystick range -32768..32767 to 0..32767: -32768 is released.
  pad.Axis(SDL_CONTROLLER_AXIS_TRIGGERLEFT, -32768);
  const auto v = in->Poll(0.01);
  CHECK(v.steer == -1.0);
  CHECK(v.throttle == 1.0);
  CHECK(v.brake == 0.0);
  REQUIRE(in->RawAxes().size() == static_cast<size_t>(SDL_CONTROLLER_AXIS_MAX));
  CHECK(in->RawAxes()[SDL_CONTROLLER_AXIS_TRIGGERRIGHT] == 32767);
}

TEST_CASE("sdl input: with no matching device it falls back to the keyboard, or fails when told to") {
  // Keep the joystick subsystem up for the whole case so both opens see the same devices.
  if (SDL_InitSubSystem(SDL_INIT_JOYSTICK) != 0) {
    MESSAGE("skipped: SDL joystick subsystem unavailable: " << SDL_GetError());
    return;
  }
  AxisMappingDef d = DefaultAxisMappingDef();
  d.device_name = "no such wheel 42";
  std::string error;
  auto in = SdlInput::Open(d, &error);
  REQUIRE_MESSAGE(in, error);
  CHECK(in->UsingKeyboard());
  CHECK(in->DeviceName() == "keyboard");
  CHECK(Contains(in->Note(), "no joystick matching \"no such wheel 42\""));
  if (SDL_WasInit(SDL_INIT_VIDEO) == 0) {
    // Headless: no window for key events, so neutral input, and the note says why.
    CHECK(in->Poll(0.1) == VehicleInput{0, 0, 0});
    CHECK(Contains(in->Note(), "no SDL video"));
  }
  in.reset();

  d.keyboard_fallback = false;
  CHECK(SdlInput::Open(d, &error) == nullptr);
  CHECK(Contains(error, "keyboard_fallback is off"));
  SDL_QuitSubSystem(SDL_INIT_JOYSTICK);
}

TEST_CASE("sdl input: keyboard mode with SDL video reads key state and stays neutral with no key down") {
  // The dummy video driver gives a window-capable SDL without a display.
  SDL_SetHint(SDL_HINT_VIDEODRIVER, "dummy");
  if (SDL_InitSubSystem(SDL_INIT_VIDEO | SDL_INIT_JOYSTICK) != 0) {
    MESSAGE("skipped: SDL dummy video unavailable: " << SDL_GetError());
    return;
  }
  AxisMappingDef d = DefaultAxisMappingDef();
  d.device_name = "no such wheel 42";
  std::string error;
  auto in = SdlInput::Open(d, &error);
  REQUIRE_MESSAGE(in, error);
  CHECK(in->UsingKeyboard());
  CHECK(in->Poll(0.1) == VehicleInput{0, 0, 0});
  CHECK_FALSE(Contains(in->Note(), "no SDL video"));
  in.reset();
  SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_JOYSTICK);
}
