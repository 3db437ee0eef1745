// Variators during a run (server/src/variators.cpp, shared/src/config/variators.cpp): the pure core's
// triangle, step and toggle against their definitions, its seeding, and the [[variator]] reader's errors.
#include "platoon/config/session.hpp"
#include "platoon/server/variators.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace platoon::testing {

namespace variators_test_detail {

constexpr int64_t kSecondNs = 1'000'000'000;

config::VariatorDef MakeDef(config::VariatorDef::Kind kind, double lo_s, double hi_s) {
  config::VariatorDef d;
  d.kind = kind;
  d.param = "node.traffic.desired_speed_mps";
  d.min = 10;
  d.max = 30;
  d.duration_lo_s = lo_s;
  d.duration_hi_s = hi_s;
  d.start_s = 2;
  d.period_s = 0.1;
  return d;
}

// Every change of one run of `v` stepped at 100 Hz up to `end_s`.
std::vector<server::VariatorChange> RunChanges(server::Variators& v, double end_s) {
  std::vector<server::VariatorChange> out;
  for (int64_t t = 0; t <= static_cast<int64_t>(end_s * 100); ++t)
    for (auto& c : v.Step(t * 10'000'000)) out.push_back(std::move(c));
  return out;
}

// Segments follow each other without gaps and each lasts within [lo, hi].
void CheckSegments(const std::vector<server::VariatorSegment>& segs, double start_s, double lo_s, double hi_s) {
  REQUIRE(segs.size() >= 3);
  CHECK(segs.front().start_ns == static_cast<int64_t>(std::llround(start_s * 1e9)));
  std::set<int64_t> durations;
  for (size_t k = 0; k < segs.size(); ++k) {
    CHECK(segs[k].duration_ns >= static_cast<int64_t>(std::llround(lo_s * 1e9)));
    CHECK(segs[k].duration_ns <= static_cast<int64_t>(std::llround(hi_s * 1e9)));
    if (k > 0) CHECK(segs[k].start_ns == segs[k - 1].start_ns + segs[k - 1].duration_ns);
    durations.insert(segs[k].duration_ns);
  }
  CHECK(durations.size() > 1);  // drawn, not fixed
}

config::SessionDef LoadVariatorText(const std::string& variator) {
  const std::string text = "[session]\nname = \"v\"\n\n[[node]]\nname = \"traffic\"\nrole = \"traffic\"\n\n" + variator;
  config::SessionDef s = config::LoadSessionText(text, "variators.toml");
  config::ValidateSession(s);
  return s;
}

std::string VariatorError(const std::string& variator) {
  try {
    LoadVariatorText(variator);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace variators_test_detail

TEST_CASE("variators: a triangle is at min at the ends of each cycle and at max in its middle") {
  using namespace variators_test_detail;
  const config::VariatorDef def = MakeDef(config::VariatorDef::Kind::kTriangle, 4, 9);
  server::Variators v({def});
  const auto changes = RunChanges(v, 100);
  const auto segs = v.Segments(0);
  CheckSegments(segs, def.start_s, 4, 9);
  for (const auto& s : segs) {
    CHECK(v.ValueAt(0, s.start_ns) == doctest::Approx(def.min));
    // The middle: max, less the slope over half a nanosecond of rounding.
    CHECK(v.ValueAt(0, s.start_ns + s.duration_ns / 2) == doctest::Approx(def.max).epsilon(1e-6));
    // A quarter in: half way up.
    CHECK(v.ValueAt(0, s.start_ns + s.duration_ns / 4) == doctest::Approx((def.min + def.max) / 2).epsilon(1e-6));
  }
  // The value is set every period_s from start_s on, each the triangle at its own time.
  REQUIRE(changes.size() > 900);
  CHECK(changes.front().due_ns == 2 * kSecondNs);
  CHECK(changes.front().value == doctest::Approx(def.min));
  for (size_t k = 1; k < changes.size(); ++k) CHECK(changes[k].due_ns - changes[k - 1].due_ns == 100'000'000);
  double lowest = 1e9, highest = -1e9;
  for (const auto& c : changes) {
    lowest = std::min(lowest, c.value);
    highest = std::max(highest, c.value);
    // Independently of the core: the segment that holds the time, and the phase in it.
    for (const auto& s : segs)
      if (c.due_ns >= s.start_ns && c.due_ns < s.start_ns + s.duration_ns) {
        const double u = static_cast<double>(c.due_ns - s.start_ns) / static_cast<double>(s.duration_ns);
        const double expected = u < 0.5 ? def.min + (def.max - def.min) * 2 * u : def.max - (def.max - def.min) * (2 * u - 1);
        CHECK(c.value == doctest::Approx(expected).epsilon(1e-9));
        CHECK(std::stod(c.text) == doctest::Approx(expected).epsilon(1e-6));
      }
  }
  CHECK(lowest >= def.min);
  CHECK(highest <= def.max);
  CHECK(highest > def.max - (def.max - def.min) * 2 * 0.1 / 4);  // within one period of the peak
}

TEST_CASE("variators: a step holds a random value in range for a dwell within bounds") {
  using namespace variators_test_detail;
  const config::VariatorDef def = MakeDef(config::VariatorDef::Kind::kStep, 3, 7);
  server::Variators v({def});
  const auto changes = RunChanges(v, 120);
  const auto segs = v.Segments(0);
  CheckSegments(segs, def.start_s, 3, 7);
  // One change per dwell that began by 120 s, at the dwell's start, with its value.
  REQUIRE(changes.size() == segs.size());
  std::set<std::string> values;
  for (size_t k = 0; k < changes.size(); ++k) {
    CHECK(changes[k].due_ns == segs[k].start_ns);
    CHECK(changes[k].value == segs[k].value);
    CHECK(changes[k].value >= def.min);
    CHECK(changes[k].value <= def.max);
    values.insert(changes[k].text);
  }
  CHECK(values.size() == changes.size());  // uniform draws: no two equal
}

TEST_CASE("variators: a toggle flips its boolean after each dwell starting from its initial value") {
  using namespace variators_test_detail;
  config::VariatorDef def = MakeDef(config::VariatorDef::Kind::kToggle, 2, 5);
  def.initial = false;
  server::Variators v({def});
  const auto changes = RunChanges(v, 60);
  CheckSegments(v.Segments(0), def.start_s, 2, 5);
  REQUIRE(changes.size() >= 10);
  for (size_t k = 0; k < changes.size(); ++k) {
    CHECK(changes[k].text == (k % 2 == 0 ? "false" : "true"));
    if (k > 0) {
      CHECK(changes[k].due_ns - changes[k - 1].due_ns >= 2 * kSecondNs);
      CHECK(changes[k].due_ns - changes[k - 1].due_ns <= 5 * kSecondNs);
    }
  }
}

TEST_CASE("variators: the same seed gives the same sequence and another seed or index another") {
  using namespace variators_test_detail;
  const config::VariatorDef step = MakeDef(config::VariatorDef::Kind::kStep, 1, 4);
  config::VariatorDef other = step;
  other.seed = 2;
  auto texts = [](std::vector<config::VariatorDef> defs, size_t index) {
    server::Variators v(std::move(defs));
    std::vector<std::string> out;
    for (const auto& c : RunChanges(v, 60))
      if (c.index == index) out.push_back(std::to_string(c.due_ns) + " " + c.text);
    return out;
  };
  const auto a = texts({step}, 0), b = texts({step}, 0);
  REQUIRE(a.size() > 10);
  CHECK(a == b);
  CHECK(texts({other}, 0) != a);
  // The same definition second in the list draws its own stream.
  CHECK(texts({step, step}, 1) != a);
  CHECK(texts({step, step}, 0) == a);
}

TEST_CASE("variators: a session reads variators and names file line and key of bad ones") {
  using namespace variators_test_detail;
  const config::SessionDef s = LoadVariatorText(
      "[[variator]]\nparam = \"node.traffic.desired_speed_mps\"\nkind = \"step\"\nmin = 5\nmax = 9\nduration_s = [1, 2]\n");
  REQUIRE(s.variators.size() == 1);
  CHECK(s.variators[0].kind == config::VariatorDef::Kind::kStep);
  CHECK(s.variators[0].max == 9);
  CHECK(s.variators[0].duration_hi_s == 2);
  const std::string base = "[[variator]]\nparam = \"node.traffic.desired_speed_mps\"\n";
  const std::string kind_error = VariatorError(base + "kind = \"sine\"\nmin = 1\nmax = 2\nduration_s = [1, 2]\n");
  CHECK(kind_error.find("variators.toml:10") != std::string::npos);
  CHECK(kind_error.find("kind") != std::string::npos);
  CHECK(kind_error.find("sine") != std::string::npos);
  const std::string order = VariatorError(base + "kind = \"triangle\"\nmin = 3\nmax = 2\nduration_s = [1, 2]\n");
  CHECK(order.find("variators.toml:") != std::string::npos);
  CHECK(order.find("max >= min") != std::string::npos);
  const std::string bounds = VariatorError(base + "kind = \"step\"\nmin = 1\nmax = 2\nduration_s = [5, 2]\n");
  CHECK(bounds.find("duration_s") != std::string::npos);
  CHECK(bounds.find("lo <= hi") != std::string::npos);
  CHECK(VariatorError(base + "kind = \"toggle\"\nmin = 1\nduration_s = [1, 2]\n").find("min") != std::string::npos);
  CHECK(VariatorError(base + "kind = \"step\"\nmin = 1\nmax = 2\n").find("duration_s") != std::string::npos);
  const std::string unknown = VariatorError(
      "[[variator]]\nparam = \"node.nobody.x\"\nkind = \"toggle\"\nduration_s = [1, 2]\n");
  CHECK(unknown.find("variators.toml:") != std::string::npos);
  CHECK(unknown.find("nobody") != std::string::npos);
  CHECK(unknown.find("param") != std::string::npos);
}

}  // namespace platoon::testing
