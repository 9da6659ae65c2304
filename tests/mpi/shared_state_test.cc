// Shared state across real processes: the joinable, bounded fiber::Queue (back-pressure,
// task_done/join with several consumers, Full/Empty) and a fiber::Manager's objects (Dict, List,
// Value, Lock, Event, Barrier, proxies of a user's class), used from Processes, pool tasks and a
// Manager made inside a worker. Suites ending in Fault kill a peer (a lock holder, a barrier
// party, a consumer), each test a program run of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "test_support.h"

using namespace std::chrono_literals;
using fiber::testing::seconds_since;

namespace {

std::vector<int> iota(int n, int from = 0) {
  std::vector<int> values(n);
  std::iota(values.begin(), values.end(), from);
  return values;
}

// ---- Queue ----

void put_all_reporting(fiber::Queue<int> q, int count, fiber::SimpleQueue<int> progress) {
  for (int i = 0; i < count; ++i) {
    q.put(i);
    progress.put(i);
  }
}

TEST(Queue, BoundedQueueHoldsBackAProducer) {
  fiber::Queue<int> q(4);
  fiber::SimpleQueue<int> progress;
  fiber::Process producer(put_all_reporting, q, 20, progress);
  producer.start();
  // The producer gets four items in, then waits for room.
  int reported = 0;
  for (; reported < 4; ++reported) EXPECT_EQ(progress.get(30s), reported);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(progress.empty());
  EXPECT_EQ(q.qsize(), 4u);
  EXPECT_TRUE(q.full());
  // Each get lets one more in; the items come in order.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(q.get(30s), i);
  producer.join();
  EXPECT_EQ(producer.exitcode(), 0);
  EXPECT_TRUE(q.empty());
}

TEST(Queue, FullAndEmptyAreTimeouts) {
  fiber::Queue<std::string> q(1);
  q.put_nowait("a");
  EXPECT_THROW(q.put_nowait("b"), fiber::Full);
  const auto start = std::chrono::steady_clock::now();
  try {
    q.put("b", 100ms);
    FAIL() << "expected Full";
  } catch (const fiber::TimeoutError& e) {  // Full is a TimeoutError
    EXPECT_NE(dynamic_cast<const fiber::Full*>(&e), nullptr);
    EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
  }
  EXPECT_GE(seconds_since(start), 0.09);
  EXPECT_EQ(q.get_nowait(), "a");
  EXPECT_THROW(q.get_nowait(), fiber::Empty);
  EXPECT_THROW(q.get(50ms), fiber::Empty);
  try {
    q.get(10ms);
  } catch (const fiber::TimeoutError&) {  // Empty is a TimeoutError
  }
  EXPECT_EQ(q.maxsize(), 1u);
  fiber::Queue<int> unbounded;
  for (int i = 0; i < 100; ++i) unbounded.put_nowait(i);
  EXPECT_FALSE(unbounded.full());
  EXPECT_EQ(unbounded.qsize(), 100u);
}

void consume_and_mark_done(fiber::Queue<int> q, fiber::SimpleQueue<std::vector<int>> results) {
  std::vector<int> taken;
  for (;;) {
    const int item = q.get();
    q.task_done();
    if (item < 0) break;
    taken.push_back(item);
  }
  results.put(taken);
}

TEST(Queue, TaskDoneAndJoinWithThreeConsumers) {
  constexpr int kItems = 300;
  constexpr int kConsumers = 3;
  fiber::Queue<int> q(16);
  fiber::SimpleQueue<std::vector<int>> results;
  std::vector<fiber::Process> consumers;
  for (int c = 0; c < kConsumers; ++c) consumers.emplace_back(consume_and_mark_done, q, results);
  for (auto& c : consumers) c.start();
  for (int i = 0; i < kItems; ++i) q.put(i);
  q.join();  // every item taken and marked done
  EXPECT_TRUE(q.empty());
  for (int c = 0; c < kConsumers; ++c) q.put(-1);
  std::vector<int> all;
  for (int c = 0; c < kConsumers; ++c) {
    const auto taken = results.get(60s);
    EXPECT_TRUE(std::is_sorted(taken.begin(), taken.end()));  // one producer: FIFO
    all.insert(all.end(), taken.begin(), taken.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(kItems));
  q.join();
  for (auto& c : consumers) {
    c.join();
    EXPECT_EQ(c.exitcode(), 0);
  }
}

TEST(Queue, TaskDoneMoreOftenThanPutIsAUsageError) {
  fiber::Queue<int> q;
  q.put(1);
  EXPECT_EQ(q.get(), 1);
  q.task_done();
  try {
    q.task_done();
    FAIL() << "expected UsageError";
  } catch (const fiber::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more times than items were put"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(q.join(1s));
  q.put(2);
  EXPECT_FALSE(q.join(50ms));
}

void take_one_and_mark_done(fiber::Queue<int> q) {
  q.get();
  q.task_done();
}

TEST(Queue, TaskDoneInAChildLetsTheMasterJoin) {
  fiber::Queue<int> q;
  q.put(7);
  fiber::Process p(take_one_and_mark_done, q);
  p.start();
  q.join();
  p.join();
  EXPECT_EQ(p.exitcode(), 0);
}

void put_three(fiber::Queue<int> q) {
  for (int i = 0; i < 3; ++i) q.put(i);
}

TEST(Queue, GetAfterEveryProducerEndedGetsEOF) {
  fiber::Queue<int> q(8);
  fiber::Process p(put_three, q);
  p.start();
  p.join();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.get(), i);
  // The master gave its handle to a child and never put: nobody can put any more.
  EXPECT_THROW(q.get(), fiber::EOFError);
  EXPECT_THROW(q.get_nowait(), fiber::Empty);  // the _nowait calls throw Empty only
}

// ---- Manager: Dict, List, Value ----

void record_score(fiber::Dict<std::string, double> scores, int member) {
  scores.set("m" + std::to_string(member), member * 0.5);
}

TEST(Manager, DictFromTheMasterAndFromProcesses) {
  fiber::Manager manager;
  auto scores = manager.dict<std::string, double>();
  EXPECT_FALSE(scores.get("m3").has_value());
  scores.set("m3", 1.5);
  EXPECT_EQ(scores.get("m3"), std::optional<double>(1.5));
  EXPECT_TRUE(scores.contains("m3"));
  EXPECT_TRUE(scores.erase("m3"));
  EXPECT_FALSE(scores.erase("m3"));
  EXPECT_FALSE(scores.contains("m3"));
  std::vector<fiber::Process> members;
  for (int m = 0; m < 4; ++m) members.emplace_back(record_score, scores, m);
  for (auto& p : members) p.start();
  for (auto& p : members) {
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
  }
  EXPECT_EQ(scores.size(), 4u);
  auto items = scores.items();
  std::sort(items.begin(), items.end());
  ASSERT_EQ(items.size(), 4u);
  for (int m = 0; m < 4; ++m) {
    EXPECT_EQ(items[m].first, "m" + std::to_string(m));
    EXPECT_DOUBLE_EQ(items[m].second, m * 0.5);
  }
  scores.set("m0", 9.0);  // a new value keeps the entry's place
  EXPECT_EQ(scores.get("m0", -1.0), 9.0);
  EXPECT_EQ(scores.get("absent", -1.0), -1.0);
  scores.clear();
  EXPECT_EQ(scores.size(), 0u);
}

void append_range(fiber::List<int> list, int from) {
  for (int i = from; i < from + 10; ++i) list.append(i);
}

TEST(Manager, ListAndItsRangeErrors) {
  fiber::Manager manager;
  auto l = manager.list<int>();
  l.append(4);
  EXPECT_EQ(l.get(0), 4);
  l.set(0, 5);
  EXPECT_EQ(l.values(), std::vector<int>{5});
  try {
    l.get(3);
    FAIL() << "expected UsageError";
  } catch (const fiber::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("index 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has 1 item"), std::string::npos) << e.what();
  }
  EXPECT_THROW(l.set(1, 0), fiber::UsageError);
  fiber::Process a(append_range, l, 100);
  fiber::Process b(append_range, l, 200);
  a.start();
  b.start();
  a.join();
  b.join();
  EXPECT_EQ(l.size(), 21u);
  auto values = l.values();
  // Each process's appends keep their order.
  EXPECT_EQ(values.front(), 5);
  std::vector<int> from_a, from_b;
  for (int v : values) {
    if (v >= 200) {
      from_b.push_back(v);
    } else if (v >= 100) {
      from_a.push_back(v);
    }
  }
  EXPECT_EQ(from_a, iota(10, 100));
  EXPECT_EQ(from_b, iota(10, 200));
}

long add_one(fiber::Value<long> counter, int) { return counter.fetch_add(1); }

TEST(Manager, FetchAddFromAPoolLosesNoUpdate) {
  fiber::Manager manager;
  fiber::Value<long> n = manager.value<long>(0);
  EXPECT_EQ(n.get(), 0);
  n.set(7);
  EXPECT_EQ(n.fetch_add(1), 7);  // returns the old value
  n.set(0);
  fiber::Pool pool(4);
  const auto olds = pool.starmap(add_one, [&] {
    std::vector<std::tuple<fiber::Value<long>, int>> args;
    for (int i = 0; i < 1000; ++i) args.emplace_back(n, i);
    return args;
  }());
  EXPECT_EQ(n.get(), 1000);
  std::set<long> distinct(olds.begin(), olds.end());
  EXPECT_EQ(distinct.size(), 1000u);
  EXPECT_EQ(*distinct.begin(), 0);
  EXPECT_EQ(*distinct.rbegin(), 999);
  auto ratio = manager.value<double>(0.25);
  EXPECT_DOUBLE_EQ(ratio.fetch_add(0.5), 0.25);
  EXPECT_DOUBLE_EQ(ratio.get(), 0.75);
}

// ---- Lock, Event, Barrier ----

void locked_increments(fiber::Lock lock, fiber::Value<long> counter, int times) {
  for (int i = 0; i < times; ++i) {
    std::lock_guard guard(lock);
    const long seen = counter.get();  // a read and a write: only the lock makes them one step
    counter.set(seen + 1);
  }
}

TEST(Manager, FourProcessesTimes250LockedIncrementsMakeExactly1000) {
  fiber::Manager manager;
  auto lock = manager.lock();
  auto counter = manager.value<long>(0);
  std::vector<fiber::Process> workers;
  for (int w = 0; w < 4; ++w) workers.emplace_back(locked_increments, lock, counter, 250);
  for (auto& p : workers) p.start();
  for (auto& p : workers) {
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
  }
  EXPECT_EQ(counter.get(), 1000);
  EXPECT_FALSE(lock.locked());
}

TEST(Manager, LockTimeoutsAndMisuse) {
  fiber::Manager manager;
  auto lock = manager.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.locked());
  EXPECT_FALSE(lock.try_lock());  // not recursive
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(lock.acquire(100ms));
  EXPECT_GE(seconds_since(start), 0.09);
  lock.release();
  EXPECT_THROW(lock.release(), fiber::UsageError);
  EXPECT_TRUE(lock.acquire(1s));
  lock.unlock();
}

