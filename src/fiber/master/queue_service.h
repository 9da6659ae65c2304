// The master's queue service: the hub that stores every SimpleQueue, Queue and Pipe, the master's
// own queue operations on it, the requests workers send, and the deadlines of waiting gets.
// Internal.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "fiber/engine/progress_engine.h"
#include "fiber/master/next_deadline.h"
#include "fiber/master/queue_hub.h"
#include "fiber/queue/queue_access.h"
#include "fiber/wire/queue_messages.h"

namespace fiber::internal {

class QueueService final : public QueueAccess {
 public:
  /// Sends a reply to a worker (numbered and counted by the master); with the lock held.
  using Reply = std::function<void(MPI_Comm comm, int rank, const wire::Reply& reply)>;

  QueueService(ProgressEngine& engine, Reply reply) : engine_(engine), reply_(std::move(reply)) {}

  // The master's own operations (they take the lock).
  uint64_t queue_create(bool pipe_channel, bool joinable, uint64_t maxsize) override;
  void queue_put(uint64_t queue, std::vector<std::byte> item) override;
  QueueResult queue_wait(uint64_t queue, bool take,
                         std::optional<std::chrono::microseconds> timeout) override;
  size_t queue_size(uint64_t queue) override;
  QueueResult queue_call(uint64_t queue, wire::QueueOp op, std::vector<std::byte> item,
                         std::optional<std::chrono::microseconds> timeout) override;
  void queue_close(uint64_t queue) override;

  /// A queue request (kQueueCreate..kQueueClose, kQueuePut, kQueueCall) from the worker at (comm,
  /// source), which runs process `requester` (UINT64_MAX: none); `who` names it. Takes the
  /// message's payload. With the lock held.
  void on_request_locked(Kind kind, MPI_Comm comm, int source, uint64_t requester,
                         const std::string& who, bridge::Received& message);
  /// Completes waiting gets whose deadline passed. Takes the lock when one is due.
  void expire(Clock::time_point now);

  QueueHub& hub() { return hub_; }

 private:
  /// Starts `call` for `requester`; `done` gets its outcome (now or when its wait ends).
  void start_call(uint64_t queue, wire::QueueOp op, uint64_t requester, std::vector<std::byte> item,
                  std::optional<Clock::time_point> deadline, QueueHub::Completion done);

  ProgressEngine& engine_;
  Reply reply_;
  QueueHub hub_;
  NextDeadline next_deadline_;
};

}  // namespace fiber::internal
