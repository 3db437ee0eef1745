#include "platoon/log/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace platoon::log {

spdlog::level::level_enum ParseLevel(const std::string& level) {
  const auto parsed = spdlog::level::from_str(level);
  // from_str maps anything unknown to "off"; only "off" itself may mean off.
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("log level \"" + level +
                                "\": expected trace, debug, info, warn, error, critical or off");
  return parsed;
}

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const std::string& level) {
  spdlog::drop(name);
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_level(ParseLevel(level));
  logger->set_pattern("%H:%M:%S.%e %^%-5l%$ [%n] %v");
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace platoon::log
