#include "platoon/sensors/pcd.hpp"

#include "platoon/point_record.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace platoon::sensors {
namespace {

// ---- The one field layout we write (docs/CLOUD_PROCESSING.md §5), and the one of builds before the
// reflectivity field (point record layout 1), which the reader still takes.
constexpr size_t kFieldCount = 13, kLegacyFieldCount = 11;
constexpr std::array<std::string_view, kFieldCount> kFields = {
    "x", "y", "z", "power", "snr", "t", "ring", "echo", "source", "entity", "class", "intensity", "return_type"};
constexpr std::array<std::string_view, kFieldCount> kSizes = {"4", "4", "4", "4", "4", "4", "2",
                                                              "1", "1", "4", "2", "1", "1"};
constexpr std::array<std::string_view, kFieldCount> kTypes = {"F", "F", "F", "F", "F", "F", "U",
                                                              "U", "U", "U", "U", "U", "U"};
constexpr std::array<std::string_view, kFieldCount> kCounts = {"1", "1", "1", "1", "1", "1", "1",
                                                               "1", "1", "1", "1", "1", "1"};
constexpr std::array<std::string_view, kLegacyFieldCount> kLegacyFields = {
    "x", "y", "z", "intensity", "snr", "t", "ring", "echo", "source", "entity", "class"};
constexpr std::array<std::string_view, kLegacyFieldCount> kLegacySizes = {"4", "4", "4", "4", "4", "4",
                                                                          "2", "1", "1", "4", "4"};
constexpr std::array<std::string_view, kLegacyFieldCount> kLegacyTypes = {"F", "F", "F", "F", "F", "F",
                                                                          "U", "U", "U", "U", "U"};
// Binary rows are the shared point record (platoon/point_record.hpp): same fields, same order.
constexpr size_t kRowBytes = point_record::kStride;
constexpr size_t kRowsPerChunk = 1 << 15;

// ---- Text helpers.
template <typename T>
void AppendNumber(std::string& out, T v) {
  std::array<char, 40> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);  // shortest round-trip for floats
  out.append(buf.data(), res.ptr);
}

// A header token quoted for an error message: at most 32 characters, non-printable bytes as \xNN.
std::string Quote(std::string_view s) {
  std::string q = "'";
  for (size_t i = 0; i < s.size() && i < 32; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      q += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      q += hex;
    }
  }
  if (s.size() > 32) q += "...";
  return q + "'";
}

std::vector<std::string_view> Tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <typename T>
bool ParseNumber(std::string_view s, T& v) {
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// ---- Header and rows.
void AppendHeader(std::string& out, size_t n, PcdFormat format, const Pose& vp) {
  auto list = [&out](std::string_view key, const auto& items) {
    out += key;
    for (std::string_view s : items) {
      out += ' ';
      out += s;
    }
    out += '\n';
  };
  out += "# .PCD v0.7 - Point Cloud Data file format\n";
  out += "VERSION 0.7\n";
  list("FIELDS", kFields);
  list("SIZE", kSizes);
  list("TYPE", kTypes);
  list("COUNT", kCounts);
  out += "WIDTH ";
  AppendNumber(out, n);
  out += '\n';
  out += "HEIGHT 1\n";
  out += "VIEWPOINT";
  for (double v : {vp.position_m.x(), vp.position_m.y(), vp.position_m.z(), vp.orientation.w(), vp.orientation.x(),
                   vp.orientation.y(), vp.orientation.z()}) {
    out += ' ';
    AppendNumber(out, v);
  }
  out += '\n';
  out += "POINTS ";
  AppendNumber(out, n);
  out += '\n';
  out += format == PcdFormat::kBinary ? "DATA binary\n" : "DATA ascii\n";
}

void AppendRows(std::string& out, std::span<const CloudPoint> points, PcdFormat format) {
  if (format == PcdFormat::kBinary) {
    AppendPointRecords(points, out);
    return;
  }
  for (const CloudPoint& p : points) {
    for (float v : {p.x_m, p.y_m, p.z_m, p.intensity_w, p.snr, p.time_offset_s}) {
      AppendNumber(out, v);
      out += ' ';
    }
    for (uint32_t v : {uint32_t(p.ring), uint32_t(p.echo), uint32_t(p.source), p.entity_id, uint32_t(p.class_id),
                       uint32_t(p.reflectivity)}) {
      AppendNumber(out, v);
      out += ' ';
    }
    AppendNumber(out, uint32_t(p.return_type));
    out += '\n';
  }
}

// ---- File output.
[[noreturn]] void ThrowErrno(const std::string& path, const std::string& what, int err) {
  throw std::runtime_error("WritePcd: '" + path + "': " + what + ": " + std::strerror(err));
}

void WriteAll(int fd, const std::string& data, const std::string& path, const std::string& tmp) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      ThrowErrno(path, "cannot write '" + tmp + "'", err);
    }
    done += static_cast<size_t>(w);
  }
}

