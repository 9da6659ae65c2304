#include "fiber/base/worker_resources.h"

#include <dirent.h>
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "fiber/errors.h"

namespace fiber::internal {
namespace {

std::string bytes_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

std::string number_text(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string plural(long count, const std::string& one, const std::string& many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::optional<long> count_variable(const EnvironmentLookup& environment, const std::string& name) {
  const auto value = environment(name);
  if (!value || value->empty()) return std::nullopt;
  long count = 0;
  const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), count);
  if (error != std::errc() || end != value->data() + value->size() || count < 0)
    throw UsageError(name + "='" + *value + "' is not a count");
  return count;
}

// The memory limit of this process's cgroup (v2), when it has one.
std::optional<uint64_t> cgroup_memory_limit() {
  std::ifstream groups("/proc/self/cgroup");
  std::string line;
  while (std::getline(groups, line)) {
    if (!line.starts_with("0::")) continue;
    std::ifstream limit("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    uint64_t bytes = 0;
    if (limit >> bytes) return bytes;  // "max" reads as no number: no limit
  }
  return std::nullopt;
}

int nvidia_gpus(const EnvironmentLookup& environment) {
  return static_cast<int>(visible_gpus(environment).size());
}

[[noreturn]] void refuse(const WorkerRequest& request, const std::string& asked,
                         const std::string& offered, const std::string& remedy) {
  const std::string who = request.who.empty()
                              ? "Pool of " + plural(request.processes, "worker", "workers")
                              : request.who;
  throw UsageError(who + " asks for " + asked + ", and " + offered + "; " + remedy);
}

void check_fiberjob(const WorkerRequest& request, const EnvironmentLookup& environment) {
  const std::string job = environment("FIBER_K8S_JOB").value_or("?");
  const long slots =
      std::max(1L, count_variable(environment, "FIBER_SLOTS_PER_WORKER").value_or(1));
  const std::string shared =
      slots == 1 ? std::string() : ", shared by its " + std::to_string(slots) + " slots";
  const std::string where = "FiberJob '" + job + "' gives each worker pod ";
  const std::string remedy =
      "ask for less, or give spec.workers.template's container more resources (one worker "
      "template per job)";
  if (const auto cpu = environment("FIBER_K8S_WORKER_CPU"); cpu && !cpu->empty()) {
    const double per_slot = parse_quantity(*cpu, "FIBER_K8S_WORKER_CPU") / slots;
    if (request.cpus > 0 && request.cpus > per_slot + 1e-9)
      refuse(request, plural(request.cpus, "CPU", "CPUs") + " per worker",
             where + "cpu " + *cpu + shared + " (" + number_text(per_slot) + " per worker)",
             remedy);
  }
  if (const auto memory = environment("FIBER_K8S_WORKER_MEMORY");
      memory && !memory->empty() && request.memory > 0) {
    const double per_slot = parse_quantity(*memory, "FIBER_K8S_WORKER_MEMORY") / slots;
    if (static_cast<double>(request.memory) > per_slot)
      refuse(request, bytes_text(static_cast<double>(request.memory)) + " per worker",
             where + "memory " + *memory + shared + " (" + bytes_text(per_slot) + " per worker)",
             remedy);
  }
  if (request.gpus > 0) {
    const auto gpus = environment("FIBER_K8S_WORKER_GPUS");
    const double per_pod =
        gpus && !gpus->empty() ? parse_quantity(*gpus, "FIBER_K8S_WORKER_GPUS") : 0;
    const double per_slot = per_pod / slots;
    if (request.gpus > per_slot + 1e-9)
      refuse(request, plural(request.gpus, "GPU", "GPUs") + " per worker",
             where + (per_pod > 0 ? number_text(per_pod) + " GPUs" + shared + " (" +
                                        number_text(per_slot) + " per worker)"
                                  : std::string("no GPU (its worker template asks for none)")),
             remedy);
  }
}

void check_slurm(const WorkerRequest& request, const EnvironmentLookup& environment) {
  const std::string where = "the Slurm allocation " + environment("SLURM_JOB_ID").value_or("");
  const std::string remedy =
      "ask for less, or ask Slurm for more (sbatch/salloc -n, -c, --mem, --gpus-per-node)";
  NodeCpus cpus;
  if (const auto per_node = environment("SLURM_JOB_CPUS_PER_NODE");
      per_node && !per_node->empty()) {
    cpus = parse_slurm_cpus_per_node(*per_node);
  } else if (const auto here = count_variable(environment, "SLURM_CPUS_ON_NODE")) {
    cpus = {*here, *here, 1};
  }
  if (cpus.nodes > 0 && request.cpus > 0) {
    if (request.cpus > cpus.largest)
      refuse(request, plural(request.cpus, "CPU", "CPUs") + " per worker",
             where + "'s largest node has " + plural(cpus.largest, "CPU", "CPUs"), remedy);
    const long wanted = static_cast<long>(request.processes) * request.cpus;
    if (wanted > cpus.total)
      refuse(request,
             plural(request.cpus, "CPU", "CPUs") + " per worker (" + std::to_string(wanted) +
                 " in all)",
             where + " has " + plural(cpus.total, "CPU", "CPUs") + " on " +
                 plural(cpus.nodes, "node", "nodes"),
             remedy);
  }
  if (request.memory > 0) {
    std::optional<uint64_t> node_memory;
    if (const auto per_node = count_variable(environment, "SLURM_MEM_PER_NODE")) {
      node_memory = static_cast<uint64_t>(*per_node) << 20;
    } else if (const auto per_cpu = count_variable(environment, "SLURM_MEM_PER_CPU");
               per_cpu && cpus.largest > 0) {
      node_memory = (static_cast<uint64_t>(*per_cpu) << 20) * static_cast<uint64_t>(cpus.largest);
    }
    if (node_memory && *node_memory > 0 && request.memory > *node_memory)
      refuse(request, bytes_text(static_cast<double>(request.memory)) + " per worker",
             where + " gives a node " + bytes_text(static_cast<double>(*node_memory)), remedy);
  }
  if (request.gpus > 0) {
    const long here = count_variable(environment, "SLURM_GPUS_ON_NODE").value_or(0);
    if (request.gpus > here)
      refuse(request, plural(request.gpus, "GPU", "GPUs") + " per worker",
             where + " gives this node " + plural(here, "GPU", "GPUs"), remedy);
    const int nodes = std::max(1, cpus.nodes);
    const long wanted = static_cast<long>(request.processes) * request.gpus;
    if (wanted > here * nodes)
      refuse(request,
             plural(request.gpus, "GPU", "GPUs") + " per worker (" + std::to_string(wanted) +
                 " in all)",
             where + " has " + plural(here * nodes, "GPU", "GPUs") + " (" + std::to_string(here) +
                 " on each of " + plural(nodes, "node", "nodes") + ")",
             remedy);
  }
}

void check_machine(const WorkerRequest& request, const MachineFacts& machine) {
  const std::string remedy = "ask for less, or run it where there is more";
  if (request.memory > 0 && machine.memory > 0 && request.memory > machine.memory)
    refuse(request, bytes_text(static_cast<double>(request.memory)) + " per worker",
           "this machine has " + bytes_text(static_cast<double>(machine.memory)), remedy);
  if (request.gpus > machine.gpus)
    refuse(request, plural(request.gpus, "GPU", "GPUs") + " per worker",
           "this machine has " + plural(machine.gpus, "GPU", "GPUs") +
               " (NVIDIA devices, or those CUDA_VISIBLE_DEVICES names)",
           remedy);
}

}  // namespace

std::vector<std::string> visible_gpus(const EnvironmentLookup& environment) {
  std::vector<std::string> devices;
  if (const auto visible = environment("CUDA_VISIBLE_DEVICES")) {
    // The devices CUDA shows this process: a list of indices or UUIDs; "" or "-1" hides all.
    if (visible->empty() || visible->starts_with("-1")) return devices;
    for (size_t begin = 0; begin <= visible->size();) {
      const size_t end = std::min(visible->find(',', begin), visible->size());
      devices.push_back(visible->substr(begin, end - begin));
      begin = end + 1;
    }
    return devices;
  }
  std::vector<int> indices;
  if (DIR* folder = ::opendir("/dev")) {
    while (const dirent* entry = ::readdir(folder)) {
      const std::string name = entry->d_name;
      if (name.size() > 6 && name.starts_with("nvidia") &&
          std::all_of(name.begin() + 6, name.end(), [](char c) { return std::isdigit(c); }))
        indices.push_back(std::stoi(name.substr(6)));
    }
    ::closedir(folder);
  }
  std::sort(indices.begin(), indices.end());
  for (const int index : indices) devices.push_back(std::to_string(index));
  return devices;
}

MachineFacts read_machine() {
  MachineFacts machine;
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) == 0) {
    if (hwloc_topology_load(topology) == 0)
      machine.cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
    hwloc_topology_destroy(topology);
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0)
    machine.memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  if (const auto limit = cgroup_memory_limit();
      limit && (machine.memory == 0 || *limit < machine.memory))
    machine.memory = *limit;
  machine.gpus = nvidia_gpus(process_environment());
  return machine;
}

