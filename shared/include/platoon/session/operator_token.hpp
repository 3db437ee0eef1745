#pragma once
/// The operator token of a session without CURVE (docs/DEPLOYMENT.md, "Who may steer a session").
///
/// With CURVE off every process of the machine can reach the server's sockets, so the key cannot tell the
/// operator apart. platoon-server therefore makes a random token (256 bits from the kernel's CSPRNG) and
/// writes it to a file only its user can read: `<DiscoveryDir()>/operator.<control port>` (mode 0600 in a
/// 0700 folder), or the file `--operator-token-file` names; it removes the file when it exits. `platoon
/// ctl`, the viewer and the Python package read it (FindOperatorToken) and present it in an OperatorHello
/// before each session command, parameter set and marker; the server makes that connection an operator.
/// PLATOON_OPERATOR_TOKEN_FILE names another file to read (a token handed to a tool by its user).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace platoon::session {

/// The environment variable naming the token file a client reads, e.g.
/// PLATOON_OPERATOR_TOKEN_FILE=/run/user/1000/platoon/operator.7400.
inline constexpr const char* kOperatorTokenEnvironmentVariable = "PLATOON_OPERATOR_TOKEN_FILE";
/// Bytes of randomness in a token (hex-coded: twice as many characters). 32.
inline constexpr size_t kOperatorTokenBytes = 32;
/// The largest token file a client reads, in bytes (a token is 64 characters). 1024.
inline constexpr size_t kMaxOperatorTokenFileBytes = 1024;

/// The token file of the server whose control port is `control_port`, in `dir`: "<dir>/operator.<port>".
std::string OperatorTokenPath(const std::string& dir, uint16_t control_port);

/// A new token: kOperatorTokenBytes from /dev/urandom as lower-case hex. Throws std::runtime_error when
/// /dev/urandom cannot be read.
std::string NewOperatorToken();

/// Equal tokens, compared in time independent of where they differ (a peer cannot find the token byte by
/// byte from the answer times).
bool OperatorTokensEqual(std::string_view a, std::string_view b);

/// What a client found.
struct OperatorTokenLookup {
  std::string token;    ///< The token; empty when none was found.
  std::string path;     ///< The file read or looked for.
  std::string problem;  ///< Why there is no token: "no file /run/user/1000/platoon/operator.7400", ...
  bool from_environment = false;  ///< The path came from PLATOON_OPERATOR_TOKEN_FILE.
  /// Where the client looked, for a refusal message: "/run/.../operator.7400 (not there)".
  std::string Where() const;
};

/// Reads a token file: the first line, trimmed. A missing, unreadable, empty or oversized file gives no
/// token and a problem naming the path.
OperatorTokenLookup ReadOperatorToken(const std::string& path);

/// The token of the server on this machine at `control_port`: the file PLATOON_OPERATOR_TOKEN_FILE
/// names, else OperatorTokenPath(DiscoveryDir(), control_port).
OperatorTokenLookup FindOperatorToken(uint16_t control_port);

/// FindOperatorToken(control_port).token as a function, for ClientDef::find_operator_token: a client
/// started beside its server looks again once the server has written the file.
std::function<std::string()> OperatorTokenFinder(uint16_t control_port);

/// A server's token file: written on construction (folder made private, the file created exclusively
/// with mode 0600 beside its place and renamed there, replacing the file of a killed server on the same
/// port), removed on destruction.
class OperatorTokenFile {
 public:
  /// Writes `token` to `path`; `make_private_dir`: the folder is made and kept 0700 (MakePrivateDir), as
  /// for the default place; a folder the user named is taken as it is. Throws DiscoveryError naming the
  /// folder or file and why.
  OperatorTokenFile(std::string path, const std::string& token, bool make_private_dir);
  ~OperatorTokenFile();
  OperatorTokenFile(const OperatorTokenFile&) = delete;
  OperatorTokenFile& operator=(const OperatorTokenFile&) = delete;
  /// The file written.
  const std::string& Path() const { return path_; }

 private:
  std::string path_;
};

/// A server's operator token and its file.
struct ServerOperatorToken {
  std::string token;                        ///< NewOperatorToken().
  std::unique_ptr<OperatorTokenFile> file;  ///< Where it is written; removed with this object.
};
/// Makes a token and writes it to `path`, or when "" to OperatorTokenPath(DiscoveryDir(), control_port) in
/// a private folder. Throws DiscoveryError (the file) or std::runtime_error (/dev/urandom).
ServerOperatorToken MakeServerOperatorToken(uint16_t control_port, const std::string& path);

}  // namespace platoon::session
