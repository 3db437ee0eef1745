#include "platoon/sensors/point_cloud.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace platoon::sensors {
namespace {

// Grid indices beyond this are refused: floor(v / cell) must convert to int64 without overflow and
// neighbour offsets (+-radius) must not wrap.
constexpr double kMaxCellIndex = 0x1p62;

// Shortest round-trip text of a double, for error messages ("0.5", "-1", "inf", "nan").
std::string Num(double v) {
  std::array<char, 32> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

bool Finite(const CloudPoint& p) { return std::isfinite(p.x_m) && std::isfinite(p.y_m) && std::isfinite(p.z_m); }

// floor(v / cell_m) as an integer; false for non-finite v or an index out of range.
bool CellIndex(double v, double cell_m, int64_t& out) {
  const double q = std::floor(v / cell_m);
  if (!(std::abs(q) < kMaxCellIndex)) return false;  // also rejects NaN
  out = static_cast<int64_t>(q);
  return true;
}

struct Key2 {
  int64_t i = 0, j = 0;
  auto operator<=>(const Key2&) const = default;
};
struct Key3 {
  int64_t i = 0, j = 0, k = 0;
  auto operator<=>(const Key3&) const = default;
};

// splitmix64 finaliser: a cheap, well-mixed 64-bit hash step.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
struct Key2Hash {
  size_t operator()(const Key2& k) const { return Mix(Mix(uint64_t(k.i)) ^ uint64_t(k.j)); }
};
struct Key3Hash {
  size_t operator()(const Key3& k) const { return Mix(Mix(Mix(uint64_t(k.i)) ^ uint64_t(k.j)) ^ uint64_t(k.k)); }
};

bool VoxelKey(const CloudPoint& p, double cell_m, Key3& key) {
  return CellIndex(p.x_m, cell_m, key.i) && CellIndex(p.y_m, cell_m, key.j) && CellIndex(p.z_m, cell_m, key.k);
}
bool ColumnKey(const CloudPoint& p, double cell_m, Key2& key) {
  return std::isfinite(p.z_m) && CellIndex(p.x_m, cell_m, key.i) && CellIndex(p.y_m, cell_m, key.j);
}

// Points of a grid, sorted by (cell key, point index): runs of equal keys are the occupied cells.
template <typename Key>
struct SortedEntry {
  Key key;
  uint32_t index;
  bool operator<(const SortedEntry& o) const { return std::tie(key, index) < std::tie(o.key, o.index); }
};

double Dist2(const CloudPoint& a, const CloudPoint& b) {
  const double dx = double(a.x_m) - b.x_m, dy = double(a.y_m) - b.y_m, dz = double(a.z_m) - b.z_m;
  return dx * dx + dy * dy + dz * dz;
}

// Most frequent value (smallest on a tie) of a non-empty list; sorts `values`.
uint32_t Majority(std::vector<uint32_t>& values) {
  std::sort(values.begin(), values.end());
  uint32_t best = values.front();
  size_t best_count = 0;
  for (size_t a = 0; a < values.size();) {
    size_t b = a;
    while (b < values.size() && values[b] == values[a]) ++b;
    if (b - a > best_count) {  // strict: the earlier (smaller) id wins ties
      best = values[a];
      best_count = b - a;
    }
    a = b;
  }
  return best;
}

void CheckIndexable(size_t n, const char* what) {
  if (n > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument(std::string(what) + ": at most 2^32 - 1 points, got " + std::to_string(n));
}

}  // namespace

CloudPoint ToCloudPoint(const LidarPoint& p, uint8_t source) {
  CloudPoint c;
  c.x_m = p.x_m;
  c.y_m = p.y_m;
  c.z_m = p.z_m;
  c.intensity_w = p.intensity_w;
  c.snr = p.snr;
  c.time_offset_s = p.time_offset_s;
  c.ring = p.ring;
  c.echo = p.echo;
  c.source = source;
  c.entity_id = p.entity_id;
  c.class_id = static_cast<uint16_t>(p.class_id);
  c.reflectivity = p.reflectivity;
  c.return_type = p.return_type;
  return c;
}

std::string PackLidarPoints(std::span<const LidarPoint> points, uint8_t source) {
  using namespace point_record;
  std::string out(points.size() * kStride, '\0');
  char* o = out.data();
  for (const LidarPoint& p : points) {
    if constexpr (std::endian::native == std::endian::little) {
      // Field by field from the point in memory to the blob. A CloudPoint assembled on the stack and then
      // copied as a whole would be read back in wider words than it was written, which the CPU cannot
      // forward from its store buffer (it waits for every point).
      static_assert(offsetof(LidarPoint, snr) == offsetof(LidarPoint, x_m) + 4 * sizeof(float) &&
                    kOffsetSnr == kOffsetX + 4 * sizeof(float));
      // x, y, z, intensity, snr: five floats in the same order in both.
      std::memcpy(o + kOffsetX, reinterpret_cast<const char*>(&p) + offsetof(LidarPoint, x_m), 5 * sizeof(float));
      std::memcpy(o + kOffsetTime, &p.time_offset_s, sizeof(float));
      std::memcpy(o + kOffsetRing, &p.ring, sizeof p.ring);
      o[kOffsetEcho] = static_cast<char>(p.echo);
      o[kOffsetSource] = static_cast<char>(source);
      std::memcpy(o + kOffsetEntity, &p.entity_id, sizeof p.entity_id);
      const auto class_id = static_cast<uint16_t>(p.class_id);
      std::memcpy(o + kOffsetClass, &class_id, sizeof class_id);
      o[kOffsetReflectivity] = static_cast<char>(p.reflectivity);
      o[kOffsetReturnType] = static_cast<char>(p.return_type);
    } else {
      WritePointRecord(ToCloudPoint(p, source), o);
    }
    o += kStride;
  }
  return out;
}

// ---- Voxel downsampling

std::vector<CloudPoint> VoxelDownsample(std::span<const CloudPoint> points, double voxel_m) {
  if (!(std::isfinite(voxel_m) && voxel_m > 0.0))
    throw std::invalid_argument("VoxelDownsample: voxel_m must be finite and > 0, got " + Num(voxel_m));
  CheckIndexable(points.size(), "VoxelDownsample");

  // Sort the usable points by (voxel key, index); each run of equal keys is one output point.
  std::vector<SortedEntry<Key3>> entries;
  entries.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    Key3 key;
    if (VoxelKey(points[i], voxel_m, key)) entries.push_back({key, static_cast<uint32_t>(i)});
  }
  std::sort(entries.begin(), entries.end());

  std::vector<CloudPoint> out;
  for (size_t a = 0; a < entries.size();) {
    size_t b = a;
    while (b < entries.size() && entries[b].key == entries[a].key) ++b;
    // Centroid and mean intensity/SNR, accumulated in double.
    double sx = 0, sy = 0, sz = 0, si = 0, ss = 0;
    for (size_t e = a; e < b; ++e) {
      const CloudPoint& p = points[entries[e].index];
      sx += p.x_m;
      sy += p.y_m;
      sz += p.z_m;
      si += p.intensity_w;
      ss += p.snr;
    }
    const double n = static_cast<double>(b - a);
    const double cx = sx / n, cy = sy / n, cz = sz / n;
    // Labels from the member nearest the centroid; entries are index-ascending, so '<' keeps the lowest on a tie.
    size_t nearest = entries[a].index;
    double best = std::numeric_limits<double>::infinity();
    for (size_t e = a; e < b; ++e) {
      const CloudPoint& p = points[entries[e].index];
      const double dx = p.x_m - cx, dy = p.y_m - cy, dz = p.z_m - cz;
      const double d2 = dx * dx + dy * dy + dz * dz;
      if (d2 < best) {
        best = d2;
        nearest = entries[e].index;
      }
    }
    CloudPoint c = points[nearest];
    c.x_m = static_cast<float>(cx);
    c.y_m = static_cast<float>(cy);
    c.z_m = static_cast<float>(cz);
    c.intensity_w = static_cast<float>(si / n);
    c.snr = static_cast<float>(ss / n);
    out.push_back(c);
    a = b;
  }
  return out;
}

// ---- Ground removal

GroundDef DefaultGroundDef() { return GroundDef{}; }

std::string ValidateGroundDef(const GroundDef& d) {
  if (!(std::isfinite(d.cell_m) && d.cell_m > 0)) return "GroundDef.cell_m must be finite and > 0, got " + Num(d.cell_m);
  if (!(std::isfinite(d.height_above_min_m) && d.height_above_min_m >= 0))
    return "GroundDef.height_above_min_m must be finite and >= 0, got " + Num(d.height_above_min_m);
  if (!(std::isfinite(d.max_slope) && d.max_slope >= 0))
    return "GroundDef.max_slope must be finite and >= 0, got " + Num(d.max_slope);
  if (d.neighbour_radius_cells < 1 || d.neighbour_radius_cells > 8)
    return "GroundDef.neighbour_radius_cells must be in [1, 8], got " + std::to_string(d.neighbour_radius_cells);
  if (std::isnan(d.max_ground_z_m)) return "GroundDef.max_ground_z_m must not be NaN";
  if (!(std::isfinite(d.foot_cell_m) && d.foot_cell_m >= 0))
    return "GroundDef.foot_cell_m must be finite and >= 0 (0 disables), got " + Num(d.foot_cell_m);
  if (d.foot_cell_m > 0 && !(std::isfinite(d.foot_height_m) && d.foot_height_m >= d.height_above_min_m))
    return "GroundDef.foot_height_m must be finite and >= height_above_min_m (" + Num(d.height_above_min_m) +
           "), got " + Num(d.foot_height_m);
  return {};
}

std::vector<uint8_t> GroundMask(std::span<const CloudPoint> points, const GroundDef& def) {
  if (std::string err = ValidateGroundDef(def); !err.empty()) throw std::invalid_argument("GroundMask: " + err);
  CheckIndexable(points.size(), "GroundMask");
  constexpr uint32_t kNoCell = std::numeric_limits<uint32_t>::max();
  std::vector<uint8_t> mask(points.size(), 0);

  // (1) Occupied cells in key order (deterministic ids) and the lowest z of each.
  std::vector<SortedEntry<Key2>> entries;
  entries.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    Key2 key;
    if (ColumnKey(points[i], def.cell_m, key)) entries.push_back({key, static_cast<uint32_t>(i)});
  }
  std::sort(entries.begin(), entries.end());
  std::vector<uint32_t> cell_of(points.size(), kNoCell);
  std::vector<Key2> cell_key;
  std::vector<double> ground_z;  // zmin, then the smoothed ground height g
  std::unordered_map<Key2, uint32_t, Key2Hash> cell_id;
  for (const auto& e : entries) {
    if (cell_key.empty() || !(cell_key.back() == e.key)) {
      cell_id.emplace(e.key, static_cast<uint32_t>(cell_key.size()));
      cell_key.push_back(e.key);
      ground_z.push_back(std::numeric_limits<double>::infinity());
    }
    const uint32_t c = static_cast<uint32_t>(cell_key.size() - 1);
    cell_of[e.index] = c;
    ground_z[c] = std::min(ground_z[c], double(points[e.index].z_m));
  }

