// The queue operations behind SimpleQueue, Queue and Pipe: served by the master's hub in the
// master, requested from it by a worker. Internal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fiber/wire/message_kind.h"

namespace fiber::internal {

/// Result of a queue get or poll.
struct QueueResult {
  Outcome outcome = Outcome::kTimeout;
  std::vector<std::byte> item;
  std::string reason;
};

class QueueAccess {
 public:
  virtual ~QueueAccess() = default;
  /// A new queue: a pipe channel, or a joinable fiber::Queue of at most `maxsize` items (0: no
  /// limit), or a SimpleQueue.
  virtual uint64_t queue_create(bool pipe_channel, bool joinable, uint64_t maxsize) = 0;
  virtual void queue_put(uint64_t queue, std::vector<std::byte> item) = 0;
  /// A get (`take`) or poll, waiting at most `timeout` (none: no limit).
  virtual QueueResult queue_wait(uint64_t queue, bool take,
                                 std::optional<std::chrono::microseconds> timeout) = 0;
  virtual size_t queue_size(uint64_t queue) = 0;
  /// A bounded put, task_done or join (wire::QueueCall), waiting at most `timeout`.
  virtual QueueResult queue_call(uint64_t queue, wire::QueueOp op, std::vector<std::byte> item,
                                 std::optional<std::chrono::microseconds> timeout) = 0;
  /// This process stops producing into `queue`.
  virtual void queue_close(uint64_t queue) = 0;
};

}  // namespace fiber::internal
