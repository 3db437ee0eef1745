// Limits per source in the world core: joins of new names rate-limited per address and per key, message
// buckets per address (key) beside those per connection, and the one name rule applied to a Join's name.
// No sockets: decoded messages in, replies and counters out.
#include "platoon/server/world_core.hpp"
#include "platoon/text/name_rule.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

namespace {

using namespace platoon;
using Socket = server::WorldCore::RouterSocket;

constexpr int64_t kPlMs = 1'000'000;
constexpr int64_t kPlS = 1'000'000'000;
constexpr int64_t kPlT0 = 1000 * kPlS;

protocol::Decoded PlOk(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

struct PlCore {
  explicit PlCore(config::SessionDef def = {})
      : sink(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024)),
        core(def, std::make_shared<spdlog::logger>("limits", sink)) {
    sink->set_pattern("%v");
  }
  // A Join of `name` from connection `peer` at `address` (key `user_id`): what came back to it, nullopt
  // for no answer.
  std::optional<protocol::Message> Join(const std::string& name, const std::string& peer, const std::string& address,
                                        int64_t now, const std::string& user_id = {}) {
    protocol::Join j;
    j.name = name;
    j.host = "pc";
    j.role = protocol::Role::kTraffic;
    core.OnControl(peer, address, user_id, PlOk(j), now);
    std::optional<protocol::Message> answer;
    for (auto& o : core.TakeOutgoing())
      if (o.peer == peer) answer = o.message;
    return answer;
  }
  bool Welcomed(const std::optional<protocol::Message>& m) { return m && std::holds_alternative<protocol::Welcome>(*m); }
  std::string Log() {
    std::string all;
    for (const auto& l : sink->last_formatted()) all += l;
    return all;
  }
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink;
  server::WorldCore core;
};

}  // namespace

TEST_CASE("trust: joins of new names beyond an address's join rate go unanswered and are counted, held names rejoin at once") {
  config::SessionDef def;  // join_rate_hz 20, join_burst 64
  PlCore c(def);
  // A launcher starting 30 nodes on one PC at once: all in.
  for (int i = 0; i < 30; ++i)
    CHECK(c.Welcomed(c.Join("lab-" + std::to_string(i), "lab-peer-" + std::to_string(i), "127.0.0.1", kPlT0)));
  // Churn from the same address in the same instant: the burst's other 34 pass, then nothing is answered.
  int welcomed = 0, unanswered = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto a = c.Join("churn-" + std::to_string(i), "churn-peer-" + std::to_string(i), "127.0.0.1", kPlT0 + kPlMs);
    if (c.Welcomed(a)) ++welcomed;
    else if (!a) ++unanswered;
  }
  CHECK(welcomed == 34);
  CHECK(unanswered == 2000 - 34);
  CHECK(c.core.Counters().join_rate_limited == 2000 - 34);
  CHECK(c.core.Counters().join_refused == 0);
  CHECK(c.core.GetParam("server.refused.join_rate").param.value == std::to_string(2000 - 34));
  CHECK(c.Log().find("join(s) of new names beyond an address's or key's join rate") != std::string::npos);
  // Another PC is not held back by this one's churn.
  CHECK(c.Welcomed(c.Join("other-pc", "other-peer", "10.0.0.7", kPlT0 + kPlMs)));
  // A restarted node rejoins under its held name at once (no token needed).
  CHECK(c.Welcomed(c.Join("lab-3", "lab-peer-3", "127.0.0.1", kPlT0 + 2 * kPlMs)));
  // A newcomer on the churned address, retrying every 0.25 s as a client does, is in within 2 s: one
  // token per 50 ms refills.
  int64_t in_at = -1;
  for (int64_t t = kPlT0 + 2 * kPlMs; t <= kPlT0 + 2 * kPlS && in_at < 0; t += 250 * kPlMs)
    if (c.Welcomed(c.Join("newcomer", "new-peer", "127.0.0.1", t))) in_at = t;
  REQUIRE(in_at > 0);
  CHECK(in_at - kPlT0 <= 300 * kPlMs);
  // An in-process client (no address, no key) is not limited.
  for (int i = 0; i < 100; ++i)
    CHECK(c.Welcomed(c.Join("inproc-" + std::to_string(i), "inproc-" + std::to_string(i), "", kPlT0 + kPlS)));
}

TEST_CASE("trust: with CURVE a key's joins of new names are limited across addresses") {
  config::SessionDef def;
  def.server.join_burst = 4;
  def.server.join_rate_hz = 1;
  PlCore c(def);
  // One key from four addresses: its own bucket of 4 holds.
  int welcomed = 0;
  for (int i = 0; i < 8; ++i)
    welcomed += c.Welcomed(c.Join("k-" + std::to_string(i), "kp-" + std::to_string(i), "10.0.0." + std::to_string(i % 4),
                                  kPlT0, "student-1"))
                    ? 1
                    : 0;
  CHECK(welcomed == 4);
  CHECK(c.core.Counters().join_rate_limited == 4);
  // Another key from the same addresses still joins (each address used one token of 4).
  CHECK(c.Welcomed(c.Join("other-key", "okp", "10.0.0.1", kPlT0, "student-2")));
  // One second later the key has a token again.
  CHECK(c.Welcomed(c.Join("k-late", "kp-late", "10.0.0.9", kPlT0 + kPlS, "student-1")));
}

