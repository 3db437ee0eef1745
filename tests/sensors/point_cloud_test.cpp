// Point-cloud processing (sensors/src/point_cloud.cpp) and PCD export/import (sensors/src/pcd.cpp).
#include "../support/session_fixture.hpp"
#include "platoon/sensors/pcd.hpp"
#include "platoon/sensors/ply.hpp"
#include "platoon/sensors/point_cloud.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

// ---- Deterministic random numbers from the raw engine (std:: distributions differ between libraries).
double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1p-53;
}
double Normal(std::mt19937_64& rng, double sigma) {
  const double u1 = static_cast<double>((rng() >> 11) + 1) * 0x1p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng() >> 11) * 0x1p-53;
  return sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

CloudPoint Pt(double x, double y, double z, uint32_t entity = 0, uint32_t cls = 0) {
  CloudPoint p;
  p.x_m = static_cast<float>(x);
  p.y_m = static_cast<float>(y);
  p.z_m = static_cast<float>(z);
  p.entity_id = entity;
  p.class_id = cls;
  return p;
}

// Surface samples of a box standing on `ground(x, y)`: four side faces from the local ground up to
// top_z, and the top face, every `step_m`, with isotropic noise `sigma_m`.
template <typename GroundFn>
void AddBox(std::vector<CloudPoint>& out, double x0, double x1, double y0, double y1, double top_z, uint32_t entity,
            double step_m, double sigma_m, GroundFn ground, std::mt19937_64& rng) {
  auto emit = [&](double x, double y, double z) {
    out.push_back(Pt(x + Normal(rng, sigma_m), y + Normal(rng, sigma_m), z + Normal(rng, sigma_m), entity, 2));
  };
  auto side = [&](double xa, double ya, double xb, double yb) {
    const double len = std::hypot(xb - xa, yb - ya);
    for (double s = 0; s < len; s += step_m) {
      const double x = xa + (xb - xa) * s / len, y = ya + (yb - ya) * s / len;
      for (double z = ground(x, y); z <= top_z; z += step_m) emit(x, y, z);
    }
  };
  side(x0, y0, x1, y0);
  side(x1, y0, x1, y1);
  side(x1, y1, x0, y1);
  side(x0, y1, x0, y0);
  for (double x = x0 + step_m; x < x1; x += 2 * step_m)
    for (double y = y0 + step_m; y < y1; y += 2 * step_m) emit(x, y, top_z);
}

// Closed axis-aligned box surface (all six faces) every `step_m`, no noise.
void AddClosedBox(std::vector<CloudPoint>& out, Vec3 lo, Vec3 hi, double step_m, uint32_t entity) {
  for (double x = lo.x(); x <= hi.x() + 1e-9; x += step_m)
    for (double y = lo.y(); y <= hi.y() + 1e-9; y += step_m)
      for (double z = lo.z(); z <= hi.z() + 1e-9; z += step_m) {
        const bool face = std::abs(x - lo.x()) < 1e-9 || std::abs(x - hi.x()) < 1e-6 || std::abs(y - lo.y()) < 1e-9 ||
                          std::abs(y - hi.y()) < 1e-6 || std::abs(z - lo.z()) < 1e-9 || std::abs(z - hi.z()) < 1e-6;
        if (face) out.push_back(Pt(x, y, z, entity, 3));
      }
}

