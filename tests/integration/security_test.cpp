// CURVE authentication (shared/src/transport/security.cpp, the [security] table, `platoon keys`): the key
// files and their errors in-process, then real processes over loopback with [security] mode = "curve":
// an authorised node joins and the world reaches authorised subscribers only; an unknown key or no key
// gets no join, no world state and no control. Every wait is a handshake with a deadline.
#include "../support/session_fixture.hpp"
#include "platoon/config/session.hpp"
#include "platoon/server/world_core.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/transport/security.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <zmq.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

// Throws-with-message check: `f` throws KeyError (or ConfigError) whose text contains every part.
template <class E, class F>
void CheckThrowsWith(F f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL("expected an exception");
  } catch (const E& e) {
    const std::string what = e.what();
    INFO(what);
    for (const auto& p : parts) CHECK(what.find(p) != std::string::npos);
  }
}

process::Child Run(std::vector<std::string> args) {
  args.insert(args.begin(), BinDir() + "/platoon");
  return process::Child::Spawn(args);
}

// `platoon keys new DIR --clients NAMES`, which must succeed.
void MakeKeys(const std::string& dir, const std::string& clients) {
  auto k = Run({"keys", "new", dir, "--clients", clients});
  REQUIRE(RunToExit(k, 20s) == std::optional<int>(0));
}

// A session on free loopback ports with [security] mode = "curve" and the keys under dir/keys.
std::string CurveSession(const TempDir& dir, const std::string& nodes) {
  const auto p = FreePorts(4);
  return dir.Write("session.toml",
                   "[session]\nname = \"secure\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                       std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                       std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                       "\nstatus_interval_s = 0\n"
                       "[security]\nmode = \"curve\"\nserver_key = \"keys/server.key_secret\"\n"
                       "server_public_key = \"keys/server.key\"\nclients = \"keys/clients\"\n"
                       "key = \"keys/clients/teacher.key_secret\"\noperators = [\"teacher\"]\n" +
                       nodes);
}

struct CtlResult {
  int code = -1;
  std::vector<std::string> lines;
  bool Says(const std::string& s) const { return AnyLineContains(lines, s); }
};

CtlResult Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), {BinDir() + "/platoon", "ctl"});
  auto c = process::Child::Spawn(args);
  const auto st = RunToExit(c, 40s);
  REQUIRE_MESSAGE(st.has_value(), "platoon ctl did not exit within 40 s");
  return {*st, c.Lines()};
}

}  // namespace

TEST_CASE("security: key files round-trip and bad ones give errors naming the file and the fault") {
  REQUIRE(transport::CurveAvailable());
  TempDir dir;
  const auto pair = transport::NewKeyPair();
  CHECK(pair.public_key.size() == 40);
  CHECK(transport::CheckZ85Key(pair.secret_key).empty());
  CHECK(transport::PublicKeyOf(pair.secret_key) == pair.public_key);

  // Written secret keys are private to their owner and read back with comments skipped.
  const std::string secret = dir.Path() + "/a.key_secret";
  transport::WriteKeyFile(secret, pair.secret_key, "test key", true);
  struct stat st{};
  REQUIRE(stat(secret.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(transport::ReadKeyFile(secret) == pair.secret_key);
  // Never overwritten.
  CheckThrowsWith<transport::KeyError>([&] { transport::WriteKeyFile(secret, pair.secret_key, "again", true); },
                                       {secret, "exists", "never overwritten"});

  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadKeyFile(dir.Path() + "/missing.key"); },
                                       {"missing.key", "cannot read", "platoon keys new"});
  const std::string short_key = dir.Write("short.key", "# comment\nabc\n");
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadKeyFile(short_key); },
                                       {short_key + ":2:", "40-character", "got 3 characters"});
  const std::string bad_char = dir.Write("bad.key", std::string(39, 'a') + "~\n");
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadKeyFile(bad_char); },
                                       {bad_char + ":1:", "'~'", "position 40", "not Z85"});
  const std::string empty = dir.Write("empty.key", "# only a comment\n\n");
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadKeyFile(empty); }, {empty, "found no key"});
  const std::string two = dir.Write("two.key", pair.public_key + "\n" + pair.public_key + "\n");
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadKeyFile(two); }, {two + ":2:", "one key per file"});

  // The authorised folder: names from the file names, a malformed one named, the same key twice refused.
  const std::string clients = dir.Path() + "/clients";
  std::filesystem::create_directory(clients);
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadAuthorisedKeys(clients); }, {clients, "no client public key"});
  transport::WriteKeyFile(clients + "/pc1.key", pair.public_key, "pc1", false);
  transport::WriteKeyFile(clients + "/pc1.key_secret", pair.secret_key, "pc1", true);  // ignored: a secret file
  const auto keys = transport::ReadAuthorisedKeys(clients);
  REQUIRE(keys.size() == 1);
  CHECK(keys.at("pc1") == pair.public_key);
  transport::WriteKeyFile(clients + "/pc2.key", pair.public_key, "pc2", false);
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadAuthorisedKeys(clients); }, {"the same key as", "each client needs its own key"});
  CheckThrowsWith<transport::KeyError>([&] { (void)transport::ReadAuthorisedKeys(dir.Path() + "/nope"); },
                                       {"nope", "expected a folder"});
}

