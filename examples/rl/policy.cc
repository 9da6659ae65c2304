#include "rl/policy.h"

#include <algorithm>

namespace rl {

int greedy_action(const Mlp& net, std::span<const double> params,
                  std::span<const double> observation) {
  const std::vector<double> scores = net.forward(params, observation);
  return static_cast<int>(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

}  // namespace rl
