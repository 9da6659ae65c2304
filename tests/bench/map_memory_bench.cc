// The master's memory during one large no-op map (Python's multiprocessing side by side:
// python_map_memory.py): its peak resident set during the map (VmHWM, reset just before), what it
// held before the map, and the
// part of the peak beyond what it held before and the map's result vector. One map per run, since
// the peak is the process's. Prints one JSON row. Usage: map_memory_bench [tasks] [workers]
// [chunksize] [map|imap]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <ranges>
#include <string>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

int noop(int x) { return x; }

// A field of this process's /proc status in MB ("VmRSS", "VmHWM").
double status_mb(const std::string& field) {
  return fiber::bench::status_value(::getpid(), field) / 1024;
}

// Linux: the process's peak resident set (VmHWM) starts again from its present size.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const long tasks = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  const int workers = argc > 2 ? std::atoi(argv[2]) : 2;
  const size_t chunksize = argc > 3 ? static_cast<size_t>(std::atol(argv[3])) : 1;
  const std::string mode = argc > 4 ? argv[4] : "map";
  fiber::Pool pool(workers);
  pool.wait_ready();
  pool.map(noop, std::vector<int>{1, 2, 3});  // the code paths touched once
  std::vector<int> inputs(static_cast<size_t>(tasks));
  std::iota(inputs.begin(), inputs.end(), 0);
  // The peak counts from here: starting the workers (MPI's spawn) peaks higher than a small map.
  reset_peak();
  const double before_mb = status_mb("VmRSS");
  const auto start = std::chrono::steady_clock::now();
  long checked = 0;
  bool right = true;
  double vectors_mb = 0;  // the results' (the inputs are in rss_before_mb)
  if (mode == "imap") {
    // Results taken as they come: nothing but the stream's window is held.
    long expected = 0;
    for (int value : pool.imap(noop, std::views::all(inputs), chunksize)) {
      right = right && value == expected++;
      ++checked;
    }
  } else {
    const auto results = pool.map(noop, inputs, chunksize);
    checked = static_cast<long>(results.size());
    right = results.size() == inputs.size() && results.back() == tasks - 1;
    vectors_mb = static_cast<double>(results.capacity() * sizeof(int)) / (1 << 20);
  }
  const double seconds = fiber::bench::seconds(std::chrono::steady_clock::now() - start);
  if (!right || checked != tasks) {
    std::fprintf(stderr, "map_memory_bench: wrong results\n");
    return 1;
  }
  const double peak_mb = status_mb("VmHWM");
  std::printf(
      "{\"bench\":\"map_memory\",\"impl\":\"fibermpi\",\"mode\":\"%s\",\"tasks\":%ld,"
      "\"workers\":%d,\"chunksize\":%zu,\"peak_rss_mb\":%.1f,\"rss_before_mb\":%.1f,"
      "\"vectors_mb\":%.1f,\"beyond_vectors_mb\":%.1f,\"seconds\":%.2f}\n",
      mode.c_str(), tasks, workers, chunksize, peak_mb, before_mb, vectors_mb,
      peak_mb - before_mb - vectors_mb, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("map_memory", run, argc, argv);
}
