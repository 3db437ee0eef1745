// Road projection benchmark: (x, y) -> road, s, t, lane on a generated network of junction-free chained
// roads (~50 km by default), through the projection grid (RoadNetwork::Project) against the brute force
// that tries every sample of every road (RoadNetwork::ProjectBruteForce), in the same run, on one core.
// Also the network build time (every road's samples and grid, and the network grid).
#include "platoon/road/road_generator.hpp"
#include "platoon/road/road_network.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <random>
#include <vector>

using namespace platoon;
using namespace platoon::road;

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
}

// `roads` generated roads of `length_m` each, chained end to start (one continuous winding road).
std::vector<RoadDef> Chain(uint64_t seed, int roads, double length_m) {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = seed;
  return GenerateRoadChain(g, roads, length_m);
}

struct Timing {
  double queries_per_s = 0;
  double checksum = 0;
};

template <class F>
Timing Time(const std::vector<Vec3>& points, size_t count, F&& project) {
  Timing t;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < count; ++i) t.checksum += project(points[i % points.size()]).s_m;
  t.queries_per_s = static_cast<double>(count) / Seconds(t0);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"road_index_bench: road projection queries per second on one core, grid against brute force\n"
               "in the same run, on a generated network of chained roads."};
  double length_m = 50000;
  int roads = 10;
  size_t queries = 400000, brute_queries = 2000;
  double t_max_m = 10.0, far_m = 1000.0;
  uint64_t seed = 1;
  app.add_option("--length", length_m, "Network length, m (split evenly into --roads roads)")->capture_default_str();
  app.add_option("--roads", roads, "Roads in the chain")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--queries", queries, "Grid queries per measurement")->capture_default_str();
  app.add_option("--brute-queries", brute_queries, "Brute-force queries per measurement")->capture_default_str();
  app.add_option("--t-max", t_max_m, "Near queries: |t| up to this, m")->capture_default_str();
  app.add_option("--far", far_m, "Far queries: this far from a random road point, m")->capture_default_str();
  app.add_option("--seed", seed, "Generator seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::vector<RoadDef> defs = Chain(seed, roads, length_m / roads);
  const auto t_build = Clock::now();
  const RoadNetwork net(defs);
  const double build_s = Seconds(t_build);
  double total_m = 0;
  for (const Road& r : net.Roads()) total_m += r.Length();
  std::printf("road_index_bench: %zu roads, %.1f km, network build %.1f ms\n", net.Roads().size(), total_m / 1000,
              build_s * 1e3);

  // Query points: near (a random road, s uniform, |t| <= t_max_m) and far (far_m from a random road point).
  std::mt19937_64 rng(seed + 1);
  std::vector<Vec3> near, far;
  for (int i = 0; i < 100000; ++i) {
    const Road& r = net.Roads()[rng() % net.Roads().size()];
    near.push_back(r.PointAt(Uniform(rng, 0, r.Length()), Uniform(rng, -t_max_m, t_max_m)));
    const double a = Uniform(rng, 0, 2 * std::numbers::pi);
    far.push_back(r.ReferencePoint(Uniform(rng, 0, r.Length())) + far_m * Vec3(std::cos(a), std::sin(a), 0));
  }

  // The grid against the brute force on the same points; the brute force's points are checked too.
  size_t mismatches = 0;
  for (size_t i = 0; i < brute_queries; ++i)
    for (const auto* set : {&near, &far}) {
      const Vec3& p = (*set)[i % set->size()];
      const RoadCoord a = net.Project(p), b = net.ProjectBruteForce(p);
      mismatches += a.road_id != b.road_id || std::abs(a.s_m - b.s_m) > 1e-9 || std::abs(a.t_m - b.t_m) > 1e-9;
    }
  std::printf("%-34s  %14s  %14s  %8s\n", "queries", "grid q/s", "brute q/s", "ratio");
  double sink = 0;
  for (const auto& [name, set] : {std::pair{"near (|t| <= t-max)", &near}, std::pair{"far (--far off, fallback)", &far}}) {
    const Timing grid = Time(*set, queries, [&](const Vec3& p) { return net.Project(p); });
    const Timing brute = Time(*set, brute_queries, [&](const Vec3& p) { return net.ProjectBruteForce(p); });
    sink += grid.checksum + brute.checksum;
    std::printf("%-34s  %14.0f  %14.0f  %7.1fx\n", name, grid.queries_per_s, brute.queries_per_s,
                grid.queries_per_s / brute.queries_per_s);
  }
  std::printf("grid vs brute force: %zu of %zu queries differ (s or t > 1e-9 m, or road)\n", mismatches,
              2 * brute_queries);
  // Printing the folded results keeps the compiler from discarding the queries.
  std::printf("checksum %.6f\n", sink);
  return mismatches == 0 ? 0 : 1;
}
