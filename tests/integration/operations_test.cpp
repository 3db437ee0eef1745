// Operations, probed as a clumsy user would: command-line exit codes, non-finite numbers,
// files that are not config files, `platoon check` running the validation `run` does, two nodes under
// one name, and the launcher's children dying with it. Every wait is a handshake or an exit with a
// deadline; nothing sleeps.
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

std::string Joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// A session on free loopback ports (all four given) with the nodes in `nodes_toml`.
std::string SessionOnFreePorts(const TempDir& dir, const std::string& file, const std::string& nodes_toml) {
  const auto p = FreePorts(4);
  return dir.Write(file, "[session]\nname = \"ops\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                             std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                             std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) + "\n" + nodes_toml);
}

// True when a TCP listener can bind 127.0.0.1:port (nobody listens there any more).
bool PortFree(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// Every TCP socket on 127.0.0.1:port (from /proc/net/tcp) with its state and owning process, for a failure
// message: tells a listener this session left behind from another process's connection that happens to hold
// the port as its ephemeral local port.
std::string PortHolders(uint16_t port) {
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", port);
  std::ifstream f("/proc/net/tcp");
  std::string line, out;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string slot, loc, rem, state, queues, timer, retr, uid, timeout, inode;
    if (!(in >> slot >> loc >> rem >> state >> queues >> timer >> retr >> uid >> timeout >> inode) || loc != local) continue;
    std::string owner = "no process";
    const std::string target = "socket:[" + inode + "]";
    std::error_code ec;
    for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string pid = proc.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::error_code fd_ec;
      for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
        std::error_code link_ec;
        if (std::filesystem::read_symlink(fd.path(), link_ec).string() != target) continue;
        std::ifstream cmd(proc.path() / "comm");
        std::string comm;
        std::getline(cmd, comm);
        owner = "pid " + pid + " (" + comm + ")";
      }
    }
    out += "  state " + state + (state == "0A" ? " (LISTEN)" : state == "06" ? " (TIME_WAIT)" : state == "01" ? " (ESTABLISHED)" : "") +
           ", remote " + rem + ", uid " + uid + ", " + owner + "\n";
  }
  return out.empty() ? "no socket on it in /proc/net/tcp now" : out;
}

// `platoon check`'s verdict line.
bool SaysOk(const std::vector<std::string>& lines) { return std::find(lines.begin(), lines.end(), "ok") != lines.end(); }

process::Child StartNode(uint16_t port, const std::string& name) {
  return process::Child::Spawn({BinDir() + "/platoon-node", "--name", name, "--server", "127.0.0.1", "--port",
                                std::to_string(port)});
}

}  // namespace