TEST_CASE("security: a server beyond loopback needs keys, mode off is loopback only, a loopback session needs none") {
  using config::ConfigError;
  // Loopback without [security]: CURVE off, and the summary says why that is safe on one PC only.
  auto loopback = config::LoadSessionText("[server]\nbind_address = \"127.0.0.1\"\n", "lo.toml");
  CHECK_FALSE(config::CurveOn(loopback));
  CHECK_NOTHROW(config::ValidateSession(loopback));
  CHECK(config::SecuritySummary(loopback).find("authentication is OFF") != std::string::npos);
  // The default bind is loopback.
  CHECK(config::LoadSessionText("", "empty.toml").server.bind_address == "127.0.0.1");

  auto lan = config::LoadSessionText("[server]\nbind_address = \"*\"\n", "lan.toml");
  CHECK(config::CurveOn(lan));
  CheckThrowsWith<ConfigError>([&] { config::ValidateSession(lan); },
                               {"lan.toml", "beyond loopback", "server_key", "platoon keys new"});
  auto off = config::LoadSessionText("[server]\nbind_address = \"*\"\n[security]\nmode = \"off\"\n", "off.toml");
  CheckThrowsWith<ConfigError>([&] { config::ValidateSession(off); }, {"off.toml:3: security.mode", "only for a server that binds loopback"});
  // Keys named, but a node without a client key.
  auto keyless = config::LoadSessionText(
      "[server]\nbind_address = \"*\"\n[security]\nserver_key = \"k/server.key_secret\"\nserver_public_key = "
      "\"k/server.key\"\nclients = \"k/clients\"\n[[node]]\nname = \"seat1\"\n",
      "/lab/keyless.toml");
  CHECK(keyless.security.server_key == "/lab/k/server.key_secret");  // relative to the session file
  CheckThrowsWith<ConfigError>([&] { config::ValidateSession(keyless); }, {"node \"seat1\" has no client key"});
  CheckThrowsWith<ConfigError>([&] { (void)config::LoadSessionText("[security]\nmode = \"maybe\"\n", "m.toml"); },
                               {"m.toml:2", "mode"});
  CheckThrowsWith<ConfigError>([&] { (void)config::LoadSessionText("[security]\noperators = [\"a b\"]\n", "o.toml"); },
                               {"o.toml:2", "operators", "\"a b\""});
}

