// session::ResolveServer and the discovery files (shared/src/session/discovery.cpp): the order in which
// ctl, the viewer and Python find a server, stale files of killed runs, several sessions refused, and
// bad files named with their line and key.
#include "../support/session_fixture.hpp"
#include "platoon/session/discovery.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace platoon;
using namespace platoon::testing;

namespace {

session::DiscoveryEntry DiscoveryEntryFor(const std::string& name, uint16_t port, int pid) {
  session::DiscoveryEntry e;
  e.session = name;
  e.control = {"127.0.0.1", port};
  e.pid = pid;
  e.session_file = "/lab/" + name + ".toml";
  e.path = "/run/user/1000/platoon/" + session::DiscoveryFileName(name, pid);
  return e;
}

// The message session::ResolveServer throws for `q`, "" when it does not throw.
std::string DiscoveryRefusal(const session::ServerQuery& q) {
  try {
    (void)session::ResolveServer(q);
  } catch (const session::DiscoveryError& e) {
    return e.what();
  }
  return {};
}

bool DiscoverySays(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A private folder in `dir`, as the launcher makes it.
std::string DiscoveryPrivateDir(const TempDir& dir, const std::string& name = "platoon") {
  const std::string path = dir.Path() + "/" + name;
  REQUIRE(mkdir(path.c_str(), 0700) == 0);
  return path;
}

}  // namespace

TEST_CASE("server discovery: flags, then --config, --session, PLATOON_SERVER, the one running session, the default") {
  session::ServerQuery q;
  q.discovery_dir = "/run/user/1000/platoon";
  q.running = {DiscoveryEntryFor("demo", 7500, 4242)};
  q.environment = "lab-server:7600";
  q.config = session::ServerEndpoint{"10.0.0.5", 7700};
  q.config_path = "lab.toml";
  q.server_flag = "pc7:7800";

  // Each source in turn, taking the next one away.
  auto r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"pc7", 7800});
  CHECK(r.source == session::ServerSource::kFlag);
  CHECK(r.from == "from --server");
  q.server_flag.clear();
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"10.0.0.5", 7700});
  CHECK(r.source == session::ServerSource::kConfig);
  CHECK(r.from == "from --config lab.toml");
  q.config.reset();
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"lab-server", 7600});
  CHECK(r.source == session::ServerSource::kEnvironment);
  CHECK(r.from == "from PLATOON_SERVER");
  q.environment = "";  // set but empty: as unset
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"127.0.0.1", 7500});
  CHECK(r.source == session::ServerSource::kDiscovery);
  REQUIRE(r.session.has_value());
  CHECK(r.session->pid == 4242);
  CHECK(r.from == "from the running session 'demo' (discovery file /run/user/1000/platoon/demo.4242.server)");
  q.running.clear();
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"127.0.0.1", session::kDefaultControlPort});
  CHECK(r.source == session::ServerSource::kDefault);
  CHECK(DiscoverySays(r.from, "no session running in /run/user/1000/platoon"));

  // --session beats PLATOON_SERVER: it is a flag.
  q.running = {DiscoveryEntryFor("demo", 7500, 4242), DiscoveryEntryFor("other", 7900, 4343)};
  q.environment = "lab-server:7600";
  q.session_flag = "other";
  r = session::ResolveServer(q);
  CHECK(r.endpoint.port == 7900);
  CHECK(r.source == session::ServerSource::kSession);
  CHECK(DiscoverySays(r.from, "the running session 'other'"));
  q.session_flag = "nope";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "--session nope: no session of that name runs on this machine"));
  CHECK(DiscoverySays(DiscoveryRefusal(q), "'demo' at 127.0.0.1:7500"));
  q.session_flag = "demo";
  q.server_flag = "pc7:7800";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "give it without --server, --port and --config"));
}

TEST_CASE("server discovery: the viewer's --server HOST and --port fill in from --config or the defaults") {
  session::ServerQuery q;
  q.port_optional = true;
  q.server_flag = "lab-server";
  auto r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"lab-server", 7400});
  CHECK(r.from == "from --server (port 7400)");
  q.config = session::ServerEndpoint{"10.0.0.5", 7700};
  q.config_path = "lab.toml";
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"lab-server", 7700});
  CHECK(r.from == "from --server (port from --config lab.toml)");
  q.server_flag.clear();
  q.port_flag = 7100;
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"10.0.0.5", 7100});
  CHECK(r.from == "from --port (host from --config lab.toml)");
  q.server_flag = "pc7:7000";  // --port wins over the port in --server
  r = session::ResolveServer(q);
  CHECK(r.endpoint == session::ServerEndpoint{"pc7", 7100});
  CHECK(r.from == "from --server and --port");
  // ctl: --server needs its port.
  q = session::ServerQuery{};
  q.server_flag = "lab-server";
  CHECK(DiscoveryRefusal(q) == "--server: no port in \"lab-server\" (expected HOST:PORT, e.g. 127.0.0.1:7400 or lab-server:7400)");
}

