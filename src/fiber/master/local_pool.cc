#include "fiber/master/local_pool.h"

#include "fiber/errors.h"
#include "fiber/master/master.h"

namespace fiber::internal {

int LocalPool::size() {
  auto lock = engine_.lock();
  return core_->size();
}

void LocalPool::wait_ready() {
  PoolCore& core = *core_;
  engine_.wait_until([&core] {
    return core.ready_workers_locked() >= core.size() || core.short_for_good_locked() ||
           !core.broken_locked().empty() || !core.running_locked();
  });
  auto lock = engine_.lock();
  if (!core.broken_locked().empty())
    throw Error("the Pool cannot run tasks: " + core.broken_locked());
  if (!core.running_locked()) throw UsageError("wait_ready() on a closed or terminated Pool");
}

void LocalPool::resize(int processes) {
  auto lock = engine_.lock();
  core_->resize_locked(processes);
  engine_.notify_locked();
}

std::vector<int> LocalPool::worker_pids() {
  auto lock = engine_.lock();
  return core_->pids_locked();
}

void LocalPool::submit(const std::shared_ptr<detail::Job>& job) {
  auto lock = engine_.lock();
  core_->submit_locked(job);
  engine_.notify_locked();
}

void LocalPool::close() {
  auto lock = engine_.lock();
  core_->close_locked();
  engine_.notify_locked();
}

void LocalPool::terminate() {
  auto lock = engine_.lock();
  core_->terminate_locked();
  engine_.notify_locked();
}

void LocalPool::join() {
  PoolCore& core = *core_;
  {
    auto lock = engine_.lock();
    if (core.running_locked()) throw UsageError("Pool::join() needs close() or terminate() first");
  }
  engine_.wait_until([&core] { return core.finished_locked(); });
}

void LocalPool::release() {
  core_->stop_callbacks();
  master_.release_pool(core_->id());
}

}  // namespace fiber::internal
