// A fibermpi program for the tests of the fibermpi command and of Slurm: maps over a pool, checks
// every result, prints the MPI world it ran in and the pool's size, and exits with the status it
// is given.
//   pool_job STATUS [--processes N] [--task-ms MS] [--tasks N] [--kill-once MARKER] [--stamp]
//            [--before-init]
// --processes 0 (the default) takes the default pool size. --kill-once: the worker that runs task
// 7 first SIGKILLs itself (MARKER, a file, says it happened), so the task runs again elsewhere.
// --stamp: prints the wall-clock time (seconds since the epoch) at which a first task's result
// came back, for the benchmarks that time a launch from its submission. --before-init: every
// process exits with STATUS before fiber::init (as a program's --help does).
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"

struct Work {
  int x = 0;
  int task_ms = 0;
  std::string kill_marker;
  template <class Archive>
  void serialize(Archive& archive, unsigned) {
    archive& x& task_ms& kill_marker;
  }
};

int square(Work work) {
  if (!work.kill_marker.empty() && work.x == 7 && ::access(work.kill_marker.c_str(), F_OK) != 0) {
    std::ofstream(work.kill_marker) << ::getpid() << "\n";
    ::raise(SIGKILL);
  }
  if (work.task_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(work.task_ms));
  return work.x * work.x;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--before-init") return std::atoi(argv[1]);
  fiber::init(argc, argv);
  int status = 0, processes = 0, task_ms = 0, tasks = 100;
  std::string kill_marker;
  bool stamp = false;
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
    const int first = pool.apply_async(square, Work{3, 0, ""}).get();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("pool_job: first task (%d) done at %.6f\n", first, now);
  }
  std::printf("pool_job: pool of %d in an MPI world of %d\n", pool.size(), world);
  std::fflush(stdout);
  std::vector<Work> inputs;
  for (int i = 0; i < tasks; ++i) inputs.push_back({i, task_ms, kill_marker});
  const std::vector<int> results = pool.map(square, inputs);
  for (int i = 0; i < tasks; ++i) {
    if (results[i] != i * i) {
      std::printf("pool_job: result %d is %d\n", i, results[i]);
      return 99;
    }
  }
  std::printf("pool_job: %d results exact, exiting with %d\n", tasks, status);
  std::fflush(stdout);
  pool.close();
  pool.join();
  return status;
}
