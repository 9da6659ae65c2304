#include "k8s/client/backoff.h"

#include <gtest/gtest.h>

#include <future>

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;

TEST(Backoff, GrowsWithJitterUpToTheCapAndResets) {
  BackoffOptions options;
  options.initial = 100ms;
  options.factor = 2.0;
  options.jitter = 0.5;
  options.max = 1s;
  Backoff backoff(options);
  std::chrono::milliseconds expected = 100ms;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::chrono::milliseconds delay = backoff.next();
    EXPECT_GE(delay, std::min(expected, options.max)) << "attempt " << attempt;
    EXPECT_LE(delay, std::min(expected * 3 / 2, options.max)) << "attempt " << attempt;
    expected *= 2;
  }
  backoff.reset();
  EXPECT_LE(backoff.next(), 150ms);
}

TEST(Backoff, SleepEndsAtOnceOnStop) {
  std::stop_source stop;
  auto sleeping =
      std::async(std::launch::async, [&] { sleep_unless_stopped(stop.get_token(), 1h); });
  stop.request_stop();
  EXPECT_EQ(sleeping.wait_for(10s), std::future_status::ready);
  const auto start = std::chrono::steady_clock::now();
  sleep_unless_stopped(std::stop_token(), 30ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

}  // namespace
}  // namespace fiber::k8s
