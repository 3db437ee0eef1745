#pragma once
// `platoon keys`: CURVE key pairs for a session (tools/src/keys_cmd.cpp; docs/DEPLOYMENT.md "Keys and a
// classroom").
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace platoon::launcher {

/// What `platoon keys` does.
enum class KeysAction { kNone, kNew, kAdd, kList };

/// Options of `platoon keys`.
struct KeysOptions {
  KeysAction action = KeysAction::kNone;
  std::string dir;                  ///< The key folder, e.g. "keys" (server.key*, clients/<name>.key*).
  std::vector<std::string> names;   ///< new --clients / add NAME...: client key names, e.g. pc1, teacher.
  std::string operator_name;        ///< new --operator: the client key the snippet names as operator and key.
};

/// Adds the `keys` subcommand to `app`, filling `options` when it is parsed.
CLI::App* AddKeysCommand(CLI::App& app, KeysOptions& options);
/// Runs it; exit code 0 done, 1 a key file could not be written, 2 usage.
int RunKeys(const KeysOptions& options);

}  // namespace platoon::launcher
