// `platoon validate` end to end (tools/src/validate_cmd.cpp): a lock-step drive with road traffic and a
// sensor host carrying an objects sensor (sigma 0.1 m, detection probability 0.9) and a radar runs
// in-process; a test recorder writes its world broadcasts and sensor streams through the session-log
// writer, as the recorder role does; `platoon validate` runs as a process on that log and its CSVs must
// reproduce the configured sigma within 5 % and the detection rate within 3.29 standard errors (99.9 %).
//
// CheckObjectsReport() takes any log path: the last test runs the same check on the log of a replay of
// that drive, re-measured by a sensor host alone.
#include "../support/in_process_session.hpp"
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/server/replay.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace platoon::testing {
namespace {

namespace fs = std::filesystem;

const char* kDrive = R"(
[session]
name = "validate_drive"
mode = "lockstep"
step_hz = 100
end_s = 60

[road]
generate_length_m = 1500
seed = 3
lanes = 2
speed_limit_kmh = 80

[[node]]
name = "city"
role = "traffic"
traffic_model = "road"
vehicles = 40
speed_mps = 16

[[node]]
name = "probe"
role = "sensor"
attach_to = "city:0"
[[node.sensor]]
id = "front_objects"
type = "objects"
position = [3.7, 0.0, 0.5]
rate_hz = 50
fov_half_angle_deg = 45
range_max_m = 150
detection_probability = 0.9
position_sigma_m = [0.1, 0.1, 0.0]
position_offset_sigma_m = [0.0, 0.0, 0.0]
seed = 11
[[node.sensor]]
id = "front_radar"
type = "radar"
position = [3.7, 0.0, 0.5]
)";

// Runs `session` in-process and records it to `path` as a recorder would: the session info, every
// world broadcast at its sim time, every sensor message on its stream's topic at its stamp.
// `setup_core` adds systems to the server's core (a replay).
InProcessResult Record(const std::string& path, const config::SessionDef& session, bool publish_every_step,
                       const std::function<void(server::WorldCore&)>& setup_core = {}) {
  std::string error;
  auto writer = session_log::Writer::Open(path, &error);
  REQUIRE_MESSAGE(writer, error);
  session_log::SessionInfo info{"validate_drive", kDrive, "validate_drive.toml", "test"};
  REQUIRE(writer->WriteJson(session_log::kSessionTopic, "", "", session_log::SessionInfoJson(info), 0, 0).Ok());
  InProcessOptions taps;
  taps.publish_every_step = publish_every_step;
  taps.on_world = [&](const protocol::WorldState& w, const std::string& bytes) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    CHECK(writer->WriteEnvelope(session_log::kWorldTopic, std::span(data, bytes.size()), w.sim_time_ns, w.server_time_ns).Ok());
  };
  taps.on_data = [&](const protocol::Message& m) {
    std::visit(
        [&](const auto& msg) {
          if constexpr (requires { msg.header.sensor_id; }) {
            const std::string bytes = protocol::Encode(m);
            const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
            CHECK(writer->WriteEnvelope(session_log::DataTopic(msg.header.sensor_id), std::span(data, bytes.size()),
                                        msg.header.stamp_ns, 0)
                      .Ok());
          }
        },
        m);
  };
  taps.setup_core = setup_core;
  const InProcessResult r = RunInProcess(session, 1, taps);
  REQUIRE(writer->Close().Ok());
  MESSAGE("recorded ", r.steps, " steps, ", r.entities, " entities, ", r.data_messages, " sensor messages; topics: ",
          writer->TopicCounts().size());
  REQUIRE(r.sim_time_ns == 60'000'000'000);
  return r;
}

void RecordDrive(const std::string& path, bool publish_every_step) {
  Record(path, config::LoadSessionText(kDrive, "validate_drive.toml"), publish_every_step);
}

// One CSV file as rows of column -> text.
std::vector<std::map<std::string, std::string>> ReadCsv(const fs::path& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read ", path.string());
  auto split = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) out.push_back(c);
    return out;
  };
  std::string line;
  std::getline(f, line);
  const auto header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(f, line)) {
    const auto cells = split(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double Num(const std::map<std::string, std::string>& row, const std::string& key) {
  REQUIRE_MESSAGE(row.count(key), "no column ", key);
  return std::strtod(row.at(key).c_str(), nullptr);
}

// Runs `platoon validate` with `args`; returns its exit status and output.
std::pair<int, std::vector<std::string>> Validate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/platoon", "validate"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = process::Child::Spawn(argv);
  const auto status = RunToExit(c, std::chrono::seconds(120));
  REQUIRE_MESSAGE(status, "platoon validate did not finish within 120 s");
  return {*status, c.Lines()};
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The acceptance on any log (a live recording today, a replay's later): `platoon validate` on the objects
// sensor `sensor_id` reproduces sigma = 0.1 m within 5 % per axis and detection probability 0.9 within the
// rate's 95 % interval, writes the CSVs and, where matplotlib is installed, the two plots.
void CheckObjectsReport(const std::string& log_path, const std::string& sensor_id, const fs::path& out) {
  const auto [status, lines] = Validate({log_path, "--sensor", sensor_id, "--out", out.string()});
  MESSAGE(Joined(lines));
  REQUIRE(status == 0);
  const auto summary = ReadCsv(out / "summary.csv");
  REQUIRE(summary.size() == 1);
  const auto& s = summary[0];
  CHECK(s.at("sensor") == sensor_id);
  CHECK(s.at("kind") == "objects");
  CHECK(Num(s, "frames") >= 2900);
  CHECK(Num(s, "truth") >= 3000);
  CHECK(Num(s, "azimuth_half_deg") == doctest::Approx(45));  // from the recorded session file
  CHECK(Num(s, "sigma_x_m") == doctest::Approx(0.1).epsilon(0.05));
  CHECK(Num(s, "sigma_y_m") == doctest::Approx(0.1).epsilon(0.05));
  CHECK(std::abs(Num(s, "mean_x_m")) < 0.02);
  CHECK(std::abs(Num(s, "mean_y_m")) < 0.02);
  // The configured 0.9 within the binomial bound of this many trials. A fixed-seed test that used the 95 %
  // interval would fail for one seed in twenty of a correct sensor: the bound is 3.29 sigma (99.9 %). The
  // report's own 95 % interval is shown for the record.
  const double n = Num(s, "truth"), rate = Num(s, "detection_rate");
  const double z = (rate - 0.9) / std::sqrt(0.9 * 0.1 / n);
  MESSAGE("detection rate ", rate, " [", Num(s, "detection_rate_lo95"), ", ", Num(s, "detection_rate_hi95"),
          "] over ", n, " truth objects: z = ", z, " against 0.9");
  CHECK(std::abs(z) < 3.29);
  CHECK(Num(s, "false_positives") == 0);
  const auto bins = ReadCsv(out / "by_range.csv");
  REQUIRE(bins.size() == 5);  // four bins and "all"
  CHECK(bins.back().at("bin") == "all");
  CHECK(Num(bins.back(), "truth") == Num(s, "truth"));
  CHECK(ReadCsv(out / "by_class.csv").size() >= 1);
  // The plots, unless this machine has no python3 with matplotlib (the command says so and still succeeds).
  if (Joined(lines).find("plots: skipped") != std::string::npos) {
    MESSAGE("PNG check skipped: ", Joined(lines).substr(Joined(lines).find("plots: skipped")));
  } else {
    CHECK(fs::file_size(out / "detection_rate.png") > 1000);
    CHECK(fs::file_size(out / "position_error.png") > 1000);
  }
}

// The drive's log, recorded once per test process (doctest runs a test case once per subcase).
const TempDir& DriveDir() {
  static const TempDir dir;
  static const bool recorded = (RecordDrive((fs::path(dir.Path()) / "drive.mcap").string(), true), true);
  (void)recorded;
  return dir;
}

}  // namespace

TEST_CASE("validate: a recorded drive with an objects sensor reproduces sigma 0.1 m and detection 0.9") {
  const TempDir& dir = DriveDir();
  const std::string log = (fs::path(dir.Path()) / "drive.mcap").string();
  CheckObjectsReport(log, "front_objects", fs::path(dir.Path()) / "objects");
  // PLATOON_KEEP_VALIDATION=DIR keeps the log and the report there (docs/images comes from it).
  if (const char* keep = std::getenv("PLATOON_KEEP_VALIDATION"); keep && *keep) {
    fs::create_directories(keep);
    fs::copy(dir.Path(), keep, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }

  SUBCASE("the radar on the same drive: a report with its own figures") {
    const auto out = fs::path(dir.Path()) / "radar";
    const auto [status, lines] = Validate({log, "--sensor", "front_radar", "--out", out.string(), "--no-plots"});
    MESSAGE(Joined(lines));
    REQUIRE(status == 0);
    const auto s = ReadCsv(out / "summary.csv").at(0);
    CHECK(s.at("kind") == "radar");
    CHECK(Num(s, "truth") > 0);
    CHECK(Num(s, "detection_rate") > 0.3);
    CHECK_FALSE(fs::exists(out / "detection_rate.png"));
  }
  SUBCASE("a sensor that is not in the log: exit 1, naming the streams that are") {
    const auto [status, lines] = Validate({log, "--sensor", "rear_objects", "--out", (fs::path(dir.Path()) / "x").string()});
    CHECK(status == 1);
    const std::string out = Joined(lines);
    CHECK(out.find("no stream 'rear_objects'") != std::string::npos);
    CHECK(out.find("front_objects") != std::string::npos);
    CHECK(out.find("front_radar") != std::string::npos);
  }
  SUBCASE("usage errors exit 2 with a message") {
    auto [s1, l1] = Validate({log, "--sensor", "front_objects", "--bins", "0,20,10"});
    CHECK(s1 == 2);
    CHECK(Joined(l1).find("--bins") == std::string::npos);  // the message names what is wrong with the edges
    CHECK(Joined(l1).find("increase") != std::string::npos);
    auto [s2, l2] = Validate({log, "--sensor", "front_objects", "--bins", "0,ten"});
    CHECK(s2 == 2);
    CHECK(Joined(l2).find("\"ten\" is not a number") != std::string::npos);
    auto [s3, l3] = Validate({(fs::path(dir.Path()) / "missing.mcap").string(), "--sensor", "front_objects"});
    CHECK(s3 == 2);
    CHECK(Joined(l3).find("missing.mcap") != std::string::npos);
    const std::string junk = dir.Write("junk.mcap", "not a log");
    auto [s4, l4] = Validate({junk, "--sensor", "front_objects"});
    CHECK(s4 == 2);
    CHECK(Joined(l4).find("cannot read") != std::string::npos);
    auto [s5, l5] = Validate({"--help"});
    CHECK(s5 == 0);
    CHECK(Joined(l5).find("platoon validate drive.mcap --sensor") != std::string::npos);
  }
}

TEST_CASE("validate: a replay of the drive, re-measured by an objects sensor host, reproduces sigma 0.1 m and detection 0.9") {
  // The recorded drive (traffic and the probe car) is replayed in lock-step to a sensor host alone, whose
  // object list is recorded with the replayed world; platoon validate on that log must find the configured
  // sigma and detection rate again.
  const TempDir& dir = DriveDir();
  const std::string drive = (fs::path(dir.Path()) / "drive.mcap").string();
  const server::ReplayLog replay_log = server::LoadReplayLog(drive);
  REQUIRE(replay_log.problems.empty());
  config::SessionDef session = config::LoadSessionText(kDrive, "validate_drive.toml");
  std::erase_if(session.nodes, [](const config::NodeDef& n) { return n.name != "probe"; });
  REQUIRE(session.nodes.size() == 1);
  const std::string replayed = (fs::path(dir.Path()) / "replayed.mcap").string();
  std::shared_ptr<server::ReplaySystem> replay;
  Record(replayed, session, false, [&](server::WorldCore& core) {
    replay = std::make_shared<server::ReplaySystem>(replay_log, core, 0, 60'000'000'000);
    core.AddSystem(replay, server::system_priority::kStepper);
    core.EnableTimeControl();
  });
  REQUIRE(replay);
  CHECK(replay->Injected() >= replay_log.states.size() * 9 / 10);
  CheckObjectsReport(replayed, "front_objects", fs::path(dir.Path()) / "replayed_objects");
}

}  // namespace platoon::testing
