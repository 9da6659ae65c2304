// The program the Kubernetes runtime tests run as a FiberJob's launcher; its worker pods run it
// too (the worker template names no command). It prints what it saw; the test checks the
// cluster's side. Every scenario checks each result's value, so a lost or misplaced result fails.
//   grow     Pool(4) grows onto 4 worker pods, maps 2,000 tasks, resize(1), then keeps the last
//            worker busy for a while (the released pods leave meanwhile), exit 0
//   loss     Pool(4) maps 2,000 tasks of 10 ms while the test deletes worker pods
//   partition Pool(4) maps 3,000 tasks of 10 ms while the test cuts a node with worker pods off
//            (its kubelet and its pods' network); then waits until the pool is whole again and
//            maps 400 more: the pods that computed them are the replacements
//   leaving  Pool(1) names its worker, then maps 4 tasks of 3 s while the test asks that worker
//            to leave (SIGTERM to it alone) and kills it before its task ends
//   scale    Pool(1) maps until its tasks have run on 3 pods (the test scales the job to 3)
//   regrow   Pool(2), resize(1) (a pod is released while the last worker works), then resize(4)
//            while tasks run: new pods join a launcher busy with traffic
//   unready  Pool(2) on a job whose worker pods can never start: the map fails, exit 3
//   nested   a Process on a worker pod runs a Pool of its own (nesting): its 2 workers are worker
//            pods too; every value checked there, the pods that computed them printed here
//   guard    Pool(1) on one worker pod maps for 50 s while the test has a pod of another job
//            and a rogue publish under the launcher's name try to join (both refused): every
//            value exact, and the pool never grew
//   group    a Group of 4 on worker pods (their ranks joined across pods by connect/accept):
//            allreduce and allgather over group_comm(), each member's pod and rank printed
//   shared   shared state served by the launcher to worker pods: 4 Processes on pods make 250
//            locked increments each of a Manager's Value and meet at a Barrier, a Pool on pods
//            fetch_adds and fills a Dict, and a pod feeds a bounded Queue the launcher drains
//            (task_done, join); every value checked, each process's pod printed
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"

namespace {

struct Task {
  long x = 0;
  int micros = 0;
};

// x squared, after `micros` of work, and the worker that computed it: "<pod>/<pid>" (a
// replacement pod may reuse a deleted pod's name, never its process).
std::pair<long, std::string> square_on_pod(Task task) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(task.micros);
  while (std::chrono::steady_clock::now() < until) {
  }
  const char* pod = std::getenv("FIBER_K8S_POD_NAME");
  return {task.x * task.x, std::string(pod ? pod : "?") + "/" + std::to_string(::getpid())};
}

std::vector<Task> tasks(long count, int micros, long first = 0) {
  std::vector<Task> out;
  for (long i = 0; i < count; ++i) out.push_back({first + i, micros});
  return out;
}

// Checks every value; returns how many results each worker computed.
std::map<std::string, int> check(const std::vector<Task>& in,
                                 const std::vector<std::pair<long, std::string>>& out) {
  if (in.size() != out.size()) {
    std::printf("FAIL: %zu results for %zu tasks\n", out.size(), in.size());
    std::exit(1);
  }
  std::map<std::string, int> per_pod;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i].first != in[i].x * in[i].x) {
      std::printf("FAIL: result %zu is %ld, not %ld\n", i, out[i].first, in[i].x * in[i].x);
      std::exit(1);
    }
    ++per_pod[out[i].second];
  }
  return per_pod;
}

void print_pods(const char* what, const std::map<std::string, int>& per_pod) {
  std::printf("%s:", what);
  for (const auto& [pod, count] : per_pod) std::printf(" %s=%d", pod.c_str(), count);
  std::printf("\n");
  std::fflush(stdout);
}

