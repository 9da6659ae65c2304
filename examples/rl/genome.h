// A genetic algorithm's genome as a list of seeds (Such et al., 2017): the network's initial
// parameters from the first seed, then one Gaussian mutation per later seed. A genome of g
// generations is g numbers, cheap to store for a whole population and to send.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rl/mlp.h"

namespace rl {

// The parameters `seeds` stand for: net.initial_parameters(seeds[0]) plus
// sigma * noise(seeds[i]) for every later seed. Throws std::invalid_argument for no seeds.
std::vector<double> decode_genome(const Mlp& net, std::span<const std::uint64_t> seeds,
                                  double sigma);

}  // namespace rl
