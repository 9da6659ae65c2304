// What one step of an environment returns, in Gymnasium's terms.
#pragma once

#include <vector>

namespace rl {

// The outcome of one environment step. `terminated` is the task's own end (the pole fell, the
// tip rose above the bar); `truncated` is the time limit. Both can be true on the same step.
struct StepResult {
  std::vector<double> observation;
  double reward = 0;
  bool terminated = false;
  bool truncated = false;

  // True when the episode is over for either reason.
  bool done() const { return terminated || truncated; }
};

}  // namespace rl
