#include "fiber/base/core_binder.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace fiber::internal {

struct CoreBinder::Topology {
  hwloc_topology_t handle = nullptr;
  std::vector<hwloc_bitmap_t> cores;  ///< Spread order; only processing units this process may use.
  ~Topology() {
    for (hwloc_bitmap_t core : cores) hwloc_bitmap_free(core);
    if (handle) hwloc_topology_destroy(handle);
  }
};

namespace {

std::string list_of(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return {};
  std::string list = text;
  std::free(text);
  return list;
}

// The cores below `object`, ordered so that consecutive ones share as little as possible: the
// first core of each child subtree in turn, then the second of each, and so on, at every level
// (packages, then groups such as NUMA clusters, then shared caches). Cores are counted as cores,
// whatever number of hardware threads each has.
std::vector<hwloc_obj_t> spread_order(hwloc_obj_t object) {
  if (object->type == HWLOC_OBJ_CORE) return {object};
  std::vector<std::vector<hwloc_obj_t>> subtrees;
  for (hwloc_obj_t child = object->first_child; child; child = child->next_sibling) {
    auto cores = spread_order(child);
    if (!cores.empty()) subtrees.push_back(std::move(cores));
  }
  std::vector<hwloc_obj_t> order;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (const auto& cores : subtrees) {
      if (round >= cores.size()) continue;
      order.push_back(cores[round]);
      any = true;
    }
    if (!any) return order;
  }
}

}  // namespace

CoreBinder::CoreBinder(bool enabled) {
  if (enabled) load({});
}

CoreBinder::CoreBinder(const Synthetic& topology) { load(topology.description); }

void CoreBinder::load(const std::string& synthetic_topology) {
  auto topology = std::make_unique<Topology>();
  if (hwloc_topology_init(&topology->handle) != 0) {
    topology->handle = nullptr;
    return;
  }
  if (!synthetic_topology.empty() &&
      hwloc_topology_set_synthetic(topology->handle, synthetic_topology.c_str()) != 0)
    return;
  // hwloc leaves out the processing units this process's cgroup (a Slurm job's, a container's)
  // forbids; the launcher's binding of this process is not a limit for its workers, so cores
  // other launcher-placed processes hold are found by hold_launcher_cores.
  if (hwloc_topology_load(topology->handle) != 0) return;
  hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topology->handle);
  for (hwloc_obj_t core : spread_order(hwloc_get_root_obj(topology->handle))) {
    hwloc_bitmap_t usable = hwloc_bitmap_alloc();
    if (!usable) return;
    hwloc_bitmap_and(usable, core->cpuset, allowed);
    if (hwloc_bitmap_iszero(usable)) {
      hwloc_bitmap_free(usable);
      continue;
    }
    topology->cores.push_back(usable);
  }
  if (topology->cores.empty()) return;
  holders_.assign(topology->cores.size(), 0);
  machine_order_.resize(topology->cores.size());
  for (size_t core = 0; core < machine_order_.size(); ++core) machine_order_[core] = core;
  std::sort(machine_order_.begin(), machine_order_.end(), [&](size_t a, size_t b) {
    return hwloc_bitmap_first(topology->cores[a]) < hwloc_bitmap_first(topology->cores[b]);
  });
  launcher_holds_.assign(topology->cores.size(), 0);
  topology_ = std::move(topology);
}

CoreBinder::~CoreBinder() = default;

