// Pendulum-v1: swing a pendulum up and hold it upright with a bounded torque, with Gymnasium's
// dynamics.
#pragma once

#include <array>
#include <random>
#include <vector>

#include "rl/step_result.h"

namespace rl {

// The inverted pendulum as Gymnasium's Pendulum-v1 defines it: a rod of mass 1 and length 1
// under gravity 10, a torque clipped to [-2, 2], a semi-implicit Euler step of 0.05 s with the
// angular velocity clipped to [-8, 8]. The reward -(theta^2 + 0.1 thetadot^2 + 0.001 u^2), with
// theta normalised to [-pi, pi) and taken before the step, is at most 0 (upright and still).
// The task never terminates; truncation after 200 steps.
class Pendulum {
 public:
  // Angle (radians, 0 = upright) and angular velocity.
  using State = std::array<double, 2>;

  static constexpr int kObservationSize = 3;
  static constexpr int kMaxEpisodeSteps = 200;
  static constexpr double kMaxTorque = 2.0;

  // Starts an episode from an angle uniform in [-pi, pi) and a velocity uniform in [-1, 1).
  std::vector<double> reset(std::mt19937_64& rng);

  // Starts an episode from `state` (tests use it to replay a reference trajectory).
  std::vector<double> reset_to(const State& state);

  // Applies `torque`, clipped to [-kMaxTorque, kMaxTorque], for one time step.
  StepResult step(double torque);

  // The current state.
  const State& state() const { return state_; }

  // Steps taken since the last reset.
  int elapsed_steps() const { return elapsed_steps_; }

 private:
  // [cos theta, sin theta, thetadot].
  std::vector<double> observation() const;

  State state_{};
  int elapsed_steps_ = 0;
};

}  // namespace rl
