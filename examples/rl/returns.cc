#include "rl/returns.h"

#include <cstddef>

namespace rl {

std::vector<double> discounted_cumsum(std::span<const double> x, double discount) {
  std::vector<double> y(x.size());
  double running = 0;
  for (std::size_t t = x.size(); t-- > 0;) {
    running = x[t] + discount * running;
    y[t] = running;
  }
  return y;
}

}  // namespace rl
