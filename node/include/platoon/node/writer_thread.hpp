// Disk writes on a thread of their own: a bounded queue of jobs, so that a slow disk holds up nobody who
// queues them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace platoon::node {

/// Runs write jobs one at a time, in the order queued, on a thread of its own: Push returns at once, so a
/// write held up by the disk (a journal commit, an fsync on a busy machine) holds up neither the caller's
/// frame nor its next one. The queue is bounded by the bytes its jobs hold: past `max_bytes` a job is left
/// out and counted (Dropped); a job larger than the whole queue still goes in alone when the queue is empty.
/// The first error (a job throws; its message should name the path and the reason) stops the writer: the
/// jobs still queued are let go and nothing more is taken. A job's captures (the bytes it writes) are let go
/// as soon as it has run or been left out. Done, Dropped, PeakBytes and Error may be read from any thread.
class WriterThread {
 public:
  /// Writes; throws (std::exception, its what() naming the path) when the write failed.
  using Job = std::function<void()>;
  /// How long the destructor waits for the queue to be written (a stalled disk: the rest is left out).
  static constexpr std::chrono::milliseconds kCloseWait{10'000};

  /// `name` prefixes an error that names nothing itself (an exception that is no std::exception).
  WriterThread(std::string name, size_t max_bytes);
  /// Finish(kCloseWait) (after an earlier Finish: what is queued is left out at once), then waits only for
  /// the job being run.
  ~WriterThread();
  WriterThread(const WriterThread&) = delete;
  WriterThread& operator=(const WriterThread&) = delete;

  /// Queues `job`, holding `bytes`; false when it is left out (queue full, or the writer has stopped).
  bool Push(Job job, size_t bytes);
  /// Waits until every queued job has run or `timeout` passes; true when none is left.
  bool WaitWritten(std::chrono::milliseconds timeout) const;
  /// WaitWritten(timeout); the jobs still queued then (a stalled disk) are left out and counted as Dropped.
  /// False when some were.
  bool Finish(std::chrono::milliseconds timeout);

  uint64_t Done() const;       ///< Jobs run without error.
  uint64_t Dropped() const;    ///< Jobs left out: the queue was full, or still queued at Finish.
  size_t PeakBytes() const;    ///< Most bytes ever queued at once (the job being run included).
  std::string Error() const;   ///< The first error ("" while healthy).
  const std::string& Name() const { return name_; }

 private:
  struct Item {
    Job job;
    size_t bytes = 0;
  };
  void Run();
  std::deque<Item> TakeQueued(bool count_dropped);  // under mutex_: empties the queue, counting its bytes out

  const std::string name_;
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<Item> items_;
  size_t bytes_ = 0, peak_bytes_ = 0;
  bool running_ = false, closed_ = false, finished_ = false;
  uint64_t done_ = 0, dropped_ = 0;
  std::string error_;
  std::thread thread_;
};

}  // namespace platoon::node
