#include "platoon/node/gaze_recorder.hpp"

#include "platoon/data/columns.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

namespace platoon::node {

std::string GazeRecorder::Header() {
  return "sim_time_s,pupil_time_s,gaze_x,gaze_y,confidence,gaze_target_kind,gaze_target,gaze_entity_id,gaze_distance_m";
}

GazeRecorder::GazeRecorder(GazeRecorderDef def, std::shared_ptr<spdlog::logger> log)
    : def_(std::move(def)), log_(std::move(log)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path folder = fs::path(def_.path).parent_path();
  if (!folder.empty()) fs::create_directories(folder, ec);
  fd_ = ::open(def_.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    if (log_) log_->error("gaze: cannot open {}: {} (no gaze is written; the node keeps running)", def_.path, std::strerror(errno));
  } else {
    const std::string header = Header() + "\n";
    if (::write(fd_, header.data(), header.size()) != static_cast<ssize_t>(header.size())) {
      if (log_) log_->error("gaze: writing the header of {}: {}", def_.path, std::strerror(errno));
      ::close(fd_);
      fd_ = -1;
    }
  }
  thread_ = std::thread([this] { Run(); });
}

GazeRecorder::~GazeRecorder() { Close(); }

void GazeRecorder::Close() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void GazeRecorder::Step(int64_t sim_ns, const Pose& own, std::span<const input::GazeBox> boxes,
                        const std::function<std::string(uint64_t)>& name_of) {
  Raw raw;
  while (in_.TryPop(raw)) {
    ++samples_;
    Row row{};
    row.sim_ns = sim_ns;
    row.pupil_time_s = raw.pupil_time_s;
    row.x = raw.x;
    row.y = raw.y;
    row.confidence = raw.confidence;
    row.distance_m = std::nan("");
    if (raw.confidence < def_.min_confidence) {
      row.kind = 3;
      ++low_confidence_;
    } else {
      // The main screen's view where the car is now.
      const input::GazeView& v = def_.view_in_vehicle;
      input::GazeView world = v;
      world.eye_m = own.position_m + own.orientation * v.eye_m;
      world.camera = own.orientation * v.camera;
      const input::GazePoint p{raw.x, raw.y};
      const input::GazeHit hit = input::GazeTarget(world.eye_m, input::GazeRayDirection(world, p), boxes, def_.mirrors, p);
      std::string name;
      if (hit.kind == input::GazeHit::Kind::kEntity) {
        row.kind = 1;
        row.entity_id = hit.entity_id;
        row.distance_m = hit.distance_m;
        name = name_of ? name_of(hit.entity_id) : std::to_string(hit.entity_id);
        ++on_entity_;
      } else if (hit.kind == input::GazeHit::Kind::kMirror) {
        row.kind = 2;
        name = hit.mirror;
        ++on_mirror_;
      } else {
        ++on_nothing_;
      }
      std::strncpy(row.target, name.c_str(), sizeof(row.target) - 1);
    }
    if (!out_.TryPush(row)) dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

GazeRecorderStats GazeRecorder::Stats() const {
  GazeRecorderStats s;
  s.samples = samples_;
  s.on_entity = on_entity_;
  s.on_mirror = on_mirror_;
  s.on_nothing = on_nothing_;
  s.low_confidence = low_confidence_;
  s.dropped = dropped_.load();
  s.rows_written = written_.load();
  s.malformed = malformed_.load();
  return s;
}

void GazeRecorder::Run() {
  static constexpr const char* kKinds[] = {"nothing", "entity", "mirror", "low_confidence"};
  input::PupilGazeClient client(def_.pupil);
  bool connected = false, warned = false;
  auto next_try = std::chrono::steady_clock::now();
  std::string buffer;
  auto write_rows = [&] {
    Row row;
    while (out_.TryPop(row)) {
      buffer += fmt::format("{:.6f},{:.6f},{:.6f},{:.6f},{:.3f},{},{},{},", static_cast<double>(row.sim_ns) * 1e-9,
                            row.pupil_time_s, row.x, row.y, row.confidence, kKinds[row.kind], data::CsvField(row.target),
                            row.kind == 1 ? std::to_string(row.entity_id) : std::string());
      if (std::isfinite(row.distance_m)) buffer += fmt::format("{:.3f}", row.distance_m);
      buffer += '\n';
      written_.fetch_add(1, std::memory_order_relaxed);
    }
    if (fd_ >= 0 && !buffer.empty()) {
      size_t done = 0;
      while (done < buffer.size()) {
        const ssize_t n = ::write(fd_, buffer.data() + done, buffer.size() - done);
        if (n <= 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
    }
    buffer.clear();
  };
  while (!stop_) {
    // Connect (again every 2 s while Pupil Remote does not answer).
    if (!connected) {
      if (std::chrono::steady_clock::now() >= next_try) {
        const std::string error = client.Connect();
        connected = error.empty();
        if (connected && log_) log_->info("gaze: subscribed to {} on {}", def_.pupil.topic, client.SubEndpoint());
        if (!connected && !warned && log_) log_->warn("{}; retrying every 2 s", error);
        warned = warned || !connected;
        next_try = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      write_rows();
      continue;
    }
    // Receive for up to 20 ms, then write the rows the module thread made.
    if (const auto d = client.Receive(std::chrono::milliseconds(20))) {
      if (!in_.TryPush(Raw{d->norm_pos.x, d->norm_pos.y, d->confidence, d->timestamp_s})) dropped_.fetch_add(1);
    }
    malformed_.store(client.Stats().malformed, std::memory_order_relaxed);
    write_rows();
  }
  write_rows();
}

}  // namespace platoon::node
