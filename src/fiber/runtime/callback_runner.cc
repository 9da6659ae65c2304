#include "fiber/runtime/callback_runner.h"
#include "fiber/runtime/log.h"

#include <cstdio>
#include <exception>

namespace fiber::detail {

CallbackRunner::~CallbackRunner() {
  if (thread_.joinable()) thread_.detach();
}

void CallbackRunner::schedule_locked(Job& job) {
  if (job.on_ready.empty()) return;
  for (auto& callback : job.on_ready) queue_.push_back(std::move(callback));
  job.on_ready.clear();
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { loop(); });
  cv_.notify_one();
}

void CallbackRunner::loop() {
  auto lock = lock_();
  for (;;) {
    cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;
    {
      auto callback = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      try {
        callback();
      } catch (const std::exception& e) {
        FIBER_LOG_ERROR("a Pool result callback threw: %s", e.what());
      } catch (...) {
        FIBER_LOG_ERROR("a Pool result callback threw");
      }
      // The callback and what it holds go before the lock is taken again: the Python front
      // end's hold a Python function, whose release takes the GIL, and a Python thread holding
      // the GIL may be waiting for this lock (a deadlock, seen in a Python imap).
    }
    lock.lock();
  }
}

void CallbackRunner::stop() {
  {
    auto lock = lock_();
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fiber::detail