  // (2) Slope-limited lower envelope: g(c) = min(zmin(c), g(n) + max_slope * |c - n|) over neighbours,
  // relaxed in Dijkstra order (lowest first); ties broken by cell id so the run is deterministic.
  const int r = def.neighbour_radius_cells;
  struct Offset {
    int di, dj;
    double rise_m;
  };
  std::vector<Offset> offsets;
  for (int di = -r; di <= r; ++di)
    for (int dj = -r; dj <= r; ++dj)
      if (di != 0 || dj != 0) offsets.push_back({di, dj, def.max_slope * def.cell_m * std::hypot(di, dj)});
  using Item = std::pair<double, uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  for (uint32_t c = 0; c < ground_z.size(); ++c) queue.push({ground_z[c], c});
  while (!queue.empty()) {
    const auto [g, c] = queue.top();
    queue.pop();
    if (g > ground_z[c]) continue;  // stale entry
    for (const Offset& o : offsets) {
      const auto it = cell_id.find(Key2{cell_key[c].i + o.di, cell_key[c].j + o.dj});
      if (it == cell_id.end()) continue;
      const double candidate = g + o.rise_m;
      if (candidate < ground_z[it->second]) {
        ground_z[it->second] = candidate;
        queue.push({candidate, it->second});
      }
    }
  }

