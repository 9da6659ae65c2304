#include "fiber/queue_ref.h"

#include "fiber/errors.h"
#include "fiber/runtime/runtime.h"

namespace fiber::detail {

QueueRef QueueRef::create(bool pipe_channel, bool joinable, uint64_t maxsize) {
  return QueueRef(
      internal::Runtime::instance().queues().queue_create(pipe_channel, joinable, maxsize));
}

void QueueRef::put_waiting(std::vector<std::byte> item,
                           std::optional<std::chrono::microseconds> timeout,
                           const char* what) const {
  internal::QueueResult result = internal::Runtime::instance().queues().queue_call(
      id_, internal::wire::QueueOp::kPut, std::move(item), timeout);
  switch (result.outcome) {
    case internal::Outcome::kItem:
      return;
    case internal::Outcome::kTimeout:
      throw Full(std::string(what) + ": queue " + std::to_string(id_) + " is full" +
                 (timeout && timeout->count() > 0
                      ? " after " + std::to_string(timeout->count()) + " us"
                      : std::string()));
    default:
      throw ProtocolError(std::string(what) + ": " + result.reason);
  }
}

void QueueRef::task_done() const {
  internal::QueueResult result = internal::Runtime::instance().queues().queue_call(
      id_, internal::wire::QueueOp::kTaskDone, {}, std::nullopt);
  if (result.outcome == internal::Outcome::kItem) return;
  throw UsageError(result.reason);
}

bool QueueRef::join(std::optional<std::chrono::microseconds> timeout) const {
  internal::QueueResult result = internal::Runtime::instance().queues().queue_call(
      id_, internal::wire::QueueOp::kJoin, {}, timeout);
  switch (result.outcome) {
    case internal::Outcome::kItem:
      return true;
    case internal::Outcome::kTimeout:
      return false;
    case internal::Outcome::kEof:
      throw EOFError("Queue::join: " + result.reason);
    default:
      throw ProtocolError("Queue::join: " + result.reason);
  }
}

void QueueRef::put(std::vector<std::byte> item) const {
  internal::Runtime::instance().queues().queue_put(id_, std::move(item));
}

std::vector<std::byte> QueueRef::get(std::optional<std::chrono::microseconds> timeout,
                                     const char* what) const {
  internal::QueueResult result =
      internal::Runtime::instance().queues().queue_wait(id_, true, timeout);
  switch (result.outcome) {
    case internal::Outcome::kItem:
      return std::move(result.item);
    case internal::Outcome::kTimeout:
      throw Empty(std::string(what) + ": nothing arrived within " +
                  std::to_string(timeout ? timeout->count() : 0) + " us");
    case internal::Outcome::kEof:
      throw EOFError(std::string(what) + ": " + result.reason);
    default:
      throw ProtocolError(std::string(what) + ": unexpected reply " + result.reason);
  }
}

bool QueueRef::poll(std::optional<std::chrono::microseconds> timeout) const {
  return internal::Runtime::instance().queues().queue_wait(id_, false, timeout).outcome !=
         internal::Outcome::kTimeout;
}

size_t QueueRef::size() const { return internal::Runtime::instance().queues().queue_size(id_); }

void QueueRef::close_producer() const { internal::Runtime::instance().queues().queue_close(id_); }

}  // namespace fiber::detail
