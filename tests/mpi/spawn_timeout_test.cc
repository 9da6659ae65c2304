// A spawn that never completes (the children do not reach MPI_Init in time) fails the waiting
// processes with a clear SpawnError instead of hanging; once the spawn does complete, spawning
// works again. A pool made while no process can be spawned runs on the static rank it has (under
// mpirun -n 2), or fails with the reason where it has none (a singleton).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "test_support.h"

void return_normally() {}

int triple(int x) { return 3 * x; }

namespace {

void wait_for(fiber::Event go) { go.wait(); }

/// Leaves the spawner stuck: a Process whose spawn does not complete in time. Under mpirun -n 2
/// another Process holds the static rank meanwhile, so that the first one is spawned.
void get_the_spawner_stuck(bool static_rank) {
  const char* slow = std::getenv("FIBER_SLOW_BINARY");
  ASSERT_NE(slow, nullptr);
  if (static_rank) {
    // First the static rank says hello: one Process waits for it (no spawn) and runs there. A
    // static rank still starting when the spawn below got stuck did not always say hello before
    // the spawn's 2 s ran out under load, and the holder then failed with the spawn.
    fiber::Process first(return_normally);
    first.start();
    first.join();
    ASSERT_EQ(first.exitcode(), 0);
  }
  fiber::set_executable(slow);
  fiber::Manager manager;
  const fiber::Event go = manager.event();
  fiber::Process holder(wait_for, go);
  fiber::Process spawned(return_normally);
  holder.start();
  spawned.start();
  EXPECT_THROW(spawned.join(), fiber::SpawnError);
  go.set();
  if (static_rank) {
    holder.join();
    EXPECT_EQ(holder.exitcode(), 0);
  } else {
    EXPECT_THROW(holder.join(), fiber::SpawnError);
  }
}

}  // namespace

TEST(SpawnWatchdog, StuckSpawnFailsWithAClearError) {
  const char* slow = std::getenv("FIBER_SLOW_BINARY");
  ASSERT_NE(slow, nullptr);
  fiber::set_executable(slow);
  fiber::Process p(return_normally);
  const auto start = std::chrono::steady_clock::now();
  p.start();
  try {
    p.join();
    FAIL() << "expected SpawnError";
  } catch (const fiber::SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("has not completed after 2 s"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(fiber::testing::seconds_since(start), 8.0);
  EXPECT_FALSE(p.is_alive());

  // While the stuck spawn lasts, new processes fail at once rather than queue forever.
  fiber::Process q(return_normally);
  q.start();
  EXPECT_THROW(q.join(), fiber::SpawnError);
}

TEST(SpawnWatchdog, PoolMadeWhileSpawnsAreStuckRunsOnTheStaticRankItHas) {
  if (fiber::testing::launch_mode() != "mpirun2")
    GTEST_SKIP() << "needs one static rank (mpirun -n 2); unit.pool_scheduling_test covers a pool "
                    "that has none";
  get_the_spawner_stuck(/*static_rank=*/true);
  // Every spawn is refused at once now, far faster than the static rank placed first can say it
  // is ready: the refusals must not break the pool before it has.
  const auto start = std::chrono::steady_clock::now();
  fiber::Pool pool(3);
  pool.wait_ready();  // with the one worker there is, before the stuck spawn ends (6 s)
  EXPECT_LT(fiber::testing::seconds_since(start), 5.0);
  EXPECT_EQ(pool.worker_pids().size(), 1u);
  std::vector<int> inputs(200);
  std::iota(inputs.begin(), inputs.end(), 0);
  const auto tripled = pool.map(triple, inputs);
  ASSERT_EQ(tripled.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(tripled[i], 3 * inputs[i]) << i;

  // Once the slow spawn completes (FIBER_SLOW_START_S; its processes run another binary and are
  // refused), spawning works again: a Process of this program is spawned and runs (the pool holds
  // the static rank meanwhile). Waited for also because PRRTE can fail the launcher when a job
  // ends while children it spawned are still starting (its child-exit handler no longer finds
  // their job).
  fiber::set_executable(std::filesystem::read_symlink("/proc/self/exe").string());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    fiber::Process process(return_normally);
    process.start();
    try {
      process.join();
      EXPECT_EQ(process.exitcode(), 0);
      break;
    } catch (const fiber::SpawnError&) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "spawning never came back";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}
