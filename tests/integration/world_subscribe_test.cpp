// The world port takes nothing from its peers but the empty subscription: a peer that speaks ZMTP to it
// and sends one huge subscription frame is disconnected before the server buffers the frame, so the
// server's memory and its broadcast loop stay as they were. Real platoon-server and platoon-node
// processes; the hostile peer is a plain TCP socket of this test speaking ZMTP 3.0 as a SUB (a ZeroMQ
// SUB/XSUB would itself store the 32 MiB topic in its own subscription trie first).
#include "../support/session_fixture.hpp"
#include "../support/stop_wait.hpp"

#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <zmq.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <regex>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// The session's broadcast rate: an observer's longest world-state gap is held to two periods (100 ms).
constexpr double kWorldSubBroadcastHz = 20;

// A value in kB from /proc/<pid>/status ("VmRSS", "VmHWM"); -1 when absent.
long WorldSubStatusKb(int pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

// Parses "view: L/E live, S stale | ...": every entity live.
bool WorldSubAllLive(const std::string& line) {
  static const std::regex re(R"(view: (\d+)/(\d+) live, (\d+) stale)");
  std::smatch m;
  return std::regex_search(line, m, re) && std::stoi(m[2]) > 0 && m[1] == m[2] && m[3] == "0";
}

// Reads `c`'s lines for `span`; true when at least one all-live view came and none was partial.
bool WorldSubLiveFor(process::Child& c, std::chrono::milliseconds span) {
  const auto end = Clock::now() + span;
  bool any = false;
  while (Clock::now() < end)
    if (auto line = c.ReadLine(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
        line && line->find("view: ") != std::string::npos) {
      if (!WorldSubAllLive(*line)) return false;
      any = true;
    }
  return any;
}

bool WorldSubWaitLive(process::Child& c, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline)
    if (auto line = c.ReadLine(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
        line && WorldSubAllLive(*line))
      return true;
  return false;
}

// Writes all of `bytes`; false once the peer has closed or reset the connection.
bool WorldSubWrite(int fd, const std::string& bytes) {
  for (size_t off = 0; off < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads the server's greeting (64 bytes) and its READY command (flag, size, body). A peer that sends a
// message before the server's READY is cut for that (ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND), not for
// the frame's size, so the hostile peer waits for it as a ZeroMQ SUB would. False when the server closed.
bool WorldSubHandshake(int fd) {
  std::string in;
  char buf[512];
  while (in.size() < 66 || in.size() < size_t{66} + static_cast<unsigned char>(in[65])) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
  }
  return true;
}

// Connects to the world port as a ZMTP 3.0 SUB (NULL mechanism), sends `frames` (ZMTP frames, already
// framed) after the handshake, closes. Returns true when the server cut the connection.
bool WorldSubSendFrames(uint16_t port, const std::string& frames) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  // Greeting: signature, version 3.0, mechanism "NULL", as-server 0, filler (64 bytes).
  std::string greeting(64, '\0');
  greeting[0] = '\xff';
  greeting[9] = '\x7f';
  greeting[10] = 3;
  greeting[11] = 0;
  greeting.replace(12, 4, "NULL");
  // READY command with Socket-Type = SUB.
  std::string ready = std::string("\x05READY") + char(11) + "Socket-Type" + std::string("\0\0\0\3", 4) + "SUB";
  std::string head = greeting + char(0x04) + char(ready.size()) + ready;
  REQUIRE(WorldSubWrite(fd, head));
  REQUIRE_MESSAGE(WorldSubHandshake(fd), "the server did not complete the ZMTP handshake");
  // A failed write is a cut, unless it only timed out (the server stopped reading: not cut, yet).
  bool cut = !WorldSubWrite(fd, frames) && errno != EAGAIN && errno != EWOULDBLOCK;
  // Read until the server closes (cut) or stays silent (5 s, kept).
  char buf[4096];
  while (!cut) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) cut = true;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
  }
  ::close(fd);
  return cut;
}

// One subscription frame of `frame_bytes` (0x01 then the topic) as a long frame (flag 0x02, 8-byte
// big-endian size).
std::string WorldSubLongFrame(size_t frame_bytes) {
  std::string frame(9 + frame_bytes, 'x');
  frame[0] = 0x02;
  for (int i = 0; i < 8; ++i) frame[1 + i] = static_cast<char>((uint64_t(frame_bytes) >> (8 * (7 - i))) & 0xff);
  frame[9] = 0x01;
  return frame;
}

// `count` distinct subscriptions of 8 to 40 bytes, each a short frame (flag 0x00, size, 0x01, topic).
std::string WorldSubManyTopics(int count) {
  std::string out;
  uint64_t x = 88172645463325252ull;  // xorshift64: distinct topics, the same every run
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < count; ++i) {
    const size_t n = 8 + next() % 33;
    std::string topic = std::to_string(i) + "-";
    while (topic.size() < n) topic += static_cast<char>('a' + next() % 26);
    out += '\0';
    out += static_cast<char>(n + 1);
    out += '\x01';
    out += topic;
  }
  return out;
}

// A parameter's value read over the control port ("" when there is no answer in 5 s).
std::string WorldSubParam(uint16_t control_port, const std::string& path) {
  zmq::context_t ctx(1);
  zmq::socket_t c(ctx, zmq::socket_type::dealer);
  c.set(zmq::sockopt::linger, 0);
  c.set(zmq::sockopt::rcvtimeo, 5000);
  c.connect("tcp://127.0.0.1:" + std::to_string(control_port));
  c.send(zmq::buffer(protocol::Encode(protocol::ParamGet{path, 1})));
  zmq::message_t reply;
  if (!c.recv(reply)) return {};
  const auto d = protocol::Decode(reply.to_string());
  const auto* r = d.message ? std::get_if<protocol::ParamReply>(&*d.message) : nullptr;
  return r && r->ok ? r->param.value : std::string();
}

}  // namespace

