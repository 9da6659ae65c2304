// The shape of a reference trajectory that tests/unit/rl_reference/generate.py records.
#pragma once

#include <vector>

namespace rl_reference {

// The environment's state and the step's outcome after `step` steps.
struct Checkpoint {
  int step;
  std::vector<double> state;
  double reward;
  bool terminated;
  bool truncated;
};

// One episode: the start state, every action taken (an index for discrete tasks, a torque for
// the pendulum), checkpoints in step order, the episode's return and its length.
struct Trajectory {
  std::vector<double> start;
  std::vector<double> actions;
  std::vector<Checkpoint> checkpoints;
  double total_reward;
  int steps;
};

}  // namespace rl_reference