int grow() {
  fiber::Pool pool(4);
  const auto start = std::chrono::steady_clock::now();
  pool.wait_ready();
  std::printf("4 workers ready after %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const auto in = tasks(2000, 200);
  print_pods("map of 2000", check(in, pool.map(square_on_pod, in)));
  pool.resize(1);
  std::printf("resized to %d\n", pool.size());
  std::fflush(stdout);
  // The last worker keeps working while the three released pods go.
  const auto more = tasks(300, 20000, 2000);
  print_pods("after resize", check(more, pool.map(square_on_pod, more, 1)));
  return 0;
}

int loss() {
  fiber::Pool pool(4);
  pool.wait_ready();
  std::printf("4 workers ready\n");
  std::fflush(stdout);
  const auto in = tasks(2000, 10000);
  print_pods("map of 2000", check(in, pool.map(square_on_pod, in, 1)));
  return 0;
}

int partition() {
  fiber::Pool pool(4);
  pool.wait_ready();
  std::printf("4 workers ready\n");
  std::fflush(stdout);
  const auto in = tasks(3000, 10000);
  print_pods("map of 3000", check(in, pool.map(square_on_pod, in, 1)));
  pool.wait_ready();
  const auto after = tasks(400, 10000, 3000);
  print_pods("map after", check(after, pool.map(square_on_pod, after, 1)));
  return 0;
}

int leaving() {
  fiber::Pool pool(1);
  pool.wait_ready();
  std::printf("worker %s\n", pool.apply(square_on_pod, Task{0, 0}).second.c_str());
  std::fflush(stdout);
  const auto in = tasks(4, 3'000'000, 1);
  print_pods("map of 4", check(in, pool.map(square_on_pod, in, 1)));
  return 0;
}

int scale() {
  fiber::Pool pool(1);
  pool.wait_ready();
  std::printf("1 worker ready\n");
  std::fflush(stdout);
  std::set<std::string> seen;
  for (int round = 0; round < 600 && seen.size() < 3; ++round) {
    const auto in = tasks(40, 5000, round * 40L);
    for (const auto& [worker, count] : check(in, pool.map(square_on_pod, in, 1)))
      seen.insert(worker.substr(0, worker.find('/')));
  }
  std::printf("pool size %d, tasks ran on %zu pods\n", pool.size(), seen.size());
  return seen.size() >= 3 ? 0 : 1;
}

int regrow() {
  fiber::Pool pool(2);
  pool.wait_ready();
  const auto first = tasks(200, 1000);
  print_pods("first", check(first, pool.map(square_on_pod, first)));
  pool.resize(1);
  const auto alone = tasks(200, 20000, 200);
  print_pods("alone", check(alone, pool.map(square_on_pod, alone, 1)));
  // Growing while a map keeps the launcher's traffic going: the joins happen under load.
  const auto wide = tasks(3000, 2000, 400);
  auto result = pool.map_async(square_on_pod, wide, 1);
  pool.resize(4);
  print_pods("wide", check(wide, result.get()));
  return 0;
}

// A member: its rank, its pod and the group's allreduce of rank + 1 and allgather of rank^2.
void member_on_pod(fiber::SimpleQueue<std::string> out) {
  MPI_Comm comm = fiber::group_comm();
  const int rank = fiber::group_rank();
  const int size = fiber::group_size();
  int mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
  std::vector<int> squares(static_cast<size_t>(size));
  const int square = rank * rank;
  MPI_Allgather(&square, 1, MPI_INT, squares.data(), 1, MPI_INT, comm);
  bool gathered = true;
  for (int r = 0; r < size; ++r) gathered = gathered && squares[static_cast<size_t>(r)] == r * r;
  const char* pod = std::getenv("FIBER_K8S_POD_NAME");
  out.put(std::to_string(rank) + "=" + (pod ? pod : "?") + " sum=" + std::to_string(sum) +
          (gathered ? " gathered" : " WRONG"));
}

int group() {
  fiber::SimpleQueue<std::string> out;
  fiber::Group members(4, member_on_pod, out);
  members.start();
  std::vector<std::string> lines;
  for (int i = 0; i < 4; ++i) lines.push_back(out.get(std::chrono::seconds(240)));
  members.join();
  int failed = 0;
  for (const auto& code : members.exitcodes()) failed += code != 0;
  std::printf("group members:");
  for (const auto& line : lines) std::printf(" [%s]", line.c_str());
  std::printf("\ngroup exit codes not 0: %d\n", failed);
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

// The nested Process: a Pool of 2 of its own, 200 tasks, the results checked; which pods ran them
// goes back through the queue.
void run_nested_pool(fiber::SimpleQueue<std::string> out) {
  fiber::Pool pool(2);
  const auto in = tasks(200, 2000);
  std::string pods;
  for (const auto& [worker, count] : check(in, pool.map(square_on_pod, in, 1)))
    pods += " " + worker.substr(0, worker.find('/')) + "=" + std::to_string(count);
  const char* own = std::getenv("FIBER_K8S_POD_NAME");
  out.put(std::string(own ? own : "?") + ":" + pods);
}

int nested() {
  fiber::SimpleQueue<std::string> out;
  fiber::Process outer(run_nested_pool, out);
  outer.start();
  const std::string line = out.get(std::chrono::seconds(240));
  outer.join();
  std::printf("nested pool on %s\nouter exit code %d\n", line.c_str(),
              outer.exitcode().value_or(-1));
  std::fflush(stdout);
  return outer.exitcode() == 0 ? 0 : 1;
}

int unready() {
  try {
    fiber::Pool pool(2);
    const auto in = tasks(10, 0);
    pool.map(square_on_pod, in);
    std::printf("FAIL: the map ran without workers\n");
    return 1;
  } catch (const fiber::Error& e) {
    // The pool's workers could not start: fiber::SpawnError's text, through the pool's error.
    std::printf("no workers: %s\n", e.what());
    return 3;
  }
}

int guard() {
  fiber::Pool pool(1);
  pool.wait_ready();
  std::printf("1 worker ready\n");
  std::fflush(stdout);
  std::map<std::string, int> per_worker;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(50);
  for (long round = 0; std::chrono::steady_clock::now() < until; ++round) {
    const auto in = tasks(40, 5000, round * 40);
    for (const auto& [worker, count] : check(in, pool.map(square_on_pod, in, 1)))
      per_worker[worker] += count;
  }
  print_pods("guarded maps", per_worker);
  std::printf("pool size %d, %zu workers\n", pool.size(), pool.worker_pids().size());
  return 0;
}

}  // namespace

const char* own_pod() {
  const char* pod = std::getenv("FIBER_K8S_POD_NAME");
  return pod ? pod : "?";
}

void locked_increments(fiber::Lock lock, fiber::Value<long> counter, fiber::Barrier met,
                       fiber::SimpleQueue<std::string> pods) {
  for (int i = 0; i < 250; ++i) {
    std::lock_guard held(lock);
    counter.set(counter.get() + 1);
  }
  met.wait();
  pods.put(own_pod());
}

long count_and_record(fiber::Value<long> total, fiber::Dict<long, std::string> where, long x) {
  total.fetch_add(x);
  where.set(x, own_pod());
  return x;
}

void feed(fiber::Queue<long> queue, long count) {
  for (long i = 0; i < count; ++i) queue.put(i);
}

int shared() {
  fiber::Manager manager;
  // 4 x 250 read-modify-writes under one lock, from 4 pods: exactly 1,000.
  fiber::Lock lock = manager.lock();
  fiber::Value<long> counter = manager.value<long>(0);
  fiber::Barrier met = manager.barrier(4);
  fiber::SimpleQueue<std::string> pods;
  std::vector<fiber::Process> processes;
  for (int i = 0; i < 4; ++i) processes.emplace_back(locked_increments, lock, counter, met, pods);
  for (auto& p : processes) p.start();
  std::set<std::string> on;
  for (int i = 0; i < 4; ++i) on.insert(pods.get(std::chrono::seconds(240)));
  for (auto& p : processes) p.join();
  std::string line;
  for (const auto& pod : on) line += " " + pod;
  std::printf("locked increments %ld on%s\n", counter.get(), line.c_str());

  // fetch_add and a Dict from a pool on pods.
  fiber::Value<long> total = manager.value<long>(0);
  fiber::Dict<long, std::string> where = manager.dict<long, std::string>();
  std::vector<std::tuple<fiber::Value<long>, fiber::Dict<long, std::string>, long>> jobs;
  for (long x = 1; x <= 200; ++x) jobs.emplace_back(total, where, x);
  {
    fiber::Pool pool(2);
    const std::vector<long> back = pool.starmap(count_and_record, jobs, 1);
    for (long x = 1; x <= 200; ++x) {
      if (back[static_cast<size_t>(x - 1)] != x) {
        std::printf("FAIL: result %ld is %ld\n", x - 1, back[static_cast<size_t>(x - 1)]);
        return 1;
      }
    }
  }
  std::map<std::string, int> per_pod;
  for (const auto& [x, pod] : where.items()) ++per_pod[pod];
  std::printf("fetch_add total %ld, dict size %zu\n", total.get(), where.size());
  print_pods("pool on", per_pod);

  // A bounded queue fed from a pod, drained here.
  fiber::Queue<long> queue(8);
  fiber::Process producer(feed, queue, 500L);
  producer.start();
  long sum = 0;
  for (int i = 0; i < 500; ++i) {
    sum += queue.get(std::chrono::seconds(120));
    queue.task_done();
  }
  queue.join();
  producer.join();
  std::printf("queue sum %ld, producer exit code %d\n", sum, producer.exitcode().value_or(-1));
  std::fflush(stdout);
  return 0;
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  const std::string scenario = argc > 1 ? argv[1] : "";
  try {
    if (scenario == "grow") return grow();
    if (scenario == "loss") return loss();
    if (scenario == "partition") return partition();
    if (scenario == "leaving") return leaving();
    if (scenario == "scale") return scale();
    if (scenario == "unready") return unready();
    if (scenario == "regrow") return regrow();
    if (scenario == "group") return group();
    if (scenario == "nested") return nested();
    if (scenario == "guard") return guard();
    if (scenario == "shared") return shared();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: k8s_pool_test "
               "grow|loss|partition|leaving|scale|regrow|unready|group|nested|guard|shared\n");
  return 2;
}
