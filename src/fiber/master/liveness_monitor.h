// Whether the master's workers are alive and reachable: pid checks for workers on its host,
// silence (no heartbeat for heartbeat_timeout) for every worker, and delivery counts both ways
// carried by heartbeats. Pure decisions over slots and a clock passed in, so they can be tested
// without MPI; the master acts on the verdicts. Internal; used under the runtime's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fiber/engine/settings.h"
#include "fiber/master/slot.h"

namespace fiber::internal {

class LivenessMonitor {
 public:
  /// A worker to give up on.
  struct Verdict {
    Slot* slot = nullptr;
    /// True: its process is gone or silent with no pid to check (it ended as killed). False: it
    /// lives but is cut off (stopped, hung, or its messages are lost): a spawned worker on the
    /// master's host is killed, any other is left running.
    bool dead = true;
    std::string why;  ///< Empty for a plain death seen by pid.
  };
  /// `pid_gone(pid)` tells whether a process of the master's host has ended.
  LivenessMonitor(const Settings& settings, std::function<bool(int)> pid_gone)
      : settings_(settings), pid_gone_(std::move(pid_gone)) {}

  /// The periodic check at `now` of every live slot; `receiving_since`: when the master's
  /// receiving last resumed after a pause (silence is counted from then at the earliest).
  std::vector<Verdict> check(const std::vector<Slot*>& slots, Clock::time_point now,
                             Clock::time_point receiving_since);

  /// A heartbeat from `slot`, read at `now`: `sent_before` of its messages went before it, and
  /// `received` of the master's had arrived when it was sent at `stamp_ns` (the worker's clock).
  /// `slots` are all live slots (several workers short of messages at once mean the master's own
  /// sending is stuck, which is reported, not blamed on them).
  std::optional<Verdict> on_heartbeat(Slot& slot, uint64_t sent_before, uint64_t received,
                                      int64_t stamp_ns, Clock::time_point now,
                                      const std::vector<Slot*>& slots);

  /// Set once the master's sending was found stuck (reported once).
  bool sending_stuck() const noexcept { return sending_stuck_; }

 private:
  const Settings& settings_;
  std::function<bool(int)> pid_gone_;
  bool sending_stuck_ = false;
};

}  // namespace fiber::internal
