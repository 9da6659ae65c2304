// Figures for the Process/queue foundation: time to start 1 and 8 processes, queue round trip
// parent <-> child, and CPU burnt by processes blocked in get(). Prints one JSON object per line.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;
using fiber::bench::cpu_seconds_of;
using fiber::bench::median;
using fiber::bench::own_cpu_seconds;
using fiber::bench::percentile;
using fiber::bench::seconds;

}  // namespace

void report_ready(fiber::SimpleQueue<int> ready) { ready.put(1); }

void echo(fiber::SimpleQueue<int> in, fiber::SimpleQueue<int> out) {
  for (int x = in.get(); x >= 0; x = in.get()) out.put(x);
}

void block_in_get(fiber::SimpleQueue<int> in, fiber::SimpleQueue<int> ready) {
  ready.put(static_cast<int>(::getpid()));
  in.get();
}

namespace {

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int round_trips = argc > 2 ? std::atoi(argv[2]) : 2000;

  for (int count : {1, 8}) {
    std::vector<double> samples;
    for (int r = 0; r < repeats; ++r) {
      fiber::SimpleQueue<int> ready;
      std::vector<fiber::Process> processes;
      for (int i = 0; i < count; ++i) processes.emplace_back(report_ready, ready);
      const auto start = Clock::now();
      for (auto& p : processes) p.start();
      for (int i = 0; i < count; ++i) ready.get();
      samples.push_back(seconds(Clock::now() - start));
      for (auto& p : processes) p.join();
    }
    std::printf(
        "{\"bench\":\"start_processes\",\"impl\":\"fibermpi\",\"processes\":%d,\"median_s\":%.4f}"
        "\n",
        count, median(samples));
  }

  {
    fiber::SimpleQueue<int> to_child;
    fiber::SimpleQueue<int> to_parent;
    fiber::Process child(echo, to_child, to_parent);
    child.start();
    to_child.put(0);
    to_parent.get();
    std::vector<double> rtts;
    rtts.reserve(static_cast<size_t>(round_trips));
    for (int i = 0; i < round_trips; ++i) {
      const auto start = Clock::now();
      to_child.put(i);
      to_parent.get();
      rtts.push_back(seconds(Clock::now() - start) * 1e6);
    }
    to_child.put(-1);
    child.join();
    std::printf(
        "{\"bench\":\"queue_round_trip\",\"impl\":\"fibermpi\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
        median(rtts), percentile(rtts, 0.99));
  }

  {
    fiber::SimpleQueue<int> never;
    fiber::SimpleQueue<int> ready;
    fiber::Process child(block_in_get, never, ready);
    child.start();
    const int pid = ready.get();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double child_before = cpu_seconds_of(pid);
    const double own_before = own_cpu_seconds();
    const auto start = Clock::now();
    try {
      ready.get(std::chrono::seconds(3));  // the master blocks too
    } catch (const fiber::TimeoutError&) {
    }
    const double elapsed = seconds(Clock::now() - start);
    const double child_cpu = cpu_seconds_of(pid) - child_before;
    const double own_cpu = own_cpu_seconds() - own_before;
    never.put(0);
    child.join();
    std::printf(
        "{\"bench\":\"idle_cpu\",\"impl\":\"fibermpi\",\"blocked_child_pct\":%.2f,\"blocked_master_"
        "pct\":%.2f}\n",
        100.0 * child_cpu / elapsed, 100.0 * own_cpu / elapsed);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("process_bench", run, argc, argv);
}
