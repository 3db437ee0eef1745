// How `platoon ctl` finds the server without --server, as processes: `platoon run` announces its session
// in a discovery file (in a private XDG_RUNTIME_DIR, so no other test's session is seen), ctl with no flag
// goes there, PLATOON_SERVER overrides it, two sessions are refused until --session chooses, a killed
// run's file misleads nobody, and a stopped run's file is gone. Every wait is a handshake with a deadline.
#include "../support/session_fixture.hpp"
#include "platoon/session/discovery.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

struct FindServerCtlResult {
  int code = -1;
  std::vector<std::string> lines;
  bool Says(const std::string& text) const { return AnyLineContains(lines, text); }
  std::string All() const {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }
};

// `command` run with XDG_RUNTIME_DIR = `xdg` and PLATOON_SERVER unset, or set to `server`.
std::vector<std::string> FindServerEnvironment(const std::string& xdg, const std::string& server,
                                         const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"/usr/bin/env", "-u", "PLATOON_SERVER", "XDG_RUNTIME_DIR=" + xdg};
  if (!server.empty()) argv.push_back("PLATOON_SERVER=" + server);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

FindServerCtlResult FindServerCtl(const std::string& xdg, const std::string& server, const std::vector<std::string>& args) {
  std::vector<std::string> command = {BinDir() + "/platoon", "ctl"};
  command.insert(command.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "--timeout") == args.end()) command.insert(command.end(), {"--timeout", "10"});
  auto child = process::Child::Spawn(FindServerEnvironment(xdg, server, command));
  const auto st = RunToExit(child, 30s);
  REQUIRE_MESSAGE(st.has_value(), "platoon ctl did not exit within 30 s");
  FindServerCtlResult r{*st, child.Lines()};
  CheckNoErrorLines(r.lines);
  return r;
}

std::string FindServerSessionFile(const TempDir& dir, const std::string& name, const std::string& nodes) {
  return dir.Write(name + ".toml", "[session]\nname = \"" + name +
                                       "\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = 0\n" + nodes);
}

// Waits (deadline 30 s, draining the run's output) until the discovery folder lists session `name`.
session::DiscoveryEntry FindServerAwait(process::Child& run, const std::string& folder, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (true) {
    for (const auto& e : session::ScanDiscoveryDir(folder).live)
      if (e.session == name) return e;
    REQUIRE_MESSAGE(!run.TryWait(), "platoon run of '" << name << "' exited before announcing its session");
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "'" << name << "' was not announced within 30 s");
    run.ReadLine(50ms);
  }
}

void FindServerStop(process::Child& run, const std::string& who) {
  run.Signal(SIGTERM);
  CHECK_MESSAGE(RunToExit(run, 60s) == std::optional<int>(0), who << " did not stop cleanly");
  CheckNoErrorLines(run, who);
}

}  // namespace

TEST_CASE("find server: ctl with no flag reaches the session platoon run announced, PLATOON_SERVER goes elsewhere") {
  TempDir dir;
  const std::string xdg = dir.Path() + "/xdg";
  REQUIRE(mkdir(xdg.c_str(), 0700) == 0);
  const std::string folder = session::DiscoveryDirFor(xdg.c_str(), 0);

  // control_port = 0: the OS chooses; the file has the port bound, and the node is sent there too.
  const std::string alpha_file = FindServerSessionFile(dir, "alpha", "[[node]]\nname = \"watcher\"\nrole = \"observer\"\n");
  auto alpha = process::Child::Spawn(FindServerEnvironment(xdg, "", {BinDir() + "/platoon", "run", alpha_file}));
  const auto announced = FindServerAwait(alpha, folder, "alpha");
  CHECK(announced.control.host == "127.0.0.1");
  CHECK(announced.control.port != 0);
  CHECK(announced.pid == alpha.Pid());
  CHECK(announced.session_file == std::filesystem::absolute(alpha_file).lexically_normal().string());
  struct stat st {};
  REQUIRE(stat(announced.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // No flag, no PLATOON_SERVER: the announced session (its node joined through the bound port).
  FindServerCtlResult status;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    status = FindServerCtl(xdg, "", {"status"});
  } while (!status.Says("watcher") && std::chrono::steady_clock::now() < deadline);
  INFO(status.All());
  CHECK(status.code == 0);
  CHECK(status.Says("session 'alpha' at " + announced.control.Text() + " (from the running session 'alpha' (discovery file " +
                    announced.path + "))"));
  CHECK(status.Says("watcher"));

  // PLATOON_SERVER names another server: ctl goes there, and says why.
  auto other = StartServer(dir);
  const std::string other_at = "127.0.0.1:" + std::to_string(other.control_port);
  const auto env = FindServerCtl(xdg, other_at, {"status"});
  INFO(env.All());
  CHECK(env.code == 0);
  CHECK(env.Says("session 'platoon' at " + other_at + " (from PLATOON_SERVER)"));
  // A server that does not answer is named with its source.
  const uint16_t nobody = FreePorts(1)[0];
  const auto silent = FindServerCtl(xdg, "127.0.0.1:" + std::to_string(nobody), {"--timeout", "1", "status"});
  CHECK(silent.code == 1);
  CHECK(silent.Says("no answer from the server at 127.0.0.1:" + std::to_string(nobody) +
                    " within 1 s (the address is from PLATOON_SERVER;"));
  const auto bad_env = FindServerCtl(xdg, "nowhere", {"status"});
  CHECK(bad_env.code == 2);
  CHECK(bad_env.Says("PLATOON_SERVER=\"nowhere\": no port in \"nowhere\""));

  // A second session: ctl refuses to guess and lists both; --session chooses.
  auto beta = process::Child::Spawn(FindServerEnvironment(xdg, "", {BinDir() + "/platoon", "run", FindServerSessionFile(dir, "beta", "")}));
  const auto beta_entry = FindServerAwait(beta, folder, "beta");
  const auto two = FindServerCtl(xdg, "", {"status"});
  INFO(two.All());
  CHECK(two.code == 2);
  CHECK(two.Says("2 platoon sessions run on this machine"));
  CHECK(two.Says("'alpha' at " + announced.control.Text()));
  CHECK(two.Says("'beta' at " + beta_entry.control.Text()));
  CHECK(two.Says("choose one with --session NAME or --server HOST:PORT"));
  const auto chosen = FindServerCtl(xdg, "", {"--session", "beta", "status"});
  CHECK(chosen.code == 0);
  CHECK(chosen.Says("session 'beta' at " + beta_entry.control.Text()));

  // A killed run leaves its file behind; its pid is gone, so the file misleads nobody.
  beta.Signal(SIGKILL);
  REQUIRE(WaitForKilled(beta, "platoon run beta").has_value());
  CHECK(std::filesystem::exists(beta_entry.path));
  const auto after_kill = FindServerCtl(xdg, "", {"status"});
  CHECK(after_kill.code == 0);
  CHECK(after_kill.Says("session 'alpha'"));

  // A stopped run removes its file.
  FindServerStop(alpha, "platoon run alpha");
  CHECK_FALSE(std::filesystem::exists(announced.path));
  other.child.Signal(SIGTERM);
  CHECK(RunToExit(other.child, 10s).has_value());
}
