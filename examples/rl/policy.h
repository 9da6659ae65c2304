// A deterministic policy for evolution strategies and the genetic algorithm: a network whose
// largest output picks the action, and the return of one episode under it.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "rl/mlp.h"
#include "rl/step_result.h"

namespace rl {

// The action whose output of `net` is largest for `observation` (the first on a tie).
int greedy_action(const Mlp& net, std::span<const double> params,
                  std::span<const double> observation);

// The return of one episode of `Env` (CartPole, Acrobot: discrete actions) under the greedy
// policy of `net` with `params`, from a start state drawn with `seed`. The episode runs to its
// termination or its time limit.
template <class Env>
double greedy_episode_return(const Mlp& net, std::span<const double> params, std::uint64_t seed) {
  Env env;
  std::mt19937_64 rng(seed);
  std::vector<double> observation = env.reset(rng);
  double total = 0;
  while (true) {
    StepResult result = env.step(greedy_action(net, params, observation));
    total += result.reward;
    if (result.done()) return total;
    observation = std::move(result.observation);
  }
}

}  // namespace rl
