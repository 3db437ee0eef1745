#include "platoon/config/session.hpp"
#include "platoon/data/sign_columns.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/road/signs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

using namespace platoon;
using namespace platoon::road;

namespace signs_test_detail {

// A straight road along +x of `length_m` with one lane each way.
Road StraightRoad(double length_m) {
  RoadDef d = DefaultRoadDef();
  d.sections = {LineSection(length_m)};
  return Road(d);
}

Sign Listed(SignType type, double value, double s_m, int direction = 1, SignCountry country = SignCountry::kDe) {
  Sign g;
  g.type = type;
  g.value = value;
  g.s_m = s_m;
  g.direction = direction;
  g.side = direction > 0 ? -1 : 1;
  g.country = country;
  return g;
}

size_t CountOf(const std::vector<Sign>& signs, SignType type, int direction) {
  return static_cast<size_t>(std::count_if(signs.begin(), signs.end(), [&](const Sign& g) {
    return g.type == type && g.direction == direction;
  }));
}

}  // namespace signs_test_detail

using signs_test_detail::CountOf;
using signs_test_detail::Listed;
using signs_test_detail::StraightRoad;

TEST_CASE("signs: placement is the same for the same seed and differs for another") {
  const Road road = StraightRoad(5000);
  SignGeneratorDef def = DefaultSignGeneratorDef();
  def.enabled = true;
  def.seed = 7;
  def.per_km[static_cast<int>(SignType::kSpeedLimit)] = 2;
  def.per_km[static_cast<int>(SignType::kStop)] = 0.5;
  def.per_km[static_cast<int>(SignType::kWarningCrossing)] = 1;
  def.gantry_share = 0.3;
  const auto a = GenerateSigns(road, def), b = GenerateSigns(road, def);
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].s_m == b[i].s_m);
    CHECK(a[i].type == b[i].type);
    CHECK(a[i].value == b[i].value);
    CHECK(a[i].mount == b[i].mount);
    CHECK(a[i].id == i + 1);
    if (i > 0) CHECK(a[i].s_m >= a[i - 1].s_m);
  }
  def.seed = 8;
  const auto c = GenerateSigns(road, def);
  bool differs = c.size() != a.size();
  for (size_t i = 0; !differs && i < a.size(); ++i) differs = c[i].s_m != a[i].s_m;
  CHECK(differs);
  // Every generated value is one of the configured values, every sign within the road.
  for (const auto& g : a) {
    CHECK(g.s_m >= 0);
    CHECK(g.s_m <= road.Length());
    if (g.type == SignType::kSpeedLimit)
      CHECK(std::find(def.speed_values.begin(), def.speed_values.end(), g.value) != def.speed_values.end());
  }
}

TEST_CASE("signs: the count per km follows the configured frequency in each direction") {
  const Road road = StraightRoad(100000);  // 100 km
  SignGeneratorDef def = DefaultSignGeneratorDef();
  def.enabled = true;
  def.min_spacing_m = 0;
  const int limit = static_cast<int>(SignType::kSpeedLimit), stop = static_cast<int>(SignType::kStop);
  def.per_km[limit] = 2;
  def.per_km[stop] = 0.5;
  const auto signs = GenerateSigns(road, def);
  // A Poisson count of mean m has standard deviation sqrt(m): allow 4 of them.
  for (int direction : {1, -1}) {
    const double m_limit = 2 * 100, m_stop = 0.5 * 100;
    CHECK(std::abs(static_cast<double>(CountOf(signs, SignType::kSpeedLimit, direction)) - m_limit) < 4 * std::sqrt(m_limit));
    CHECK(std::abs(static_cast<double>(CountOf(signs, SignType::kStop, direction)) - m_stop) < 4 * std::sqrt(m_stop));
  }
  // Twice the frequency: about twice the signs; 0: none of that type.
  def.per_km[limit] = 4;
  def.per_km[stop] = 0;
  const auto more = GenerateSigns(road, def);
  const double m4 = 4 * 100;
  CHECK(std::abs(static_cast<double>(CountOf(more, SignType::kSpeedLimit, 1)) - m4) < 4 * std::sqrt(m4));
  CHECK(CountOf(more, SignType::kStop, 1) == 0);
  // Disabled: nothing.
  def.enabled = false;
  CHECK(GenerateSigns(road, def).empty());
}

