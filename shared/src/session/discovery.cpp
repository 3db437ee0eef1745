#include "platoon/session/discovery.hpp"

#include "platoon/config/table.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace platoon::session {
namespace {

constexpr const char* kDiscoveryEndpointExample = " (expected HOST:PORT, e.g. 127.0.0.1:7400 or lab-server:7400)";
constexpr size_t kMaxDiscoveryFileBytes = 64 * 1024;  // a discovery file is a few hundred bytes

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string DiscoveryTomlQuote(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// Why `dir` is not a folder only this user can read and write, or "" when it is.
std::string DiscoveryDirUnsafe(const std::string& dir, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return dir + " is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a folder";
  if (st.st_uid != geteuid())
    return dir + " belongs to user " + std::to_string(st.st_uid) + ", not to this user (" + std::to_string(geteuid()) + ")";
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return dir + " has mode " + mode + ", not 0700";
  }
  return {};
}

// One session in a listing: "'demo' at 127.0.0.1:7400 (pid 4242, /home/lab/demo.toml)".
std::string DiscoveryListLine(const DiscoveryEntry& e) {
  return "'" + e.session + "' at " + e.control.Text() + " (pid " + std::to_string(e.pid) + ", " + e.session_file + ")";
}

std::string DiscoveryFrom(const DiscoveryEntry& e) {
  return "from the running session '" + e.session + "' (discovery file " + e.path + ")";
}

// Parses with ParseServerEndpoint, the message prefixed by where the text came from.
ServerEndpoint DiscoveryParseEndpoint(const std::string& what, const std::string& text, bool port_optional) {
  try {
    return ParseServerEndpoint(text, port_optional);
  } catch (const DiscoveryError& e) {
    throw DiscoveryError(what + ": " + e.what());
  }
}

}  // namespace

ServerEndpoint ParseServerEndpoint(const std::string& text, bool port_optional) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos && !port_optional) throw DiscoveryError("no port in \"" + text + "\"" + kDiscoveryEndpointExample);
  ServerEndpoint e{text.substr(0, colon), 0};
  if (e.host.empty()) throw DiscoveryError("no host in \"" + text + "\"" + kDiscoveryEndpointExample);
  if (e.host.find(':') != std::string::npos || e.host.find_first_of(" /") != std::string::npos)
    throw DiscoveryError("\"" + e.host + "\" is no host name or IPv4 address" + kDiscoveryEndpointExample);
  if (colon == std::string::npos) return e;
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw DiscoveryError("port \"" + port + "\" is not a number" + kDiscoveryEndpointExample);
  const int p = std::stoi(port);
  if (p < 1 || p > 65535) throw DiscoveryError("port " + port + " is out of range 1..65535");
  e.port = static_cast<uint16_t>(p);
  return e;
}

std::string FormatDiscoveryFile(const DiscoveryEntry& e) {
  std::string text =
      "# A platoon session running on this machine, written by `platoon run` (pid " + std::to_string(e.pid) +
      ") and removed when\n# the session ends; ignored once that pid is gone. docs/EXPERIMENTS.md, \"Finding the server\".\n";
  text += "format = " + std::to_string(kDiscoveryFormat) + "\n";
  text += "session = " + DiscoveryTomlQuote(e.session) + "\n";
  text += "host = " + DiscoveryTomlQuote(e.control.host) + "\n";
  text += "control_port = " + std::to_string(e.control.port) + "\n";
  text += "pid = " + std::to_string(e.pid) + "\n";
  text += "session_file = " + DiscoveryTomlQuote(e.session_file) + "\n";
  return text;
}

