#include "fiber/pool/callback_runner.h"
#include "fiber/base/log.h"

#include <cstdio>
#include <exception>

namespace fiber::internal {

CallbackRunner::~CallbackRunner() {
  if (thread_.joinable()) thread_.detach();
}

bool CallbackRunner::schedule_locked(detail::Job& job) {
  if (stopping_) return false;
  if (job.on_ready.empty()) return true;
  for (auto& callback : job.on_ready) queue_.push_back(std::move(callback));
  job.on_ready.clear();
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  cv_.notify_one();
  return true;
}

void CallbackRunner::attach(const std::shared_ptr<CallbackRunner>& runner, detail::Job& job) {
  job.run_ready_callbacks = [weak = std::weak_ptr<CallbackRunner>(runner)](detail::Job& ready) {
    const auto alive = weak.lock();
    return alive && alive->schedule_locked(ready);
  };
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

}  // namespace fiber::internal
