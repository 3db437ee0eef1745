// libFuzzer target: the session file, as `platoon check` and `platoon run` read it: LoadSessionText (TOML,
// every table, scenario [[event]]s), ValidateSession (attach_to, recorder paths, events, the [road]) and
// each sensor node's [[node.sensor]] tables (sensors::ReadSensorSpec). Bad input must give a ConfigError
// with a message; any other exception or a crash is a bug. The text stands in for a file in configs/, so
// that a road file named as in the configs there ("roads/ring.toml") is found and loaded too.
#include "platoon/config/session.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const config::SessionDef session = config::LoadSessionText(text, PLATOON_SOURCE_DIR "/configs/fuzz.toml");
    config::ValidateSession(session);
    for (const auto& node : session.nodes)
      for (const auto& table : node.sensors) (void)sensors::ReadSensorSpec(table);
  } catch (const config::ConfigError& e) {
    if (std::string(e.what()).empty()) {
      std::fprintf(stderr, "fuzz_session: ConfigError without a message\n");
      std::abort();
    }
  }
  return 0;
}