DiscoveryEntry ParseDiscoveryFile(const std::string& text, const std::string& path) {
  try {
    const auto t = config::Table::ParseText(text, path);
    // A newer launcher may add keys (read past them); a newer format is refused by name.
    const int64_t format = t.GetInt("format", kDiscoveryFormat, 1, INT32_MAX);
    if (format > kDiscoveryFormat)
      t.Fail("format", "format " + std::to_string(format) + " is newer than this platoon reads (" +
                           std::to_string(kDiscoveryFormat) + "); update platoon");
    DiscoveryEntry e;
    e.session = t.RequireString("session");
    e.control.host = t.RequireString("host");
    if (e.control.host.empty()) t.Fail("host", "is empty");
    for (const char* key : {"control_port", "pid"})
      if (!t.Has(key)) t.Fail(key, "is required (an integer)");
    e.control.port = static_cast<uint16_t>(t.GetInt("control_port", 0, 1, 65535));
    e.pid = static_cast<int>(t.GetInt("pid", 0, 1, INT32_MAX));
    e.session_file = t.RequireString("session_file");
    e.path = path;
    return e;
  } catch (const config::ConfigError& e) {
    throw DiscoveryError(e.what());
  }
}

std::string DiscoveryDirFor(const char* xdg_runtime_dir, uid_t uid) {
  if (xdg_runtime_dir && *xdg_runtime_dir) return std::string(xdg_runtime_dir) + "/platoon";
  return "/tmp/platoon-" + std::to_string(uid);
}

std::string DiscoveryDir() { return DiscoveryDirFor(std::getenv("XDG_RUNTIME_DIR"), geteuid()); }

std::string DiscoveryFileName(const std::string& session, int pid) {
  std::string name = session.empty() ? std::string("session") : session;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (name.front() == '.') name.front() = '_';  // not a hidden file (nor "." or "..")
  return name + "." + std::to_string(pid) + kDiscoverySuffix;
}

bool ProcessAlive(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  // A killed launcher its parent has not reaped yet is a zombie: gone, for a discovery file.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (stat && std::getline(stat, line)) {
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && (line[close + 2] == 'Z' || line[close + 2] == 'X'))
      return false;
  }
  return true;
}

DiscoveryScan ScanDiscoveryDir(const std::string& dir, const PidAlive& alive) {
  DiscoveryScan scan;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) scan.problems.push_back("cannot read the discovery folder " + dir + ": " + std::strerror(errno));
    return scan;
  }
  if (const std::string why = DiscoveryDirUnsafe(dir, st); !why.empty()) {
    scan.problems.push_back("did not read the discovery folder: " + why +
                            " (anyone could plant a session there; remove it, or set XDG_RUNTIME_DIR)");
    return scan;
  }
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = item.path().filename().string();
    const std::string suffix = kDiscoverySuffix;
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0 ||
        name.front() == '.')
      continue;
    const std::string path = item.path().string();
    // Read without following a link, and no more than a discovery file can be.
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      scan.problems.push_back("cannot read the discovery file " + path + ": " + std::strerror(errno));
      continue;
    }
    struct stat fst {};
    std::string text;
    if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size <= static_cast<off_t>(kMaxDiscoveryFileBytes)) {
      text.resize(static_cast<size_t>(fst.st_size));
      const ssize_t n = read(fd, text.data(), text.size());
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    } else {
      close(fd);
      scan.problems.push_back("ignored the discovery file " + path + ": not a regular file of at most " +
                              std::to_string(kMaxDiscoveryFileBytes) + " bytes");
      continue;
    }
    close(fd);
    try {
      auto entry = ParseDiscoveryFile(text, path);
      (alive(entry.pid) ? scan.live : scan.stale).push_back(std::move(entry));
    } catch (const DiscoveryError& e) {
      scan.problems.push_back(std::string("ignored the discovery file ") + e.what());
    }
  }
  if (ec) scan.problems.push_back("cannot list the discovery folder " + dir + ": " + ec.message());
  std::sort(scan.live.begin(), scan.live.end(), [](const DiscoveryEntry& a, const DiscoveryEntry& b) {
    return a.session != b.session ? a.session < b.session : a.path < b.path;
  });
  return scan;
}

