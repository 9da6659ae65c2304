#include "rl/acrobot.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rl {
namespace {

using std::numbers::pi;

constexpr double kTimeStep = 0.2;
constexpr double kLink1Length = 1.0;
constexpr double kLink1Mass = 1.0;
constexpr double kLink2Mass = 1.0;
// Positions of the links' centres of mass, from their own joints.
constexpr double kLink1Centre = 0.5;
constexpr double kLink2Centre = 0.5;
// Moment of inertia of either link.
constexpr double kInertia = 1.0;
constexpr double kGravity = 9.8;
constexpr double kMaxVelocity1 = 4 * pi;
constexpr double kMaxVelocity2 = 9 * pi;
constexpr std::array<double, 3> kTorques = {-1.0, 0.0, 1.0};
constexpr double kResetBound = 0.1;

using State = Acrobot::State;

// Time derivative of the state under a constant torque on the second joint (the book's version
// of the equations, which keeps the dtheta1^2 term in the second link's acceleration).
State derivative(const State& s, double torque) {
  constexpr double m1 = kLink1Mass, m2 = kLink2Mass, l1 = kLink1Length;
  constexpr double lc1 = kLink1Centre, lc2 = kLink2Centre, i1 = kInertia, i2 = kInertia;
  const auto [theta1, theta2, dtheta1, dtheta2] = s;
  const double d1 =
      m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + i1 + i2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + i2;
  const double phi2 = m2 * lc2 * kGravity * std::cos(theta1 + theta2 - pi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * dtheta2 * dtheta2 * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * kGravity * std::cos(theta1 - pi / 2) + phi2;
  const double ddtheta2 =
      (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1 * dtheta1 * std::sin(theta2) - phi2) /
      (m2 * lc2 * lc2 + i2 - d2 * d2 / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2};
}

// s + h * k, component by component.
State advance(const State& s, double h, const State& k) {
  State result;
  for (std::size_t i = 0; i < s.size(); ++i) result[i] = s[i] + h * k[i];
  return result;
}

// One classical Runge-Kutta step of length kTimeStep.
State runge_kutta_step(const State& s, double torque) {
  const double half = kTimeStep / 2.0;
  const State k1 = derivative(s, torque);
  const State k2 = derivative(advance(s, half, k1), torque);
  const State k3 = derivative(advance(s, half, k2), torque);
  const State k4 = derivative(advance(s, kTimeStep, k3), torque);
  State result;
  for (std::size_t i = 0; i < s.size(); ++i)
    result[i] = s[i] + kTimeStep / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return result;
}

// Brings an angle into [-pi, pi] by whole turns.
double wrap_angle(double angle) {
  while (angle > pi) angle -= 2 * pi;
  while (angle < -pi) angle += 2 * pi;
  return angle;
}

}  // namespace

std::vector<double> Acrobot::reset(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-kResetBound, kResetBound);
  State state;
  // Gymnasium draws the start state in single precision.
  for (double& value : state) value = static_cast<float>(uniform(rng));
  return reset_to(state);
}

std::vector<double> Acrobot::reset_to(const State& state) {
  state_ = state;
  elapsed_steps_ = 0;
  return observation();
}

StepResult Acrobot::step(int action) {
  if (action < 0 || action >= kActionCount)
    throw std::invalid_argument("Acrobot: action must be 0, 1 or 2");
  State next = runge_kutta_step(state_, kTorques[action]);
  next[0] = wrap_angle(next[0]);
  next[1] = wrap_angle(next[1]);
  next[2] = std::clamp(next[2], -kMaxVelocity1, kMaxVelocity1);
  next[3] = std::clamp(next[3], -kMaxVelocity2, kMaxVelocity2);
  state_ = next;
  ++elapsed_steps_;

  StepResult result;
  result.observation = observation();
  result.terminated = -std::cos(state_[0]) - std::cos(state_[1] + state_[0]) > 1.0;
  result.reward = result.terminated ? 0.0 : -1.0;
  result.truncated = elapsed_steps_ >= kMaxEpisodeSteps;
  return result;
}

std::vector<double> Acrobot::observation() const {
  const auto [theta1, theta2, dtheta1, dtheta2] = state_;
  return {std::cos(theta1), std::sin(theta1), std::cos(theta2), std::sin(theta2), dtheta1, dtheta2};
}

}  // namespace rl
