#pragma once
/// candump log files (the format of can-utils' `candump -l` and `canplayer`): one frame per line,
/// "(SECONDS.MICROSECONDS) INTERFACE ID#DATA" for classic CAN, "ID##FLAGS DATA" for CAN FD; 3 hex
/// digits for a standard id, 8 for an extended one. Pure text conversion plus a file reader and writer.

#include "platoon/can/frame.hpp"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::can {

/// A candump line or file that cannot be read; what() is "FILE:LINE: what was expected, what was found".
class CandumpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One line of a candump log.
struct LoggedFrame {
  int64_t time_ns = 0;           ///< Time stamp, in ns (platoon writes sim time; candump writes wall time).
  std::string interface = "can0";  ///< Interface name, e.g. "can0", "vcan0".
  Frame frame;                   ///< The frame.
  bool operator==(const LoggedFrame&) const = default;
};

/// The candump line of a frame, without a newline: "(12.000100) can0 123#0102".
std::string FormatCandumpLine(const LoggedFrame& logged);
/// Parses one candump line; `source` and `line_no` name it in errors. Throws CandumpError.
LoggedFrame ParseCandumpLine(std::string_view line, const std::string& source, size_t line_no);
/// Reads a whole candump log (blank lines skipped). Throws CandumpError (a missing file too).
std::vector<LoggedFrame> ReadCandumpLog(const std::string& path);

/// Appends frames to a candump log file. A failed write is reported by Append's result, never thrown.
class CandumpWriter {
 public:
  /// Opens (truncates) `path`; throws CandumpError when it cannot be created.
  explicit CandumpWriter(const std::string& path);
  ~CandumpWriter();
  CandumpWriter(const CandumpWriter&) = delete;
  CandumpWriter& operator=(const CandumpWriter&) = delete;
  /// Writes one line; false when the write failed (disk full): the caller counts it and goes on.
  bool Append(const LoggedFrame& logged);
  /// Flushes buffered lines; false when the flush failed.
  bool Flush();

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace platoon::can