// Reference clustering: O(n^2) union-find over all pairs.
std::vector<std::vector<uint32_t>> BruteForceComponents(const std::vector<CloudPoint>& pts, double tol) {
  std::vector<uint32_t> parent(pts.size());
  for (uint32_t i = 0; i < pts.size(); ++i) parent[i] = i;
  auto find = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x];
    return x;
  };
  for (uint32_t i = 0; i < pts.size(); ++i)
    for (uint32_t j = i + 1; j < pts.size(); ++j) {
      const double dx = double(pts[i].x_m) - pts[j].x_m, dy = double(pts[i].y_m) - pts[j].y_m,
                   dz = double(pts[i].z_m) - pts[j].z_m;
      if (dx * dx + dy * dy + dz * dz <= tol * tol) {
        const uint32_t a = find(i), b = find(j);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
  std::vector<std::vector<uint32_t>> comps(pts.size());
  for (uint32_t i = 0; i < pts.size(); ++i) comps[find(i)].push_back(i);
  std::erase_if(comps, [](const auto& c) { return c.empty(); });
  return comps;  // ordered by root = smallest index
}

// Values the ASCII format must reproduce exactly (NaN only as NaN).
bool AsciiEqual(const CloudPoint& a, const CloudPoint& b) {
  auto same = [](float x, float y) {
    return std::isnan(x) ? std::isnan(y) : std::bit_cast<uint32_t>(x) == std::bit_cast<uint32_t>(y);
  };
  return same(a.x_m, b.x_m) && same(a.y_m, b.y_m) && same(a.z_m, b.z_m) && same(a.intensity_w, b.intensity_w) &&
         same(a.snr, b.snr) && same(a.time_offset_s, b.time_offset_s) && a.ring == b.ring && a.echo == b.echo &&
         a.source == b.source && a.entity_id == b.entity_id && a.class_id == b.class_id &&
         a.reflectivity == b.reflectivity && a.return_type == b.return_type;
}

// A cloud with ordinary lidar-like values plus every float and integer corner case.
std::vector<CloudPoint> SampleCloud(size_t n) {
  std::mt19937_64 rng(42);
  std::vector<CloudPoint> pts;
  for (size_t i = 0; i < n; ++i) {
    CloudPoint p = Pt(Uniform(rng, -80, 80), Uniform(rng, -80, 80), Uniform(rng, -3, 5));
    p.intensity_w = static_cast<float>(Uniform(rng, 1e-9, 1e-6));
    p.snr = static_cast<float>(Uniform(rng, 5, 500));
    p.time_offset_s = static_cast<float>(Uniform(rng, 0, 0.1));
    p.ring = static_cast<uint16_t>(rng() % 128);
    p.echo = static_cast<uint8_t>(rng() % 3);
    p.source = static_cast<uint8_t>(rng() % 4);
    p.entity_id = static_cast<uint32_t>(rng() % 1000);
    p.class_id = static_cast<uint16_t>(rng() % 20);
    p.reflectivity = static_cast<uint8_t>(rng() % 256);
    p.return_type = static_cast<uint8_t>(rng() % 5);
    pts.push_back(p);
  }
  CloudPoint c;
  c.x_m = -0.0f;
  c.y_m = std::numeric_limits<float>::denorm_min();
  c.z_m = std::numeric_limits<float>::max();
  c.intensity_w = std::numeric_limits<float>::lowest();
  c.snr = std::numeric_limits<float>::infinity();
  c.time_offset_s = -std::numeric_limits<float>::infinity();
  c.ring = 0xffff;
  c.echo = 0xff;
  c.source = 0xff;
  c.entity_id = 0xffffffffu;
  c.class_id = 0xffff;
  c.reflectivity = 0xff;
  c.return_type = 0xff;
  pts.push_back(c);
  c = CloudPoint{};
  c.x_m = std::numeric_limits<float>::quiet_NaN();
  c.y_m = std::numeric_limits<float>::min();
  c.z_m = 0.1f;
  c.intensity_w = 1.0f / 3.0f;
  c.snr = 16777217.0f;
  c.time_offset_s = 1e-38f;
  pts.push_back(c);
  return pts;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void Spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}
std::vector<std::string> Lines(const std::string& text, size_t count) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (out.size() < count && pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

// Runs `f`, expects std::runtime_error, returns its message.
template <typename F>
std::string RuntimeErrorOf(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  FAIL("expected std::runtime_error");
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------------

TEST_CASE("point cloud: CloudPoint is a packed 36-byte record laid out like a binary PCD row") {
  static_assert(sizeof(CloudPoint) == 36);
  CHECK(offsetof(CloudPoint, x_m) == 0);
  CHECK(offsetof(CloudPoint, time_offset_s) == 20);
  CHECK(offsetof(CloudPoint, ring) == 24);
  CHECK(offsetof(CloudPoint, class_id) == 32);
  CHECK(offsetof(CloudPoint, reflectivity) == 34);
  CHECK(offsetof(CloudPoint, return_type) == 35);
  // On a little-endian host the wire blob (memcpy of the struct) is byte for byte the PCD row.
  if constexpr (std::endian::native == std::endian::little) {
    const std::vector<CloudPoint> pts = SampleCloud(3);
    const std::string file = EncodePcd(pts, PcdFormat::kBinary);
    const std::string rows = file.substr(file.size() - pts.size() * sizeof(CloudPoint));
    CHECK(std::memcmp(rows.data(), pts.data(), rows.size()) == 0);
  }
}

TEST_CASE("point cloud: ToCloudPoint copies every lidar field and tags the source") {
  LidarPoint l;
  l.x_m = 1.5f, l.y_m = -2.25f, l.z_m = 0.125f;
  l.intensity_w = 3e-8f, l.snr = 42.0f, l.ring = 17, l.column = 900, l.time_offset_s = 0.0125f;
  l.echo = 2, l.entity_id = 77, l.class_id = 5, l.reflectivity = 180, l.return_type = 3;
  const CloudPoint c = ToCloudPoint(l, 3);
  CHECK(c.x_m == l.x_m);
  CHECK(c.y_m == l.y_m);
  CHECK(c.z_m == l.z_m);
  CHECK(c.intensity_w == l.intensity_w);
  CHECK(c.snr == l.snr);
  CHECK(c.time_offset_s == l.time_offset_s);
  CHECK(c.ring == 17);
  CHECK(c.echo == 2);
  CHECK(c.source == 3);
  CHECK(c.entity_id == 77);
  CHECK(c.class_id == 5);
  CHECK(c.reflectivity == 180);
  CHECK(c.return_type == 3);
}

TEST_CASE("point cloud: PackLidarPoints writes the records ToCloudPoint and PackPointRecords would, byte for byte") {
  // Every field distinct in every point (bit patterns that a swapped or shifted field would change).
  std::vector<LidarPoint> scan(257);
  for (size_t i = 0; i < scan.size(); ++i) {
    LidarPoint& l = scan[i];
    const auto f = static_cast<float>(i);
    l.x_m = 1.5f + f, l.y_m = -2.25f - f, l.z_m = 0.125f * f, l.intensity_w = 3e-8f * (f + 1), l.snr = 42.0f + f;
    l.ring = static_cast<uint16_t>(1000 + i), l.column = static_cast<uint16_t>(60000 - i);
    l.time_offset_s = 0.0125f + 1e-4f * f, l.echo = static_cast<uint8_t>(i % 7);
    l.entity_id = 0x01020304u + static_cast<uint32_t>(i), l.class_id = 0xC0D0u - static_cast<uint32_t>(i);
    l.reflectivity = static_cast<uint8_t>(255 - i), l.return_type = static_cast<uint8_t>(i % 5);
  }
  for (const uint8_t source : {uint8_t{0}, uint8_t{3}, uint8_t{255}}) {
    std::vector<CloudPoint> via;
    for (const auto& l : scan) via.push_back(ToCloudPoint(l, source));
    const std::string expected = PackPointRecords(via);
    const std::string packed = PackLidarPoints(scan, source);
    REQUIRE(packed.size() == scan.size() * point_record::kStride);
    CHECK(packed == expected);
    // And read back as records: every field where it belongs.
    std::vector<PointRecord> back(scan.size());
    REQUIRE(ReadPointRecords(packed, static_cast<uint32_t>(scan.size()), point_record::kStride, back.data()));
    CHECK(back[200].ring == 1200);
    CHECK(back[200].echo == 200 % 7);
    CHECK(back[200].source == source);
    CHECK(back[200].class_id == 0xC0D0u - 200);
    CHECK(back[200].reflectivity == 55);
    CHECK(back[200].return_type == 0);
    CHECK(back[200].time_offset_s == scan[200].time_offset_s);
  }
  CHECK(PackLidarPoints({}, 1).empty());
}

TEST_CASE("point cloud: voxel downsample of a regular grid gives one point per voxel at its centroid") {
  // 4 x 3 x 2 unit voxels (including negative indices), 8 points at offsets {0.25, 0.75}^3 in each,
  // inserted in a scrambled order.
  std::vector<CloudPoint> pts;
  for (int vx = -2; vx < 2; ++vx)
    for (int vy = 0; vy < 3; ++vy)
      for (int vz = 0; vz < 2; ++vz)
        for (int o = 0; o < 8; ++o) {
          CloudPoint p = Pt(vx + 0.25 + 0.5 * (o & 1), vy + 0.25 + 0.5 * ((o >> 1) & 1), vz + 0.25 + 0.5 * (o >> 2));
          p.intensity_w = static_cast<float>(o);  // mean 3.5 in every voxel
          p.snr = static_cast<float>(10 * o);     // mean 35
          p.entity_id = static_cast<uint32_t>(100 + (vx + 2) * 6 + vy * 2 + vz);
          pts.push_back(p);
        }
  std::mt19937_64 rng(7);
  for (size_t i = pts.size() - 1; i > 0; --i) std::swap(pts[i], pts[rng() % (i + 1)]);

  const std::vector<CloudPoint> out = VoxelDownsample(pts, 1.0);
  REQUIRE(out.size() == 24);
  size_t k = 0;
  for (int vx = -2; vx < 2; ++vx)
    for (int vy = 0; vy < 3; ++vy)
      for (int vz = 0; vz < 2; ++vz, ++k) {  // ascending voxel key (i, j, k)
        CAPTURE(k);
        CHECK(out[k].x_m == vx + 0.5f);
        CHECK(out[k].y_m == vy + 0.5f);
        CHECK(out[k].z_m == vz + 0.5f);
        CHECK(out[k].intensity_w == 3.5f);
        CHECK(out[k].snr == 35.0f);
        CHECK(out[k].entity_id == static_cast<uint32_t>(100 + (vx + 2) * 6 + vy * 2 + vz));
      }
  // Twice as coarse: 2 x 2 x 1 voxels of edge 2 (x: [-2,0), [0,2); y: [0,2), [2,4) holding 2 or 1 unit rows).
  const std::vector<CloudPoint> coarse = VoxelDownsample(pts, 2.0);
  REQUIRE(coarse.size() == 4);
  CHECK(coarse[0].x_m == -1.0f);
  CHECK(coarse[0].y_m == 1.0f);
  CHECK(coarse[1].y_m == 2.5f);
  CHECK(coarse[3].x_m == 1.0f);
  CHECK(coarse[3].z_m == 1.0f);
  // Same input, same output, byte for byte.
  const std::vector<CloudPoint> again = VoxelDownsample(pts, 1.0);
  CHECK(std::memcmp(again.data(), out.data(), out.size() * sizeof(CloudPoint)) == 0);
}

TEST_CASE("point cloud: voxel downsample takes labels from the point nearest the centroid and drops non-finite points") {
  std::vector<CloudPoint> pts = {Pt(0.1, 0.1, 0.1, 1, 11), Pt(0.9, 0.9, 0.9, 2, 12), Pt(0.45, 0.5, 0.5, 3, 13),
                                 Pt(std::nan(""), 0.5, 0.5, 4, 14), Pt(0.5, std::numeric_limits<double>::infinity(), 0.5, 5, 15)};
  pts[2].ring = 9, pts[2].echo = 1, pts[2].source = 2, pts[2].time_offset_s = 0.03f;
  pts[0].intensity_w = 1.0f, pts[1].intensity_w = 2.0f, pts[2].intensity_w = 6.0f;
  const std::vector<CloudPoint> out = VoxelDownsample(pts, 1.0);
  REQUIRE(out.size() == 1);
  CHECK(out[0].x_m == doctest::Approx((0.1 + 0.9 + 0.45) / 3).epsilon(1e-6));
  CHECK(out[0].intensity_w == 3.0f);
  CHECK(out[0].entity_id == 3);
  CHECK(out[0].class_id == 13);
  CHECK(out[0].ring == 9);
  CHECK(out[0].echo == 1);
  CHECK(out[0].source == 2);
  CHECK(out[0].time_offset_s == 0.03f);
  CHECK(VoxelDownsample({}, 0.5).empty());
}

TEST_CASE("point cloud: voxel downsample rejects a voxel size that is not finite and positive") {
  const std::vector<CloudPoint> pts = {Pt(0, 0, 0)};
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(VoxelDownsample(pts, bad), std::invalid_argument);
    try {
      VoxelDownsample(pts, bad);
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("voxel_m") != std::string::npos);
    }
  }
}

TEST_CASE("point cloud: ground removal on flat and 5 % sloped noisy ground keeps two standing boxes") {
  // Ground: flat z = 0 for x < 0, a 5 % ramp for x >= 0; sigma 2 cm; 10 cm jittered grid over 40 m x 40 m.
  auto ground = [](double x, double) { return x < 0 ? 0.0 : 0.05 * x; };
  struct Footprint {
    double x0, x1, y0, y1, height;
    uint32_t entity;
  };
  const Footprint boxes[] = {{6.0, 10.0, 4.0, 6.0, 1.5, 1},     // car-sized, on the slope
                             {-9.0, -7.0, -7.0, -5.0, 2.5, 2}};  // tall, on the flat
  std::mt19937_64 rng(2024);
  std::vector<CloudPoint> pts;
  for (double x = -20; x < 20; x += 0.1)
    for (double y = -20; y < 20; y += 0.1) {
      const double px = x + Uniform(rng, -0.04, 0.04), py = y + Uniform(rng, -0.04, 0.04);
      bool under_box = false;
      for (const Footprint& b : boxes) under_box |= px > b.x0 && px < b.x1 && py > b.y0 && py < b.y1;
      if (!under_box) pts.push_back(Pt(px, py, ground(px, py) + Normal(rng, 0.02), 0, 1));
    }
  const size_t ground_count = pts.size();
  for (const Footprint& b : boxes)
    AddBox(pts, b.x0, b.x1, b.y0, b.y1, ground(b.x1, 0) + b.height, b.entity, 0.05, 0.005, ground, rng);
  const size_t box_count = pts.size() - ground_count;
  REQUIRE(box_count > 10000);

  const std::vector<uint8_t> mask = GroundMask(pts, DefaultGroundDef());
  REQUIRE(mask.size() == pts.size());
  size_t ground_removed = 0, box_kept = 0;
  for (size_t i = 0; i < ground_count; ++i) ground_removed += mask[i];
  for (size_t i = ground_count; i < pts.size(); ++i) box_kept += !mask[i];
  const double ground_fraction = double(ground_removed) / ground_count;
  const double box_fraction = double(box_kept) / box_count;
  CAPTURE(ground_count);
  CAPTURE(box_count);
  CAPTURE(ground_fraction);
  CAPTURE(box_fraction);
  CHECK(ground_fraction >= 0.99);
  CHECK(box_fraction >= 0.99);

  // SplitGround agrees with the mask and keeps input order.
  const GroundSplit split = SplitGround(pts, DefaultGroundDef());
  CHECK(split.ground.size() + split.obstacles.size() == pts.size());
  CHECK(split.ground.size() == static_cast<size_t>(std::count(mask.begin(), mask.end(), 1)));

  // Without the foot-of-structure step the bottom 20 cm of every wall would count as ground.
  GroundDef no_foot = DefaultGroundDef();
  no_foot.foot_cell_m = 0;
  const std::vector<uint8_t> plain = GroundMask(pts, no_foot);
  size_t box_kept_plain = 0;
  for (size_t i = ground_count; i < pts.size(); ++i) box_kept_plain += !plain[i];
  CHECK(double(box_kept_plain) / box_count < 0.95);
}

TEST_CASE("point cloud: ground removal does not take a wide roof without ground below it for ground") {
  // A 12 m x 3 m roof at 3.5 m (only its top seen, no walls), ground around it beyond a 0.5 m shadow.
  std::mt19937_64 rng(5);
  std::vector<CloudPoint> pts;
  for (double x = -10; x < 10; x += 0.1)
    for (double y = -6; y < 6; y += 0.1) {
      const bool shadow = x > -6.5 && x < 6.5 && y > -2.0 && y < 2.0;
      if (!shadow) pts.push_back(Pt(x, y, Normal(rng, 0.02), 0, 1));
    }
  const size_t ground_count = pts.size();
  for (double x = -6; x < 6; x += 0.1)
    for (double y = -1.5; y < 1.5; y += 0.1) pts.push_back(Pt(x, y, 3.5 + Normal(rng, 0.01), 9, 2));

  const std::vector<uint8_t> mask = GroundMask(pts, DefaultGroundDef());
  size_t ground_removed = 0, roof_as_ground = 0;
  for (size_t i = 0; i < ground_count; ++i) ground_removed += mask[i];
  for (size_t i = ground_count; i < pts.size(); ++i) roof_as_ground += mask[i];
  CHECK(double(ground_removed) / ground_count >= 0.99);
  CHECK(roof_as_ground == 0);

  // With an unlimited slope each cell is its own ground: the roof becomes ground.
  GroundDef steep = DefaultGroundDef();
  steep.max_slope = 100.0;
  const std::vector<uint8_t> steep_mask = GroundMask(pts, steep);
  CHECK(std::count(steep_mask.begin() + static_cast<long>(ground_count), steep_mask.end(), 1) > 0);

  // max_ground_z_m: an isolated platform far from any ground is its own ground unless capped.
  std::vector<CloudPoint> two = {Pt(0, 0, 0), Pt(0.5, 0.5, 0.05), Pt(40, 40, 5.0), Pt(40.5, 40.5, 5.05)};
  CHECK(GroundMask(two, DefaultGroundDef()) == std::vector<uint8_t>{1, 1, 1, 1});
  GroundDef capped = DefaultGroundDef();
  capped.max_ground_z_m = 2.0;
  CHECK(GroundMask(two, capped) == std::vector<uint8_t>{1, 1, 0, 0});
}

TEST_CASE("point cloud: ground definition is validated with a message naming the field") {
  CHECK(ValidateGroundDef(DefaultGroundDef()).empty());
  GroundDef d = DefaultGroundDef();
  d.cell_m = -1;
  CHECK(ValidateGroundDef(d).find("cell_m") != std::string::npos);
  CHECK_THROWS_AS(GroundMask(std::vector<CloudPoint>{Pt(0, 0, 0)}, d), std::invalid_argument);
  d = DefaultGroundDef();
  d.foot_height_m = 0.1;  // below height_above_min_m
  CHECK(ValidateGroundDef(d).find("foot_height_m") != std::string::npos);
  d = DefaultGroundDef();
  d.neighbour_radius_cells = 0;
  CHECK(ValidateGroundDef(d).find("neighbour_radius_cells") != std::string::npos);
  // Non-finite points are never ground.
  const std::vector<CloudPoint> odd = {Pt(0, 0, 0), Pt(std::nan(""), 0, 0), Pt(0, 0, std::nan(""))};
  CHECK(GroundMask(odd, DefaultGroundDef()) == std::vector<uint8_t>{1, 0, 0});
}

TEST_CASE("point cloud: clustering separates two boxes 3 m apart and merges them when the tolerance exceeds the gap") {
  // Box B (entity 9) first, so the cluster with the smallest index is B's; box A (entity 7) 3 m to its left.
  std::vector<CloudPoint> pts;
  AddClosedBox(pts, Vec3(5, 0, 0), Vec3(7, 1.5, 1.5), 0.1, 9);
  const size_t b_count = pts.size();
  AddClosedBox(pts, Vec3(0, 0, 0), Vec3(2, 1.5, 1.5), 0.1, 7);
  const size_t a_count = pts.size() - b_count;
  for (size_t i = b_count; i < b_count + 10; ++i) pts[i].entity_id = 9;  // a few mislabelled points in A
  pts.push_back(Pt(50, 50, 0, 4));   // isolated strays: below min_points
  pts.push_back(Pt(-50, 50, 0, 4));

  auto mean_of = [&](size_t from, size_t to) {
    Vec3 s = Vec3::Zero();
    for (size_t i = from; i < to; ++i) s += Vec3(pts[i].x_m, pts[i].y_m, pts[i].z_m);
    return Vec3(s / double(to - from));
  };
  const std::vector<Cluster> clusters = EuclideanClusters(pts, DefaultClusterDef());
  REQUIRE(clusters.size() == 2);
  CHECK(clusters[0].indices.size() == b_count);
  CHECK(clusters[1].indices.size() == a_count);
  CHECK(clusters[0].indices.front() == 0);
  CHECK(clusters[1].indices.front() == b_count);
  CHECK(std::is_sorted(clusters[1].indices.begin(), clusters[1].indices.end()));
  CHECK((clusters[0].centroid_m - mean_of(0, b_count)).norm() < 1e-9);
  CHECK((clusters[1].centroid_m - mean_of(b_count, b_count + a_count)).norm() < 1e-9);
  CHECK((clusters[0].centroid_m - Vec3(6, 0.75, 0.75)).norm() < 0.01);  // symmetric surface samples
  CHECK((clusters[1].centroid_m - Vec3(1, 0.75, 0.75)).norm() < 0.01);
  CHECK(clusters[0].majority_entity_id == 9);
  CHECK(clusters[1].majority_entity_id == 7);
  CHECK(clusters[1].majority_class_id == 3);
  CHECK((clusters[1].min_m - Vec3(0, 0, 0)).norm() < 1e-6);
  CHECK((clusters[1].max_m - Vec3(2, 1.5, 1.5)).norm() < 1e-6);

  ClusterDef wide = DefaultClusterDef();
  wide.tolerance_m = 3.5;
  const std::vector<Cluster> merged = EuclideanClusters(pts, wide);
  REQUIRE(merged.size() == 1);
  CHECK(merged[0].indices.size() == a_count + b_count);
  REQUIRE(a_count == b_count);
  CHECK(merged[0].majority_entity_id == 9);  // b_count + 10 labels of 9 against a_count - 10 of 7

  // Size limits drop whole components.
  ClusterDef small_only = DefaultClusterDef();
  small_only.max_points = b_count - 1;
  CHECK(EuclideanClusters(pts, small_only).empty());
  ClusterDef singles = DefaultClusterDef();
  singles.min_points = 1;
  CHECK(EuclideanClusters(pts, singles).size() == 4);
}

TEST_CASE("point cloud: clustering links points exactly at the tolerance and matches an all-pairs reference") {
  const std::vector<CloudPoint> chain = {Pt(0, 0, 0), Pt(0.5, 0, 0), Pt(1.0, 0, 0), Pt(2.0, 0, 0)};
  ClusterDef d = DefaultClusterDef();
  d.min_points = 1;
  const std::vector<Cluster> c = EuclideanClusters(chain, d);
  REQUIRE(c.size() == 2);
  CHECK(c[0].indices == std::vector<uint32_t>{0, 1, 2});
  CHECK(c[1].indices == std::vector<uint32_t>{3});

  std::mt19937_64 rng(11);
  std::vector<CloudPoint> pts;
  for (int i = 0; i < 1500; ++i) pts.push_back(Pt(Uniform(rng, -5, 5), Uniform(rng, -5, 5), Uniform(rng, 0, 2)));
  pts.push_back(Pt(std::nan(""), 0, 0));  // never clustered
  for (double tol : {0.25, 0.4, 0.7}) {
    CAPTURE(tol);
    const auto reference = BruteForceComponents(std::vector<CloudPoint>(pts.begin(), pts.end() - 1), tol);
    d.tolerance_m = tol;
    const std::vector<Cluster> got = EuclideanClusters(pts, d);
    REQUIRE(got.size() == reference.size());
    bool same = true;
    for (size_t k = 0; k < got.size(); ++k) same &= got[k].indices == reference[k];
    CHECK(same);
  }
  ClusterDef bad = DefaultClusterDef();
  bad.tolerance_m = 0;
  CHECK(ValidateClusterDef(bad).find("tolerance_m") != std::string::npos);
  CHECK_THROWS_AS(EuclideanClusters(pts, bad), std::invalid_argument);
  bad = DefaultClusterDef();
  bad.max_points = 1;
  CHECK(ValidateClusterDef(bad).find("max_points") != std::string::npos);
}

TEST_CASE("point cloud: scoring matches greedily by x-y distance with known TP, FP and FN") {
  auto cluster_at = [](double x, double y, double z) {
    Cluster c;
    c.centroid_m = Vec3(x, y, z);
    return c;
  };
  const std::vector<sensors::TruthObject> truth = {{1, Vec3(0, 0, 0), Vec3(4, 2, 1.5)},
                                          {2, Vec3(1, 0, 0), Vec3(4, 2, 1.5)},
                                          {3, Vec3(10, 10, 0), Vec3(4, 2, 1.5)}};  // nothing near: FN
  const std::vector<Cluster> clusters = {
      cluster_at(0.6, 0, 5.0),   // 0.6 from T1 (z ignored), 0.4 from T2 -- but T2 goes to the 0.2 pair
      cluster_at(1.2, 0, 0),     // 0.2 from T2: the nearest pair overall
      cluster_at(-20, 0, 0),     // far from everything: FP
      cluster_at(1.0, 0.9, 0)};  // 0.9 from T2 (taken), 1.35 from T1 (too far): FP
  const DetectionScore s = ScoreClusters(clusters, truth, 1.0);
  CHECK(s.true_positives == 2);
  CHECK(s.false_positives == 2);
  CHECK(s.false_negatives == 1);
  CHECK(s.precision == doctest::Approx(0.5));
  CHECK(s.recall == doctest::Approx(2.0 / 3.0));
  CHECK(s.mean_position_error_m == doctest::Approx(0.4));
  CHECK(s.max_position_error_m == doctest::Approx(0.6));

  // Empty cases: 0/0 is 1 (no false detection made, nothing missed).
  const DetectionScore none = ScoreClusters({}, {}, 1.0);
  CHECK(none.precision == 1.0);
  CHECK(none.recall == 1.0);
  CHECK(none.mean_position_error_m == 0.0);
  const DetectionScore missed = ScoreClusters({}, truth, 1.0);
  CHECK(missed.false_negatives == 3);
  CHECK(missed.precision == 1.0);
  CHECK(missed.recall == 0.0);
  const DetectionScore ghosts = ScoreClusters(clusters, {}, 1.0);
  CHECK(ghosts.false_positives == 4);
  CHECK(ghosts.precision == 0.0);
  CHECK(ghosts.recall == 1.0);
  CHECK_THROWS_AS(ScoreClusters(clusters, truth, -1.0), std::invalid_argument);
}

TEST_CASE("point cloud: clusters of a sampled scene score perfectly against their boxes") {
  std::vector<CloudPoint> pts;
  AddClosedBox(pts, Vec3(0, 0, 0), Vec3(4, 2, 1.5), 0.1, 1);
  AddClosedBox(pts, Vec3(10, -1, 0), Vec3(12, 1, 2.5), 0.1, 2);
  const std::vector<Cluster> clusters = EuclideanClusters(pts, DefaultClusterDef());
  const std::vector<sensors::TruthObject> truth = {{1, Vec3(2, 1, 0.75), Vec3(4, 2, 1.5)}, {2, Vec3(11, 0, 1.25), Vec3(2, 2, 2.5)}};
  const DetectionScore s = ScoreClusters(clusters, truth, 1.0);
  CHECK(s.true_positives == 2);
  CHECK(s.precision == 1.0);
  CHECK(s.recall == 1.0);
  CHECK(s.max_position_error_m < 0.01);
}

// ---------------------------------------------------------------------------------------------------

TEST_CASE("pcd: header follows PCD 0.7 line by line") {
  testing::TempDir dir;
  const std::vector<CloudPoint> pts = SampleCloud(5);
  Pose vp;
  vp.position_m = Vec3(1.5, -2, 0.25);
  for (PcdFormat f : {PcdFormat::kAscii, PcdFormat::kBinary}) {
    const std::string path = dir.Path() + (f == PcdFormat::kAscii ? "/a.pcd" : "/b.pcd");
    WritePcd(path, pts, f, vp);
    const std::string text = Slurp(path);
    const std::vector<std::string> expected = {
        "# .PCD v0.7 - Point Cloud Data file format",
        "VERSION 0.7",
        "FIELDS x y z power snr t ring echo source entity class intensity return_type",
        "SIZE 4 4 4 4 4 4 2 1 1 4 2 1 1",
        "TYPE F F F F F F U U U U U U U",
        "COUNT 1 1 1 1 1 1 1 1 1 1 1 1 1",
        "WIDTH 7",
        "HEIGHT 1",
        "VIEWPOINT 1.5 -2 0.25 1 0 0 0",
        "POINTS 7",
        f == PcdFormat::kAscii ? "DATA ascii" : "DATA binary",
    };
    const std::vector<std::string> got = Lines(text, expected.size());
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i] == expected[i]);
    }
    size_t header_bytes = 0;
    for (const std::string& l : expected) header_bytes += l.size() + 1;
    if (f == PcdFormat::kBinary) {
      CHECK(text.size() == header_bytes + 7 * 36);
      // Row 0 field by field, little-endian, at the offsets SIZE implies.
      const char* row = text.data() + header_bytes;
      uint32_t u32 = 0;
      std::memcpy(&u32, row + 0, 4);
      CHECK(std::bit_cast<float>(u32) == pts[0].x_m);
      std::memcpy(&u32, row + 20, 4);
      CHECK(std::bit_cast<float>(u32) == pts[0].time_offset_s);
      uint16_t ring = 0;
      std::memcpy(&ring, row + 24, 2);
      CHECK(ring == pts[0].ring);
      CHECK(static_cast<uint8_t>(row[26]) == pts[0].echo);
      CHECK(static_cast<uint8_t>(row[27]) == pts[0].source);
      std::memcpy(&ring, row + 32, 2);
      CHECK(ring == pts[0].class_id);
      CHECK(static_cast<uint8_t>(row[34]) == pts[0].reflectivity);
      CHECK(static_cast<uint8_t>(row[35]) == pts[0].return_type);
    } else {
      // 7 data lines of 13 values each, then the end of the file.
      const std::vector<std::string> all = Lines(text, 100);
      CHECK(all.size() == expected.size() + 7);
      CHECK(text.back() == '\n');
    }
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  }
}