  // (3) Ground candidates: close enough above the local ground height, and that height allowed.
  std::vector<double> height(points.size(), std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < points.size(); ++i) {
    const uint32_t c = cell_of[i];
    if (c == kNoCell) continue;
    height[i] = double(points[i].z_m) - ground_z[c];
    mask[i] = height[i] <= def.height_above_min_m && ground_z[c] <= def.max_ground_z_m;
  }

  // (4) Foot of structures: a fine column that also holds a low non-ground point is a wall rising from
  // the ground; its ground candidates belong to the wall.
  if (def.foot_cell_m > 0) {
    std::unordered_map<Key2, bool, Key2Hash> wall_column;
    for (size_t i = 0; i < points.size(); ++i) {
      Key2 key;
      if (cell_of[i] == kNoCell || mask[i] || height[i] > def.foot_height_m) continue;
      if (ColumnKey(points[i], def.foot_cell_m, key)) wall_column[key] = true;
    }
    if (!wall_column.empty()) {
      for (size_t i = 0; i < points.size(); ++i) {
        Key2 key;
        if (mask[i] && ColumnKey(points[i], def.foot_cell_m, key) && wall_column.contains(key)) mask[i] = 0;
      }
    }
  }
  return mask;
}

GroundSplit SplitGround(std::span<const CloudPoint> points, const GroundDef& def) {
  const std::vector<uint8_t> mask = GroundMask(points, def);
  GroundSplit split;
  for (size_t i = 0; i < points.size(); ++i) (mask[i] ? split.ground : split.obstacles).push_back(points[i]);
  return split;
}

