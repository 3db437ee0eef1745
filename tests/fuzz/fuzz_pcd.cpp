// libFuzzer target: the PCD reader (sensors::ParsePcd, which ReadPcd calls on a file's contents).
// Bad input must give a std::runtime_error with a message; anything else, or a crash, is a bug. What
// parses must encode again and parse to as many points.
#include "platoon/sensors/pcd.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

using namespace platoon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view contents(reinterpret_cast<const char*>(data), size);
  try {
    Pose viewpoint;
    const auto points = sensors::ParsePcd(contents, "fuzz.pcd", &viewpoint);
    const std::string again = sensors::EncodePcd(points, sensors::PcdFormat::kBinary, viewpoint);
    if (sensors::ParsePcd(again, "again.pcd").size() != points.size()) {
      std::fprintf(stderr, "fuzz_pcd: re-encoded cloud parsed to another point count\n");
      std::abort();
    }
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).empty()) {
      std::fprintf(stderr, "fuzz_pcd: error without a message\n");
      std::abort();
    }
  }
  return 0;
}
