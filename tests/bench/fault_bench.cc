// Resilience figures: how long from a worker's SIGKILL until its task runs again elsewhere, and
// the throughput of a long map while a worker is killed every second, against the same map
// undisturbed. Prints one JSON object per line.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  // CLOCK_MONOTONIC: the same clock in every process of this host.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Returns when it started; sleeps `ms` first.
int64_t stamp_then_sleep(int ms) {
  const int64_t started = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return started;
}

int sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

double churn_rate(int tasks, bool kill_every_second) {
  fiber::Pool pool(4);
  pool.wait_ready();
  std::atomic<bool> done{false};
  std::atomic<int> kills{0};
  std::thread killer([&] {
    if (!kill_every_second) return;
    while (!done) {
      for (int i = 0; i < 100 && !done; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (done) break;
      const auto pids = pool.worker_pids();
      if (!pids.empty() && ::kill(pids[static_cast<size_t>(kills) % pids.size()], SIGKILL) == 0)
        ++kills;
    }
  });
  const auto start = Clock::now();
  const auto results = pool.map(sleep_ms, std::vector<int>(static_cast<size_t>(tasks), 1), 1);
  const double rate =
      static_cast<double>(results.size()) / fiber::bench::seconds(Clock::now() - start);
  done = true;
  killer.join();
  return rate;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int tasks = argc > 2 ? std::atoi(argv[2]) : 16000;

  // Detection: a task is killed with its worker; the time until it starts again elsewhere.
  {
    fiber::Pool::Options options;
    options.processes = 2;
    options.tasks_in_flight_per_worker = 1;
    fiber::Pool pool(options);
    pool.wait_ready();
    std::vector<double> samples;
    for (int r = 0; r < repeats; ++r) {
      const auto before = pool.worker_pids();
      auto result = pool.apply_async(stamp_then_sleep, 400);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      // The busy worker is the one whose pid the task saw; kill both candidates' way: the task
      // reports its start, so kill the worker that is running it by elimination.
      int64_t killed_at = 0;
      for (int pid : before) {
        // Only one worker runs a task: the other is idle, and killing it would not lose work.
        std::ifstream stat("/proc/" + std::to_string(pid) + "/wchan");
        std::string wchan;
        stat >> wchan;
        if (wchan.find("hrtimer") != std::string::npos ||
            wchan.find("nanosleep") != std::string::npos) {
          killed_at = now_ns();
          ::kill(pid, SIGKILL);
          break;
        }
      }
      const int64_t restarted = result.get();
      if (killed_at > 0 && restarted > killed_at) samples.push_back((restarted - killed_at) / 1e6);
      pool.wait_ready();
    }
    if (!samples.empty())
      std::printf(
          "{\"bench\":\"detection\",\"impl\":\"fibermpi "
          "spawned\",\"median_ms\":%.1f,\"max_ms\":%.1f,\"samples\":%zu}\n",
          fiber::bench::median(samples), *std::max_element(samples.begin(), samples.end()),
          samples.size());
    std::fflush(stdout);
  }

  // Churn: a long map of 1 ms tasks on 4 workers, with and without a kill every second.
  std::vector<double> calm, churn;
  for (int r = 0; r < std::max(1, repeats / 2); ++r) {
    calm.push_back(churn_rate(tasks, false));
    churn.push_back(churn_rate(tasks, true));
  }
  std::printf(
      "{\"bench\":\"churn\",\"impl\":\"fibermpi "
      "spawned\",\"calm_tasks_per_s\":%.0f,\"churn_tasks_per_s\":%.0f,\"ratio\":%.3f}\n",
      fiber::bench::median(calm), fiber::bench::median(churn),
      fiber::bench::median(churn) / fiber::bench::median(calm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("fault_bench", run, argc, argv);
}
