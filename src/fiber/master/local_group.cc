#include "fiber/master/local_group.h"

#include "fiber/master/master.h"

namespace fiber::internal {

void LocalGroup::start() {
  auto lock = engine_.lock();
  core_->start_locked();
}

void LocalGroup::terminate() {
  auto lock = engine_.lock();
  core_->terminate_locked();
  engine_.notify_locked();
}

bool LocalGroup::started() {
  auto lock = engine_.lock();
  return core_->started_locked();
}

bool LocalGroup::wait_ended(std::optional<Clock::time_point> deadline) {
  GroupCore& core = *core_;
  return engine_.wait_until([&core] { return core.ended_locked(); }, deadline);
}

int LocalGroup::restarts() {
  auto lock = engine_.lock();
  return core_->restarts_locked();
}

std::vector<std::optional<int>> LocalGroup::exitcodes() {
  auto lock = engine_.lock();
  return core_->exitcodes_locked();
}

std::vector<int> LocalGroup::member_pids() {
  auto lock = engine_.lock();
  return core_->member_pids_locked();
}

std::exception_ptr LocalGroup::start_error() {
  auto lock = engine_.lock();
  return core_->start_error_locked();
}

void LocalGroup::release() {
  if (started()) wait_ended(std::nullopt);
  master_.release_group(core_->id());
}

}  // namespace fiber::internal
