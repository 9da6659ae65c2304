#include "fiber/runtime/callback_runner.h"

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
    auto callback = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      callback();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: a Pool result callback threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "fibermpi: a Pool result callback threw\n");
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
