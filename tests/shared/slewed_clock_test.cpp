#include "platoon/clock/slewed_clock.hpp"
#include "platoon/transport/fault_injector.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace platoon::clock;
using platoon::transport::FaultDef;
using platoon::transport::FaultInjector;

namespace {

constexpr int64_t kClockMs = 1'000'000;
constexpr int64_t kClockS = 1'000'000'000;

struct SimResult {
  int64_t max_abs_error_ns = 0;    // after convergence
  int64_t backwards = 0;           // ticks where synced time did not increase
  int64_t over_bound = 0;          // ticks that advanced more than (1 + bound) x the local tick (+1 ns rounding)
  double min_rate_seen = 1e9, max_rate_seen = 0;
  bool set = false;
};

// Simulates a node with a drifting oscillator exchanging time with a server over a jittery link.
// True time is the server's reference clock. Events (requests, arrivals, 1 ms ticks) are processed
// in time order, so the link delays are exact, not quantised.
SimResult Simulate(double drift_ppm, const FaultDef& link, const ClockDef& def, int64_t duration_ns,
                   int64_t converge_ns, int64_t server_jump_at_ns = -1, int64_t server_jump_ns = 0) {
  ManualOscillator truth(1000 * kClockS);
  // A large offset so the initial step at join is exercised too.
  DriftingOscillator local(truth, drift_ppm, 12'345 * kClockS);
  SlewedClock clock(local, def);

  FaultDef up_def = link, down_def = link;
  down_def.seed = link.seed + 1;
  FaultInjector<TimeSample> up(up_def), down(down_def);
  const int64_t start = truth.NowNs();
  const int64_t request_period = static_cast<int64_t>(1e9 / def.sync_rate_hz);
  int64_t next_request = start, next_tick = start + kClockMs;
  int64_t server_offset = 0;
  int64_t prev_synced = std::numeric_limits<int64_t>::min(), prev_local = 0;
  SimResult r;

  while (truth.NowNs() - start < duration_ns) {
    // Advance true time to the earliest pending event.
    int64_t next = std::min(next_request, next_tick);
    if (auto d = up.NextDueNs()) next = std::min(next, *d);
    if (auto d = down.NextDueNs()) next = std::min(next, *d);
    truth.Set(std::max(next, truth.NowNs()));
    const int64_t now = truth.NowNs();
    if (server_jump_at_ns >= 0 && now - start >= server_jump_at_ns) server_offset = server_jump_ns;

    if (now >= next_request) {
      TimeSample s;
      s.t1_ns = local.NowNs();
      up.Offer(s, now);
      next_request += request_period;
    }
    while (auto s = up.Poll(now)) {
      // Server: stamps t2 on receive and t3 on send, 20 us later.
      s->t2_ns = now + server_offset;
      s->t3_ns = now + 20'000 + server_offset;
      down.Offer(*s, now + 20'000);
    }
    while (auto s = down.Poll(now)) {
      s->t4_ns = local.NowNs();
      clock.AddSample(*s);
    }
    if (now >= next_tick) {
      next_tick += kClockMs;
      const int64_t l = local.NowNs();
      const int64_t synced = clock.NowNs();
      if (clock.IsSet() && prev_synced != std::numeric_limits<int64_t>::min()) {
        if (synced <= prev_synced) ++r.backwards;
        const double bound = def.max_slew_ppm * 1e-6;
        if (static_cast<double>(synced - prev_synced) > (1 + bound) * static_cast<double>(l - prev_local) + 1) ++r.over_bound;
        const double rate = static_cast<double>(synced - prev_synced) / static_cast<double>(l - prev_local);
        r.min_rate_seen = std::min(r.min_rate_seen, rate);
        r.max_rate_seen = std::max(r.max_rate_seen, rate);
      }
      if (clock.IsSet()) {
        prev_synced = synced;
        prev_local = l;
      }
      if (now - start >= converge_ns) r.max_abs_error_ns = std::max(r.max_abs_error_ns, std::abs(synced - (now + server_offset)));
    }
  }
  r.set = clock.IsSet();
  return r;
}

FaultDef JitteryLan(uint64_t seed) {
  FaultDef d;
  d.delay_ms = 0.3;   // one-way
  d.jitter_ms = 0.2;  // uniform +-0.2 ms, each direction independently
  d.seed = seed;
  return d;
}

}  // namespace

TEST_CASE("slewed clock: converges within 20 us under +1000 ppm drift and 0.2 ms jitter") {
  const SimResult r = Simulate(+1000, JitteryLan(1), DefaultClockDef(), 90 * kClockS, 30 * kClockS);
  REQUIRE(r.set);
  MESSAGE("max |error| after convergence: " << r.max_abs_error_ns << " ns");
  CHECK(r.max_abs_error_ns <= 20'000);
  CHECK(r.backwards == 0);
  CHECK(r.over_bound == 0);
}

TEST_CASE("slewed clock: converges within 20 us under -1000 ppm drift and 0.2 ms jitter") {
  const SimResult r = Simulate(-1000, JitteryLan(2), DefaultClockDef(), 90 * kClockS, 30 * kClockS);
  REQUIRE(r.set);
  MESSAGE("max |error| after convergence: " << r.max_abs_error_ns << " ns");
  CHECK(r.max_abs_error_ns <= 20'000);
  CHECK(r.backwards == 0);
  CHECK(r.over_bound == 0);
}

TEST_CASE("slewed clock: never runs backwards and never steps when the reference jumps 1 s") {
  // After convergence the server's reference jumps by +1 s (as after a restart on another host).
  // The clock may only slew at its bound: over 10 s it closes at most 10 s x 1 % = 100 ms.
  ClockDef def = DefaultClockDef();
  const SimResult r = Simulate(+500, JitteryLan(3), def, 40 * kClockS, 39 * kClockS, 20 * kClockS, 1 * kClockS);
  CHECK(r.backwards == 0);
  CHECK(r.over_bound == 0);
  CHECK(r.max_rate_seen <= 1 + def.max_slew_ppm * 1e-6 + 1e-6);
  CHECK(r.min_rate_seen >= 1 - def.max_slew_ppm * 1e-6 - 1e-6);
  // Still far from the new reference: it was slewing, not stepping.
  CHECK(r.max_abs_error_ns > 700 * kClockMs);
}

TEST_CASE("slewed clock: the rate bound is configurable and respected under -1000 ppm drift") {
  ClockDef def = DefaultClockDef();
  def.max_slew_ppm = 2000;
  const SimResult r = Simulate(-1000, JitteryLan(4), def, 30 * kClockS, 20 * kClockS);
  CHECK(r.backwards == 0);
  CHECK(r.over_bound == 0);
  CHECK(r.max_rate_seen <= 1.002 + 1e-6);
}

TEST_CASE("slewed clock: the only step is the initial set at join") {
  ManualOscillator local(5 * kClockS);
  ClockDef def = DefaultClockDef();
  def.min_samples_to_set = 3;
  def.min_fit_span_s = 0.1;
  SlewedClock clock(local, def);
  CHECK_FALSE(clock.IsSet());
  CHECK(clock.NowNs() == 5 * kClockS);  // unset: local time
  // The reference is 100 s ahead; symmetric 100 us delays.
  for (int i = 0; i < 3; ++i) {
    local.Advance(100 * kClockMs);
    const int64_t t1 = local.NowNs();
    local.Advance(200'000);
    clock.AddSample(TimeSample{t1, t1 + 100 * kClockS + 100'000, t1 + 100 * kClockS + 100'000, local.NowNs()});
  }
  REQUIRE(clock.IsSet());
  CHECK(std::abs(clock.NowNs() - (local.NowNs() + 100 * kClockS)) < 1000);
  // Afterwards a 1 ms disagreement is slewed, not stepped: the next ms advances at most 1 % more.
  const int64_t before = clock.NowNs();
  const int64_t t1 = local.NowNs();
  local.Advance(200'000);
  clock.AddSample(TimeSample{t1, t1 + 100 * kClockS + 1'100'000, t1 + 100 * kClockS + 1'100'000, local.NowNs()});
  local.Advance(kClockMs);
  const int64_t after = clock.NowNs();
  CHECK(after - before <= static_cast<int64_t>(1.01 * 1'200'000) + 1);
  CHECK(after > before);
}

TEST_CASE("slewed clock: impossible samples are rejected and counted") {
  ManualOscillator local(kClockS);
  SlewedClock clock(local);
  clock.AddSample(TimeSample{100, 0, 500, 200});  // server held it longer than the round trip
  clock.AddSample(TimeSample{300, 0, 0, 100});    // t4 before t1
  CHECK(clock.Status().samples_rejected == 2);
  CHECK(clock.Status().samples_total == 0);
}

TEST_CASE("clock def: validation names the bad field") {
  ClockDef def = DefaultClockDef();
  CHECK(ValidateClockDef(def).empty());
  def.max_slew_ppm = -5;
  CHECK(ValidateClockDef(def).find("max_slew_ppm") != std::string::npos);
  def = DefaultClockDef();
  def.best_fraction = 0;
  CHECK(ValidateClockDef(def).find("best_fraction") != std::string::npos);
}

TEST_CASE("drifting oscillator: runs fast by the configured ppm") {
  ManualOscillator base(0);
  DriftingOscillator fast(base, 1000, 0);
  DriftingOscillator slow(base, -1000, 0);
  base.Advance(kClockS);
  CHECK(fast.NowNs() == kClockS + kClockMs);
  CHECK(slow.NowNs() == kClockS - kClockMs);
}
