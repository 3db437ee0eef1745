#include "platoon/data/csv_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace platoon::data {
namespace {

// Formatted rows are written once this many bytes are buffered (or on the flush timer).
constexpr size_t kWriteBytes = 64 * 1024;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Writes all of `bytes`; returns 0, or the errno of the write that failed (`done`: bytes written).
int WriteAll(int fd, const std::string& bytes, size_t& done) {
  done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR) continue;
    else return n < 0 ? errno : EIO;
  }
  return 0;
}

}  // namespace

CsvWriterDef DefaultCsvWriterDef(std::string path, std::vector<Column> columns) {
  CsvWriterDef d;
  d.path = std::move(path);
  d.columns = std::move(columns);
  return d;
}

CsvWriter::CsvWriter(CsvWriterDef def, std::shared_ptr<spdlog::logger> log)
    : def_(std::move(def)), log_(std::move(log)), queue_(std::max<size_t>(1, def_.queue_rows)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path absolute = fs::absolute(fs::path(def_.path), ec);
  path_ = ec ? def_.path : absolute.lexically_normal().string();
  // The folders first, so that "data/robot.csv" works in a fresh checkout.
  const fs::path folder = fs::path(path_).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, ec)) {
    fs::create_directories(folder, ec);
    if (ec) {
      Fail("cannot create the folder " + folder.string() + " for", ec.value());
      return;
    }
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    Fail("cannot open", errno);
    return;
  }
  size_t done = 0;
  if (const int err = WriteAll(fd_, (def_.name.empty() ? "" : "name,") + CsvHeader(def_.columns) + "\n", done); err != 0) {
    Fail("writing the header of", err);
    return;
  }
  file_bytes_ = done;
  last_write_ns_ = SteadyNs();
  if (!def_.name.empty()) name_field_ = CsvField(def_.name) + ",";
  thread_ = std::thread([this] { Run(); });
}

CsvWriter::~CsvWriter() { Close(); }

bool CsvWriter::Push(const MetricsRow& row) {
  // Nothing more reaches the file after an error: count the row and go on.
  if (failed_state_.load(std::memory_order_relaxed) || closed_) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (!queue_.TryPush(row)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void CsvWriter::Close() {
  if (closed_) return;
  closed_ = true;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Rows queued after an open error never had a thread to drain them.
  MetricsRow row;
  while (queue_.TryPop(row)) failed_.fetch_add(1, std::memory_order_relaxed);
  if (fd_ >= 0 && ::close(fd_) != 0 && !failed_state_.load()) Fail("closing", errno);
  fd_ = -1;
}

CsvWriterStats CsvWriter::Stats() const {
  CsvWriterStats s;
  s.rows_written = written_.load();
  s.rows_dropped = dropped_.load();
  s.rows_failed = failed_.load();
  s.path = path_;
  std::lock_guard lock(mutex_);
  s.error = error_;
  return s;
}

bool CsvWriter::Ok() const { return fd_ >= 0 && !failed_state_.load(); }

void CsvWriter::Run() {
  const auto interval = std::chrono::duration<double>(def_.drain_interval_s);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, interval, [this] { return stop_; });
      if (stop_) break;
    }
    Drain(false);
  }
  Drain(true);
}

void CsvWriter::Drain(bool final) {
  // Format everything queued; after an error the rows are only counted.
  MetricsRow row;
  while (queue_.TryPop(row)) {
    if (failed_state_.load(std::memory_order_relaxed)) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    buffer_ += name_field_;
    AppendCsvRow(row, def_.columns, buffer_);
    ++buffer_rows_;
  }
  // Write in large pieces, but at least every flush interval, so a crash loses little.
  const bool due = SteadyNs() - last_write_ns_ >= static_cast<int64_t>(def_.flush_interval_s * 1e9);
  if (!buffer_.empty() && (final || due || buffer_.size() >= kWriteBytes)) WriteBuffer();
}

void CsvWriter::WriteBuffer() {
  if (failed_state_.load()) return;
  size_t done = 0;
  const int err = WriteAll(fd_, buffer_, done);
  last_write_ns_ = SteadyNs();
  if (err == 0) {
    written_.fetch_add(buffer_rows_, std::memory_order_relaxed);
    file_bytes_ += done;
    buffer_.clear();
    buffer_rows_ = 0;
    return;
  }
  // Keep the whole rows that made it; cut off a row that was written only in part.
  const size_t whole = done == 0 ? 0 : buffer_.rfind('\n', done - 1) + 1;  // npos + 1 == 0
  const auto rows_in = static_cast<uint64_t>(std::count(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(whole), '\n'));
  if (whole < done && ::ftruncate(fd_, static_cast<off_t>(file_bytes_ + whole)) != 0) {
    // The file keeps a partial last row; nothing more can be done about it.
  }
  file_bytes_ += whole;
  written_.fetch_add(rows_in, std::memory_order_relaxed);
  failed_.fetch_add(buffer_rows_ - rows_in, std::memory_order_relaxed);
  buffer_.clear();
  buffer_rows_ = 0;
  Fail("writing", err);
}

void CsvWriter::Fail(const std::string& what, int err) {
  const std::string message = "data write: " + what + " " + path_ + ": " + std::strerror(err) + " (" +
                              std::to_string(written_.load()) + " rows written stay in the file; no more rows are " +
                              "written, the node keeps running)";
  {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) return;
    error_ = message;
  }
  failed_state_.store(true);
  if (log_) log_->error("{}", message);
}

}  // namespace platoon::data
