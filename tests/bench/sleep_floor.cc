// The floor of Fiber's overhead test on this machine: the same rounds of five 1 ms sleeps, run by
// five threads of one process, with no runtime in between. Timer slack and wake-up latency of the
// machine set this; a task runtime can only add to it.
#include <sys/prctl.h>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench_support.h"

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  constexpr int kWorkers = 5;
  constexpr int kRounds = 1000;
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    std::barrier round_start(kWorkers + 1);
    std::barrier round_end(kWorkers + 1);
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
      workers.emplace_back([&] {
        ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
        for (int i = 0; i < kRounds; ++i) {
          round_start.arrive_and_wait();
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          round_end.arrive_and_wait();
        }
      });
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds; ++i) {
      round_start.arrive_and_wait();
      round_end.arrive_and_wait();
    }
    samples.push_back(fiber::bench::seconds(std::chrono::steady_clock::now() - start));
    for (auto& t : workers) t.join();
  }
  std::printf(
      "{\"bench\":\"overhead_floor\",\"impl\":\"sleep only\",\"task_ms\":1,\"median_s\":%.4f}\n",
      fiber::bench::median(samples));
}
