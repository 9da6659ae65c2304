// How long an independently started job takes to join a running pool: from the moment the master
// asks for it (tests/bench/join_bench.sh then starts `mpirun -n 2 join_bench` with FIBER_CONNECT)
// until its ranks have run a task, and how long they take to leave on SIGTERM. Prints one JSON
// line.
//   join_bench <repeats> <work dir>   the master (under mpirun --ompi-server)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;

// The pid of the worker running it when that worker belongs to a joined job, else 0.
int joined_pid(int) { return std::getenv("FIBER_CONNECT") ? static_cast<int>(::getpid()) : 0; }

void write_atomically(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".tmp");
    out << text << "\n";
  }
  std::filesystem::rename(path + ".tmp", path);
}

bool wait_for(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  fiber::init(argc, argv);  // the ranks of a joining job serve tasks in here and never return
  if (argc < 3) {
    std::fprintf(stderr, "usage: join_bench <repeats> <work dir>\n");
    return 2;
  }
  const int repeats = std::max(1, std::atoi(argv[1]));
  const std::string work = argv[2];
  fiber::Pool pool(1);
  pool.wait_ready();
  write_atomically(work + "/address", fiber::listen());

  std::vector<double> join_s, leave_s;
  for (int r = 1; r <= repeats; ++r) {
    const auto asked = Clock::now();
    write_atomically(work + "/request", std::to_string(r));
    std::set<int> joined;
    const bool took_tasks = wait_for(
        [&] {
          if (pool.worker_pids().size() < 3) return false;
          for (int pid : pool.map(joined_pid, std::vector<int>(16), 1))
            if (pid != 0) joined.insert(pid);
          return !joined.empty();
        },
        std::chrono::seconds(120));
    if (!took_tasks) {
      std::fprintf(stderr, "join_bench: the joining job never took a task\n");
      return 1;
    }
    join_s.push_back(fiber::bench::seconds(Clock::now() - asked));
    // Both ranks must have joined before they are asked to leave.
    wait_for(
        [&] {
          for (int pid : pool.map(joined_pid, std::vector<int>(16), 1))
            if (pid != 0) joined.insert(pid);
          return joined.size() == 2;
        },
        std::chrono::seconds(30));
    const auto leaving = Clock::now();
    for (int pid : joined) ::kill(pid, SIGTERM);
    if (!wait_for([&] { return pool.worker_pids().size() == 1; }, std::chrono::seconds(60))) {
      std::fprintf(stderr, "join_bench: the joined job did not leave\n");
      return 1;
    }
    leave_s.push_back(fiber::bench::seconds(Clock::now() - leaving));
  }
  write_atomically(work + "/request", "done");
  std::printf(
      "{\"bench\":\"join\",\"impl\":\"fibermpi joined\",\"join_median_s\":%.3f,\"join_max_s\":%.3f,"
      "\"leave_median_s\":%.3f,\"samples\":%zu}\n",
      fiber::bench::median(join_s), *std::max_element(join_s.begin(), join_s.end()),
      fiber::bench::median(leave_s), join_s.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("join_bench", run, argc, argv);
}
