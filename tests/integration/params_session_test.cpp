// Parameters by path in a live session: the server forwards node.<name>.* to the node of that
// name and answers with its reply; sets are logged with their sim time; markers land in the event log.
#include "platoon/server/world_core.hpp"

#include "../support/in_process_session.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <map>
#include <optional>

namespace {

using namespace platoon;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

protocol::Decoded Ok(protocol::Message m) {
  protocol::Decoded d;
  d.message = std::move(m);
  d.peer_version = protocol::kProtocolVersion;
  return d;
}

std::shared_ptr<spdlog::logger> Quiet() {
  return std::make_shared<spdlog::logger>("params-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// A lock-step session on a generated road: a road-traffic node and an observer.
config::SessionDef RoadSession(double end_s) {
  config::SessionDef s;
  s.name = "params";
  s.has_road = true;
  s.road.generate_length_m = 1500;
  s.road.lanes = 2;
  s.step.lockstep = true;
  s.step.step_hz = 100;
  s.step.end_s = end_s;
  config::NodeDef city;
  city.name = "city";
  city.role = protocol::Role::kTraffic;
  city.traffic_model = "road";
  city.vehicles = 6;
  city.speed_mps = 10;
  config::NodeDef obs;
  obs.name = "obs";
  obs.role = protocol::Role::kObserver;
  s.nodes = {city, obs};
  return s;
}

uint64_t RequestId(const protocol::Message& m) {
  return std::visit(
      [](const auto& a) -> uint64_t {
        if constexpr (requires { a.request_id; }) return a.request_id;
        return 0;
      },
      m);
}

}  // namespace

TEST_CASE("params session: a set of the traffic speed reaches the vehicles within 100 ms of sim time, logged") {
  constexpr int64_t kSetAt = 8 * kS;  // the vehicles have settled near their desired speeds by then
  std::map<uint64_t, protocol::Message> replies;  // by the tool's request id
  std::optional<int64_t> set_sent_ns;
  std::map<int64_t, double> mean_speed;  // by sim time of the grant

  testing::InProcessOptions options;
  options.publish_every_step = true;
  options.on_poll = [&](server::WorldCore& core, int64_t now) {
    if (set_sent_ns || core.SimTimeAt(now) < kSetAt || core.CurrentStep() == 0) return;
    set_sent_ns = core.SimTimeAt(now);
    auto send = [&](protocol::Message m) { core.OnControl("tool", "127.0.0.1", Ok(std::move(m)), now); };
    send(protocol::ParamListRequest{"", 1});
    // Refused: NaN, out of range, wrong type, unknown path, unknown node; nothing changes.
    send(protocol::ParamSet{"node.city.desired_speed_mps", "nan", 2});
    send(protocol::ParamSet{"node.city.desired_speed_mps", "250", 3});
    send(protocol::ParamSet{"node.city.desired_speed_mps", "\"fast\"", 4});
    send(protocol::ParamSet{"node.city.no_such", "1", 5});
    send(protocol::ParamSet{"node.nobody.desired_speed_mps", "1", 6});
    send(protocol::ParamSet{"server.broadcast_hz", "inf", 7});
    send(protocol::ParamSet{"node.city.desired_speed_mps", "25", 8});
    send(protocol::Mark{"speed up", 0, 9});
  };
  options.on_reply = [&](const std::string& peer, const protocol::Message& m) {
    if (peer == "tool") replies[RequestId(m)] = m;
  };
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    double sum = 0;
    int n = 0;
    for (const auto& e : w.entities) {
      sum += e.kinematics.velocity_mps.norm();
      ++n;
    }
    if (n > 0 && w.step > 0) mean_speed[w.sim_time_ns] = sum / n;
  };
  testing::InProcessResult result;
  std::vector<protocol::LoggedEvent> logged;
  options.setup_core = [&](server::WorldCore& core) {
    struct Tap : server::WorldSystem {
      std::vector<protocol::LoggedEvent>* out;
      void OnLoggedEvent(const protocol::LoggedEvent& e, int64_t) override { out->push_back(e); }
    };
    auto tap = std::make_shared<Tap>();
    tap->out = &logged;
    core.AddSystem(tap);
  };
  result = testing::RunInProcess(RoadSession(9.0), 1, options);
  REQUIRE(set_sent_ns);

  // The list holds the server's parameters and the traffic node's, and no node failed to answer.
  REQUIRE(replies.count(1));
  const auto& list = std::get<protocol::ParamList>(replies[1]);
  CHECK(list.errors.empty());
  auto listed = [&](const std::string& path) {
    return std::any_of(list.params.begin(), list.params.end(), [&](const auto& p) { return p.path == path; });
  };
  CHECK(listed("server.broadcast_hz"));
  CHECK(listed("server.stale_policy"));
  CHECK(listed("node.city.desired_speed_mps"));
  CHECK(listed("node.city.vehicles"));

  // Each refusal names the path and what was expected.
  auto error = [&](uint64_t id) {
    REQUIRE(replies.count(id));
    const auto& r = std::get<protocol::ParamReply>(replies[id]);
    CHECK_FALSE(r.ok);
    return r.error;
  };
  CHECK(error(2) == "node.city.desired_speed_mps: expected a number in [0, 100] m/s, got nan");
  CHECK(error(3) == "node.city.desired_speed_mps: expected a number in [0, 100] m/s, got 250");
  CHECK(error(4) == "node.city.desired_speed_mps: expected a number in [0, 100] m/s, got \"fast\"");
  CHECK(error(5) == "node.city.no_such: no such parameter");
  CHECK(error(6).find("no node named 'nobody'") != std::string::npos);
  CHECK(error(7) == "server.broadcast_hz: expected a number in [1, 1000] Hz, got inf");

  REQUIRE(replies.count(8));
  const auto& set = std::get<protocol::ParamReply>(replies[8]);
  CHECK(set.ok);
  CHECK(set.param.value == "25");

  // Only the accepted set is in the event log, with its sim time; the marker too.
  std::vector<protocol::LoggedEvent> params, marks;
  for (const auto& e : logged) {
    if (e.kind == protocol::LoggedEvent::Kind::kParam) params.push_back(e);
    if (e.kind == protocol::LoggedEvent::Kind::kMarker) marks.push_back(e);
  }
  REQUIRE(params.size() == 1);
  CHECK(params[0].text == "node.city.desired_speed_mps = 25");
  CHECK(params[0].source == "ctl");
  // Logged when the node took it: in lock-step at most one step after the request.
  CHECK(params[0].sim_time_ns >= *set_sent_ns);
  CHECK(params[0].sim_time_ns <= *set_sent_ns + 10 * kMs);
  REQUIRE(marks.size() == 1);
  CHECK(marks[0].text == "speed up");
  CHECK(marks[0].sim_time_ns == *set_sent_ns);

  // The vehicles speed up within 100 ms of sim time: the mean speed gains clearly more in the 100 ms
  // after the set than in the 100 ms before it.
  auto at = [&](int64_t t) {
    auto it = mean_speed.lower_bound(t);
    REQUIRE(it != mean_speed.end());
    return it->second;
  };
  const double before = at(*set_sent_ns) - at(*set_sent_ns - 100 * kMs);
  const double after = at(*set_sent_ns + 100 * kMs) - at(*set_sent_ns);
  CAPTURE(before);
  CAPTURE(after);
  CHECK(after > 0.05);
  CHECK(after > before + 0.05);
}

TEST_CASE("params session: a node that does not answer times out, and a reply from another peer is ignored") {
  config::SessionDef def;
  def.name = "timeouts";
  server::WorldCore core(def, Quiet());
  int64_t now = 1000 * kS;
  for (const char* name : {"slow", "other"}) {
    protocol::Join j;
    j.name = name;
    j.role = protocol::Role::kTraffic;
    j.host = "test";
    core.OnControl(std::string("peer-") + name, "127.0.0.1", Ok(j), now);
  }
  core.TakeOutgoing();

  // A get for the slow node goes to that node under the server's own id.
  core.OnControl("tool", "127.0.0.1", Ok(protocol::ParamGet{"node.slow.speed", 41}), now);
  uint64_t forwarded_id = 0;
  for (auto& o : core.TakeOutgoing())
    if (o.peer == "peer-slow" && std::holds_alternative<protocol::ParamGet>(o.message))
      forwarded_id = std::get<protocol::ParamGet>(o.message).request_id;
  REQUIRE(forwarded_id != 0);
  CHECK(core.PendingParamRequests() == 1);

  // Another node answering with that id is not taken.
  core.OnControl("peer-other", "127.0.0.1",
                 Ok(protocol::ParamReply{true, {"node.slow.speed", "99", true, ""}, "", forwarded_id}), now + kMs);
  for (auto& o : core.TakeOutgoing()) CHECK(o.peer != "tool");
  CHECK(core.PendingParamRequests() == 1);

  // No answer in 500 ms: the asker hears so, with its own id.
  core.Poll(now + server::WorldCore::kParamTimeoutNs - kMs);
  for (auto& o : core.TakeOutgoing()) CHECK(o.peer != "tool");
  core.Poll(now + server::WorldCore::kParamTimeoutNs);
  std::optional<protocol::ParamReply> timed_out;
  for (auto& o : core.TakeOutgoing())
    if (o.peer == "tool") timed_out = std::get<protocol::ParamReply>(o.message);
  REQUIRE(timed_out);
  CHECK_FALSE(timed_out->ok);
  CHECK(timed_out->request_id == 41);
  CHECK(timed_out->error == "node.slow: no reply in 500 ms");
  CHECK(core.PendingParamRequests() == 0);

  // A list fans out to both nodes; the one that answers is merged, the silent one named in errors.
  now += kS;
  core.OnControl("tool", "127.0.0.1", Ok(protocol::ParamListRequest{"node.", 42}), now);
  std::map<std::string, uint64_t> ids;
  for (auto& o : core.TakeOutgoing())
    if (const auto* r = std::get_if<protocol::ParamListRequest>(&o.message)) ids[o.peer] = r->request_id;
  REQUIRE(ids.size() == 2);
  protocol::ParamList answer;
  answer.request_id = ids["peer-other"];
  answer.params = {protocol::Parameter{"node.other.speed", "3", true, "speed"},
                   protocol::Parameter{"server.forged", "1", true, "not the node's to answer"}};
  core.OnControl("peer-other", "127.0.0.1", Ok(answer), now + kMs);
  core.Poll(now + server::WorldCore::kParamTimeoutNs);
  std::optional<protocol::ParamList> merged;
  for (auto& o : core.TakeOutgoing())
    if (o.peer == "tool") merged = std::get<protocol::ParamList>(o.message);
  REQUIRE(merged);
  CHECK(merged->request_id == 42);
  REQUIRE(merged->params.size() == 1);
  CHECK(merged->params[0].path == "node.other.speed");
  REQUIRE(merged->errors.size() == 1);
  CHECK(merged->errors[0] == "node.slow: no reply in 500 ms");
}

TEST_CASE("params session: RequestParamSet checks and logs server paths like a tool's set") {
  config::SessionDef def;
  def.name = "system-set";
  server::WorldCore core(def, Quiet());
  const int64_t now = 1000 * kS;
  const auto ok = core.RequestParamSet("server.stale_policy", "remove", "event:brake", now);
  REQUIRE(ok);
  CHECK(ok->ok);
  CHECK(core.Session().server.stale_remove);
  const auto bad = core.RequestParamSet("server.stale_grace_s", "-1", "event:brake", now);
  REQUIRE(bad);
  CHECK_FALSE(bad->ok);
  CHECK(bad->error == "server.stale_grace_s: expected a number in [0, 3600] s, got -1");
  const auto events = core.EventsAfter(0);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == protocol::LoggedEvent::Kind::kParam);
  CHECK(events[0].text == "server.stale_policy = \"remove\"");
  CHECK(events[0].source == "event:brake");
  // A node path to a node that is not there is answered at once.
  const auto none = core.RequestParamSet("node.ghost.x", "1", "event:brake", now);
  REQUIRE(none);
  CHECK_FALSE(none->ok);
  CHECK(none->error == "node.ghost.x: no node named 'ghost' in the session");
  CHECK(core.EventsAfter(0).size() == 1);

