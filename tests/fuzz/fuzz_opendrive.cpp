// libFuzzer target: the OpenDRIVE importer (road::LoadOpenDriveText, the same path as a road file ending in
// .xodr: the small XML reader, the subset check, RoadDef validation, the network), then what road users do
// with the network. Bad input must give a ConfigError with a message; any other exception or a crash is a
// bug. What imports must export again and import to as many roads.
#include "platoon/config/table.hpp"
#include "platoon/road/opendrive.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_opendrive: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const road::RoadNetwork network = road::LoadOpenDriveText(text, "fuzz.xodr");
    for (const auto& r : network.Roads()) {
      for (int i = 0; i <= 4; ++i) (void)r.Evaluate(r.Length() * i / 4.0);
    }
    (void)network.Project(Vec3(10, 5, 0));
    const std::string again = road::ExportOpenDrive(network);
    Check(road::ReadOpenDrive(again, "again.xodr").size() == network.Roads().size(),
          "an imported network exported and imported again has another number of roads");
  } catch (const config::ConfigError& e) {
    Check(!std::string(e.what()).empty(), "ConfigError without a message");
  }
  return 0;
}
