#include "fiber/master/core_binder.h"

#include <hwloc.h>

#include <climits>
#include <cstdlib>

namespace fiber::detail {

struct CoreBinder::Topology {
  hwloc_topology_t handle = nullptr;
  std::vector<hwloc_bitmap_t> cores;  ///< Spread order.
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

}  // namespace

CoreBinder::CoreBinder(bool enabled) {
  if (!enabled) return;
  auto topology = std::make_unique<Topology>();
  if (hwloc_topology_init(&topology->handle) != 0) {
    topology->handle = nullptr;
    return;
  }
  // The loaded topology holds only the processing units this process may use (its cgroup, its
  // launcher's binding).
  if (hwloc_topology_load(topology->handle) != 0) return;
  const int count = hwloc_get_nbobjs_by_type(topology->handle, HWLOC_OBJ_CORE);
  if (count <= 0) return;
  // One set per core, handed out so that consecutive workers land on different packages and
  // NUMA nodes before sharing one.
  topology->cores.resize(static_cast<size_t>(count));
  hwloc_obj_t root = hwloc_get_root_obj(topology->handle);
  if (hwloc_distrib(topology->handle, &root, 1, topology->cores.data(),
                    static_cast<unsigned>(count), INT_MAX, 0) != 0) {
    topology->cores.clear();
    return;
  }
  holders_.assign(topology->cores.size(), 0);
  topology_ = std::move(topology);
}

CoreBinder::~CoreBinder() = default;

std::string CoreBinder::bind(int pid) {
  if (!topology_) return {};
  release(pid);
  for (size_t core = 0; core < holders_.size(); ++core) {
    if (holders_[core] != 0) continue;
    if (hwloc_set_proc_cpubind(topology_->handle, pid, topology_->cores[core],
                               HWLOC_CPUBIND_PROCESS) != 0) {
      return "unbound: binding failed";
    }
    holders_[core] = pid;
    core_of_[pid] = core;
    return "core " + std::to_string(core) + " (PUs " + list_of(topology_->cores[core]) + ")";
  }
  return "unbound: all " + std::to_string(holders_.size()) + " cores hold a bound worker";
}

void CoreBinder::release(int pid) {
  if (!topology_) return;
  const auto found = core_of_.find(pid);
  if (found == core_of_.end()) return;
  holders_[found->second] = 0;
  core_of_.erase(found);
  // A process that is gone cannot be rebound, which is fine.
  hwloc_set_proc_cpubind(topology_->handle, pid,
                         hwloc_topology_get_allowed_cpuset(topology_->handle),
                         HWLOC_CPUBIND_PROCESS);
}

std::vector<std::string> CoreBinder::core_lists() const {
  std::vector<std::string> lists;
  if (topology_) {
    for (hwloc_const_bitmap_t core : topology_->cores) lists.push_back(list_of(core));
  }
  return lists;
}

}  // namespace fiber::detail