void check_worker_request(const WorkerRequest& request, const EnvironmentLookup& environment,
                          const MachineFacts& machine) {
  if (const auto role = environment("FIBER_K8S_ROLE"); role && !role->empty()) {
    check_fiberjob(request, environment);
  } else if (const auto job = environment("SLURM_JOB_ID"); job && !job->empty()) {
    check_slurm(request, environment);
  } else {
    check_machine(request, machine);
  }
}

double parse_quantity(const std::string& text, const std::string& what) {
  const auto bad = [&] {
    return UsageError(what + "='" + text + "' is not a Kubernetes quantity (like 500m, 2, 4Gi)");
  };
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  double number = 0;
  const auto [rest, error] = std::from_chars(begin, end, number, std::chars_format::fixed);
  if (error != std::errc() || rest == begin || number < 0 || !std::isfinite(number)) throw bad();
  const std::string suffix(rest, end);
  static const std::pair<const char*, double> kSuffixes[] = {
      {"", 1},        {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},   {"k", 1e3},     {"M", 1e6},
      {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},   {"Ki", 0x1p10}, {"Mi", 0x1p20},
      {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  for (const auto& [name, scale] : kSuffixes)
    if (suffix == name) return number * scale;
  // A decimal exponent: "1e3", "5E-2".
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    int exponent = 0;
    const char* exponent_begin = suffix.data() + 1;
    if (*exponent_begin == '+') ++exponent_begin;
    const auto [exponent_end, exponent_error] =
        std::from_chars(exponent_begin, suffix.data() + suffix.size(), exponent);
    if (exponent_error == std::errc() && exponent_end == suffix.data() + suffix.size())
      return number * std::pow(10.0, exponent);
  }
  throw bad();
}

NodeCpus parse_slurm_cpus_per_node(const std::string& text) {
  const auto bad = [&] {
    return UsageError("SLURM_JOB_CPUS_PER_NODE='" + text +
                      "' is not Slurm's list of CPUs per node (like 4(x2),2)");
  };
  NodeCpus cpus;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    long count = 0;
    long repeat = 1;
    const char* begin = item.data();
    const char* end = item.data() + item.size();
    const auto [rest, error] = std::from_chars(begin, end, count);
    if (error != std::errc() || rest == begin || count < 0) throw bad();
    if (rest != end) {
      // "(xN)": N nodes with this count.
      const std::string tail(rest, end);
      if (!tail.starts_with("(x") || !tail.ends_with(")")) throw bad();
      const auto [repeat_end, repeat_error] =
          std::from_chars(tail.data() + 2, tail.data() + tail.size() - 1, repeat);
      if (repeat_error != std::errc() || repeat_end != tail.data() + tail.size() - 1 || repeat < 1)
        throw bad();
    }
    // Counts no allocation can have would overflow the sums: refused like any other bad list.
    long cpus_of_item = 0;
    if (repeat > std::numeric_limits<int>::max() - cpus.nodes ||
        __builtin_mul_overflow(count, repeat, &cpus_of_item) ||
        __builtin_add_overflow(cpus.total, cpus_of_item, &cpus.total))
      throw bad();
    cpus.largest = std::max(cpus.largest, count);
    cpus.nodes += static_cast<int>(repeat);
  }
  if (cpus.nodes == 0) throw bad();
  return cpus;
}

}  // namespace fiber::internal
