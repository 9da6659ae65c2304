#include "fiber/group.h"

#include <cstdio>

#include "fiber/errors.h"
#include "fiber/master/master.h"
#include "fiber/runtime/runtime.h"
#include "fiber/worker/group_member.h"

namespace fiber {
namespace detail {

/// What the copies of a Group share: the master's side of the group, released (after waiting
/// for a started group's end) when the last copy goes.
class GroupHandle {
 public:
  explicit GroupHandle(std::shared_ptr<GroupCore> core) : core_(std::move(core)) {}
  GroupHandle(const GroupHandle&) = delete;
  GroupHandle& operator=(const GroupHandle&) = delete;
  ~GroupHandle() {
    if (!Runtime::exists()) return;
    try {
      auto& runtime = Runtime::instance();
      runtime.engine().wait_until(
          [this] { return !core_->started_locked() || core_->ended_locked(); });
      runtime.master().release_group(core_->id());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: ending a Group: %s\n", e.what());
    }
  }

  GroupCore& core() { return *core_; }

 private:
  std::shared_ptr<GroupCore> core_;
};

}  // namespace detail

namespace {

detail::Runtime& runtime() { return detail::Runtime::instance(); }

const detail::GroupMembership& membership(const char* what) {
  const detail::GroupMembership* member = detail::current_group_membership();
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
  detail::GroupSettings settings{options.size, options.max_restarts, std::move(task)};
  handle_ = std::make_shared<detail::GroupHandle>(
      runtime()
          .master("a Group can only be created in the master process")
          .create_group(std::move(settings)));
}

void Group::start() {
  auto lock = runtime().lock();
  handle_->core().start_locked();
}

void Group::join() { join_for(std::chrono::nanoseconds::max()); }

bool Group::join_for(std::chrono::nanoseconds timeout) {
  detail::GroupCore& core = handle_->core();
  {
    auto lock = runtime().lock();
    if (!core.started_locked())
      throw UsageError("can only join a started group (" + core.name() + ")");
  }
  std::optional<detail::Clock::time_point> deadline;
  if (timeout != std::chrono::nanoseconds::max()) deadline = detail::Clock::now() + timeout;
  const bool ended =
      runtime().engine().wait_until([&core] { return core.ended_locked(); }, deadline);
  auto lock = runtime().lock();
  if (ended && core.start_error_locked()) std::rethrow_exception(core.start_error_locked());
  return ended;
}

void Group::terminate() {
  auto lock = runtime().lock();
  handle_->core().terminate_locked();
  runtime().notify_locked();
}

int Group::size() const { return handle_->core().size(); }

int Group::restarts() const {
  auto lock = runtime().lock();
  return handle_->core().restarts_locked();
}

std::vector<std::optional<int>> Group::exitcodes() const {
  auto lock = runtime().lock();
  return handle_->core().exitcodes_locked();
}

int group_rank() { return membership("group_rank").rank; }
int group_size() { return membership("group_size").size; }
int group_restarts() { return membership("group_restarts").restarts; }

}  // namespace fiber
