// clock::StallWatch: a loop's own stalls told from the time it asked to wait.
#include "platoon/clock/stall_watch.hpp"

#include <doctest/doctest.h>

using platoon::clock::StallWatch;

TEST_CASE("stall watch: time beyond the asked wait is lateness, beyond the threshold a stall to forgive") {
  StallWatch w(250'000'000);
  CHECK(w.Mark(1'000'000'000, 0) == 0);  // the first mark has nothing to measure against
  CHECK(w.LateMaxNs() == 0);
  // Asked to wait 50 ms, back after 52 ms: 2 ms late, no stall.
  CHECK(w.Mark(1'052'000'000, 50'000'000) == 0);
  CHECK(w.LateMaxNs() == 2'000'000);
  // A turn of 10 ms with no wait asked: 10 ms late.
  CHECK(w.Mark(1'062'000'000, 0) == 0);
  CHECK(w.LateMaxNs() == 10'000'000);
  // Asked 50 ms, away 1.05 s: a 1 s stall to forgive.
  CHECK(w.Mark(2'112'000'000, 50'000'000) == 1'000'000'000);
  CHECK(w.Stalls() == 1);
  CHECK(w.LateMaxNs() == 1'000'000'000);
  // Exactly at the threshold is not a stall; a negative asked wait counts as none.
  CHECK(w.Mark(2'362'000'000, 0) == 0);
  CHECK(w.Mark(2'612'000'001, -5) == 250'000'001);
  CHECK(w.Stalls() == 2);
  // Back early (a wait cut short by input) is not negative lateness.
  CHECK(w.Mark(2'613'000'000, 50'000'000) == 0);
  CHECK(w.LateMaxNs() == 1'000'000'000);
}

TEST_CASE("stall watch: with an infinite threshold it only measures") {
  StallWatch w(INT64_MAX);
  w.Mark(0, 0);
  CHECK(w.Mark(5'000'000'000, 1'000'000) == 0);
  CHECK(w.Stalls() == 0);
  CHECK(w.LateMaxNs() == 4'999'000'000);
}
