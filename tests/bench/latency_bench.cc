// The apply_async round trip alone: apply_async(noop).get() to a pool of one worker, long enough
// to profile (perf record -g, callgrind) without the rest of pool_bench around it. Prints one JSON
// object: the median and 99th percentile in microseconds. Run under mpirun -n 2 for a static-world
// worker (shared memory), alone for a spawned one.
// Usage: latency_bench [round_trips] [repeats]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

int noop(int x) { return x; }

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int round_trips = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string impl = fiber::bench::fibermpi_impl();
  fiber::Pool pool(1);
  pool.wait_ready();
  std::vector<double> medians;
  std::vector<double> tails;
  for (int r = 0; r < repeats; ++r) {
    // 1,000 untimed round trips before the first repeat.
    const std::vector<double> rtts = fiber::bench::time_calls_us(
        round_trips, r == 0 ? 1000 : 0, [&pool](int i) { pool.apply_async(noop, i).get(); });
    medians.push_back(fiber::bench::median(rtts));
    tails.push_back(fiber::bench::percentile(rtts, 0.99));
  }
  std::printf("{\"bench\":\"latency_only\",\"impl\":\"%s\",\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
              impl.c_str(), fiber::bench::median(medians), fiber::bench::median(tails));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("latency_bench", run, argc, argv);
}
