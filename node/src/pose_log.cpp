#include "platoon/node/pose_log.hpp"

#include "platoon/dead_reckoning_kinds.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace platoon::node {

PoseLog::PoseLog(const std::string& path, uint32_t every, std::shared_ptr<spdlog::logger> logger)
    : path_(path), every_(every == 0 ? 1 : every), log_(std::move(logger)) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw std::runtime_error("cannot write the pose log '" + path + "': " + std::strerror(errno));
  if (std::fputs("source,sim_ns,id,x_m,y_m,z_m,yaw_rad\n", file_) == EOF) {
    std::fclose(file_);
    throw std::runtime_error("cannot write the pose log '" + path + "': " + std::strerror(errno));
  }
}

PoseLog::~PoseLog() {
  if (file_ && std::fclose(file_) != 0) log_->error("pose log '{}': closing failed: {}", path_, std::strerror(errno));
}

void PoseLog::Own(const protocol::EntityState& truth) {
  if (Sampled(truth.id)) Row("own", truth.kinematics.stamp_ns, truth.id, truth.kinematics.pose);
}

void PoseLog::View(int64_t sim_ns, const RemoteEntity& entity) {
  if (entity.state.stale || !Sampled(entity.state.id)) return;
  Row("view", sim_ns, entity.state.id, entity.displayed);
  Row("estimate", sim_ns, entity.state.id,
      dr::Extrapolate(dr::ModelForKind(entity.state.kind), entity.state.kinematics, sim_ns));
}

