#include "k8s/client/work_queue.h"

namespace fiber::k8s {

WorkQueue::WorkQueue(RateLimiterOptions limits) : limiter_(limits) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mutex_);
  add_locked(key);
}

void WorkQueue::add_locked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  // A key in process goes back to the queue in done(), so no second worker gets it meanwhile.
  if (processing_.contains(key)) return;
  queue_.push_back(key);
  changed_.notify_one();
}

void WorkQueue::add_after(const std::string& key, Clock::duration delay) {
  if (delay <= Clock::duration::zero()) {
    add(key);
    return;
  }
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  const Clock::time_point ready_at = Clock::now() + delay;
  const auto it = delayed_ready_at_.find(key);
  if (it != delayed_ready_at_.end() && it->second <= ready_at) return;
  // An earlier time replaces the later one; the stale heap entry is skipped when it surfaces.
  delayed_ready_at_[key] = ready_at;
  delayed_.push(Delayed{ready_at, key});
  // A getter may be sleeping until a later deadline.
  changed_.notify_all();
}

void WorkQueue::add_rate_limited(const std::string& key) { add_after(key, limiter_.when(key)); }

void WorkQueue::forget(const std::string& key) { limiter_.forget(key); }

int WorkQueue::num_requeues(const std::string& key) const { return limiter_.num_requeues(key); }

void WorkQueue::move_due_locked(Clock::time_point now) {
  while (!delayed_.empty() && delayed_.top().ready_at <= now) {
    const Delayed due = delayed_.top();
    delayed_.pop();
    const auto it = delayed_ready_at_.find(due.key);
    if (it == delayed_ready_at_.end() || it->second != due.ready_at) continue;
    delayed_ready_at_.erase(it);
    add_locked(due.key);
  }
}

std::optional<std::string> WorkQueue::get() { return get_until(std::nullopt); }

std::optional<std::string> WorkQueue::get_for(Clock::duration timeout) {
  return get_until(Clock::now() + timeout);
}

std::optional<std::string> WorkQueue::get_until(std::optional<Clock::time_point> deadline) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    const Clock::time_point now = Clock::now();
    move_due_locked(now);
    if (!queue_.empty()) break;
    if (deadline && now >= *deadline) return std::nullopt;
    std::optional<Clock::time_point> wake = deadline;
    if (!delayed_.empty() && (!wake || delayed_.top().ready_at < *wake)) {
      wake = delayed_.top().ready_at;
    }
    if (wake) {
      changed_.wait_until(lock, *wake);
    } else {
      changed_.wait(lock);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  processing_.erase(key);
  if (dirty_.contains(key) && !shutting_down_) {
    queue_.push_back(key);
    changed_.notify_one();
  }
}

std::size_t WorkQueue::depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::size_t WorkQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return delayed_ready_at_.size();
}

void WorkQueue::shut_down() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  changed_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

}  // namespace fiber::k8s
