// candump log lines and files (shared/src/can/candump.cpp): the exact text of classic, extended and CAN FD
// lines, reading what candump and cansend write, a file:line for every line it cannot read, and write
// errors reported by the writer's result rather than thrown.
#include "../support/session_fixture.hpp"
#include "platoon/can/candump.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

namespace can_candump_test_detail {

using namespace platoon::can;

LoggedFrame MakeLogged(int64_t time_ns, uint32_t id, bool extended, bool fd, std::vector<uint8_t> bytes) {
  LoggedFrame l;
  l.time_ns = time_ns;
  l.frame.id = id;
  l.frame.extended = extended;
  l.frame.fd = fd;
  l.frame.len = static_cast<uint8_t>(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) l.frame.data[i] = bytes[i];
  return l;
}

std::string CandumpErrorOf(const std::string& line) {
  try {
    ParseCandumpLine(line, "x.log", 7);
  } catch (const CandumpError& e) {
    return e.what();
  }
  return "";
}

}  // namespace can_candump_test_detail

using namespace can_candump_test_detail;

TEST_CASE("can candump: lines are written as candump -l writes them") {
  CHECK(FormatCandumpLine(MakeLogged(1700000000000100000, 0x123, false, false, {0xDE, 0xAD, 0xBE, 0xEF})) ==
        "(1700000000.000100) can0 123#DEADBEEF");
  LoggedFrame ext = MakeLogged(1500000, 0x18FF1234, true, false, {});
  ext.interface = "vcan1";
  CHECK(FormatCandumpLine(ext) == "(0.001500) vcan1 18FF1234#");
  std::vector<uint8_t> bytes(64);
  std::string hex;
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 4 + 1);
    static const char* digits = "0123456789ABCDEF";
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 0xF];
  }
  CHECK(FormatCandumpLine(MakeLogged(2000000000, 0x7FF, false, true, bytes)) == "(2.000000) can0 7FF##0" + hex);
  CHECK(FormatCandumpLine(MakeLogged(-1500000000, 0x001, false, false, {0x01})) == "(-1.500000) can0 001#01");
}

TEST_CASE("can candump: written lines read back to the same frames") {
  std::vector<uint8_t> twelve(12, 0xA5);
  const std::vector<LoggedFrame> frames = {
      MakeLogged(1700000000000100000, 0x123, false, false, {0xDE, 0xAD, 0xBE, 0xEF}),
      MakeLogged(0, 0x1FFFFFFF, true, false, {1, 2, 3, 4, 5, 6, 7, 8}),
      MakeLogged(42000, 0x400, false, true, twelve),
      MakeLogged(-2000000000, 0x000, false, true, {}),
  };
  for (const LoggedFrame& f : frames) {
    const std::string line = FormatCandumpLine(f);
    INFO(line);
    CHECK(ParseCandumpLine(line, "x.log", 1) == f);
  }
}

TEST_CASE("can candump: lines of cansend style and candump -x are read") {
  // Lower-case hex, '.' between bytes, a direction after the frame, CR LF, fewer fraction digits.
  const LoggedFrame a = ParseCandumpLine("(12.5) can1 1ab#de.ad.be.ef R\r", "x.log", 1);
  CHECK(a.time_ns == 12500000000);
  CHECK(a.interface == "can1");
  CHECK(a.frame.id == 0x1AB);
  CHECK_FALSE(a.frame.extended);
  CHECK(a.frame.len == 4);
  CHECK(a.frame.data[3] == 0xEF);
  // CAN FD with the bit-rate-switch flag: the flag is read and not kept.
  const LoggedFrame b = ParseCandumpLine("(0.000001) can0 00000400##1" + std::string(24, 'F'), "x.log", 1);
  CHECK(b.time_ns == 1000);
  CHECK(b.frame.extended);
  CHECK(b.frame.fd);
  CHECK(b.frame.len == 12);
  CHECK(b.frame.data[11] == 0xFF);
  CHECK(b.frame.data[12] == 0);
}

TEST_CASE("can candump: every line it cannot read gives file and line") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"12.0 can0 123#00", "'(' opening"},
      {"(12.0 can0 123#00", "')' closing"},
      {"(12) can0 123#00", "SECONDS.FRACTION"},
      {"(1x.0) can0 123#00", "SECONDS.FRACTION"},
      {"(9700000000.000100) can0 123#00", "at most 9000000000 s"},
      {"(1.0)", "interface name"},
      {"(1.0) can0", "frame ID#DATA"},
      {"(1.0) can0 123", "ID#DATA"},
      {"(1.0) can0 1234#00", "3 hex digits"},
      {"(1.0) can0 12G#00", "hex digits"},
      {"(1.0) can0 800#00", "at most 7FF"},
      {"(1.0) can0 20000000#00", "at most 1FFFFFFF"},
      {"(1.0) can0 123#0", "pairs of hex digits"},
      {"(1.0) can0 123#0011223344556677889", "pairs of hex digits"},
      {"(1.0) can0 123#001122334455667788", "at most 8 data bytes"},
      {"(1.0) can0 123##0001122334455667788", "CAN FD length"},
      {"(1.0) can0 123##", "flags hex digit"},
      {"(1.0) can0 123#R", "remote frames"},
      {"(1.0) can0 123#00 X", "end of the line"},
  };
  for (const auto& entry : cases) {
    const std::string& line = entry.first;
    const std::string& part = entry.second;
    INFO(line);
    const std::string error = CandumpErrorOf(line);
    CHECK(error.rfind("x.log:7: expected ", 0) == 0);
    CHECK(error.find(part) != std::string::npos);
    CHECK(error.find(", got ") != std::string::npos);
  }
}

TEST_CASE("can candump: a log file is written and read with its line numbers") {
  platoon::testing::TempDir dir;
  const std::string path = dir.Path() + "/bus.log";
  {
    CandumpWriter writer(path);
    CHECK(writer.Append(MakeLogged(1000, 0x100, false, false, {1, 2})));
    CHECK(writer.Append(MakeLogged(2000, 0x18FF1234, true, false, {3})));
    CHECK(writer.Flush());
  }
  const std::vector<LoggedFrame> read = ReadCandumpLog(path);
  REQUIRE(read.size() == 2);
  CHECK(read[0] == MakeLogged(1000, 0x100, false, false, {1, 2}));
  CHECK(read[1].frame.id == 0x18FF1234);
  // A bad third line (after a blank one) names line 4.
  {
    std::ofstream out(path, std::ios::app);
    out << "\n(3.0) can0 123#XY\n";
  }
  try {
    ReadCandumpLog(path);
    FAIL("no exception");
  } catch (const CandumpError& e) {
    CHECK(std::string(e.what()).rfind(path + ":4: expected", 0) == 0);
  }
  CHECK_THROWS_AS(ReadCandumpLog(dir.Path() + "/missing.log"), CandumpError);
  CHECK_THROWS_AS(CandumpWriter(dir.Path() + "/no/such/dir/x.log"), CandumpError);
}

TEST_CASE("can candump: a full disk is reported by the writer's result and not thrown") {
  CandumpWriter writer("/dev/full");
  bool all_ok = true;
  for (int i = 0; i < 2000; ++i) all_ok = writer.Append(MakeLogged(i, 0x123, false, false, {1, 2, 3, 4, 5, 6, 7, 8})) && all_ok;
  all_ok = writer.Flush() && all_ok;
  CHECK_FALSE(all_ok);
}
