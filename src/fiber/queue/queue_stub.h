// A worker's queue operations: requests to the master's queue service over the worker's link.
// Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "fiber/queue/queue_access.h"

namespace fiber::internal {

class MasterLink;

class QueueStub final : public QueueAccess {
 public:
  /// Sends through `link`, which must outlive the stub.
  explicit QueueStub(MasterLink& link) : link_(link) {}

  uint64_t queue_create(bool pipe_channel, bool joinable, uint64_t maxsize) override;
  void queue_put(uint64_t queue, std::vector<std::byte> item) override;
  QueueResult queue_wait(uint64_t queue, bool take,
                         std::optional<std::chrono::microseconds> timeout) override;
  size_t queue_size(uint64_t queue) override;
  QueueResult queue_call(uint64_t queue, wire::QueueOp op, std::vector<std::byte> item,
                         std::optional<std::chrono::microseconds> timeout) override;
  void queue_close(uint64_t queue) override;

 private:
  MasterLink& link_;
};

}  // namespace fiber::internal
