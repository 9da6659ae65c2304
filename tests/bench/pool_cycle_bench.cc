// A program that makes many pools one after another: 30 pools of 4 workers, each mapping 100
// tasks, in one process (a singleton: every worker spawned). With the warm reserve the first
// pool's workers serve all the others; with FIBER_RESERVE_MAX_IDLE=0 every pool spawns its own
// (the figure before the reserve). Prints one JSON line.
// Usage: pool_cycle_bench [pools=30] [workers=4] [tasks=100]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <set>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

int square(int x) { return x * x; }
int own_pid(int) { return static_cast<int>(::getpid()); }

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int pools = argc > 1 ? std::atoi(argv[1]) : 30;
  const int workers = argc > 2 ? std::atoi(argv[2]) : 4;
  const int tasks = argc > 3 ? std::atoi(argv[3]) : 100;
  std::vector<int> inputs(static_cast<size_t>(tasks));
  std::iota(inputs.begin(), inputs.end(), 0);
  std::set<int> processes;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < pools; ++round) {
    fiber::Pool pool(workers);
    const auto squares = pool.map(square, inputs);
    for (int i = 0; i < tasks; ++i) {
      if (squares[static_cast<size_t>(i)] != i * i) {
        std::fprintf(stderr, "pool %d: wrong result for %d\n", round, i);
        return 1;
      }
    }
    for (int pid : pool.map(own_pid, std::vector<int>(static_cast<size_t>(4 * workers)), 1))
      processes.insert(pid);
  }
  const double elapsed = fiber::bench::seconds(std::chrono::steady_clock::now() - start);
  const char* reserve = std::getenv("FIBER_RESERVE_MAX_IDLE");
  const bool reserve_on = !reserve || std::atoi(reserve) > 0;
  std::printf(
      "{\"bench\":\"pool_cycle\",\"impl\":\"fibermpi spawned\",\"reserve\":%s,\"pools\":%d,"
      "\"workers\":%d,\"tasks\":%d,\"seconds\":%.3f,\"worker_processes\":%zu}\n",
      reserve_on ? "true" : "false", pools, workers, tasks, elapsed, processes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("pool_cycle", run, argc, argv);
}
