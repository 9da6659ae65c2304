// A worker's side of group membership: the master's plans, relayed ports and stops for the group
// attempts this worker process runs members of, waiting for the member to take them. Internal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fiber/group/group_messages.h"

namespace fiber::internal {

class MasterLink;

class GroupInbox {
 public:
  /// Serves the master's kGroupPlan, kGroupPorts and kGroupStop through `link`, which must
  /// outlive it. One per worker process.
  explicit GroupInbox(MasterLink& link);
  ~GroupInbox();
  GroupInbox(const GroupInbox&) = delete;
  GroupInbox& operator=(const GroupInbox&) = delete;

  /// This worker process's inbox; UsageError in a process that is no worker.
  static GroupInbox& current();

  /// `process` runs as a member of attempt `attempt` of `group`: returns the master's plan
  /// once it comes. A stop of the attempt (before or after) ends the process.
  wire::GroupPlan enter(uint64_t group, uint32_t attempt, uint64_t process);
  /// The ports the master relayed for this member's attempt (its island's leader waits).
  std::vector<std::string> wait_ports(uint64_t group, uint32_t attempt);
  /// The member's function is over; stops no longer end the process.
  void leave();

 private:
  using Attempt = std::pair<uint64_t, uint32_t>;
  struct Member {
    Attempt attempt;
    uint64_t process = 0;
  };
  void on_stop_locked(const wire::GroupStop& stop);

  MasterLink& link_;
  // Guarded by the engine's lock.
  std::optional<Member> member_;
  std::map<Attempt, wire::GroupPlan> plans_;
  std::map<Attempt, std::vector<std::string>> ports_;
  std::map<Attempt, std::string> stops_;  ///< Why each stopped attempt stopped.
};

}  // namespace fiber::internal
