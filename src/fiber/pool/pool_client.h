// A fiber::Pool as its holder uses it, whichever side of the run holds it: the master's own
// pools run here (LocalPool), a worker's pools (nesting) run in the master and are reached by
// requests (nesting/nested_client.h). Jobs are the holder's: their chunks' outcomes land in them
// where the holder waits. Internal.
#pragma once

#include <memory>
#include <vector>

#include "fiber/detail/job.h"

namespace fiber::internal {

class PoolClient {
 public:
  virtual ~PoolClient() = default;
  /// The size the pool keeps.
  virtual int size() = 0;
  /// Waits until every worker is ready; throws when the pool cannot run tasks or was closed.
  virtual void wait_ready() = 0;
  virtual void resize(int processes) = 0;
  virtual std::vector<int> worker_pids() = 0;
  /// Queues a job (its inputs in its source); throws UsageError after close or terminate.
  virtual void submit(const std::shared_ptr<detail::Job>& job) = 0;
  virtual void close() = 0;
  virtual void terminate() = 0;
  /// Waits until every worker has left; UsageError while the pool still takes tasks.
  virtual void join() = 0;
  /// The holder is done with it (after close and join, or terminate).
  virtual void release() = 0;
};

}  // namespace fiber::internal
