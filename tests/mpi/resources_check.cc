// Pool::Options cpus_per_worker, memory_per_worker and gpus_per_worker, with real processes.
//   resources_check machine          on this machine, started without a launcher
//   resources_check allocation CPUS  inside a Slurm allocation of CPUS CPUs on one node
// machine: a pool of 2 workers of 2 cores and 64 MiB each runs (on 2 cores the first worker is
// bound to both, the second runs unbound: oversubscription is allowed) and its results are
// exact; a worker of 1 EiB, and of a GPU where the machine has none, is refused with a
// UsageError naming both sides, and so is a resize() beyond what fits.
// allocation: a pool that fits the allocation runs; one of CPUS workers of 2 CPUs each is
// refused, naming the allocation.
//   resources_check gpus             with CUDA_VISIBLE_DEVICES=GPU-a,GPU-b,GPU-c,GPU-d
// gpus: each worker of a pool asking for 2 GPUs sees 2 of its own as its CUDA_VISIBLE_DEVICES,
// a third worker shares the least held, and a later pool asking for none sees the list it
// started with again. Prints "resources_check: OK" when all of that holds.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber/fiber.h"

namespace {

int square(int x) { return x * x; }

fiber::Pool::Options asking(int processes, int cpus, uint64_t memory = 0, int gpus = 0) {
  fiber::Pool::Options options;
  options.processes = processes;
  options.cpus_per_worker = cpus;
  options.memory_per_worker = memory;
  options.gpus_per_worker = gpus;
  return options;
}

bool refused(const fiber::Pool::Options& options, const std::string& expected) {
  try {
    fiber::Pool pool(options);
    std::printf("resources_check: FAILED: a pool that cannot fit was made (expected '%s')\n",
                expected.c_str());
    return false;
  } catch (const fiber::UsageError& error) {
    if (std::string(error.what()).find(expected) == std::string::npos) {
      std::printf("resources_check: FAILED: '%s' does not say '%s'\n", error.what(),
                  expected.c_str());
      return false;
    }
    std::printf("resources_check: refused as expected: %s\n", error.what());
    return true;
  }
}

bool exact(fiber::Pool& pool, int tasks) {
  std::vector<int> inputs(static_cast<size_t>(tasks));
  std::iota(inputs.begin(), inputs.end(), 0);
  const std::vector<int> results = pool.map(square, inputs);
  for (int i = 0; i < tasks; ++i) {
    if (results[static_cast<size_t>(i)] != i * i) {
      std::printf("resources_check: FAILED: result %d is %d\n", i, results[static_cast<size_t>(i)]);
      return false;
    }
  }
  return true;
}

// The GPUs a task sees, and the worker it ran in.
std::pair<int, std::string> visible_gpus_of_worker(int) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return {static_cast<int>(::getpid()), visible ? visible : "(unset)"};
}

// What each worker of `pool` saw over 40 tasks: pid -> the distinct values.
std::map<int, std::set<std::string>> gpus_seen(fiber::Pool& pool) {
  std::vector<int> inputs(40);
  std::map<int, std::set<std::string>> seen;
  for (const auto& [pid, visible] : pool.map(visible_gpus_of_worker, inputs, 1))
    seen[pid].insert(visible);
  return seen;
}

std::string describe(const std::map<int, std::set<std::string>>& seen) {
  std::string text;
  for (const auto& [pid, values] : seen) {
    text += " pid " + std::to_string(pid) + ":";
    for (const auto& value : values) text += " [" + value + "]";
  }
  return text;
}

