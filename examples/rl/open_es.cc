#include "rl/open_es.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "rl/noise.h"

namespace rl {

std::vector<double> centered_ranks(std::span<const double> fitness) {
  std::vector<std::size_t> order(fitness.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fitness[a] < fitness[b]; });
  std::vector<double> ranks(fitness.size(), 0.0);
  if (fitness.size() < 2) return ranks;
  const double last = static_cast<double>(fitness.size() - 1);
  for (std::size_t rank = 0; rank < order.size(); ++rank)
    ranks[order[rank]] = static_cast<double>(rank) / last - 0.5;
  return ranks;
}

OpenEs::OpenEs(std::vector<double> initial_mean, OpenEsOptions options)
    : options_(options),
      mean_(std::move(initial_mean)),
      sigma_(options.sigma),
      // A heavier first-moment average than Adam's default: ES gradient estimates are noisy.
      adam_(mean_.size(), AdamOptions{.learning_rate = options.learning_rate, .beta1 = 0.99}),
      seeds_(options.seed) {
  if (options_.population < 2 || options_.population % 2 != 0)
    throw std::invalid_argument("OpenEs: the population must be even and positive");
}

const std::vector<double>& OpenEs::ask() {
  const std::size_t n = mean_.size();
  const auto half = static_cast<std::size_t>(options_.population / 2);
  noise_.assign(half * n, 0.0);
  solutions_.resize(2 * half * n);
  for (std::size_t pair = 0; pair < half; ++pair) {
    std::span<double> z(noise_.data() + pair * n, n);
    add_noise(seeds_(), 1.0, z);
    for (std::size_t i = 0; i < n; ++i) {
      solutions_[pair * n + i] = mean_[i] + sigma_ * z[i];
      solutions_[(pair + half) * n + i] = mean_[i] - sigma_ * z[i];
    }
  }
  return solutions_;
}

void OpenEs::tell(std::span<const double> fitness) {
  const std::size_t n = mean_.size();
  const auto population = static_cast<std::size_t>(options_.population);
  if (fitness.size() != population || solutions_.size() != population * n)
    throw std::invalid_argument("OpenEs::tell: one fitness per solution of the last ask()");
  std::vector<double> shaped = centered_ranks(fitness);
  for (std::size_t p = 0; p < population; ++p) {
    const double* solution = solutions_.data() + p * n;
    const double mean_square = std::inner_product(solution, solution + n, solution, 0.0) / n;
    shaped[p] -= options_.weight_decay * mean_square;
  }
  const double average = std::accumulate(shaped.begin(), shaped.end(), 0.0) / population;
  double variance = 0;
  for (double s : shaped) variance += (s - average) * (s - average);
  const double deviation = std::sqrt(variance / population);
  if (deviation == 0) return;  // every solution ranked alike: no direction to follow

  // grad = 1 / (population sigma) sum_p w_p z_p, with z_p = -z for the second of a pair; Adam
  // minimises, so it gets -grad.
  const std::size_t half = population / 2;
  std::vector<double> descent(n, 0.0);
  const double scale = 1.0 / (population * sigma_);
  for (std::size_t pair = 0; pair < half; ++pair) {
    const double weight =
        ((shaped[pair] - average) - (shaped[pair + half] - average)) / deviation * scale;
    const double* z = noise_.data() + pair * n;
    for (std::size_t i = 0; i < n; ++i) descent[i] -= weight * z[i];
  }
  adam_.step(mean_, descent);
  if (sigma_ > options_.sigma_limit) sigma_ *= options_.sigma_decay;
}

}  // namespace rl
