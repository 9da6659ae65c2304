// The idle policy: how a thread that polls MPI waits when nothing happens. Open MPI's blocking
// calls spin a core at 100%; this spins briefly (low latency while traffic flows), then sleeps for
// doubling intervals up to a cap, and after a longer quiet spell sleeps longer still, so a process
// that waits for minutes costs well under 1% of a core.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace fiber::bridge {

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;

  struct Policy {
    std::chrono::microseconds spin{100};        ///< Poll without sleeping this long after activity.
    std::chrono::microseconds max_sleep{1000};  ///< Cap of the doubling sleeps.
    std::chrono::milliseconds deep_after{200};  ///< Quiet this long counts as idle...
    std::chrono::microseconds deep_sleep{10000};  ///< ...and polls this rarely.
  };

  Backoff() : Backoff(Policy{}) {}
  explicit Backoff(Policy policy) : policy_(policy) {}
  /// Quiet since `idle_since` already: a wait that follows another (the same wait resumed after a
  /// slice) goes on where the quiet spell is instead of spinning again.
  Backoff(Policy policy, Clock::time_point idle_since)
      : policy_(policy), idle_since_(std::min(idle_since, Clock::now())) {}

  /// Something happened: go back to spinning.
  void reset() noexcept {
    idle_since_ = Clock::now();
    sleep_ = std::chrono::microseconds(0);
  }

  /// Still within the spin phase after the last activity.
  bool spinning() const noexcept { return Clock::now() - idle_since_ < policy_.spin; }

  /// How long the next idle round should sleep (zero while spinning).
  std::chrono::microseconds next_sleep() noexcept {
    const auto quiet = Clock::now() - idle_since_;
    if (quiet < policy_.spin) return std::chrono::microseconds(0);
    if (quiet >= policy_.deep_after) return policy_.deep_sleep;
    sleep_ = sleep_.count() == 0 ? std::chrono::microseconds(10)
                                 : std::min(sleep_ * 2, policy_.max_sleep);
    return sleep_;
  }

  /// Nothing happened this round: spin or sleep depending on how long it has been quiet.
  void idle() {
    const auto sleep = next_sleep();
    if (sleep.count() > 0) std::this_thread::sleep_for(sleep);
  }

 private:
  Policy policy_;
  Clock::time_point idle_since_ = Clock::now();
  std::chrono::microseconds sleep_{0};
};

}  // namespace fiber::bridge
