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

#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(values.size())))];
}

// utime + stime of a process in seconds, from /proc.
double cpu_seconds_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

void report_ready(fiber::SimpleQueue<int> ready) { ready.put(1); }

void echo(fiber::SimpleQueue<int> in, fiber::SimpleQueue<int> out) {
  for (int x = in.get(); x >= 0; x = in.get()) out.put(x);
}

void block_in_get(fiber::SimpleQueue<int> in, fiber::SimpleQueue<int> ready) {
  ready.put(static_cast<int>(::getpid()));
  in.get();
}

int main(int argc, char** argv) {
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
}
