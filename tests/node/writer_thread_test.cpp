// node::WriterThread: disk writes on a thread of their own, bounded, in order, stopped by the first error.
#include "platoon/node/writer_thread.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using platoon::node::WriterThread;

namespace {

// A disk that holds every write while it is stalled.
class Gate {
 public:
  void Set(bool stalled) {
    {
      std::lock_guard lock(mutex_);
      stalled_ = stalled;
    }
    changed_.notify_all();
  }
  // Waits while stalled; after 30 s throws, so that a writer that made its caller wait fails the test
  // instead of hanging it.
  void Pass() {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::seconds(30), [&] { return !stalled_; }))
      throw std::runtime_error("the gate stayed shut for 30 s");
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stalled_ = false;
};

}  // namespace

TEST_CASE("writer thread: jobs run in order while the caller never waits, and past the queue they are left out, counted and let go") {
  Gate disk;
  disk.Set(true);
  std::mutex m;
  std::vector<int> written;
  auto payload = std::make_shared<int>(0);
  {
    WriterThread w("test", 300);
    int accepted = 0;
    for (int i = 1; i <= 6; ++i)
      accepted += w.Push([&, i, payload] {
        disk.Pass();
        std::lock_guard lock(m);
        written.push_back(i);
      }, 100) ? 1 : 0;
    CHECK(accepted == 3);  // 3 x 100 bytes fill the queue; the job being run stays counted until it has run
    CHECK(w.Dropped() == 3);
    CHECK(payload.use_count() == 4);  // the three queued jobs hold it; those left out let it go at once
    disk.Set(false);
    REQUIRE(w.WaitWritten(std::chrono::seconds(30)));
    CHECK(w.Done() == 3);
    CHECK(w.PeakBytes() == 300);
    CHECK(payload.use_count() == 1);  // run: what a job held is let go before WaitWritten returns
    CHECK(w.Error().empty());
    // A job larger than the whole queue still goes in when the queue is empty.
    CHECK(w.Push([&] { std::lock_guard lock(m); written.push_back(7); }, 1000));
    REQUIRE(w.WaitWritten(std::chrono::seconds(30)));
  }
  CHECK(written == std::vector<int>{1, 2, 3, 7});
}

TEST_CASE("writer thread: the first error stops it, names what failed, and lets go of what was queued") {
  Gate disk;
  disk.Set(true);
  auto payload = std::make_shared<int>(0);
  int ran_after = 0;
  WriterThread w("PCD export to /data", 1 << 20);
  CHECK(w.Push([&] { disk.Pass(); throw std::runtime_error("/data/a.pcd: No space left on device"); }, 10));
  CHECK(w.Push([&, payload] { ++ran_after; }, 10));
  disk.Set(false);
  REQUIRE(w.WaitWritten(std::chrono::seconds(30)));
  CHECK(w.Error() == "/data/a.pcd: No space left on device");
  CHECK(ran_after == 0);
  CHECK(payload.use_count() == 1);
  CHECK(w.Dropped() == 0);  // stopped, not full
  CHECK(w.Done() == 0);
  CHECK_FALSE(w.Push([&] { ++ran_after; }, 10));
  CHECK(w.Dropped() == 0);

  // An exception that names nothing is named after the writer.
  WriterThread odd("PCD export to /data", 1 << 20);
  CHECK(odd.Push([] { throw 42; }, 1));
  REQUIRE(odd.WaitWritten(std::chrono::seconds(30)));
  CHECK(odd.Error().find("PCD export to /data") == 0);
}

TEST_CASE("writer thread: at exit on a stalled disk the jobs still queued after the wait are left out and counted") {
  Gate disk;
  disk.Set(true);
  auto payload = std::make_shared<int>(0);
  WriterThread w("test", 1 << 20);
  for (int i = 0; i < 3; ++i) CHECK(w.Push([&, payload] { disk.Pass(); }, 1));
  CHECK_FALSE(w.Finish(std::chrono::milliseconds(50)));
  const uint64_t left_out = w.Dropped();
  CHECK((left_out == 2 || left_out == 3));  // all but the one being run (if the thread has taken it)
  CHECK(payload.use_count() == 1 + static_cast<long>(3 - left_out));
  disk.Set(false);
  REQUIRE(w.WaitWritten(std::chrono::seconds(30)));
  CHECK(w.Done() == 3 - left_out);
  CHECK(payload.use_count() == 1);
}