TEST_CASE("pcd: binary round trip is bit-exact and ascii reproduces every float") {
  testing::TempDir dir;
  const std::vector<CloudPoint> pts = SampleCloud(2000);
  Pose vp;
  vp.position_m = Vec3(0.1, -7.25, 1.8);
  vp.orientation = Quat(Eigen::AngleAxisd(0.3, Vec3(0.2, -0.4, 1).normalized()));
  Pose read_vp;

  const std::string bin = dir.Path() + "/cloud_bin.pcd";
  WritePcd(bin, pts, PcdFormat::kBinary, vp);
  const std::vector<CloudPoint> b = ReadPcd(bin, &read_vp);
  REQUIRE(b.size() == pts.size());
  CHECK(std::memcmp(b.data(), pts.data(), pts.size() * sizeof(CloudPoint)) == 0);
  CHECK(read_vp == vp);

  const std::string asc = dir.Path() + "/cloud_ascii.pcd";
  WritePcd(asc, pts, PcdFormat::kAscii, vp);
  const std::vector<CloudPoint> a = ReadPcd(asc, &read_vp);
  REQUIRE(a.size() == pts.size());
  size_t equal = 0;
  for (size_t i = 0; i < pts.size(); ++i) equal += AsciiEqual(a[i], pts[i]);
  CHECK(equal == pts.size());
  CHECK(std::isnan(a.back().x_m));
  CHECK(std::signbit(a[a.size() - 2].x_m));  // -0 survives as -0
  CHECK(read_vp == vp);

  // Overwriting an existing file; an empty cloud; the in-memory encoder writes the same bytes.
  WritePcd(bin, std::vector<CloudPoint>{}, PcdFormat::kBinary);
  CHECK(ReadPcd(bin).empty());
  WritePcd(asc, pts, PcdFormat::kAscii, vp);
  CHECK(Slurp(asc) == EncodePcd(pts, PcdFormat::kAscii, vp));
  for (const auto& entry : std::filesystem::directory_iterator(dir.Path()))
    CHECK(entry.path().extension() != ".tmp");
}

