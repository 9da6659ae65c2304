// Pool figures: Fiber's overhead test, no-op throughput, apply_async round trip, start-up and idle
// cost. Prints one JSON object per line. Run as ./pool_bench (every worker spawned) or under
// mpirun -n 6 (static-world ranks serve the pools first); "impl" says which.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;
using fiber::bench::median;
using fiber::bench::percentile;
using fiber::bench::seconds;

int noop(int x) { return x; }
int sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
int own_pid(int) { return static_cast<int>(::getpid()); }

// Round trips of apply_async(noop).get() in microseconds, after 200 of warm-up.
std::vector<double> round_trips_us(fiber::Pool& pool, int round_trips) {
  return fiber::bench::time_calls_us(round_trips, 200,
                                     [&pool](int i) { pool.apply_async(noop, i).get(); });
}

std::vector<int> worker_pids(fiber::Pool& pool) {
  std::vector<int> inputs(pool.size() * 20);
  const auto pids = pool.map(own_pid, inputs, 1);
  const std::set<int> unique(pids.begin(), pids.end());
  return {unique.begin(), unique.end()};
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  const int round_trips = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int tasks = argc > 3 ? std::atoi(argv[3]) : 20000;
  const std::string impl = fiber::bench::fibermpi_impl();
  const char* name = impl.c_str();

  // Fiber's overhead test: 5 workers, 5 s of work per worker-slot in tasks of 1, 10, 100 ms,
  // submitted in rounds of 5 apply_async calls, each round awaited. Ideal: 1.0 s.
  {
    fiber::Pool pool(5);
    pool.wait_ready();
    for (int duration : {1, 10, 100}) {
      std::vector<double> samples;
      for (int r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        for (int round = 0; round < 1000 / duration; ++round) {
          std::vector<fiber::AsyncResult<int>> results;
          for (int i = 0; i < 5; ++i) results.push_back(pool.apply_async(sleep_ms, duration));
          for (auto& result : results) result.get();
        }
        samples.push_back(seconds(Clock::now() - start));
      }
      std::printf("{\"bench\":\"overhead\",\"impl\":\"%s\",\"task_ms\":%d,\"median_s\":%.4f}\n",
                  name, duration, median(samples));
      std::fflush(stdout);
    }
  }

  // Throughput of no-op tasks on 2 workers.
  {
    fiber::Pool pool(2);
    pool.wait_ready();
    std::vector<int> inputs(static_cast<size_t>(tasks));
    std::iota(inputs.begin(), inputs.end(), 0);
    for (const size_t chunksize : {size_t{1}, size_t{0}}) {
      std::vector<double> rates;
      for (int r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        const auto results = pool.map(noop, inputs, chunksize);
        rates.push_back(static_cast<double>(results.size()) / seconds(Clock::now() - start));
      }
      std::printf(
          "{\"bench\":\"throughput\",\"impl\":\"%s\",\"chunksize\":\"%s\",\"tasks_per_s\":%.0f}\n",
          name, chunksize == 1 ? "1" : "default", median(rates));
      std::fflush(stdout);
    }

    // Round trip of one apply_async(noop).get().
    const std::vector<double> rtts = round_trips_us(pool, round_trips);
    std::printf("{\"bench\":\"latency\",\"impl\":\"%s\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n", name,
                median(rtts), percentile(rtts, 0.99));
    std::fflush(stdout);

    // Idle cost: nothing submitted for 5 s.
    const auto pids = worker_pids(pool);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<double> before;
    for (int pid : pids) before.push_back(fiber::bench::cpu_seconds_of(pid));
    const double own_before = fiber::bench::own_cpu_seconds();
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(5));
    const double elapsed = seconds(Clock::now() - start);
    const double master_pct = 100.0 * (fiber::bench::own_cpu_seconds() - own_before) / elapsed;
    double worker_pct = 0;
    double rss_mb = 0;
    for (size_t i = 0; i < pids.size(); ++i) {
      worker_pct = std::max(worker_pct,
                            100.0 * (fiber::bench::cpu_seconds_of(pids[i]) - before[i]) / elapsed);
      rss_mb = std::max(rss_mb, fiber::bench::rss_mb_of(pids[i]));
    }
    std::printf(
        "{\"bench\":\"idle\",\"impl\":\"%s\",\"master_cpu_pct\":%.2f,\"worker_cpu_pct\":%.2f,"
        "\"worker_rss_mb\":%.1f}\n",
        name, master_pct, worker_pct, rss_mb);
    std::fflush(stdout);
  }

  // Round trip to a pool of one worker: the worker's poll then has a core of its own beside the
  // master's, as in a raw MPI ping-pong between two processes (on 2 cores, the 2-worker pool above
  // has an idle worker polling beside the busy one).
  {
    fiber::Pool pool(1);
    pool.wait_ready();
    const std::vector<double> rtts = round_trips_us(pool, round_trips);
    std::printf(
        "{\"bench\":\"latency_one_worker\",\"impl\":\"%s\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
        name, median(rtts), percentile(rtts, 0.99));
    std::fflush(stdout);
  }

  // Start-up: until Pool(n) has n workers ready.
  for (int n : {2, 4, 8}) {
    std::vector<double> samples;
    for (int r = 0; r < repeats; ++r) {
      const auto start = Clock::now();
      fiber::Pool pool(n);
      pool.wait_ready();
      samples.push_back(seconds(Clock::now() - start));
    }
    std::printf("{\"bench\":\"startup\",\"impl\":\"%s\",\"workers\":%d,\"median_s\":%.4f}\n", name,
                n, median(samples));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("pool_bench", run, argc, argv);
}
