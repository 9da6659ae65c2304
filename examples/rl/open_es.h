// OpenAI's evolution strategy (Salimans et al., 2017) with antithetic sampling, centered-rank
// fitness shaping and Adam: the optimiser an ES master holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "rl/adam.h"

namespace rl {

// The fitnesses replaced by their ranks, scaled to [-0.5, 0.5]: the lowest gets -0.5, the highest
// 0.5 (ties keep their order of appearance). The update then ignores the fitnesses' scale and
// outliers.
std::vector<double> centered_ranks(std::span<const double> fitness);

// Hyperparameters of OpenEs.
struct OpenEsOptions {
  int population = 64;  // even: antithetic pairs
  double sigma = 0.1;   // standard deviation of the perturbations
  double sigma_decay = 0.999;
  double sigma_limit = 0.01;  // sigma decays while above this
  double learning_rate = 0.03;
  double weight_decay = 0.005;  // subtracted from the shaped fitness, times mean(theta^2)
  std::uint64_t seed = 0;       // of the noise seeds
};

// The search distribution N(mean, sigma^2 I) over parameter vectors. ask() samples a
// population in antithetic pairs mean + sigma z, mean - sigma z, each z drawn by add_noise from
// a fresh seed; tell() estimates the gradient of the expected fitness from the population's
// fitnesses and moves the mean uphill with Adam.
class OpenEs {
 public:
  // Starts the search at `initial_mean`. Throws std::invalid_argument for an odd or
  // non-positive population.
  OpenEs(std::vector<double> initial_mean, OpenEsOptions options);

  // The next population, row-major: options.population rows of mean().size() values. Row i
  // and row i + population/2 are a pair.
  const std::vector<double>& ask();

  // Updates the mean from the fitness of each row of the last ask() (higher is better).
  void tell(std::span<const double> fitness);

  // The centre of the search distribution: the solution to deploy.
  const std::vector<double>& mean() const { return mean_; }

  // The current perturbation scale.
  double sigma() const { return sigma_; }

  // Size of a population.
  int population() const { return options_.population; }

 private:
  OpenEsOptions options_;
  std::vector<double> mean_;
  double sigma_;
  Adam adam_;
  std::mt19937_64 seeds_;
  // The z of each pair of the last ask(), row-major.
  std::vector<double> noise_;
  std::vector<double> solutions_;
};

}  // namespace rl