TEST_CASE("world subscribe: subscription frames of 64 KiB to 32 MiB and 50,000 distinct small subscriptions disconnect the peer, server memory and world-state gaps stay bounded") {
  TempDir dir;
  const auto p = FreePorts(4);
  std::string text = "[session]\nname = \"world-subscribe-test\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " +
                     std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " +
                     std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                     "\nbroadcast_hz = " + std::to_string(kWorldSubBroadcastHz) + "\n";
  for (const auto& [name, role] : {std::pair{"n1", "traffic"}, std::pair{"obs", "observer"}})
    text += std::string("[[node]]\nname = \"") + name + "\"\nrole = \"" + role +
            "\"\nvehicles = 4\nmonitor_rate_hz = 50\nstatus_interval_s = 0\n";
  const std::string session = dir.Write("session.toml", text);
  auto server = process::Child::Spawn({BinDir() + "/platoon-server", "--config", session, "--autostart", "0"});
  REQUIRE(server.WaitForLine("listening on", 10s));
  auto n1 = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "n1"});
  auto obs = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "obs"});
  REQUIRE_MESSAGE(WorldSubWaitLive(obs, 30s), "the observer never saw all vehicles live");
  REQUIRE(WorldSubLiveFor(obs, 1000ms));

  const int pid = server.Pid();
  const long rss0 = WorldSubStatusKb(pid, "VmRSS"), hwm0 = WorldSubStatusKb(pid, "VmHWM");
  REQUIRE(rss0 > 0);
  MESSAGE("server baseline: VmRSS " << rss0 / 1024.0 << " MB, VmHWM " << hwm0 / 1024.0 << " MB");
  constexpr long kBoundKb = 20 * 1024;
  // 50,000 distinct subscriptions of 8 to 40 bytes (1.3 MB), each frame far below the 512-byte limit: libzmq
  // would store every topic (about 40 MB) for as long as the peer stays. The server cuts the peer once it
  // has sent more than a subscriber ever does (4 KiB), exactly once for the one peer.
  {
    const std::string topics = WorldSubManyTopics(50'000);
    const bool cut = WorldSubSendFrames(p[2], topics);
    const bool live = WorldSubLiveFor(obs, 1000ms);
    const long rss = WorldSubStatusKb(pid, "VmRSS"), hwm = WorldSubStatusKb(pid, "VmHWM");
    MESSAGE("50,000 distinct subscriptions (" << topics.size() << " bytes): peer "
                                               << std::string(cut ? "disconnected" : "kept") << ", server VmRSS "
                                               << rss / 1024.0 << " MB (+" << (rss - rss0) / 1024.0 << "), VmHWM "
                                               << hwm / 1024.0 << " MB (+" << (hwm - hwm0) / 1024.0 << ")");
    CHECK(cut);
    CHECK(live);
    CHECK(rss - rss0 <= kBoundKb);
    CHECK(hwm - std::max(hwm0, rss0) <= kBoundKb);
    // Counted exactly: one peer cut (read before the big frames, which ZeroMQ's size limit may cut first).
    CHECK(WorldSubParam(p[0], "server.refused.subscription") == "1");
  }

  for (const size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{8} << 20, size_t{32} << 20}) {
    const bool cut = WorldSubSendFrames(p[2], WorldSubLongFrame(bytes));
    // One second of the observer's views after the peer is gone: every one all live, and the server's
    // loop has broadcast (and so processed whatever the peer left) twenty times meanwhile.
    const bool live = WorldSubLiveFor(obs, 1000ms);
    const long rss = WorldSubStatusKb(pid, "VmRSS"), hwm = WorldSubStatusKb(pid, "VmHWM");
    MESSAGE((bytes / 1024) << " KiB frame: peer " << std::string(cut ? "disconnected" : "kept") << ", server VmRSS "
                         << rss / 1024.0 << " MB (+" << (rss - rss0) / 1024.0 << "), VmHWM " << hwm / 1024.0
                         << " MB (+" << (hwm - hwm0) / 1024.0 << ")");
    CHECK(cut);
    CHECK(live);
    CHECK(rss - rss0 <= kBoundKb);
    CHECK(hwm - std::max(hwm0, rss0) <= kBoundKb);
  }

  // The observer's longest world-state gap over the whole run: within two broadcast periods.
  const double bound_ms = 2 * 1000 / kWorldSubBroadcastHz;
  obs.Signal(SIGTERM);
  REQUIRE(obs.WaitForLine("SUMMARY", 10s));
  WaitForStopped(obs, "obs");
  const double gap = SummaryValue(obs.Lines(), "world_max_gap_ms").value_or(1e9);
  MESSAGE("observer: longest world-state gap " << gap << " ms (bound " << bound_ms << " ms)");
  CHECK(gap <= bound_ms);
  CheckNoErrorLines(obs, "obs");
  n1.Signal(SIGTERM);
  REQUIRE(n1.WaitForLine("SUMMARY", 10s));
  WaitForStopped(n1, "n1");
  CheckNoErrorLines(n1, "n1");
  server.Signal(SIGTERM);
  REQUIRE(server.WaitForLine("SUMMARY", 10s));
  // Its exit status is the flood and session tests' check, not this one's.
  WaitForStopped(server, "server");
  CheckNoErrorLines(server, "server");
}
