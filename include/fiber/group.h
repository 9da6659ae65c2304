// fiber::Group: n processes that run one function together and share a real MPI
// intracommunicator, the way an SPMD code's ranks share MPI_COMM_WORLD; the port path for MPI
// reinforcement-learning codes (replace MPI_COMM_WORLD by fiber::group_comm()).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fiber/invoke.h"

namespace fiber {

namespace detail {
class GroupHandle;
}  // namespace detail

/// A group of `size` member processes running `fn(args...)` together. Inside a member,
/// fiber::group_rank(), group_size() and group_restarts() tell who it is, and
/// fiber::group_comm() (fiber/mpi.h) is the communicator of all members, ranked 0..size-1;
/// fiber::group_communicator() (fiber/boost_mpi.h) is its Boost.MPI view.
///
/// Members are placed like Processes: idle ranks of the static world under mpirun first (they
/// talk over shared memory), then spawned processes, or worker pods in a FiberJob; members in
/// different MPI worlds are joined by connect/accept. A member runs nothing else while the group
/// lives. The function and its arguments travel as for Process (queues and pipes may be passed).
///
/// A member that is killed, exits non-zero or throws ends its attempt: the other members are
/// stopped at once (each by its own runtime, whatever it is doing, a collective with the dead
/// member included; they end with exit code -SIGTERM) and, while `max_restarts` remain, the
/// whole group starts again with fresh processes and the same arguments (a program resumes from
/// its own checkpoint; group_restarts() tells the attempt). A stopped rank of the static world
/// is lost to the job for good, as a killed one is; a restart takes what is free (idle ranks,
/// the warm reserve, then spawns).
///
/// Copies refer to the same group; the last copy's destructor waits for a started group's end.
class Group {
 public:
  struct Options {
    int size = 0;          ///< Members (at least 1).
    int max_restarts = 0;  ///< Times the whole group may start again after a failed attempt.
  };

  /// A group of `size` members running `fn(args...)`. Throws fiber::UsageError for a size below
  /// 1 (and before fiber::init).
  template <class Fn, class... Args>
  Group(int size, Fn&& fn, Args&&... args)
      : Group(Options{size, 0}, std::forward<Fn>(fn), std::forward<Args>(args)...) {}
  template <class Fn, class... Args>
  Group(Options options, Fn&& fn, Args&&... args)
      : Group(options, detail::make_task(std::forward<Fn>(fn), std::forward<Args>(args)...)) {}

  /// Starts the members; returns at once. Throws fiber::UsageError when called twice.
  void start();
  /// Waits until an attempt ends with every member exiting 0, or a failed attempt has no
  /// restart left (or the group was terminated). Rethrows fiber::SpawnError when the last
  /// attempt's members could not be started.
  void join();
  /// Waits at most `timeout`; true when the group has ended.
  template <class Rep, class Period>
  bool join(std::chrono::duration<Rep, Period> timeout) {
    return join_for(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }
  /// Stops every member now; no restart follows. Nothing happens before start or after the end.
  void terminate();
  /// Members per attempt.
  int size() const;
  /// How many times the group was started again after a failed attempt.
  int restarts() const;
  /// One per member of the last attempt, by group rank, as Process::exitcode: empty while it
  /// runs (or when it never ran), 0 after a normal return, 1 after an uncaught exception or a
  /// failed MPI call on group_comm(), n after std::exit(n), minus the signal number when
  /// killed; -SIGTERM for a member stopped because another failed or by terminate().
  std::vector<std::optional<int>> exitcodes() const;
  /// The pids of the members running now (placed and not ended; on the hosts they run on, so
  /// members on different hosts may share one), by start order: empty before start and after
  /// the end.
  std::vector<int> member_pids() const;

 private:
  Group(Options options, detail::TaskSpec task);
  bool join_for(std::chrono::nanoseconds timeout);

  std::shared_ptr<detail::GroupHandle> handle_;
};

/// This member's rank in its group's communicator; throws fiber::UsageError outside a member.
int group_rank();
/// Members of the group this member belongs to; throws fiber::UsageError outside a member.
int group_size();
/// How many times this member's group was started again before this attempt (0 on the first);
/// throws fiber::UsageError outside a member.
int group_restarts();

}  // namespace fiber
