// How a group is made, as the master's side of it and a nested group's request both carry it.
// Internal.
#pragma once

#include "fiber/invoke.h"

namespace fiber::internal {

/// How a group is made; see fiber::Group::Options.
struct GroupSettings {
  int size = 1;
  int max_restarts = 0;
  detail::TaskSpec task;  ///< What every member runs.
};

}  // namespace fiber::internal