TEST_CASE("security: platoon keys new, add and list make key folders and refuse to overwrite, check accepts them") {
  TempDir dir;
  const std::string keys = dir.Path() + "/keys";
  auto made = Run({"keys", "new", keys, "--clients", "teacher,pc1,pc2", "--operator", "teacher"});
  REQUIRE(RunToExit(made, 20s) == std::optional<int>(0));
  CHECK(AnyLineContains(made.Lines(), "[security]"));
  CHECK(AnyLineContains(made.Lines(), "operators = [\"teacher\"]"));
  for (const char* f : {"server.key", "server.key_secret", "clients/teacher.key", "clients/pc1.key_secret", "clients/pc2.key"})
    CHECK_MESSAGE(std::filesystem::exists(keys + "/" + f), f);
  struct stat st{};
  REQUIRE(stat((keys + "/clients/pc1.key_secret").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string server_public = transport::ReadKeyFile(keys + "/server.key");

  // Again: refused, nothing replaced.
  auto again = Run({"keys", "new", keys, "--clients", "pc1"});
  CHECK(RunToExit(again, 20s) == std::optional<int>(2));
  CHECK(AnyLineContains(again.Lines(), "never overwritten"));
  CHECK(transport::ReadKeyFile(keys + "/server.key") == server_public);

  auto add = Run({"keys", "add", keys, "pc3"});
  CHECK(RunToExit(add, 20s) == std::optional<int>(0));
  auto dup = Run({"keys", "add", keys, "pc3"});
  CHECK(RunToExit(dup, 20s) == std::optional<int>(2));
  auto bad = Run({"keys", "add", keys, "../evil"});
  CHECK(RunToExit(bad, 20s) == std::optional<int>(2));
  CHECK(AnyLineContains(bad.Lines(), "not a client key name"));
  auto list = Run({"keys", "list", keys});
  REQUIRE(RunToExit(list, 20s) == std::optional<int>(0));
  CHECK(AnyLineContains(list.Lines(), server_public));
  for (const char* n : {"teacher", "pc1", "pc2", "pc3"}) CHECK(AnyLineContains(list.Lines(), std::string("client ") + n));

  // A LAN session: without keys check fails naming the fix; with them it passes.
  const std::string node = "[[node]]\nname = \"seat1\"\nkey = \"keys/clients/pc1.key_secret\"\n";
  const std::string bare = dir.Write("bare.toml", "[server]\nbind_address = \"*\"\n" + node);
  auto refused = Run({"check", bare});
  CHECK(RunToExit(refused, 20s) == std::optional<int>(2));
  CHECK(AnyLineContains(refused.Lines(), "platoon keys new"));
  const std::string lab = dir.Write(
      "lab.toml", "[server]\nbind_address = \"*\"\n[security]\nserver_key = \"keys/server.key_secret\"\n"
                  "server_public_key = \"keys/server.key\"\nclients = \"keys/clients\"\noperators = [\"teacher\"]\n" + node);
  auto ok = Run({"check", lab});
  CHECK(RunToExit(ok, 20s) == std::optional<int>(0));
  CheckNoErrorLines(ok, "platoon check");
}

TEST_CASE("security: with CURVE on, only authorised keys join, read the world and steer the session") {
  TempDir dir;
  MakeKeys(dir.Path() + "/keys", "teacher,alpha");
  MakeKeys(dir.Path() + "/other", "mallory");  // a well-formed key the server does not know
  const std::string session = CurveSession(
      dir, "[[node]]\nname = \"alpha\"\nrole = \"traffic\"\nvehicles = 4\nstatus_interval_s = 0\n"
           "key = \"keys/clients/alpha.key_secret\"\n"
           "[[node]]\nname = \"mallory\"\nrole = \"traffic\"\nvehicles = 4\nstatus_interval_s = 0\n"
           "key = \"other/clients/mallory.key_secret\"\n");
  const auto def = config::LoadSession(session);
  const std::string ready = dir.Path() + "/ready.json";
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0",
                                       "--ready-file", ready});
  {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!std::filesystem::exists(ready)) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "server did not become ready within 15 s");
      REQUIRE_MESSAGE(!server.TryWait(), "server exited before becoming ready");
      server.ReadLine(20ms);
    }
  }
  CHECK(AnyLineContains(server.Lines(), "CURVE encryption and authentication on"));

  // Three world subscribers from the start: the authorised key, an unknown key, no key at all.
  zmq::context_t ctx(1);
  const auto good_curve = config::LoadClientCurve(def, "");
  REQUIRE(good_curve.has_value());
  auto unknown_curve = *good_curve;
  unknown_curve.secret_key = transport::ReadKeyFile(dir.Path() + "/other/clients/mallory.key_secret");
  unknown_curve.public_key = transport::PublicKeyOf(unknown_curve.secret_key);
  transport::Channel good(ctx, transport::Pattern::kSub, transport::ChannelDef{.curve = good_curve});
  transport::Channel unknown(ctx, transport::Pattern::kSub, transport::ChannelDef{.curve = unknown_curve});
  transport::Channel plain(ctx, transport::Pattern::kSub);
  const std::string world = transport::TcpEndpoint("127.0.0.1", def.server.world_port);
  for (auto* c : {&good, &unknown, &plain}) c->Connect(world);

  auto alpha = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "alpha"});
  auto mallory = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "mallory"});
  REQUIRE_MESSAGE(alpha.WaitForLine("joined session", 30s).has_value(), "the authorised node did not join within 30 s");

  // The authorised subscriber sees world states; the others see none in the same time, and then 2 s more.
  int good_count = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (good_count < 20 && std::chrono::steady_clock::now() < deadline)
    if (good.Receive(100ms)) ++good_count;
  CHECK(good_count >= 20);
  CHECK_FALSE(unknown.Receive(2s).has_value());
  CHECK_FALSE(plain.Receive(10ms).has_value());
  CHECK(good.Stats().received >= 20);
  CHECK(unknown.Stats().received == 0);
  CHECK(plain.Stats().received == 0);

  // Control with an unknown key or none: no answer, so nothing changes.
  const std::string server_key = dir.Path() + "/keys/server.key";
  const std::string at = "127.0.0.1:" + std::to_string(def.server.control_port);
  auto bad_pause = Ctl({"--server", at, "--key", dir.Path() + "/other/clients/mallory.key_secret", "--server-key",
                        server_key, "--timeout", "3", "pause"});
  CHECK(bad_pause.code == 1);
  CHECK(bad_pause.Says("no answer"));
  auto plain_pause = Ctl({"--server", at, "--timeout", "3", "pause"});
  CHECK(plain_pause.code == 1);
  auto status = Ctl({"--config", session, "--timeout", "20", "status", "--json"});
  REQUIRE(status.code == 0);
  CHECK(status.Says("\"phase\":\"running\""));
  CHECK(status.Says("\"name\":\"alpha\""));
  CHECK_FALSE(status.Says("\"name\":\"mallory\""));  // never joined
  // The operator key may pause.
  auto pause = Ctl({"--config", session, "--timeout", "20", "pause"});
  CHECK(pause.code == 0);
  auto paused = Ctl({"--config", session, "--timeout", "20", "status", "--json"});
  CHECK(paused.Says("\"phase\":\"paused\""));

  // The unknown node never joined; the server counted the refusals and logged them (not once per attempt).
  Collect(mallory);
  CHECK_FALSE(AnyLineContains(mallory.Lines(), "joined session"));
  mallory.Signal(SIGTERM);
  alpha.Signal(SIGTERM);
  RunToExit(mallory, 15s);
  RunToExit(alpha, 15s);
  server.Signal(SIGTERM);
  REQUIRE(RunToExit(server, 15s).has_value());
  std::smatch m;
  bool counted = false;
  int refusal_lines = 0;
  for (const auto& l : server.Lines()) {
    if (l.find("CURVE handshake(s)") != std::string::npos) ++refusal_lines;
    if (std::regex_search(l, m, std::regex(R"(CURVE handshakes: (\d+) admitted, (\d+) refused)"))) {
      counted = true;
      CHECK(std::stoi(m[1]) >= 3);   // alpha, the good subscriber, the operator's ctl
      CHECK(std::stoi(m[2]) >= 2);   // mallory's node and subscriber, the unknown ctl
    }
  }
  CHECK(counted);
  CHECK(refusal_lines >= 1);
  CHECK(refusal_lines <= 6);  // once per 10 s period at most, however many attempts
  CheckNoErrorLines(server, "platoon-server");
  CheckNoErrorLines(alpha, "alpha");
}

