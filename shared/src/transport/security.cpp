#include "platoon/transport/security.hpp"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <fcntl.h>
#include <unistd.h>

namespace platoon::transport {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// The Z85 alphabet (ZeroMQ RFC 32).
constexpr std::string_view kZ85Chars =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

KeyPair NewKeyPair() {
  char pub[kZ85KeyChars + 1] = {0}, sec[kZ85KeyChars + 1] = {0};
  if (zmq_curve_keypair(pub, sec) != 0)
    throw KeyError(std::string("cannot make a CURVE key pair: ") + zmq_strerror(errno) +
                   " (libzmq without libsodium; Debian's libzmq5 has it)");
  return KeyPair{pub, sec};
}

std::string CheckZ85Key(const std::string& text) {
  if (text.size() != kZ85KeyChars)
    return "expected a " + std::to_string(kZ85KeyChars) + "-character Z85 CURVE key, got " +
           std::to_string(text.size()) + " characters";
  for (size_t i = 0; i < text.size(); ++i)
    if (kZ85Chars.find(text[i]) == std::string_view::npos)
      return "expected a Z85 CURVE key, got the character '" + std::string(1, text[i]) + "' at position " +
             std::to_string(i + 1) + ", which is not Z85";
  // Every 5-character group encodes a 32-bit value: some valid characters still overflow it.
  uint8_t bin[32];
  if (!zmq_z85_decode(bin, text.c_str())) return "expected a Z85 CURVE key, got a value that does not decode";
  return {};
}

std::string DecodeKey(const std::string& z85) {
  uint8_t bin[32];
  if (CheckZ85Key(z85).empty() && zmq_z85_decode(bin, z85.c_str())) return std::string(reinterpret_cast<char*>(bin), 32);
  throw KeyError("not a Z85 CURVE key: " + CheckZ85Key(z85));
}

std::string PublicKeyOf(const std::string& secret_z85) {
  if (auto err = CheckZ85Key(secret_z85); !err.empty()) throw KeyError("secret key: " + err);
  char pub[kZ85KeyChars + 1] = {0};
  if (zmq_curve_public(pub, secret_z85.c_str()) != 0)
    throw KeyError(std::string("cannot derive the public key: ") + zmq_strerror(errno));
  return pub;
}

std::string ReadKeyFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw KeyError(path + ": cannot read the key file (" + std::strerror(errno) + "); make keys with `platoon keys new DIR --clients NAME,...`");
  std::string line, key;
  int line_no = 0, key_line = 0;
  while (std::getline(f, line)) {
    ++line_no;
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (key_line)
      throw KeyError(path + ":" + std::to_string(line_no) + ": expected one key per file, found a second one (the first is on line " +
                     std::to_string(key_line) + ")");
    key = t;
    key_line = line_no;
  }
  if (!key_line) throw KeyError(path + ": expected a 40-character Z85 CURVE key, found no key (only comments or blank lines)");
  if (auto err = CheckZ85Key(key); !err.empty()) throw KeyError(path + ":" + std::to_string(key_line) + ": " + err);
  return key;
}

void WriteKeyFile(const std::string& path, const std::string& key_z85, const std::string& comment, bool secret) {
  // O_EXCL: never replace a key someone may already have handed out.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, secret ? 0600 : 0644);
  if (fd < 0) {
    if (errno == EEXIST) throw KeyError(path + " exists; keys are never overwritten (remove it first, or pick another name)");
    throw KeyError(path + ": cannot create (" + std::string(std::strerror(errno)) + ")");
  }
  const std::string text = "# " + comment + "\n" + key_z85 + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw KeyError(path + ": cannot write");
}

bool ValidKeyName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::map<std::string, std::string> ReadAuthorisedKeys(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw KeyError(dir + ": expected a folder of client public keys (<name>.key), found " +
                   (fs::exists(dir, ec) ? "a file" : "nothing") + "; make one with `platoon keys new DIR --clients NAME,...`");
  std::map<std::string, std::string> keys, owner;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = kPublicKeySuffix;
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string name = file.substr(0, file.size() - suffix.size());
    if (!ValidKeyName(name)) continue;
    const std::string key = ReadKeyFile(entry.path().string());
    if (auto it = owner.find(key); it != owner.end())
      throw KeyError(entry.path().string() + ": the same key as " + it->second + ".key; each client needs its own key");
    owner[key] = name;
    keys[name] = key;
  }
  if (ec) throw KeyError(dir + ": cannot list (" + ec.message() + ")");
  if (keys.empty()) throw KeyError(dir + ": no client public key (<name>.key) in the folder; add some with `platoon keys add DIR NAME...`");
  return keys;
}

