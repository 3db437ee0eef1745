#pragma once
/// Random draws for sensor models that give the same numbers with every standard library
/// (std:: distributions differ between implementations; these do not).

#include "platoon/geometry.hpp"

#include <cmath>
#include <cstdint>
#include <random>

namespace platoon::sensors {

/// 53 random bits mapped to (0, 1].
double UniformOpenZero(std::mt19937_64& rng);

/// Three independent N(0, 1) draws by Box-Muller.
Vec3 StandardNormal3(std::mt19937_64& rng);

/// SplitMix64's finaliser: a bijective mix of 64 bits, for deriving independent stream seeds from ids.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A stream of N(0, 1) draws from one 64-bit seed, the same with every compiler and standard library:
/// SplitMix64 bits turned into normals by the ziggurat method (256 layers, Marsaglia and Tsang 2000), with
/// the layer index and the abscissa taken from disjoint bits of one draw (Doornik 2005: sharing them
/// skews the tails). Exact in distribution: the wedges and the tail beyond 3.654 are sampled by
/// rejection. About 99 % of draws cost one 64-bit mix, a multiply and a compare, against a logarithm, a
/// square root and a sine-cosine pair for every two Box-Muller draws.
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed);
  /// The next N(0, 1) draw. The common case (inside a layer's rectangle) is inline; wedges and the tail
  /// continue out of line.
  double Next() {
    const uint64_t bits = NextBits();
    const int i = static_cast<int>(bits & 0xFF);                                          // bits 0..7: the layer
    const double u = static_cast<double>(static_cast<int64_t>(bits) >> 11) * 0x1.0p-52;  // bits 11..63: [-1, 1)
    const double v = u * layer_x_[i];
    if (std::abs(v) < layer_x_[i + 1]) return v;  // inside the rectangle below the curve
    return Rejected(i, u, v);
  }

 private:
  uint64_t NextBits() { return Mix64(state_ += 0x9E3779B97F4A7C15ull); }
  // The draw (layer i, abscissa u in [-1, 1), v = u x[i]) fell outside its layer's rectangle: sample the
  // wedge or the tail, drawing again if rejected.
  double Rejected(int i, double u, double v);
  uint64_t state_;
  const double* layer_x_;  // the ziggurat's layer edges x[0..256]
};

}  // namespace platoon::sensors
