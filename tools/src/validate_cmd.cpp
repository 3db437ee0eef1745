// `platoon validate LOG.mcap --sensor ID`: reads a session log, rebuilds the recorded ground truth from
// its world broadcasts, compares the sensor's object lists (or radar scans) with it, writes
// summary.csv, by_range.csv and by_class.csv, prints a table and draws the plots with
// scripts/validate_plot.py. docs/RECORDING.md, "Validation reports".
#include "validate_cmd.hpp"

#include "progress.hpp"

#include <optional>

#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/process/child.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/validation/object_validation.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#ifndef PLATOON_SCRIPTS_DIR
#define PLATOON_SCRIPTS_DIR ""
#endif

namespace platoon::launcher {
namespace {

constexpr int kExitNothing = 1;
constexpr int kExitUsage = config::cli::kExitUsage;

// "0,10,20,40,80" -> edges; "" with the reason on error.
std::vector<double> ParseBins(const std::string& text, std::string* error) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end == item.c_str() || *end != '\0' || !std::isfinite(v)) {
      *error = "--bins: \"" + item + "\" is not a number (expected edges in m such as 0,10,20,40,80)";
      return {};
    }
    out.push_back(v);
  }
  return out;
}

std::string_view Text(std::span<const uint8_t> data) {
  return std::string_view(reinterpret_cast<const char*>(data.data()), data.size());
}

// Half-angle of the sensor's field of view from its definition in the recorded session file, if there.
std::optional<double> RecordedFovHalfRad(const std::string& session_json, const std::string& sensor_id,
                                         std::string* note) {
  const auto info = session_log::ParseSessionInfo(session_json);
  if (!info || info->config.empty()) {
    *note = "the log carries no session file";
    return std::nullopt;
  }
  try {
    const config::SessionDef session = config::LoadSessionText(info->config, "recorded session");
    for (const auto& n : session.nodes)
      for (const auto& t : n.sensors) {
        if (!t.Has("id") || t.RequireString("id") != sensor_id) continue;
        const sensors::SensorSpec spec = sensors::ReadSensorSpec(t);
        if (spec.kind == protocol::StreamKind::kObjects) return spec.objects.fov.azimuth_half_rad;
        if (spec.kind == protocol::StreamKind::kRadar)
          return std::max(spec.radar.fov_inner_half_angle_rad, spec.radar.fov_outer_half_angle_rad);
      }
    *note = "the recorded session file does not define sensor '" + sensor_id + "'";
  } catch (const std::exception& e) {
    *note = std::string("the recorded session file does not load here (") + e.what() + ")";
  }
  return std::nullopt;
}

// The python3 interpreters to try: $PLATOON_PYTHON, python3 on PATH, then Debian's (which sees
// python3-matplotlib even when another python3 comes first on PATH).
std::vector<std::string> Pythons() {
  std::vector<std::string> out;
  if (const char* p = std::getenv("PLATOON_PYTHON"); p && *p) out.emplace_back(p);
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/python3";
      if (access(candidate.c_str(), X_OK) == 0) {
        out.push_back(candidate);
        break;
      }
    }
  }
  if (access("/usr/bin/python3", X_OK) == 0) out.emplace_back("/usr/bin/python3");
  return out;
}

std::string PlotScript() {
  namespace fs = std::filesystem;
  for (const fs::path& dir : {fs::path(PLATOON_SCRIPTS_DIR), fs::path(process::ExecutableDir()) / "../../scripts",
                             fs::path("scripts")}) {
    if (dir.empty()) continue;
    const fs::path p = dir / "validate_plot.py";
    if (fs::exists(p)) return p.lexically_normal().string();
  }
  return "";
}

// Runs scripts/validate_plot.py DIR; says why not when it cannot.
void Plot(const std::string& dir) {
  const std::string script = PlotScript();
  if (script.empty()) {
    std::printf("plots: skipped, scripts/validate_plot.py not found (the CSVs are written)\n");
    return;
  }
  const auto pythons = Pythons();
  if (pythons.empty()) {
    std::printf("plots: skipped, python3 is not installed (Debian: apt install python3-matplotlib); the CSVs are written\n");
    return;
  }
  std::string last;
  for (const auto& py : pythons) {
    try {
      auto child = process::Child::Spawn({py, script, dir});
      std::vector<std::string> lines;
      while (auto line = child.ReadLine(std::chrono::seconds(120))) lines.push_back(*line);
      const int status = child.WaitFor(std::chrono::seconds(10)).value_or(1);
      if (status == 0) {
        for (const auto& l : lines) std::printf("%s\n", l.c_str());
        return;
      }
      last = lines.empty() ? py + " exited with " + std::to_string(status) : lines.back();
      if (status != 3) break;  // 3: no matplotlib for this interpreter; try the next one
    } catch (const std::exception& e) {
      last = e.what();
    }
  }
  std::printf("plots: skipped, %s; the CSVs are written\n", last.c_str());
}

