#pragma once
/// Random draws for sensor models that give the same numbers with every standard library
/// (std:: distributions differ between implementations; these do not).

#include "platoon/geometry.hpp"

#include <random>

namespace platoon::sensors {

/// 53 random bits mapped to (0, 1].
double UniformOpenZero(std::mt19937_64& rng);

/// Three independent N(0, 1) draws by Box-Muller.
Vec3 StandardNormal3(std::mt19937_64& rng);

}  // namespace platoon::sensors
