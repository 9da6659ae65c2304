// A pool of worker processes: map, imap_unordered and apply_async, the way an evolution-strategies
// loop uses them (score a population, stream rollouts, run one evaluation on the side).
// Runs as ./02_pool_map, or mpirun -n 4 ./02_pool_map (ranks 1..3 become the first workers).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "fiber/fiber.h"

// Fitness of a candidate: a smooth function with its optimum at 3.
double fitness(double x) { return -(x - 3.0) * (x - 3.0); }

// Monte Carlo estimate of pi from `samples` points of one random stream.
double estimate_pi(uint64_t seed, int samples) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int inside = 0;
  for (int i = 0; i < samples; ++i) {
    const double x = unit(rng), y = unit(rng);
    inside += x * x + y * y <= 1.0 ? 1 : 0;
  }
  return 4.0 * inside / samples;
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker process this serves tasks and never returns
  fiber::Pool pool(4);

  std::vector<double> population(16);
  std::iota(population.begin(), population.end(), -4.0);
  const std::vector<double> scores = pool.map(fitness, population);
  const auto best = std::max_element(scores.begin(), scores.end()) - scores.begin();
  std::printf("best candidate %.1f (fitness %.1f) of %zu\n", population[best], scores[best],
              scores.size());

  std::vector<uint64_t> seeds(32);
  std::iota(seeds.begin(), seeds.end(), 1);
  double sum = 0;
  for (double estimate :
       pool.imap_unordered([](uint64_t seed) { return estimate_pi(seed, 100000); }, seeds))
    sum += estimate;
  std::printf("pi is about %.4f (32 streams of 100000 points)\n", sum / 32);

  fiber::AsyncResult<double> side = pool.apply_async(estimate_pi, uint64_t{99}, 1000000);
  std::printf("one long stream: %.4f\n", side.get());
  return 0;
}