// --- ZAP handler ------------------------------------------------------------------------------------

struct ZapHandler::Impl {
  zmq::socket_t socket;
  std::map<std::string, std::string> names;  // 32-byte public key -> name
  LogFn log;
  int64_t period_ns;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> accepted{0}, refused{0};
  std::thread thread;

  Impl(zmq::context_t& context, LogFn fn, double period_s)
      : socket(context, zmq::socket_type::rep), log(std::move(fn)), period_ns(static_cast<int64_t>(period_s * 1e9)) {}

  void Serve() {
    using Clock = std::chrono::steady_clock;
    uint64_t reported = 0;  // refusals already logged
    Clock::time_point next_log = Clock::now();
    std::string last_reason;
    while (!stop.load(std::memory_order_relaxed)) {
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(&item, 1, std::chrono::milliseconds(100));
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        continue;  // EINTR
      }
      if (item.revents & ZMQ_POLLIN) {
        std::vector<zmq::message_t> request;
        try {
          if (!zmq::recv_multipart(socket, std::back_inserter(request), zmq::recv_flags::dontwait)) continue;
        } catch (const zmq::error_t& e) {
          if (e.num() == ETERM) return;
          continue;
        }
        Answer(request, last_reason);
      }
      // Refusals are logged at most once per period, so a scan of the port cannot flood the log.
      const uint64_t now_refused = refused.load();
      if (now_refused > reported && Clock::now() >= next_log) {
        if (log)
          log("refused " + std::to_string(now_refused - reported) + " CURVE handshake(s) (" + std::to_string(now_refused) +
              " in all; last: " + last_reason + "); only keys in the session's client key folder may connect");
        reported = now_refused;
        next_log = Clock::now() + std::chrono::nanoseconds(period_ns);
      }
    }
  }

  // ZAP (ZeroMQ RFC 27): version, request id, domain, address, routing id, mechanism, credentials...
  void Answer(const std::vector<zmq::message_t>& request, std::string& last_reason) {
    // A REP socket answers every request, a malformed one too.
    auto frame = [&](size_t i) { return i < request.size() ? request[i].to_string() : std::string(); };
    const std::string version = frame(0), id = frame(1), address = frame(3), mechanism = frame(5);
    std::string status = "400", text, user;
    if (request.size() < 6) {
      text = "malformed ZAP request";
      last_reason = text;
    } else if (mechanism != "CURVE") {
      text = "CURVE required";
      last_reason = mechanism + " from " + address;
    } else if (request.size() < 7 || request[6].size() != 32) {
      text = "malformed credentials";
      last_reason = "malformed credentials from " + address;
    } else if (auto it = names.find(request[6].to_string()); it == names.end()) {
      text = "unknown key";
      char z85[kZ85KeyChars + 1] = {0};
      zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
      last_reason = "unknown key " + std::string(z85) + " from " + address;
    } else {
      status = "200";
      text = "OK";
      user = it->second;
    }
    (status == "200" ? accepted : refused).fetch_add(1);
    std::array<zmq::const_buffer, 6> reply = {zmq::buffer(version), zmq::buffer(id), zmq::buffer(status),
                                              zmq::buffer(text), zmq::buffer(user), zmq::const_buffer()};
    try {
      zmq::send_multipart(socket, reply);
    } catch (const zmq::error_t&) {
      // The context is closing.
    }
  }
};

ZapHandler::ZapHandler(zmq::context_t& context, const std::map<std::string, std::string>& authorised, LogFn log,
                       double log_period_s)
    : impl_(std::make_unique<Impl>(context, std::move(log), log_period_s)) {
  for (const auto& [name, key] : authorised) {
    if (auto err = CheckZ85Key(key); !err.empty()) throw KeyError("client key \"" + name + "\": " + err);
    impl_->names[DecodeKey(key)] = name;
  }
  impl_->socket.set(zmq::sockopt::linger, 0);
  impl_->socket.bind(kZapEndpoint);
  impl_->thread = std::thread([this] { impl_->Serve(); });
}

ZapHandler::~ZapHandler() {
  impl_->stop.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

ZapStats ZapHandler::Stats() const { return ZapStats{impl_->accepted.load(), impl_->refused.load()}; }

}  // namespace platoon::transport
