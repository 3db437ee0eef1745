#include "platoon/road/endless_road.hpp"

#include "platoon/entity_id.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <sstream>

namespace platoon::road {
namespace {

RoadDef LayoutDef(const EndlessRoadDef& def) {
  RoadDef d = def.generator.layout;
  d.sections = {LineSection(1.0)};
  return d;
}

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  void D(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Bytes(&bits, sizeof bits);
  }
};

}  // namespace

std::string ValidateEndlessRoadDef(const EndlessRoadDef& d) {
  if (auto e = ValidateRoadGeneratorDef(d.generator); !e.empty()) return "generator: " + e;
  std::ostringstream os;
  if (!(d.chunk_length_m >= 50.0) || !std::isfinite(d.chunk_length_m))
    os << "chunk_length_m must be >= 50, got " << d.chunk_length_m;
  else if (!(d.ahead_m >= d.chunk_length_m) || !std::isfinite(d.ahead_m))
    os << "ahead_m must be >= chunk_length_m (" << d.chunk_length_m << "), got " << d.ahead_m;
  else if (!(d.behind_m >= 0.0) || !std::isfinite(d.behind_m))
    os << "behind_m must be >= 0, got " << d.behind_m;
  return os.str();
}

std::vector<SectionDef> EndlessChunkSections(const EndlessRoadDef& def, int64_t index) {
  RoadGeneratorDef g = def.generator;
  // SplitMix64: chunk seeds that share no structure for neighbouring k.
  g.seed = SplitMix64(def.generator.seed ^ SplitMix64(static_cast<uint64_t>(index)));
  RoadGenerator gen(g);
  std::vector<SectionDef> out = gen.Next(def.chunk_length_m);
  // End straight, so the next chunk (which starts at zero curvature) joins without a curvature step.
  const double k = out.back().curvature_end_1pm;
  if (k != 0.0) {
    const double lt = std::max(g.transition_min_length_m, std::abs(k) / g.max_curvature_rate_1pm2);
    out.push_back(ClothoidSection(lt, k, 0.0));
  }
  return out;
}

uint64_t EndlessChunkHash(int64_t index, double start_s_m, const Road& road) {
  Fnv f;
  f.Bytes(&index, sizeof index);
  f.D(start_s_m);
  const RoadDef& d = road.Def();
  f.D(d.start_x_m);
  f.D(d.start_y_m);
  f.D(d.start_heading_rad);
  f.D(d.start_height_m);
  for (const auto& s : d.sections) {
    f.D(s.length_m);
    f.D(s.curvature_start_1pm);
    f.D(s.curvature_end_1pm);
  }
  const RoadPoint end = road.Evaluate(road.Length());
  f.D(end.position_m.x());
  f.D(end.position_m.y());
  f.D(end.position_m.z());
  f.D(end.heading_rad);
  return f.h;
}

EndlessRoad::EndlessRoad(const EndlessRoadDef& def) : def_(def), layout_(LayoutDef(def)) {
  assert(ValidateEndlessRoadDef(def_).empty());
  const RoadDef& l = def_.generator.layout;
  starts_.push_back(Start{0.0, l.start_x_m, l.start_y_m, l.start_heading_rad, l.start_height_m});
  chunks_.push_back(Build(0));
  Cover(0.0, 0.0);
}

EndlessChunk EndlessRoad::Build(int64_t index) {
  assert(index >= 0 && static_cast<size_t>(index) < starts_.size());
  const Start& st = starts_[static_cast<size_t>(index)];
  RoadDef d = def_.generator.layout;
  d.start_x_m = st.x_m;
  d.start_y_m = st.y_m;
  d.start_heading_rad = st.heading_rad;
  d.start_height_m = st.height_m;
  d.sections = EndlessChunkSections(def_, index);
  EndlessChunk c{index, st.s_m, Road(std::move(d)), 0};
  c.hash = EndlessChunkHash(index, c.start_s_m, c.road);
  if (static_cast<size_t>(index) + 1 == starts_.size()) {
    hashes_.push_back(c.hash);
    const RoadPoint end = c.road.Evaluate(c.road.Length());
    starts_.push_back(Start{st.s_m + c.road.Length(), end.position_m.x(), end.position_m.y(), end.heading_rad,
                            end.position_m.z()});
  }
  ++generated_;
  return c;
}

