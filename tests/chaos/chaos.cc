// An ES-like workload that runs for minutes while a killer SIGKILLs a random worker, group member
// or queue producer every few seconds, and counts what was lost or duplicated.
//
// Three parts run side by side, first undisturbed (the calm phase, whose pool throughput is the
// reference), then under the killer:
// - pool: maps of 20,000 short tasks on a pool, alternately imap_unordered (each result names its
//   task, so a result delivered twice or never is seen) and map (each result checked by position);
// - group: groups of members that allreduce over their communicator and check each sum; a group
//   whose restarts pass max_restarts, or pass the kills that hit it, or that ends failed while
//   restarts were left, is an error;
// - queue: producers (killed) put numbered items into a Queue and record in a Manager Dict, after
//   each put returns, the last number put; consumers (not killed) forward what they get to the
//   master and count it in a Manager Value. An item whose put returned (its number at or below
//   the recorded one) and that never came out is lost; an item out twice is duplicated.
//
// The last line is
//   tasks=N kills=K lost=L duplicated=D rss_mb=A->B fds=X->Y throughput=R
// (the master's resident memory and open descriptors at the start and end of the chaos phase; R
// is the pool's tasks per second under chaos over the calm phase's). Exits 1 when anything was
// lost or duplicated or a check failed, 2 on bad arguments.
//
// Usage: chaos [--minutes M] [--calm-seconds S] [--kill-every-ms MS] [--workers W] [--seed N]
#include <malloc.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"