std::string CoreBinder::bind(int pid, int cores) {
  if (!topology_) return {};
  release(pid, true);
  const auto is_free = [&](size_t core) {
    return holders_[core] == 0 && launcher_holds_[core] == 0;
  };
  std::optional<size_t> anchor;
  size_t free_cores = 0;
  for (size_t core = 0; core < holders_.size(); ++core) {
    if (!is_free(core)) continue;
    if (!anchor) anchor = core;
    ++free_cores;
  }
  const size_t wanted = static_cast<size_t>(std::max(1, cores));
  if (!anchor || free_cores < wanted) {
    size_t held_by_launcher = 0;
    for (size_t core = 0; core < holders_.size(); ++core)
      if (holders_[core] == 0 && launcher_holds_[core] != 0) ++held_by_launcher;
    return "unbound: " +
           (anchor ? std::to_string(free_cores) + " free cores, " + std::to_string(wanted) +
                         " wanted ("
                   : std::string("no free core (")) +
           std::to_string(cores_of_.size()) + " bound workers, " +
           std::to_string(held_by_launcher) + " held by launcher-placed processes, of " +
           std::to_string(holders_.size()) + ")";
  }
  // The anchor, then the free cores after it in the machine's order (wrapping around).
  std::vector<size_t> chosen = {*anchor};
  const auto at = std::find(machine_order_.begin(), machine_order_.end(), *anchor);
  const size_t start = static_cast<size_t>(at - machine_order_.begin());
  for (size_t step = 1; step < machine_order_.size() && chosen.size() < wanted; ++step) {
    const size_t core = machine_order_[(start + step) % machine_order_.size()];
    if (is_free(core)) chosen.push_back(core);
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return "unbound: out of memory";
  for (size_t core : chosen) hwloc_bitmap_or(set, set, topology_->cores[core]);
  const std::string units = list_of(set);
  const int bound = hwloc_set_proc_cpubind(topology_->handle, pid, set, HWLOC_CPUBIND_PROCESS);
  hwloc_bitmap_free(set);
  if (bound != 0) return "unbound: binding failed";
  std::string names;
  for (size_t core : chosen) {
    holders_[core] = pid;
    names += (names.empty() ? "" : ",") + std::to_string(core);
  }
  cores_of_[pid] = chosen;
  return (chosen.size() == 1 ? "core " : "cores ") + names + " (PUs " + units + ")";
}

void CoreBinder::release(int pid, bool still_running) {
  if (!topology_) return;
  const auto found = cores_of_.find(pid);
  if (found == cores_of_.end()) return;
  for (size_t core : found->second) holders_[core] = 0;
  cores_of_.erase(found);
  if (still_running) {
    hwloc_set_proc_cpubind(topology_->handle, pid,
                           hwloc_topology_get_allowed_cpuset(topology_->handle),
                           HWLOC_CPUBIND_PROCESS);
  }
}

void CoreBinder::hold_launcher_cores(int pid) {
  if (!topology_ || launcher_cores_of_.count(pid)) return;
  hwloc_bitmap_t binding = hwloc_bitmap_alloc();
  if (!binding) return;
  hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topology_->handle);
  // A process bound to several cores (a package, a NUMA node) uses one core's worth of them: the
  // first in spread order that nothing holds yet, else the first of them.
  std::vector<size_t> held;
  if (hwloc_get_proc_cpubind(topology_->handle, pid, binding, HWLOC_CPUBIND_PROCESS) == 0 &&
      !hwloc_bitmap_isincluded(allowed, binding)) {
    std::optional<size_t> chosen;
    for (size_t core = 0; core < topology_->cores.size(); ++core) {
      if (!hwloc_bitmap_intersects(topology_->cores[core], binding)) continue;
      if (!chosen) chosen = core;
      if (holders_[core] == 0 && launcher_holds_[core] == 0) {
        chosen = core;
        break;
      }
    }
    if (chosen) {
      ++launcher_holds_[*chosen];
      held.push_back(*chosen);
    }
  }
  hwloc_bitmap_free(binding);
  if (!held.empty()) launcher_cores_of_[pid] = std::move(held);
}

void CoreBinder::drop_launcher_cores(int pid) {
  const auto found = launcher_cores_of_.find(pid);
  if (found == launcher_cores_of_.end()) return;
  for (size_t core : found->second) --launcher_holds_[core];
  launcher_cores_of_.erase(found);
}

std::vector<std::string> CoreBinder::core_lists() const {
  std::vector<std::string> lists;
  if (topology_) {
    for (hwloc_const_bitmap_t core : topology_->cores) lists.push_back(list_of(core));
  }
  return lists;
}

}  // namespace fiber::internal