ResolvedServer ResolveServer(const ServerQuery& q) {
  ResolvedServer r;
  const bool flags = !q.server_flag.empty() || q.port_flag != 0;
  if (!q.session_flag.empty() && (flags || q.config))
    throw DiscoveryError("--session chooses among the sessions running on this machine: give it without --server, "
                         "--port and --config");

  // 1. --server HOST:PORT (the viewer: HOST, --port), the rest from --config or the defaults.
  if (flags) {
    r.source = ServerSource::kFlag;
    if (!q.server_flag.empty()) r.endpoint = DiscoveryParseEndpoint("--server", q.server_flag, q.port_optional);
    if (q.port_flag != 0) {
      if (q.port_flag < 1 || q.port_flag > 65535)
        throw DiscoveryError("--port: port " + std::to_string(q.port_flag) + " is out of range 1..65535");
      r.endpoint.port = static_cast<uint16_t>(q.port_flag);
    }
    std::vector<std::string> given, filled;
    if (!q.server_flag.empty()) given.push_back("--server");
    if (q.port_flag != 0) given.push_back("--port");
    if (r.endpoint.host.empty()) {
      r.endpoint.host = q.config ? q.config->host : kDefaultServerHost;
      filled.push_back(q.config ? "host from --config " + q.config_path : std::string("host ") + kDefaultServerHost);
    }
    if (r.endpoint.port == 0) {
      if (q.config && q.config->port == 0)
        throw DiscoveryError("--config " + q.config_path +
                             ": control_port = 0 (a port the OS chooses) is known only while the session runs: "
                             "give --port, or run ctl without --config to find the running session");
      r.endpoint.port = q.config ? q.config->port : kDefaultControlPort;
      filled.push_back(q.config ? "port from --config " + q.config_path
                                : "port " + std::to_string(kDefaultControlPort));
    }
    r.from = "from " + given.front() + (given.size() > 1 ? " and " + given.back() : std::string());
    if (!filled.empty()) r.from += " (" + filled.front() + (filled.size() > 1 ? ", " + filled.back() : "") + ")";
    return r;
  }

  // 2. The session file's [session] server_host and [server] control_port.
  if (q.config) {
    if (q.config->port == 0)
      throw DiscoveryError("--config " + q.config_path +
                           ": control_port = 0 (a port the OS chooses) is known only while the session runs: "
                           "leave --config out to find the running session, or give --session NAME or --server");
    r.endpoint = *q.config;
    r.source = ServerSource::kConfig;
    r.from = "from --config " + q.config_path;
    return r;
  }

  // 3. --session NAME: that one of the sessions running here.
  std::string running_list;
  for (const auto& e : q.running) running_list += "\n  " + DiscoveryListLine(e);
  if (!q.session_flag.empty()) {
    std::vector<const DiscoveryEntry*> named;
    for (const auto& e : q.running)
      if (e.session == q.session_flag) named.push_back(&e);
    if (named.empty())
      throw DiscoveryError("--session " + q.session_flag + ": no session of that name runs on this machine (looked in " +
                           q.discovery_dir + ")" +
                           (q.running.empty() ? std::string("; none runs there") : "; running:" + running_list));
    if (named.size() > 1) {
      std::string list;
      for (const auto* e : named) list += "\n  " + DiscoveryListLine(*e);
      throw DiscoveryError("--session " + q.session_flag + ": " + std::to_string(named.size()) +
                           " sessions of that name run on this machine:" + list +
                           "\nchoose one with --server HOST:PORT");
    }
    r.endpoint = named.front()->control;
    r.source = ServerSource::kSession;
    r.session = *named.front();
    r.from = DiscoveryFrom(*named.front());
    return r;
  }

  // 4. PLATOON_SERVER.
  if (q.environment && !q.environment->empty()) {
    r.endpoint = DiscoveryParseEndpoint(std::string(kServerEnvironmentVariable) + "=\"" + *q.environment + "\"",
                                   *q.environment, false);
    r.source = ServerSource::kEnvironment;
    r.from = std::string("from ") + kServerEnvironmentVariable;
    return r;
  }

  // 5. The one session running here; several are refused, naming them.
  if (q.running.size() == 1) {
    r.endpoint = q.running.front().control;
    r.source = ServerSource::kDiscovery;
    r.session = q.running.front();
    r.from = DiscoveryFrom(q.running.front());
    return r;
  }
  if (q.running.size() > 1)
    throw DiscoveryError(std::to_string(q.running.size()) + " platoon sessions run on this machine (discovery files in " +
                         q.discovery_dir + "):" + running_list + "\nchoose one with --session NAME or --server HOST:PORT" +
                         " (or set " + kServerEnvironmentVariable + "=HOST:PORT)");

  // 6. The default.
  r.endpoint = ServerEndpoint{kDefaultServerHost, kDefaultControlPort};
  r.source = ServerSource::kDefault;
  r.from = std::string("the default (no --server, --config or ") + kServerEnvironmentVariable +
           ", and no session running in " + q.discovery_dir + ")";
  return r;
}

