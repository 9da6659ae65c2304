// The warm reserve: spawned workers outlive their pool and serve the next one, Processes get
// processes that have run nothing else, and a program making many pools one after another does
// not pay a spawn for each (Open MPI 4.1 gets stuck in some spawns, so fewer spawns also means a
// program that finishes).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "test_support.h"

namespace {

int square(int x) { return x * x; }
int worker_pid(int) { return static_cast<int>(::getpid()); }

int g_pools_served = 0;  // counted by the initializer in each worker process
void count_pool(int) { ++g_pools_served; }
int pools_served(int) { return g_pools_served; }

void report_pid(fiber::SimpleQueue<int> pids) { pids.put(static_cast<int>(::getpid())); }

std::vector<int> iota(int n) {
  std::vector<int> values(n);
  std::iota(values.begin(), values.end(), 0);
  return values;
}

}  // namespace

TEST(Reserve, ThirtyPoolsOfFourOneAfterAnother) {
  const auto inputs = iota(100);
  std::vector<int> expected;
  for (int x : inputs) expected.push_back(x * x);
  std::set<int> pids;
  for (int round = 0; round < 30; ++round) {
    fiber::Pool pool(4);
    ASSERT_EQ(pool.map(square, inputs), expected) << "pool " << round;
    for (int pid : pool.map(worker_pid, iota(16), 1)) pids.insert(pid);
  }
  // The workers of the first pool serve all the others: at most one spawn's worth of processes
  // (a spawn starts at least Config::min_spawn_batch, the reserve keeps at most 8).
  EXPECT_LE(pids.size(), 8u);
}

TEST(Reserve, AKilledWorkerLeavesTheOthersOfItsSpawnRunning) {
  // The reserve of the test before holds workers of one spawn batch: they share an MPI job, and
  // Open MPI 5's runtime ends all of a job's processes when one dies unless it is told not to.
  fiber::Pool pool(2);
  pool.wait_ready();
  const std::vector<int> before = pool.worker_pids();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(::kill(before[0], SIGKILL), 0);
  const auto inputs = iota(40);
  std::vector<int> expected;
  for (int x : inputs) expected.push_back(x * x);
  EXPECT_EQ(pool.map(square, inputs, 1), expected);
  // Long enough for the death to be noticed and for anything it takes along to die too.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(pool.map(square, inputs, 1), expected);
  const std::vector<int> after = pool.worker_pids();
  EXPECT_EQ(std::count(after.begin(), after.end(), before[0]), 0) << "the killed one was replaced";
  EXPECT_EQ(std::count(after.begin(), after.end(), before[1]), 1)
      << "the other worker, pid " << before[1] << ", still serves";
}

TEST(Reserve, InitializerRunsAgainInEveryPool) {
  for (int round = 1; round <= 3; ++round) {
    fiber::Pool pool(2, fiber::initializer(count_pool, 0));
    for (int served : pool.map(pools_served, iota(8), 1)) {
      // A worker from the reserve has served earlier pools; it ran this pool's initializer too.
      EXPECT_GE(served, 1);
      EXPECT_LE(served, round);
    }
  }
}

TEST(Reserve, ProcessesNeverRunInAWorkerThatRanSomethingElse) {
  std::set<int> pool_pids;
  {
    fiber::Pool pool(3);
    for (int pid : pool.map(worker_pid, iota(30), 1)) pool_pids.insert(pid);
  }
  fiber::SimpleQueue<int> pids;
  std::set<int> process_pids;
  for (int i = 0; i < 5; ++i) {
    fiber::Process p(report_pid, pids);
    p.start();
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
    process_pids.insert(pids.get(std::chrono::seconds(60)));
  }
  EXPECT_EQ(process_pids.size(), 5u) << "every Process had a process of its own";
  if (fiber::testing::launch_mode() == "singleton") {
    for (int pid : process_pids) EXPECT_EQ(pool_pids.count(pid), 0u) << pid;
  }
}
