// Tests of sensors/src/noise.cpp: the ziggurat normal stream the lidar's range noise draws from.
#include "platoon/sensors/noise.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

TEST_CASE("noise: the ziggurat stream has the standard normal's moments, tails and distribution function") {
  constexpr int kN = 2'000'000;
  platoon::sensors::NormalStream stream(0x5EED);
  std::vector<double> z(kN);
  double sum = 0, sum2 = 0, sum4 = 0;
  int beyond_2 = 0, beyond_tail = 0, beyond_4 = 0, not_finite = 0;
  for (auto& v : z) {
    v = stream.Next();
    not_finite += !std::isfinite(v);
    sum += v;
    sum2 += v * v;
    sum4 += v * v * v * v;
    beyond_2 += std::abs(v) > 2.0;
    beyond_tail += std::abs(v) > 3.6541528853610088;  // drawn by the tail's own rejection loop
    beyond_4 += std::abs(v) > 4.0;                     // ... and its shape
  }
  REQUIRE(not_finite == 0);
  const double mean = sum / kN, var = sum2 / kN - mean * mean, kurt = sum4 / kN / (var * var);
  // Each bound is 5 standard errors of the statistic for kN normal draws.
  const auto expect_count = [&](int got, double p) {
    const double e = p * kN, sd = std::sqrt(kN * p * (1 - p));
    CHECK_MESSAGE(std::abs(got - e) < 5 * sd, got, " draws, expected ", e, " +- ", sd);
  };
  MESSAGE("mean ", mean, ", variance ", var, ", kurtosis ", kurt, ", |z| > 2: ", beyond_2, ", |z| > 3.654: ", beyond_tail,
          ", |z| > 4: ", beyond_4);
  CHECK(std::abs(mean) < 5.0 / std::sqrt(kN));
  CHECK(std::abs(var - 1.0) < 5.0 * std::sqrt(2.0 / kN));
  CHECK(std::abs(kurt - 3.0) < 5.0 * std::sqrt(96.0 / kN));
  expect_count(beyond_2, std::erfc(2.0 / std::sqrt(2.0)));
  expect_count(beyond_tail, std::erfc(3.6541528853610088 / std::sqrt(2.0)));
  expect_count(beyond_4, std::erfc(4.0 / std::sqrt(2.0)));
  // Kolmogorov-Smirnov against the normal distribution function: below the 0.1 % critical value.
  std::sort(z.begin(), z.end());
  double d = 0;
  for (int i = 0; i < kN; ++i) {
    const double f = NormalCdf(z[i]);
    d = std::max({d, f - static_cast<double>(i) / kN, static_cast<double>(i + 1) / kN - f});
  }
  MESSAGE("Kolmogorov-Smirnov D = ", d, " (0.1 % critical value ", 1.949 / std::sqrt(kN), ")");
  CHECK(d < 1.949 / std::sqrt(kN));
}

TEST_CASE("noise: a seed gives the same normal stream every time, another seed a different one") {
  platoon::sensors::NormalStream a(42), b(42), c(43);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.Next(), y = b.Next(), w = c.Next();
    CHECK(x == y);
    same += x == w;
  }
  CHECK(same == 0);
}