TEST_CASE("security: an authorised key that is not an operator reads status but cannot steer, set or mark") {
  TempDir dir;
  MakeKeys(dir.Path() + "/keys", "teacher,student,alpha");
  const std::string session = CurveSession(
      dir, "[[node]]\nname = \"alpha\"\nrole = \"traffic\"\nvehicles = 4\nstatus_interval_s = 0\n"
           "key = \"keys/clients/alpha.key_secret\"\n");
  const auto def = config::LoadSession(session);
  const std::string ready = dir.Path() + "/ready.json";
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0",
                                       "--ready-file", ready});
  {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!std::filesystem::exists(ready)) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "server did not become ready within 15 s");
      REQUIRE_MESSAGE(!server.TryWait(), "server exited before becoming ready");
      server.ReadLine(20ms);
    }
  }
  auto alpha = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "alpha"});
  REQUIRE_MESSAGE(alpha.WaitForLine("joined session", 30s).has_value(), "the node did not join within 30 s");

  const std::string student_key = dir.Path() + "/keys/clients/student.key_secret";
  const std::string server_key = dir.Path() + "/keys/server.key";
  const std::string at = "127.0.0.1:" + std::to_string(def.server.control_port);
  auto as_student = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"--server", at, "--key", student_key, "--server-key", server_key, "--timeout", "20"};
    all.insert(all.end(), args.begin(), args.end());
    return Ctl(all);
  };

  // Reads are open (open_status defaults to true): the student sees the session.
  auto status = as_student({"status", "--json"});
  REQUIRE(status.code == 0);
  CHECK(status.Says("\"phase\":\"running\""));
  CHECK(status.Says("\"name\":\"alpha\""));
  auto get = as_student({"param", "get", "server.broadcast_hz"});
  CHECK(get.code == 0);

  // Steering, parameter sets and markers are refused with the reason, and change nothing.
  auto pause = as_student({"pause"});
  CHECK(pause.code == 1);
  CHECK(pause.Says("not an operator"));
  auto set = as_student({"param", "set", "server.broadcast_hz", "25"});
  CHECK(set.code == 1);
  CHECK(set.Says("not an operator"));
  auto mark = as_student({"mark", "sneaky"});
  CHECK(mark.code == 1);
  CHECK(mark.Says("not an operator"));

  auto after = Ctl({"--config", session, "--timeout", "20", "status", "--json"});  // the operator's key
  REQUIRE(after.code == 0);
  CHECK(after.Says("\"phase\":\"running\""));
  auto events = Ctl({"--config", session, "--timeout", "20", "events"});
  CHECK(events.code == 0);
  CHECK_FALSE(events.Says("sneaky"));
  CHECK_FALSE(events.Says("server.broadcast_hz = 25"));

  // The operator may do all three.
  CHECK(Ctl({"--config", session, "--timeout", "20", "param", "set", "server.broadcast_hz", "25"}).code == 0);
  CHECK(Ctl({"--config", session, "--timeout", "20", "mark", "allowed"}).code == 0);
  CHECK(Ctl({"--config", session, "--timeout", "20", "pause"}).code == 0);
  CHECK(Ctl({"--config", session, "--timeout", "20", "status", "--json"}).Says("\"phase\":\"paused\""));

  alpha.Signal(SIGTERM);
  RunToExit(alpha, 15s);
  server.Signal(SIGTERM);
  REQUIRE(RunToExit(server, 15s).has_value());
  // The refusals were counted and logged, once per period rather than once per message.
  int refusal_lines = 0;
  for (const auto& l : server.Lines())
    if (l.find("not an operator") != std::string::npos) ++refusal_lines;
  CHECK(refusal_lines >= 1);
  CHECK(refusal_lines <= 3);
}

