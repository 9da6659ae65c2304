#include "fiber/queue/queue_service.h"
#include "fiber/base/log.h"

#include <cstdio>
#include <memory>

namespace fiber::internal {

uint64_t QueueService::queue_create(bool pipe_channel, bool joinable, uint64_t maxsize) {
  auto lock = engine_.lock();
  return hub_.create(pipe_channel, joinable, maxsize);
}

void QueueService::queue_put(uint64_t queue, std::vector<std::byte> item) {
  auto lock = engine_.lock();
  hub_.put(queue, std::move(item));
}

QueueResult QueueService::queue_wait(uint64_t queue, bool take,
                                     std::optional<std::chrono::microseconds> timeout) {
  auto lock = engine_.lock();
  auto result = std::make_shared<std::optional<QueueResult>>();
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  auto done = [this, result](Outcome outcome, QueueHub::Bytes item, const std::string& reason) {
    *result = QueueResult{outcome, std::move(item), reason};
    engine_.notify_locked();
  };
  if (take) {
    hub_.get(queue, kMasterId, deadline, done);
  } else {
    hub_.poll(queue, kMasterId, deadline, done);
  }
  next_deadline_.note(deadline);
  engine_.await(lock, [&] { return result->has_value(); });
  return std::move(**result);
}

size_t QueueService::queue_size(uint64_t queue) {
  auto lock = engine_.lock();
  return hub_.size(queue);
}

void QueueService::start_call(uint64_t queue, wire::QueueOp op, uint64_t requester,
                              std::vector<std::byte> item,
                              std::optional<Clock::time_point> deadline,
                              QueueHub::Completion done) {
  switch (op) {
    case wire::QueueOp::kPut:
      hub_.put_wait(queue, requester, std::move(item), deadline, std::move(done));
      break;
    case wire::QueueOp::kTaskDone:
      if (auto problem = hub_.task_done(queue, requester)) {
        done(Outcome::kError, {}, *problem);
      } else {
        done(Outcome::kItem, {}, {});
      }
      break;
    case wire::QueueOp::kJoin:
      hub_.join(queue, requester, deadline, std::move(done));
      break;
  }
  next_deadline_.note(deadline);
}

QueueResult QueueService::queue_call(uint64_t queue, wire::QueueOp op, std::vector<std::byte> item,
                                     std::optional<std::chrono::microseconds> timeout) {
  auto lock = engine_.lock();
  auto result = std::make_shared<std::optional<QueueResult>>();
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  start_call(queue, op, kMasterId, std::move(item), deadline,
             [this, result](Outcome outcome, QueueHub::Bytes, const std::string& reason) {
               *result = QueueResult{outcome, {}, reason};
               engine_.notify_locked();
             });
  engine_.await(lock, [&] { return result->has_value(); });
  return std::move(**result);
}

void QueueService::queue_close(uint64_t queue) {
  auto lock = engine_.lock();
  hub_.close_producer(queue, kMasterId, "the master closed its end");
}

void QueueService::serve(wire::HandlerTable<const wire::Requester&>& handlers) {
  auto add = [&](Kind kind,
                 void (QueueService::*handler)(const wire::Requester&, bridge::Received&)) {
    handlers.add(kind, [this, handler](const wire::Requester& from, bridge::Received& message) {
      (this->*handler)(from, message);
    });
  };
  add(Kind::kQueueCreate, &QueueService::on_create_locked);
  add(Kind::kQueuePut, &QueueService::on_put_locked);
  add(Kind::kQueueGet, &QueueService::on_wait_locked<wire::QueueGet>);
  add(Kind::kQueuePoll, &QueueService::on_wait_locked<wire::QueuePoll>);
  add(Kind::kQueueSize, &QueueService::on_size_locked);
  add(Kind::kQueueClose, &QueueService::on_close_locked);
  add(Kind::kQueueCall, &QueueService::on_call_locked);
}

void QueueService::reply_text(const wire::Requester& to, uint64_t request, Outcome outcome,
                              const std::string& text) {
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  reply_(to.comm, to.source, wire::Reply{request, outcome, 0, {bytes, bytes + text.size()}});
}

void QueueService::on_create_locked(const wire::Requester& from, bridge::Received& message) {
  const auto create = wire::QueueCreate::decode(message);
  reply_(from.comm, from.source,
         wire::Reply{create.request,
                     Outcome::kValue,
                     hub_.create(create.pipe_channel, create.joinable, create.maxsize),
                     {}});
}

void QueueService::on_call_locked(const wire::Requester& from, bridge::Received& message) {
  wire::QueueCall call;
  try {
    call = wire::QueueCall::decode(message);
  } catch (const std::exception& e) {
    reply_text(from, message.envelope.id, Outcome::kError,
               std::string("malformed queue request: ") + e.what());
    return;
  }
  if (!hub_.exists(call.queue)) {
    reply_text(from, call.request, Outcome::kError,
               "unknown queue id " + std::to_string(call.queue));
    return;
  }
  std::optional<Clock::time_point> deadline;
  if (call.timeout_us >= 0) deadline = Clock::now() + std::chrono::microseconds(call.timeout_us);
  start_call(call.queue, call.op, from.process, std::move(call.item), deadline,
             [this, comm = from.comm, source = from.source, request = call.request](
                 Outcome outcome, QueueHub::Bytes, const std::string& reason) {
               const auto* text = reinterpret_cast<const std::byte*>(reason.data());
               try {
                 reply_(comm, source,
                        wire::Reply{request,
                                    outcome,
                                    static_cast<uint64_t>(Failure::kUsage),
                                    {text, text + reason.size()}});
               } catch (const std::exception& e) {
                 FIBER_LOG_ERROR("could not answer rank %d: %s", source, e.what());
               }
             });
}

void QueueService::on_put_locked(const wire::Requester&, bridge::Received& message) {
  auto put = wire::QueuePut::decode(message);
  hub_.put(put.queue, std::move(put.item));
}

template <class Wait>
void QueueService::on_wait_locked(const wire::Requester& from, bridge::Received& message) {
  Wait wait;
  try {
    wait = Wait::decode(message);
  } catch (const std::exception& e) {
    reply_text(from, message.envelope.id, Outcome::kError,
               std::string("malformed queue request: ") + e.what());
    return;
  }
  wait_locked(from, Wait::kKind == Kind::kQueueGet, wait.request, wait.queue, wait.timeout_us);
}

void QueueService::wait_locked(const wire::Requester& from, bool take, uint64_t request,
                               uint64_t queue, int64_t timeout_us) {
  std::optional<Clock::time_point> deadline;
  if (timeout_us >= 0) deadline = Clock::now() + std::chrono::microseconds(timeout_us);
  auto done = [this, comm = from.comm, source = from.source, request](
                  Outcome outcome, QueueHub::Bytes item, const std::string& reason) {
    if (outcome == Outcome::kEof)
      item.assign(reinterpret_cast<const std::byte*>(reason.data()),
                  reinterpret_cast<const std::byte*>(reason.data() + reason.size()));
    // A completion runs inside hub bookkeeping, which must not be cut short by a throw.
    try {
      reply_(comm, source, wire::Reply{request, outcome, 0, std::move(item)});
    } catch (const std::exception& e) {
      FIBER_LOG_ERROR("could not answer rank %d: %s", source, e.what());
    }
  };
  if (!hub_.exists(queue)) {
    reply_text(from, request, Outcome::kError, "unknown queue id " + std::to_string(queue));
  } else if (take) {
    hub_.get(queue, from.process, deadline, std::move(done));
  } else {
    hub_.poll(queue, from.process, deadline, std::move(done));
  }
  next_deadline_.note(deadline);
}

void QueueService::on_size_locked(const wire::Requester& from, bridge::Received& message) {
  const auto size = wire::QueueSize::decode(message);
  if (!hub_.exists(size.queue)) {
    reply_text(from, size.request, Outcome::kError,
               "unknown queue id " + std::to_string(size.queue));
  } else {
    reply_(from.comm, from.source,
           wire::Reply{size.request, Outcome::kValue, hub_.size(size.queue), {}});
  }
}

void QueueService::on_close_locked(const wire::Requester& from, bridge::Received& message) {
  const auto close = wire::QueueClose::decode(message);
  if (hub_.exists(close.queue) && from.process != wire::Requester::kNoProcess)
    hub_.close_producer(close.queue, from.process, from.who + " closed its end");
}

void QueueService::expire(Clock::time_point now) {
  if (!next_deadline_.due(now)) return;
  auto lock = engine_.lock();
  const auto next = hub_.expire(now);
  next_deadline_.reset(next);
  engine_.notify_locked();
}

}  // namespace fiber::internal
