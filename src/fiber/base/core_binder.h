// Binds the worker processes fibermpi starts itself (spawned, on the master's host) to cores,
// one worker per core, spread across packages, NUMA groups and shared caches first. A worker is
// bound while it runs a process (a pool's worker, a Process) and floats again in the reserve.
// Each launcher-placed process on this host that its launcher bound (the master itself, static
// ranks, workers of a joined job) holds one core of its binding, which no worker gets: once every
// other core holds a bound worker, more workers run unbound (the machine is oversubscribed).
// Launcher-placed processes keep their launcher's binding. Internal.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fiber::internal {

class CoreBinder {
 public:
  /// `enabled` false (Config::bind "none") binds nothing. A machine hwloc cannot read binds
  /// nothing either.
  explicit CoreBinder(bool enabled);
  /// A binder for the machine hwloc's synthetic description names ("pack:2 core:4 pu:2"), to
  /// show its spread order; it binds nothing on this one.
  struct Synthetic {
    std::string description;
  };
  explicit CoreBinder(const Synthetic& topology);
  ~CoreBinder();
  CoreBinder(const CoreBinder&) = delete;
  CoreBinder& operator=(const CoreBinder&) = delete;

  /// Binds process `pid` to `cores` free cores: the one that comes first in spread order, and
  /// with more than one, the free cores nearest it (next in the machine's own order, so they
  /// share a package and caches). Returns what it did, for the log: "core 1 (PUs 1)", "cores 0,2
  /// (PUs 0-1,4-5)", "unbound: no free core (2 bound workers, 1 held by launcher-placed
  /// processes, of 4)", or empty when binding is off.
  std::string bind(int pid, int cores = 1);
  /// Frees `pid`'s core. `still_running`: the worker lives on (it goes to the reserve) and may
  /// run anywhere it is allowed to again; a process that is gone is left alone, its pid may
  /// already name another process.
  void release(int pid, bool still_running);

  /// A process on this host that its launcher placed (`pid`: the master, a static rank, a worker
  /// of a joined job): one core of those its launcher bound it to is held while it lives.
  /// Nothing is held for a process that may run on every core this one may use.
  void hold_launcher_cores(int pid);
  /// That process is gone: its cores are free again.
  void drop_launcher_cores(int pid);

  /// Cores in spread order, each as hwloc's list of its processing units ("0", "2,3").
  std::vector<std::string> core_lists() const;

 private:
  struct Topology;
  void load(const std::string& synthetic_topology);
  std::unique_ptr<Topology> topology_;
  std::vector<int> holders_;           ///< The pid bound to each core (spread order), 0 when free.
  std::vector<int> launcher_holds_;    ///< Launcher-placed processes bound to each core.
  std::vector<size_t> machine_order_;  ///< Core indices in the machine's order (by first PU).
  std::map<int, std::vector<size_t>> cores_of_;           ///< pid -> its cores' indices.
  std::map<int, std::vector<size_t>> launcher_cores_of_;  ///< pid -> the cores held for it.
};

}  // namespace fiber::internal
