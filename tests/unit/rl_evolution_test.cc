// Evolution of examples/rl/: seeded noise, GA genomes, centered ranks and OpenAI-ES.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "rl/genome.h"
#include "rl/mlp.h"
#include "rl/noise.h"
#include "rl/open_es.h"

namespace {

TEST(Noise, TheSameSeedGivesTheSameStandardNormalVector) {
  std::vector<double> a(20000, 0.0), b(20000, 0.0), c(20000, 0.0);
  rl::add_noise(5, 1.0, a);
  rl::add_noise(5, 1.0, b);
  rl::add_noise(6, 1.0, c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  const double square = std::inner_product(a.begin(), a.end(), a.begin(), 0.0) / a.size();
  // Standard errors: 0.007 for the mean, 0.01 for the second moment.
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(square, 1.0, 0.04);
}

TEST(Noise, AddsScaledNoiseToWhatIsThere) {
  std::vector<double> unit(5, 0.0), scaled(5, 1.0);
  rl::add_noise(9, 1.0, unit);
  rl::add_noise(9, 0.5, scaled);
  for (std::size_t i = 0; i < unit.size(); ++i) EXPECT_DOUBLE_EQ(scaled[i], 1.0 + 0.5 * unit[i]);
}

TEST(Genome, IsTheInitialParametersPlusOneMutationPerLaterSeed) {
  const rl::Mlp net({3, 4, 2});
  const std::vector<std::uint64_t> seeds = {11, 12, 13};
  std::vector<double> expected = net.initial_parameters(11);
  rl::add_noise(12, 0.1, expected);
  rl::add_noise(13, 0.1, expected);
  EXPECT_EQ(rl::decode_genome(net, seeds, 0.1), expected);
  EXPECT_EQ(rl::decode_genome(net, std::vector<std::uint64_t>{11}, 0.1),
            net.initial_parameters(11));
  EXPECT_THROW(rl::decode_genome(net, std::vector<std::uint64_t>{}, 0.1), std::invalid_argument);
}

TEST(CenteredRanks, MapsRanksOntoMinusHalfToHalf) {
  const std::vector<double> ranks =
      rl::centered_ranks(std::vector<double>{3.0, -10.0, 7.0, 5.0, 500.0});
  EXPECT_EQ(ranks, (std::vector<double>{-0.25, -0.5, 0.25, 0.0, 0.5}));
}

TEST(CenteredRanks, TiesKeepTheirOrderOfAppearance) {
  EXPECT_EQ(rl::centered_ranks(std::vector<double>{1.0, 1.0, 0.0}),
            (std::vector<double>{0.0, 0.5, -0.5}));
  EXPECT_EQ(rl::centered_ranks(std::vector<double>{4.0}), (std::vector<double>{0.0}));
}

TEST(OpenEs, AskReturnsAntitheticPairsAroundTheMean) {
  rl::OpenEs es(std::vector<double>{1.0, -2.0, 0.5}, rl::OpenEsOptions{.population = 6});
  const std::vector<double> solutions = es.ask();
  ASSERT_EQ(solutions.size(), 6u * 3);
  for (std::size_t pair = 0; pair < 3; ++pair) {
    for (std::size_t i = 0; i < 3; ++i) {
      const double a = solutions[pair * 3 + i], b = solutions[(pair + 3) * 3 + i];
      EXPECT_NEAR((a + b) / 2, es.mean()[i], 1e-15);
      EXPECT_NE(a, b);
    }
  }
}

TEST(OpenEs, IsDeterministicGivenItsSeed) {
  rl::OpenEs a(std::vector<double>(4, 0.0), rl::OpenEsOptions{.seed = 3});
  rl::OpenEs b(std::vector<double>(4, 0.0), rl::OpenEsOptions{.seed = 3});
  rl::OpenEs c(std::vector<double>(4, 0.0), rl::OpenEsOptions{.seed = 4});
  EXPECT_EQ(a.ask(), b.ask());
  EXPECT_NE(a.ask(), c.ask());
}

// Maximises -|x - target|^2 from the origin: the mean must end near the target.
TEST(OpenEs, ClimbsAQuadratic) {
  const std::vector<double> target = {1.0, -0.5, 2.0, 0.0, -1.5};
  rl::OpenEs es(std::vector<double>(target.size(), 0.0),
                rl::OpenEsOptions{.population = 50, .learning_rate = 0.01, .weight_decay = 0});
  for (int iteration = 0; iteration < 600; ++iteration) {
    const std::vector<double>& solutions = es.ask();
    std::vector<double> fitness(es.population());
    for (int p = 0; p < es.population(); ++p) {
      for (std::size_t i = 0; i < target.size(); ++i) {
        const double d = solutions[p * target.size() + i] - target[i];
        fitness[p] -= d * d;
      }
    }
    es.tell(fitness);
  }
  for (std::size_t i = 0; i < target.size(); ++i) EXPECT_NEAR(es.mean()[i], target[i], 0.05) << i;
  EXPECT_LT(es.sigma(), 0.1);  // annealed from its start
}

TEST(OpenEs, RejectsAnOddPopulationAndAWrongFitnessCount) {
  EXPECT_THROW(rl::OpenEs(std::vector<double>(2, 0.0), rl::OpenEsOptions{.population = 5}),
               std::invalid_argument);
  rl::OpenEs es(std::vector<double>(2, 0.0), rl::OpenEsOptions{.population = 4});
  es.ask();
  EXPECT_THROW(es.tell(std::vector<double>(3, 0.0)), std::invalid_argument);
}

}  // namespace
