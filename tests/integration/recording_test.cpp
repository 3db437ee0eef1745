// The recorder role end to end. configs/drivers.toml (road traffic, the wheel seat on a scripted input,
// the robot seat) runs 32 s through `platoon run` with its recorder; a second recorder ("victim") joins
// the same session as its own process and is killed with SIGKILL at a random moment. The independent
// reader (@mcap/core, tests/mcap_reader) reads the recorder's file completely, with the counts its
// SUMMARY reports, and recovers from the victim's cut file every message the recorder holds that the
// server published between the victim's first keyframe and 100 ms before the kill. A real full disk
// (a 256 KiB tmpfs in a mount namespace, when run as root) stops a recorder and nothing else.
#include "../support/session_fixture.hpp"

#include "platoon/log/mcap.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

using namespace platoon;
using namespace platoon::testing;
using namespace std::chrono_literals;

namespace {

const std::string kSource = PLATOON_SOURCE_DIR;
const std::string kReaderDir = PLATOON_MCAP_READER_DIR;

int64_t MonotonicNs() {
  // The server's reference clock (CLOCK_MONOTONIC on this host), which the publish times of a log are in.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Installs @mcap/core into the build tree (once); false with the reason when it cannot be had (skip).
bool InstallReader(std::string& why) {
  auto install = process::Child::Spawn({"/bin/bash", kSource + "/tests/mcap_reader/install.sh", kSource + "/tests/mcap_reader", kReaderDir});
  const auto status = RunToExit(install, 300s);
  for (const auto& l : install.Lines()) why += l + " ";
  REQUIRE_MESSAGE(status.has_value(), "installing @mcap/core took over 300 s");
  if (*status == 77) return false;
  REQUIRE_MESSAGE(*status == 0, why);
  return true;
}

// Runs the independent reader (tests/mcap_reader/count.mjs) with `args`; returns its JSON line.
std::string ReadIndependently(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "node", kReaderDir + "/count.mjs"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto reader = process::Child::Spawn(argv);
  const auto status = RunToExit(reader, 120s);
  std::string out;
  for (const auto& l : reader.Lines()) out += l + "\n";
  REQUIRE_MESSAGE(status == std::optional<int>(0), "count.mjs failed: " << out);
  REQUIRE(!reader.Lines().empty());
  return reader.Lines().back();
}

// The {...} value of "key" in a flat-enough JSON text (no braces inside its strings).
std::string ObjectOf(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":{");
  if (at == std::string::npos) return "";
  const size_t open = json.find('{', at);
  int depth = 0;
  for (size_t i = open; i < json.size(); ++i) {
    depth += json[i] == '{' ? 1 : json[i] == '}' ? -1 : 0;
    if (depth == 0) return json.substr(open, i - open + 1);
  }
  return "";
}

// The integer value of "key" in `json` (first occurrence), or -1.
int64_t IntOf(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\":\"?(-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Replace(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "configs/drivers.toml no longer has: " << from);
  text.replace(at, from.size(), to);
}

// What our own reader finds in a session log: world-state sequences and publish times in file order,
// the publish time of the first keyframe, and every event.
struct LogView {
  std::vector<uint64_t> world_seq;
  std::vector<int64_t> world_publish_ns;
  int64_t first_keyframe_publish_ns = -1;
  uint64_t last_world_log_ns = 0;
  std::vector<std::string> events;
  int publish_not_server_time = 0;  // world states whose publish time is not the server's build time
  mcap::ReadResult result;
};

LogView View(const std::string& path) {
  LogView v;
  v.result = session_log::Read(path, [&](const session_log::Entry& e) {
    if (e.topic == session_log::kEventsTopic) v.events.emplace_back(reinterpret_cast<const char*>(e.data.data()), e.data.size());
    if (e.topic != session_log::kWorldTopic) return;
    const auto d = protocol::Decode(std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
    REQUIRE(d.message);
    const auto& w = std::get<protocol::WorldState>(*d.message);
    v.world_seq.push_back(w.sequence);
    v.world_publish_ns.push_back(static_cast<int64_t>(e.publish_time_ns));
    v.publish_not_server_time += static_cast<int64_t>(e.publish_time_ns) != w.server_time_ns;
    if (w.keyframe && v.first_keyframe_publish_ns < 0) v.first_keyframe_publish_ns = w.server_time_ns;
    v.last_world_log_ns = std::max(v.last_world_log_ns, e.log_time_ns);
  });
  return v;
}

// Places where a sequence does not go up by one.
int Discontinuities(const std::vector<uint64_t>& seq) {
  int n = 0;
  for (size_t i = 1; i < seq.size(); ++i) n += seq[i] != seq[i - 1] + 1;
  return n;
}

bool HasEvent(const LogView& v, const std::string& a, const std::string& b = "") {
  for (const auto& e : v.events)
    if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("recording: 30 s of configs/drivers.toml read completely by @mcap/core with the SUMMARY's counts, and a recorder killed -9 at a random moment keeps every message older than 100 ms") {
  std::string why;
  if (!InstallReader(why)) {
    MESSAGE("SKIPPED: " << why);
    return;
  }
  TempDir dir;
  const std::string rec_path = dir.Path() + "/recorder.mcap", victim_path = dir.Path() + "/victim.mcap";
  const std::string victim_node =
      "[[node]]\nname = \"victim\"\nrole = \"recorder\"\npath = \"" + victim_path + "\"\nstatus_interval_s = 0\n";
  const std::string session = ConfigOnFreePorts(dir, "drivers.toml", 7400, victim_node);
  // The session as configured, but: files in the test's folder, the wheel seat on an input script
  // (no wheel, no window in CI), the robot's script found from here.
  std::string text = ReadText(session);
  Replace(text, "path = \"recordings/{session}-{time}.mcap\"", "path = \"" + rec_path + "\"");
  Replace(text, "input = \"sdl\"", "input = \"scripted:" + kSource + "/configs/inputs/lane_change.csv\"\nheadless = true");
  Replace(text, "input = \"scripted:inputs/lane_change.csv\"", "input = \"scripted:" + kSource + "/configs/inputs/lane_change.csv\"");
  dir.Write("drivers.toml", text);

  auto launcher = process::Child::Spawn({BinDir() + "/platoon", "run", session, "--only", "server,traffic,wheel,robot,recorder",
                                         "--duration", "32"});
  REQUIRE(launcher.WaitForLine("listening on", 15s));
  auto victim = process::Child::Spawn({BinDir() + "/platoon-node", "--config", session, "--name", "victim"});
  REQUIRE_MESSAGE(victim.WaitForLine("joined session", 20s), "the victim recorder did not join");
  // A random moment 4..20 s after the victim joined; the launcher's output is drained meanwhile.
  std::mt19937 rng(std::random_device{}());
  const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(4000, 20000)(rng));
  MESSAGE("killing the victim recorder " << delay.count() << " ms after it joined");
  const auto kill_at = std::chrono::steady_clock::now() + delay;
  while (std::chrono::steady_clock::now() < kill_at) {
    launcher.ReadLine(10ms);
    victim.ReadLine(0ms);
  }
  victim.Signal(SIGKILL);
  const int64_t kill_ns = MonotonicNs();
  REQUIRE(WaitForKilled(victim, "victim recorder") == std::optional<int>(128 + SIGKILL));
  const auto status = RunToExit(launcher, 90s);
  REQUIRE_MESSAGE(status.has_value(), "the session did not end within 90 s");
  CHECK(*status == 0);  // ran to its duration: a killed recorder stops nobody
  CheckNoErrorLines(launcher, "platoon run");
  CheckNoErrorLines(victim, "victim recorder");
  const auto rec_lines = LinesOf(launcher.Lines(), "recorder");

  // --- The recorder's closed file: complete for both readers, counts as its SUMMARY says. ---
  const LogView rec = View(rec_path);
  INFO(rec.result.ProblemText());
  CHECK(rec.result.complete);
  CHECK(rec.publish_not_server_time == 0);
  const LogView cut = View(victim_path);
  // From 1 s after both had a keyframe (before it the victim's world, and so its Foxglove scene, was partial).
  const int64_t from_ns = std::max(rec.first_keyframe_publish_ns, cut.first_keyframe_publish_ns) + 1'000'000'000;
  const int64_t until_ns = kill_ns - 100'000'000;
  REQUIRE(rec.first_keyframe_publish_ns > 0);
  REQUIRE(cut.first_keyframe_publish_ns > 0);
  REQUIRE(until_ns > from_ns + 2'000'000'000);
  const std::string full = ReadIndependently({rec_path, "--window", std::to_string(from_ns), std::to_string(until_ns)});
  MESSAGE("@mcap/core, recorder: " << full);
  const std::string counts = "\"channels\":" + ObjectOf(full, "channels") + ",\"messages\":" + std::to_string(IntOf(full, "messages"));
  std::string summary;
  for (const auto& l : rec_lines)
    if (l.find("SUMMARY") != std::string::npos) summary = l;
  MESSAGE("recorder SUMMARY: " << summary.substr(std::min(summary.size(), summary.find("\"recorder\":"))));
  CHECK_MESSAGE(summary.find(counts) != std::string::npos, "the SUMMARY's counts differ from @mcap/core's " << counts);
  CHECK(ObjectOf(full, "sequence_gaps") == "{}");
  // Every broadcast, in order, for about 30 s of sim time; events; Foxglove transforms at 10 Hz, the scene
  // once a second and when an entity comes, goes or changes its look.
  CHECK(rec.last_world_log_ns > 28'000'000'000ull);
  CHECK(rec.world_seq.size() > 30 * 60);
  CHECK(SummaryValue(rec_lines, "world_seq_gaps") == 0.0);
  CHECK(SummaryValue(rec_lines, "dropped") == 0.0);
  CHECK(Discontinuities(rec.world_seq) == 0);
  const double sim_s = static_cast<double>(rec.last_world_log_ns) / 1e9;
  const auto transforms = IntOf(ObjectOf(full, "channels"), "/foxglove/tf");
  const auto scenes = IntOf(ObjectOf(full, "channels"), "/foxglove/scene");
  CHECK(transforms >= static_cast<int64_t>(sim_s * 10 * 0.95));
  CHECK(transforms <= static_cast<int64_t>(sim_s * 10) + 2);
  CHECK(scenes >= static_cast<int64_t>(sim_s));
  CHECK(scenes < transforms);
  CHECK(HasEvent(rec, "\"event\":\"running\""));
  for (const char* node : {"traffic", "wheel", "robot", "recorder"})
    CHECK_MESSAGE((HasEvent(rec, "\"event\":\"present\"", std::string("\"name\":\"") + node + "\"") ||
                   HasEvent(rec, "\"event\":\"joined\"", std::string("\"name\":\"") + node + "\"")),
                  node << " neither present nor joined");
  CHECK(HasEvent(rec, "\"event\":\"lost\"", "\"name\":\"victim\""));  // the kill, seen in the node table
  CHECK(SummaryValue(rec_lines, "flush_latency_ms_max") < 100.0);

  // --- The victim's cut file: every message of the window, per topic, as in the recorder's file. ---
  CHECK_FALSE(cut.result.complete);
  CHECK(Discontinuities(cut.world_seq) == 0);
  const std::string partial = ReadIndependently({victim_path, "--partial", "--window", std::to_string(from_ns), std::to_string(until_ns)});
  MESSAGE("@mcap/core, victim cut by kill -9: " << partial);
  const std::string window = ObjectOf(full, "window");
  CHECK(IntOf(window, "/platoon/world") > static_cast<int64_t>(static_cast<double>(until_ns - from_ns) / 1e9 * 60 * 0.9));
  CHECK(ObjectOf(partial, "window") == window);
  CHECK(ObjectOf(partial, "sequence_gaps") == "{}");
  // How much the kill cost: the newest world state recovered against the kill.
  const int64_t newest = cut.world_publish_ns.empty() ? 0 : cut.world_publish_ns.back();
  MESSAGE("newest world state recovered: " << static_cast<double>(kill_ns - newest) / 1e6 << " ms before the kill; "
                                           << cut.world_seq.size() << " world states recovered");
  CHECK(kill_ns - newest <= 100'000'000);
}

TEST_CASE("recording: a real full disk (a 256 KiB tmpfs) stops the recorder with one error naming the file, the session runs to its end, the file reads back") {
  if (geteuid() != 0) {
    MESSAGE("SKIPPED: a tmpfs in a mount namespace needs root (the sink-seam test covers the recorder without it)");
    return;
  }
  TempDir dir;
  const std::string mnt = dir.Path() + "/small";
  std::filesystem::create_directories(mnt);
  const auto p = FreePorts(4);
  const std::string session = dir.Write(
      "full.toml", "[session]\nname = \"full\"\n[server]\nbind_address = \"127.0.0.1\"\ncontrol_port = " + std::to_string(p[0]) +
                       "\ntime_port = " + std::to_string(p[1]) + "\nworld_port = " + std::to_string(p[2]) +
                       "\nstate_port = " + std::to_string(p[3]) +
                       "\nstatus_interval_s = 0\n[road]\ngenerate_length_m = 1000\n"
                       "[[node]]\nname = \"traffic\"\nrole = \"traffic\"\ntraffic_model = \"road\"\nvehicles = 10\nstatus_interval_s = 0\n"
                       "[[node]]\nname = \"rec\"\nrole = \"recorder\"\npath = \"" + mnt + "/full.mcap\"\nstatus_interval_s = 0\n"
                       // Uncompressed, so that 8 s of 10 vehicles fill the 256 KiB (zstd would fit them; a full disk
                       // under compression: "mcap stream reader: a write error with compression ...").
                       "compression = \"none\"\n");
  // The session inside a mount namespace of its own with a small tmpfs; the file is copied out after.
  const std::string script = "mount -t tmpfs -o size=256k platoon-full " + mnt + " || exit 77; " + BinDir() + "/platoon run " +
                             session + " --duration 8; rc=$?; cp " + mnt + "/full.mcap " + dir.Path() + "/copy.mcap; exit $rc";
  auto run = process::Child::Spawn({"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script});
  const auto status = RunToExit(run, 60s);
  REQUIRE(status.has_value());
  if (*status == 77) {
    MESSAGE("SKIPPED: mount -t tmpfs in a mount namespace failed here");
    return;
  }
  CHECK(*status == 0);  // the launcher ran to its duration: the recorder did not stop the session
  CHECK(AnyLineContains(run.Lines(), "duration reached"));
  CheckNoErrorLines(run, "platoon run", {"No space left on device"});
  const auto rec = LinesOf(run.Lines(), "rec");
  int errors = 0;
  for (const auto& l : rec)
    if (IsErrorLine(l)) {
      ++errors;
      CHECK(l.find(mnt + "/full.mcap") != std::string::npos);
      CHECK(l.find("No space left on device") != std::string::npos);
    }
  CHECK(errors == 1);
  std::string summary;
  for (const auto& l : rec)
    if (l.find("SUMMARY") != std::string::npos) summary = l;
  CHECK(summary.find("\"error\":\"mcap: writing " + mnt + "/full.mcap failed") != std::string::npos);
  // Recorder and traffic stayed in the session to the end.
  CHECK(SummaryValue(rec, "sim_time_s") > 6.0);
  CHECK(SummaryValue(LinesOf(run.Lines(), "traffic"), "sim_time_s") > 6.0);
  CHECK(SummaryValue(rec, "world_recorded") > 50.0);
  CHECK(SummaryValue(rec, "world_received") > SummaryValue(rec, "world_recorded"));
  // The part written reads back.
  const std::string copy = dir.Path() + "/copy.mcap";
  REQUIRE(std::filesystem::exists(copy));
  CHECK(std::filesystem::file_size(copy) <= 256 * 1024);
  size_t messages = 0;
  const auto r = session_log::Read(copy, [&](const session_log::Entry&) { ++messages; });
  CHECK_FALSE(r.complete);
  CHECK(messages > 50);
  std::string why;
  if (InstallReader(why)) CHECK(IntOf(ReadIndependently({copy, "--partial"}), "messages") == static_cast<int64_t>(messages));
}
