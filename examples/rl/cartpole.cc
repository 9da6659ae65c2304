#include "rl/cartpole.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rl {
namespace {

constexpr double kGravity = 9.8;
constexpr double kCartMass = 1.0;
constexpr double kPoleMass = 0.1;
constexpr double kTotalMass = kCartMass + kPoleMass;
// Half the pole's length: the distance from the hinge to the pole's centre of mass.
constexpr double kHalfPoleLength = 0.5;
constexpr double kPoleMassLength = kPoleMass * kHalfPoleLength;
constexpr double kForce = 10.0;
constexpr double kTimeStep = 0.02;
constexpr double kThetaLimit = 12 * 2 * std::numbers::pi / 360;
constexpr double kXLimit = 2.4;
constexpr double kResetBound = 0.05;

}  // namespace

std::vector<double> CartPole::reset(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-kResetBound, kResetBound);
  State state;
  for (double& value : state) value = uniform(rng);
  return reset_to(state);
}

std::vector<double> CartPole::reset_to(const State& state) {
  state_ = state;
  elapsed_steps_ = 0;
  terminated_ = false;
  return observation();
}

StepResult CartPole::step(int action) {
  if (action != 0 && action != 1) throw std::invalid_argument("CartPole: action must be 0 or 1");
  auto [x, x_dot, theta, theta_dot] = state_;
  const double force = action == 1 ? kForce : -kForce;
  const double cos_theta = std::cos(theta);
  const double sin_theta = std::sin(theta);

  // Florian's corrected equations of motion for the frictionless cart-pole.
  const double temp = (force + kPoleMassLength * (theta_dot * theta_dot) * sin_theta) / kTotalMass;
  const double theta_acc =
      (kGravity * sin_theta - cos_theta * temp) /
      (kHalfPoleLength * (4.0 / 3.0 - kPoleMass * (cos_theta * cos_theta) / kTotalMass));
  const double x_acc = temp - kPoleMassLength * theta_acc * cos_theta / kTotalMass;

  // Explicit Euler: positions advance with the old velocities.
  x += kTimeStep * x_dot;
  x_dot += kTimeStep * x_acc;
  theta += kTimeStep * theta_dot;
  theta_dot += kTimeStep * theta_acc;
  state_ = {x, x_dot, theta, theta_dot};
  ++elapsed_steps_;

  StepResult result;
  result.observation = observation();
  result.terminated = x < -kXLimit || x > kXLimit || theta < -kThetaLimit || theta > kThetaLimit;
  result.reward = result.terminated && terminated_ ? 0.0 : 1.0;
  terminated_ = terminated_ || result.terminated;
  result.truncated = elapsed_steps_ >= kMaxEpisodeSteps;
  return result;
}

std::vector<double> CartPole::observation() const { return {state_.begin(), state_.end()}; }

}  // namespace rl
