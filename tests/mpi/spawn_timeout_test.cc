// A spawn that never completes (the children do not reach MPI_Init in time) fails the waiting
// processes with a clear SpawnError instead of hanging; once the spawn does complete, spawning
// works again.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "fiber/fiber.h"
#include "test_support.h"

void return_normally() {}

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