TEST_CASE("server discovery: bad --server and PLATOON_SERVER values are refused, naming where they came from") {
  CHECK(session::ParseServerEndpoint("lab:7400") == session::ServerEndpoint{"lab", 7400});
  session::ServerQuery q;
  q.server_flag = "127.0.0.1:99999";
  CHECK(DiscoveryRefusal(q) == "--server: port 99999 is out of range 1..65535");
  q.server_flag = ":7400";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "--server: no host in \":7400\""));
  q.server_flag = "host:port";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "--server: port \"port\" is not a number"));
  q.server_flag = "::1:7400";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "is no host name or IPv4 address"));
  q.server_flag.clear();
  q.environment = "lab-server";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "PLATOON_SERVER=\"lab-server\": no port in \"lab-server\""));
  q.environment = "lab-server:0";
  CHECK(DiscoveryRefusal(q) == "PLATOON_SERVER=\"lab-server:0\": port 0 is out of range 1..65535");
  // A session file whose control port the OS chooses names no server by itself.
  q.environment.reset();
  q.config = session::ServerEndpoint{"127.0.0.1", 0};
  q.config_path = "auto.toml";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "--config auto.toml: control_port = 0 (a port the OS chooses)"));
}

TEST_CASE("server discovery: several running sessions are refused, listing each and how to choose") {
  session::ServerQuery q;
  q.discovery_dir = "/run/user/1000/platoon";
  q.running = {DiscoveryEntryFor("demo", 7500, 4242), DiscoveryEntryFor("lab", 7600, 4343)};
  const std::string message = DiscoveryRefusal(q);
  CHECK(DiscoverySays(message, "2 platoon sessions run on this machine (discovery files in /run/user/1000/platoon)"));
  CHECK(DiscoverySays(message, "'demo' at 127.0.0.1:7500 (pid 4242, /lab/demo.toml)"));
  CHECK(DiscoverySays(message, "'lab' at 127.0.0.1:7600 (pid 4343, /lab/lab.toml)"));
  CHECK(DiscoverySays(message, "choose one with --session NAME or --server HOST:PORT"));
  // Two runs of the same session file: --session cannot tell them apart, --server can.
  q.running = {DiscoveryEntryFor("demo", 7500, 4242), DiscoveryEntryFor("demo", 7504, 4343)};
  q.session_flag = "demo";
  CHECK(DiscoverySays(DiscoveryRefusal(q), "--session demo: 2 sessions of that name run on this machine"));
  CHECK(DiscoverySays(DiscoveryRefusal(q), "choose one with --server HOST:PORT"));
  // PLATOON_SERVER decides before the running sessions are counted.
  q.session_flag.clear();
  q.environment = "127.0.0.1:7504";
  CHECK(session::ResolveServer(q).endpoint.port == 7504);
}

TEST_CASE("server discovery: a discovery file reads back as written, and a bad one names its line and key") {
  session::DiscoveryEntry e = DiscoveryEntryFor("demo \"quoted\"\\x", 7500, 4242);
  e.session_file = "/home/lab/my sessions/demo.toml";
  e.path = "/d/f.server";
  const std::string text = session::FormatDiscoveryFile(e);
  CHECK(DiscoverySays(text, "format = 1\n"));
  CHECK(DiscoverySays(text, "control_port = 7500\n"));
  CHECK(DiscoverySays(text, "pid = 4242\n"));
  const auto back = session::ParseDiscoveryFile(text, "/d/f.server");
  CHECK(back.session == e.session);
  CHECK(back.control == e.control);
  CHECK(back.pid == e.pid);
  CHECK(back.session_file == e.session_file);
  CHECK(back.path == "/d/f.server");

  auto refusal = [](const std::string& t) {
    try {
      (void)session::ParseDiscoveryFile(t, "/d/bad.server");
    } catch (const session::DiscoveryError& err) {
      return std::string(err.what());
    }
    return std::string();
  };
  const std::string good = "session = \"demo\"\nhost = \"127.0.0.1\"\ncontrol_port = 7500\npid = 42\nsession_file = \"/x.toml\"\n";
  CHECK(refusal(good).empty());
  CHECK(refusal(good + "later_key = 1\n").empty());  // a newer launcher's keys are read past
  CHECK(DiscoverySays(refusal("session = \"demo\nhost"), "/d/bad.server:1:"));
  CHECK(DiscoverySays(refusal("session = \"demo\"\nhost = \"h\"\ncontrol_port = 7500\npid = 42\n"),
                 "session_file: is required"));
  CHECK(DiscoverySays(refusal("session = \"demo\"\nhost = \"h\"\npid = 42\nsession_file = \"/x\"\n"),
                 "control_port: is required"));
  std::string bad_port = good;
  bad_port.replace(bad_port.find("7500"), 4, "70000");
  CHECK(refusal(bad_port) == "/d/bad.server:3: control_port: expected an integer in [1, 65535], got 70000");
  std::string bad_pid = good;
  bad_pid.replace(bad_pid.find("pid = 42"), 8, "pid = \"42\"");
  CHECK(DiscoverySays(refusal(bad_pid), "/d/bad.server:4: pid: expected an integer"));
  CHECK(DiscoverySays(refusal("format = 2\n" + good), "format 2 is newer than this platoon reads (1)"));

  CHECK(session::DiscoveryFileName("demo", 42) == "demo.42.server");
  CHECK(session::DiscoveryFileName("../a b/c", 7) == "_._a_b_c.7.server");
  CHECK(session::DiscoveryDirFor("/run/user/1000", 1000) == "/run/user/1000/platoon");
  CHECK(session::DiscoveryDirFor("", 1000) == "/tmp/platoon-1000");
  CHECK(session::DiscoveryDirFor(nullptr, 0) == "/tmp/platoon-0");
}

