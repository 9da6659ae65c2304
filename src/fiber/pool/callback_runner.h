// Runs the callbacks of jobs that became ready (AsyncResult::on_success / on_error) on a thread
// of their own, one after another and outside the runtime's lock, started on first use. One per
// pool, on whichever side of the run holds the pool's results. Internal.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "fiber/detail/job.h"

namespace fiber::internal {

class CallbackRunner {
 public:
  /// `lock` takes the runtime's lock, which guards jobs and this runner's queue.
  explicit CallbackRunner(std::function<std::unique_lock<std::mutex>()> lock)
      : lock_(std::move(lock)) {}
  CallbackRunner(const CallbackRunner&) = delete;
  CallbackRunner& operator=(const CallbackRunner&) = delete;
  ~CallbackRunner();

  /// Queues `job`'s callbacks (they leave the job); with the lock held. False once stopped: the
  /// callbacks stay in the job.
  bool schedule_locked(detail::Job& job);
  /// Makes `runner` the one that runs `job`'s callbacks registered after it became ready
  /// (detail::Job::run_ready_callbacks), for as long as `runner` lives.
  static void attach(const std::shared_ptr<CallbackRunner>& runner, detail::Job& job);
  /// Runs what is queued, then ends the thread. Without the lock; later schedules run nothing.
  void stop();

 private:
  void loop();

  std::function<std::unique_lock<std::mutex>()> lock_;
  std::deque<std::function<void()>> queue_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stopping_ = false;
};

}  // namespace fiber::internal