TEST_CASE("security: plain sockets and wrong server keys are counted through the socket monitor, and the exit line names every server.refused counter") {
  TempDir dir;
  MakeKeys(dir.Path() + "/keys", "teacher");
  MakeKeys(dir.Path() + "/other", "mallory");  // another server's key: a client holding it has the wrong one
  const std::string session = CurveSession(dir, "");
  const auto def = config::LoadSession(session);
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 15s));

  // A plain DEALER and a CURVE DEALER with an authorised client key but another server's public key, both at
  // the control port: neither handshake reaches the ZAP handler.
  zmq::context_t ctx(1);
  auto wrong_server = config::LoadClientCurve(def, "");
  REQUIRE(wrong_server.has_value());
  wrong_server->server_key = transport::ReadKeyFile(dir.Path() + "/other/server.key");
  transport::Channel plain(ctx, transport::Pattern::kDealer);
  transport::Channel wrong(ctx, transport::Pattern::kDealer, transport::ChannelDef{.curve = wrong_server});
  const std::string control = transport::TcpEndpoint("127.0.0.1", def.server.control_port);
  plain.Connect(control);
  // The first refusal of each kind is logged at once. ZMTP sends the greeting in two parts: when the plain
  // client reads the server's whole greeting (CURVE) and hangs up before its own mechanism reached the server,
  // libzmq reports the failure without detail (handshake_protocol), else as a mechanism mismatch: a race of
  // the two peers, either way counted once.
  const auto first = server.WaitForLine("refused 1 ", 10s);
  CHECK((first && (first->find("another security mechanism") != std::string::npos ||
                   first->find("broke the protocol") != std::string::npos)));
  wrong.Connect(control);
  CHECK(server.WaitForLine("handshake(s) that failed to decrypt", 10s).has_value());
  plain.Disconnect(control);
  wrong.Disconnect(control);

  server.Signal(SIGTERM);
  REQUIRE(RunToExit(server, 15s).has_value());
  // The exit line: every refusal counter under its parameter's name; the two handshake kinds counted.
  std::string exit_line;
  for (const auto& l : server.Lines())
    if (l.find("refused: server.refused.") != std::string::npos) exit_line = l;
  REQUIRE_MESSAGE(!exit_line.empty(), "no exit line with the refusal counters");
  MESSAGE(exit_line);
  for (const auto& rc : server::RefusalCounters())
    CHECK_MESSAGE(exit_line.find(std::string(rc.name) + " ") != std::string::npos, rc.name);
  for (const char* name : {"unexpected_message", "join", "wrong_connection", "not_operator", "rate_limited",
                           "handshake_mechanism", "handshake_crypto", "handshake_auth", "handshake_protocol",
                           "subscription"})
    CHECK_MESSAGE(exit_line.find(std::string("server.refused.") + name + " ") != std::string::npos, name);
  std::smatch m;
  REQUIRE(std::regex_search(exit_line, m, std::regex(R"(server\.refused\.handshake_mechanism (\d+))")));
  const uint64_t mechanism = std::stoull(m[1]);
  REQUIRE(std::regex_search(exit_line, m, std::regex(R"(server\.refused\.handshake_crypto (\d+))")));
  const uint64_t crypto = std::stoull(m[1]);
  REQUIRE(std::regex_search(exit_line, m, std::regex(R"(server\.refused\.handshake_protocol (\d+))")));
  const uint64_t protocol_failures = std::stoull(m[1]);
  MESSAGE("handshake failures counted: mechanism " << mechanism << ", protocol " << protocol_failures << ", crypto "
                                                   << crypto);
  CHECK(mechanism + protocol_failures >= 1);  // the plain DEALER, reported either way (above)
  CHECK(crypto >= 1);
  // The lines of each kind add up to its counter (the last period written at exit).
  auto logged = [&](const std::string& kind) {
    uint64_t sum = 0;
    for (const auto& l : server.Lines())
      if (std::regex_search(l, m, std::regex(R"(refused (\d+) )" + kind))) sum += std::stoull(m[1]);
    return sum;
  };
  CHECK(logged(R"(connection\(s\) of another security mechanism)") == mechanism);
  CHECK(logged(R"(handshake\(s\) that failed to decrypt)") == crypto);
  CHECK(logged(R"(handshake\(s\) that broke the protocol)") == protocol_failures);
  CheckNoErrorLines(server, "platoon-server");
}
