// A worker's inbox of pool chunks: the master's task messages for the pools this worker process
// serves, split into chunks, and their stops, waiting for the pool worker to take them.
// Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace fiber::internal {

class MasterLink;

/// What the inbox hands a pool worker: a chunk of a task to run, or the pool's stop.
struct PoolDelivery {
  uint64_t pool = 0;
  bool stop = false;
  bool drop_queued = false;  ///< A stop that overtakes the chunks still queued.
  uint64_t task = 0;
  std::vector<std::byte> chunk;
};

class PoolInbox {
 public:
  /// Serves the master's kPoolTask and kPoolStop through `link`, which must outlive it. One per
  /// worker process.
  explicit PoolInbox(MasterLink& link);
  ~PoolInbox();
  PoolInbox(const PoolInbox&) = delete;
  PoolInbox& operator=(const PoolInbox&) = delete;

  /// This worker process's inbox; UsageError in a process that is no worker.
  static PoolInbox& current();

  /// The next chunk or stop for `pool` (what is left over from a pool this process served
  /// before is dropped).
  PoolDelivery next(uint64_t pool);
  /// Whether next(pool) would hand over a chunk now, without waiting.
  bool has_chunk(uint64_t pool);

 private:
  MasterLink& link_;
  std::deque<PoolDelivery> deliveries_;  ///< Guarded by the engine's lock.
};

}  // namespace fiber::internal