void wait_for_event(fiber::Event ev, fiber::SimpleQueue<int> woke) {
  woke.put(ev.wait(30s) ? 1 : 0);
}

TEST(Manager, EventWakesEveryWaiter) {
  fiber::Manager manager;
  auto ev = manager.event();
  EXPECT_FALSE(ev.is_set());
  EXPECT_FALSE(ev.wait(50ms));
  fiber::SimpleQueue<int> woke;
  std::vector<fiber::Process> waiters;
  for (int w = 0; w < 3; ++w) waiters.emplace_back(wait_for_event, ev, woke);
  for (auto& p : waiters) p.start();
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(woke.empty());
  ev.set();
  for (int w = 0; w < 3; ++w) EXPECT_EQ(woke.get(30s), 1);
  EXPECT_TRUE(ev.is_set());
  ev.wait();
  ev.clear();
  EXPECT_FALSE(ev.is_set());
  for (auto& p : waiters) p.join();
}

void wait_at_barrier(fiber::Barrier barrier, fiber::SimpleQueue<long> indices) {
  indices.put(static_cast<long>(barrier.wait(30s)));
}

TEST(Manager, BarrierReleasesAllPartiesAndBreaksOnTimeout) {
  fiber::Manager manager;
  auto barrier = manager.barrier(4);
  fiber::SimpleQueue<long> indices;
  std::vector<fiber::Process> parties;
  for (int p = 0; p < 3; ++p) parties.emplace_back(wait_at_barrier, barrier, indices);
  for (auto& p : parties) p.start();
  std::set<long> seen{static_cast<long>(barrier.wait(30s))};
  for (int p = 0; p < 3; ++p) seen.insert(indices.get(30s));
  EXPECT_EQ(seen, (std::set<long>{0, 1, 2, 3}));
  for (auto& p : parties) p.join();
  // Reusable; a wait that times out breaks it for everybody until reset.
  try {
    barrier.wait(100ms);
    FAIL() << "expected BrokenBarrierError";
  } catch (const fiber::BrokenBarrierError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(barrier.broken());
  EXPECT_THROW(barrier.wait(), fiber::BrokenBarrierError);
  barrier.reset();
  EXPECT_FALSE(barrier.broken());
  EXPECT_EQ(barrier.n_waiting(), 0u);
  EXPECT_THROW(manager.barrier(0), fiber::UsageError);
}

// ---- Proxies of a user's class ----

class Counter {
 public:
  explicit Counter(int start) : total_(start) {}
  virtual ~Counter() = default;
  int add(int amount) { return total_ += amount; }
  int total() const { return total_; }
  void fail(const std::string& why) { throw std::invalid_argument(why); }
  virtual std::string kind() const { return "counter"; }
  void nap(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

 private:
  int total_;
};

class Slow {
 public:
  Slow() = default;
  void sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
};

void add_many(fiber::Proxy<Counter> c, int times) {
  for (int i = 0; i < times; ++i) c.call(&Counter::add, 1);
}

TEST(Manager, ProxyOfAUserClass) {
  fiber::Manager manager;
  fiber::Proxy<Counter> c = manager.make<Counter>(5);
  int total = c.call(&Counter::add, 1);
  EXPECT_EQ(total, 6);
  EXPECT_EQ(c.call(&Counter::total), 6);
  EXPECT_EQ(c.call(&Counter::kind), "counter");  // virtual
  try {
    c.call(&Counter::fail, std::string("no such move"));
    FAIL() << "expected RemoteError";
  } catch (const fiber::RemoteError& e) {
    EXPECT_EQ(e.type_name(), "std::invalid_argument");
    EXPECT_EQ(e.message(), "no such move");
  }
  std::vector<fiber::Process> adders;
  for (int a = 0; a < 3; ++a) adders.emplace_back(add_many, c, 100);
  for (auto& p : adders) p.start();
  for (auto& p : adders) {
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
  }
  EXPECT_EQ(c.call(&Counter::total), 306);
}

void nap_there(fiber::Proxy<Slow> slow, int ms) { slow.call(&Slow::sleep, ms); }

TEST(Manager, ASlowMemberFunctionHoldsUpNoOtherObject) {
  fiber::Manager manager;
  auto slow = manager.make<Slow>();
  auto counter = manager.make<Counter>(0);
  auto d = manager.dict<int, int>();
  fiber::Process napper(nap_there, slow, 1500);
  napper.start();
  std::this_thread::sleep_for(300ms);  // the napper's call is running in the master now
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    counter.call(&Counter::add, 1);
    d.set(i, i);
  }
  EXPECT_LT(seconds_since(start), 0.5);
  napper.join();
  EXPECT_EQ(napper.exitcode(), 0);
}

// ---- A Manager made inside a worker ----

void make_and_fill(fiber::SimpleQueue<fiber::Dict<std::string, int>> out) {
  fiber::Manager manager;
  auto d = manager.dict<std::string, int>();
  d.set("made", 1);
  d.set("in", 2);
  d.set("a worker", 3);
  out.put(d);
}

TEST(Manager, MadeInsideAWorker) {
  fiber::SimpleQueue<fiber::Dict<std::string, int>> out;
  fiber::Process p(make_and_fill, out);
  p.start();
  auto d = out.get(60s);
  p.join();
  EXPECT_EQ(p.exitcode(), 0);
  // Its objects live in the master: they outlive the process that made them.
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.get("a worker"), std::optional<int>(3));
}

