// The idle policy: how a thread that polls MPI waits when nothing happens. Open MPI's blocking
// calls spin a core at 100%; this spins briefly (low latency while traffic flows) and then sleeps
// for doubling intervals up to a cap (near-zero CPU while idle).
#pragma once

#include <chrono>
#include <thread>

namespace fiber::bridge {

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Backoff(std::chrono::microseconds spin = std::chrono::microseconds(100),
                   std::chrono::microseconds max_sleep = std::chrono::microseconds(1000))
      : spin_(spin), max_sleep_(max_sleep) {}

  /// Something happened: go back to spinning.
  void reset() noexcept {
    idle_since_ = Clock::now();
    sleep_ = std::chrono::microseconds(0);
  }

  /// Nothing happened this round: spin, yield or sleep depending on how long it has been quiet.
  void idle() {
    if (Clock::now() - idle_since_ < spin_) return;
    sleep_ = sleep_.count() == 0 ? std::chrono::microseconds(10) : std::min(sleep_ * 2, max_sleep_);
    std::this_thread::sleep_for(sleep_);
  }

  /// The longest sleep of one idle round.
  std::chrono::microseconds max_sleep() const noexcept { return max_sleep_; }

 private:
  std::chrono::microseconds spin_;
  std::chrono::microseconds max_sleep_;
  Clock::time_point idle_since_ = Clock::now();
  std::chrono::microseconds sleep_{0};
};

}  // namespace fiber::bridge
