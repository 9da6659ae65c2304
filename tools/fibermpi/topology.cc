#include "topology.h"

#include <hwloc.h>

#include <cstdlib>
#include <memory>

#include "fiber/errors.h"

namespace fibermpi {
namespace {

std::string list_of(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return {};
  std::string list = text;
  std::free(text);
  return list;
}

int count(hwloc_topology_t topology, hwloc_obj_type_t type) {
  const int found = hwloc_get_nbobjs_by_type(topology, type);
  return found < 0 ? 0 : found;
}

}  // namespace

TopologySummary read_topology() {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0 || hwloc_topology_load(topology) != 0) {
    if (topology) hwloc_topology_destroy(topology);
    throw fiber::Error("hwloc cannot read this machine's topology");
  }
  std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)> owned(topology,
                                                                           hwloc_topology_destroy);
  TopologySummary summary;
  summary.packages = count(topology, HWLOC_OBJ_PACKAGE);
  summary.numa_nodes = count(topology, HWLOC_OBJ_NUMANODE);
  summary.cores = count(topology, HWLOC_OBJ_CORE);
  summary.processing_units = count(topology, HWLOC_OBJ_PU);
  summary.allowed = list_of(hwloc_topology_get_allowed_cpuset(topology));
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(topology, bound, HWLOC_CPUBIND_PROCESS) == 0)
    summary.bound = list_of(bound);
  hwloc_bitmap_free(bound);
  return summary;
}

}  // namespace fibermpi
