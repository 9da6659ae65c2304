#include "rl/pendulum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rl {
namespace {

using std::numbers::pi;

constexpr double kGravity = 10.0;
constexpr double kMass = 1.0;
constexpr double kLength = 1.0;
constexpr double kTimeStep = 0.05;
constexpr double kMaxSpeed = 8.0;
constexpr double kResetSpeed = 1.0;

// The angle brought into [-pi, pi) with a floored modulo (std::fmod keeps the dividend's sign).
double normalize_angle(double angle) {
  double wrapped = std::fmod(angle + pi, 2 * pi);
  if (wrapped < 0) wrapped += 2 * pi;
  return wrapped - pi;
}

}  // namespace

std::vector<double> Pendulum::reset(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> angle(-pi, pi);
  std::uniform_real_distribution<double> speed(-kResetSpeed, kResetSpeed);
  const double theta = angle(rng);
  return reset_to({theta, speed(rng)});
}

std::vector<double> Pendulum::reset_to(const State& state) {
  state_ = state;
  elapsed_steps_ = 0;
  return observation();
}

StepResult Pendulum::step(double torque) {
  const auto [theta, theta_dot] = state_;
  const double u = std::clamp(torque, -kMaxTorque, kMaxTorque);
  const double angle = normalize_angle(theta);
  const double cost = angle * angle + 0.1 * (theta_dot * theta_dot) + 0.001 * (u * u);

  // Semi-implicit Euler: the new velocity moves the angle.
  double new_theta_dot = theta_dot + (3 * kGravity / (2 * kLength) * std::sin(theta) +
                                      3.0 / (kMass * kLength * kLength) * u) *
                                         kTimeStep;
  new_theta_dot = std::clamp(new_theta_dot, -kMaxSpeed, kMaxSpeed);
  state_ = {theta + new_theta_dot * kTimeStep, new_theta_dot};
  ++elapsed_steps_;

  StepResult result;
  result.observation = observation();
  result.reward = -cost;
  result.truncated = elapsed_steps_ >= kMaxEpisodeSteps;
  return result;
}

std::vector<double> Pendulum::observation() const {
  return {std::cos(state_[0]), std::sin(state_[0]), state_[1]};
}

}  // namespace rl
