#include "platoon/road/environment.hpp"

#include "platoon/entity_id.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <numbers>
#include <random>
#include <sstream>

namespace platoon::road {
namespace {

// Spacing of the carriageway sample grid the no-overlap-with-road check uses, in m. Boxes are grown by at
// least 0.75 of it, more than the grid's half diagonal, so no box corner can slip between samples.
constexpr double kRoadGridM = 0.2;

// 53 random bits to [lo, hi): identical on every standard library.
double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

struct Corners {
  std::array<double, 4> x, y;
};

Corners FootprintCorners(const EnvObject& o) {
  const double c = std::cos(o.yaw_rad), s = std::sin(o.yaw_rad);
  const double hl = 0.5 * o.size_m.x(), hw = 0.5 * o.size_m.y();
  Corners k{};
  const double sl[4] = {1, -1, -1, 1}, sw[4] = {1, 1, -1, -1};
  for (int i = 0; i < 4; ++i) {
    k.x[i] = o.position_m.x() + sl[i] * hl * c - sw[i] * hw * s;
    k.y[i] = o.position_m.y() + sl[i] * hl * s + sw[i] * hw * c;
  }
  return k;
}

// Precomputed carriageway cross-sections for the road check.
struct RoadGrid {
  std::vector<double> x_m, y_m, nx, ny;
  double t_left_m = 0, t_right_m = 0;
};

RoadGrid BuildGrid(const Road& road) {
  RoadGrid g;
  g.t_left_m = road.LeftEdgeOffset();
  g.t_right_m = road.RightEdgeOffset();
  const int n = std::max(2, static_cast<int>(std::ceil(road.Length() / kRoadGridM)) + 1);
  for (int i = 0; i < n; ++i) {
    const RoadPoint p = road.Evaluate(road.Length() * i / (n - 1));
    g.x_m.push_back(p.position_m.x());
    g.y_m.push_back(p.position_m.y());
    g.nx.push_back(-std::sin(p.heading_rad));
    g.ny.push_back(std::cos(p.heading_rad));
  }
  return g;
}

// Whether any carriageway sample lies inside the box grown by `grow_m`.
bool TouchesRoad(const RoadGrid& g, const EnvObject& o, double grow_m) {
  const double c = std::cos(o.yaw_rad), s = std::sin(o.yaw_rad);
  const double hl = 0.5 * o.size_m.x() + grow_m, hw = 0.5 * o.size_m.y() + grow_m;
  const double reach = std::hypot(hl, hw) + std::max(g.t_left_m, -g.t_right_m) + kRoadGridM;
  const int nt = std::max(1, static_cast<int>(std::ceil((g.t_left_m - g.t_right_m) / kRoadGridM)));
  for (size_t i = 0; i < g.x_m.size(); ++i) {
    const double dx0 = g.x_m[i] - o.position_m.x(), dy0 = g.y_m[i] - o.position_m.y();
    if (dx0 * dx0 + dy0 * dy0 > reach * reach) continue;
    for (int j = 0; j <= nt; ++j) {
      const double t = g.t_right_m + (g.t_left_m - g.t_right_m) * j / nt;
      const double dx = dx0 + t * g.nx[i], dy = dy0 + t * g.ny[i];
      if (std::abs(dx * c + dy * s) <= hl && std::abs(-dx * s + dy * c) <= hw) return true;
    }
  }
  return false;
}

const ObjectKindDef& KindDef(const EnvironmentDef& d, ObjectKind k) {
  switch (k) {
    case ObjectKind::kBuilding: return d.buildings;
    case ObjectKind::kTree: return d.trees;
    case ObjectKind::kGuardRail: return d.guard_rails;
    case ObjectKind::kStreetLight: return d.street_lights;
    case ObjectKind::kSign: return d.signs;
  }
  return d.trees;
}

ObjectKindDef Kind(bool enabled, double density, double lat_min, double lat_max, Vec3 size_min, Vec3 size_max) {
  return ObjectKindDef{enabled, density, density, lat_min, lat_max, size_min, size_max};
}

}  // namespace

const char* ObjectKindName(ObjectKind k) {
  switch (k) {
    case ObjectKind::kBuilding: return "building";
    case ObjectKind::kTree: return "tree";
    case ObjectKind::kGuardRail: return "guard_rail";
    case ObjectKind::kStreetLight: return "street_light";
    case ObjectKind::kSign: return "sign";
  }
  return "?";
}

EnvironmentDef DefaultEnvironmentDef() {
  EnvironmentDef d;
  d.buildings = Kind(true, 0.5, 10.0, 40.0, Vec3(8, 8, 4), Vec3(20, 15, 10));
  d.trees = Kind(true, 8.0, 2.0, 30.0, Vec3(2, 2, 4), Vec3(6, 6, 15));
  d.guard_rails = Kind(true, 25.0, 0.5, 0.5, Vec3(4, 0.3, 0.75), Vec3(4, 0.3, 0.75));
  d.street_lights = Kind(false, 3.0, 0.5, 1.5, Vec3(0.3, 0.3, 8), Vec3(0.3, 0.3, 10));
  d.signs = Kind(true, 0.5, 1.5, 3.0, Vec3(0.1, 0.8, 2.2), Vec3(0.1, 1.2, 3.0));
  return d;
}

EnvironmentDef UrbanEnvironmentDef() {
  EnvironmentDef d;
  d.buildings = Kind(true, 6.0, 2.0, 6.0, Vec3(8, 8, 6), Vec3(25, 15, 30));
  d.trees = Kind(true, 1.0, 1.0, 4.0, Vec3(2, 2, 4), Vec3(4, 4, 10));
  d.guard_rails = Kind(false, 25.0, 0.5, 0.5, Vec3(4, 0.3, 0.75), Vec3(4, 0.3, 0.75));
  d.street_lights = Kind(true, 4.0, 0.5, 1.0, Vec3(0.3, 0.3, 8), Vec3(0.3, 0.3, 10));
  d.signs = Kind(true, 2.0, 0.5, 1.5, Vec3(0.1, 0.8, 2.2), Vec3(0.1, 1.2, 3.0));
  return d;
}

std::string ValidateEnvironmentDef(const EnvironmentDef& d) {
  if (!(d.clearance_m >= 0) || !std::isfinite(d.clearance_m)) return "clearance_m must be >= 0";
  if (d.attempts < 1) return "attempts must be >= 1";
  for (ObjectKind k : {ObjectKind::kBuilding, ObjectKind::kTree, ObjectKind::kGuardRail, ObjectKind::kStreetLight,
                       ObjectKind::kSign}) {
    const ObjectKindDef& o = KindDef(d, k);
    const std::string name = ObjectKindName(k);
    if (!(o.density_left_per_100m >= 0 && o.density_left_per_100m <= 1000) ||
        !(o.density_right_per_100m >= 0 && o.density_right_per_100m <= 1000))
      return name + ": densities must be in [0, 1000] per 100 m";
    if (!(o.lateral_min_m >= 0) || !(o.lateral_max_m >= o.lateral_min_m) || !std::isfinite(o.lateral_max_m))
      return name + ": expected 0 <= lateral_min_m <= lateral_max_m";
    for (int i = 0; i < 3; ++i)
      if (!(o.size_min_m[i] > 0) || !(o.size_max_m[i] >= o.size_min_m[i]) || !std::isfinite(o.size_max_m[i]))
        return name + ": expected 0 < size_min_m <= size_max_m in every axis";
  }
  return {};
}

bool Overlap(const EnvObject& a, const EnvObject& b, double clearance_m) {
  // Quick reject on bounding circles.
  const double dx = b.position_m.x() - a.position_m.x(), dy = b.position_m.y() - a.position_m.y();
  const double ra = 0.5 * std::hypot(a.size_m.x(), a.size_m.y()), rb = 0.5 * std::hypot(b.size_m.x(), b.size_m.y());
  if (std::hypot(dx, dy) > ra + rb + clearance_m) return false;
  // Separating axes: the two edge directions of each box. A gap > clearance on any axis means the
  // footprints are at least that far apart.
  const Corners ca = FootprintCorners(a), cb = FootprintCorners(b);
  for (double yaw : {a.yaw_rad, a.yaw_rad + std::numbers::pi / 2, b.yaw_rad, b.yaw_rad + std::numbers::pi / 2}) {
    const double ux = std::cos(yaw), uy = std::sin(yaw);
    double amin = 1e300, amax = -1e300, bmin = 1e300, bmax = -1e300;
    for (int i = 0; i < 4; ++i) {
      const double pa = ca.x[i] * ux + ca.y[i] * uy, pb = cb.x[i] * ux + cb.y[i] * uy;
      amin = std::min(amin, pa), amax = std::max(amax, pa);
      bmin = std::min(bmin, pb), bmax = std::max(bmax, pb);
    }
    if (bmin - amax > clearance_m || amin - bmax > clearance_m) return false;
  }
  return true;
}

std::vector<EnvObject> GenerateEnvironment(const Road& road, const EnvironmentDef& def) {
  assert(ValidateEnvironmentDef(def).empty());
  const RoadGrid grid = BuildGrid(road);
  const double grow_m = std::max(def.clearance_m, 0.75 * kRoadGridM);
  std::vector<EnvObject> out;

  // Whether a candidate is clear of the road and of everything placed so far. Guard-rail segments may
  // touch each other (a rail is continuous); every other pair keeps the clearance.
  auto fits = [&](const EnvObject& o) {
    if (TouchesRoad(grid, o, grow_m)) return false;
    for (const auto& p : out) {
      const bool rails = o.kind == ObjectKind::kGuardRail && p.kind == ObjectKind::kGuardRail;
      if (Overlap(o, p, rails ? 0.0 : def.clearance_m)) return false;
    }
    return true;
  };

  // Kinds in priority order; each (kind, side) has its own stream, so turning one kind off does not
  // change where the others are drawn (only which of them a collision rejects).
  const ObjectKind order[] = {ObjectKind::kGuardRail, ObjectKind::kSign, ObjectKind::kStreetLight,
                              ObjectKind::kBuilding, ObjectKind::kTree};
  for (ObjectKind kind : order) {
    const ObjectKindDef& kd = KindDef(def, kind);
    if (!kd.enabled) continue;
    for (int side : {1, -1}) {
      const double density = side > 0 ? kd.density_left_per_100m : kd.density_right_per_100m;
      if (density <= 0) continue;
      std::mt19937_64 rng(SplitMix64(def.seed ^ SplitMix64(static_cast<uint64_t>(kind) * 2 + (side > 0 ? 0 : 1))));
      const double edge_t = side > 0 ? road.LeftEdgeOffset() : road.RightEdgeOffset();
      const double spacing = 100.0 / density;
      double s = 0.0;
      for (int index = 0;; ++index) {
        // Stations: guard rails evenly spaced, everything else a Poisson process of the given density.
        if (kind == ObjectKind::kGuardRail) s = (index + 0.5) * spacing;
        else s += -std::log(1.0 - Uniform(rng, 0, 1)) * spacing;
        if (s > road.Length()) break;
        for (int attempt = 0; attempt < def.attempts; ++attempt) {
          EnvObject o;
          o.kind = kind;
          o.side = side;
          o.s_m = s;
          for (int i = 0; i < 3; ++i) o.size_m[i] = Uniform(rng, kd.size_min_m[i], kd.size_max_m[i]);
          if (kind == ObjectKind::kTree) o.size_m.y() = o.size_m.x();
          const double lateral = Uniform(rng, kd.lateral_min_m, kd.lateral_max_m);
          const double t = edge_t + side * (lateral + 0.5 * o.size_m.y());
          if (kind == ObjectKind::kGuardRail) {
            // Shorter on the inside of a curve, where the offset line is shorter than the road (eq. 14).
            const double shrink = std::min(1.0, 1.0 - road.Curvature(s) * t);
            o.size_m.x() = std::min(o.size_m.x(), 0.98 * spacing * std::max(shrink, 0.1));
          }
          o.position_m = road.PointAt(s, t);
          o.yaw_rad = road.Heading(s);
          if (fits(o)) {
            out.push_back(o);
            break;
          }
        }
      }
    }
  }
  return out;
}

}  // namespace platoon::road
