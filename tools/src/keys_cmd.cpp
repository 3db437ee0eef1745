#include "keys_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/transport/security.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon keys";
namespace fs = std::filesystem;

std::string ServerFile(const std::string& dir, const char* suffix) { return (fs::path(dir) / "server").string() + suffix; }
std::string ClientFile(const std::string& dir, const std::string& name, const char* suffix) {
  return (fs::path(dir) / "clients" / name).string() + suffix;
}

// Names must be usable as file names and as ZAP user ids; "server" is the server's own pair.
bool CheckNames(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (!transport::ValidKeyName(n) || n == "server") {
      std::fprintf(stderr, "%s: \"%s\" is not a client key name: expected 1 to 64 letters, digits, '-', '_' or '.' "
                           "(not starting with '.', and not \"server\")\n", kMe, n.c_str());
      return false;
    }
    if (!seen.insert(n).second) {
      std::fprintf(stderr, "%s: \"%s\" is named twice\n", kMe, n.c_str());
      return false;
    }
  }
  return true;
}

// One client pair: clients/<name>.key (authorised by the server) and clients/<name>.key_secret (for its PC).
void WriteClient(const std::string& dir, const std::string& name) {
  const auto pair = transport::NewKeyPair();
  transport::WriteKeyFile(ClientFile(dir, name, transport::kSecretKeySuffix), pair.secret_key,
                          "platoon CURVE secret key of client \"" + name + "\": copy to its PC only, never share", true);
  transport::WriteKeyFile(ClientFile(dir, name, transport::kPublicKeySuffix), pair.public_key,
                          "platoon CURVE public key of client \"" + name + "\"", false);
  std::printf("  client %-16s %s\n", name.c_str(), pair.public_key.c_str());
}

int New(const KeysOptions& o) {
  if (o.names.empty()) {
    std::fprintf(stderr, "%s new: name the clients, e.g. --clients pc1,pc2,teacher\n", kMe);
    return config::cli::kExitUsage;
  }
  if (!CheckNames(o.names)) return config::cli::kExitUsage;
  const std::string op = o.operator_name.empty() ? o.names.front() : o.operator_name;
  if (std::find(o.names.begin(), o.names.end(), op) == o.names.end()) {
    std::fprintf(stderr, "%s new: --operator %s is not one of --clients\n", kMe, op.c_str());
    return config::cli::kExitUsage;
  }
  // Nothing is replaced: a key folder that exists is someone's keys.
  for (const auto& f : {ServerFile(o.dir, transport::kPublicKeySuffix), ServerFile(o.dir, transport::kSecretKeySuffix)})
    if (fs::exists(f)) {
      std::fprintf(stderr, "%s new: %s exists; keys are never overwritten (use `platoon keys add %s NAME` for more "
                           "clients, or another folder)\n", kMe, f.c_str(), o.dir.c_str());
      return config::cli::kExitUsage;
    }
  std::error_code ec;
  fs::create_directories(fs::path(o.dir) / "clients", ec);
  if (ec) {
    std::fprintf(stderr, "%s new: cannot create %s/clients: %s\n", kMe, o.dir.c_str(), ec.message().c_str());
    return 1;
  }
  try {
    const auto server = transport::NewKeyPair();
    transport::WriteKeyFile(ServerFile(o.dir, transport::kSecretKeySuffix), server.secret_key,
                            "platoon CURVE secret key of the server: keep it on the server PC only", true);
    transport::WriteKeyFile(ServerFile(o.dir, transport::kPublicKeySuffix), server.public_key,
                            "platoon CURVE public key of the server: every client PC needs it", false);
    std::printf("keys in %s:\n  server %-16s %s\n", o.dir.c_str(), "", server.public_key.c_str());
    for (const auto& n : o.names) WriteClient(o.dir, n);
  } catch (const transport::KeyError& e) {
    std::fprintf(stderr, "%s new: %s\n", kMe, e.what());
    return 1;
  }
  std::printf("\nPaste into the session file (paths are relative to it; adjust if the folder is elsewhere):\n\n"
              "[security]\n"
              "server_key = \"%s\"          # the server PC only\n"
              "server_public_key = \"%s\"\n"
              "clients = \"%s\"                 # every <name>.key here may connect\n"
              "key = \"%s\"   # this PC's client key (a [[node]] may name its own)\n"
              "operators = [\"%s\"]                     # may start, pause, set parameters, mark\n\n"
              "Give each PC the session file, %s and its own clients/<name>.key_secret (docs/DEPLOYMENT.md).\n",
              ServerFile(o.dir, transport::kSecretKeySuffix).c_str(), ServerFile(o.dir, transport::kPublicKeySuffix).c_str(),
              (fs::path(o.dir) / "clients").string().c_str(), ClientFile(o.dir, op, transport::kSecretKeySuffix).c_str(),
              op.c_str(), ServerFile(o.dir, transport::kPublicKeySuffix).c_str());
  return 0;
}