int EndlessRoad::Cover(double rear_s_m, double front_s_m) {
  const double lo = std::max(0.0, std::min(rear_s_m, front_s_m) - def_.behind_m);
  const double hi = std::max(rear_s_m, front_s_m) + def_.ahead_m;
  int made = 0;
  // Ahead first, then behind (a window that moved back rebuilds chunks from their recorded starts).
  while (WindowEnd() < hi) {
    chunks_.push_back(Build(chunks_.back().index + 1));
    ++made;
  }
  while (chunks_.front().index > 0 && chunks_.front().start_s_m > lo) {
    chunks_.push_front(Build(chunks_.front().index - 1));
    ++made;
  }
  // Drop whole chunks that end before lo or start after hi; at least one chunk stays.
  while (chunks_.size() > 1 && chunks_.front().start_s_m + chunks_.front().road.Length() < lo) {
    chunks_.pop_front();
    ++dropped_;
  }
  while (chunks_.size() > 1 && chunks_.back().start_s_m > hi) {
    chunks_.pop_back();
    ++dropped_;
  }
  return made;
}

RoadCoord EndlessRoad::Project(const Vec3& p_m) const {
  RoadCoord best;
  best.distance_m = 1e300;
  for (const auto& c : chunks_) {
    RoadCoord r = c.road.Project(p_m);
    if (r.distance_m < best.distance_m) {
      best = r;
      best.s_m += c.start_s_m;
    }
  }
  best.road_id = layout_.Id();
  return best;
}

RoadCoord EndlessRoad::ProjectNear(const Vec3& p_m, double s_lo_m, double s_hi_m) const {
  RoadCoord best;
  best.distance_m = 1e300;
  for (const auto& c : chunks_) {
    const double lo = s_lo_m - c.start_s_m, hi = s_hi_m - c.start_s_m;
    if (hi < 0 || lo > c.road.Length()) continue;
    RoadCoord r = c.road.Project(p_m, std::max(0.0, lo), std::min(c.road.Length(), hi));
    if (r.distance_m < best.distance_m) {
      best = r;
      best.s_m += c.start_s_m;
    }
  }
  if (best.distance_m > 1e299) return Project(p_m);
  best.road_id = layout_.Id();
  return best;
}

RoadCoord EndlessRoad::Locate(const Vec3& p_m, int max_new_chunks) {
  RoadCoord r = Project(p_m);
  // A point far from every part of the window lies further on (the road may wind back toward it, so the
  // foot point need not be at the window's end): draw road until it is near, or the budget is spent.
  for (int i = 0; i < max_new_chunks && r.distance_m > kLocateNearM; ++i) {
    chunks_.push_back(Build(chunks_.back().index + 1));
    r = Project(p_m);
  }
  return r;
}

const EndlessChunk& EndlessRoad::ChunkAt(double s_m) const {
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), s_m,
                             [](double s, const EndlessChunk& c) { return s < c.start_s_m; });
  return it == chunks_.begin() ? chunks_.front() : *std::prev(it);
}

RoadPoint EndlessRoad::Evaluate(double s_m) const {
  const EndlessChunk& c = ChunkAt(s_m);
  RoadPoint p = c.road.Evaluate(s_m - c.start_s_m);
  p.s_m += c.start_s_m;
  return p;
}

Vec3 EndlessRoad::PointAt(double s_m, double t_m) const {
  const EndlessChunk& c = ChunkAt(s_m);
  return c.road.PointAt(s_m - c.start_s_m, t_m);
}

double EndlessRoad::Curvature(double s_m) const {
  const EndlessChunk& c = ChunkAt(s_m);
  return c.road.Curvature(s_m - c.start_s_m);
}

}  // namespace platoon::road
