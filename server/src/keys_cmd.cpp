#include "keys_cmd.hpp"

#include <cstdio>

namespace platoon::launcher {

CLI::App* AddKeysCommand(CLI::App& app, KeysOptions& options) {
  auto* cmd = app.add_subcommand("keys", "(being written)");
  cmd->add_option("args", options.args, "Arguments");
  return cmd;
}

int RunKeys(const KeysOptions&) {
  std::fprintf(stderr, "platoon keys: not built yet\n");
  return 2;
}

}  // namespace platoon::launcher