int Add(const KeysOptions& o) {
  if (o.names.empty()) {
    std::fprintf(stderr, "%s add: name at least one client, e.g. platoon keys add %s pc21\n", kMe, o.dir.c_str());
    return config::cli::kExitUsage;
  }
  if (!CheckNames(o.names)) return config::cli::kExitUsage;
  if (!fs::is_directory(fs::path(o.dir) / "clients")) {
    std::fprintf(stderr, "%s add: %s/clients is not a folder; start with `platoon keys new %s --clients ...`\n", kMe,
                 o.dir.c_str(), o.dir.c_str());
    return config::cli::kExitUsage;
  }
  for (const auto& n : o.names)
    for (const char* suffix : {transport::kPublicKeySuffix, transport::kSecretKeySuffix})
      if (fs::exists(ClientFile(o.dir, n, suffix))) {
        std::fprintf(stderr, "%s add: %s exists; keys are never overwritten\n", kMe, ClientFile(o.dir, n, suffix).c_str());
        return config::cli::kExitUsage;
      }
  try {
    for (const auto& n : o.names) WriteClient(o.dir, n);
  } catch (const transport::KeyError& e) {
    std::fprintf(stderr, "%s add: %s\n", kMe, e.what());
    return 1;
  }
  std::printf("a running server reads the client keys at start: restart it to admit the new ones\n");
  return 0;
}

int List(const KeysOptions& o) {
  try {
    const std::string server = ServerFile(o.dir, transport::kPublicKeySuffix);
    if (fs::exists(server))
      std::printf("server %-16s %s%s\n", "", transport::ReadKeyFile(server).c_str(),
                  fs::exists(ServerFile(o.dir, transport::kSecretKeySuffix)) ? "  (secret key here)" : "");
    for (const auto& [name, key] : transport::ReadAuthorisedKeys((fs::path(o.dir) / "clients").string()))
      std::printf("client %-16s %s%s\n", name.c_str(), key.c_str(),
                  fs::exists(ClientFile(o.dir, name, transport::kSecretKeySuffix)) ? "  (secret key here)" : "");
  } catch (const transport::KeyError& e) {
    std::fprintf(stderr, "%s list: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  }
  return 0;
}

}  // namespace

CLI::App* AddKeysCommand(CLI::App& app, KeysOptions& o) {
  auto* cmd = app.add_subcommand("keys", "CURVE keys for a session: the server's pair and one pair per client PC or node");
  cmd->footer(
      "Examples:\n"
      "  platoon keys new keys --clients teacher,pc1,pc2,pc3   server pair + one pair per client; prints [security]\n"
      "  platoon keys new keys --clients pc1,pc2,teacher --operator teacher\n"
      "  platoon keys add keys pc21 pc22                       more clients (restart the server to admit them)\n"
      "  platoon keys list keys                                names and public keys\n"
      "Files: DIR/server.key, DIR/server.key_secret (server PC only), DIR/clients/<name>.key (public; the server\n"
      "admits every one) and DIR/clients/<name>.key_secret (mode 0600; copy to that PC only). Nothing is ever\n"
      "overwritten. docs/DEPLOYMENT.md \"Keys and a classroom\".");
  cmd->require_subcommand(1);
  auto* create = cmd->add_subcommand("new", "Make a key folder: the server's pair and one pair per --clients name");
  create->add_option("DIR", o.dir, "Key folder to create, e.g. keys")->required();
  create->add_option("--clients", o.names, "Client key names, comma-separated, e.g. teacher,pc1,pc2")
      ->delimiter(',')
      ->required();
  create->add_option("--operator", o.operator_name,
                     "The client the printed [security] names as key and operator (default: the first of --clients)");
  create->callback([&o] { o.action = KeysAction::kNew; });
  auto* add = cmd->add_subcommand("add", "Add client key pairs to an existing key folder");
  add->add_option("DIR", o.dir, "Key folder made by `platoon keys new`")->required();
  add->add_option("NAME", o.names, "Client key names, e.g. pc21 pc22")->required();
  add->callback([&o] { o.action = KeysAction::kAdd; });
  auto* list = cmd->add_subcommand("list", "List the server's and the clients' public keys of a key folder");
  list->add_option("DIR", o.dir, "Key folder")->required();
  list->callback([&o] { o.action = KeysAction::kList; });
  return cmd;
}

int RunKeys(const KeysOptions& o) {
  if (!transport::CurveAvailable()) {
    std::fprintf(stderr, "%s: this libzmq has no CURVE (it needs libsodium; Debian's libzmq5 has it)\n", kMe);
    return 1;
  }
  switch (o.action) {
    case KeysAction::kNew: return New(o);
    case KeysAction::kAdd: return Add(o);
    case KeysAction::kList: return List(o);
    case KeysAction::kNone: break;
  }
  return config::cli::kExitUsage;
}

}  // namespace platoon::launcher