TEST_CASE("signs: generated signs of one direction keep the minimum spacing") {
  const Road road = StraightRoad(20000);
  SignGeneratorDef def = DefaultSignGeneratorDef();
  def.enabled = true;
  def.min_spacing_m = 60;
  def.per_km[static_cast<int>(SignType::kSpeedLimit)] = 10;
  def.per_km[static_cast<int>(SignType::kGiveWay)] = 10;
  const auto signs = GenerateSigns(road, def);
  REQUIRE(signs.size() > 50);
  for (int direction : {1, -1}) {
    double last = -1e9;
    for (const auto& g : signs)
      if (g.direction == direction) {
        CHECK(g.s_m - last >= 60);
        last = g.s_m;
      }
  }
}

TEST_CASE("signs: the speed limit in force at s follows the last limit passed and its end") {
  const std::vector<Sign> signs = {Listed(SignType::kSpeedLimit, 100, 100), Listed(SignType::kSpeedLimit, 50, 500),
                                   Listed(SignType::kEndOfLimit, 50, 900),
                                   Listed(SignType::kSpeedLimit, 30, 700, -1)};
  const double road_limit = 120 / 3.6;
  CHECK(SpeedLimitAt(signs, 50, 1, road_limit) == doctest::Approx(road_limit));
  CHECK(SpeedLimitAt(signs, 0, 1, 0) == 0);
  CHECK(SpeedLimitAt(signs, 100, 1, road_limit) == doctest::Approx(100 / 3.6));  // holds from the sign on
  CHECK(SpeedLimitAt(signs, 499.9, 1, road_limit) == doctest::Approx(100 / 3.6));
  CHECK(SpeedLimitAt(signs, 500, 1, road_limit) == doctest::Approx(50 / 3.6));
  CHECK(SpeedLimitAt(signs, 899, 1, road_limit) == doctest::Approx(50 / 3.6));
  CHECK(SpeedLimitAt(signs, 901, 1, road_limit) == doctest::Approx(road_limit));
  CHECK(SpeedLimitAt(signs, 901, 1, 0) == 0);
  // The other direction sees only its own sign, passed while s decreases.
  CHECK(SpeedLimitAt(signs, 800, -1, road_limit) == doctest::Approx(road_limit));
  CHECK(SpeedLimitAt(signs, 650, -1, road_limit) == doctest::Approx(30 / 3.6));
  // A UK limit is in mph.
  const std::vector<Sign> uk = {Listed(SignType::kSpeedLimit, 30, 10, 1, SignCountry::kUk),
                                Listed(SignType::kEndOfRestrictions, 0, 200, 1, SignCountry::kUk)};
  CHECK(SpeedLimitAt(uk, 20, 1, 0) == doctest::Approx(30 * 1609.344 / 3600));
  CHECK(SpeedLimitAt(uk, 300, 1, 25) == doctest::Approx(25));
}

TEST_CASE("signs: overtaking bans hold until their end or the end of all restrictions") {
  const std::vector<Sign> signs = {Listed(SignType::kNoOvertaking, 0, 100), Listed(SignType::kEndOfNoOvertaking, 0, 300),
                                   Listed(SignType::kNoOvertaking, 0, 500),
                                   Listed(SignType::kEndOfRestrictions, 0, 800)};
  CHECK_FALSE(NoOvertakingAt(signs, 50, 1));
  CHECK(NoOvertakingAt(signs, 150, 1));
  CHECK_FALSE(NoOvertakingAt(signs, 350, 1));
  CHECK(NoOvertakingAt(signs, 600, 1));
  CHECK_FALSE(NoOvertakingAt(signs, 900, 1));
  CHECK_FALSE(NoOvertakingAt(signs, 600, -1));
}

TEST_CASE("signs: next sign ahead and last sign passed per direction with distances") {
  const std::vector<Sign> signs = {Listed(SignType::kStop, 0, 100), Listed(SignType::kSpeedLimit, 70, 400),
                                   Listed(SignType::kGiveWay, 0, 250, -1)};
  auto next = NextSign(signs, 150, 1);
  REQUIRE(next.sign);
  CHECK(next.sign->type == SignType::kSpeedLimit);
  CHECK(next.distance_m == doctest::Approx(250));
  auto last = LastSign(signs, 150, 1);
  REQUIRE(last.sign);
  CHECK(last.sign->type == SignType::kStop);
  CHECK(last.distance_m == doctest::Approx(50));
  CHECK_FALSE(NextSign(signs, 150, 1, 200).sign);  // beyond the range
  CHECK_FALSE(LastSign(signs, 50, 1).sign);
  // Direction -1 drives towards smaller s.
  next = NextSign(signs, 300, -1);
  REQUIRE(next.sign);
  CHECK(next.sign->type == SignType::kGiveWay);
  CHECK(next.distance_m == doctest::Approx(50));
  CHECK_FALSE(LastSign(signs, 300, -1).sign);
}

