#include "platoon/transport/fault_injector.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

using platoon::transport::FaultDef;
using platoon::transport::FaultInjector;

namespace {

struct Run {
  std::vector<int> arrivals;            // sequence numbers in delivery order
  std::vector<int64_t> delays_ns;       // delivery time - offer time, per delivery
  uint64_t offered = 0;
};

// Offers `n` messages every `period_ns`, polling at 10 us resolution, and drains at the end.
Run Drive(const FaultDef& def, int n, int64_t period_ns) {
  FaultInjector<int> inj(def);
  Run run;
  std::vector<int64_t> offered_at(n);
  int64_t t = 0;
  auto drain = [&](int64_t now) {
    while (auto m = inj.Poll(now)) {
      run.arrivals.push_back(*m);
      run.delays_ns.push_back(now - offered_at[*m]);
    }
  };
  for (int i = 0; i < n; ++i) {
    const int64_t next = t + period_ns;
    offered_at[i] = t;
    inj.Offer(i, t);
    ++run.offered;
    for (int64_t u = t; u < next; u += 10'000) drain(u);
    t = next;
  }
  for (int64_t end = t + 2'000'000'000; t < end && inj.Pending() > 0; t += 10'000) drain(t);
  return run;
}

// |measured - p| within 5 standard deviations of a binomial proportion over n trials.
void CheckRate(double measured, double p, double n) {
  const double sigma = std::sqrt(p * (1 - p) / n);
  INFO("measured " << measured << " configured " << p << " sigma " << sigma);
  CHECK(std::abs(measured - p) <= 5 * sigma);
}

}  // namespace

TEST_CASE("fault injector: no faults delivers everything at once and in order") {
  const Run run = Drive(FaultDef{}, 1000, 1'000'000);
  REQUIRE(run.arrivals.size() == 1000);
  for (int i = 0; i < 1000; ++i) CHECK(run.arrivals[i] == i);
  for (int64_t d : run.delays_ns) CHECK(d == 0);
}

TEST_CASE("fault injector: measured drop rate matches the configured probability") {
  FaultDef def;
  def.drop_probability = 0.1;
  def.seed = 11;
  const int n = 100'000;
  const Run run = Drive(def, n, 1000);
  CheckRate(1.0 - static_cast<double>(run.arrivals.size()) / n, 0.1, n);
}

TEST_CASE("fault injector: measured duplication rate matches the configured probability") {
  FaultDef def;
  def.duplicate_probability = 0.05;
  def.seed = 12;
  const int n = 100'000;
  const Run run = Drive(def, n, 1000);
  std::map<int, int> copies;
  for (int a : run.arrivals) ++copies[a];
  int dups = 0;
  for (auto [seq, count] : copies) {
    CHECK(count <= 2);
    dups += count - 1;
  }
  CHECK(copies.size() == static_cast<size_t>(n));  // nothing lost
  CheckRate(static_cast<double>(dups) / n, 0.05, n);
}

TEST_CASE("fault injector: measured reorder rate matches the configured probability") {
  FaultDef def;
  def.reorder_probability = 0.05;
  def.seed = 13;
  const int n = 100'000;
  const Run run = Drive(def, n, 1000);
  REQUIRE(run.arrivals.size() == static_cast<size_t>(n));
  // A message is reordered when it arrives after a message with a higher sequence number.
  int late = 0, highest = -1;
  for (int a : run.arrivals) {
    if (a < highest) ++late;
    highest = std::max(highest, a);
  }
  CheckRate(static_cast<double>(late) / n, 0.05, n);
}

TEST_CASE("fault injector: delay with jitter stays within delay +- jitter and averages the delay") {
  FaultDef def;
  def.delay_ms = 5;
  def.jitter_ms = 2;
  def.seed = 14;
  const Run run = Drive(def, 20'000, 1'000'000);
  REQUIRE(run.delays_ns.size() == 20'000);
  double sum = 0;
  for (int64_t d : run.delays_ns) {
    CHECK(d >= 3'000'000 - 10'000);
    CHECK(d <= 7'000'000 + 10'000);
    sum += static_cast<double>(d);
  }
  // Uniform jitter: sd of the mean = 2 ms / sqrt(3 n); polling adds up to 10 us.
  CHECK(std::abs(sum / 20'000 - 5'005'000.0) < 5 * 2e6 / std::sqrt(3.0 * 20'000));
}

TEST_CASE("fault injector: burst outages come at the configured frequency and length") {
  FaultDef def;
  def.burst_every_s = 10;
  def.burst_length_ms = 500;
  def.seed = 15;
  const int n = 2'000'000;  // one message per ms: 2000 s
  const Run run = Drive(def, n, 1'000'000);
  // Runs of consecutive missing sequence numbers are the outages.
  std::vector<int> outages;
  int expected = 0;
  for (int a : run.arrivals) {
    if (a > expected) outages.push_back(a - expected);
    expected = a + 1;
  }
  REQUIRE(!outages.empty());
  double mean_len = 0;
  for (int len : outages) mean_len += len;
  mean_len /= static_cast<double>(outages.size());
  CHECK(mean_len == doctest::Approx(500).epsilon(0.01));
  // Outages are a renewal process with mean cycle 10.5 s: 2000 s / 10.5 s = 190 expected (Poisson sd ~14).
  CHECK(outages.size() > 190 - 5 * 14);
  CHECK(outages.size() < 190 + 5 * 14);
}

TEST_CASE("fault injector: the same seed gives the same faults") {
  FaultDef def;
  def.drop_probability = 0.2;
  def.duplicate_probability = 0.1;
  def.reorder_probability = 0.1;
  def.delay_ms = 1;
  def.jitter_ms = 1;
  def.seed = 99;
  const Run a = Drive(def, 5000, 500'000);
  const Run b = Drive(def, 5000, 500'000);
  CHECK(a.arrivals == b.arrivals);
  def.seed = 100;
  const Run c = Drive(def, 5000, 500'000);
  CHECK(a.arrivals != c.arrivals);
}

TEST_CASE("fault spec: parses every key and names the bad item") {
  const FaultDef d = platoon::transport::ParseFaultSpec(
      "drop=0.1,dup=0.02,reorder=0.03,delay_ms=5,jitter_ms=1,burst_every_s=10,burst_ms=500,seed=7");
  CHECK(d.drop_probability == 0.1);
  CHECK(d.duplicate_probability == 0.02);
  CHECK(d.reorder_probability == 0.03);
  CHECK(d.delay_ms == 5);
  CHECK(d.jitter_ms == 1);
  CHECK(d.burst_every_s == 10);
  CHECK(d.burst_length_ms == 500);
  CHECK(d.seed == 7);
  CHECK_THROWS_WITH_AS(platoon::transport::ParseFaultSpec("drop=1.5"), doctest::Contains("drop"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(platoon::transport::ParseFaultSpec("loss=0.1"), doctest::Contains("unknown key"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(platoon::transport::ParseFaultSpec("drop"), doctest::Contains("key=value"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(platoon::transport::ParseFaultSpec("delay_ms=abc"), doctest::Contains("number"),
                       std::invalid_argument);
}
