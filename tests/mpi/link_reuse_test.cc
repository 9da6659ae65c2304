// Workers that end while their process lingers must not disturb the workers of a later spawn.
// Open MPI keeps a message that arrives for a communicator already freed and delivers it, in
// place of the real one, to the communicator that next reuses the context id. A spawned worker
// used to send heartbeats after its last message while it was exiting; once its communicator was
// freed and a later pool's spawn reused the id, an old heartbeat replaced a task result and the
// pool waited forever (the lock-step apply_async hang under mpirun -n 3).
// FIBER_FAULT_LINGER_MS (set by CTest) makes every worker linger after its last message, long
// enough for a heartbeat to fall due.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "fiber/fiber.h"

namespace {
int square(int x) { return x * x; }
}  // namespace

TEST(LinkReuse, PoolsAfterLingeringWorkersGetEveryResult) {
  for (int round = 0; round < 4; ++round) {
    {
      // Short-lived workers: a handful of messages each, then they end and linger (their late
      // heartbeats carry low message numbers)...
      fiber::Pool brief(3);
      ASSERT_EQ(brief.map(square, std::vector<int>{1, 2, 3}, 1), (std::vector<int>{1, 4, 9}));
    }
    // ...and the workers of the next spawn send their results with those same numbers.
    fiber::Pool pool(3);
    pool.wait_ready();
    for (int step = 0; step < 10; ++step) {
      std::vector<fiber::AsyncResult<int>> results;
      for (int i = 0; i < 3; ++i) results.push_back(pool.apply_async(square, 10 * step + i));
      for (int i = 0; i < 3; ++i) {
        const int x = 10 * step + i;
        // A lost result would wait forever: the timeout turns it into a failure.
        ASSERT_EQ(results[i].get(std::chrono::seconds(20)), x * x)
            << "pool " << round << ", round " << step;
      }
    }
  }
}