TEST_CASE("signs: a post stands beyond the edge of its side and a gantry spans the road facing the traffic") {
  const Road road = StraightRoad(500);
  Sign g = Listed(SignType::kSpeedLimit, 50, 200);
  g.lateral_m = 1.5;
  SignPose p = PlaceSign(road, g);
  REQUIRE(p.posts_m.size() == 1);
  CHECK(p.posts_m[0].x() == doctest::Approx(200));
  CHECK(p.posts_m[0].y() == doctest::Approx(road.RightEdgeOffset() - 1.5));
  CHECK(p.plate_m.z() == doctest::Approx(g.height_m));
  // Traffic towards +x sees the face: it looks towards -x.
  CHECK(std::cos(p.facing_rad) == doctest::Approx(-1));
  g.mount = SignMount::kGantry;
  p = PlaceSign(road, g);
  REQUIRE(p.posts_m.size() == 2);
  CHECK(p.beam_width_m == doctest::Approx(road.LeftEdgeOffset() - road.RightEdgeOffset() + 2 * 1.5));
  CHECK(p.plate_m.y() == doctest::Approx(0.5 * road.RightEdgeOffset()));  // over the right lanes
}

TEST_CASE("signs: OpenDRIVE signals map to types and values of their country's catalogue") {
  auto s = SignFromOpenDrive("274", "60", 0, "", "DE", 120, -4, "+");
  REQUIRE(s);
  CHECK(s->type == SignType::kSpeedLimit);
  CHECK(s->value == 60);
  CHECK(s->s_m == 120);
  CHECK(s->side == -1);
  CHECK(s->direction == 1);
  s = SignFromOpenDrive("274", "", 80, "km/h", "DE", 0, 3, "-");
  REQUIRE(s);
  CHECK(s->value == 80);
  CHECK(s->direction == -1);
  // A value in m/s (no unit) is given in km/h on a German sign: 25 m/s = 90 km/h.
  s = SignFromOpenDrive("274", "", 25, "m/s", "DE", 0, 3, "+");
  REQUIRE(s);
  CHECK(s->value == 90);
  s = SignFromOpenDrive("670", "", 30, "mph", "GB", 0, -3, "+");
  REQUIRE(s);
  CHECK(s->country == SignCountry::kUk);
  CHECK(s->value == 30);
  CHECK(SignFromOpenDrive("206", "", 0, "", "DE", 0, 0, "+")->type == SignType::kStop);
  CHECK(SignFromOpenDrive("103", "20", 0, "", "DE", 0, 0, "+")->type == SignType::kWarningCurveRight);
  CHECK(SignFromOpenDrive("278", "50", 0, "", "DE", 0, 0, "+")->type == SignType::kEndOfLimit);
  CHECK_FALSE(SignFromOpenDrive("1000001", "", 0, "", "DE", 0, 0, "+"));  // a traffic light
  CHECK_FALSE(SignFromOpenDrive("274", "", 0, "", "DE", 0, 0, "+"));      // a limit without a value
}

TEST_CASE("signs: a variable message sign changes what it shows and its detail code carries type and value") {
  std::vector<Sign> signs = {Listed(SignType::kBlank, 0, 300), Listed(SignType::kSpeedLimit, 100, 100)};
  signs[0].id = 1;
  signs[0].variable = true;
  signs[1].id = 2;
  CHECK(SpeedLimitAt(signs, 400, 1, 0) == doctest::Approx(100 / 3.6));
  REQUIRE(SetVariableContent(signs, 1, SignType::kSpeedLimit, 60));
  CHECK(SpeedLimitAt(signs, 400, 1, 0) == doctest::Approx(60 / 3.6));
  CHECK_FALSE(SetVariableContent(signs, 2, SignType::kSpeedLimit, 60));  // not variable
  const uint32_t d = SignDetail(SignType::kEndOfLimit, 80);
  CHECK(SignDetailType(d) == SignType::kEndOfLimit);
  CHECK(SignDetailValue(d) == 80);
  CHECK_FALSE(SignDetailType(0xFFFF0000u));
}

