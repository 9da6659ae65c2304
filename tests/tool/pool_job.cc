// A fibermpi program for the tests of the fibermpi command and of Slurm: maps over a pool, checks
// every result, prints the MPI world it ran in and the pool's size, and exits with the status it
// is given.
//   pool_job STATUS [--processes N] [--task-ms MS] [--tasks N] [--kill-once MARKER]
//            [--kill-on HOST] [--hosts] [--stamp] [--before-init]
// --processes 0 (the default) takes the default pool size. --kill-once: the worker that runs task
// 7 first SIGKILLs itself (MARKER, a file, says it happened), so the task runs again elsewhere.
// --kill-on HOST: the first worker on HOST to run a task from 5 on SIGKILLs itself instead of task
// 7's (MARKER says it happened). --hosts: prints the hosts whose workers ran tasks.
// --stamp: prints the wall-clock time (seconds since the epoch) at which a first task's result
// came back, for the benchmarks that time a launch from its submission. --before-init: every
// process exits with STATUS before fiber::init (as a program's --help does).
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"

struct Work {
  int x = 0;
  int task_ms = 0;
  std::string kill_marker;
  std::string kill_host;
  template <class Archive>
  void serialize(Archive& archive, unsigned) {
    archive& x& task_ms& kill_marker& kill_host;
  }
};

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Creates the marker; false when it was there already (another worker died first).
bool first_to_die(const std::string& marker) {
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  const std::string pid = std::to_string(::getpid()) + "\n";
  (void)!::write(fd, pid.data(), pid.size());
  ::close(fd);
  return true;
}

std::string host_after(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return this_host();
}

int square(Work work) {
  const bool chosen =
      work.kill_host.empty() ? work.x == 7 : work.x >= 5 && this_host() == work.kill_host;
  if (!work.kill_marker.empty() && chosen && first_to_die(work.kill_marker)) ::raise(SIGKILL);
  if (work.task_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(work.task_ms));
  return work.x * work.x;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--before-init") return std::atoi(argv[1]);
  fiber::init(argc, argv);
  int status = 0, processes = 0, task_ms = 0, tasks = 100;
  std::string kill_marker, kill_host;
  bool stamp = false, hosts = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--processes" && has_value) {
      processes = std::atoi(argv[++i]);
    } else if (arg == "--task-ms" && has_value) {
      task_ms = std::atoi(argv[++i]);
    } else if (arg == "--tasks" && has_value) {
      tasks = std::atoi(argv[++i]);
    } else if (arg == "--kill-once" && has_value) {
      kill_marker = argv[++i];
    } else if (arg == "--kill-on" && has_value) {
      kill_host = argv[++i];
    } else if (arg == "--hosts") {
      hosts = true;
    } else if (arg == "--stamp") {
      stamp = true;
    } else {
      status = std::atoi(argv[i]);
    }
  }
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  fiber::Pool pool(processes);
  if (stamp) {
    const int first = pool.apply_async(square, Work{3, 0, "", ""}).get();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("pool_job: first task (%d) done at %.6f\n", first, now);
  }
  std::printf("pool_job: pool of %d in an MPI world of %d\n", pool.size(), world);
  std::fflush(stdout);
  std::vector<Work> inputs;
  for (int i = 0; i < tasks; ++i) inputs.push_back({i, task_ms, kill_marker, kill_host});
  const std::vector<int> results = pool.map(square, inputs);
  for (int i = 0; i < tasks; ++i) {
    if (results[i] != i * i) {
      std::printf("pool_job: result %d is %d\n", i, results[i]);
      return 99;
    }
  }
  if (hosts) {
    // Tasks long enough that every worker takes some.
    std::vector<int> probes(static_cast<size_t>(4 * pool.size()), 50);
    const std::vector<std::string> ran_on = pool.map(host_after, probes);
    const std::set<std::string> distinct(ran_on.begin(), ran_on.end());
    std::string list;
    for (const auto& host : distinct) list += (list.empty() ? "" : ",") + host;
    std::printf("pool_job: workers ran on %s (the master on %s)\n", list.c_str(),
                this_host().c_str());
  }
  std::printf("pool_job: %d results exact, exiting with %d\n", tasks, status);
  std::fflush(stdout);
  pool.close();
  pool.join();
  return status;
}