TEST_CASE("server discovery: a file whose launcher is gone is stale and ignored, a bad one is named and skipped") {
  TempDir dir;
  const std::string folder = DiscoveryPrivateDir(dir);
  for (const auto& e : {DiscoveryEntryFor("live", 7500, 100), DiscoveryEntryFor("killed", 7600, 200)})
    std::ofstream(folder + "/" + session::DiscoveryFileName(e.session, e.pid)) << session::FormatDiscoveryFile(e);
  std::ofstream(folder + "/broken.300.server") << "session = 3\n";
  std::ofstream(folder + "/notes.txt") << "not a discovery file\n";
  std::ofstream(folder + "/.half.400.server.tmp") << "session = ";
  const auto scan = session::ScanDiscoveryDir(folder, [](int pid) { return pid == 100; });
  REQUIRE(scan.live.size() == 1);
  CHECK(scan.live[0].session == "live");
  CHECK(scan.live[0].path == folder + "/live.100.server");
  REQUIRE(scan.stale.size() == 1);
  CHECK(scan.stale[0].session == "killed");
  REQUIRE(scan.problems.size() == 1);
  CHECK(DiscoverySays(scan.problems[0], "ignored the discovery file " + folder + "/broken.300.server:1: session: expected a string"));

  // The stale session is not counted: the live one is the one running session.
  session::ServerQuery q;
  q.running = scan.live;
  q.discovery_dir = folder;
  CHECK(session::ResolveServer(q).endpoint.port == 7500);

  // This machine's test: this process lives; a child that exited and was reaped does not.
  CHECK(session::ProcessAlive(static_cast<int>(getpid())));
  auto child = process::Child::Spawn({"/bin/true"});
  const int pid = child.Pid();
  REQUIRE(RunToExit(child, std::chrono::seconds(10)).has_value());
  CHECK_FALSE(session::ProcessAlive(pid));
  CHECK_FALSE(session::ProcessAlive(0));
  CHECK_FALSE(session::ProcessAlive(-1));

  // A missing folder: nothing runs, nothing wrong.
  const auto none = session::ScanDiscoveryDir(dir.Path() + "/absent");
  CHECK(none.live.empty());
  CHECK(none.problems.empty());
}

TEST_CASE("server discovery: the launcher's file is private, sweeps stale files and goes with the session") {
  TempDir dir;
  const std::string folder = dir.Path() + "/xdg/platoon";  // made by the writer, parents too
  {
    std::filesystem::create_directories(folder);
    chmod(folder.c_str(), 0755);  // too open: the writer makes it private again
    std::ofstream(folder + "/" + session::DiscoveryFileName("old", 999999999)) << session::FormatDiscoveryFile(DiscoveryEntryFor("old", 7100, 999999999));
    session::DiscoveryEntry e = DiscoveryEntryFor("demo", 7500, static_cast<int>(getpid()));
    e.path.clear();
    session::DiscoveryFile file(folder, e);
    CHECK(file.Path() == folder + "/demo." + std::to_string(getpid()) + ".server");
    struct stat st {};
    REQUIRE(stat(folder.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(stat(file.Path().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    const auto scan = session::ScanDiscoveryDir(folder);
    REQUIRE(scan.live.size() == 1);
    CHECK(scan.live[0].control.port == 7500);
    CHECK(scan.stale.empty());  // the killed run's file was swept
    CHECK(scan.problems.empty());
    CHECK_FALSE(std::filesystem::exists(folder + "/" + session::DiscoveryFileName("old", 999999999)));
  }
  CHECK(std::filesystem::is_empty(folder));

  // A folder another could have made or redirected is neither read nor written.
  const std::string link = dir.Path() + "/link";
  std::filesystem::create_directory_symlink(folder, link);
  const auto scan = session::ScanDiscoveryDir(link);
  REQUIRE(scan.problems.size() == 1);
  CHECK(DiscoverySays(scan.problems[0], link + " is a symbolic link"));
  std::string refused;
  try {
    session::DiscoveryFile file(link, DiscoveryEntryFor("demo", 7500, static_cast<int>(getpid())));
  } catch (const session::DiscoveryError& e) {
    refused = e.what();
  }
  CHECK(DiscoverySays(refused, "will not write a discovery file: " + link + " is a symbolic link"));
  const std::string open_folder = DiscoveryPrivateDir(dir, "open");
  chmod(open_folder.c_str(), 0755);
  const auto open_scan = session::ScanDiscoveryDir(open_folder);
  REQUIRE(open_scan.problems.size() == 1);
  CHECK(DiscoverySays(open_scan.problems[0], open_folder + " has mode 0755, not 0700"));
}
