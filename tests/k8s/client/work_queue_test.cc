#include "k8s/client/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "k8s/client/rate_limiter.h"

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueue, AddDeduplicatesQueuedKeys) {
  WorkQueue queue;
  queue.add("ns/a");
  queue.add("ns/b");
  queue.add("ns/a");
  EXPECT_EQ(queue.depth(), 2u);
  EXPECT_EQ(queue.get(), "ns/a");
  EXPECT_EQ(queue.get(), "ns/b");
  EXPECT_EQ(queue.depth(), 0u);
}

TEST(WorkQueue, KeyInProcessIsQueuedAgainOnlyAfterDone) {
  WorkQueue queue;
  queue.add("ns/a");
  ASSERT_EQ(queue.get(), "ns/a");
  queue.add("ns/a");  // changed while being processed
  queue.add("ns/a");
  EXPECT_EQ(queue.depth(), 0u) << "a key in process must not go to a second worker";
  EXPECT_EQ(queue.get_for(20ms), std::nullopt);
  queue.done("ns/a");
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_EQ(queue.get(), "ns/a");
  queue.done("ns/a");
  EXPECT_EQ(queue.depth(), 0u);
}

TEST(WorkQueue, NoKeyIsProcessedByTwoWorkersAtOnce) {
  WorkQueue queue;
  std::mutex mutex;
  std::set<std::string> in_process;
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.get()) {
        {
          std::lock_guard lock(mutex);
          if (!in_process.insert(*key).second) ++overlaps;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          in_process.erase(*key);
        }
        ++processed;
        queue.done(*key);
      }
    });
  }
  for (int round = 0; round < 2000; ++round) queue.add("ns/key" + std::to_string(round % 3));
  // Wait for the queue to empty, then stop the workers.
  while (queue.depth() > 0) std::this_thread::yield();
  queue.shut_down();
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_GE(processed, 3);
}

TEST(WorkQueue, AddAfterHandsKeysOutInDueOrder) {
  WorkQueue queue;
  const auto start = WorkQueue::Clock::now();
  queue.add_after("late", 120ms);
  queue.add_after("early", 40ms);
  queue.add_after("now", 0ms);
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_EQ(queue.waiting(), 2u);
  EXPECT_EQ(queue.get(), "now");
  EXPECT_EQ(queue.get(), "early");
  EXPECT_GE(WorkQueue::Clock::now() - start, 40ms);
  EXPECT_EQ(queue.get(), "late");
  EXPECT_GE(WorkQueue::Clock::now() - start, 120ms);
}

TEST(WorkQueue, AddAfterKeepsTheEarlierTime) {
  WorkQueue queue;
  queue.add_after("a", 10s);
  queue.add_after("a", 30ms);
  queue.add_after("a", 20s);
  EXPECT_EQ(queue.waiting(), 1u);
  EXPECT_EQ(queue.get_for(5s), "a");
  queue.done("a");
  EXPECT_EQ(queue.waiting(), 0u);
}

TEST(WorkQueue, DelayedKeyAlreadyQueuedIsNotDuplicated) {
  WorkQueue queue;
  queue.add("a");
  queue.add_after("a", 10ms);
  EXPECT_EQ(queue.get(), "a");
  EXPECT_EQ(queue.get_for(100ms), std::nullopt) << "still in process: not handed out twice";
  queue.done("a");
  EXPECT_EQ(queue.get_for(1s), "a");
}

TEST(WorkQueue, ShutDownWakesBlockedGetters) {
  WorkQueue queue;
  auto first = std::async(std::launch::async, [&] { return queue.get(); });
  auto second = std::async(std::launch::async, [&] { return queue.get(); });
  queue.add_after("never", 1h);
  queue.shut_down();
  ASSERT_EQ(first.wait_for(5s), std::future_status::ready);
  ASSERT_EQ(second.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(first.get(), std::nullopt);
  EXPECT_EQ(second.get(), std::nullopt);
  queue.add("late");
  EXPECT_EQ(queue.depth(), 0u);
  EXPECT_TRUE(queue.shutting_down());
}

TEST(WorkQueue, RateLimitedAddsBackOffAndForgetResets) {
  WorkQueue queue;
  queue.add_rate_limited("a");  // 5 ms
  queue.add_rate_limited("a");  // 10 ms
  EXPECT_EQ(queue.num_requeues("a"), 2);
  EXPECT_EQ(queue.get_for(5s), "a");
  queue.done("a");
  queue.forget("a");
  EXPECT_EQ(queue.num_requeues("a"), 0);
}

class FakeClock {
 public:
  RateLimiter::Clock::time_point now() const { return now_; }
  void advance(std::chrono::nanoseconds by) { now_ += by; }

 private:
  RateLimiter::Clock::time_point now_{};
};

TEST(RateLimiter, PerItemBackoffDoublesUpToTheCap) {
  FakeClock clock;
  RateLimiterOptions options;
  options.max_delay = 1000s;
  RateLimiter limiter(options, [&] { return clock.now(); });
  EXPECT_EQ(limiter.when("a"), 5ms);
  EXPECT_EQ(limiter.when("a"), 10ms);
  EXPECT_EQ(limiter.when("a"), 20ms);
  EXPECT_EQ(limiter.when("b"), 5ms) << "each item has its own backoff";
  clock.advance(60s);  // refill the bucket so only the item backoff counts
  std::chrono::nanoseconds delay{};
  for (int i = 0; i < 40; ++i) delay = limiter.when("a");
  EXPECT_EQ(delay, 1000s);
  EXPECT_EQ(limiter.num_requeues("a"), 43);
  limiter.forget("a");
  EXPECT_EQ(limiter.num_requeues("a"), 0);
  EXPECT_EQ(limiter.when("a"), 5ms);
}

TEST(RateLimiter, TokenBucketLimitsTheOverallRateAfterTheBurst) {
  FakeClock clock;
  RateLimiterOptions options;
  options.base_delay = 0ns;
  RateLimiter limiter(options, [&] { return clock.now(); });
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.when("item" + std::to_string(i)), 0ns) << "burst of 100 passes at once";
  }
  EXPECT_EQ(limiter.when("x"), 100ms) << "then 10 per second";
  EXPECT_EQ(limiter.when("y"), 200ms);
  clock.advance(1s);  // ten tokens come back, paying the debt of two
  EXPECT_EQ(limiter.when("z"), 0ns);
}

}  // namespace
}  // namespace fiber::k8s
