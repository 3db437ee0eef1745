#pragma once
/// CURVE keys and the ZAP handler (docs/DEPLOYMENT.md "Keys and a classroom", docs/PROTOCOL.md "Security").
/// A key file holds one Z85 key (40 characters) and '#' comment lines: `<name>.key` the public key,
/// `<name>.key_secret` the secret key (mode 0600). The server's sockets are CURVE servers; the ZAP handler
/// admits only the public keys found in the session's client key folder, and gives each connection the
/// key's name as its user id (transport::Packet::user_id).

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace zmq {
class context_t;
}

namespace platoon::transport {

/// A key file is missing, unreadable or holds no valid key; the message names the file and the fault.
class KeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Characters of a Z85-encoded CURVE key (32 bytes).
inline constexpr size_t kZ85KeyChars = 40;
/// File name endings of a public and a secret key file.
inline constexpr const char* kPublicKeySuffix = ".key";
inline constexpr const char* kSecretKeySuffix = ".key_secret";

/// A CURVE key pair, Z85-encoded (40 characters each).
struct KeyPair {
  std::string public_key;  ///< Given to the other side.
  std::string secret_key;  ///< Never leaves the PC it was made for.
};

/// Whether this libzmq was built with CURVE (libsodium); Debian's is.
bool CurveAvailable();
/// A fresh key pair (zmq_curve_keypair). Throws KeyError when CURVE is not available.
KeyPair NewKeyPair();
/// The public key that belongs to a Z85 secret key. Throws KeyError for a malformed key.
std::string PublicKeyOf(const std::string& secret_z85);
/// "" when `text` is a 40-character Z85 key, else what is wrong with it (length, character, position).
std::string CheckZ85Key(const std::string& text);
/// A key's 32 bytes from its Z85 text (CheckZ85Key must pass).
std::string DecodeKey(const std::string& z85);

/// Reads a key file: blank and '#' lines are skipped, exactly one line must hold a Z85 key. Throws
/// KeyError "FILE: ..." naming what was expected.
std::string ReadKeyFile(const std::string& path);
/// Writes a key file (a comment line, the key); secret files get mode 0600. Refuses to replace an
/// existing file. Throws KeyError.
void WriteKeyFile(const std::string& path, const std::string& key_z85, const std::string& comment, bool secret);
/// Every `<name>.key` in `dir`: name -> public key (Z85). Secret files and other files are ignored;
/// a malformed `.key` file or two names with one key throw KeyError. An empty folder is an error too.
std::map<std::string, std::string> ReadAuthorisedKeys(const std::string& dir);
/// Whether `name` may name a key: letters, digits, '-', '_' and '.', not starting with '.', 1..64 characters.
bool ValidKeyName(const std::string& name);

/// CURVE settings of one socket (transport::ChannelDef::curve).
struct CurveDef {
  bool server = false;        ///< A CURVE server (binds; the ZAP handler checks its clients).
  std::string secret_key;     ///< This side's secret key, Z85.
  std::string public_key;     ///< This side's public key, Z85 (a client's; unused by a server).
  std::string server_key;     ///< A client: the server's public key, Z85.
};

/// Counters of a ZAP handler.
struct ZapStats {
  uint64_t accepted = 0;  ///< Handshakes admitted.
  uint64_t refused = 0;   ///< Handshakes refused (unknown key, not CURVE).
};

/// The ZAP handler of one ZeroMQ context: a thread serving "inproc://zeromq.zap.01". It admits a CURVE
/// client whose public key is authorised and answers its name as the user id; it refuses any other.
/// Refusals are counted and reported through `log` at most once per `log_period_s` (the first at once).
class ZapHandler {
 public:
  /// One warning line; called from the handler's thread.
  using LogFn = std::function<void(const std::string&)>;
  /// Binds the ZAP endpoint in `context` (before any CURVE server socket binds) and starts the thread.
  /// `authorised`: key name -> public key (Z85). Throws KeyError for a malformed key, zmq::error_t when
  /// the context already has a handler.
  ZapHandler(zmq::context_t& context, const std::map<std::string, std::string>& authorised, LogFn log,
             double log_period_s = 10.0);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  /// Counters so far (thread-safe).
  ZapStats Stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::transport
