// Gaussian noise vectors named by a seed, the currency of evolution strategies and the genetic
// algorithm: a seed sent or stored stands for a whole perturbation of the parameters.
#pragma once

#include <cstdint>
#include <span>

namespace rl {

// Adds scale * z to `params`, z standard normal noise drawn from `seed` alone: the same seed
// always gives the same z, on every process.
void add_noise(std::uint64_t seed, double scale, std::span<double> params);

}  // namespace rl
