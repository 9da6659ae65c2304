// Many workers, one master: a pool of N workers (spawned, or the ranks of a job that joins it)
// running sleep tasks. Reports what the master pays per worker (resident memory, open
// descriptors, CPU while every worker idles: heartbeats and liveness checks), the throughput
// against the ideal N / task length, the master's CPU per task, and those figures extrapolated
// to 2,048 workers. Prints one JSON row.
//   scale_bench <workers> [task_ms] [tasks_per_worker] [idle_s]        spawned workers
// With FIBER_SCALE_JOIN_DIR set, the pool starts with one worker and takes the ranks of a job
// that joins (tests/bench/scale_bench.sh starts it with the address written there).
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;

int sleep_task(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

int open_descriptors() {
  int count = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] != '.') ++count;
    ::closedir(dir);
  }
  return count - 1;  // the directory's own
}

// CPU seconds the whole machine has spent busy (every process: the workers too), from /proc/stat.
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int run(int argc, char** argv) {
  fiber::init(argc, argv);  // the ranks of a joining job serve tasks in here and never return
  if (argc < 2) {
    std::fprintf(stderr, "usage: scale_bench <workers> [task_ms] [tasks_per_worker] [idle_s]\n");
    return 2;
  }
  const int workers = std::atoi(argv[1]);
  const int task_ms = argc > 2 ? std::atoi(argv[2]) : 10;
  const int per_worker = argc > 3 ? std::atoi(argv[3]) : 20;
  const double idle_s = argc > 4 ? std::atof(argv[4]) : 5;
  const char* join_dir = std::getenv("FIBER_SCALE_JOIN_DIR");
  const std::string impl = join_dir ? "fibermpi joined" : "fibermpi spawned";

  const double rss_before = fiber::bench::rss_mb_of(::getpid());
  const int fds_before = open_descriptors();
  const auto start = Clock::now();
  fiber::Pool::Options options;
  options.processes = join_dir ? 1 : workers;
  fiber::Pool pool(options);
  pool.wait_ready();
  if (join_dir) {
    // The joining job's address, for the script that starts it; then wait for its ranks.
    const std::string address = fiber::listen();
    {
      std::ofstream out(std::string(join_dir) + "/address.tmp");
      out << address << "\n";
    }
    std::filesystem::rename(std::string(join_dir) + "/address.tmp",
                            std::string(join_dir) + "/address");
    const auto give_up = Clock::now() + std::chrono::minutes(10);
    while (pool.size() < workers + 1 || static_cast<int>(pool.worker_pids().size()) < workers + 1) {
      if (Clock::now() > give_up)
        throw std::runtime_error("the joining job's ranks did not all join");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const double start_s = fiber::bench::seconds(Clock::now() - start);
  const int size = pool.size();
  // Every worker has run a task: their links are all in use.
  pool.map(sleep_task, std::vector<int>(static_cast<size_t>(size), 0), 1);
  const double rss_ready = fiber::bench::rss_mb_of(::getpid());
  const int fds_ready = open_descriptors();
  const int threads_ready = static_cast<int>(fiber::bench::status_value(::getpid(), "Threads"));

  // Idle: only heartbeats and liveness checks.
  const double idle_cpu_before = fiber::bench::own_cpu_seconds();
  const double idle_busy_before = machine_busy_seconds();
  const auto idle_start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  const double idle_cpu = fiber::bench::own_cpu_seconds() - idle_cpu_before;
  const double idle_wall = fiber::bench::seconds(Clock::now() - idle_start);
  const double idle_busy = machine_busy_seconds() - idle_busy_before;

  const size_t tasks = static_cast<size_t>(size) * static_cast<size_t>(per_worker);
  const double cpu_before = fiber::bench::own_cpu_seconds();
  const double busy_before = machine_busy_seconds();
  const auto run_start = Clock::now();
  const auto results = pool.map(sleep_task, std::vector<int>(tasks, task_ms), 1);
  const double seconds = fiber::bench::seconds(Clock::now() - run_start);
  const double cpu = fiber::bench::own_cpu_seconds() - cpu_before;
  const double busy = machine_busy_seconds() - busy_before;
  if (results.size() != tasks || results.back() != task_ms)
    throw std::runtime_error("wrong results");

  const double rate = static_cast<double>(tasks) / seconds;
  const double ideal = size * 1000.0 / task_ms;
  const double per_worker_mb = (rss_ready - rss_before) / size;
  const double fds_per_worker = static_cast<double>(fds_ready - fds_before) / size;
  const double idle_us_per_worker_s = idle_cpu * 1e6 / idle_wall / size;
  const double cpu_us_per_task = cpu * 1e6 / static_cast<double>(tasks);
  // At 2,048 workers: what the master would hold, and the share of one core it would spend idle
  // and feeding them at the ideal rate (CPU per task measured here, which grows with the pool
  // only where the dispatch loop looks at every worker).
  constexpr double kTarget = 2048;
  const double ideal_target = kTarget * 1000.0 / task_ms;
  std::printf(
      "{\"bench\":\"scale\",\"impl\":\"%s\",\"workers\":%d,\"task_ms\":%d,\"tasks\":%zu,"
      "\"start_s\":%.1f,\"rss_before_mb\":%.1f,\"rss_ready_mb\":%.1f,"
      "\"master_mb_per_worker\":%.3f,\"fds_before\":%d,\"fds_ready\":%d,"
      "\"fds_per_worker\":%.2f,\"master_threads\":%d,\"idle_cpu_us_per_worker_s\":%.2f,"
      "\"idle_machine_cores\":%.3f,"
      "\"seconds\":%.2f,\"tasks_per_s\":%.0f,\"ideal_tasks_per_s\":%.0f,\"efficiency\":%.3f,"
      "\"master_cpu_us_per_task\":%.2f,\"machine_busy_cores\":%.2f,\"cores\":%ld,"
      "\"machine_cpu_us_per_task\":%.1f,\"at_2048_master_mb\":%.0f,\"at_2048_fds\":%.0f,"
      "\"at_2048_idle_core_pct\":%.2f,\"at_2048_feeding_core_pct\":%.1f}\n",
      impl.c_str(), size, task_ms, tasks, start_s, rss_before, rss_ready, per_worker_mb, fds_before,
      fds_ready, fds_per_worker, threads_ready, idle_us_per_worker_s, idle_busy / idle_wall,
      seconds, rate, ideal, rate / ideal, cpu_us_per_task, busy / seconds,
      ::sysconf(_SC_NPROCESSORS_ONLN), busy * 1e6 / static_cast<double>(tasks),
      rss_before + per_worker_mb * kTarget, fds_before + fds_per_worker * kTarget,
      idle_us_per_worker_s * kTarget / 1e4, cpu_us_per_task * ideal_target / 1e4);
  std::fflush(stdout);
  if (join_dir) {
    pool.terminate();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("scale", run, argc, argv);
}