// ---- Dead peers ----

void hold_lock_and_die(fiber::Lock lock, fiber::SimpleQueue<int> ready) {
  lock.acquire();
  ready.put(1);
  ::raise(SIGKILL);
}

TEST(ManagerFault, ALockHolderKilledReleasesTheLock) {
  fiber::Manager manager;
  auto lock = manager.lock();
  fiber::SimpleQueue<int> ready;
  fiber::Process holder(hold_lock_and_die, lock, ready);
  holder.start();
  EXPECT_EQ(ready.get(60s), 1);
  EXPECT_TRUE(lock.acquire(30s));
  holder.join();
  EXPECT_EQ(holder.exitcode(), -SIGKILL);
  lock.release();
}

void wait_at_barrier_and_report(fiber::Barrier barrier, fiber::SimpleQueue<int> pid) {
  pid.put(static_cast<int>(::getpid()));
  barrier.wait();
}

TEST(ManagerFault, ABarrierPartyKilledBreaksTheBarrier) {
  fiber::Manager manager;
  auto barrier = manager.barrier(3);
  fiber::SimpleQueue<int> pid;
  fiber::Process party(wait_at_barrier_and_report, barrier, pid);
  party.start();
  const int party_pid = pid.get(60s);
  std::thread killer([&] {
    while (barrier.n_waiting() < 2) std::this_thread::sleep_for(10ms);
    ::kill(party_pid, SIGKILL);
  });
  try {
    barrier.wait(60s);
    ADD_FAILURE() << "expected BrokenBarrierError";
  } catch (const fiber::BrokenBarrierError& e) {
    EXPECT_NE(std::string(e.what()).find("killed by signal 9"), std::string::npos) << e.what();
  }
  killer.join();
  party.join();
  EXPECT_EQ(party.exitcode(), -SIGKILL);
  EXPECT_THROW(barrier.wait(), fiber::BrokenBarrierError);
}

void take_and_die(fiber::Queue<int> q) {
  q.get();
  ::raise(SIGKILL);
}

TEST(QueueFault, JoinWhoseItemWasTakenByAKilledConsumerGetsEOF) {
  fiber::Queue<int> q;
  q.put(1);
  fiber::Process consumer(take_and_die, q);
  consumer.start();
  try {
    q.join();
    FAIL() << "expected EOFError";
  } catch (const fiber::EOFError& e) {
    EXPECT_NE(std::string(e.what()).find("killed by signal 9"), std::string::npos) << e.what();
  }
  consumer.join();
  EXPECT_EQ(consumer.exitcode(), -SIGKILL);
}

}  // namespace
