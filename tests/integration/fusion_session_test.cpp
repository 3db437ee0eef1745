// The four-lidar farm over loopback: a server, an ego, four sensor hosts and a fusion node as separate
// processes. kill -9 of one lidar host must not stall the fused stream; its restart must be picked up
// again without a frame that mixes data of the old and the new run.
#include "../support/session_fixture.hpp"
#include "platoon/node/fusion.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <map>
#include <set>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

const char* kLidars[] = {"lidar_front", "lidar_rear", "lidar_left", "lidar_right"};

std::string FarmSession(const std::string& record) {
  std::string s = R"(
[session]
name = "farm-test"
[scene]
[[scene.box]]
id = 101
position = [50.0, 0.0, 0.0]
size = [0.2, 0.2, 3.0]
[[node]]
name = "ego"
role = "traffic"
vehicles = 1
speed_mps = 20
track_center = [0.0, 0.0]
status_interval_s = 0
)";
  const char* mounts[] = {"[3.7, 0.0, 1.0]\nrpy_deg = [0, 0, 0]", "[-0.9, 0.0, 1.0]\nrpy_deg = [0, 0, 180]",
                          "[1.4, 0.9, 1.8]\nrpy_deg = [0, 0, 90]", "[1.4, -0.9, 1.8]\nrpy_deg = [0, 0, -90]"};
  for (int i = 0; i < 4; ++i)
    s += std::string("[[node]]\nname = \"") + kLidars[i] + "\"\nrole = \"sensor\"\nattach_to = \"ego\"\nstatus_interval_s = 0\n" +
         "[[node.sensor]]\nid = \"" + kLidars[i] + "\"\ntype = \"lidar\"\npreset = \"vlp16\"\n" +
         "azimuth_resolution_deg = 0.8\ndivergence = \"centre\"\nposition = " + mounts[i] + "\n";
  s += "[[node]]\nname = \"fusion\"\nrole = \"fusion\"\nattach_to = \"ego\"\nstatus_interval_s = 0\n[node.fusion]\n"
       "sources = [\"lidar_front\", \"lidar_rear\", \"lidar_left\", \"lidar_right\"]\nperiod_s = 0.1\ntimeout_s = 0.08\n"
       "record = \"" + record + "\"\n";
  return s;
}

struct Farm {
  std::string session;
  uint16_t port = 0;
  std::map<std::string, process::Child> procs;

