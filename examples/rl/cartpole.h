// CartPole-v1: a pole balanced on a cart pushed left or right, with Gymnasium's dynamics.
#pragma once

#include <array>
#include <random>
#include <vector>

#include "rl/step_result.h"

namespace rl {

// The cart-pole of Barto, Sutton and Anderson (1983) as Gymnasium's CartPole-v1 defines it:
// Euler integration every 0.02 s, a force of 10 N to the left (action 0) or right (action 1),
// reward 1 for every step including the one that ends the episode, termination when the pole
// leans past 12 degrees or the cart leaves [-2.4, 2.4], truncation after 500 steps. The state
// is kept in double precision as Gymnasium keeps it; the observation is the state itself.
class CartPole {
 public:
  // Cart position, cart velocity, pole angle (radians, 0 = upright), pole angular velocity.
  using State = std::array<double, 4>;

  static constexpr int kObservationSize = 4;
  static constexpr int kActionCount = 2;
  static constexpr int kMaxEpisodeSteps = 500;

  // Starts an episode from a state drawn uniformly from [-0.05, 0.05) in every component.
  std::vector<double> reset(std::mt19937_64& rng);

  // Starts an episode from `state` (tests use it to replay a reference trajectory).
  std::vector<double> reset_to(const State& state);

  // Pushes the cart (0: left, 1: right) for one time step; other actions throw
  // std::invalid_argument. Steps after termination keep integrating but earn no reward.
  StepResult step(int action);

  // The current state.
  const State& state() const { return state_; }

  // Steps taken since the last reset.
  int elapsed_steps() const { return elapsed_steps_; }

 private:
  std::vector<double> observation() const;

  State state_{};
  int elapsed_steps_ = 0;
  bool terminated_ = false;
};

}  // namespace rl
