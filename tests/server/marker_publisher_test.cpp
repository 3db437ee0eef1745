// The marker stream (server/src/marker_publisher.cpp): every entry of the session's event log reaches a
// ZeroMQ subscriber as one JSON message, in order, with its sim time and a wall stamp.
#include "platoon/config/session.hpp"
#include "platoon/server/marker_publisher.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace platoon;

namespace marker_publisher_test_detail {

// The value of member `key` of a flat JSON object as text: a number as written, a string unquoted
// (escapes left as they are).
std::string JsonMember(const std::string& json, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const auto at = json.find(tag);
  if (at == std::string::npos) return "<missing>";
  size_t from = at + tag.size();
  if (json[from] == '"') {
    size_t end = from + 1;
    while (end < json.size() && !(json[end] == '"' && json[end - 1] != '\\')) ++end;
    return json.substr(from + 1, end - from - 1);
  }
  const auto end = json.find_first_of(",}", from);
  return json.substr(from, end - from);
}

double WallNowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace marker_publisher_test_detail

TEST_CASE("marker stream: a subscriber receives every marker and event of a session in order with its sim time") {
  using namespace marker_publisher_test_detail;
  auto log = std::make_shared<spdlog::logger>("marker-stream-test", std::make_shared<spdlog::sinks::null_sink_mt>());
  server::WorldCore core(config::SessionDef{}, log);
  auto publisher = std::make_shared<server::MarkerPublisher>(core, "tcp://127.0.0.1:*", false, log);
  core.AddSystem(publisher, server::system_priority::kRecorder);
  REQUIRE(publisher->Endpoint().rfind("tcp://127.0.0.1:", 0) == 0);

  // The recorder: a SUB socket on the markers only (the prefix of their messages), then a handshake: the
  // publisher has seen the subscription before anything is published.
  zmq::context_t context;
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "{\"kind\":\"marker\"");
  sub.set(zmq::sockopt::rcvtimeo, 5000);
  sub.connect(publisher->Endpoint());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (publisher->Stats().subscriptions == 0 && std::chrono::steady_clock::now() < deadline) {
    publisher->Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(publisher->Stats().subscriptions == 1);

  // A running session: sim time 0 at reference 1 s.
  const int64_t t0 = 1'000'000'000;
  core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, t0, 0}, t0);
  core.Poll(t0);
  REQUIRE(core.Phase() == protocol::SessionPhase::kRunning);

  // 300 markers from ctl, seats and the scenario, stamped 30 ms before the server logs them, with
  // parameter changes and firings between them (not markers: filtered out by the subscription).
  struct Sent {
    int64_t sim_ns;
    std::string text;
  };
  std::vector<Sent> sent;
  const double before_s = WallNowUnixSeconds();
  for (int k = 0; k < 300; ++k) {
    const int64_t now = t0 + 40'000'000 + int64_t{k} * 7'654'321;
    protocol::LoggedEvent e;
    e.kind = protocol::LoggedEvent::Kind::kMarker;
    e.sim_time_ns = now - t0 - 30'000'000;
    e.source = k % 3 == 0 ? "ctl" : k % 3 == 1 ? "robot" : "event:brake";
    e.text = k % 50 == 7 ? "say \"go\", now #" + std::to_string(k) : "marker #" + std::to_string(k);
    sent.push_back({e.sim_time_ns, e.text});
    core.LogEvent(e, now);
    if (k % 10 == 0) {
      protocol::LoggedEvent p;
      p.kind = k % 20 == 0 ? protocol::LoggedEvent::Kind::kParam : protocol::LoggedEvent::Kind::kFired;
      p.sim_time_ns = now - t0;
      p.text = "node.robot.tyre_mu = 0.5";
      p.detail = "{\"speed_mps\":12.5}";
      core.LogEvent(p, now);
    }
  }
  const double after_s = WallNowUnixSeconds();

  // Every marker, once, in order, with its sim time to the nanosecond and its wall time 30 ms before
  // the server published it.
  size_t received = 0;
  for (; received < sent.size(); ++received) {
    zmq::message_t m;
    if (!sub.recv(m)) break;
    const std::string json = m.to_string();
    INFO(json);
    CHECK(JsonMember(json, "kind") == "marker");
    const double sim_s = std::stod(JsonMember(json, "sim_time_s"));
    CHECK(std::llround(sim_s * 1e9) == sent[received].sim_ns);
    std::string expected_text;  // as JSON escapes it
    for (char c : sent[received].text) expected_text += c == '"' ? std::string("\\\"") : std::string(1, c);
    CHECK(JsonMember(json, "text") == expected_text);
    const double published = std::stod(JsonMember(json, "published_unix_s"));
    CHECK(published >= before_s - 1e-6);
    CHECK(published <= after_s + 1e-6);
    CHECK(std::abs(std::stod(JsonMember(json, "wall_time_unix_s")) - (published - 0.030)) < 2e-6);
  }
  CHECK(received == sent.size());
  MESSAGE("received " << received << " of " << sent.size() << " markers on " << publisher->Endpoint());
  CHECK(publisher->Stats().published == sent.size() + 30);  // the 30 other events went out too
  CHECK(publisher->Stats().dropped == 0);
}

TEST_CASE("marker stream: one message is a JSON object with the kind first and the detail as an object") {
  protocol::LoggedEvent e;
  e.kind = protocol::LoggedEvent::Kind::kFired;
  e.sequence = 42;
  e.sim_time_ns = 12'500'000'001;
  e.source = "event:lead";
  e.text = "lead brakes";
  e.detail = "{\"gap_m\":20}";
  e.entity_id = 77;
  const std::string json = server::MarkerStreamJson(e, 1795000000.25, 1795000000.5);
  CHECK(json ==
        "{\"kind\":\"fired\",\"sequence\":42,\"sim_time_s\":12.500000001,\"wall_time_unix_s\":1795000000.250000,"
        "\"published_unix_s\":1795000000.500000,\"source\":\"event:lead\",\"text\":\"lead brakes\",\"target_node\":0,"
        "\"entity_id\":77,\"detail\":{\"gap_m\":20}}");
  e.detail.clear();
  CHECK(server::MarkerStreamJson(e, 0, 0).find("detail") == std::string::npos);
}

TEST_CASE("marker stream: a publish value that is no ZeroMQ endpoint is refused with file line and key") {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      config::LoadSessionText(text, "lab.toml");
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("[markers]\npublish = \"tcp://127.0.0.1:5560\"\n").empty());
  CHECK(error_of("[markers]\npublish = \"ipc:///tmp/platoon-markers\"\n").empty());
  const std::string udp = error_of("[markers]\npublish = \"udp://127.0.0.1:5560\"\n");
  CHECK(udp.find("lab.toml:2") == 0);
  CHECK(udp.find("expected a ZeroMQ endpoint \"tcp://HOST:PORT\" or \"ipc://PATH\", got \"udp://127.0.0.1:5560\"") != std::string::npos);
  CHECK(error_of("[markers]\npublish = \"tcp://127.0.0.1\"\n").find("expected a ZeroMQ endpoint") != std::string::npos);
  CHECK(error_of("[markers]\nport = 5560\n").find("unknown key") != std::string::npos);
}
