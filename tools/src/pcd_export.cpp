// `platoon export LOG --pcd DIR --stream ID` / `--ply DIR`: every recorded PointCloud or FusedCloud of
// one stream as a file per cloud, named by sim time, and DIR/clouds.csv listing them. The points are
// the recorded point records as they are (docs/RECORDING.md, "Point clouds as PCD and PLY files").
#include "pcd_export.hpp"

#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/pcd.hpp"
#include "platoon/sensors/ply.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/geometry.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon export";
constexpr int kExitNothing = 1;
constexpr int kExitUsage = config::cli::kExitUsage;

// One recorded cloud, as the files need it.
struct CloudOf {
  int64_t stamp_ns = 0;
  bool fused = false;
  uint64_t entity_id = 0;
  Pose viewpoint;  // raw scan: the sensor mount in the vehicle frame; fused: identity (vehicle frame)
  std::vector<PointRecord> points;
};

// The cloud a data message carries, when it is one.
std::optional<CloudOf> CloudOfMessage(const protocol::Message& m) {
  CloudOf c;
  if (const auto* p = std::get_if<protocol::PointCloud>(&m)) {
    c.stamp_ns = p->header.stamp_ns;
    c.entity_id = p->header.entity_id;
    if (!p->vehicle_frame) c.viewpoint = Pose{p->header.mount_position_m, p->header.mount_orientation};
    c.points = UnpackPointRecords(p->points, p->point_count, p->point_stride);
    if (c.points.size() != p->point_count) return std::nullopt;
    return c;
  }
  if (const auto* f = std::get_if<protocol::FusedCloud>(&m)) {
    c.stamp_ns = f->reference_ns;
    c.fused = true;
    c.entity_id = f->entity_id;
    c.points = UnpackPointRecords(f->points, f->point_count, f->point_stride);
    if (c.points.size() != f->point_count) return std::nullopt;
    return c;
  }
  return std::nullopt;
}

// What a data message of another kind is called, for the error naming a stream that holds no clouds.
std::string MessageKindName(const protocol::Message& m) {
  return std::visit(
      [](const auto& msg) -> std::string {
        if constexpr (requires { msg.header.kind; }) return std::string(protocol::StreamKindName(msg.header.kind));
        return "other";
      },
      m);
}

}  // namespace

std::string CloudFileStem(int64_t stamp_ns) {
  const bool negative = stamp_ns < 0;
  const uint64_t a = negative ? uint64_t(0) - static_cast<uint64_t>(stamp_ns) : static_cast<uint64_t>(stamp_ns);
  return fmt::format("{}{:06d}.{:09d}", negative ? "-" : "", a / 1'000'000'000u, a % 1'000'000'000u);
}