// ---- Parsing.
class Parser {
 public:
  Parser(std::string_view data, const std::string& name) : data_(data), name_(name) {}

  std::vector<CloudPoint> Parse(Pose* viewpoint);

 private:
  [[noreturn]] void Fail(const std::string& msg) const {
    throw std::runtime_error("ReadPcd: " + name_ + ":" + std::to_string(line_no_) + ": " + msg);
  }
  [[noreturn]] void FailFile(const std::string& msg) const { throw std::runtime_error("ReadPcd: " + name_ + ": " + msg); }

  // Next line without its '\n' (and '\r'); false at the end of the data. Every line we write ends in
  // '\n', so a last line without one is a truncated file (the cut may fall inside a number).
  bool NextLine(std::string_view& line) {
    if (pos_ >= data_.size()) return false;
    const size_t nl = data_.find('\n', pos_);
    ++line_no_;
    if (nl == std::string_view::npos) {
      line = data_.substr(pos_);
      pos_ = data_.size();
      if (Tokens(line).empty()) return false;  // trailing blanks
      Fail("truncated file: last line has no line end");
    }
    line = data_.substr(pos_, nl - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = nl + 1;
    return true;
  }

  // Checks a FIELDS, SIZE, TYPE or COUNT list (tokens after the keyword) against the layout's.
  void ExpectList(std::string_view key, const std::vector<std::string_view>& tok,
                  std::span<const std::string_view> expected, std::span<const std::string_view> fields) {
    const std::string n = std::to_string(expected.size());
    if (key == "FIELDS") {
      for (size_t i = 1; i < tok.size(); ++i) {
        if (i - 1 >= expected.size())
          Fail("unexpected field " + Quote(tok[i]) + " after '" + std::string(expected.back()) +
               "' (this reader supports exactly " + n + " fields)");
        if (tok[i] != expected[i - 1])
          Fail("unknown field " + Quote(tok[i]) + " at position " + std::to_string(i) + ", expected '" +
               std::string(expected[i - 1]) + "'");
      }
      if (tok.size() - 1 != expected.size())
        Fail("FIELDS lists " + std::to_string(tok.size() - 1) + " fields, expected " + n + " (missing '" +
             std::string(expected[tok.size() - 1]) + "')");
      return;
    }
    if (tok.size() - 1 != expected.size())
      Fail(std::string(key) + " has " + std::to_string(tok.size() - 1) + " entries, expected " + n);
    for (size_t i = 1; i < tok.size(); ++i)
      if (tok[i] != expected[i - 1])
        Fail(std::string(key) + " of field '" + std::string(fields[i - 1]) + "' is " + Quote(tok[i]) + ", expected '" +
             std::string(expected[i - 1]) + "'");
  }

  uint64_t ParseCount(std::string_view key, const std::vector<std::string_view>& tok) {
    uint64_t v = 0;
    if (tok.size() != 2 || !ParseNumber(tok[1], v)) Fail(std::string(key) + " needs one unsigned integer");
    return v;
  }

  // One ascii row of the current layout (legacy_: 11 values, class up to 65535, no reflectivity).
  void ParseAsciiRow(std::string_view line, CloudPoint& p) {
    const std::vector<std::string_view> tok = Tokens(line);
    const size_t n_fields = legacy_ ? kLegacyFieldCount : kFieldCount;
    const std::string_view* names = legacy_ ? kLegacyFields.data() : kFields.data();
    if (tok.size() != n_fields)
      Fail("expected " + std::to_string(n_fields) + " values, got " + std::to_string(tok.size()));
    float* floats[] = {&p.x_m, &p.y_m, &p.z_m, &p.intensity_w, &p.snr, &p.time_offset_s};
    for (size_t f = 0; f < 6; ++f)
      if (!ParseNumber(tok[f], *floats[f]))
        Fail("field '" + std::string(names[f]) + "': " + Quote(tok[f]) + " is not a 32-bit float");
    // ring, echo, source, entity, class[, intensity, return_type]
    const uint64_t limits[] = {0xffff, 0xff, 0xff, 0xffffffff, 0xffff, 0xff, 0xff};
    const int bits[] = {16, 8, 8, 32, 16, 8, 8};
    uint64_t v[7] = {};
    for (size_t f = 0; f + 6 < n_fields; ++f)
      if (!ParseNumber(tok[6 + f], v[f]) || v[f] > limits[f])
        Fail("field '" + std::string(names[6 + f]) + "': " + Quote(tok[6 + f]) + " is not an unsigned " +
             std::to_string(bits[f]) + "-bit integer");
    p.ring = static_cast<uint16_t>(v[0]);
    p.echo = static_cast<uint8_t>(v[1]);
    p.source = static_cast<uint8_t>(v[2]);
    p.entity_id = static_cast<uint32_t>(v[3]);
    p.class_id = static_cast<uint16_t>(v[4]);
    p.reflectivity = static_cast<uint8_t>(v[5]);
    p.return_type = static_cast<uint8_t>(v[6]);
  }

  bool legacy_ = false;  // the header lists the layout-1 fields
  std::string_view data_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
};

std::vector<CloudPoint> Parser::Parse(Pose* viewpoint) {
  // Header: keyword lines up to and including DATA, each at most once.
  bool seen_version = false, seen_fields = false, seen_size = false, seen_type = false, seen_count = false,
       seen_width = false, seen_height = false, seen_viewpoint = false, seen_points = false;
  uint64_t width = 0, height = 0, npoints = 0;
  Pose vp;
  bool binary = false, seen_data = false;
  std::string_view line;
  while (!seen_data) {
    if (!NextLine(line)) FailFile("header ends before its DATA line (not a PCD file, or truncated)");
    const std::vector<std::string_view> tok = Tokens(line);
    if (tok.empty() || tok[0].front() == '#') continue;
    const std::string_view key = tok[0];
    auto once = [&](bool& seen) {
      if (seen) Fail("duplicate " + std::string(key) + " line");
      seen = true;
    };
    if (key == "VERSION") {
      once(seen_version);
      if (tok.size() != 2 || (tok[1] != "0.7" && tok[1] != ".7"))
        Fail("unsupported VERSION " + (tok.size() > 1 ? Quote(tok[1]) : std::string("''")) + ", expected 0.7");
    } else if (key == "FIELDS") {
      once(seen_fields);
      // The earlier layout when its list matches exactly; otherwise errors name the current one.
      legacy_ = tok.size() == kLegacyFields.size() + 1 &&
                std::equal(kLegacyFields.begin(), kLegacyFields.end(), tok.begin() + 1);
      if (!legacy_) ExpectList(key, tok, kFields, kFields);
    } else if (key == "SIZE" || key == "TYPE" || key == "COUNT") {
      if (!seen_fields) Fail(std::string(key) + " before FIELDS");
      once(key == "SIZE" ? seen_size : key == "TYPE" ? seen_type : seen_count);
      const std::span<const std::string_view> fields = legacy_ ? std::span<const std::string_view>(kLegacyFields)
                                                               : std::span<const std::string_view>(kFields);
      std::span<const std::string_view> expected;
      if (key == "SIZE") expected = legacy_ ? std::span<const std::string_view>(kLegacySizes) : kSizes;
      if (key == "TYPE") expected = legacy_ ? std::span<const std::string_view>(kLegacyTypes) : kTypes;
      if (key == "COUNT") expected = fields.size() == kFieldCount ? std::span<const std::string_view>(kCounts)
                                                                  : std::span<const std::string_view>(kCounts).first(kLegacyFieldCount);
      ExpectList(key, tok, expected, fields);
    } else if (key == "WIDTH") {
      once(seen_width);
      width = ParseCount(key, tok);
    } else if (key == "HEIGHT") {
      once(seen_height);
      height = ParseCount(key, tok);
    } else if (key == "POINTS") {
      once(seen_points);
      npoints = ParseCount(key, tok);
    } else if (key == "VIEWPOINT") {
      once(seen_viewpoint);
      double v[7];
      if (tok.size() != 8) Fail("VIEWPOINT needs 7 numbers (tx ty tz qw qx qy qz), got " + std::to_string(tok.size() - 1));
      for (size_t i = 0; i < 7; ++i)
        if (!ParseNumber(tok[i + 1], v[i])) Fail("VIEWPOINT value " + Quote(tok[i + 1]) + " is not a number");
      vp.position_m = Vec3(v[0], v[1], v[2]);
      vp.orientation = Quat(v[3], v[4], v[5], v[6]);
    } else if (key == "DATA") {
      seen_data = true;
      if (tok.size() != 2) Fail("DATA needs one of ascii, binary");
      if (tok[1] == "binary") {
        binary = true;
      } else if (tok[1] != "ascii") {
        Fail("unsupported DATA " + Quote(tok[1]) + ", expected ascii or binary");
      }
    } else {
      Fail("unknown header keyword " + Quote(key));
    }
  }
  // Every required entry present and consistent.
  const std::pair<bool, const char*> required[] = {{seen_version, "VERSION"}, {seen_fields, "FIELDS"}, {seen_size, "SIZE"},
                                                   {seen_type, "TYPE"},       {seen_count, "COUNT"},   {seen_width, "WIDTH"},
                                                   {seen_height, "HEIGHT"},   {seen_points, "POINTS"}};
  for (const auto& [seen, key] : required)
    if (!seen) Fail(std::string("header has no ") + key + " line before DATA");
  if (height != 0 && width > std::numeric_limits<uint64_t>::max() / height)
    Fail("WIDTH x HEIGHT overflows");
  if (width * height != npoints)
    Fail("WIDTH x HEIGHT = " + std::to_string(width * height) + " does not match POINTS " + std::to_string(npoints));
  if (viewpoint) *viewpoint = vp;

  std::vector<CloudPoint> points;
  const size_t remaining = data_.size() - pos_;
  if (binary) {
    // Exactly POINTS rows of 36 bytes after the header.
    if (npoints > remaining / kRowBytes)
      FailFile("truncated binary data: POINTS " + std::to_string(npoints) + " needs " +
               (npoints > std::numeric_limits<uint64_t>::max() / kRowBytes ? std::string("more")
                                                                            : std::to_string(npoints * kRowBytes)) +
               " bytes after the header, the file has " + std::to_string(remaining));
    if (remaining != npoints * kRowBytes)
      FailFile(std::to_string(remaining - npoints * kRowBytes) + " unexpected bytes after the last of " +
               std::to_string(npoints) + " binary points");
    points.resize(npoints);
    for (size_t i = 0; i < npoints; ++i) {
      points[i] = ReadPointRecord(data_.data() + pos_ + i * kRowBytes);
      // A layout-1 row ends in a uint32 class: its upper half must be 0 to read as class_id.
      if (legacy_ && (points[i].reflectivity != 0 || points[i].return_type != 0))
        FailFile("binary point " + std::to_string(i) + ": class " +
                 std::to_string(point_record::Load<uint32_t>(data_.data() + pos_ + i * kRowBytes + 32)) +
                 " does not fit the 16-bit class of this build");
    }
    return points;
  }

  // ASCII: one line per point; a row needs at least 22 bytes ("0 0 0 0 0 0 0 0 0 0 0\n"), which bounds
  // the reservation on a lying POINTS count.
  points.reserve(std::min<uint64_t>(npoints, remaining / 22));
  for (uint64_t i = 0; i < npoints; ++i) {
    if (!NextLine(line))
      FailFile("truncated ascii data: POINTS " + std::to_string(npoints) + " but the file ends after " +
               std::to_string(i) + " points");
    ParseAsciiRow(line, points.emplace_back());
  }
  while (NextLine(line))
    if (!Tokens(line).empty()) Fail("unexpected data after the last of " + std::to_string(npoints) + " points");
  return points;
}

}  // namespace

