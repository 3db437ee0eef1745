// libFuzzer target: the driver seat's input script (input::ScriptedInput::Parse, which Load calls on a
// file's contents; docs/INPUTS.md), then sampling it as the seat does. Bad input must give a ScriptError
// with a message; any other exception or a crash is a bug.
#include "platoon/input/scripted_input.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto script = input::ScriptedInput::Parse(text, "fuzz.script");
    const double end = script.EndS();
    for (int i = -1; i <= 9; ++i) {
      const auto in = script.At(end * i / 8.0);
      if (!std::isfinite(in.steer) || !std::isfinite(in.throttle) || !std::isfinite(in.brake)) {
        std::fprintf(stderr, "fuzz_script: a parsed script gives a non-finite input\n");
        std::abort();
      }
    }
  } catch (const input::ScriptError& e) {
    if (std::string(e.what()).empty()) {
      std::fprintf(stderr, "fuzz_script: ScriptError without a message\n");
      std::abort();
    }
  }
  return 0;
}