int RunCloudExport(const ExportOptions& o) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  const char* flag = o.pcd_dir.empty() ? "--ply" : "--pcd";
  if (o.to_s < o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) is before --from (%.3f s)\n", kMe, o.to_s, o.from_s);
    return kExitUsage;
  }
  const int64_t from_ns = o.from_s <= -9e9 ? INT64_MIN : SToNs(o.from_s);
  const int64_t to_ns = o.to_s >= 9e9 ? INT64_MAX : SToNs(o.to_s);

  // 1. The output directories, before the log (which may be large).
  for (const std::string* dir : {&o.pcd_dir, &o.ply_dir}) {
    if (dir->empty()) continue;
    std::error_code ec;
    fs::create_directories(*dir, ec);
    if (ec || !fs::is_directory(*dir)) {
      std::fprintf(stderr, "%s: cannot create the output directory %s: %s\n", kMe, dir->c_str(),
                   ec ? ec.message().c_str() : "not a directory");
      return kExitUsage;
    }
  }

  // 2. One pass through the log: the chosen stream's clouds go to files as they come (constant memory
  // beyond one cloud); every data stream is noted with its message kind, for the errors below.
  std::map<std::string, std::string, std::less<>> streams;  // stream id -> kind of its first message
  const std::string topic = o.stream.empty() ? std::string() : session_log::DataTopic(o.stream);
  struct Written {
    std::string stem;
    int64_t stamp_ns;
    size_t points;
    bool fused;
    uint64_t entity_id;
  };
  std::vector<Written> written;
  std::set<std::string> stems;
  size_t world_states = 0, undecodable = 0, in_window = 0;
  std::string write_error;
  const mcap::ReadResult read = session_log::Read(o.log_path, [&](const session_log::Entry& e) {
    if (e.topic == session_log::kWorldTopic) {
      ++world_states;
      return;
    }
    if (!e.topic.starts_with(session_log::kDataTopicPrefix) || !write_error.empty()) return;
    const std::string_view id = e.topic.substr(session_log::kDataTopicPrefix.size());
    const bool chosen = !topic.empty() && e.topic == topic;
    if (!chosen && streams.contains(id)) return;
    const std::string_view bytes(reinterpret_cast<const char*>(e.data.data()), e.data.size());
    const protocol::Decoded d = protocol::Decode(bytes);
    if (!d.message) {
      undecodable += chosen;
      return;
    }
    std::optional<CloudOf> cloud = CloudOfMessage(*d.message);
    streams.try_emplace(std::string(id), cloud ? "point_cloud" : MessageKindName(*d.message));
    if (!chosen) return;
    if (!cloud) {
      ++undecodable;
      return;
    }
    if (cloud->stamp_ns < from_ns || cloud->stamp_ns > to_ns) return;
    ++in_window;
    // A file per cloud named by its sim time; a repeated time (a restarted host) gets "_2", "_3", ...
    std::string stem = CloudFileStem(cloud->stamp_ns);
    for (int k = 2; stems.contains(stem); ++k) stem = CloudFileStem(cloud->stamp_ns) + "_" + std::to_string(k);
    stems.insert(stem);
    try {
      if (!o.pcd_dir.empty())
        sensors::WritePcd((fs::path(o.pcd_dir) / (stem + ".pcd")).string(), cloud->points, sensors::PcdFormat::kBinary,
                          cloud->viewpoint);
      if (!o.ply_dir.empty())
        sensors::WritePly((fs::path(o.ply_dir) / (stem + ".ply")).string(), cloud->points, cloud->viewpoint);
    } catch (const std::exception& ex) {
      write_error = ex.what();
      return;
    }
    written.push_back({stem, cloud->stamp_ns, cloud->points.size(), cloud->fused, cloud->entity_id});
  });
  if (world_states == 0 && streams.empty()) {
    std::fprintf(stderr, "%s: %s is not a platoon session log%s%s\n", kMe, o.log_path.c_str(),
                 read.problems.empty() ? "" : ": ", read.problems.empty() ? "" : read.problems.front().message.c_str());
    return kExitUsage;
  }
  for (const auto& p : read.problems) std::fprintf(stderr, "%s: warning: %s\n", kMe, p.message.c_str());
  if (!write_error.empty()) {
    std::fprintf(stderr, "%s: %s (the %zu files before it are written)\n", kMe, write_error.c_str(), written.size());
    return kExitUsage;
  }

  // 3. A stream that is missing, or is no cloud stream: name the log's cloud streams.
  std::string clouds;
  for (const auto& [id, kind] : streams)
    if (kind == "point_cloud") clouds += (clouds.empty() ? "" : ", ") + id;
  const auto it = streams.find(o.stream);
  if (o.stream.empty() || it == streams.end() || it->second != "point_cloud") {
    const std::string what = o.stream.empty() ? fmt::format("{} needs --stream ID", flag)
                             : it == streams.end() ? fmt::format("--stream: {} has no data stream \"{}\"", o.log_path, o.stream)
                                                   : fmt::format("--stream: \"{}\" carries {} messages, not point clouds", o.stream, it->second);
    std::fprintf(stderr, "%s: %s (the log's point-cloud streams: %s)\n", kMe, what.c_str(),
                 clouds.empty() ? "none" : clouds.c_str());
    return kExitUsage;
  }
  if (undecodable > 0)
    std::fprintf(stderr, "%s: warning: %zu messages of %s could not be read as clouds and were skipped\n", kMe,
                 undecodable, o.stream.c_str());
  if (written.empty()) {
    std::fprintf(stderr, "%s: %s has no cloud of \"%s\" within --from/--to: nothing written\n", kMe,
                 o.log_path.c_str(), o.stream.c_str());
    return kExitNothing;
  }

  // 4. DIR/clouds.csv: one row per file, in log order.
  std::string csv = "file,sim_time_s,stamp_ns,points,frame,entity_id\n";
  for (const auto& w : written)
    csv += fmt::format("{},{:.9f},{},{},{},{}\n", w.stem, static_cast<double>(w.stamp_ns) * 1e-9, w.stamp_ns, w.points,
                       w.fused ? "vehicle" : "sensor", w.entity_id);
  for (const std::string* dir : {&o.pcd_dir, &o.ply_dir}) {
    if (dir->empty()) continue;
    const std::string path = (fs::path(*dir) / "clouds.csv").string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << csv;
    f.flush();
    if (!f) {
      std::fprintf(stderr, "%s: cannot write %s\n", kMe, path.c_str());
      return kExitUsage;
    }
  }
  size_t points = 0;
  for (const auto& w : written) points += w.points;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::fprintf(stderr, "%s: %zu clouds of \"%s\" (%zu points, %.3f..%.3f s of sim time) to %s%s%s in %.2f s\n", kMe,
               written.size(), o.stream.c_str(), points, static_cast<double>(written.front().stamp_ns) * 1e-9,
               static_cast<double>(written.back().stamp_ns) * 1e-9, o.pcd_dir.c_str(),
               !o.pcd_dir.empty() && !o.ply_dir.empty() ? " and " : "", o.ply_dir.c_str(), wall_s);
  return 0;
}

}  // namespace platoon::launcher
