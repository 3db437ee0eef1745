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

namespace {

// The 256-layer ziggurat under f(x) = exp(-x^2 / 2), x >= 0: the base layer (the strip below f(R) out to R
// plus the tail beyond R) and 255 rectangles stacked on it, each of area kV.
constexpr int kLayers = 256;
constexpr double kR = 3.6541528853610088;  // where the tail starts
constexpr double kV = 0.00492867323399;    // the area of each layer

struct Ziggurat {
  // Layer i draws |z| < x[i]; below x[i + 1] it lies wholly under f. x[0] = kV / f(kR) is the base layer's
  // width as one rectangle, x[1] = kR, x[256] = 0. f[i] = f(x[i]): layer i >= 1 spans f[i] .. f[i + 1].
  double x[kLayers + 1];
  double f[kLayers + 1];
  Ziggurat() {
    x[0] = kV / std::exp(-0.5 * kR * kR);
    x[1] = kR;
    for (int i = 1; i < kLayers - 1; ++i) x[i + 1] = std::sqrt(-2.0 * std::log(kV / x[i] + std::exp(-0.5 * x[i] * x[i])));
    x[kLayers] = 0.0;
    for (int i = 0; i <= kLayers; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};

const Ziggurat& Table() {
  static const Ziggurat table;
  return table;
}

double OpenZero(uint64_t bits) { return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53; }  // (0, 1]

}  // namespace

NormalStream::NormalStream(uint64_t seed) : state_(seed), layer_x_(Table().x) {}

double NormalStream::Rejected(int i, double u, double v) {
  const Ziggurat& z = Table();
  for (;;) {
    if (i == 0) {
      // The tail beyond kR (Marsaglia 1964): kR + a with a exponential, accepted with probability
      // exp(-a^2 / 2).
      double a, b;
      do {
        a = -std::log(OpenZero(NextBits())) / kR;
        b = -std::log(OpenZero(NextBits()));
      } while (b + b < a * a);
      return u < 0.0 ? -(kR + a) : kR + a;
    }
    // The wedge between the rectangle and the curve: a uniform height in the layer, under f or not.
    const double y = z.f[i] + (1.0 - OpenZero(NextBits())) * (z.f[i + 1] - z.f[i]);
    if (y < std::exp(-0.5 * v * v)) return v;
    // Rejected: a new draw, as Next() makes it.
    const uint64_t bits = NextBits();
    i = static_cast<int>(bits & 0xFF);
    u = static_cast<double>(static_cast<int64_t>(bits) >> 11) * 0x1.0p-52;
    v = u * z.x[i];
    if (std::abs(v) < z.x[i + 1]) return v;
  }
}

}  // namespace platoon::sensors
