// The master's queue service: the hub that stores every SimpleQueue, Queue and Pipe, the master's
// own queue operations on it, the requests workers send, and the deadlines of waiting gets.
// Internal.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "fiber/engine/next_deadline.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/queue/queue_access.h"
#include "fiber/queue/queue_hub.h"
#include "fiber/queue/queue_messages.h"
#include "fiber/wire/handler_table.h"

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

  /// Registers the handlers of the queue requests workers send (kQueueCreate..kQueueClose,
  /// kQueuePut, kQueueCall); they run with the lock held, and take the message's payload.
  void serve(wire::HandlerTable<const wire::Requester&>& handlers);
  /// Completes waiting gets whose deadline passed. Takes the lock when one is due.
  void expire(Clock::time_point now);

  QueueHub& hub() { return hub_; }

 private:
  /// Starts `call` for `requester`; `done` gets its outcome (now or when its wait ends).
  void start_call(uint64_t queue, wire::QueueOp op, uint64_t requester, std::vector<std::byte> item,
                  std::optional<Clock::time_point> deadline, QueueHub::Completion done);

  void on_create_locked(const wire::Requester& from, bridge::Received& message);
  void on_put_locked(const wire::Requester& from, bridge::Received& message);
  /// A get or a poll (`Wait`: wire::QueueGet or wire::QueuePoll).
  template <class Wait>
  void on_wait_locked(const wire::Requester& from, bridge::Received& message);
  void on_size_locked(const wire::Requester& from, bridge::Received& message);
  void on_close_locked(const wire::Requester& from, bridge::Received& message);
  void on_call_locked(const wire::Requester& from, bridge::Received& message);
  /// A get (`take`) or a poll, answered when an item is there or the deadline passes.
  void wait_locked(const wire::Requester& from, bool take, uint64_t request, uint64_t queue,
                   int64_t timeout_us);
  void reply_text(const wire::Requester& to, uint64_t request, Outcome outcome,
                  const std::string& text);

  ProgressEngine& engine_;
  Reply reply_;
  QueueHub hub_;
  NextDeadline next_deadline_;
};

}  // namespace fiber::internal