void PoseLog::Row(const char* source, int64_t sim_ns, uint64_t id, const Pose& pose) {
  if (!file_) return;
  const Vec3 forward = pose.orientation * Vec3::UnitX();
  if (std::fprintf(file_, "%s,%" PRId64 ",%" PRIu64 ",%.6f,%.6f,%.6f,%.6f\n", source, sim_ns, id, pose.position_m.x(),
                   pose.position_m.y(), pose.position_m.z(), std::atan2(forward.y(), forward.x())) < 0) {
    // A full disk ends the log, not the node.
    log_->error("pose log '{}': write failed ({}); no more rows are written", path_, std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
    return;
  }
  ++rows_;
}

void PoseLogModule::Step(const StepInfo& info, ModuleContext& context) {
  for (const auto& e : context.RemoteEntities(info.sim_ns)) log_->View(info.sim_ns, e);
}

std::vector<PoseRow> ReadPoseLog(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the pose log '" + path + "'");
  std::vector<PoseRow> rows;
  std::string line;
  int number = 0;
  const auto bad = [&](const std::string& what) {
    return std::runtime_error(path + ":" + std::to_string(number) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      if (line.rfind("source,sim_ns,id,", 0) != 0) throw bad("expected the header 'source,sim_ns,id,x_m,y_m,z_m,yaw_rad'");
      continue;
    }
    if (line.empty()) continue;
    PoseRow r;
    const size_t comma = line.find(',');
    const std::string source = line.substr(0, comma);
    if (source == "own")
      r.source = PoseRow::Source::kOwn;
    else if (source == "view")
      r.source = PoseRow::Source::kView;
    else if (source == "estimate")
      r.source = PoseRow::Source::kEstimate;
    else
      throw bad("expected 'own', 'view' or 'estimate' first, found '" + source + "'");
    double x = 0, y = 0, z = 0;
    long long sim = 0;
    unsigned long long id = 0;
    int used = 0;
    if (comma == std::string::npos ||
        std::sscanf(line.c_str() + comma + 1, "%lld,%llu,%lf,%lf,%lf,%lf%n", &sim, &id, &x, &y, &z, &r.yaw_rad, &used) != 6 ||
        line.c_str()[comma + 1 + static_cast<size_t>(used)] != '\0' || !std::isfinite(x) || !std::isfinite(y) ||
        !std::isfinite(z) || !std::isfinite(r.yaw_rad))
      throw bad("expected sim_ns,id,x_m,y_m,z_m,yaw_rad as integers and finite numbers");
    r.sim_ns = sim;
    r.id = id;
    r.position_m = Vec3(x, y, z);
    rows.push_back(r);
  }
  return rows;
}

ViewErrors CompareViews(const std::vector<PoseRow>& owners, const std::vector<PoseRow>& viewer, int64_t from_sim_ns,
                        int64_t max_gap_ns, PoseRow::Source source, int64_t jump_window_ns,
                        int64_t max_spacing_ns) {
  // Each owned entity's truth, in sim-time order.
  std::unordered_map<uint64_t, std::vector<const PoseRow*>> truth;
  for (const auto& r : owners)
    if (r.source == PoseRow::Source::kOwn) truth[r.id].push_back(&r);
  // And the times it arrived somewhere by a teleport (the first row after it).
  std::unordered_map<uint64_t, std::vector<int64_t>> jumps;
  for (auto& [id, rows] : truth) {
    std::stable_sort(rows.begin(), rows.end(), [](const PoseRow* a, const PoseRow* b) { return a->sim_ns < b->sim_ns; });
    for (size_t k = 1; k < rows.size(); ++k) {
      const double dt_s = static_cast<double>(rows[k]->sim_ns - rows[k - 1]->sim_ns) * 1e-9;
      if ((rows[k]->position_m - rows[k - 1]->position_m).norm() > kJumpSpeedMps * std::max(dt_s, 1e-3))
        jumps[id].push_back(rows[k]->sim_ns);
    }
  }
  ViewErrors out;
  struct Judged {
    uint64_t id;
    int64_t t;
    Vec3 shown, truth;
  };
  std::vector<Judged> judged;
  for (size_t i = 0; i < viewer.size(); ++i) {
    const PoseRow& v = viewer[i];
    if (v.source != source || v.sim_ns < from_sim_ns) continue;
    const auto it = truth.find(v.id);
    if (it == truth.end()) {
      ++out.unmatched;
      continue;
    }
    const auto& rows = it->second;
    // From the last step before a teleport to jump_window_ns after it.
    if (const auto j = jumps.find(v.id); j != jumps.end()) {
      const auto next = std::lower_bound(j->second.begin(), j->second.end(), v.sim_ns);
      const bool before_next = next != j->second.end() && *next - v.sim_ns < max_gap_ns;
      const bool after_last = next != j->second.begin() && v.sim_ns - *(next - 1) <= jump_window_ns;
      if (before_next || after_last) {
        ++out.after_jump;
        continue;
      }
    }
    // The first truth at or after the view's time, and the one before it.
    const auto after = std::lower_bound(rows.begin(), rows.end(), v.sim_ns,
                                        [](const PoseRow* r, int64_t t) { return r->sim_ns < t; });
    if (after == rows.end() || (after == rows.begin() && (*after)->sim_ns != v.sim_ns)) {
      ++out.unmatched;
      continue;
    }
    Vec3 at = (*after)->position_m;
    if ((*after)->sim_ns != v.sim_ns) {
      const PoseRow& a = **(after - 1);
      const PoseRow& b = **after;
      if (b.sim_ns - a.sim_ns > max_gap_ns) {
        ++out.unmatched;
        continue;
      }
      const double f = static_cast<double>(v.sim_ns - a.sim_ns) / static_cast<double>(b.sim_ns - a.sim_ns);
      at = a.position_m + f * (b.position_m - a.position_m);
    }
    out.errors_m.push_back((v.position_m - at).norm());
    out.rows.push_back(i);
    judged.push_back({v.id, v.sim_ns, v.position_m, at});
  }
  // Roughness: the acceleration shown over three consecutive judged rows of an entity (the second divided
  // difference) minus the truth's over the same three instants.
  std::stable_sort(judged.begin(), judged.end(), [](const Judged& a, const Judged& b) {
    return a.id != b.id ? a.id < b.id : a.t < b.t;
  });
  const auto accel = [](const Vec3& p0, const Vec3& p1, const Vec3& p2, double t0, double t1, double t2) -> Vec3 {
    return 2.0 * ((p2 - p1) / (t2 - t1) - (p1 - p0) / (t1 - t0)) / (t2 - t0);
  };
  for (size_t k = 2; k < judged.size(); ++k) {
    const Judged &a = judged[k - 2], &b = judged[k - 1], &c = judged[k];
    if (a.id != c.id || b.t <= a.t || c.t <= b.t || b.t - a.t > max_spacing_ns || c.t - b.t > max_spacing_ns) continue;
    const double t0 = static_cast<double>(a.t) * 1e-9, t1 = static_cast<double>(b.t) * 1e-9,
                 t2 = static_cast<double>(c.t) * 1e-9;
    out.roughness_mps2.push_back(
        (accel(a.shown, b.shown, c.shown, t0, t1, t2) - accel(a.truth, b.truth, c.truth, t0, t1, t2)).norm());
  }
  return out;
}

}  // namespace platoon::node
