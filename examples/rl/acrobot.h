// Acrobot-v1: a two-link pendulum swung up by a torque at its middle joint, with Gymnasium's
// dynamics.
#pragma once

#include <array>
#include <random>
#include <vector>

#include "rl/step_result.h"

namespace rl {

// The acrobot of Sutton (1996) as Gymnasium's Acrobot-v1 defines it: the equations of motion of
// Sutton and Barto's book, one fourth-order Runge-Kutta step of 0.2 s per action, a torque of
// -1, 0 or +1 (actions 0, 1, 2) on the joint between the links, angles wrapped to [-pi, pi],
// angular velocities bounded by 4 pi and 9 pi. The episode terminates once the free end is
// more than one link length above the pivot (-cos t1 - cos(t1 + t2) > 1); the reward is -1 per
// step and 0 on the terminating one; truncation after 500 steps.
class Acrobot {
 public:
  // theta1, theta2 (radians; 0 = hanging down), their angular velocities.
  using State = std::array<double, 4>;

  static constexpr int kObservationSize = 6;
  static constexpr int kActionCount = 3;
  static constexpr int kMaxEpisodeSteps = 500;

  // Starts an episode from a state drawn uniformly from [-0.1, 0.1) in every component.
  std::vector<double> reset(std::mt19937_64& rng);

  // Starts an episode from `state` (tests use it to replay a reference trajectory).
  std::vector<double> reset_to(const State& state);

  // Applies torque -1, 0 or +1 (action 0, 1, 2) for one time step; other actions throw
  // std::invalid_argument.
  StepResult step(int action);

  // The current state.
  const State& state() const { return state_; }

  // Steps taken since the last reset.
  int elapsed_steps() const { return elapsed_steps_; }

 private:
  // [cos t1, sin t1, cos t2, sin t2, dt1, dt2].
  std::vector<double> observation() const;

  State state_{};
  int elapsed_steps_ = 0;
};

}  // namespace rl