bool gpus_are_shared_out() {
  bool ok = true;
  {
    fiber::Pool pool(asking(2, 0, 0, 2));
    const auto seen = gpus_seen(pool);
    std::set<std::string> values;
    for (const auto& [pid, each] : seen) values.insert(each.begin(), each.end());
    // Each worker keeps its pair for the pool's life, and the two pairs do not overlap.
    if (seen.size() != 2 || values != std::set<std::string>{"GPU-a,GPU-b", "GPU-c,GPU-d"}) {
      std::printf("resources_check: FAILED: 2 workers of 2 GPUs saw%s\n", describe(seen).c_str());
      ok = false;
    }
  }
  {
    fiber::Pool pool(asking(3, 0, 0, 2));
    const auto seen = gpus_seen(pool);
    std::map<std::string, int> holders;
    bool pairs = seen.size() == 3;
    for (const auto& [pid, each] : seen) {
      pairs = pairs && each.size() == 1 && each.begin()->size() == 11;  // "GPU-x,GPU-y"
      for (const auto& value : each) {
        ++holders[value.substr(0, 5)];
        ++holders[value.substr(6)];
      }
    }
    // 3 workers x 2 on 4 GPUs: every GPU is used, none by more than 2 workers.
    bool balanced = holders.size() == 4;
    for (const auto& [gpu, count] : holders) balanced = balanced && count <= 2;
    if (!pairs || !balanced) {
      std::printf("resources_check: FAILED: 3 workers of 2 GPUs on 4 saw%s\n",
                  describe(seen).c_str());
      ok = false;
    }
  }
  {
    // Workers of the reserve that held GPUs serve a pool asking for none with what they
    // started with.
    fiber::Pool pool(2);
    for (const auto& [pid, each] : gpus_seen(pool)) {
      if (each != std::set<std::string>{"GPU-a,GPU-b,GPU-c,GPU-d"}) {
        std::printf("resources_check: FAILED: a worker of a pool asking for no GPU saw%s\n",
                    describe({{pid, each}}).c_str());
        ok = false;
      }
    }
  }
  return ok;
}

bool has_no_gpu() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) return *visible == 0;
  for (int index = 0; index < 64; ++index)
    if (std::FILE* device = std::fopen(("/dev/nvidia" + std::to_string(index)).c_str(), "r")) {
      std::fclose(device);
      return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "machine";
  bool ok = true;
  if (mode == "machine") {
    {
      fiber::Pool pool(asking(2, 2, 64 << 20));
      ok = exact(pool, 200) && ok;
      // Growing to a size whose workers fit runs too; the request is checked again.
      pool.resize(3);
      ok = exact(pool, 50) && ok;
    }
    ok = refused(asking(1, 0, uint64_t{1} << 60), "Pool of 1 worker asks for 1.0 EiB") && ok;
    ok = refused(asking(1, 0, uint64_t{1} << 60), "per worker, and this machine has ") && ok;
    if (has_no_gpu()) {
      ok = refused(asking(2, 0, 0, 1),
                   "Pool of 2 workers asks for 1 GPU per worker, and this machine has 0 GPUs") &&
           ok;
    }
    ok = refused(asking(-1, 0), "processes must be at least 1") && ok;
    ok = refused(asking(1, -2), "cannot be negative, got -2") && ok;
  } else if (mode == "allocation" && argc > 2) {
    const int cpus = std::atoi(argv[2]);
    {
      fiber::Pool pool(asking(1, 1));
      ok = exact(pool, 100) && ok;
      try {
        pool.resize(cpus + 1);
        std::printf("resources_check: FAILED: resize beyond the allocation was allowed\n");
        ok = false;
      } catch (const fiber::UsageError& error) {
        std::printf("resources_check: resize refused as expected: %s\n", error.what());
      }
      ok = exact(pool, 10) && ok;
    }
    ok = refused(asking(cpus, 2),
                 "Pool of " + std::to_string(cpus) + " workers asks for 2 CPUs per worker (" +
                     std::to_string(2 * cpus) + " in all), and the Slurm allocation ") &&
         ok;
    ok =
        refused(asking(1, cpus + 1), "'s largest node has " + std::to_string(cpus) + " CPUs") && ok;
  } else if (mode == "gpus") {
    ok = gpus_are_shared_out();
  } else {
    std::printf("resources_check: usage: resources_check machine | allocation CPUS | gpus\n");
    return 2;
  }
  std::printf("resources_check: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