bool WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) std::fprintf(stderr, "platoon validate: cannot write %s\n", path.c_str());
  return static_cast<bool>(f);
}

}  // namespace

CLI::App* AddValidateCommand(CLI::App& app, ValidateOptions& o) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Compare a sensor's object list in a session log with the recorded ground truth: detection rate and position "
      "error by range bin and by class, false positives; writes CSVs and PNG plots.\n\n"
      "  platoon validate drive.mcap --sensor front_objects --out report --bins 0,10,20,40,80 --gate 2\n\n"
      "Exit codes: 0 report written, 1 nothing to compare (e.g. the sensor is not in the log), 2 usage error.");
  cmd->add_option("log", o.log_path, "Session log (MCAP) written by a recorder")->required()->check(CLI::ExistingFile);
  cmd->add_option("--sensor", o.sensor_id, "Stream id of the sensor (an objects or radar sensor)")->required();
  cmd->add_option("--out", o.out_dir, "Output directory (default: validation_<sensor>)");
  cmd->add_option("--bins", o.bins, "Range-bin edges in m, increasing (default 0,10,20,40,80)");
  cmd->add_option("--gate", o.gate_m, "Nearest-neighbour gate in m (default 2)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(1e-3, 1e4));
  cmd->add_option("--fov", o.fov_half_deg,
                  "Evaluated half-angle in deg (default: the sensor's own from the recorded session file, else 180)")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.1, 180.0));
  cmd->add_option("--truth", o.truth, "Ground truth between recorded states: interpolate (default) or dead_reckon")
      ->check(CLI::IsMember({"interpolate", "dead_reckon"}));
  cmd->add_option("--match", o.match, "Association: id (track ids, else nearest; default) or nearest (ignore ids)")
      ->check(CLI::IsMember({"id", "nearest"}));
  cmd->add_flag("--no-plots", o.no_plots, "Write the CSVs only");
  return cmd;
}