  // A node path goes to the node; its answer is logged with the system as the source.
  protocol::Join j;
  j.name = "city";
  j.role = protocol::Role::kTraffic;
  j.host = "test";
  core.OnControl("peer-city", "127.0.0.1", Ok(j), now);
  core.TakeOutgoing();
  CHECK_FALSE(core.RequestParamSet("node.city.desired_speed_mps", "20", "event:brake", now));
  uint64_t id = 0;
  for (auto& o : core.TakeOutgoing())
    if (const auto* set = std::get_if<protocol::ParamSet>(&o.message); set && o.peer == "peer-city") id = set->request_id;
  REQUIRE(id != 0);
  core.OnControl("peer-city", "127.0.0.1",
                 Ok(protocol::ParamReply{true, {"node.city.desired_speed_mps", "20", true, ""}, "", id}), now + kMs);
  const auto after = core.EventsAfter(1);
  REQUIRE(after.size() == 1);
  CHECK(after[0].text == "node.city.desired_speed_mps = 20");
  CHECK(after[0].source == "event:brake");
}

TEST_CASE("params session: a node in real time answers a set once it is in force, and bounds the sets waiting") {
  double speed = 10;
  node::NodeParams params;
  params.Registry().AddFloat("node.n.speed", "m/s", config::Range{0, 100}, "speed", [&] { return speed; },
                             [&](double v) { speed = v; });
  auto get = [&](uint64_t id) {
    return std::get<protocol::ParamReply>(*params.Answer(protocol::ParamGet{"node.n.speed", id}, false));
  };
  // Checked at once, but not answered until the thread that steps the modules applied it: a get in
  // between still reads the old value, so the set's answer is what says "in force".
  CHECK_FALSE(params.Answer(protocol::ParamSet{"node.n.speed", "20", 7}, false).has_value());
  CHECK(speed == 10);
  CHECK(get(1).param.value == "10");
  const auto answers = params.ApplyQueued();
  CHECK(speed == 20);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].ok);
  CHECK(answers[0].request_id == 7);
  CHECK(answers[0].param.value == "20");
  CHECK(get(2).param.value == "20");
  CHECK(params.ApplyQueued().empty());  // each set is answered once
  // A refused set is answered at once and not queued.
  const auto bad = params.Answer(protocol::ParamSet{"node.n.speed", "-1", 8}, false);
  REQUIRE(bad.has_value());
  CHECK_FALSE(std::get<protocol::ParamReply>(*bad).ok);
  CHECK(std::get<protocol::ParamReply>(*bad).request_id == 8);
  CHECK(params.ApplyQueued().empty());
  CHECK(speed == 20);
  // The queue is bounded; the sets that waited are answered in order.
  for (size_t i = 0; i < node::NodeParams::kMaxQueued; ++i)
    CHECK_FALSE(params.Answer(protocol::ParamSet{"node.n.speed", "30", 100 + i}, false).has_value());
  const auto full = params.Answer(protocol::ParamSet{"node.n.speed", "40", 9}, false);
  REQUIRE(full.has_value());
  CHECK_FALSE(std::get<protocol::ParamReply>(*full).ok);
  CHECK(std::get<protocol::ParamReply>(*full).error.find("wait for the next step") != std::string::npos);
  const auto many = params.ApplyQueued();
  CHECK(speed == 30);
  REQUIRE(many.size() == node::NodeParams::kMaxQueued);
  CHECK(many.front().request_id == 100);
  CHECK(many.back().request_id == 100 + node::NodeParams::kMaxQueued - 1);
  // Lock-step: applied and answered at once.
  const auto now = params.Answer(protocol::ParamSet{"node.n.speed", "5", 10}, true);
  REQUIRE(now.has_value());
  CHECK(std::get<protocol::ParamReply>(*now).ok);
  CHECK(std::get<protocol::ParamReply>(*now).param.value == "5");
  CHECK(speed == 5);
}
