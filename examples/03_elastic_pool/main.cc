// An elastic pool running evolution strategies: the pool widens for the expensive generations and
// narrows again. The same program runs as ./03_elastic_pool, under mpirun, and as the launcher
// of a FiberJob on Kubernetes (k8s/samples/pool-demo.yaml), where widening asks the job for
// worker pods and narrowing releases the pods it no longer needs.
//   03_elastic_pool [widest pool, default 8] [generations, default 30]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "fiber/fiber.h"

namespace {

constexpr int kDimensions = 16;
using Params = std::vector<double>;

// The score of one perturbed candidate (seed, noise scale, current parameters): a rollout stand-in
// costing about a millisecond, whose optimum is every parameter at 1.
struct Candidate {
  uint64_t seed = 0;
  double sigma = 0;
  Params params;
  template <class Archive>
  void serialize(Archive& archive, unsigned) {
    archive& seed& sigma& params;
  }
};

Params noise(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Params eps(kDimensions);
  for (double& e : eps) e = normal(rng);
  return eps;
}

double score(Candidate c) {
  const Params eps = noise(c.seed);
  double loss = 0;
  for (int i = 0; i < kDimensions; ++i) {
    const double x = c.params[i] + c.sigma * eps[i];
    loss += (x - 1.0) * (x - 1.0);
  }
  // Simulated rollout work.
  volatile double sink = 0;
  for (int i = 0; i < 200000; ++i) sink = sink + std::sqrt(static_cast<double>(i));
  return -loss;
}

double loss_of(const Params& params) {
  double loss = 0;
  for (double p : params) loss += (p - 1.0) * (p - 1.0);
  return loss;
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker process this serves tasks and never returns
  const int widest = argc > 1 ? std::max(1, std::atoi(argv[1])) : 8;
  const int generations = argc > 2 ? std::max(1, std::atoi(argv[2])) : 30;

  fiber::Pool pool(2);
  Params params(kDimensions, 0.0);
  const double sigma = 0.1, learning_rate = 0.02;
  const auto start = std::chrono::steady_clock::now();
  for (int generation = 0; generation < generations; ++generation) {
    // The middle third of the run is the expensive part: a wide pool and a large population.
    const bool wide = generation >= generations / 3 && generation < 2 * generations / 3;
    const int workers = wide ? widest : 2;
    if (pool.size() != workers) {
      pool.resize(workers);
      std::printf("generation %d: pool resized to %d workers\n", generation, workers);
    }
    const int population = wide ? 32 * widest : 64;
    std::vector<Candidate> candidates;
    for (int i = 0; i < population; ++i)
      candidates.push_back({static_cast<uint64_t>(generation) * 100000 + i, sigma, params});
    const std::vector<double> scores = pool.map(score, candidates);
    // Standardised scores weight the noise that produced them.
    double mean = 0, var = 0;
    for (double s : scores) mean += s / population;
    for (double s : scores) var += (s - mean) * (s - mean) / population;
    const double stddev = std::sqrt(var) + 1e-12;
    Params step(kDimensions, 0.0);
    for (int i = 0; i < population; ++i) {
      const Params eps = noise(candidates[i].seed);
      for (int d = 0; d < kDimensions; ++d)
        step[d] += (scores[i] - mean) / stddev * eps[d] / (population * sigma);
    }
    for (int d = 0; d < kDimensions; ++d) params[d] += learning_rate * step[d];
    std::printf("generation %d: %d candidates on %d workers, loss %.4f\n", generation, population,
                pool.size(), loss_of(params));
    std::fflush(stdout);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("final loss %.4f after %d generations in %.1f s\n", loss_of(params), generations,
              seconds);
  return loss_of(params) < loss_of(Params(kDimensions, 0.0)) ? 0 : 1;
}
