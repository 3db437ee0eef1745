#pragma once
/// Finding a running session's server (docs/EXPERIMENTS.md, "Finding the server"). `platoon ctl`, the
/// viewer and the Python package ask, in this order: the --server HOST:PORT (and --port) flags, the
/// --config session file, the --session NAME of a running session, the environment variable
/// PLATOON_SERVER (HOST:PORT), the one session `platoon run` announced on this machine in a discovery
/// file, and last 127.0.0.1:7400.
///
/// A discovery file is written by `platoon run` when it starts the server on this machine, in
/// DiscoveryDir() (`$XDG_RUNTIME_DIR/platoon/`, else `/tmp/platoon-<uid>/`; mode 0700), named
/// `<session>.<pid>.server` (mode 0600), and removed when the session ends. Its text is TOML:
///
///     # A platoon session running on this machine, written by `platoon run` ...
///     format = 1
///     session = "demo"
///     host = "127.0.0.1"
///     control_port = 7400
///     pid = 12345
///     session_file = "/home/lab/configs/demo.toml"
///
/// A file whose pid is no longer a live process (a killed run) is stale and ignored.
///
/// ResolveServer is the pure order (given the flags, the environment's value and the live sessions);
/// FindServer adds what it reads from this machine (PLATOON_SERVER, the discovery folder).

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::session {

/// The control port a server binds unless told otherwise ([server] control_port). Typical 7400.
inline constexpr uint16_t kDefaultControlPort = 7400;
/// The host a client asks when nothing names one.
inline constexpr const char* kDefaultServerHost = "127.0.0.1";
/// The environment variable that names a server as HOST:PORT, e.g. PLATOON_SERVER=lab-server:7400.
inline constexpr const char* kServerEnvironmentVariable = "PLATOON_SERVER";
/// The ending of discovery file names.
inline constexpr const char* kDiscoverySuffix = ".server";
/// The discovery file format this code writes and reads.
inline constexpr int kDiscoveryFormat = 1;

/// A server address, a flag or discovery file a client cannot use, or several running sessions to choose
/// from; what() is a message a user can act on (callers exit with the usage code, 2).
class DiscoveryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where a server's control socket is.
struct ServerEndpoint {
  std::string host;   ///< Host name or IPv4 address, e.g. "127.0.0.1", "lab-server".
  uint16_t port = 0;  ///< Control port, 1..65535; 0 only in a HOST without port (ParseServerEndpoint).
  /// "HOST:PORT".
  std::string Text() const { return host + ":" + std::to_string(port); }
  bool operator==(const ServerEndpoint&) const = default;
};

/// Parses "HOST:PORT" (a host name or IPv4 address, a port in 1..65535); when `port_optional`, a bare
/// "HOST" too (port 0). Throws DiscoveryError without a prefix, e.g. `port 99999 is out of range
/// 1..65535`, `no port in "lab" (expected HOST:PORT, e.g. 127.0.0.1:7400 or lab-server:7400)`.
ServerEndpoint ParseServerEndpoint(const std::string& text, bool port_optional = false);

/// One running session, as its discovery file says.
struct DiscoveryEntry {
  std::string session;       ///< Session name ([session] name), e.g. "demo".
  ServerEndpoint control;    ///< The server's control socket as a client on this machine reaches it (the port bound).
  int pid = 0;               ///< The `platoon run` process that owns the session (and the file).
  std::string session_file;  ///< Absolute path of the session file it runs.
  std::string path;          ///< The discovery file it was read from ("" before it is written).
};

/// The discovery file's text (TOML, the format above).
std::string FormatDiscoveryFile(const DiscoveryEntry& entry);
/// Reads a discovery file's text; `path` names it in messages and is kept in the entry. Throws
/// DiscoveryError "PATH:LINE: KEY: what is wrong" for bad TOML, a missing or ill-typed key, a port out of
/// 1..65535, a pid <= 0 or a newer format.
DiscoveryEntry ParseDiscoveryFile(const std::string& text, const std::string& path);

/// The discovery folder for an XDG_RUNTIME_DIR value (nullptr or "" when unset) and a user id:
/// "<xdg>/platoon", else "/tmp/platoon-<uid>".
std::string DiscoveryDirFor(const char* xdg_runtime_dir, uid_t uid);
/// The discovery folder of this process (its XDG_RUNTIME_DIR and effective uid).
std::string DiscoveryDir();
/// The file name a session's discovery file gets: "<session>.<pid>.server", characters other than
/// letters, digits, '-', '_' and '.' in the name made '_'.
std::string DiscoveryFileName(const std::string& session, int pid);

/// Whether a process id names a live process (not a zombie): the test of a discovery file's owner.
using PidAlive = std::function<bool(int pid)>;
/// PidAlive of this machine: kill(pid, 0), and not a zombie in /proc.
bool ProcessAlive(int pid);

/// What a look into the discovery folder found.
struct DiscoveryScan {
  std::vector<DiscoveryEntry> live;   ///< Files whose owner lives, sorted by session name, then path.
  std::vector<DiscoveryEntry> stale;  ///< Files whose owner is gone (a killed run): to be ignored.
  std::vector<std::string> problems;  ///< Files that could not be read or parsed, and an unsafe folder, one message each.
};
/// Reads every "*.server" file of `dir` (a missing folder: nothing found). A folder that is not a private
/// folder of this user (a symlink, another owner, group or other access) is not read: one problem says so.
DiscoveryScan ScanDiscoveryDir(const std::string& dir, const PidAlive& alive = ProcessAlive);

/// Where a client's server address came from (ResolveServer's order).
enum class ServerSource : uint8_t { kFlag, kConfig, kSession, kEnvironment, kDiscovery, kDefault };

/// What a client was given and what runs here, for ResolveServer.
struct ServerQuery {
  std::string server_flag;          ///< --server: "HOST:PORT" (or "HOST" when port_optional); "" none.
  int port_flag = 0;                ///< --port, 1..65535; 0 none.
  bool port_optional = false;       ///< --server may omit the port (the viewer: --port, the config's, else 7400).
  std::optional<ServerEndpoint> config;  ///< --config's [session] server_host and [server] control_port.
  std::string config_path;          ///< The --config file, for messages.
  std::string session_flag;         ///< --session NAME: the running session of that name; "" none.
  std::optional<std::string> environment;  ///< PLATOON_SERVER's value, when set (an empty value counts as unset).
  std::vector<DiscoveryEntry> running;     ///< The live sessions of this machine (DiscoveryScan::live).
  std::string discovery_dir;        ///< Where they were looked for, for messages.
};

/// The server a client goes to, and why.
struct ResolvedServer {
  ServerEndpoint endpoint;
  ServerSource source = ServerSource::kDefault;
  /// The source in words, for every message that says where the client looked: "from --server", "from
  /// --config demo.toml", "from PLATOON_SERVER", "from the running session 'demo' (discovery file
  /// /run/user/1000/platoon/demo.4242.server)", "the default (no --server, --config or PLATOON_SERVER, and
  /// no session running in /run/user/1000/platoon)".
  std::string from;
  std::optional<DiscoveryEntry> session;  ///< kSession, kDiscovery: the running session.
  std::vector<std::string> notes;         ///< FindServer: discovery files it could not read (DiscoveryScan::problems).
};

/// The order of the file comment, given everything. Throws DiscoveryError for a bad --server, --port or
/// PLATOON_SERVER value, a --session no running session has (or several have), and several running
/// sessions with nothing to choose between them (the message lists them and says how to choose).
ResolvedServer ResolveServer(const ServerQuery& query);

/// ResolveServer with this machine's facts filled in: PLATOON_SERVER from the environment (when
/// `query.environment` is unset), the live sessions of DiscoveryDir() (when `query.running` is empty and
/// the order gets that far). Throws DiscoveryError.
ResolvedServer FindServer(ServerQuery query);

/// Makes `dir` (and its parents) when missing and checks that it is a folder only this user can enter
/// (mode 0700, not a symlink; a group- or world-open folder of this user is made 0700). Throws
/// DiscoveryError "will not write `what`: <folder> has mode 0755, not 0700 (...)" and the like.
void MakePrivateDir(const std::string& dir, const std::string& what);

/// The discovery file of a session this process runs: written (folder made private, file 0600, by rename
/// so a reader never sees half of it) on construction, removed on destruction.
class DiscoveryFile {
 public:
  /// Writes `entry` into `dir`, first removing the stale files there. Throws DiscoveryError naming the
  /// folder or file and why (an unsafe folder, no space, no permission).
  DiscoveryFile(const std::string& dir, DiscoveryEntry entry);
  ~DiscoveryFile();
  DiscoveryFile(const DiscoveryFile&) = delete;
  DiscoveryFile& operator=(const DiscoveryFile&) = delete;
  /// The file written.
  const std::string& Path() const { return entry_.path; }

 private:
  DiscoveryEntry entry_;
};

}  // namespace platoon::session