TEST_CASE("signs: the session reads listed signs and the generator settings with errors naming the line") {
  const std::string text = R"(
[road]
seed = 5
generate_length_m = 2000

[signs]
country = "uk"
speed_limit_per_km = 1.5
speed_values = [30, 40]

[[sign]]
s_m = 300
type = "speed_limit"
value = 50

[[sign]]
s_m = 800
type = "end_of_limit"
value = 50
side = "left"
)";
  const auto session = config::LoadSessionText(text, "signs.toml");
  REQUIRE(session.signs.size() == 2);
  CHECK(session.signs[0].id == 1);
  CHECK(session.signs[0].type == SignType::kSpeedLimit);
  CHECK(session.signs[0].value == 50);
  CHECK(session.signs[0].direction == 1);
  CHECK(session.signs[1].direction == -1);  // on the left: for the other direction
  CHECK(session.sign_generator.enabled);
  CHECK(session.sign_generator.country == SignCountry::kUk);
  CHECK(session.sign_generator.seed == 5);
  CHECK(session.sign_generator.per_km[static_cast<int>(SignType::kSpeedLimit)] == 1.5);
  const auto all = SessionSigns(session);
  CHECK(all.size() > 2);
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i].s_m >= all[i - 1].s_m);

  auto error_of = [](const std::string& t) {
    try {
      config::LoadSessionText(t, "bad.toml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string no_value = error_of("[[sign]]\ns_m = 10\ntype = \"speed_limit\"\n");
  CHECK(no_value.find("bad.toml:1") != std::string::npos);
  CHECK(no_value.find("value") != std::string::npos);
  const std::string bad_type = error_of("[[sign]]\ns_m = 10\ntype = \"speed_bump\"\n");
  CHECK(bad_type.find("bad.toml:3") != std::string::npos);
  CHECK(bad_type.find("speed_limit") != std::string::npos);
  CHECK(error_of("[signs]\ncountry = \"fr\"\n").find("bad.toml:2") != std::string::npos);
  CHECK(error_of("[signs]\nstop_per_km = -1\n").find("stop_per_km") != std::string::npos);
}

TEST_CASE("signs: data columns report the next and last sign for the direction driven") {
  const Road road = StraightRoad(1000);
  const std::vector<Sign> signs = {Listed(SignType::kSpeedLimit, 50, 300), Listed(SignType::kStop, 0, 600),
                                   Listed(SignType::kGiveWay, 0, 100, -1)};
  data::MetricsRow row;
  row[data::Column::kRoadId] = road.Id();
  row[data::Column::kS] = 400;
  row[data::Column::kYaw] = 0.0;
  data::FillSignColumns(row, road, signs);
  CHECK(row[data::Column::kNextSignType] == static_cast<double>(SignType::kStop));
  CHECK(row[data::Column::kNextSignDistance] == doctest::Approx(200));
  CHECK(row[data::Column::kLastSignType] == static_cast<double>(SignType::kSpeedLimit));
  CHECK(row[data::Column::kLastSignValue] == 50);
  CHECK(row[data::Column::kLastSignDistance] == doctest::Approx(100));
  // Heading the other way: the give-way sign 300 m ahead, nothing passed.
  data::MetricsRow back;
  back[data::Column::kRoadId] = road.Id();
  back[data::Column::kS] = 400;
  back[data::Column::kYaw] = std::numbers::pi;
  data::FillSignColumns(back, road, signs);
  CHECK(back[data::Column::kNextSignType] == static_cast<double>(SignType::kGiveWay));
  CHECK(back[data::Column::kNextSignDistance] == doctest::Approx(300));
  CHECK(std::isnan(back[data::Column::kLastSignType]));
  // Off the road: empty.
  data::MetricsRow off;
  data::FillSignColumns(off, road, signs);
  CHECK(std::isnan(off[data::Column::kNextSignType]));
}

TEST_CASE("signs: an export's sign columns follow the variable sign's recorded contents from their sim times on") {
  const Road road = StraightRoad(1000);
  std::vector<Sign> signs = {Listed(SignType::kSpeedLimit, 100, 300)};
  signs[0].variable = true;
  const uint32_t id = signs[0].id;
  constexpr int64_t kS = 1'000'000'000;
  // Recorded out of order on purpose: the timeline sorts them. 60 from 10 s, blank from 20 s.
  data::SignTimeline timeline(signs, {{20 * kS, {{id, static_cast<uint8_t>(SignType::kBlank), 0.0}}},
                                      {10 * kS, {{id, static_cast<uint8_t>(SignType::kSpeedLimit), 60.0}}}});
  CHECK(timeline.Changes() == 2);
  auto last_value_at = [&](int64_t t) {
    data::MetricsRow row;
    row[data::Column::kRoadId] = road.Id();
    row[data::Column::kS] = 400;
    row[data::Column::kYaw] = 0.0;
    data::FillSignColumns(row, road, timeline.At(t));
    return std::pair{row[data::Column::kLastSignType], row[data::Column::kLastSignValue]};
  };
  CHECK(last_value_at(5 * kS) == std::pair{0.0, 100.0});  // as placed
  CHECK(last_value_at(10 * kS) == std::pair{0.0, 60.0});   // the change in force from its own time
  CHECK(last_value_at(15 * kS) == std::pair{0.0, 60.0});
  CHECK(last_value_at(25 * kS) == std::pair{static_cast<double>(SignType::kBlank), 0.0});
  CHECK(last_value_at(1 * kS) == std::pair{0.0, 100.0});   // back in time: as placed again
}

TEST_CASE("signs: a variable sign's content text parses back, and bad texts are refused with the form expected") {
  using platoon::road::SignType;
  std::string error;
  for (const auto& [type, value] : {std::pair{SignType::kSpeedLimit, 80.0}, std::pair{SignType::kEndOfLimit, 60.0},
                                    std::pair{SignType::kStop, 0.0}, std::pair{SignType::kBlank, 0.0},
                                    std::pair{SignType::kDirection, 12.0}}) {
    const std::string text = platoon::road::SignContentText(type, value);
    const auto back = platoon::road::ParseSignContent(text, error);
    REQUIRE_MESSAGE(back, text << ": " << error);
    CHECK(back->first == type);
    CHECK(back->second == value);
  }
  CHECK(platoon::road::SignContentText(SignType::kSpeedLimit, 80) == "speed_limit 80");
  for (const char* bad : {"", "speed_limit", "speed_limit x", "speed_limit -5", "stop 3", "stopp", "speed_limit 80 1"}) {
    CHECK_FALSE(platoon::road::ParseSignContent(bad, error));
    CHECK(error.find("expected \"<type>\" or \"<type> <value>\"") == 0);
  }
  // Applying contents: only variable signs of that id change, and only to a known type.
  std::vector<platoon::road::Sign> signs(3);
  for (uint32_t i = 0; i < 3; ++i) signs[i].id = i + 1;
  signs[1].variable = true;
  signs[1].type = SignType::kBlank;
  CHECK_FALSE(platoon::road::ApplyVariableContents(signs, {{1, 0, 50.0}, {2, 200, 50.0}}));  // 1 is fixed, 200 no type
  CHECK(platoon::road::ApplyVariableContents(signs, {{2, 0, 50.0}}));
  CHECK(signs[1].type == SignType::kSpeedLimit);
  CHECK(signs[1].value == 50.0);
  CHECK(signs[0].type == SignType::kSpeedLimit);  // untouched default
  CHECK_FALSE(platoon::road::ApplyVariableContents(signs, {{2, 0, 50.0}}));  // no change the second time
  CHECK(platoon::road::VariableContents(signs) == std::vector<platoon::world::VariableSignContent>{{2, 0, 50.0}});
}

TEST_CASE("signs: an OpenDRIVE road's sign signals become the session's signs, its traffic light does not") {
  const auto session = config::LoadSessionText(
      "[road]\nfile = \"" + std::string(PLATOON_SOURCE_DIR) + "/tests/data/opendrive/objects_signals.xodr\"\n"
      "[[sign]]\ns_m = 10\ntype = \"give_way\"\n",
      "odr.toml");
  const auto signs = road::SessionSigns(session);
  REQUIRE(signs.size() == 3);  // the listed give way, the 274 limit and the 206 stop (no 1000001 light)
  CHECK(signs[0].type == SignType::kGiveWay);
  CHECK(signs[0].id == 1);
  CHECK(signs[1].type == SignType::kSpeedLimit);
  CHECK(signs[1].value == 50);
  CHECK(signs[1].s_m == 25);
  CHECK(signs[1].direction == 1);
  CHECK(signs[1].side == -1);
  CHECK(signs[1].size_m == doctest::Approx(0.6));
  CHECK(signs[2].type == SignType::kStop);
  CHECK(signs[2].s_m == 80);
  CHECK(signs[2].direction == -1);
  CHECK(signs[1].id != signs[2].id);
  CHECK(signs[1].id > 1);
}