TEST_CASE("operations: every usage error of every executable exits 2, --help exits 0") {
  TempDir dir;
  const std::string session = SessionOnFreePorts(dir, "s.toml", "[[node]]\nname = \"n1\"\n");
  const std::string platoon = BinDir() + "/platoon", server = BinDir() + "/platoon-server",
                    node = BinDir() + "/platoon-node", viewer = BinDir() + "/platoon-viewer";
  const bool have_viewer = std::filesystem::exists(viewer);
  if (!have_viewer) MESSAGE("platoon-viewer is not built here: its cases are left out");

  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;  // a substring of the output ("" for none)
  };
  std::vector<Case> cases = {
      // CLI11's own errors (were 104..114).
      {{platoon, "--bogus"}, 2, ""},
      {{platoon}, 2, ""},
      {{platoon, "run"}, 2, "session is required"},
      {{platoon, "check", dir.Path() + "/missing.toml"}, 2, ""},
      {{server, "--bogus"}, 2, ""},
      {{server, "--port", "70000"}, 2, ""},
      {{node}, 2, "--name is required"},
      {{node, "--name", "a", "--bogus"}, 2, ""},
      // The control port needs room for time, world and state (+1..+3): 65535 wrapped to ports 1 and 2.
      {{server, "--port", "65535"}, 2, "the control port must be at most 65532"},
      {{server, "--port", "65533"}, 2, "at most 65532"},
      // Non-finite and negative numbers (--duration nan or -5 never stopped).
      {{platoon, "run", session, "--duration", "nan"}, 2, "expected a finite number, got nan"},
      {{platoon, "run", session, "--duration", "-5"}, 2, ""},
      {{platoon, "run", session, "--duration", "inf"}, 2, "finite"},
      {{server, "--exit-after", "nan"}, 2, "finite"},
      {{server, "--exit-after", "-1"}, 2, ""},
      {{server, "--autostart", "inf"}, 2, "finite"},
      {{server, "--step-hz", "nan"}, 2, "finite"},
      {{server, "--end", "nan"}, 2, "finite"},
      {{server, "--end", "-1"}, 2, ""},
      {{node, "--name", "a", "--exit-after", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--exit-after", "-5"}, 2, ""},
      {{node, "--name", "a", "--module-hz", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--monitor-hz", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--drift-ppm", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--truth-warmup", "inf"}, 2, "finite"},
      {{node, "--name", "a", "--stats-warmup", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--blend-time", "nan"}, 2, "finite"},
      {{node, "--name", "a", "--blend-time", "-0.1"}, 2, ""},
      {{node, "--name", "a", "--blend-speed", "0"}, 2, ""},
      {{node, "--name", "a", "--pose-log-hz", "inf"}, 2, "finite"},
      {{node, "--name", "a", "--pose-log-every", "0"}, 2, ""},
      // An unwritable pose log is refused at start, naming the file.
      {{node, "--name", "a", "--pose-log", dir.Path() + "/no/such/folder/poses.csv"}, 2, "cannot write the pose log"},
      // Help is not an error.
      {{platoon, "--help"}, 0, "platoon run"},
      {{platoon, "run", "--help"}, 0, "--duration"},
      {{server, "--help"}, 0, "--port"},
      {{node, "--help"}, 0, "--name"},
  };
  if (have_viewer) {
    cases.push_back({{viewer, "--bogus"}, 2, ""});
    cases.push_back({{viewer, "--exit-after", "nan"}, 2, "finite"});
    cases.push_back({{viewer, "--fov", "nan"}, 2, "finite"});
    cases.push_back({{viewer, "--point-size", "inf"}, 2, "finite"});
    cases.push_back({{viewer, "--help"}, 0, "--exit-after"});
  }
  for (const auto& c : cases) {
    INFO(Joined(c.args));
    auto child = process::Child::Spawn(c.args);
    const auto st = RunToExit(child, 10s);
    REQUIRE_MESSAGE(st.has_value(), "still running after 10 s");
    CHECK(*st == c.code);
    if (!c.says.empty()) CHECK(AnyLineContains(child.Lines(), c.says));
  }
}

TEST_CASE("operations: platoon check and run refuse a FIFO and /dev/zero at once, exit 2") {
  TempDir dir;
  const std::string fifo = dir.Path() + "/session.toml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    for (const char* verb : {"check", "run"}) {
      INFO(verb << " " << path);
      auto c = process::Child::Spawn({BinDir() + "/platoon", verb, path});
      const auto st = RunToExit(c, 10s);
      REQUIRE_MESSAGE(st.has_value(), "hung on a file that is not a regular file");
      CHECK(*st == 2);
      CHECK(AnyLineContains(c.Lines(), path + ": not a regular file"));
      CHECK_FALSE(SaysOk(c.Lines()));
    }
  }
}

TEST_CASE("operations: what fails at run time fails platoon check first, with file, line and key, run starts nothing") {
  TempDir dir;
  dir.Write("nan_road.toml", "[[road]]\nid = 1\nlanes_right = 2\nstart_y_m = nan\n[[road.section]]\nlength_m = 200.0\n");
  const std::string ego = "[[node]]\nname = \"ego\"\nrole = \"traffic\"\nvehicles = 1\n";
  struct Case {
    std::string what, toml, says;
  };
  const std::vector<Case> cases = {
      {"missing road file", "[road]\nfile = \"gone.toml\"\n" + ego, ":10: road.file: " + dir.Path() + "/gone.toml: cannot read"},
      {"NaN road value", "[road]\nfile = \"nan_road.toml\"\n" + ego, "nan_road.toml:4: road[0].start_y_m"},
      {"bad [node.fusion] key", ego + "[[node]]\nname = \"fuse\"\nrole = \"fusion\"\nattach_to = \"ego\"\n"
                                      "[node.fusion]\nsources = [\"lidar\"]\nvoxel_size = 0.2\n",
       "node[1].fusion.voxel_size: unknown key"},
      {"attach_to a node not in the session", ego + "[[node]]\nname = \"lidar\"\nrole = \"sensor\"\nattach_to = \"nobody\"\n"
                                                    "[[node.sensor]]\nid = \"imu\"\ntype = \"imu\"\n",
       ":16: node[1].attach_to: no node named \"nobody\""},
  };
  for (const auto& k : cases) {
    INFO(k.what);
    const std::string session = SessionOnFreePorts(dir, "bad.toml", k.toml);
    auto check = process::Child::Spawn({BinDir() + "/platoon", "check", session});
    CHECK(RunToExitOrDescribe(check, 10s, 50s, "platoon check") == std::optional<int>(2));
    CHECK(AnyLineContains(check.Lines(), session));
    CHECK(AnyLineContains(check.Lines(), k.says));
    CHECK_FALSE(SaysOk(check.Lines()));

    auto run = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--duration", "5"});
    CHECK(RunToExitOrDescribe(run, 10s, 50s, "platoon run") == std::optional<int>(2));
    CHECK(AnyLineContains(run.Lines(), k.says));
    // Refused before anything started: no server ever listened, no process was left.
    CHECK_FALSE(AnyLineContains(run.Lines(), "listening on"));
    CHECK_FALSE(AnyLineContains(run.Lines(), "started"));
    CHECK(FindPid({session, "platoon-server"}) == 0);
    CHECK(FindPid({session, "platoon-node"}) == 0);
  }
}

TEST_CASE("operations: a second live node named alpha is refused (exit 3), once the first is lost, the name is reclaimed") {
  TempDir dir;
  auto server = StartServer(dir);
  auto first = StartNode(server.control_port, "alpha");
  REQUIRE(first.WaitForLine("joined session", 15s).has_value());

  auto second = StartNode(server.control_port, "alpha");
  const auto st = RunToExit(second, 15s);
  REQUIRE_MESSAGE(st.has_value(), "the second alpha was not refused within 15 s");
  CHECK(*st == 3);
  CHECK(AnyLineContains(second.Lines(), "node name 'alpha' is in use by a live node (host "));
  CHECK(AnyLineContains(second.Lines(), "pid " + std::to_string(first.Pid()) + ")"));
  CHECK_FALSE(AnyLineContains(second.Lines(), "joined session"));
  // The first was never displaced: still running, never refused, never welcomed again.
  CHECK_FALSE(first.TryWait().has_value());
  Collect(first);
  CHECK_FALSE(AnyLineContains(first.Lines(), "refused"));
  CHECK_FALSE(AnyLineContains(first.Lines(), "still in session"));
  CHECK(server.child.WaitForLine("is in use by a live node", 5s).has_value());

  // A node that lost its connection gives its name up: kill -9, the server marks it lost, a new alpha joins.
  first.Signal(SIGKILL);
  CHECK(WaitForKilled(first, "the first alpha (kill -9)") == std::optional<int>(128 + SIGKILL));
  REQUIRE(server.child.WaitForLine("node 'alpha' lost", 10s).has_value());
  auto third = StartNode(server.control_port, "alpha");
  CHECK(third.WaitForLine("joined session", 15s).has_value());
  third.Signal(SIGTERM);
  CHECK(RunToExit(third, 10s) == std::optional<int>(0));
  CheckNoErrorLines(third, "third alpha");
}

TEST_CASE("operations: a launcher killed with SIGKILL takes its server and nodes with it, the ports are free again") {
  TempDir dir;
  const auto ports = FreePorts(4);
  const std::string session =
      dir.Write("orphans.toml", "[session]\nname = \"orphans\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                                    std::to_string(ports[0]) + "\ntime_port = " + std::to_string(ports[1]) +
                                    "\nworld_port = " + std::to_string(ports[2]) + "\nstate_port = " +
                                    std::to_string(ports[3]) + "\n[[node]]\nname = \"n1\"\n[[node]]\nname = \"n2\"\n");
  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session});
  REQUIRE(launcher.WaitForLine("joined session", 20s).has_value());
  std::vector<int> children = FindPids({session, "platoon-server"});
  REQUIRE(children.size() == 1);
  const auto nodes = FindPids({session, "platoon-node"});
  REQUIRE(!nodes.empty());
  children.insert(children.end(), nodes.begin(), nodes.end());
  CHECK_FALSE(PortFree(ports[0]));  // the server holds its control port
  for (int pid : children) CHECK(LiveThreads(pid) > 0);  // running (a node just spawned may have one thread yet)

  launcher.Signal(SIGKILL);
  CHECK(WaitForKilled(launcher, "launcher") == std::optional<int>(128 + SIGKILL));
  // The children got SIGTERM from the kernel (PR_SET_PDEATHSIG) and stop cleanly. As WaitForStopped does for
  // a child of the test's own: 10 s, then whatever is left is described (thread states) and given 50 s more,
  // so that a machine whose kernel tears processes down slowly (docs/TESTING.md, "The suite under load")
  // shows as such; that they are gone is still the check.
  const auto t0 = std::chrono::steady_clock::now();
  // Gone means every thread gone: a process whose main thread has exited no longer shows a command line
  // while its other threads may still hold its sockets (LiveThreads).
  const auto children_left = [&] {
    return std::any_of(children.begin(), children.end(), [](int pid) { return LiveThreads(pid) > 0; });
  };
  const auto poll_until = [&](std::chrono::steady_clock::time_point deadline) {
    while (std::chrono::steady_clock::now() < deadline && children_left()) {
      struct timespec ts{0, 20'000'000};
      nanosleep(&ts, nullptr);  // polling /proc for the children's exit, bounded by the deadline
    }
  };
  poll_until(t0 + 10s);
  if (children_left()) {
    std::string report;
    for (int pid : children)
      if (LiveThreads(pid) > 0) report += "pid " + std::to_string(pid) + ":\n" + ThreadStates(pid);
    poll_until(t0 + 60s);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    MESSAGE("the launcher's children, not gone 10 s after it was killed; their threads then:\n"
            << report << (children_left() ? "still there" : "gone") << " after " << took.count() << " ms");
  }
  for (int pid : children) CHECK_MESSAGE(LiveThreads(pid) == 0, "pid " << pid << " has threads left");
  CHECK(FindPid({session, "platoon-server"}) == 0);
  CHECK(FindPid({session, "platoon-node"}) == 0);
  for (uint16_t p : ports) CHECK_MESSAGE(PortFree(p), "127.0.0.1:" << p << " cannot be bound; sockets on it:\n" << PortHolders(p));
}
