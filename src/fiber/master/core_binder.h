// Binds the worker processes fibermpi starts itself (spawned, on the master's host) to cores,
// one worker per core, spread across packages and NUMA nodes first. A worker is bound while it
// runs a process (a pool's worker, a Process) and floats again in the reserve; once every core
// holds a bound worker, more workers run unbound (the machine is oversubscribed). Ranks that
// mpirun or Slurm placed and joined workers keep their launcher's binding. Internal.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fiber::detail {

class CoreBinder {
 public:
  /// `enabled` false (Config::bind "none") binds nothing. A machine hwloc cannot read binds
  /// nothing either.
  explicit CoreBinder(bool enabled);
  ~CoreBinder();
  CoreBinder(const CoreBinder&) = delete;
  CoreBinder& operator=(const CoreBinder&) = delete;

  /// Binds process `pid` to the free core that comes first in spread order. Returns what it
  /// did, for the log: "core 1 (PUs 1)", "unbound: all 2 cores hold a bound worker", or empty
  /// when binding is off.
  std::string bind(int pid);
  /// Frees `pid`'s core and lets the process run anywhere it is allowed to again (a live worker
  /// going to the reserve; nothing for one that is gone).
  void release(int pid);

  /// Cores in spread order, each as hwloc's list of its processing units ("0", "2,3").
  std::vector<std::string> core_lists() const;

 private:
  struct Topology;
  std::unique_ptr<Topology> topology_;
  std::vector<int> holders_;       ///< The pid bound to each core (spread order), 0 when free.
  std::map<int, size_t> core_of_;  ///< pid -> its core's index.
};

}  // namespace fiber::detail
