#include "rl/noise.h"

#include <random>

namespace rl {

void add_noise(std::uint64_t seed, double scale, std::span<double> params) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double& param : params) param += scale * normal(rng);
}

}  // namespace rl
