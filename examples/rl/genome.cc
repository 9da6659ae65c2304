#include "rl/genome.h"

#include <stdexcept>

#include "rl/noise.h"

namespace rl {

std::vector<double> decode_genome(const Mlp& net, std::span<const std::uint64_t> seeds,
                                  double sigma) {
  if (seeds.empty()) throw std::invalid_argument("decode_genome: a genome has at least one seed");
  std::vector<double> params = net.initial_parameters(seeds.front());
  for (std::uint64_t seed : seeds.subspan(1)) add_noise(seed, sigma, params);
  return params;
}

}  // namespace rl
