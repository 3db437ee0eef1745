#include "platoon/node/writer_thread.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace platoon::node {

WriterThread::WriterThread(std::string name, size_t max_bytes) : name_(std::move(name)), max_bytes_(max_bytes) {
  thread_ = std::thread([this] { Run(); });
}

WriterThread::~WriterThread() {
  bool finished = false;
  {
    std::lock_guard lock(mutex_);
    finished = finished_;
  }
  // Once is enough: after a Finish (a disk that did not take the queue in time) what is queued is left out now.
  Finish(finished ? std::chrono::milliseconds(0) : kCloseWait);
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

bool WriterThread::Push(Job job, size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (!error_.empty() || closed_) return false;
    if (bytes_ != 0 && bytes_ + bytes > max_bytes_) {  // a job larger than the queue still goes in alone
      ++dropped_;
      return false;  // `job` and what it holds are let go here, on the caller's thread
    }
    bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    items_.push_back(Item{std::move(job), bytes});
  }
  changed_.notify_all();
  return true;
}

std::deque<WriterThread::Item> WriterThread::TakeQueued(bool count_dropped) {
  if (count_dropped) dropped_ += items_.size();
  for (const auto& rest : items_) bytes_ -= rest.bytes;
  std::deque<Item> taken;
  taken.swap(items_);
  return taken;  // let go by the caller once it has unlocked: what the jobs hold may be large
}

void WriterThread::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return;  // closed, everything run
    Item item = std::move(items_.front());
    items_.pop_front();
    running_ = true;
    lock.unlock();
    std::string error;
    try {
      item.job();
    } catch (const std::exception& e) {  // a write error, or out of memory: the writer stops, the process goes on
      error = e.what();
      if (error.empty()) error = name_ + ": write failed";
    } catch (...) {
      error = name_ + ": write failed (unknown error)";
    }
    item.job = nullptr;  // what the job held (the bytes written) goes back to its owner before anyone is told
    lock.lock();
    bytes_ -= item.bytes;
    if (error.empty()) {
      ++done_;
    } else if (error_.empty()) {
      error_ = std::move(error);
    }
    if (!error_.empty() && !items_.empty()) {
      // A stopped writer takes nothing more (Push refuses from now on): the queued jobs are let go, not
      // counted as dropped, and outside the lock, since what they hold may be large. Still "running" until
      // then, so that nobody waiting sees the queue done while they still hold their bytes.
      std::deque<Item> let_go = TakeQueued(false);
      lock.unlock();
      let_go.clear();
      lock.lock();
    }
    running_ = false;
    changed_.notify_all();
  }
}

bool WriterThread::Finish(std::chrono::milliseconds timeout) {
  const bool written = WaitWritten(timeout);
  std::deque<Item> let_go;
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
    if (!written) let_go = TakeQueued(true);
  }
  let_go.clear();  // outside the lock: what the jobs hold may be large
  changed_.notify_all();
  return written;
}

bool WriterThread::WaitWritten(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return items_.empty() && !running_; });
}

uint64_t WriterThread::Done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

uint64_t WriterThread::Dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

size_t WriterThread::PeakBytes() const {
  std::lock_guard lock(mutex_);
  return peak_bytes_;
}

std::string WriterThread::Error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace platoon::node
