// Readable entity names (issue 37 item 7): EntityDisplayName and the session's vehicle_names.
#include "platoon/config/session.hpp"
#include "platoon/config/table.hpp"
#include "platoon/data/csv_writer.hpp"
#include "platoon/entity_id.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace entity_name_test_detail {

const char* kNamedSession = R"(
[[node]]
name = "ego"
role = "driver"
input = "scripted:none.txt"

[[node]]
name = "city"
role = "traffic"
vehicles = 5
vehicle_names = ["lead", "", "bus"]
)";

}  // namespace entity_name_test_detail

TEST_CASE("names: a driver seat's car goes by its node name and traffic by node and index") {
  using namespace platoon;
  const std::vector<NodeNaming> nodes = {{"ego", true, {}}, {"city", false, {}}};
  CHECK(EntityDisplayName(VehicleId("ego", 0), nodes) == "ego");
  CHECK(EntityDisplayName(VehicleId("city", 3), nodes) == "city:3");
  CHECK(EntityDisplayName(VehicleId("city", 0), nodes) == "city:0");
  // A driver's second index is no seat car: it keeps the index form.
  CHECK(EntityDisplayName(VehicleId("ego", 2), nodes) == "ego:2");
}

TEST_CASE("names: session names win and blanks keep the default") {
  using namespace platoon;
  const std::vector<NodeNaming> nodes = {{"seat", true, {"subject"}}, {"city", false, {"lead", "", "bus"}}};
  CHECK(EntityDisplayName(VehicleId("seat", 0), nodes) == "subject");
  CHECK(EntityDisplayName(VehicleId("city", 0), nodes) == "lead");
  CHECK(EntityDisplayName(VehicleId("city", 1), nodes) == "city:1");
  CHECK(EntityDisplayName(VehicleId("city", 2), nodes) == "bus");
  CHECK(EntityDisplayName(VehicleId("city", 4), nodes) == "city:4");
}

TEST_CASE("names: an id no node made falls back to hex") {
  using namespace platoon;
  const std::vector<NodeNaming> nodes = {{"city", false, {}}};
  const uint64_t id = VehicleId("elsewhere", 7);
  char want[24];
  std::snprintf(want, sizeof want, "#%016llx", static_cast<unsigned long long>(id));
  CHECK(EntityDisplayName(id, nodes) == want);
  CHECK(EntityDisplayName(12345, {}) == "#0000000000003039");
}

TEST_CASE("names: vehicle_names in the session file reach SessionNaming") {
  using namespace platoon;
  const auto s = config::LoadSessionText(entity_name_test_detail::kNamedSession, "named.toml");
  const auto naming = config::SessionNaming(s);
  REQUIRE(naming.size() == 2);
  CHECK(naming[0].driver);
  CHECK_FALSE(naming[1].driver);
  CHECK(EntityDisplayName(VehicleId("ego", 0), naming) == "ego");
  CHECK(EntityDisplayName(VehicleId("city", 0), naming) == "lead");
  CHECK(EntityDisplayName(VehicleId("city", 2), naming) == "bus");
}

TEST_CASE("names: bad vehicle_names are refused naming the key") {
  using namespace platoon;
  const std::string base = "[[node]]\nname = \"city\"\nrole = \"traffic\"\nvehicles = 2\n";
  auto error_of = [](const std::string& text) {
    try {
      config::LoadSessionText(text, "bad.toml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string too_many = error_of(base + "vehicle_names = [\"a\", \"b\", \"c\"]\n");
  CHECK(too_many.find("bad.toml:") == 0);
  CHECK(too_many.find("vehicle_names") != std::string::npos);
  CHECK(too_many.find("at most vehicles = 2") != std::string::npos);
  const std::string dup = error_of(base + "vehicle_names = [\"a\"]\n[[node]]\nname = \"b\"\nrole = \"traffic\"\nvehicle_names = [\"a\"]\n");
  CHECK(dup.find("duplicate vehicle name \"a\"") != std::string::npos);
  const std::string role = error_of("[[node]]\nname = \"v\"\nrole = \"viewer\"\nvehicle_names = [\"a\"]\n");
  CHECK(role.find("is for traffic and driver nodes") != std::string::npos);
  const std::string seat = error_of("[[node]]\nname = \"s\"\nrole = \"driver\"\ninput = \"scripted:x.txt\"\nvehicle_names = [\"a\", \"b\"]\n");
  CHECK(seat.find("expected one name, got 2") != std::string::npos);
}

TEST_CASE("names: the data write puts the vehicle's name in a first column of every row") {
  using namespace platoon;
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / ("platoon_entity_name_" + std::to_string(::getpid()) + ".csv");
  data::CsvWriterDef def = data::DefaultCsvWriterDef(path.string(), {data::Column::kSimTime, data::Column::kLane});
  def.name = "lead, left";  // a comma: quoted
  {
    data::CsvWriter w(def, std::make_shared<spdlog::logger>("names-test", std::make_shared<spdlog::sinks::null_sink_mt>()));
    REQUIRE(w.Ok());
    for (int k = 0; k < 3; ++k) {
      data::MetricsRow row;
      row[data::Column::kSimTime] = k * 0.5;
      row[data::Column::kLane] = -1;
      CHECK(w.Push(row));
    }
    w.Close();
    CHECK(w.Stats().rows_written == 3);
  }
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  fs::remove(path);
  const std::string header = std::string("name,") + data::CsvHeader(def.columns) + "\n";
  CHECK(text.str().rfind(header, 0) == 0);
  size_t rows = 0;
  for (size_t at = text.str().find("\n\"lead, left\","); at != std::string::npos;
       at = text.str().find("\n\"lead, left\",", at + 1))
    ++rows;
  CHECK(rows == 3);
}
