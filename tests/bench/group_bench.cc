// fiber::Group figures, one JSON row each: start-up (from construction to join of a group whose
// members only pass a barrier), the first group of a run and later ones, for sizes 1, 4 and 8;
// and MPI_Allreduce of 1 KB and 1 MB inside a group of 2, timed by the same loop as the
// plain-MPI peer (raw_allreduce.cc). Run alone (members are spawned) or under mpirun -n 3
// (members are static ranks). tests/bench/group_bench.py runs it beside its peers.
// Usage: group_bench [repeats] [small_iterations] [large_iterations]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "allreduce_timing.h"
#include "bench_support.h"
#include "fiber/fiber.h"
#include "fiber/mpi.h"

namespace {

using Clock = std::chrono::steady_clock;

void barrier_only() { MPI_Barrier(fiber::group_comm()); }

void time_allreduce(int bytes, int iterations, fiber::SimpleQueue<double> out) {
  const double us = fiber::bench::median_allreduce_us(fiber::group_comm(), bytes, iterations);
  if (fiber::group_rank() == 0) out.put(us);
}

double startup_seconds(int size) {
  const auto start = Clock::now();
  fiber::Group group(size, barrier_only);
  group.start();
  group.join();
  for (const auto& code : group.exitcodes())
    if (code != 0) throw fiber::Error("a member of the start-up group failed");
  return fiber::bench::seconds(Clock::now() - start);
}

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  const int small_iterations = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int large_iterations = argc > 3 ? std::atoi(argv[3]) : 200;
  const bool static_world = fiber::bench::in_static_world();
  const std::string impl = static_world ? "fibermpi Group static" : "fibermpi Group spawned";

  // The allreduce first, while the static world's ranks are all idle.
  for (const int bytes : {1024, 1 << 20}) {
    std::vector<double> medians;
    for (int r = 0; r < repeats; ++r) {
      fiber::SimpleQueue<double> out;
      fiber::Group group(2, time_allreduce, bytes,
                         bytes < 65536 ? small_iterations : large_iterations, out);
      group.start();
      medians.push_back(out.get());
      group.join();
    }
    std::printf(
        "{\"bench\":\"allreduce\",\"impl\":\"%s\",\"size\":2,\"bytes\":%d,"
        "\"median_us\":%.2f}\n",
        impl.c_str(), bytes, fiber::bench::median(medians));
    std::fflush(stdout);
  }
  if (static_world) return 0;  // start-up needs fresh processes: spawned ones
  for (const int size : {1, 4, 8}) {
    const double first = startup_seconds(size);
    std::vector<double> later;
    for (int r = 0; r < repeats; ++r) later.push_back(startup_seconds(size));
    std::printf(
        "{\"bench\":\"group_startup\",\"impl\":\"%s\",\"size\":%d,\"first_s\":%.3f,"
        "\"later_median_s\":%.3f}\n",
        impl.c_str(), size, first, fiber::bench::median(later));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("group_bench", run, argc, argv);
}
