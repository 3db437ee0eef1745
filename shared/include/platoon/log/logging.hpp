#pragma once
/// Logging set-up. Processes own spdlog and create named loggers ("server", "node.alpha");
/// libraries never log on their own, they are handed a logger or return counters.

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace platoon::log {

/// Parses "trace|debug|info|warn|error|critical|off"; throws std::invalid_argument naming the choices.
spdlog::level::level_enum ParseLevel(const std::string& level);

/// Creates (or replaces) a named logger writing to stderr with platoon's line format.
std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const std::string& level);

}  // namespace platoon::log