ResolvedServer FindServer(ServerQuery q) {
  if (!q.environment)
    if (const char* v = std::getenv(kServerEnvironmentVariable); v && *v) q.environment = std::string(v);
  if (q.discovery_dir.empty()) q.discovery_dir = DiscoveryDir();
  // The folder is read only when the order gets that far.
  const bool decided = !q.server_flag.empty() || q.port_flag != 0 || q.config ||
                       (q.session_flag.empty() && q.environment && !q.environment->empty());
  std::vector<std::string> notes;
  if (!decided && q.running.empty()) {
    auto scan = ScanDiscoveryDir(q.discovery_dir);
    q.running = std::move(scan.live);
    notes = std::move(scan.problems);
  }
  auto r = ResolveServer(q);
  r.notes = std::move(notes);
  return r;
}

void MakePrivateDir(const std::string& dir, const std::string& what) {
  // Made when missing, private to this user (a reader trusts what it finds there).
  if (mkdir(dir.c_str(), 0700) != 0 && errno == ENOENT) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
    mkdir(dir.c_str(), 0700);
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) throw DiscoveryError("cannot make the folder " + dir + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) != 0) {
    chmod(dir.c_str(), 0700);
    lstat(dir.c_str(), &st);
  }
  if (const std::string why = DiscoveryDirUnsafe(dir, st); !why.empty())
    throw DiscoveryError("will not write " + what + ": " + why + " (remove it, or set XDG_RUNTIME_DIR)");
}

DiscoveryFile::DiscoveryFile(const std::string& dir, DiscoveryEntry entry) : entry_(std::move(entry)) {
  MakePrivateDir(dir, "a discovery file");

  // Stale files of killed runs go, so that the folder does not fill up.
  for (const auto& stale : ScanDiscoveryDir(dir).stale) unlink(stale.path.c_str());

  // Written beside, then renamed: a reader sees the whole file or none.
  const std::string name = DiscoveryFileName(entry_.session, entry_.pid);
  const std::string path = dir + "/" + name, tmp = dir + "/." + name + ".tmp";
  const std::string text = FormatDiscoveryFile(entry_);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw DiscoveryError("cannot write the discovery file " + tmp + ": " + std::strerror(errno));
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    unlink(tmp.c_str());
    throw DiscoveryError("cannot write the discovery file " + tmp + ": " +
                         (n < 0 ? std::strerror(write_errno) : "short write"));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    unlink(tmp.c_str());
    throw DiscoveryError("cannot rename " + tmp + " to " + path + ": " + std::strerror(rename_errno));
  }
  entry_.path = path;
}

DiscoveryFile::~DiscoveryFile() {
  if (!entry_.path.empty()) unlink(entry_.path.c_str());
}

}  // namespace platoon::session