int RunValidate(const ValidateOptions& o) {
  namespace fs = std::filesystem;
  // The comparison's settings, checked before the log is read.
  validation::ValidationDef def;
  std::string error;
  def.range_bins_m = ParseBins(o.bins, &error);
  if (error.empty()) error = validation::ValidateValidationDef(def);
  if (!error.empty()) {
    std::fprintf(stderr, "platoon validate: %s\n", error.c_str());
    return kExitUsage;
  }
  def.gate_m = o.gate_m;
  def.truth = *validation::TruthMethodFromName(o.truth);
  def.use_track_ids = o.match == "id";
  const std::string out_dir = o.out_dir.empty() ? "validation_" + o.sensor_id : o.out_dir;

  // 1. Read the log: world broadcasts, the sensor's messages, what other streams there are.
  const std::string topic = session_log::DataTopic(o.sensor_id);
  std::map<std::string, uint64_t> streams;
  std::string session_json;
  uint64_t messages = 0, world_messages = 0, sensor_messages = 0, bad = 0;
  std::error_code size_error;
  const auto bytes = fs::file_size(o.log_path, size_error);
  if (!size_error && bytes > (64u << 20))
    std::fprintf(stderr, "platoon validate: reading %s (%.0f MB)\n", o.log_path.c_str(), static_cast<double>(bytes) / 1e6);
  // Streamed: only the chunks of the world, the session and the sensor are read (not a lidar farm's clouds),
  // and each message is decoded as it comes (the log's bytes are never held).
  session_log::ReadOptions read_options;
  read_options.topics = {std::string(session_log::kWorldTopic), std::string(session_log::kSessionTopic), topic};
  std::optional<Progress> reading;
  read_options.progress = [&](uint64_t done, uint64_t total) {
    if (!reading) reading.emplace("validate", static_cast<size_t>(total));
    reading->Update(static_cast<size_t>(done), "reading the log, bytes");
  };
  validation::RecordedWorld world;
  std::vector<validation::SensorFrame> frames;
  std::string kind, wrong_kind;
  const auto result = session_log::ReadStream(o.log_path, read_options, [&](const session_log::Entry& e) {
    ++messages;
    if (e.topic == session_log::kSessionTopic) {
      session_json = std::string(Text(e.data));
      return;
    }
    const bool is_world = e.topic == session_log::kWorldTopic;
    if (!is_world && e.topic != topic) return;
    ++(is_world ? world_messages : sensor_messages);
    const auto d = protocol::Decode(Text(e.data));
    if (d.error != protocol::DecodeError::kNone || !d.message) {
      ++bad;
      return;
    }
    if (is_world) {
      if (const auto* w = std::get_if<protocol::WorldState>(&*d.message)) world.Add(*w);
      else ++bad;
    } else if (const auto* l = std::get_if<protocol::ObjectList>(&*d.message)) {
      frames.push_back(validation::FrameOf(*l));
      kind = "objects";
    } else if (const auto* r = std::get_if<protocol::RadarScan>(&*d.message)) {
      frames.push_back(validation::FrameOf(*r));
      kind = "radar";
    } else if (wrong_kind.empty()) {
      wrong_kind = std::string(protocol::MessageName(*d.message));
    }
  });
  if (reading) reading->Done();
  // Every data stream of the log with its message count (the summary's statistics; without them, 0).
  for (const auto& [id, channel] : result.channels) {
    if (!channel.topic.starts_with(session_log::kDataTopicPrefix)) continue;
    uint64_t n = 0;
    if (result.statistics && result.statistics->channel_message_counts.count(id)) n = result.statistics->channel_message_counts.at(id);
    streams[channel.topic.substr(session_log::kDataTopicPrefix.size())] += n;
  }
  if (messages == 0) {
    std::fprintf(stderr, "platoon validate: cannot read %s as a session log%s%s\n", o.log_path.c_str(),
                 result.problems.empty() ? "" : ": ", result.problems.empty() ? "" : result.problems.front().message.c_str());
    return kExitUsage;
  }
  for (const auto& p : result.problems) std::fprintf(stderr, "platoon validate: warning: %s\n", p.message.c_str());
  if (sensor_messages == 0) {
    std::fprintf(stderr, "platoon validate: %s has no stream '%s'; its streams:", o.log_path.c_str(), o.sensor_id.c_str());
    if (streams.empty()) std::fprintf(stderr, " none");
    for (const auto& [id, n] : streams) std::fprintf(stderr, " %s (%llu messages)", id.c_str(), static_cast<unsigned long long>(n));
    std::fprintf(stderr, "\n");
    return kExitNothing;
  }
  if (world_messages == 0) {
    std::fprintf(stderr, "platoon validate: %s has no world states on %s: no ground truth to compare with\n",
                 o.log_path.c_str(), std::string(session_log::kWorldTopic).c_str());
    return kExitNothing;
  }
  if (!wrong_kind.empty()) {
    std::fprintf(stderr, "platoon validate: stream '%s' carries %s messages; validate compares object lists (type "
                         "\"objects\") and radar scans\n",
                 o.sensor_id.c_str(), wrong_kind.c_str());
    return kExitNothing;
  }
  if (bad) std::fprintf(stderr, "platoon validate: warning: %llu messages could not be decoded and were skipped\n",
                        static_cast<unsigned long long>(bad));

  // 3. The evaluated region: the sensor's own field of view unless given.
  std::string fov_note;
  if (o.fov_half_deg > 0) {
    def.azimuth_half_rad = o.fov_half_deg * M_PI / 180.0;
    fov_note = "from --fov";
  } else if (auto fov = RecordedFovHalfRad(session_json, o.sensor_id, &fov_note)) {
    def.azimuth_half_rad = *fov;
    fov_note = "the sensor's field of view in the recorded session file";
  } else {
    fov_note += "; all around (set --fov)";
  }
  std::printf("platoon validate: %s, sensor '%s' (%s): %zu cycles, %llu world states, %zu entities; region: range "
              "%g-%g m, azimuth +-%.1f deg (%s)\n",
              o.log_path.c_str(), o.sensor_id.c_str(), kind.c_str(), frames.size(),
              static_cast<unsigned long long>(world.Broadcasts()), world.EntityCount(), def.range_bins_m.front(),
              def.range_bins_m.back(), def.azimuth_half_rad * 180 / M_PI, fov_note.c_str());

  // 4. Compare.
  std::optional<Progress> progress;
  const validation::Report report = validation::Compare(world, frames, def, [&](size_t done, size_t total) {
    if (!progress) progress.emplace("validate", total);
    progress->Update(done, "comparing");
  });
  if (progress) progress->Done();
  if (report.frames == 0) {
    std::fprintf(stderr, "platoon validate: none of the %zu cycles has its vehicle (entity %llu) in the recorded world "
                         "at its stamp: nothing to compare\n",
                 frames.size(), static_cast<unsigned long long>(frames.empty() ? 0 : frames.front().ego_id));
    return kExitNothing;
  }

  // 5. The report: CSVs, the table, the plots.
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    std::fprintf(stderr, "platoon validate: --out: cannot create directory %s%s%s\n", out_dir.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return kExitUsage;
  }
  const fs::path dir(out_dir);
  if (!WriteFile(dir / "summary.csv", validation::SummaryCsv(report, o.sensor_id, kind)) ||
      !WriteFile(dir / "by_range.csv", validation::ByRangeCsv(report)) ||
      !WriteFile(dir / "by_class.csv", validation::ByClassCsv(report)))
    return kExitUsage;
  std::printf("%s", validation::FormatTable(report, o.sensor_id, kind).c_str());
  std::printf("wrote %s/summary.csv, by_range.csv, by_class.csv\n", out_dir.c_str());
  if (!o.no_plots) Plot(out_dir);
  std::fflush(stdout);
  return 0;
}

}  // namespace platoon::launcher