  void Start(const std::string& name) {
    const auto t0 = std::chrono::steady_clock::now();
    procs.erase(name);
    const auto t1 = std::chrono::steady_clock::now();
    procs.emplace(name, process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", name,
                                               "--server", "127.0.0.1", "--port", std::to_string(port)}));
    const auto t2 = std::chrono::steady_clock::now();
    // Printed when slow (ctest keeps it): reaping the old process and forking the new one take milliseconds.
    if (t2 - t0 > std::chrono::milliseconds(200))
      std::printf("fusion farm: starting %s took %.3f s (reaping the old process %.3f s, the spawn %.3f s)\n",
                  name.c_str(), std::chrono::duration<double>(t2 - t0).count(),
                  std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  }
  // Reads every process's output until `who` prints a line containing `needle`.
  bool WaitFor(const std::string& who, const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    size_t seen = procs.at(who).Lines().size();
    while (std::chrono::steady_clock::now() < deadline) {
      for (auto& [n, p] : procs) {
        std::vector<std::string> out;
        p.Pump(out);
      }
      const auto& lines = procs.at(who).Lines();
      for (; seen < lines.size(); ++seen)
        if (lines[seen].find(needle) != std::string::npos) return true;
      procs.at(who).ReadLine(20ms);
      if (!lines.empty() && lines.back().find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

}  // namespace

TEST_CASE("fusion farm: kill -9 of a lidar host leaves 3 sources within a timeout, its restart brings 4 back, never mixed") {
  TempDir dir;
  const MachineStallProbe machine;
  const std::string record = dir.Path() + "/fused.mcap";
  auto server = StartServer(dir);
  Farm farm{dir.Write("farm.toml", FarmSession(record)), server.control_port, {}};
  for (const char* n : {"ego", "lidar_front", "lidar_rear", "lidar_left", "lidar_right", "fusion"}) farm.Start(n);

  const auto started_at = std::chrono::steady_clock::now();
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  if (!farm.WaitFor("fusion", "fused frames now from 4/4 sources", 40s)) {
    for (auto& [n, p] : farm.procs)
      for (size_t i = p.Lines().size() > 8 ? p.Lines().size() - 8 : 0; i < p.Lines().size(); ++i) MESSAGE(n << ": " << p.Lines()[i]);
    FAIL("no 4-source frame within 40 s");
  }
  const double to_four_s = since(started_at);
  // Let it run a little, then kill one host without warning.
  REQUIRE(!farm.WaitFor("fusion", "never printed", 2s));
  const auto killed_at = std::chrono::steady_clock::now();
  kill(farm.procs.at("lidar_left").Pid(), SIGKILL);
  REQUIRE_MESSAGE(farm.WaitFor("fusion", "fused frames now from 3/4 sources", 5s), "fusion did not go on with 3 sources");
  const double to_three_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const auto waited_at = std::chrono::steady_clock::now();
  REQUIRE(!farm.WaitFor("fusion", "never printed", 2s));
  if (since(waited_at) > 2.5) std::printf("fusion farm: a 2 s wait took %.3f s (%s)\n", since(waited_at), machine.Describe().c_str());
  farm.Start("lidar_left");
  const auto restarted_at = std::chrono::steady_clock::now();
  REQUIRE_MESSAGE(farm.WaitFor("fusion", "fused frames now from 4/4 sources", 30s), "the restarted host was not picked up");
  const double back_to_four_s = since(restarted_at);
  // Printed on every run (ctest keeps it in Testing/Temporary/LastTest.log): how long each phase took.
  std::printf("fusion farm phases: 4/4 sources %.2f s after the start, 3/4 %.3f s after the kill, 4/4 again %.2f s "
              "after the restart\n", to_four_s, to_three_s, back_to_four_s);
  REQUIRE(!farm.WaitFor("fusion", "never printed", 2s));
  for (auto& [n, p] : farm.procs) p.Signal(SIGTERM);
  for (auto& [n, p] : farm.procs) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!p.TryWait() && std::chrono::steady_clock::now() < deadline) p.ReadLine(50ms);
    while (p.ReadLine(0ms)) {
    }
    CHECK_MESSAGE(p.TryWait().has_value(), n << " did not exit on SIGTERM");
  }

  for (const auto& l : farm.procs.at("fusion").Lines())
    if (l.rfind("SUMMARY", 0) == 0) MESSAGE(l.substr(l.find("\"fusion\":"), 700));
  bool truncated = false;
  const auto frames = node::ReadFusedRecord(record, &truncated);
  REQUIRE(frames.size() > 50);
  // Frames never stall: consecutive references at most two scan periods apart (one timeout, one period).
  int64_t max_gap = 0;
  size_t max_gap_at = 0;
  int three = 0, four = 0;
  std::vector<uint64_t> left_epochs;
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto& f = frames[i];
    if (i > 0 && f.reference_ns - frames[i - 1].reference_ns > max_gap) {
      max_gap = f.reference_ns - frames[i - 1].reference_ns;
      max_gap_at = i;
    }
    int ok = 0;
    for (const auto& s : f.sources) {
      if (s.status != protocol::SourceStatus::kOk) continue;
      ++ok;
      // No stale data: every merged cloud belongs to the frame's own scan cycle.
      CHECK(f.reference_ns - (s.stamp_ns + 100'000'000) < 50'000'000);
      if (s.sensor_id == "lidar_left" && (left_epochs.empty() || left_epochs.back() != s.host_epoch))
        left_epochs.push_back(s.host_epoch);
    }
    three += ok == 3;
    four += ok == 4;
  }
  MESSAGE(frames.size() << " fused frames: " << four << " with 4 sources, " << three << " with 3; 3 sources "
                        << to_three_s << " s after the kill; largest reference gap " << max_gap / 1e6 << " ms");
  CHECK(three >= 10);
  CHECK(four >= 20);
  CHECK(to_three_s < 1.0);
  // On a miss: the frames around the gap, how far each process's loops fell behind, and the machine's own
  // stalls (a plain sleeping thread in this test), so that a starved machine is told from a slow node.
  std::vector<std::pair<std::string, const std::vector<std::string>*>> lines;
  for (const auto& [n, p] : farm.procs) lines.emplace_back(n, &p.Lines());
  std::string around;
  for (size_t i = max_gap_at > 2 ? max_gap_at - 2 : 0; i < std::min(frames.size(), max_gap_at + 2); ++i) {
    around += "\n  #" + std::to_string(i) + " ref " + std::to_string(frames[i].reference_ns / 1'000'000) + " ms:";
    for (const auto& src : frames[i].sources)
      around += " " + src.sensor_id + (src.status == protocol::SourceStatus::kOk
                                           ? "@" + std::to_string(src.stamp_ns / 1'000'000)
                                           : ":" + std::string(protocol::SourceStatusName(src.status)));
  }
  std::printf("fusion farm: largest reference gap %.1f ms\n", static_cast<double>(max_gap) / 1e6);
  CHECK_MESSAGE(max_gap <= 200'000'000, machine.Describe() << "; " << LoopLateness(lines) << around);
  // The killed host's run and the restarted one: two epochs, the old never after the new.
  REQUIRE(left_epochs.size() == 2);
  CHECK(left_epochs[0] != left_epochs[1]);
  // The killed host's absence is handled (3/4 sources), not an error.
  for (auto& [n, p] : farm.procs) CheckNoErrorLines(p, n);
  CheckNoErrorLines(server.child, "server");
}

TEST_CASE("fusion farm: platoon check lists the sensors and refuses a bad sensor table naming file, line and key") {
  TempDir dir;
  const std::string good = dir.Write("farm.toml", FarmSession(dir.Path() + "/fused.mcap"));
  auto ok = process::Child::Spawn({BinDir() + "/platoon", "check", good});
  const auto st = ok.WaitFor(20s);
  while (ok.ReadLine(0ms)) {
  }
  REQUIRE(st.has_value());
  CHECK(*st == 0);
  CHECK(AnyLineContains(ok.Lines(), "sensor lidar_left"));
  CheckNoErrorLines(ok, "platoon check (good)");
  std::string text = FarmSession(dir.Path() + "/fused.mcap");
  text.replace(text.find("preset = \"vlp16\""), 16, "preset = \"vlp17\"");
  const std::string bad = dir.Write("bad.toml", text);
  auto ko = process::Child::Spawn({BinDir() + "/platoon", "check", bad});
  const auto st2 = ko.WaitFor(20s);
  while (ko.ReadLine(0ms)) {
  }
  REQUIRE(st2.has_value());
  CHECK(*st2 == 2);
  CHECK(AnyLineContains(ko.Lines(), "bad.toml:"));
  CHECK(AnyLineContains(ko.Lines(), "sensor[0].preset"));
  CheckNoErrorLines(ko, "platoon check (bad)", {"sensor[0].preset"});
}