TEST_CASE("trust: a Join whose name breaks the name rule is refused with the rule's text, counted, and logged escaped") {
  PlCore c;
  const std::string bad_names[] = {"evil\nINFO node 'admin' joined", "red\x1b[31mname", std::string("nul\0x", 5),
                                   std::string(100'000, 'L'), "two words", ""};
  uint64_t n = 0;
  for (const auto& name : bad_names) {
    const auto a = c.Join(name, "bad-peer-" + std::to_string(n), "127.0.0.1", kPlT0 + static_cast<int64_t>(n) * kPlS);
    ++n;
    REQUIRE(a.has_value());
    REQUIRE(std::holds_alternative<protocol::Refuse>(*a));
    CHECK(std::get<protocol::Refuse>(*a).reason == "node name: " + text::CheckName(name));
    CHECK(c.core.Counters().join_refused == n);
  }
  CHECK(c.core.Nodes().empty());
  CHECK(c.core.GetParam("server.refused.join").param.value == std::to_string(n));
  // Logged (once per second per kind) escaped: no raw newline, ESC or NUL reaches the log, no forged line.
  const std::string log = c.Log();
  CHECK(log.find("join(s) with a name against the name rule") != std::string::npos);
  CHECK(log.find("evil\\nINFO") != std::string::npos);
  CHECK(log.find('\x1b') == std::string::npos);
  CHECK(log.find('\0') == std::string::npos);
  for (const auto& line : c.sink->last_formatted()) CHECK(line.find("INFO node 'admin'") != 0);
  // A UTF-8 name passes, and the status table prints names escaped (a host with an ESC).
  protocol::Join j;
  j.name = "Fahrer-Müller";
  j.host = "pc\x1b[2J";
  c.core.OnControl("utf8-peer", "127.0.0.1", PlOk(j), kPlT0 + 10 * kPlS);
  c.core.TakeOutgoing();
  REQUIRE(c.core.Nodes().size() == 1);
  std::string table;
  for (const auto& l : c.core.StatusLines(kPlT0 + 10 * kPlS)) table += l + "\n";
  CHECK(table.find("Fahrer-Müller") != std::string::npos);
  CHECK(table.find("pc\\x1b[2J") != std::string::npos);
  CHECK(table.find('\x1b') == std::string::npos);
}

TEST_CASE("trust: an address's unjoined connections share one bucket, its joined nodes are exempt and widen it") {
  config::SessionDef def;
  def.server.peer_rate_hz = 500;
  def.server.peer_burst = 1000;
  def.server.peer_address_rate_hz = 500;
  def.server.peer_address_burst = 1000;
  PlCore c(def);
  // 50 connections from one address, 1,000 messages each in one instant: the address's 1,000 pass.
  int admitted = 0;
  for (int k = 0; k < 50; ++k)
    for (int i = 0; i < 1000; ++i)
      admitted += c.core.Admit(Socket::kControl, "tool-" + std::to_string(k), "127.0.0.1", "", kPlT0) ? 1 : 0;
  CHECK(admitted == 1000);
  CHECK(c.core.Counters().rate_limited == 49'000);
  // Another address and an in-process peer are not affected.
  CHECK(c.core.Admit(Socket::kControl, "tool-x", "10.0.0.2", "", kPlT0));
  CHECK(c.core.Admit(Socket::kControl, "inproc", "", "", kPlT0));
  // A node joined on this address keeps its heartbeats going while its PC's tools flood.
  REQUIRE(c.Welcomed(c.Join("car", "node-peer", "127.0.0.1", kPlT0)));
  for (int i = 0; i < 100; ++i) CHECK(c.core.Admit(Socket::kControl, "node-peer", "127.0.0.1", "", kPlT0));
  // 100 ms later: the bucket refilled at 500/s x (1 + 1 node) = 100 messages.
  admitted = 0;
  for (int i = 0; i < 1000; ++i)
    admitted += c.core.Admit(Socket::kControl, "tool-" + std::to_string(i % 50), "127.0.0.1", "", kPlT0 + 100 * kPlMs)
                    ? 1
                    : 0;
  CHECK(admitted == 100);
  // The time socket has its own bucket per address, with the same scale.
  admitted = 0;
  for (int i = 0; i < 5000; ++i)
    admitted += c.core.Admit(Socket::kTime, "time-" + std::to_string(i % 40), "127.0.0.1", "", kPlT0) ? 1 : 0;
  CHECK(admitted == 2000);
  // Under CURVE the key is the source, wherever it connects from.
  admitted = 0;
  for (int i = 0; i < 3000; ++i)
    admitted += c.core.Admit(Socket::kControl, "kt-" + std::to_string(i % 30), "10.0.1." + std::to_string(i % 3),
                             "student-9", kPlT0)
                    ? 1
                    : 0;
  CHECK(admitted == 1000);
}