// ---- Euclidean clustering

ClusterDef DefaultClusterDef() { return ClusterDef{}; }

std::string ValidateClusterDef(const ClusterDef& d) {
  if (!(std::isfinite(d.tolerance_m) && d.tolerance_m > 0))
    return "ClusterDef.tolerance_m must be finite and > 0, got " + Num(d.tolerance_m);
  if (d.min_points < 1) return "ClusterDef.min_points must be >= 1, got 0";
  if (d.max_points < d.min_points)
    return "ClusterDef.max_points must be >= min_points (" + std::to_string(d.min_points) + "), got " +
           std::to_string(d.max_points);
  return {};
}

std::vector<Cluster> EuclideanClusters(std::span<const CloudPoint> points, const ClusterDef& def) {
  if (std::string err = ValidateClusterDef(def); !err.empty()) throw std::invalid_argument("EuclideanClusters: " + err);
  CheckIndexable(points.size(), "EuclideanClusters");
  const uint32_t n = static_cast<uint32_t>(points.size());
  constexpr uint32_t kInvalid = std::numeric_limits<uint32_t>::max();

  // Hash grid with cells a hair larger than the tolerance, so two points within tolerance are always
  // in the same or adjacent cells despite rounding in floor(x / cell).
  const double cell_m = def.tolerance_m * (1.0 + 1e-6);
  const double tol2 = def.tolerance_m * def.tolerance_m;
  std::vector<SortedEntry<Key3>> entries;
  entries.reserve(n);
  std::vector<uint8_t> usable(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    Key3 key;
    if (Finite(points[i]) && VoxelKey(points[i], cell_m, key)) {
      entries.push_back({key, i});
      usable[i] = 1;
    }
  }
  std::sort(entries.begin(), entries.end());
  struct Run {
    uint32_t begin, end;
  };
  std::unordered_map<Key3, Run, Key3Hash> cells;
  std::vector<std::pair<Key3, Run>> runs;
  for (uint32_t a = 0; a < entries.size();) {
    uint32_t b = a;
    while (b < entries.size() && entries[b].key == entries[a].key) ++b;
    cells.emplace(entries[a].key, Run{a, b});
    runs.push_back({entries[a].key, Run{a, b}});
    a = b;
  }

  // Union-find; the root of a set is always its smallest index (the larger root is attached to the smaller).
  std::vector<uint32_t> parent(n);
  for (uint32_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&parent](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];  // path halving
    return x;
  };
  auto unite = [&](uint32_t a, uint32_t b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (a < b) std::swap(a, b);
    parent[a] = b;
  };
  auto link = [&](uint32_t i, uint32_t j) {
    if (Dist2(points[i], points[j]) <= tol2) unite(i, j);
  };

  // Each pair of cells is visited once: the cell itself (pairs a < b) and its 13 lexicographically
  // "forward" neighbours among the 26.
  std::vector<std::array<int, 3>> forward;
  for (int di = -1; di <= 1; ++di)
    for (int dj = -1; dj <= 1; ++dj)
      for (int dk = -1; dk <= 1; ++dk)
        if (std::tie(di, dj, dk) > std::make_tuple(0, 0, 0)) forward.push_back({di, dj, dk});
  for (const auto& [key, run] : runs) {
    for (uint32_t a = run.begin; a < run.end; ++a)
      for (uint32_t b = a + 1; b < run.end; ++b) link(entries[a].index, entries[b].index);
    for (const auto& o : forward) {
      const auto it = cells.find(Key3{key.i + o[0], key.j + o[1], key.k + o[2]});
      if (it == cells.end()) continue;
      for (uint32_t a = run.begin; a < run.end; ++a)
        for (uint32_t b = it->second.begin; b < it->second.end; ++b) link(entries[a].index, entries[b].index);
    }
  }

  // Components in order of their smallest index (= root), members ascending.
  std::vector<uint32_t> component_of_root(n, kInvalid);
  std::vector<std::vector<uint32_t>> components;
  for (uint32_t i = 0; i < n; ++i) {
    if (!usable[i]) continue;
    const uint32_t root = find(i);
    if (component_of_root[root] == kInvalid) {
      component_of_root[root] = static_cast<uint32_t>(components.size());
      components.emplace_back();
    }
    components[component_of_root[root]].push_back(i);
  }

  // Size filter and per-cluster statistics.
  std::vector<Cluster> clusters;
  std::vector<uint32_t> ids;
  for (auto& members : components) {
    if (members.size() < def.min_points || members.size() > def.max_points) continue;
    Cluster c;
    c.min_m = Vec3::Constant(std::numeric_limits<double>::infinity());
    c.max_m = Vec3::Constant(-std::numeric_limits<double>::infinity());
    Vec3 sum = Vec3::Zero();
    for (uint32_t i : members) {
      const Vec3 p(points[i].x_m, points[i].y_m, points[i].z_m);
      sum += p;
      c.min_m = c.min_m.cwiseMin(p);
      c.max_m = c.max_m.cwiseMax(p);
    }
    c.centroid_m = sum / static_cast<double>(members.size());
    ids.clear();
    for (uint32_t i : members) ids.push_back(points[i].entity_id);
    c.majority_entity_id = Majority(ids);
    ids.clear();
    for (uint32_t i : members) ids.push_back(points[i].class_id);
    c.majority_class_id = Majority(ids);
    c.indices = std::move(members);
    clusters.push_back(std::move(c));
  }
  return clusters;
}

