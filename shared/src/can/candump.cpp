#include "platoon/can/candump.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>

namespace platoon::can {

namespace candump_detail {

constexpr char kHexDigits[] = "0123456789ABCDEF";
// The largest time stamp read, in s: its nanoseconds fit an int64.
constexpr int64_t kMaxSeconds = 9000000000;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// A line's text as an error shows it: at most 80 characters.
std::string Quoted(std::string_view s) {
  std::string out(s.substr(0, 80));
  if (s.size() > 80) out += "...";
  return "'" + out + "'";
}

}  // namespace candump_detail

std::string FormatCandumpLine(const LoggedFrame& logged) {
  using candump_detail::kHexDigits;
  const Frame& f = logged.frame;
  // Time: seconds and microseconds (truncated toward zero), as candump -l writes them.
  const bool negative = logged.time_ns < 0;
  const uint64_t ns = negative ? 0 - static_cast<uint64_t>(logged.time_ns) : static_cast<uint64_t>(logged.time_ns);
  char head[64];
  std::snprintf(head, sizeof head, "(%s%" PRIu64 ".%06" PRIu64 ") ", negative ? "-" : "", ns / 1000000000u,
                (ns % 1000000000u) / 1000u);
  std::string out = head;
  out += logged.interface;
  out += ' ';
  // Id: 3 hex digits standard, 8 extended.
  char id[16];
  std::snprintf(id, sizeof id, f.extended ? "%08" PRIX32 : "%03" PRIX32, f.id);
  out += id;
  out += '#';
  if (f.fd) {
    out += "#0";  // flags nibble: no bit-rate switch, no error passive (platoon does not model them)
  }
  const uint8_t len = std::min<uint8_t>(f.len, kFdMaxLen);
  for (uint8_t i = 0; i < len; ++i) {
    out += kHexDigits[f.data[i] >> 4];
    out += kHexDigits[f.data[i] & 0xF];
  }
  return out;
}

LoggedFrame ParseCandumpLine(std::string_view line, const std::string& source, size_t line_no) {
  using candump_detail::HexValue;
  using candump_detail::IsBlank;
  using candump_detail::kMaxSeconds;
  const std::string where = source + ":" + std::to_string(line_no) + ": ";
  auto fail = [&](const std::string& expected, std::string_view got) -> LoggedFrame {
    throw CandumpError(where + "expected " + expected + ", got " + candump_detail::Quoted(got));
  };
  while (!line.empty() && (IsBlank(line.back()) || line.back() == '\r')) line.remove_suffix(1);
  while (!line.empty() && IsBlank(line.front())) line.remove_prefix(1);
  LoggedFrame out;

  // "(SECONDS.FRACTION)"
  if (line.empty() || line.front() != '(') return fail("'(' opening the time stamp", line);
  const size_t close = line.find(')');
  if (close == std::string_view::npos) return fail("')' closing the time stamp", line);
  {
    std::string_view t = line.substr(1, close - 1);
    const std::string_view whole = t;
    bool negative = false;
    if (!t.empty() && t.front() == '-') {
      negative = true;
      t.remove_prefix(1);
    }
    const size_t dot = t.find('.');
    const std::string_view sec = t.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view() : t.substr(dot + 1);
    auto digits = [](std::string_view d) {
      for (char c : d) {
        if (c < '0' || c > '9') return false;
      }
      return true;
    };
    if (sec.empty() || sec.size() > 10 || !digits(sec) || dot == std::string_view::npos || frac.empty() || frac.size() > 9 ||
        !digits(frac)) {
      return fail("a time stamp SECONDS.FRACTION (up to 10 and 1..9 digits)", whole);
    }
    int64_t ns = 0;
    for (char c : sec) ns = ns * 10 + (c - '0');
    // Nanoseconds of an int64: up to about 292 years.
    if (ns > kMaxSeconds) return fail("a time stamp of at most " + std::to_string(kMaxSeconds) + " s", whole);
    int64_t f = 0;
    for (char c : frac) f = f * 10 + (c - '0');
    for (size_t i = frac.size(); i < 9; ++i) f *= 10;
    ns = ns * 1000000000 + f;
    out.time_ns = negative ? -ns : ns;
  }
  std::string_view rest = line.substr(close + 1);

  // Interface name, then the frame.
  auto next_field = [&rest]() {
    while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && !IsBlank(rest[n])) ++n;
    std::string_view field = rest.substr(0, n);
    rest.remove_prefix(n);
    return field;
  };
  const std::string_view iface = next_field();
  if (iface.empty()) return fail("an interface name after the time stamp", line);
  out.interface = std::string(iface);
  const std::string_view frame_text = next_field();
  if (frame_text.empty()) return fail("a frame ID#DATA after the interface name", line);
  // candump -x adds the direction (R or T) after the frame; nothing else may follow.
  const std::string_view extra = next_field();
  if (!extra.empty() && extra != "R" && extra != "T") return fail("the end of the line after the frame", extra);
  if (!next_field().empty()) return fail("the end of the line after the frame", line);

