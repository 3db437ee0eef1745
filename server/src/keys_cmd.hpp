#pragma once
// `platoon keys` (server/src/keys_cmd.cpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// Options of `platoon keys`.
struct KeysOptions {
  std::vector<std::string> args;  ///< Positional arguments.
};

/// Adds the `keys` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddKeysCommand(CLI::App& app, KeysOptions& options);
/// Runs it; exit code 0 done, 2 usage.
int RunKeys(const KeysOptions& options);

}  // namespace platoon::launcher
