// The percentile every benchmark reports: nearest rank of the sorted samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace platoon::bench {

/// The p-th percentile (p in [0, 100]) of `v` by nearest rank: the smallest sample with at least p % of
/// the samples at or below it; 0 for no samples.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  return v[std::min(v.size() - 1, static_cast<size_t>(std::max(rank, 1.0)) - 1)];
}

}  // namespace platoon::bench
