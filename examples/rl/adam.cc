#include "rl/adam.h"

#include <cmath>
#include <stdexcept>

namespace rl {

Adam::Adam(std::size_t parameter_count, AdamOptions options)
    : options_(options),
      first_moment_(parameter_count, 0.0),
      second_moment_(parameter_count, 0.0) {}

void Adam::step(std::span<double> params, std::span<const double> gradient) {
  if (params.size() != first_moment_.size() || gradient.size() != first_moment_.size())
    throw std::invalid_argument("Adam::step: sizes differ from the optimiser's");
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, steps_);
  const double correction2 = 1.0 - std::pow(options_.beta2, steps_);
  for (std::size_t i = 0; i < params.size(); ++i) {
    first_moment_[i] = options_.beta1 * first_moment_[i] + (1.0 - options_.beta1) * gradient[i];
    second_moment_[i] =
        options_.beta2 * second_moment_[i] + (1.0 - options_.beta2) * gradient[i] * gradient[i];
    const double m_hat = first_moment_[i] / correction1;
    const double v_hat = second_moment_[i] / correction2;
    params[i] -= options_.learning_rate * m_hat / (std::sqrt(v_hat) + options_.epsilon);
  }
}

}  // namespace rl
