#include "fiber/group.h"

#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/group/group_client.h"
#include "fiber/group/group_core.h"
#include "fiber/group/group_member.h"
#include "fiber/runtime/runtime.h"

namespace fiber {
namespace detail {

/// What the copies of a Group share; the last copy waits for a started group's end.
class GroupHandle {
 public:
  explicit GroupHandle(std::shared_ptr<internal::GroupClient> client)
      : client_(std::move(client)) {}
  GroupHandle(const GroupHandle&) = delete;
  GroupHandle& operator=(const GroupHandle&) = delete;
  ~GroupHandle() {
    if (!internal::Runtime::exists()) return;
    try {
      client_->release();
    } catch (const std::exception& e) {
      FIBER_LOG_WARNING("ending a Group: %s", e.what());
    }
  }

  internal::GroupClient& client() { return *client_; }

 private:
  std::shared_ptr<internal::GroupClient> client_;
};

}  // namespace detail

namespace {

const internal::GroupMembership& membership(const char* what) {
  const internal::GroupMembership* member = internal::current_group_membership();
  if (!member) {
    throw UsageError(std::string("fiber::") + what +
                     "() can only be called inside a member of a fiber::Group");
  }
  return *member;
}

}  // namespace

Group::Group(Options options, detail::TaskSpec task) {
  if (options.size < 1)
    throw UsageError("Group: size must be at least 1, got " + std::to_string(options.size));
  if (options.max_restarts < 0)
    throw UsageError("Group: max_restarts cannot be negative, got " +
                     std::to_string(options.max_restarts));
  handle_ = std::make_shared<detail::GroupHandle>(internal::Runtime::instance().make_group(
      internal::GroupSettings{options.size, options.max_restarts, std::move(task)}));
}

void Group::start() { handle_->client().start(); }

void Group::join() { join_for(std::chrono::nanoseconds::max()); }

bool Group::join_for(std::chrono::nanoseconds timeout) {
  internal::GroupClient& client = handle_->client();
  if (!client.started()) throw UsageError("can only join a started group (" + client.name() + ")");
  std::optional<internal::Clock::time_point> deadline;
  if (timeout != std::chrono::nanoseconds::max()) deadline = internal::Clock::now() + timeout;
  const bool ended = client.wait_ended(deadline);
  if (ended && client.start_error()) std::rethrow_exception(client.start_error());
  return ended;
}

void Group::terminate() { handle_->client().terminate(); }

int Group::size() const { return handle_->client().size(); }

int Group::restarts() const { return handle_->client().restarts(); }

std::vector<std::optional<int>> Group::exitcodes() const { return handle_->client().exitcodes(); }

std::vector<int> Group::member_pids() const { return handle_->client().member_pids(); }

int group_rank() { return membership("group_rank").rank; }
int group_size() { return membership("group_size").size; }
int group_restarts() { return membership("group_restarts").restarts; }

}  // namespace fiber
