// The operator token of a session without CURVE: made from the kernel's CSPRNG, written for this user only,
// found by the port or PLATOON_OPERATOR_TOKEN_FILE, compared whole.
#include "platoon/session/discovery.hpp"
#include "platoon/session/operator_token.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

using namespace platoon;

namespace {

// A fresh folder under the system's temp folder, removed with the object.
struct OpTokTempDir {
  OpTokTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "optok-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~OpTokTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

}  // namespace

TEST_CASE("operator token: 64 hex digits from the CSPRNG, never the same twice, compared whole") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string t = session::NewOperatorToken();
    CHECK(t.size() == 2 * session::kOperatorTokenBytes);
    CHECK(t.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(t);
  }
  CHECK(seen.size() == 100);
  const std::string t = *seen.begin();
  CHECK(session::OperatorTokensEqual(t, t));
  std::string last = t;
  last.back() = last.back() == 'a' ? 'b' : 'a';
  CHECK_FALSE(session::OperatorTokensEqual(t, last));
  CHECK_FALSE(session::OperatorTokensEqual(t, t.substr(0, 63)));
  CHECK_FALSE(session::OperatorTokensEqual(t, t + "0"));
  CHECK_FALSE(session::OperatorTokensEqual("", ""));  // no token is never a match
}

TEST_CASE("operator token: the server's file is 0600 in a 0700 folder, read back by port, and removed with the server") {
  OpTokTempDir tmp;
  const std::string dir = tmp.path + "/run/platoon";
  const std::string path = session::OperatorTokenPath(dir, 7400);
  CHECK(path == dir + "/operator.7400");
  const std::string token = session::NewOperatorToken();
  {
    // A killed server's file on the same port is replaced.
    std::filesystem::create_directories(dir);
    std::ofstream(path) << "stale\n";
    session::OperatorTokenFile file(path, token, true);
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    const auto found = session::ReadOperatorToken(path);
    CHECK(found.token == token);
    CHECK(found.problem.empty());
    // The environment names another file; FindOperatorToken reads it.
    setenv(session::kOperatorTokenEnvironmentVariable, path.c_str(), 1);
    const auto by_env = session::FindOperatorToken(1);
    unsetenv(session::kOperatorTokenEnvironmentVariable);
    CHECK(by_env.token == token);
    CHECK(by_env.from_environment);
  }
  CHECK_FALSE(std::filesystem::exists(path));
  const auto gone = session::ReadOperatorToken(path);
  CHECK(gone.token.empty());
  CHECK(gone.Where() == path + " (not there)");
  // A file too large to be a token, and an empty one: no token, and why.
  std::ofstream(tmp.path + "/big") << std::string(4096, 'x');
  CHECK(session::ReadOperatorToken(tmp.path + "/big").problem.find("4096 bytes") != std::string::npos);
  std::ofstream(tmp.path + "/empty") << "  \r\n";
  CHECK(session::ReadOperatorToken(tmp.path + "/empty").problem == "empty");
  // A folder others may enter is not taken for the default place.
  std::filesystem::create_directories(tmp.path + "/open");
  chmod((tmp.path + "/open").c_str(), 0755);
  CHECK_NOTHROW(session::OperatorTokenFile(tmp.path + "/open/t", token, false));
  std::filesystem::create_directory_symlink(tmp.path + "/open", tmp.path + "/link");
  CHECK_THROWS_AS(session::OperatorTokenFile(tmp.path + "/link/t", token, true), session::DiscoveryError);
}
