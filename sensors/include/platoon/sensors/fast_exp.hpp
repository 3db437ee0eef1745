#pragma once
/// The exponential of the lidar's atmospheric transmission, tau = e^(-alpha d), in a form a compiler can
/// vectorise: no call, no branch, no table.

#include <cstdint>
#include <cstring>

namespace platoon::sensors {

/// e^x for x <= 0, within 1 ulp of std::exp (tests/sensors/lidar_test.cpp checks 10^6 arguments). x =
/// k ln 2 + r with |r| <= ln 2 / 2 (Cody and Waite: ln 2 in two parts, so r is exact); e^r by its Taylor
/// series to r^13 / 13! (truncation below 2e-16 relative), summed by Estrin's scheme with the largest
/// terms last (about eight dependent steps instead of Horner's 26); 2^k written straight into the
/// exponent bits. Below -708 the result is held at e^-708 (3.3e-308, just above the smallest normal
/// double, 2.2e-308): no subnormals, no zero. Undefined for x > 0 and NaN. The 1 ulp holds for the
/// operations as written; a build that fuses multiply-adds (-march with FMA) rounds differently, within
/// about 1 ulp more.
inline double ExpNonPositive(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShift = 0x1.8p52;  // x + kShift rounds x to an integer held in the low mantissa bits
  x = x < -708.0 ? -708.0 : x;         // a value select, not std::max's reference: it vectorises
  const double t = x * kLog2e + kShift;
  const double k = t - kShift;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  const double r2 = r * r, r4 = r2 * r2;
  const double q0 = 1.0 + r, q1 = 0.5 + r * (1.0 / 6.0), q2 = 1.0 / 24.0 + r * (1.0 / 120.0),
               q3 = 1.0 / 720.0 + r * (1.0 / 5040.0), q4 = 1.0 / 40320.0 + r * (1.0 / 362880.0),
               q5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0), q6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
  const double p = q0 + r2 * ((q1 + q2 * r2) + ((q3 + q4 * r2) + (q5 + q6 * r2) * r4) * r4);
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = (bits + 1023) << 52;  // the low bits of t hold k (-1022..0): k + 1023 into the exponent field
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace platoon::sensors
