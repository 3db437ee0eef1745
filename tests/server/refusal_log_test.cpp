// Refusal lines are rate-limited but exact: the first refusal of a kind is logged at once, then at most
// one line a second with the true count, a period's count is written even when no refusal follows, and the
// counts in the lines add up to the counters.
#include "platoon/server/refusal_log.hpp"
#include "platoon/server/world_core.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <set>

namespace {

using namespace platoon;

constexpr int64_t kRefLogMs = 1'000'000;
constexpr int64_t kRefLogS = 1'000'000'000;
constexpr int64_t kRefLogT0 = 500 * kRefLogS;

protocol::Decoded RefLogOk(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

// Sum of N over the lines "refused N <kind>..." (or "dropped N <kind>...") that name `kind`.
uint64_t RefLogSum(const std::vector<std::string>& lines, const std::string& kind, int* line_count = nullptr) {
  static const std::regex re(R"((refused|dropped|ignored) (\d+) (.*))");
  uint64_t sum = 0;
  int count = 0;
  for (const auto& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, re) && m[3].str().rfind(kind, 0) == 0) {
      sum += std::stoull(m[2]);
      ++count;
    }
  }
  if (line_count) *line_count = count;
  return sum;
}

}  // namespace

TEST_CASE("refusal log: the first refusal of a kind at once, then one line per period with the count held back") {
  server::RefusalLog log(kRefLogS);
  CHECK(log.Count("a", kRefLogT0) == 1);  // the first at once
  for (int i = 1; i <= 9; ++i) CHECK(log.Count("a", kRefLogT0 + i * 100 * kRefLogMs) == 0);  // within the period
  CHECK(log.Count("b", kRefLogT0 + 500 * kRefLogMs) == 1);  // another kind has its own first line
  // The period has passed: the next refusal carries itself and the nine held back.
  CHECK(log.Count("a", kRefLogT0 + kRefLogS) == 10);
  CHECK(log.Logged("a") == 11);
  CHECK(log.Counted("a") == 11);
}

TEST_CASE("refusal log: a period's count is written when the period has passed, with no further refusal") {
  server::RefusalLog log(kRefLogS);
  REQUIRE(log.Count("a", kRefLogT0) == 1);
  for (int i = 0; i < 5; ++i) REQUIRE(log.Count("a", kRefLogT0 + (i + 1) * kRefLogMs) == 0);
  CHECK(log.TakeDue(kRefLogT0 + 999 * kRefLogMs).empty());  // not yet
  const auto due = log.TakeDue(kRefLogT0 + kRefLogS);
  REQUIRE(due.size() == 1);
  CHECK(due[0].kind == "a");
  CHECK(due[0].count == 5);
  CHECK(log.TakeDue(kRefLogT0 + 3 * kRefLogS).empty());  // nothing pending: no empty lines
  // At shutdown every pending count comes out, whatever the period.
  REQUIRE(log.Count("a", kRefLogT0 + 3 * kRefLogS + kRefLogMs) == 0 + 1);  // a period passed: at once
  REQUIRE(log.Count("a", kRefLogT0 + 3 * kRefLogS + 2 * kRefLogMs) == 0);
  const auto all = log.TakeAll();
  REQUIRE(all.size() == 1);
  CHECK(all[0].count == 1);
  CHECK(log.Logged("a") == log.Counted("a"));
  CHECK(log.Counted("a") == 8);
}

TEST_CASE("refusal log: a flood of 37,500 refusals over 3.75 s is logged in a handful of lines that add up exactly") {
  server::RefusalLog log(kRefLogS);
  uint64_t logged = 0;
  int lines = 0;
  // 10 refusals a millisecond; the loop's TakeDue runs each millisecond.
  for (int ms = 0; ms < 3750; ++ms) {
    const int64_t t = kRefLogT0 + ms * kRefLogMs;
    for (int k = 0; k < 10; ++k)
      if (const uint64_t n = log.Count("forged", t)) {
        logged += n;
        ++lines;
      }
    for (const auto& d : log.TakeDue(t)) {
      logged += d.count;
      ++lines;
    }
  }
  for (const auto& d : log.TakeAll()) {
    logged += d.count;
    ++lines;
  }
  MESSAGE(lines << " lines for 37500 refusals");
  CHECK(logged == 37500);
  CHECK(lines <= 6);  // the first, one a second (3), the rest at the end
  CHECK(lines >= 4);
}