namespace {

using Clock = std::chrono::steady_clock;
using Item = std::pair<int64_t, int64_t>;  // (producer id, number)

constexpr size_t kTasksPerMap = 20000;
constexpr int kGroupSize = 2;
constexpr int kGroupMaxRestarts = 10;
constexpr int kGroupRounds = 200;
constexpr int64_t kItemsPerProducer = 1000;
constexpr int kProducers = 2;
constexpr int kConsumers = 2;
constexpr int64_t kPill = -1;

struct Settings {
  double minutes = 2;
  double calm_seconds = 20;
  int kill_every_ms = 2000;
  int workers = 4;
  uint64_t seed = 0;
};

// ---- the work -----------------------------------------------------------------------------------

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// About 20 µs of arithmetic: a short ES-like evaluation.
uint64_t evaluate(uint64_t id) {
  uint64_t value = id;
  for (int i = 0; i < 2000; ++i) value = mix(value + static_cast<uint64_t>(i));
  return value;
}

std::pair<uint64_t, uint64_t> evaluate_named(uint64_t id) { return {id, evaluate(id)}; }

// A group member: rounds of allreduce, each sum checked; a wrong sum fails the member.
void allreduce_rounds(int rounds) {
  MPI_Comm comm = fiber::group_comm();
  const int64_t size = fiber::group_size();
  const int64_t rank = fiber::group_rank();
  for (int64_t round = 0; round < rounds; ++round) {
    int64_t mine = rank + 1 + round, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, comm);
    if (sum != size * (size + 1) / 2 + size * round) {
      std::fprintf(stderr,
                   "chaos: group member %" PRId64 " got sum %" PRId64 " in round %" PRId64 "\n",
                   rank, sum, round);
      std::exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void produce(int64_t id, fiber::Queue<Item> items, fiber::Dict<int64_t, int64_t> progress) {
  for (int64_t number = 0; number < kItemsPerProducer; ++number) {
    items.put({id, number});
    progress.set(id, number);  // put returned: this item must come out
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void consume(fiber::Queue<Item> items, fiber::Queue<Item> out, fiber::Value<int64_t> consumed) {
  for (;;) {
    const Item item = items.get();
    if (item.first == kPill) {
      out.put(item);
      return;
    }
    consumed.fetch_add(1);
    out.put(item);
  }
}

// ---- the master's side --------------------------------------------------------------------------

struct Totals {
  std::atomic<uint64_t> tasks{0};
  std::atomic<uint64_t> lost{0};
  std::atomic<uint64_t> duplicated{0};
  std::atomic<uint64_t> errors{0};
};

void report_error(Totals& totals, const std::string& what) {
  ++totals.errors;
  std::fprintf(stderr, "chaos: %s\n", what.c_str());
}

double rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

// What malloc holds in use: with rss_mb, tells growth of the heap from mapped memory (shared
// memory segments of the MPI's transports).
double heap_mb() { return static_cast<double>(mallinfo2().uordblks) / (1024.0 * 1024.0); }

size_t open_fds() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

// The pids the killer may pick from, by kind; each part publishes its own.
class Targets {
 public:
  enum Kind { kWorker, kMember, kProducer, kKinds };

  void set(Kind kind, std::vector<int> pids) {
    std::lock_guard lock(mutex_);
    pids_[kind] = std::move(pids);
  }
  std::vector<int> get(Kind kind) const {
    std::lock_guard lock(mutex_);
    return pids_[kind];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<int> pids_[kKinds];
};

// The pool part: maps until `stop`; returns the tasks done.
uint64_t run_maps(fiber::Pool& pool, const std::atomic<bool>& stop, uint64_t& next_id,
                  Totals& totals) {
  uint64_t done = 0;
  for (int round = 0; !stop; ++round) {
    std::vector<uint64_t> ids(kTasksPerMap);
    std::iota(ids.begin(), ids.end(), next_id);
    next_id += kTasksPerMap;
    try {
      if (round % 2 == 0) {
        std::vector<uint8_t> seen(kTasksPerMap, 0);
        for (const auto& [id, value] : pool.imap_unordered(evaluate_named, ids, 16)) {
          const uint64_t index = id - ids.front();
          if (index >= kTasksPerMap || value != evaluate(id)) {
            report_error(totals, "imap_unordered gave a result for no task of its map: id " +
                                     std::to_string(id));
            continue;
          }
          if (++seen[index] == 2) ++totals.duplicated;
        }
        const auto missing = static_cast<uint64_t>(std::count(seen.begin(), seen.end(), 0));
        totals.lost += missing;
      } else {
        const auto results = pool.map(evaluate, ids);
        uint64_t wrong = 0;
        for (size_t i = 0; i < ids.size(); ++i) wrong += results.at(i) != evaluate(ids[i]);
        if (results.size() != ids.size() || wrong != 0)
          report_error(totals, "map of " + std::to_string(ids.size()) + " gave " +
                                   std::to_string(results.size()) + " results, " +
                                   std::to_string(wrong) + " wrong");
      }
    } catch (const fiber::Error& e) {
      report_error(totals, std::string("a map failed: ") + e.what());
      continue;
    }
    done += kTasksPerMap;
    totals.tasks += kTasksPerMap;
  }
  return done;
}

// The group part: one group after another until `stop`.
class GroupPart {
 public:
  GroupPart(Targets& targets, Totals& totals) : targets_(targets), totals_(totals) {}

  void run(const std::atomic<bool>& stop) {
    while (!stop) {
      fiber::Group group(fiber::Group::Options{kGroupSize, kGroupMaxRestarts}, allreduce_rounds,
                         kGroupRounds);
      kills_ = 0;
      group.start();
      while (!group.join(std::chrono::milliseconds(50)))
        targets_.set(Targets::kMember,
                     kills_ < kGroupMaxRestarts ? group.member_pids() : std::vector<int>{});
      targets_.set(Targets::kMember, {});
      check(group);
      restarts_ += group.restarts();
      ++groups_;
    }
  }

  // The killer hit one of the current group's members.
  void killed() { ++kills_; }
  int groups() const { return groups_; }
  int restarts() const { return restarts_; }

 private:
  void check(const fiber::Group& group) {
    const int restarts = group.restarts();
    const int kills = kills_;
    if (restarts > kGroupMaxRestarts || restarts > kills)
      report_error(totals_, "a group restarted " + std::to_string(restarts) + " times after " +
                                std::to_string(kills) + " kills (max_restarts " +
                                std::to_string(kGroupMaxRestarts) + ")");
    int failed = 0;
    for (const auto& code : group.exitcodes()) failed += code != 0;
    if (failed != 0 && restarts < kGroupMaxRestarts)
      report_error(totals_, "a group ended with " + std::to_string(failed) +
                                " failed members and restarts left (" + std::to_string(restarts) +
                                " of " + std::to_string(kGroupMaxRestarts) + ")");
  }

  Targets& targets_;
  Totals& totals_;
  std::atomic<int> kills_{0};
  std::atomic<int> groups_{0};
  std::atomic<int> restarts_{0};
};

// The queue part: producers kept running until `stop`, consumers forwarding to `out`.
class QueuePart {
 public:
  QueuePart(Targets& targets, Totals& totals)
      : targets_(targets),
        totals_(totals),
        progress_(manager_.dict<int64_t, int64_t>()),
        consumed_(manager_.value<int64_t>(0)) {}

  void run(const std::atomic<bool>& stop) {
    std::vector<fiber::Process> consumers;
    for (int i = 0; i < kConsumers; ++i) {
      consumers.emplace_back(consume, items_, out_, consumed_);
      consumers.back().start();
    }
    std::thread drain([&] { drain_out(); });
    std::vector<fiber::Process> producers;
    while (!stop) {
      std::erase_if(producers, [](fiber::Process& p) { return !p.is_alive(); });
      while (static_cast<int>(producers.size()) < kProducers) {
        producers.emplace_back(produce, next_producer_++, items_, progress_);
        producers.back().start();
      }
      std::vector<int> pids;
      for (const auto& p : producers) pids.push_back(p.pid());
      targets_.set(Targets::kProducer, pids);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    targets_.set(Targets::kProducer, {});
    for (auto& p : producers) p.join();
    for (int i = 0; i < kConsumers; ++i) items_.put({kPill, 0});
    drain.join();
    for (auto& c : consumers) c.join();
    count();
  }

 private:
  void drain_out() {
    for (int pills = 0; pills < kConsumers;) {
      const Item item = out_.get();
      if (item.first == kPill) {
        ++pills;
        continue;
      }
      ++received_[item];
    }
  }

  void count() {
    uint64_t lost = 0, duplicated = 0, received = 0;
    for (const auto& [item, times] : received_) {
      received += times;
      if (times > 1) duplicated += times - 1;
    }
    for (const auto& [id, last] : progress_.items())
      for (int64_t number = 0; number <= last; ++number)
        if (!received_.contains({id, number})) ++lost;
    totals_.lost += lost;
    totals_.duplicated += duplicated;
    const int64_t consumed = consumed_.get();
    if (static_cast<uint64_t>(consumed) != received)
      report_error(totals_, "the consumers counted " + std::to_string(consumed) +
                                " items in the Manager Value, the master received " +
                                std::to_string(received));
    std::printf("queue: %" PRId64 " producers, %" PRIu64 " items out, %" PRIu64 " lost, %" PRIu64
                " duplicated\n",
                next_producer_, received, lost, duplicated);
  }

  Targets& targets_;
  Totals& totals_;
  fiber::Manager manager_;
  fiber::Queue<Item> items_;
  fiber::Queue<Item> out_;
  fiber::Dict<int64_t, int64_t> progress_;
  fiber::Value<int64_t> consumed_;
  std::map<Item, uint64_t> received_;
  int64_t next_producer_ = 0;
};

// SIGKILLs a random target every `every` until `stop`; returns the kills by kind.
std::vector<int> kill_until(const std::atomic<bool>& stop, std::chrono::milliseconds every,
                            uint64_t seed, Targets& targets, GroupPart& groups) {
  std::mt19937_64 random(seed);
  std::vector<int> kills(Targets::kKinds, 0);
  auto next = Clock::now() + every;
  while (!stop) {
    if (Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    next += every;
    std::vector<std::pair<Targets::Kind, int>> candidates;
    for (int kind = 0; kind < Targets::kKinds; ++kind)
      for (int pid : targets.get(static_cast<Targets::Kind>(kind)))
        if (pid > 0) candidates.emplace_back(static_cast<Targets::Kind>(kind), pid);
    if (candidates.empty()) continue;
    // A kind first, then one of its processes: each kind is hit about as often.
    std::vector<Targets::Kind> kinds;
    for (const auto& [kind, pid] : candidates)
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    const auto kind = kinds[random() % kinds.size()];
    std::vector<int> pids;
    for (const auto& [k, pid] : candidates)
      if (k == kind) pids.push_back(pid);
    if (::kill(pids[random() % pids.size()], SIGKILL) != 0) continue;
    ++kills[kind];
    if (kind == Targets::kMember) groups.killed();
  }
  return kills;
}

std::optional<Settings> parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "chaos: %s needs a value\n", flag.c_str());
      return std::nullopt;
    }
    char* end = nullptr;
    const double value = std::strtod(argv[++i], &end);
    if (end == argv[i] || *end != '\0' || value < 0) {
      std::fprintf(stderr, "chaos: %s takes a number at or above 0, not '%s'\n", flag.c_str(),
                   argv[i]);
      return std::nullopt;
    }
    if (flag == "--minutes")
      settings.minutes = value;
    else if (flag == "--calm-seconds")
      settings.calm_seconds = value;
    else if (flag == "--kill-every-ms")
      settings.kill_every_ms = std::max(1, static_cast<int>(value));
    else if (flag == "--workers")
      settings.workers = std::max(1, static_cast<int>(value));
    else if (flag == "--seed")
      settings.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr,
                   "chaos: unknown option %s (--minutes, --calm-seconds, --kill-every-ms, "
                   "--workers, --seed)\n",
                   flag.c_str());
      return std::nullopt;
    }
  }
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker process this serves and never returns
  auto settings = parse(argc, argv);
  if (!settings) return 2;
  if (settings->seed == 0) settings->seed = std::random_device{}();
  std::printf("chaos: %.1f min, %.0f s calm, a kill every %d ms, %d workers, seed %" PRIu64 "\n",
              settings->minutes, settings->calm_seconds, settings->kill_every_ms, settings->workers,
              settings->seed);
  std::fflush(stdout);

  Totals totals;
  Targets targets;
  fiber::Pool::Options options;
  options.processes = settings->workers;
  // Kills are random: a task whose workers die several times in a row is bad luck here, not a
  // poison task.
  options.max_task_retries = 50;
  fiber::Pool pool(options);
  pool.wait_ready();
  GroupPart groups(targets, totals);
  QueuePart queues(targets, totals);

  std::atomic<bool> stop{false}, stop_killer{false};
  std::atomic<uint64_t> maps{0};
  std::thread pool_thread([&] {
    uint64_t next_id = 0;
    maps = run_maps(pool, stop, next_id, totals) / kTasksPerMap;
  });
  std::thread group_thread([&] { groups.run(stop); });
  std::thread queue_thread([&] { queues.run(stop); });
  auto publish_workers_for = [&](double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      targets.set(Targets::kWorker, pool.worker_pids());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };

  // The first seconds start every part's processes: not counted in the reference.
  const double warm_up = std::min(5.0, settings->calm_seconds / 3);
  publish_workers_for(warm_up);
  const auto calm_start = Clock::now();
  const uint64_t calm_tasks_before = totals.tasks;
  publish_workers_for(settings->calm_seconds - warm_up);
  const double calm_rate = static_cast<double>(totals.tasks - calm_tasks_before) /
                           std::chrono::duration<double>(Clock::now() - calm_start).count();

  const double rss_before = rss_mb();
  const double heap_before = heap_mb();
  const size_t fds_before = open_fds();
  const auto chaos_start = Clock::now();
  const uint64_t chaos_tasks_before = totals.tasks;
  std::vector<int> kills;
  std::thread killer([&] {
    kills = kill_until(stop_killer, std::chrono::milliseconds(settings->kill_every_ms),
                       settings->seed, targets, groups);
  });
  publish_workers_for(std::max(0.0, settings->minutes * 60 - settings->calm_seconds));
  stop_killer = true;
  killer.join();
  const double chaos_rate = static_cast<double>(totals.tasks - chaos_tasks_before) /
                            std::chrono::duration<double>(Clock::now() - chaos_start).count();
  const double rss_after = rss_mb();
  const double heap_after = heap_mb();
  const size_t fds_after = open_fds();

  stop = true;
  pool_thread.join();
  group_thread.join();
  queue_thread.join();

  const int all_kills = std::accumulate(kills.begin(), kills.end(), 0);
  std::printf("pool: %" PRIu64 " maps, calm %.0f tasks/s, chaos %.0f tasks/s\n", maps.load(),
              calm_rate, chaos_rate);
  std::printf("group: %d groups, %d restarts\n", groups.groups(), groups.restarts());
  std::printf("kills: %d workers, %d group members, %d producers\n", kills[Targets::kWorker],
              kills[Targets::kMember], kills[Targets::kProducer]);
  std::printf("memory: heap in use %.1f->%.1f MB\n", heap_before, heap_after);
  std::printf("errors=%" PRIu64 "\n", totals.errors.load());
  std::printf("tasks=%" PRIu64 " kills=%d lost=%" PRIu64 " duplicated=%" PRIu64
              " rss_mb=%.0f->%.0f fds=%zu->%zu throughput=%.2f\n",
              totals.tasks.load(), all_kills, totals.lost.load(), totals.duplicated.load(),
              rss_before, rss_after, fds_before, fds_after,
              calm_rate > 0 ? chaos_rate / calm_rate : 0.0);
  const bool clean = totals.lost == 0 && totals.duplicated == 0 && totals.errors == 0;
  return clean ? 0 : 1;
}
