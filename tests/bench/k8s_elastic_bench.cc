// The elastic pool's figures, run by tests/bench/k8s_elastic_bench.py: as a FiberJob's launcher on
// the development cluster (its workers are worker pods), and outside Kubernetes for comparison
// (workers spawned by MPI_Comm_spawn, or joined from an independent mpirun job). The harness and
// the program meet through files in a shared work directory (pods see the host's filesystem on
// the development cluster): the program announces a step by writing a file, and waits for the
// harness's file before the next one. Every figure is one JSON line on stdout.
//   grow <work dir> <sizes> <repeats>        Pool(1), then resize(1 + k): time from the call to
//                                            tasks started on all k new workers (harness: clears
//                                            the released workers between rounds)
//   join <work dir> <sizes> <repeats>        Pool(1) + fiber::listen(); the harness starts an
//                                            `mpirun -n k` job joining it: time from that start
//                                            (the harness's CLOCK_REALTIME) to tasks on all k
//   throughput <work dir> <seconds> <phases> Pool(4) runs 1 ms tasks for <seconds> per phase
//                                            (comma-separated names; the harness deletes pods
//                                            during all but the first); every result checked
//   detect <work dir> <repeats>              Pool(4) runs 3 long tasks; the harness kills the pod
//                                            of one and times its start elsewhere
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

namespace fs = std::filesystem;

// Seconds since the epoch: comparable across the processes of one machine, pods included.
double realtime_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "<pod>/<pid>": a pod's processes may share pids with another pod's, and a replacement pod may
// reuse a deleted pod's name, never its process.
std::string worker_identity() {
  const char* pod = std::getenv("FIBER_K8S_POD_NAME");
  return std::string(pod ? pod : "local") + "/" + std::to_string(::getpid());
}

void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << text << "\n";
  }
  fs::rename(temporary, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The harness's answer `name` in the work directory; its content. Gives up after `limit` so that
// a harness gone away ends the program instead of leaving it waiting.
std::string await_file(const fs::path& path,
                       std::chrono::seconds limit = std::chrono::seconds(180)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > give_up)
      throw std::runtime_error("the harness never wrote " + path.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return read_file(path);
}

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> sizes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) sizes.push_back(std::stoi(item));
  return sizes;
}

// A short task: when it started (CLOCK_REALTIME) and where.
std::pair<double, std::string> started_where(int micros) {
  const double start = realtime_now();
  std::this_thread::sleep_for(std::chrono::microseconds(micros));
  return {start, worker_identity()};
}

// The workers that run tasks now (a few tasks per worker).
std::set<std::string> current_workers(fiber::Pool& pool) {
  std::set<std::string> seen;
  const std::vector<int> probe(static_cast<size_t>(4 * pool.size()), 2000);
  for (const auto& [start, where] : pool.map(started_where, probe, 1)) seen.insert(where);
  return seen;
}

// Maps short tasks until `count` workers not in `before` have run one; the first start on each.
std::map<std::string, double> first_starts_on_new_workers(fiber::Pool& pool,
                                                          const std::set<std::string>& before,
                                                          int count) {
  std::map<std::string, double> first;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (static_cast<int>(first.size()) < count) {
    if (std::chrono::steady_clock::now() > give_up)
      throw std::runtime_error("only " + std::to_string(first.size()) + " of " +
                               std::to_string(count) + " new workers took a task in 120 s");
    const std::vector<int> batch(static_cast<size_t>(2 * (count + 1)), 2000);
    for (const auto& [start, where] : pool.map(started_where, batch, 1)) {
      if (before.contains(where)) continue;
      auto [it, inserted] = first.emplace(where, start);
      if (!inserted) it->second = std::min(it->second, start);
    }
  }
  return first;
}

double latest(const std::map<std::string, double>& starts) {
  double last = 0;
  for (const auto& [worker, start] : starts) last = std::max(last, start);
  return last;
}

int grow(const fs::path& work, const std::vector<int>& sizes, int repeats) {
  fiber::Pool pool(1);
  pool.wait_ready();
  for (int k : sizes) {
    for (int round = 0; round < repeats; ++round) {
      const std::string tag = std::to_string(k) + "-" + std::to_string(round);
      // The harness answers once the workers of the round before are gone.
      await_file(work / ("go-" + tag));
      const auto before = current_workers(pool);
      const double asked = realtime_now();
      pool.resize(1 + k);
      const auto starts = first_starts_on_new_workers(pool, before, k);
      std::printf("{\"scenario\":\"grow\",\"k\":%d,\"round\":%d,\"latency_s\":%.4f}\n", k, round,
                  latest(starts) - asked);
      std::fflush(stdout);
      pool.resize(1);
      write_atomically(work / ("shrunk-" + tag), "1");
    }
  }
  return 0;
}

