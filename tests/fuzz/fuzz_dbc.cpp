// libFuzzer target: the DBC reader (can::ParseDbc), then what the `can` role does with a parsed database:
// decode a frame made of the input's last bytes for every message, encode the decoded values back, and
// parse the same bytes as a candump line. Bad input must give a DbcError or CandumpError with a
// "FILE:LINE: expected" message; any other exception or a crash is a bug.
#include "platoon/can/candump.hpp"
#include "platoon/can/dbc.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace platoon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const can::Database db = can::ParseDbc(text, "fuzz.dbc");
    // A payload from the input's last 64 bytes, for every message at its own length.
    can::Frame frame;
    const size_t n = std::min<size_t>(size, can::kFdMaxLen);
    std::memcpy(frame.data.data(), data + size - n, n);
    for (const can::Message& m : db.messages) {
      can::Frame f = frame;
      f.id = m.id;
      f.extended = m.extended;
      f.fd = m.fd;
      f.len = static_cast<uint8_t>(m.fd ? can::FdLengthFor(m.length) : std::min<uint32_t>(m.length, 8));
      for (uint32_t i = f.len; i < can::kFdMaxLen; ++i) f.data[i] = 0;
      const auto values = can::DecodeMessage(m, f);
      (void)can::EncodeMessage(m, values);
    }
  } catch (const can::DbcError& e) {
    if (std::strstr(e.what(), "fuzz.dbc:") != e.what() || std::strstr(e.what(), ": expected ") == nullptr) {
      std::fprintf(stderr, "fuzz_dbc: DbcError without FILE:LINE: expected: %s\n", e.what());
      std::abort();
    }
  }
  try {
    (void)can::ParseCandumpLine(text, "fuzz.log", 1);
  } catch (const can::CandumpError& e) {
    if (std::strstr(e.what(), "fuzz.log:1: expected ") != e.what()) {
      std::fprintf(stderr, "fuzz_dbc: CandumpError without FILE:LINE: expected: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
