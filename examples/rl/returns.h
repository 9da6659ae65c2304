// Discounted sums over an episode, the building block of returns and GAE-lambda advantages.
#pragma once

#include <span>
#include <vector>

namespace rl {

// y[t] = x[t] + discount * y[t + 1], y past the end 0: with rewards and gamma, the reward-to-go;
// with TD residuals and gamma * lambda, the GAE-lambda advantages (Schulman et al., 2016).
std::vector<double> discounted_cumsum(std::span<const double> x, double discount);

}  // namespace rl
