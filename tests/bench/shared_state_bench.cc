// Shared-state figures, each operation called from worker processes: Dict set+get, Lock
// acquire+release, Value fetch_add, Queue put+get, and a joinable queue's throughput with 4
// producers and 4 consumers. Prints one JSON object per line. Run as ./shared_state_bench
// (spawned workers) or under mpirun -n 9 (static-world ranks, shared memory); "impl" says which.
// tests/bench/python_manager_bench.py runs the same workload with Python's multiprocessing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"

namespace {

using Clock = std::chrono::steady_clock;
using fiber::bench::median;
using fiber::bench::percentile;
using fiber::bench::seconds;

using Samples = std::vector<double>;

// Times `op` `count` times (after a warm-up of a tenth), in microseconds per call.
template <class Op>
Samples time_calls(int count, Op op) {
  return fiber::bench::time_calls_us(count, count / 10, op);
}

}  // namespace

void dict_set_get(fiber::Dict<std::string, double> scores, int count,
                  fiber::SimpleQueue<Samples> out) {
  out.put(time_calls(count, [&](int i) {
    scores.set("m3", static_cast<double>(i));
    if (!scores.get("m3")) std::abort();
  }));
}

void lock_acquire_release(fiber::Lock lock, int count, fiber::SimpleQueue<Samples> out) {
  out.put(time_calls(count, [&](int) {
    lock.acquire();
    lock.release();
  }));
}

void value_fetch_add(fiber::Value<long> counter, int count, fiber::SimpleQueue<Samples> out) {
  out.put(time_calls(count, [&](int) { counter.fetch_add(1); }));
}

void queue_put_get(fiber::Queue<int> queue, int count, fiber::SimpleQueue<Samples> out) {
  out.put(time_calls(count, [&](int i) {
    queue.put(i);
    queue.get();
  }));
}

void produce(fiber::Queue<int> queue, int count, fiber::Event go,
             fiber::SimpleQueue<int> progress) {
  progress.put(0);
  go.wait();
  for (int i = 0; i < count; ++i) queue.put(i);
  progress.put(1);
}

void consume(fiber::Queue<int> queue, fiber::SimpleQueue<int> progress) {
  progress.put(0);
  for (;;) {
    const int item = queue.get();
    queue.task_done();
    if (item < 0) return;
  }
}

namespace {

// One worker process runs `body(handle, count, out)`; its samples come back.
template <class Handle>
Samples from_a_worker(void (*body)(Handle, int, fiber::SimpleQueue<Samples>), Handle handle,
                      int count) {
  fiber::SimpleQueue<Samples> out;
  fiber::Process worker(body, handle, count, out);
  worker.start();
  Samples samples = out.get();
  worker.join();
  return samples;
}

void print_latency(const std::string& impl, const char* op, const Samples& us) {
  std::printf(
      "{\"bench\":\"shared_op\",\"impl\":\"%s\",\"op\":\"%s\",\"p50_us\":%.2f,"
      "\"p99_us\":%.2f}\n",
      impl.c_str(), op, median(us), percentile(us, 0.99));
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  fiber::init(argc, argv);
  const int calls = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int items = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const std::string impl = fiber::bench::fibermpi_impl();

  fiber::Manager manager;
  print_latency(impl, "dict_set_get",
                from_a_worker(dict_set_get, manager.dict<std::string, double>(), calls));
  print_latency(impl, "lock_acquire_release",
                from_a_worker(lock_acquire_release, manager.lock(), calls));
  print_latency(impl, "value_fetch_add",
                from_a_worker(value_fetch_add, manager.value<long>(0), calls));
  print_latency(impl, "queue_put_get", from_a_worker(queue_put_get, fiber::Queue<int>(), calls));

  // A joinable queue fed by 4 producers and drained by 4 consumers; the master joins it.
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  Samples rates;
  for (int r = 0; r < repeats; ++r) {
    fiber::Queue<int> queue(1024);
    fiber::Event go = manager.event();
    fiber::SimpleQueue<int> progress;
    std::vector<fiber::Process> processes;
    for (int c = 0; c < kConsumers; ++c) processes.emplace_back(consume, queue, progress);
    for (int p = 0; p < kProducers; ++p)
      processes.emplace_back(produce, queue, items / kProducers, go, progress);
    for (auto& p : processes) p.start();
    // Timed from when every process is ready, so that start-up is not counted; done when the
    // producers have put everything and every item was task_done().
    for (size_t i = 0; i < processes.size(); ++i) progress.get();
    const auto start = Clock::now();
    go.set();
    for (int p = 0; p < kProducers; ++p) progress.get();
    queue.join();
    const double elapsed = seconds(Clock::now() - start);
    rates.push_back(static_cast<double>(items) / elapsed);
    for (int c = 0; c < kConsumers; ++c) queue.put(-1);
    for (auto& p : processes) p.join();
  }
  std::printf(
      "{\"bench\":\"joinable_queue\",\"impl\":\"%s\",\"producers\":%d,\"consumers\":%d,"
      "\"items_per_s\":%.0f}\n",
      impl.c_str(), kProducers, kConsumers, median(rates));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("shared_state_bench", run, argc, argv);
}