TEST_CASE("refusal log: the world core's forged-state lines add up to server.refused.forged_state, flushed by Poll and at exit") {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10000);
  sink->set_pattern("%v");
  server::WorldCore core(config::SessionDef{}, std::make_shared<spdlog::logger>("reflog", sink));
  protocol::Join j;
  j.name = "alpha";
  j.role = protocol::Role::kTraffic;
  core.OnControl("peer-a", "127.0.0.1", RefLogOk(j), kRefLogT0);
  uint32_t node = 0;
  uint64_t token = 0;
  for (auto& o : core.TakeOutgoing())
    if (const auto* w = std::get_if<protocol::Welcome>(&o.message)) {
      node = w->node_id;
      token = w->state_token;
    }
  REQUIRE(node != 0);
  // 37,500 states naming alpha without its token, 10 a millisecond; the loop polls every millisecond, and
  // alpha's own states (every 50 ms) keep it alive.
  protocol::NodeState ns, own;
  ns.node_id = own.node_id = node;
  ns.token = token ^ 1;
  own.token = token;
  int64_t t = kRefLogT0;
  for (int ms = 0; ms < 3750; ++ms) {
    t = kRefLogT0 + ms * kRefLogMs;
    for (int k = 0; k < 10; ++k) {
      ns.sequence = static_cast<uint64_t>(ms * 10 + k + 1);
      core.OnState(RefLogOk(ns), t);
    }
    if (ms % 50 == 0) {
      own.sequence = static_cast<uint64_t>(ms / 50 + 1);
      core.OnState(RefLogOk(own), t);
    }
    core.Poll(t);
  }
  REQUIRE(core.Counters().forged_state == 37500);
  // A second later, with no new refusal, Poll has written the last period's count.
  core.Poll(t + kRefLogS);
  int lines = 0;
  CHECK(RefLogSum(sink->last_formatted(), "node state(s) without their node's token", &lines) == 37500);
  MESSAGE(lines << " lines for 37500 forged states");
  CHECK(lines >= 4);
  CHECK(lines <= 6);
  // The refused subscriptions: held back, then written by FlushRefusalLog at exit.
  core.CountRefusedSubscriptions(3, "topic\x1b[31m", t + 2 * kRefLogS);
  core.CountRefusedSubscriptions(4, "topic", t + 2 * kRefLogS + kRefLogMs);
  core.FlushRefusalLog();
  const auto out = sink->last_formatted();
  CHECK(RefLogSum(out, "subscription(s) on the world port", &lines) == 7);
  CHECK(lines == 2);
  CHECK(core.Counters().subscription == 7);
  for (const auto& line : out) CHECK(line.find('\x1b') == std::string::npos);  // the peer's escape is escaped
}

TEST_CASE("refusal log: every refusal counter is a server.refused.* parameter, read back by its name") {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  server::WorldCore core(config::SessionDef{}, std::make_shared<spdlog::logger>("reflog2", sink));
  core.CountHandshakeFailure(server::HandshakeFailure::kMechanism, "control", kRefLogT0);
  core.CountHandshakeFailure(server::HandshakeFailure::kCrypto, "world", kRefLogT0);
  core.CountHandshakeFailure(server::HandshakeFailure::kCrypto, "world", kRefLogT0 + kRefLogMs);
  std::set<std::string> names;
  for (const auto& rc : server::RefusalCounters()) {
    CHECK(std::string(rc.name).rfind("server.refused.", 0) == 0);
    CHECK(names.insert(rc.name).second);  // no name twice
    const auto reply = core.GetParam(rc.name);
    CHECK_MESSAGE(reply.ok, rc.name);
    CHECK(reply.param.value == std::to_string(core.Counters().*rc.counter));
  }
  for (const char* name : {"server.refused.wrong_connection", "server.refused.not_operator", "server.refused.join",
                           "server.refused.rate_limited", "server.refused.unexpected_message",
                           "server.refused.handshake_mechanism", "server.refused.handshake_crypto",
                           "server.refused.subscription"})
    CHECK_MESSAGE(names.count(name) == 1, name);
  CHECK(core.GetParam("server.refused.handshake_crypto").param.value == "2");
  CHECK(core.GetParam("server.refused.handshake_mechanism").param.value == "1");
}
