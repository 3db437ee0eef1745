#include "platoon/data/csv_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
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

// The sim time of a row, in ns.
int64_t RowNs(const MetricsRow& row) { return static_cast<int64_t>(std::llround(row[Column::kSimTime] * 1e9)); }

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
  if (const int err = WriteAll(fd_, (def_.name.empty() ? "" : "name,") + CsvHeader(def_.columns) + (def_.markers ? ",marker" : "") + "\n", done); err != 0) {
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

void CsvWriter::AddMarker(int64_t sim_ns, std::string text) {
  if (!def_.markers) return;
  std::lock_guard lock(marker_mutex_);
  incoming_markers_.emplace_back(sim_ns, std::move(text));
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
  s.markers_written = markers_written_.load();
  s.markers_late = markers_late_.load();
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
  // Format everything queued (with markers: what is older than the hold); after an error the rows are only counted.
  MetricsRow row;
  while (queue_.TryPop(row)) {
    if (failed_state_.load(std::memory_order_relaxed)) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (def_.markers) held_.push_back(row);
    else FormatRow(row);
  }
  if (def_.markers) {
    // The markers that came in since, merged by sim time (stable: same-time markers keep their order).
    {
      std::lock_guard lock(marker_mutex_);
      for (auto& m : incoming_markers_) {
        if (m.first <= last_row_ns_) {
          if (markers_late_.fetch_add(1, std::memory_order_relaxed) == 0 && log_)
            log_->warn("data write: the marker \"{}\" at sim {:.3f} s came after its row was written (more than "
                       "marker_hold_s = {:g} s late) and is not in {}; later ones are counted in the summary",
                       m.second, static_cast<double>(m.first) * 1e-9, def_.marker_hold_s, path_);
          continue;
        }
        const auto at = std::upper_bound(marker_list_.begin(), marker_list_.end(), m.first,
                                         [](int64_t t, const auto& e) { return t < e.first; });
        marker_list_.insert(at, std::move(m));
      }
      incoming_markers_.clear();
    }
    // A row is formatted once the newest row is marker_hold_s of sim time past it, or at the end.
    const int64_t hold_ns = static_cast<int64_t>(std::llround(std::max(0.0, def_.marker_hold_s) * 1e9));
    const int64_t newest_ns = held_.empty() ? 0 : RowNs(held_.back());
    while (!held_.empty() && (final || RowNs(held_.front()) <= newest_ns - hold_ns)) {
      if (failed_state_.load(std::memory_order_relaxed)) failed_.fetch_add(1, std::memory_order_relaxed);
      else FormatRow(held_.front());
      held_.pop_front();
    }
  }
  // Write in large pieces, but at least every flush interval, so a crash loses little.
  const bool due = SteadyNs() - last_write_ns_ >= static_cast<int64_t>(def_.flush_interval_s * 1e9);
  if (!buffer_.empty() && (final || due || buffer_.size() >= kWriteBytes)) WriteBuffer();
}

void CsvWriter::FormatRow(const MetricsRow& row) {
  buffer_ += name_field_;
  AppendCsvRow(row, def_.columns, buffer_);
  ++buffer_rows_;
  if (!def_.markers) return;
  // The markers in (previous row, this row]: the row's newline becomes the marker column's separator.
  const int64_t t = RowNs(row);
  std::string text;
  size_t taken = 0;
  for (; taken < marker_list_.size() && marker_list_[taken].first <= t; ++taken) {
    if (!text.empty()) text += " | ";
    text += marker_list_[taken].second;
  }
  marker_list_.erase(marker_list_.begin(), marker_list_.begin() + static_cast<std::ptrdiff_t>(taken));
  markers_written_.fetch_add(taken, std::memory_order_relaxed);
  last_row_ns_ = std::max(last_row_ns_, t);
  buffer_.back() = ',';
  buffer_ += CsvField(text);
  buffer_ += '\n';
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
