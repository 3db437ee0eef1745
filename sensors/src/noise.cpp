#include "platoon/sensors/noise.hpp"

#include <cmath>
#include <numbers>

namespace platoon::sensors {

double UniformOpenZero(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53; }

Vec3 StandardNormal3(std::mt19937_64& rng) {
  // Two Box-Muller pairs; the fourth value is dropped.
  const double r1 = std::sqrt(-2.0 * std::log(UniformOpenZero(rng)));
  const double t1 = 2.0 * std::numbers::pi * UniformOpenZero(rng);
  const double r2 = std::sqrt(-2.0 * std::log(UniformOpenZero(rng)));
  const double t2 = 2.0 * std::numbers::pi * UniformOpenZero(rng);
  return Vec3(r1 * std::cos(t1), r1 * std::sin(t1), r2 * std::cos(t2));
}

}  // namespace platoon::sensors
