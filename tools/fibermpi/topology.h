// This machine as hwloc sees it, summed up for `fibermpi info`.
#pragma once

#include <string>

namespace fibermpi {

struct TopologySummary {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int processing_units = 0;  ///< Hardware threads.
  /// The processing units this process may run on (hwloc's list form, "0-1"), as its launcher
  /// or a cgroup left them.
  std::string allowed;
  /// The processing units this process is bound to ("0-1"); the same as `allowed` when unbound.
  std::string bound;
};

/// Loads the topology (throws fiber::Error when hwloc cannot).
TopologySummary read_topology();

}  // namespace fibermpi
