// The classic-control tasks of examples/rl/ against trajectories recorded from Gymnasium itself
// (tests/unit/rl_reference/generate.py), and their resets, time limits and edge rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "rl/acrobot.h"
#include "rl/cartpole.h"
#include "rl/pendulum.h"
#include "rl_reference/gymnasium_trajectories.h"

namespace {

using rl_reference::Trajectory;

// Gymnasium keeps the state in float64 and so does rl, with the same operations in the same
// order: on x86-64 with glibc the trajectories agree to the last bit. The tolerance leaves room
// for another libm's sin and cos, whose last-bit differences stay far below it over a few
// hundred steps.
constexpr double kStateTolerance = 1e-9;

template <class Env>
auto replay_action(const Trajectory& trajectory, int step) {
  const double action = trajectory.actions[static_cast<std::size_t>(step)];
  if constexpr (std::is_same_v<Env, rl::Pendulum>) {
    return action;
  } else {
    return static_cast<int>(action);
  }
}

// Replays the recorded actions from the recorded start state and compares every checkpoint.
template <class Env>
void expect_matches_reference(const Trajectory& trajectory) {
  Env env;
  typename Env::State start;
  ASSERT_EQ(trajectory.start.size(), start.size());
  std::copy(trajectory.start.begin(), trajectory.start.end(), start.begin());
  env.reset_to(start);
  ASSERT_EQ(trajectory.actions.size(), static_cast<std::size_t>(trajectory.steps));

  auto checkpoint = trajectory.checkpoints.begin();
  double total = 0;
  for (int step = 1; step <= trajectory.steps; ++step) {
    const rl::StepResult result = env.step(replay_action<Env>(trajectory, step - 1));
    total += result.reward;
    EXPECT_EQ(env.elapsed_steps(), step);
    if (step < trajectory.steps) {
      ASSERT_FALSE(result.done()) << "episode ended early at " << step;
    }
    if (checkpoint == trajectory.checkpoints.end() || checkpoint->step != step) continue;
    SCOPED_TRACE(testing::Message() << "step " << step);
    for (std::size_t i = 0; i < start.size(); ++i)
      EXPECT_NEAR(env.state()[i], checkpoint->state[i], kStateTolerance) << "state[" << i << "]";
    EXPECT_NEAR(result.reward, checkpoint->reward, kStateTolerance);
    EXPECT_EQ(result.terminated, checkpoint->terminated);
    EXPECT_EQ(result.truncated, checkpoint->truncated);
    ++checkpoint;
  }
  EXPECT_EQ(checkpoint, trajectory.checkpoints.end()) << "checkpoints left unvisited";
  EXPECT_NEAR(total, trajectory.total_reward, 1e-6);
}

// Draws `count` resets and returns the smallest and largest value of each state component.
template <class Env>
std::pair<typename Env::State, typename Env::State> reset_extremes(int count) {
  Env env;
  std::mt19937_64 rng(7);
  typename Env::State low, high;
  low.fill(std::numeric_limits<double>::infinity());
  high.fill(-std::numeric_limits<double>::infinity());
  for (int i = 0; i < count; ++i) {
    env.reset(rng);
    EXPECT_EQ(env.elapsed_steps(), 0);
    for (std::size_t c = 0; c < low.size(); ++c) {
      low[c] = std::min(low[c], env.state()[c]);
      high[c] = std::max(high[c], env.state()[c]);
    }
  }
  return {low, high};
}

TEST(CartPole, MatchesGymnasiumUntilTheTimeLimit) {
  expect_matches_reference<rl::CartPole>(rl_reference::cartpole_truncated);
}

TEST(CartPole, MatchesGymnasiumUntilThePoleFalls) {
  expect_matches_reference<rl::CartPole>(rl_reference::cartpole_terminated);
}

TEST(CartPole, ObservationIsTheState) {
  rl::CartPole env;
  const std::vector<double> first = env.reset_to({0.1, -0.2, 0.03, 0.4});
  EXPECT_EQ(first, (std::vector<double>{0.1, -0.2, 0.03, 0.4}));
  const rl::StepResult result = env.step(1);
  EXPECT_EQ(result.observation, std::vector<double>(env.state().begin(), env.state().end()));
}

TEST(CartPole, TerminatesAtTheAngleAndPositionLimits) {
  rl::CartPole env;
  // 12 degrees is 0.20944 rad; a still pole just inside the limit falls past it in one step only
  // if it moves, so give it angular velocity.
  env.reset_to({0.0, 0.0, 0.2094, 0.1});
  EXPECT_TRUE(env.step(0).terminated);
  env.reset_to({2.399, 0.1, 0.0, 0.0});
  EXPECT_TRUE(env.step(1).terminated);
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  EXPECT_FALSE(env.step(1).terminated);
}

TEST(CartPole, StepsAfterTerminationEarnNothing) {
  rl::CartPole env;
  env.reset_to({0.0, 0.0, 0.2094, 0.1});
  const rl::StepResult last = env.step(0);
  ASSERT_TRUE(last.terminated);
  EXPECT_EQ(last.reward, 1.0);  // the terminating step still earns its reward
  const rl::StepResult after = env.step(0);
  EXPECT_TRUE(after.terminated);
  EXPECT_EQ(after.reward, 0.0);
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  EXPECT_EQ(env.step(0).reward, 1.0);
}

TEST(CartPole, TruncatesAtFiveHundredStepsAndResetRestartsTheCount) {
  rl::CartPole env;
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  // A linear state feedback keeps the pole up for the whole episode.
  const auto balance = [&] {
    const auto [x, x_dot, theta, theta_dot] = env.state();
    return theta + 0.5 * theta_dot + 0.02 * x + 0.1 * x_dot > 0 ? 1 : 0;
  };
  for (int step = 1; step < rl::CartPole::kMaxEpisodeSteps; ++step)
    ASSERT_FALSE(env.step(balance()).done()) << step;
  const rl::StepResult last = env.step(balance());
  EXPECT_TRUE(last.truncated);
  EXPECT_FALSE(last.terminated);
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  EXPECT_FALSE(env.step(1).truncated);
}

TEST(CartPole, ResetDrawsEveryComponentFromPlusMinusFiveHundredths) {
  const auto [low, high] = reset_extremes<rl::CartPole>(2000);
  for (std::size_t c = 0; c < low.size(); ++c) {
    EXPECT_GE(low[c], -0.05);
    EXPECT_LT(high[c], 0.05);
    EXPECT_LT(low[c], -0.049);  // the whole range is used, not a part of it
    EXPECT_GT(high[c], 0.049);
  }
}

TEST(CartPole, ResetIsDeterministicGivenTheSeed) {
  rl::CartPole a, b, c;
  std::mt19937_64 rng_a(3), rng_b(3), rng_c(4);
  EXPECT_EQ(a.reset(rng_a), b.reset(rng_b));
  EXPECT_NE(a.reset(rng_a), c.reset(rng_c));
}

TEST(CartPole, RejectsActionsOutsideZeroAndOne) {
  rl::CartPole env;
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  EXPECT_THROW(env.step(2), std::invalid_argument);
  EXPECT_THROW(env.step(-1), std::invalid_argument);
}

TEST(Acrobot, MatchesGymnasiumUntilTheTipClearsTheBar) {
  expect_matches_reference<rl::Acrobot>(rl_reference::acrobot_terminated);
}

TEST(Acrobot, MatchesGymnasiumUntilTheTimeLimit) {
  expect_matches_reference<rl::Acrobot>(rl_reference::acrobot_truncated);
}

TEST(Acrobot, ObservationHoldsCosinesSinesAndVelocities) {
  rl::Acrobot env;
  const std::vector<double> observation = env.reset_to({0.3, -1.2, 0.5, -0.7});
  const std::vector<double> expected = {std::cos(0.3),  std::sin(0.3), std::cos(-1.2),
                                        std::sin(-1.2), 0.5,           -0.7};
  EXPECT_EQ(observation, expected);
}

TEST(Acrobot, WrapsAnglesAndBoundsVelocities) {
  rl::Acrobot env;
  // Fast enough to pass pi within one step and to hit both velocity bounds.
  env.reset_to({3.0, -3.0, 100.0, -100.0});
  env.step(2);
  const rl::Acrobot::State& s = env.state();
  EXPECT_LE(std::abs(s[0]), std::numbers::pi);
  EXPECT_LE(std::abs(s[1]), std::numbers::pi);
  EXPECT_LE(std::abs(s[2]), 4 * std::numbers::pi);
  EXPECT_LE(std::abs(s[3]), 9 * std::numbers::pi);
  EXPECT_EQ(std::abs(s[3]), 9 * std::numbers::pi);
}

TEST(Acrobot, TerminatingStepEarnsZeroOthersMinusOne) {
  rl::Acrobot env;
  // Both links up: the tip is two link lengths above the pivot.
  env.reset_to({std::numbers::pi, 0.0, 0.0, 0.0});
  const rl::StepResult up = env.step(1);
  EXPECT_TRUE(up.terminated);
  EXPECT_EQ(up.reward, 0.0);
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  const rl::StepResult down = env.step(1);
  EXPECT_FALSE(down.terminated);
  EXPECT_EQ(down.reward, -1.0);
}

TEST(Acrobot, ResetDrawsFromPlusMinusOneTenthInSinglePrecision) {
  const auto [low, high] = reset_extremes<rl::Acrobot>(2000);
  for (std::size_t c = 0; c < low.size(); ++c) {
    EXPECT_GE(low[c], -0.1);
    EXPECT_LE(high[c], 0.1);
    EXPECT_LT(low[c], -0.099);
    EXPECT_GT(high[c], 0.099);
  }
  rl::Acrobot env;
  std::mt19937_64 rng(11);
  env.reset(rng);
  for (double value : env.state()) EXPECT_EQ(value, static_cast<double>(static_cast<float>(value)));
}

TEST(Acrobot, RejectsActionsOutsideZeroToTwo) {
  rl::Acrobot env;
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  EXPECT_THROW(env.step(3), std::invalid_argument);
}

TEST(Pendulum, MatchesGymnasiumForAWholeEpisode) {
  expect_matches_reference<rl::Pendulum>(rl_reference::pendulum_truncated);
}

TEST(Pendulum, NeverTerminatesAndTruncatesAtTwoHundredSteps) {
  rl::Pendulum env;
  std::mt19937_64 rng(5);
  env.reset(rng);
  for (int step = 1; step < rl::Pendulum::kMaxEpisodeSteps; ++step)
    ASSERT_FALSE(env.step(0.0).done()) << step;
  const rl::StepResult last = env.step(0.0);
  EXPECT_TRUE(last.truncated);
  EXPECT_FALSE(last.terminated);
}

TEST(Pendulum, ClipsTheTorqueAndCostsTheClippedOne) {
  rl::Pendulum clipped, limit;
  clipped.reset_to({0.5, 0.2});
  limit.reset_to({0.5, 0.2});
  const rl::StepResult a = clipped.step(7.0);
  const rl::StepResult b = limit.step(rl::Pendulum::kMaxTorque);
  EXPECT_EQ(clipped.state(), limit.state());
  EXPECT_EQ(a.reward, b.reward);
  EXPECT_DOUBLE_EQ(b.reward, -(0.25 + 0.1 * 0.04 + 0.001 * 4.0));
}

TEST(Pendulum, CostNormalisesTheAngle) {
  rl::Pendulum once, thrice;
  once.reset_to({0.5, 0.0});
  thrice.reset_to({0.5 + 4 * std::numbers::pi, 0.0});
  EXPECT_NEAR(once.step(0.0).reward, thrice.step(0.0).reward, 1e-12);
  rl::Pendulum negative;
  negative.reset_to({-0.5 - 2 * std::numbers::pi, 0.0});
  EXPECT_NEAR(negative.step(0.0).reward, -0.25, 1e-12);
}

TEST(Pendulum, ObservationHoldsCosineSineAndVelocity) {
  rl::Pendulum env;
  EXPECT_EQ(env.reset_to({1.0, -0.3}), (std::vector<double>{std::cos(1.0), std::sin(1.0), -0.3}));
}

TEST(Pendulum, ResetDrawsTheAngleFromPlusMinusPiAndTheSpeedFromPlusMinusOne) {
  const auto [low, high] = reset_extremes<rl::Pendulum>(2000);
  EXPECT_GE(low[0], -std::numbers::pi);
  EXPECT_LT(high[0], std::numbers::pi);
  EXPECT_LT(low[0], -3.1);
  EXPECT_GT(high[0], 3.1);
  EXPECT_GE(low[1], -1.0);
  EXPECT_LT(high[1], 1.0);
  EXPECT_LT(low[1], -0.99);
  EXPECT_GT(high[1], 0.99);
}

}  // namespace
