// Adam (Kingma and Ba, 2015) over a flat parameter vector.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace rl {

// Adam's hyperparameters; the defaults are the paper's (and PyTorch's).
struct AdamOptions {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};

// Adam with bias-corrected moment estimates, minimising: each step moves the parameters against
// the gradient by learning_rate * m_hat / (sqrt(v_hat) + epsilon).
class Adam {
 public:
  // An optimiser for `parameter_count` parameters, with zero moment estimates.
  Adam(std::size_t parameter_count, AdamOptions options);

  // One update of `params` from `gradient` (both parameter_count long; otherwise throws
  // std::invalid_argument).
  void step(std::span<double> params, std::span<const double> gradient);

  // Number of steps taken.
  int steps() const { return steps_; }

 private:
  AdamOptions options_;
  std::vector<double> first_moment_;
  std::vector<double> second_moment_;
  int steps_ = 0;
};

}  // namespace rl
