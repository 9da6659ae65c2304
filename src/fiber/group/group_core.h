// The master's side of a fiber::Group: the member processes of each attempt, the plan that tells
// them how to build their communicator once all are placed, the ports relayed between their
// islands, and what follows a member's end: success when every member exits 0; otherwise the
// others are stopped (each by its own runtime) and, while restarts remain, the whole group
// starts again with fresh processes. Internal; everything is called with the runtime's lock
// held.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fiber/group/group_messages.h"
#include "fiber/group/group_settings.h"
#include "fiber/invoke.h"
#include "fiber/process/process_host.h"

namespace fiber::internal {

/// What a group needs of the master besides processes and messages.
class GroupHost : public ProcessHost {
 public:
  /// Where a running process is: the MPI world it shares with others (the static world, a spawn
  /// batch, a joined job: any stable identity) and its rank in that world's MPI_COMM_WORLD.
  struct Placement {
    const void* world = nullptr;
    int world_rank = 0;
    bool static_world = false;
  };
  virtual std::optional<Placement> placement_locked(const ProcessState& process) const = 0;
  /// A member told to stop that has not ended in time: its worker is given up on (killed if it
  /// is a spawned worker of this host) and the process ends as killed.
  virtual void give_up_locked(const ProcessState& process, const std::string& why) = 0;
};

class GroupCore {
 public:
  /// `stop_grace`: how long a member told to stop may take before it is given up on.
  GroupCore(GroupHost& host, uint64_t id, GroupSettings settings,
            std::chrono::milliseconds stop_grace);
  GroupCore(const GroupCore&) = delete;
  GroupCore& operator=(const GroupCore&) = delete;

  uint64_t id() const noexcept { return id_; }
  int size() const noexcept { return settings_.size; }
  /// "Group-N".
  std::string name() const { return "Group-" + std::to_string(id_); }

  /// Starts the first attempt; UsageError when started before.
  void start_locked();
  /// Stops every member now; no restart follows.
  void terminate_locked();
  bool started_locked() const { return state_ != State::kCreated; }
  /// The last attempt ended: every member exited 0, or it failed with no restart left (or was
  /// terminated).
  bool ended_locked() const { return state_ == State::kEnded; }
  /// How many times the group was started again.
  int restarts_locked() const { return restarts_; }
  /// One per member of the last attempt, by group rank (by start order when it ended before
  /// every member was placed): empty for a member still running or that never ran.
  std::vector<std::optional<int>> exitcodes_locked() const;
  /// The pids (on their hosts) of the current attempt's members that are placed and have not
  /// ended, by start order.
  std::vector<int> member_pids_locked() const;
  /// Why the last attempt could not run at all (a member could not be started), or null.
  std::exception_ptr start_error_locked() const { return start_error_; }

  // Runtime events.
  void on_member_placed_locked(const ProcessState& process);
  void on_member_ended_locked(const ProcessState& process);
  /// The first island's leader opened the ports the other islands connect through.
  void on_ports_locked(const ProcessState& from, const wire::GroupPorts& ports);
  /// Gives up on members that were told to stop and have not ended within the grace.
  void tick_locked(std::chrono::steady_clock::time_point now);
  /// Called after every change of restarts, exit codes, placed members or the end (a nested
  /// group's master
  /// side tells its owner); with the lock held.
  void set_observer(std::function<void()> observer) { observer_ = std::move(observer); }

 private:
  enum class State { kCreated, kRunning, kEnded };
  struct Member {
    std::shared_ptr<ProcessState> process;
    bool placed = false;
    bool ended = false;
    std::optional<int> exitcode;
    std::optional<std::chrono::steady_clock::time_point> stop_sent_at;
    bool given_up = false;
  };

  void begin_attempt_locked();
  void send_plans_locked();
  /// The attempt failed (or is terminated): every member still running is stopped.
  void stop_members_locked(const std::string& why);
  void attempt_over_locked();
  Member* find_locked(uint64_t process_id);

  GroupHost& host_;
  const uint64_t id_;
  GroupSettings settings_;
  const std::chrono::milliseconds stop_grace_;
  std::vector<std::byte> task_bytes_;  ///< settings_.task, encoded once for every member.
  State state_ = State::kCreated;
  uint32_t attempt_ = 0;
  int restarts_ = 0;
  std::vector<Member> members_;  ///< Of the current attempt: by start order, by rank once planned.
  bool planned_ = false;
  bool failed_ = false;
  bool terminated_ = false;
  std::vector<size_t> island_leaders_;  ///< Index in members_ of each island's first member.
  std::exception_ptr start_error_;
  std::function<void()> observer_;
};

}  // namespace fiber::internal
