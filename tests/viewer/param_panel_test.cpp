// The viewer's parameter panel model: requests with ids, answers matched to them, the filter.
#include "platoon/viewer/param_panel.hpp"

#include <doctest/doctest.h>

using namespace platoon;
using viewer::ParamPanelModel;

TEST_CASE("param panel: a list answer fills the panel only when it answers the newest list request") {
  ParamPanelModel m;
  const auto first = m.Refresh();
  const auto second = m.Refresh();
  CHECK(first.request_id != second.request_id);
  CHECK(first.prefix.empty());
  protocol::ParamList old{{protocol::Parameter{"server.old", "1", false, ""}}, first.request_id, {}};
  CHECK_FALSE(m.OnReply(old));
  CHECK(m.Params().empty());
  CHECK(m.Waiting());
  protocol::ParamList fresh{{protocol::Parameter{"server.broadcast_hz", "60", true, "rate"},
                             protocol::Parameter{"node.city.desired_speed_mps", "15", true, "speed"}},
                            second.request_id,
                            {"node.obs: no reply in 500 ms"}};
  CHECK(m.OnReply(fresh));
  CHECK_FALSE(m.Waiting());
  REQUIRE(m.Params().size() == 2);
  CHECK(m.Params()[0].path == "node.city.desired_speed_mps");  // path order
  CHECK(m.ListErrors().size() == 1);
  const auto city = m.Filtered("city");
  REQUIRE(city.size() == 1);
  CHECK(city[0]->path == "node.city.desired_speed_mps");
  CHECK(m.Filtered("").size() == 2);
  CHECK(m.Filtered("nothing").empty());
}

TEST_CASE("param panel: a set answer shows the new value or the refusal, and a stranger's answer is ignored") {
  ParamPanelModel m;
  const auto list = m.Refresh();
  m.OnReply(protocol::ParamList{{protocol::Parameter{"node.city.desired_speed_mps", "15", true, "speed"}}, list.request_id, {}});
  const auto set = m.Set("node.city.desired_speed_mps", "25");
  CHECK(set.path == "node.city.desired_speed_mps");
  CHECK(set.value == "25");
  CHECK_FALSE(m.OnReply(protocol::ParamReply{true, {"node.city.desired_speed_mps", "99", true, ""}, "", set.request_id + 100}));
  CHECK(m.Params()[0].value == "15");
  CHECK(m.OnReply(protocol::ParamReply{true, {"node.city.desired_speed_mps", "25", true, ""}, "", set.request_id}));
  CHECK(m.Params()[0].value == "25");
  CHECK(m.Status() == "node.city.desired_speed_mps = 25");
  CHECK_FALSE(m.StatusIsError());
  const auto bad = m.Set("node.city.desired_speed_mps", "nan");
  const std::string why = "node.city.desired_speed_mps: expected a number in [0, 100] m/s, got nan";
  CHECK(m.OnReply(protocol::ParamReply{false, {"node.city.desired_speed_mps", "25", true, ""}, why, bad.request_id}));
  CHECK(m.StatusIsError());
  CHECK(m.Status() == why);
  CHECK(m.Params()[0].value == "25");
}