TEST_CASE("pcd: write failure names the path and the system error") {
  const std::string path = "/nonexistent-platoon-dir/cloud.pcd";
  const std::string msg = RuntimeErrorOf([&] { WritePcd(path, SampleCloud(3), PcdFormat::kBinary); });
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("No such file or directory") != std::string::npos);
  const std::string missing = RuntimeErrorOf([&] { ReadPcd(path); });
  CHECK(missing.find(path) != std::string::npos);
  CHECK(missing.find("No such file or directory") != std::string::npos);
}

TEST_CASE("pcd: truncated, garbage and malformed files give an exception naming the file") {
  testing::TempDir dir;
  const std::vector<CloudPoint> pts = SampleCloud(20);
  const std::string bin_text = EncodePcd(pts, PcdFormat::kBinary);
  const std::string asc_text = EncodePcd(pts, PcdFormat::kAscii);
  const std::string path = dir.Path() + "/bad.pcd";
  auto error_for = [&](const std::string& contents) {
    Spit(path, contents);
    const std::string msg = RuntimeErrorOf([&] { ReadPcd(path); });
    CHECK(msg.find(path) != std::string::npos);
    return msg;
  };
  auto replaced = [](std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };

  CHECK(error_for(bin_text.substr(0, bin_text.size() - 10)).find("truncated") != std::string::npos);
  CHECK(error_for(bin_text + "xx").find("unexpected bytes") != std::string::npos);
  const size_t last_line = asc_text.rfind('\n', asc_text.size() - 2);
  CHECK(error_for(asc_text.substr(0, last_line + 1)).find("truncated") != std::string::npos);
  CHECK(error_for(asc_text.substr(0, asc_text.size() - 3)).find("truncated") != std::string::npos);
  CHECK(error_for(replaced(asc_text, " entity ", " entiti ")).find("unknown field 'entiti'") != std::string::npos);
  CHECK(error_for(replaced(asc_text, " return_type\n", "\n")).find("missing 'return_type'") != std::string::npos);
  CHECK(error_for(replaced(asc_text, "VERSION 0.7", "VERSION 0.6")).find("VERSION") != std::string::npos);
  CHECK(error_for(replaced(asc_text, "TYPE F F F", "TYPE F I F")).find("TYPE of field 'y'") != std::string::npos);
  CHECK(error_for(replaced(bin_text, "DATA binary", "DATA binary_compressed")).find("binary_compressed") !=
        std::string::npos);
  CHECK(error_for(replaced(asc_text, "POINTS 22", "POINTS 23")).find("does not match POINTS") != std::string::npos);
  CHECK(error_for(replaced(asc_text, "HEIGHT 1\n", "")).find("HEIGHT") != std::string::npos);
  CHECK(error_for(replaced(asc_text, "WIDTH 22", "WIDTH 22\nBOGUS 1")).find("unknown header keyword 'BOGUS'") !=
        std::string::npos);
  // A bad value in the first data row (line 12): the message names the line and the field.
  {
    const size_t row = asc_text.find("DATA ascii\n") + 11;
    std::string bad = asc_text;
    bad.replace(row, bad.find(' ', row) - row, "abc");
    const std::string msg = error_for(bad);
    CHECK(msg.find(path + ":12:") != std::string::npos);
    CHECK(msg.find("field 'x'") != std::string::npos);
  }
  {
    std::string bad = asc_text;
    const size_t row_end = bad.find('\n', bad.find("DATA ascii\n") + 11);
    bad.insert(row_end, " 7");
    CHECK(error_for(bad).find("expected 13 values, got 14") != std::string::npos);
  }
  // Binary garbage and an empty file.
  std::mt19937_64 rng(99);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
  error_for(garbage);
  error_for("");
  error_for(std::string(100, '\n'));
}

