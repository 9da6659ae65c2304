// A fiber::Group as its holder uses it, whichever side of the run holds it: the master's own
// groups (LocalGroup), or a worker's (nesting), run by the master and reached by requests
// (nesting/nested_client.h). Internal.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "fiber/engine/link.h"

namespace fiber::internal {

class GroupClient {
 public:
  virtual ~GroupClient() = default;
  virtual std::string name() const = 0;
  virtual int size() const = 0;
  /// UsageError when started before.
  virtual void start() = 0;
  virtual void terminate() = 0;
  virtual bool started() = 0;
  /// Waits until it ended or the deadline passed; true when it ended.
  virtual bool wait_ended(std::optional<Clock::time_point> deadline) = 0;
  virtual int restarts() = 0;
  virtual std::vector<std::optional<int>> exitcodes() = 0;
  /// The pids of the members running now (placed, not ended), on their hosts.
  virtual std::vector<int> member_pids() = 0;
  /// Why the last attempt could not run at all, or null.
  virtual std::exception_ptr start_error() = 0;
  /// The last holder is done with it: waits for a started group's end, then forgets it.
  virtual void release() = 0;
};

}  // namespace fiber::internal
