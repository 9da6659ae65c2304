// Policies and returns of examples/rl/: the categorical distribution PPO samples from, the greedy
// policy ES and GA play, and the discounted sums behind returns and GAE.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "rl/acrobot.h"
#include "rl/cartpole.h"
#include "rl/categorical.h"
#include "rl/mlp.h"
#include "rl/policy.h"
#include "rl/returns.h"

namespace {

TEST(Categorical, LogSoftmaxNormalisesAndSurvivesLargeLogits) {
  const std::vector<double> log_p = rl::log_softmax(std::vector<double>{1.0, 2.0, 3.0});
  const double normaliser = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(log_p[0], 1.0 - normaliser, 1e-15);
  EXPECT_NEAR(log_p[2], 3.0 - normaliser, 1e-15);
  // exp(1000) overflows: only a shift by the largest logit keeps these finite.
  const std::vector<double> large = rl::log_softmax(std::vector<double>{1000.0, 1000.0});
  EXPECT_NEAR(large[0], -std::log(2.0), 1e-15);
  EXPECT_NEAR(large[1], -std::log(2.0), 1e-15);
}

TEST(Categorical, EntropyIsLogKForEqualLogitsAndZeroForACertainAction) {
  EXPECT_NEAR(rl::categorical_entropy(std::vector<double>{0.5, 0.5, 0.5}), std::log(3.0), 1e-12);
  EXPECT_NEAR(rl::categorical_entropy(std::vector<double>{0.0, 100.0}), 0.0, 1e-40);
  // p = (0.2, 0.8): -(0.2 log 0.2 + 0.8 log 0.8).
  const std::vector<double> logits = {std::log(0.2), std::log(0.8)};
  EXPECT_NEAR(rl::categorical_entropy(logits), -(0.2 * std::log(0.2) + 0.8 * std::log(0.8)), 1e-12);
}

TEST(Categorical, SamplesFollowTheProbabilities) {
  const std::vector<double> logits = {std::log(0.1), std::log(0.3), std::log(0.6)};
  std::mt19937_64 rng(1);
  std::vector<int> counts(3, 0);
  constexpr int kDraws = 60000;
  for (int i = 0; i < kDraws; ++i) ++counts[rl::sample_categorical(logits, rng)];
  // Binomial standard deviations are below 0.002 of the draws; allow about 4 of them.
  EXPECT_NEAR(counts[0] / double(kDraws), 0.1, 0.008);
  EXPECT_NEAR(counts[1] / double(kDraws), 0.3, 0.008);
  EXPECT_NEAR(counts[2] / double(kDraws), 0.6, 0.008);
}

TEST(Categorical, LogProbGradientMatchesFiniteDifferences) {
  const std::vector<double> logits = {0.3, -1.2, 0.7};
  std::vector<double> gradient(3, 0.0);
  rl::add_log_prob_gradient(logits, 1, 2.0, gradient);
  constexpr double h = 1e-6;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    std::vector<double> plus = logits, minus = logits;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = 2.0 * (rl::log_softmax(plus)[1] - rl::log_softmax(minus)[1]) / (2 * h);
    EXPECT_NEAR(gradient[i], numeric, 1e-8) << i;
  }
}

TEST(Categorical, LogProbGradientAddsToWhatIsThere) {
  std::vector<double> gradient = {1.0, 1.0};
  rl::add_log_prob_gradient(std::vector<double>{0.0, 0.0}, 0, 1.0, gradient);
  EXPECT_DOUBLE_EQ(gradient[0], 1.5);
  EXPECT_DOUBLE_EQ(gradient[1], 0.5);
}

TEST(GreedyPolicy, PicksTheLargestOutput) {
  // A linear network whose outputs are (x0, x1, -x0): the largest picks the action.
  const rl::Mlp net({2, 3});
  const std::vector<double> params = {1, 0, 0, 1, -1, 0, 0, 0, 0};
  EXPECT_EQ(rl::greedy_action(net, params, std::vector<double>{0.5, 0.2}), 0);
  EXPECT_EQ(rl::greedy_action(net, params, std::vector<double>{0.1, 0.2}), 1);
  EXPECT_EQ(rl::greedy_action(net, params, std::vector<double>{-0.5, -0.9}), 2);
}

TEST(GreedyPolicy, EpisodeReturnIsDeterministicGivenTheSeed) {
  const rl::Mlp net({rl::CartPole::kObservationSize, 8, rl::CartPole::kActionCount});
  const std::vector<double> params = net.initial_parameters(3);
  const double a = rl::greedy_episode_return<rl::CartPole>(net, params, 10);
  EXPECT_EQ(a, rl::greedy_episode_return<rl::CartPole>(net, params, 10));
  EXPECT_GE(a, 1.0);
  EXPECT_LE(a, 500.0);
}

TEST(GreedyPolicy, EpisodeReturnOfAPoleBalancerReachesTheTimeLimit) {
  // Scores (-s, s) with s = theta + 0.5 thetadot + 0.02 x + 0.1 xdot: push right when the pole
  // leans or turns right, the state feedback that holds CartPole up for all 500 steps.
  const rl::Mlp net({4, 2});
  const std::vector<double> params = {-0.02, -0.1, -1, -0.5, 0.02, 0.1, 1, 0.5, 0, 0};
  for (std::uint64_t seed = 0; seed < 5; ++seed)
    EXPECT_EQ(rl::greedy_episode_return<rl::CartPole>(net, params, seed), 500.0) << seed;
}

TEST(GreedyPolicy, EpisodeReturnWorksForAcrobot) {
  // Always action 1 (no torque): the acrobot never rises, -1 for each of 500 steps.
  const rl::Mlp net({rl::Acrobot::kObservationSize, rl::Acrobot::kActionCount});
  std::vector<double> params(net.parameter_count(), 0.0);
  params[net.parameter_count() - 2] = 1.0;  // the bias of the second output
  EXPECT_EQ(rl::greedy_episode_return<rl::Acrobot>(net, params, 1), -500.0);
}

TEST(DiscountedCumsum, SumsDiscountedFutureValues) {
  const std::vector<double> y = rl::discounted_cumsum(std::vector<double>{1, 2, 3}, 0.5);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_DOUBLE_EQ(y[2], 3.0);
  EXPECT_DOUBLE_EQ(y[1], 2.0 + 0.5 * 3.0);
  EXPECT_DOUBLE_EQ(y[0], 1.0 + 0.5 * 2.0 + 0.25 * 3.0);
  EXPECT_TRUE(rl::discounted_cumsum(std::vector<double>{}, 0.9).empty());
}

TEST(DiscountedCumsum, GivesGaeAdvantagesFromTdResiduals) {
  // Rewards 1, 1, values 0.5, 0.4, bootstrap 0.3, gamma 0.9, lambda 0.8:
  // delta = (1 + 0.9 * 0.4 - 0.5, 1 + 0.9 * 0.3 - 0.4) = (0.86, 0.87);
  // A = (0.86 + 0.72 * 0.87, 0.87).
  const std::vector<double> advantages =
      rl::discounted_cumsum(std::vector<double>{0.86, 0.87}, 0.9 * 0.8);
  EXPECT_NEAR(advantages[0], 0.86 + 0.72 * 0.87, 1e-15);
  EXPECT_NEAR(advantages[1], 0.87, 1e-15);
}

}  // namespace