int join(const fs::path& work, const std::vector<int>& sizes, int repeats) {
  fiber::Pool pool(1);
  pool.wait_ready();
  write_atomically(work / "address", fiber::listen());
  for (int k : sizes) {
    for (int round = 0; round < repeats; ++round) {
      const std::string tag = std::to_string(k) + "-" + std::to_string(round);
      const auto before = current_workers(pool);
      write_atomically(work / ("want-" + tag), "1");
      const auto starts = first_starts_on_new_workers(pool, before, k);
      // The harness wrote its start time before it started the joining job.
      const double started = std::stod(await_file(work / ("t0-" + tag)));
      std::printf("{\"scenario\":\"join\",\"k\":%d,\"round\":%d,\"latency_s\":%.4f}\n", k, round,
                  latest(starts) - started);
      std::fflush(stdout);
      // The joined job leaves (its ranks end on SIGTERM); the pool shrinks back to its own worker.
      for (const auto& [worker, start] : starts)
        ::kill(std::stoi(worker.substr(worker.find('/') + 1)), SIGTERM);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (pool.worker_pids().size() != 1) {
        if (std::chrono::steady_clock::now() > give_up)
          throw std::runtime_error("the joined workers did not leave within 60 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      write_atomically(work / ("left-" + tag), "1");
    }
  }
  return 0;
}

// A 1 ms task: its input and the input squared (the caller checks both).
std::pair<long, long> square_after_a_millisecond(long x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return {x, x * x};
}

int throughput(const fs::path& work, double seconds, const std::string& phases) {
  fiber::Pool pool(4);
  pool.wait_ready();
  constexpr long batch = 1000;
  std::stringstream names(phases);
  for (std::string phase; std::getline(names, phase, ',');) {
    // Every phase starts on four ready workers (replacements of deleted pods joined).
    await_file(work / ("go-" + phase));
    pool.wait_ready();
    write_atomically(work / ("started-" + phase), "1");
    long done = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    for (long first = 0; elapsed < seconds; first += batch) {
      std::vector<long> inputs(batch);
      for (long i = 0; i < batch; ++i) inputs[static_cast<size_t>(i)] = first + i;
      std::vector<char> seen(batch, 0);
      for (const auto& [x, square] : pool.imap_unordered(square_after_a_millisecond, inputs, 1)) {
        const long index = x - first;
        if (index < 0 || index >= batch || square != x * x || seen[static_cast<size_t>(index)]++)
          throw std::runtime_error("result for input " + std::to_string(x) + " is " +
                                   std::to_string(square) + " or arrived twice");
      }
      if (std::count(seen.begin(), seen.end(), 1) != batch)
        throw std::runtime_error("a result of the batch from " + std::to_string(first) +
                                 " is missing");
      done += batch;
      elapsed = fiber::bench::seconds(std::chrono::steady_clock::now() - start);
    }
    write_atomically(work / ("ended-" + phase), "1");
    std::printf(
        "{\"scenario\":\"throughput\",\"phase\":\"%s\",\"tasks\":%ld,\"seconds\":%.3f,"
        "\"tasks_per_s\":%.1f}\n",
        phase.c_str(), done, elapsed, static_cast<double>(done) / elapsed);
    std::fflush(stdout);
  }
  return 0;
}

// A long task: writes start-<id>-<pod>-<pid> (its CLOCK_REALTIME start) into the work directory
// and runs until the harness writes release-<round>. Returns where it ran.
std::string long_task(std::tuple<std::string, int, int> what) {
  const auto& [directory, round, id] = what;
  const fs::path work(directory);
  const std::string where = worker_identity();
  std::string file_name = "start-" + std::to_string(id) + "-" + where;
  std::replace(file_name.begin(), file_name.end(), '/', '-');
  write_atomically(work / file_name, std::to_string(realtime_now()));
  await_file(work / ("release-" + std::to_string(round)));
  return where;
}

int detect(const fs::path& work, int repeats) {
  fiber::Pool pool(4);
  for (int round = 0; round < repeats; ++round) {
    // Four ready workers, so that one is idle when the three tasks run.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    pool.wait_ready();
    while (pool.worker_pids().size() != 4) {
      if (std::chrono::steady_clock::now() > give_up)
        throw std::runtime_error("the pool did not get back to 4 workers within 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    await_file(work / ("go-" + std::to_string(round)));
    std::vector<std::tuple<std::string, int, int>> tasks;
    for (int i = 0; i < 3; ++i) tasks.emplace_back(work.string(), round, round * 10 + i);
    const auto where = pool.map(long_task, tasks, 1);
    std::printf("{\"scenario\":\"detect\",\"round\":%d,\"ran_on\":[\"%s\",\"%s\",\"%s\"]}\n", round,
                where[0].c_str(), where[1].c_str(), where[2].c_str());
    std::fflush(stdout);
    write_atomically(work / ("done-" + std::to_string(round)), "1");
  }
  return 0;
}

int run(int argc, char** argv) {
  fiber::init(argc, argv);  // worker processes serve tasks in here and never return
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "grow" && argc == 5)
    return grow(argv[2], parse_sizes(argv[3]), std::atoi(argv[4]));
  if (scenario == "join" && argc == 5)
    return join(argv[2], parse_sizes(argv[3]), std::atoi(argv[4]));
  if (scenario == "throughput" && argc == 5)
    return throughput(argv[2], std::atof(argv[3]), argv[4]);
  if (scenario == "detect" && argc == 4) return detect(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr,
               "usage: k8s_elastic_bench grow|join <work dir> <sizes> <repeats>\n"
               "       k8s_elastic_bench throughput <work dir> <seconds> <phase,...>\n"
               "       k8s_elastic_bench detect <work dir> <repeats>\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("k8s_elastic_bench", run, argc, argv);
}
