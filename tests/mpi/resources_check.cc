// Pool::Options cpus_per_worker, memory_per_worker and gpus_per_worker, with real processes.
//   resources_check machine          on this machine, started without a launcher
//   resources_check allocation CPUS  inside a Slurm allocation of CPUS CPUs on one node
// machine: a pool of 2 workers of 2 cores and 64 MiB each runs (on 2 cores the first worker is
// bound to both, the second runs unbound: oversubscription is allowed) and its results are
// exact; a worker of 1 EiB, and of a GPU where the machine has none, is refused with a
// UsageError naming both sides, and so is a resize() beyond what fits.
// allocation: a pool that fits the allocation runs; one of CPUS workers of 2 CPUs each is
// refused, naming the allocation. Prints "resources_check: OK" when all of that holds.
#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
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
  } else {
    std::printf("resources_check: usage: resources_check machine | allocation CPUS\n");
    return 2;
  }
  std::printf("resources_check: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
