// The master's CPU time per task (getrusage of the whole master process, every thread) for no-op
// tasks at a chunksize (1 unless given): what bounds how many workers one master can feed
// (DESIGN: 10 ms tasks / master CPU per task = workers). Prints one JSON row per measurement;
// run it under mpirun -n N for static-world workers (shared memory) or alone for spawned ones.
// Usage: master_cpu_bench [repeats] [tasks] [workers] [chunksize]
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

int noop(int x) { return x; }

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int tasks = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int workers = argc > 3 ? std::atoi(argv[3]) : 2;
  const size_t chunksize = argc > 4 ? static_cast<size_t>(std::atoi(argv[4])) : 1;
  const std::string impl = fiber::bench::fibermpi_impl();
  fiber::Pool pool(workers);
  pool.wait_ready();
  std::vector<int> inputs(static_cast<size_t>(tasks));
  std::iota(inputs.begin(), inputs.end(), 0);
  pool.map(noop, inputs, chunksize);  // warm-up
  std::vector<double> per_task_us;
  for (int r = 0; r < repeats; ++r) {
    const double before = fiber::bench::own_cpu_seconds();
    const auto results = pool.map(noop, inputs, chunksize);
    const double used = fiber::bench::own_cpu_seconds() - before;
    if (results.size() != inputs.size() || results.back() != tasks - 1) {
      std::fprintf(stderr, "master_cpu_bench: wrong results\n");
      return 1;
    }
    per_task_us.push_back(used * 1e6 / tasks);
  }
  std::printf(
      "{\"bench\":\"master_cpu\",\"impl\":\"%s\",\"workers\":%d,\"tasks\":%d,"
      "\"chunksize\":%zu,\"master_cpu_us_per_task\":%.3f}\n",
      impl.c_str(), workers, tasks, chunksize, fiber::bench::median(per_task_us));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("master_cpu", run, argc, argv);
}