// ---- Scoring

DetectionScore ScoreClusters(std::span<const Cluster> clusters, std::span<const TruthObject> truth,
                             double match_distance_m) {
  if (!(std::isfinite(match_distance_m) && match_distance_m >= 0))
    throw std::invalid_argument("ScoreClusters: match_distance_m must be finite and >= 0, got " +
                                Num(match_distance_m));

  // Every admissible pair, nearest first (ties: cluster index, then truth index).
  struct Pair {
    double d;
    size_t cluster, truth;
    bool operator<(const Pair& o) const { return std::tie(d, cluster, truth) < std::tie(o.d, o.cluster, o.truth); }
  };
  std::vector<Pair> pairs;
  for (size_t c = 0; c < clusters.size(); ++c)
    for (size_t t = 0; t < truth.size(); ++t) {
      const double d = (clusters[c].centroid_m.head<2>() - truth[t].centre_m.head<2>()).norm();
      if (d <= match_distance_m) pairs.push_back({d, c, t});  // NaN centroids never match
    }
  std::sort(pairs.begin(), pairs.end());

  // Greedy: take a pair when both ends are still free.
  std::vector<uint8_t> cluster_used(clusters.size(), 0), truth_used(truth.size(), 0);
  DetectionScore s;
  double sum_m = 0;
  for (const Pair& p : pairs) {
    if (cluster_used[p.cluster] || truth_used[p.truth]) continue;
    cluster_used[p.cluster] = truth_used[p.truth] = 1;
    ++s.true_positives;
    sum_m += p.d;
    s.max_position_error_m = std::max(s.max_position_error_m, p.d);
  }
  s.false_positives = clusters.size() - s.true_positives;
  s.false_negatives = truth.size() - s.true_positives;
  s.precision = clusters.empty() ? 1.0 : double(s.true_positives) / double(clusters.size());
  s.recall = truth.empty() ? 1.0 : double(s.true_positives) / double(truth.size());
  s.mean_position_error_m = s.true_positives ? sum_m / double(s.true_positives) : 0.0;
  return s;
}

}  // namespace platoon::sensors
