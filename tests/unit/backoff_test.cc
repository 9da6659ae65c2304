// The idle policy of a thread polling MPI: spin after activity, doubling sleeps, deep sleep after a
// quiet spell; and a wait that starts inside a quiet spell (a resumed wait) goes on from there.
#include <gtest/gtest.h>

#include <chrono>

#include "mpi_bridge/backoff.h"

using namespace std::chrono_literals;
using fiber::bridge::Backoff;

namespace {

Backoff::Policy policy() {
  Backoff::Policy policy;
  policy.spin = 10s;  // long enough that a loaded machine cannot leave the spin by accident
  policy.max_sleep = 1000us;
  policy.deep_after = 60s;
  policy.deep_sleep = 20ms;
  return policy;
}

TEST(Backoff, StartsBySpinningAfterActivity) {
  Backoff backoff(policy());
  EXPECT_TRUE(backoff.spinning());
  EXPECT_EQ(backoff.next_sleep(), 0us);
}

TEST(Backoff, AWaitInsideALongQuietSpellSleepsDeeplyAtOnce) {
  Backoff backoff(policy(), Backoff::Clock::now() - 120s);
  EXPECT_FALSE(backoff.spinning());
  EXPECT_EQ(backoff.next_sleep(), 20ms);
  EXPECT_EQ(backoff.next_sleep(), 20ms);
}

TEST(Backoff, AWaitPastTheSpinDoublesItsSleepsUpToTheCap) {
  Backoff backoff(policy(), Backoff::Clock::now() - 30s);
  EXPECT_EQ(backoff.next_sleep(), 10us);
  EXPECT_EQ(backoff.next_sleep(), 20us);
  EXPECT_EQ(backoff.next_sleep(), 40us);
  for (int i = 0; i < 10; ++i) backoff.next_sleep();
  EXPECT_EQ(backoff.next_sleep(), 1000us);
}

TEST(Backoff, ActivitySpinsAgain) {
  Backoff backoff(policy(), Backoff::Clock::now() - 120s);
  ASSERT_EQ(backoff.next_sleep(), 20ms);
  backoff.reset();
  EXPECT_EQ(backoff.next_sleep(), 0us);
}

TEST(Backoff, AQuietSpellThatStartsInTheFutureCountsFromNow) {
  Backoff backoff(policy(), Backoff::Clock::now() + 3600s);
  EXPECT_TRUE(backoff.spinning());
  EXPECT_EQ(backoff.next_sleep(), 0us);
}

}  // namespace