  // ID: 3 hex digits (standard) or 8 (extended).
  Frame& f = out.frame;
  const size_t hash = frame_text.find('#');
  if (hash == std::string_view::npos) return fail("a frame ID#DATA or ID##FLAGS DATA", frame_text);
  const std::string_view id = frame_text.substr(0, hash);
  if (id.size() != 3 && id.size() != 8) return fail("an id of 3 hex digits (standard) or 8 (extended)", id);
  uint32_t id_value = 0;
  for (char c : id) {
    const int v = HexValue(c);
    if (v < 0) return fail("an id of hex digits", id);
    id_value = id_value * 16 + static_cast<uint32_t>(v);
  }
  f.extended = id.size() == 8;
  if (id_value > (f.extended ? kMaxExtendedId : kMaxStandardId)) {
    return fail(f.extended ? "an extended id of at most 1FFFFFFF" : "a standard id of at most 7FF", id);
  }
  f.id = id_value;

  // Data: "#" then hex bytes (classic), "##" then a flags nibble and hex bytes (FD).
  std::string_view data = frame_text.substr(hash + 1);
  if (!data.empty() && data.front() == '#') {
    f.fd = true;
    data.remove_prefix(1);
    if (data.empty() || HexValue(data.front()) < 0) return fail("a flags hex digit after '##'", frame_text);
    data.remove_prefix(1);
  } else if (!data.empty() && (data.front() == 'R' || data.front() == 'r')) {
    return fail("a data frame (remote frames are not supported)", frame_text);
  }
  size_t len = 0;
  for (size_t i = 0; i < data.size();) {
    if (data[i] == '.') {  // cansend's optional byte separator
      ++i;
      continue;
    }
    if (i + 1 >= data.size() || HexValue(data[i]) < 0 || HexValue(data[i + 1]) < 0) {
      return fail("data as pairs of hex digits", data);
    }
    if (len >= kFdMaxLen) return fail("at most 64 data bytes", data);
    f.data[len++] = static_cast<uint8_t>(HexValue(data[i]) * 16 + HexValue(data[i + 1]));
    i += 2;
  }
  if (!ValidLength(f.fd, static_cast<uint8_t>(len))) {
    return fail(f.fd ? "a CAN FD length (0..8, 12, 16, 20, 24, 32, 48 or 64 bytes)" : "at most 8 data bytes in a classic frame ('##' marks CAN FD)",
                std::to_string(len) + " bytes");
  }
  f.len = static_cast<uint8_t>(len);
  return out;
}

std::vector<LoggedFrame> ReadCandumpLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CandumpError(path + ": expected a readable candump log, got " + std::strerror(errno));
  std::vector<LoggedFrame> frames;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    frames.push_back(ParseCandumpLine(line, path, line_no));
  }
  if (in.bad()) throw CandumpError(path + ":" + std::to_string(line_no + 1) + ": expected a readable candump log, got a read error");
  return frames;
}

CandumpWriter::CandumpWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) throw CandumpError(path + ": expected a writable candump log, got " + std::strerror(errno));
}

CandumpWriter::~CandumpWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool CandumpWriter::Append(const LoggedFrame& logged) {
  const std::string line = FormatCandumpLine(logged) + "\n";
  return std::fwrite(line.data(), 1, line.size(), file_) == line.size();
}

bool CandumpWriter::Flush() { return std::fflush(file_) == 0; }

}  // namespace platoon::can
