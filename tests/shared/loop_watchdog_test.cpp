// process::LoopWatchdog (shared/src/process/loop_watchdog.cpp): a loop that stands still is reported while
// it stands, with its phase and its threads' states, and once more when it moves on.
#include "platoon/process/loop_watchdog.hpp"

#include <doctest/doctest.h>
#include <pthread.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {
struct Reports {
  std::mutex mutex;
  std::vector<std::string> texts;
  platoon::process::LoopWatchdog::Report Sink() {
    return [this](const std::string& t) {
      std::lock_guard lock(mutex);
      texts.push_back(t);
    };
  }
  std::vector<std::string> Copy() {
    std::lock_guard lock(mutex);
    return texts;
  }
};
int Count(const std::vector<std::string>& texts, const std::string& needle) {
  int n = 0;
  for (const auto& t : texts) n += t.find(needle) != std::string::npos;
  return n;
}
}  // namespace

TEST_CASE("loop watchdog: a loop asleep in one phase is reported with that phase and its thread, then its gap") {
  Reports reports;
  platoon::process::LoopWatchdog watchdog(100ms, reports.Sink());
  std::thread loop([&] {
    pthread_setname_np(pthread_self(), "wd-test-loop");
    for (int i = 0; i < 20; ++i) {
      watchdog.Beat("busy");
      std::this_thread::sleep_for(1ms);
    }
    watchdog.Beat("asleep");
    std::this_thread::sleep_for(700ms);
    // The "moved on" report comes on the watchdog's next look (a quarter threshold) after the first beat.
    for (int i = 0; i < 150; ++i) {
      watchdog.Beat("awake");
      std::this_thread::sleep_for(2ms);
    }
  });
  loop.join();
  const auto texts = reports.Copy();
  std::string all;
  for (const auto& t : texts) all += t + "\n---\n";
  INFO("reports:\n" << all);
  // At 1, 2 and 4 thresholds into the 700 ms sleep (a loaded machine may look late and see fewer). A
  // loaded machine may also hold the beating loop beyond the threshold before or after the sleep: such a
  // stall is reported too, in its own phase, and is not counted here.
  const int asleep = Count(texts, "in phase 'asleep'");
  CHECK(asleep >= 1);
  CHECK(asleep <= 4);
  // The sleeping thread is listed by name, waiting (S), not running.
  CHECK(Count(texts, "wd-test-loop: state S") >= 1);
  // After the last report of the sleep comes the one that it ended.
  size_t last_asleep = 0;
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i].find("in phase 'asleep'") != std::string::npos) last_asleep = i;
  REQUIRE(last_asleep + 1 < texts.size());
  CHECK(texts[last_asleep + 1].find("loop moved on after standing still for") != std::string::npos);
  CHECK(Count(texts, "loop moved on after standing still for") >= 1);
  CHECK(watchdog.Stalls() >= 1);
  CHECK(watchdog.LongestMs() >= 700);
  CHECK(watchdog.LongestMs() < 10'000);
}

TEST_CASE("loop watchdog: a loop that beats within the threshold is never reported") {
  Reports reports;
  double longest_gap_ms = 0;
  {
    platoon::process::LoopWatchdog watchdog(500ms, reports.Sink());
    auto last = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) {
      watchdog.Beat("work");
      const auto now = std::chrono::steady_clock::now();
      longest_gap_ms = std::max(longest_gap_ms, std::chrono::duration<double, std::milli>(now - last).count());
      last = now;
      std::this_thread::sleep_for(2ms);
    }
    // A report means the loop itself saw a gap beyond the threshold (a loaded machine can hold a thread
    // that long): then the watchdog's figure must be that gap, else there must be no report.
    if (longest_gap_ms < 500) {
      CHECK(watchdog.Stalls() == 0);
      CHECK(watchdog.LongestMs() == 0);
    } else {
      MESSAGE("this machine held the loop " << longest_gap_ms << " ms: a report is due, nothing to check");
    }
  }
  if (longest_gap_ms < 500) CHECK(reports.Copy().empty());
}

TEST_CASE("loop watchdog: nothing is reported before the first beat, and it stops without waiting out its period") {
  Reports reports;
  {
    platoon::process::LoopWatchdog watchdog(20ms, reports.Sink());
    std::this_thread::sleep_for(200ms);
    CHECK(watchdog.Stalls() == 0);
  }
  CHECK(reports.Copy().empty());
  // A 60 s threshold looks every 15 s: the destructor wakes the thread rather than waiting for its look.
  const auto start = std::chrono::steady_clock::now();
  {
    platoon::process::LoopWatchdog watchdog(60s, reports.Sink());
    watchdog.Beat("work");
    std::this_thread::sleep_for(50ms);
  }
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(reports.Copy().empty());
}
