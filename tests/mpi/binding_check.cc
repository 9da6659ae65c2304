// Workers fibermpi spawns on the master's host are bound to cores of their own while they run a
// pool's worker (Config::bind "core", the default), and not at all with "none".
//   binding_check core|none
// Maps 8 tasks of 100 ms over a Pool of 2: each task returns its worker's pid and the CPUs it may
// run on (sched_getaffinity). With "core" on a machine of at least 2 cores, the 2 workers are on
// one core each, different ones; with "none" (or on 1 core) each may run on every CPU the master
// may. Prints "binding_check: OK" when so.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber/fiber.h"

// The CPUs this process may run on, as a sorted list.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::pair<int, std::vector<int>> where_am_i(int) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return {static_cast<int>(::getpid()), allowed_cpus()};
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "core";
  const std::vector<int> master_cpus = allowed_cpus();
  std::map<int, std::vector<int>> worker_cpus;
  {
    fiber::Pool pool(2);
    for (const auto& [pid, cpus] : pool.map(where_am_i, std::vector<int>(8, 0)))
      worker_cpus[pid] = cpus;
  }
  std::string report;
  for (const auto& [pid, cpus] : worker_cpus) {
    report += " pid " + std::to_string(pid) + ":";
    for (int cpu : cpus) report += " " + std::to_string(cpu);
  }
  std::printf("binding_check: master may use %zu CPUs; workers%s\n", master_cpus.size(),
              report.c_str());
  if (worker_cpus.size() != 2) {
    std::printf("binding_check: FAILED: %zu workers ran the tasks, not 2\n", worker_cpus.size());
    return 1;
  }
  const int cores = fiber::usable_physical_cores();
  if (mode == "core" && cores >= 2) {
    std::set<std::vector<int>> distinct;
    for (const auto& [pid, cpus] : worker_cpus) {
      if (cpus.empty() || cpus.size() >= master_cpus.size()) {
        std::printf("binding_check: FAILED: worker %d is not bound to one core\n", pid);
        return 1;
      }
      distinct.insert(cpus);
    }
    if (distinct.size() != 2) {
      std::printf("binding_check: FAILED: both workers are bound to the same core\n");
      return 1;
    }
  } else {
    for (const auto& [pid, cpus] : worker_cpus) {
      if (cpus != master_cpus) {
        std::printf("binding_check: FAILED: worker %d is bound though binding is %s\n", pid,
                    mode.c_str());
        return 1;
      }
    }
  }
  std::printf("binding_check: OK (%s, %d cores)\n", mode.c_str(), cores);
  return 0;
}
