#pragma once
/// Background CSV writer for per-vehicle data (seed 004 §5.6 "data write"). The producer (the driver
/// seat's 1 kHz module thread) hands over rows of numbers through a bounded SPSC queue and never
/// blocks: a row that finds the queue full is dropped and counted. A writer thread drains the queue,
/// formats the rows (data::AppendCsvRow) and writes them with POSIX write(2). A failed write (a full
/// disk) is logged once, naming the path and the OS reason; the writer then stops writing and counts
/// the rows it could not write, the file keeps every whole row written before (a partly written row
/// is cut off), and nothing throws. The file is opened, its folders created and its header written
/// by the constructor, so an unusable path shows at start.
///
/// With `markers` on, the last column `marker` holds the session's markers (AddMarker) whose sim time
/// falls in the row's period (previous row's time, this row's time], joined by " | " and CSV-quoted, the
/// convention of `platoon export --markers`. Markers reach a node after their sim time (the network), so
/// the writer holds rows back by `marker_hold_s` of sim time before it formats them.

#include "platoon/data/columns.hpp"
#include "platoon/data/spsc_queue.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace platoon::data {

/// What a CsvWriter writes, and how.
struct CsvWriterDef {
  std::string path;                  ///< CSV file; created or truncated, its missing folders created.
  std::vector<Column> columns;       ///< Columns, in file order.
  std::string name;                  ///< Non-empty: a first column "name" holding it in every row (the vehicle's readable name).
  bool markers = false;              ///< A last column "marker": the markers in each row's period (AddMarker).
  double marker_hold_s = 1.0;        ///< Rows wait this much sim time for late markers before they are formatted, in s (events repeat for 1 s).
  size_t queue_rows = 4096;          ///< Queue capacity in rows (4.1 s at 1 kHz, 41 s at 100 Hz); each row is 152 bytes.
  double drain_interval_s = 0.01;    ///< The writer thread wakes this often to drain the queue, in s.
  double flush_interval_s = 0.2;     ///< Formatted rows reach the file at least this often, in s (the crash loss).
};

/// Default writer settings for `path` and `columns`.
CsvWriterDef DefaultCsvWriterDef(std::string path, std::vector<Column> columns);

/// Counts and state of a writer.
struct CsvWriterStats {
  uint64_t rows_written = 0;   ///< Whole rows in the file.
  uint64_t rows_dropped = 0;   ///< Rows refused because the queue was full.
  uint64_t rows_failed = 0;    ///< Rows queued but not written because of an error.
  uint64_t markers_written = 0;  ///< Markers placed in a row's marker column.
  uint64_t markers_late = 0;     ///< Markers that arrived after the row of their sim time was written (left out).
  std::string path;            ///< Absolute path of the file.
  std::string error;           ///< The first error ("" when none).
};

class CsvWriter {
 public:
  /// Opens the file (creating its folders), writes the header and starts the writer thread. An open
  /// or header error is logged (error level) through `log` and kept; the writer then writes nothing.
  CsvWriter(CsvWriterDef def, std::shared_ptr<spdlog::logger> log);
  /// Close().
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  /// Producer thread only: queues `row`. Never blocks, locks or allocates; false (counted as
  /// dropped) when the queue is full, and after Close.
  bool Push(const MetricsRow& row);
  /// Any thread: a marker at `sim_ns` (session sim time, ns) with `text` for the marker column (ignored
  /// without `markers`). Takes a lock of its own, never the queue's; markers may come in any order.
  void AddMarker(int64_t sim_ns, std::string text);
  /// Writes every queued row, closes the file and stops the thread. Idempotent; not concurrent with Push.
  void Close();
  /// Counts so far (final after Close).
  CsvWriterStats Stats() const;
  /// Whether the file is open and no error has happened.
  bool Ok() const;

 private:
  void Run();
  void Drain(bool final);
  void FormatRow(const MetricsRow& row);
  void WriteBuffer();
  void Fail(const std::string& what, int err);

  CsvWriterDef def_;
  std::shared_ptr<spdlog::logger> log_;
  SpscQueue<MetricsRow> queue_;
  std::string path_;   // absolute
  int fd_ = -1;
  std::string buffer_;               // formatted rows not yet written (writer thread)
  std::string name_field_;           // the quoted name and its comma before each row ("": no name column)
  uint64_t buffer_rows_ = 0;
  std::deque<MetricsRow> held_;      // rows waiting marker_hold_s for their markers (writer thread)
  std::vector<std::pair<int64_t, std::string>> marker_list_;  // markers not yet placed, by sim time (writer thread)
  int64_t last_row_ns_ = INT64_MIN;  // sim time of the last formatted row
  std::mutex marker_mutex_;          // incoming_markers_
  std::vector<std::pair<int64_t, std::string>> incoming_markers_;
  std::atomic<uint64_t> markers_written_{0}, markers_late_{0};
  uint64_t file_bytes_ = 0;          // bytes of the header and the whole rows in the file
  int64_t last_write_ns_ = 0;        // steady clock
  std::atomic<uint64_t> written_{0}, dropped_{0}, failed_{0};
  std::atomic<bool> failed_state_{false};
  bool closed_ = false;

  mutable std::mutex mutex_;         // error_ and the stop signal; never taken by Push
  std::condition_variable wake_;
  bool stop_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace platoon::data