TEST_CASE("pcd: every truncation and random corruption is rejected cleanly or parsed, never a crash") {
  const std::vector<CloudPoint> pts = SampleCloud(6);
  for (PcdFormat f : {PcdFormat::kAscii, PcdFormat::kBinary}) {
    const std::string full = EncodePcd(pts, f);
    // Every strict prefix is an error.
    size_t rejected = 0;
    for (size_t len = 0; len < full.size(); ++len) {
      try {
        ParsePcd(std::string_view(full).substr(0, len), "prefix.pcd");
      } catch (const std::runtime_error& e) {
        rejected += std::string(e.what()).find("prefix.pcd") != std::string::npos;
      }
    }
    CHECK(rejected == full.size());
    // Random byte corruptions: a parsed cloud or a std::runtime_error, nothing else.
    std::mt19937_64 rng(f == PcdFormat::kAscii ? 1 : 2);
    size_t other = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::string s = full;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
      try {
        const std::vector<CloudPoint> got = ParsePcd(s, "fuzz.pcd");
        other += got.size() != pts.size();  // a parse that succeeds has the declared count
      } catch (const std::runtime_error&) {
      } catch (...) {
        ++other;
      }
    }
    CHECK(other == 0);
  }
}

TEST_CASE("pcd: files of the earlier 11-field layout still read with reflectivity and return type 0") {
  // The layout of builds before the reflectivity field: intensity = received power, class uint32.
  const std::string header =
      "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
      "FIELDS x y z intensity snr t ring echo source entity class\nSIZE 4 4 4 4 4 4 2 1 1 4 4\n"
      "TYPE F F F F F F U U U U U\nCOUNT 1 1 1 1 1 1 1 1 1 1 1\nWIDTH 2\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\n";
  const std::vector<CloudPoint> pts = SampleCloud(1);  // one ordinary point, then the corner cases
  std::vector<CloudPoint> old = {pts[0], pts[0]};
  old[1].class_id = 65535;
  for (CloudPoint& p : old) p.reflectivity = 0, p.return_type = 0;  // what a layout-1 row's upper class bytes hold
  // Binary: the rows are the 36-byte records with a uint32 class.
  std::string bin = header + "DATA binary\n";
  for (const CloudPoint& p : old) {
    char row[36];
    WritePointRecord(p, row);
    const uint32_t cls = p.class_id;
    std::memcpy(row + 32, &cls, 4);
    bin.append(row, 36);
  }
  const std::vector<CloudPoint> b = ParsePcd(bin, "old.pcd");
  REQUIRE(b.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(AsciiEqual(b[i], old[i]));
  // A class above 16 bits cannot be read into this build's record: a clear error, not a wrong class.
  std::string big = bin;
  big[big.size() - 36 + 34] = 1;
  CHECK(RuntimeErrorOf([&] { ParsePcd(big, "old.pcd"); }).find("16-bit class") != std::string::npos);
  // Ascii: 11 values per row.
  std::string asc = header + "DATA ascii\n";
  for (const CloudPoint& p : old)
    asc += fmt::format("{} {} {} {} {} {} {} {} {} {} {}\n", p.x_m, p.y_m, p.z_m, p.intensity_w, p.snr, p.time_offset_s,
                       p.ring, p.echo, p.source, p.entity_id, p.class_id);
  const std::vector<CloudPoint> a = ParsePcd(asc, "old.pcd");
  REQUIRE(a.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(AsciiEqual(a[i], old[i]));
  CHECK(RuntimeErrorOf([&] { ParsePcd(header + "DATA ascii\n0 0 0 0 0 0 0 0 0 0 65536\n0 0 0 0 0 0 0 0 0 0 1\n", "old.pcd"); })
            .find("16-bit integer") != std::string::npos);
}

TEST_CASE("ply: binary little-endian header names the record fields and each row is a record byte for byte") {
  const std::vector<CloudPoint> pts = SampleCloud(4);
  Pose vp;
  vp.position_m = Vec3(1.5, 0, 1.75);
  const std::string ply = EncodePly(pts, vp);
  const std::string end = "end_header\n";
  const size_t body = ply.find(end);
  REQUIRE(body != std::string::npos);
  const std::string header = ply.substr(0, body + end.size());
  CHECK(header.starts_with("ply\nformat binary_little_endian 1.0\n"));
  CHECK(header.find("comment viewpoint 1.5 0 1.75 1 0 0 0\n") != std::string::npos);
  CHECK(header.find("element vertex " + std::to_string(pts.size()) + "\n") != std::string::npos);
  // One property per record field, in record order, their sizes adding up to the stride.
  const std::vector<std::pair<std::string, size_t>> props = {
      {"float x", 4},      {"float y", 4},     {"float z", 4},      {"float power", 4},    {"float snr", 4},
      {"float t", 4},      {"ushort ring", 2}, {"uchar echo", 1},   {"uchar source", 1},   {"uint entity", 4},
      {"ushort class", 2}, {"uchar intensity", 1}, {"uchar return_type", 1}};
  size_t at = 0, bytes = 0;
  for (const auto& [prop, size] : props) {
    const size_t p = header.find("property " + prop + "\n", at);
    CAPTURE(prop);
    REQUIRE(p != std::string::npos);
    at = p;
    bytes += size;
  }
  CHECK(bytes == point_record::kStride);
  CHECK(ply.size() - header.size() == pts.size() * point_record::kStride);
  CHECK(ply.substr(header.size()) == PackPointRecords(pts));
}