std::string EncodePcd(std::span<const CloudPoint> points, PcdFormat format, const Pose& viewpoint) {
  std::string out;
  AppendHeader(out, points.size(), format, viewpoint);
  out.reserve(out.size() + points.size() * (format == PcdFormat::kBinary ? kRowBytes : 96));
  AppendRows(out, points, format);
  return out;
}

void WritePcd(const std::string& path, std::span<const CloudPoint> points, PcdFormat format, const Pose& viewpoint) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) ThrowErrno(path, "cannot create '" + tmp + "'", errno);

  // Header, then rows in chunks so a large ascii cloud never sits in memory as text.
  std::string buf;
  AppendHeader(buf, points.size(), format, viewpoint);
  WriteAll(fd, buf, path, tmp);
  for (size_t first = 0; first < points.size(); first += kRowsPerChunk) {
    buf.clear();
    AppendRows(buf, points.subspan(first, std::min(kRowsPerChunk, points.size() - first)), format);
    WriteAll(fd, buf, path, tmp);
  }

  // Durable before visible: fsync, close, then rename over the target.
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    ThrowErrno(path, "cannot flush '" + tmp + "'", err);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ThrowErrno(path, "cannot close '" + tmp + "'", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ThrowErrno(path, "cannot rename '" + tmp + "' to it", err);
  }
}

std::vector<CloudPoint> ParsePcd(std::string_view contents, const std::string& name, Pose* viewpoint) {
  return Parser(contents, name).Parse(viewpoint);
}

std::vector<CloudPoint> ReadPcd(const std::string& path, Pose* viewpoint) {
  // Whole file into memory (PCD data are read row by row from it).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("ReadPcd: cannot open '" + path + "': " + std::strerror(errno));
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) data.reserve(static_cast<size_t>(st.st_size));
  std::array<char, 1 << 16> chunk;
  for (;;) {
    const ssize_t r = ::read(fd, chunk.data(), chunk.size());
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw std::runtime_error("ReadPcd: cannot read '" + path + "': " + std::strerror(err));
    }
    data.append(chunk.data(), static_cast<size_t>(r));
  }
  ::close(fd);
  return ParsePcd(data, path, viewpoint);
}

}  // namespace platoon::sensors
