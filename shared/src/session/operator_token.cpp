#include "platoon/session/operator_token.hpp"

#include "platoon/session/discovery.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace platoon::session {

std::string OperatorTokenPath(const std::string& dir, uint16_t control_port) {
  return dir + "/operator." + std::to_string(control_port);
}

std::string NewOperatorToken() {
  unsigned char bytes[kOperatorTokenBytes];
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("cannot open /dev/urandom for the operator token: ") + std::strerror(errno));
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = read(fd, bytes + got, sizeof bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      throw std::runtime_error("cannot read /dev/urandom for the operator token");
    }
    got += static_cast<size_t>(n);
  }
  close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * sizeof bytes);
  for (const unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

bool OperatorTokensEqual(std::string_view a, std::string_view b) {
  // Every byte of the longer one is looked at, whatever differs first.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0 && !a.empty();
}

std::string OperatorTokenLookup::Where() const {
  std::string where = path + (problem.empty() ? "" : " (" + problem + ")");
  if (from_environment) where += std::string(", named by ") + kOperatorTokenEnvironmentVariable;
  return where;
}

OperatorTokenLookup ReadOperatorToken(const std::string& path) {
  OperatorTokenLookup r;
  r.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    r.problem = "not there";
    return r;
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    r.problem = "cannot read it: " + ec.message();
    return r;
  }
  if (size > kMaxOperatorTokenFileBytes) {
    r.problem = std::to_string(size) + " bytes, more than a token file holds (" +
                std::to_string(kMaxOperatorTokenFileBytes) + ")";
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line)) {
    r.problem = in ? "empty" : std::string("cannot read it: ") + std::strerror(errno);
    return r;
  }
  // Trimmed: a token pasted into a file by hand may end in a carriage return or spaces.
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  if (first == std::string::npos) {
    r.problem = "empty";
    return r;
  }
  r.token = line.substr(first, last - first + 1);
  return r;
}

OperatorTokenLookup FindOperatorToken(uint16_t control_port) {
  const char* env = std::getenv(kOperatorTokenEnvironmentVariable);
  const bool from_env = env && *env;
  OperatorTokenLookup r = ReadOperatorToken(from_env ? std::string(env) : OperatorTokenPath(DiscoveryDir(), control_port));
  r.from_environment = from_env;
  return r;
}

std::function<std::string()> OperatorTokenFinder(uint16_t control_port) {
  return [control_port] { return FindOperatorToken(control_port).token; };
}

OperatorTokenFile::OperatorTokenFile(std::string path, const std::string& token, bool make_private_dir)
    : path_(std::move(path)) {
  const std::filesystem::path p(path_);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  if (make_private_dir) MakePrivateDir(dir, "the operator token file " + path_);
  // Created exclusively beside its place (never through a link an attacker left there), then renamed: a
  // reader sees the whole token or none, and a killed server's file on the same port is replaced.
  const std::string tmp = dir + "/." + p.filename().string() + "." + std::to_string(getpid()) + ".tmp";
  unlink(tmp.c_str());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw DiscoveryError("cannot write the operator token file " + tmp + ": " + std::strerror(errno));
  const std::string text = token + "\n";
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool synced = fchmod(fd, 0600) == 0;
  close(fd);
  if (n != static_cast<ssize_t>(text.size()) || !synced) {
    unlink(tmp.c_str());
    throw DiscoveryError("cannot write the operator token file " + tmp + ": " +
                         (n < 0 ? std::strerror(write_errno) : "short write"));
  }
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    const int rename_errno = errno;
    unlink(tmp.c_str());
    throw DiscoveryError("cannot rename " + tmp + " to " + path_ + ": " + std::strerror(rename_errno));
  }
}

OperatorTokenFile::~OperatorTokenFile() { unlink(path_.c_str()); }

ServerOperatorToken MakeServerOperatorToken(uint16_t control_port, const std::string& path) {
  ServerOperatorToken t;
  t.token = NewOperatorToken();
  const bool default_place = path.empty();
  t.file = std::make_unique<OperatorTokenFile>(
      default_place ? OperatorTokenPath(DiscoveryDir(), control_port) : path, t.token, default_place);
  return t;
}

}  // namespace platoon::session
