#include "fiber/master/queue_service.h"
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

void QueueService::on_request_locked(Kind kind, MPI_Comm comm, int source, uint64_t requester,
                                     const std::string& who, bridge::Received& message) {
  auto reply_text = [&](uint64_t request, Outcome outcome, const std::string& text) {
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    reply_(comm, source, wire::Reply{request, outcome, 0, {bytes, bytes + text.size()}});
  };
  switch (kind) {
    case Kind::kQueueCreate: {
      const auto create = wire::QueueCreate::decode(message);
      reply_(comm, source,
             wire::Reply{create.request,
                         Outcome::kValue,
                         hub_.create(create.pipe_channel, create.joinable, create.maxsize),
                         {}});
      break;
    }
    case Kind::kQueueCall: {
      wire::QueueCall call;
      try {
        call = wire::QueueCall::decode(message);
      } catch (const std::exception& e) {
        reply_text(message.envelope.id, Outcome::kError,
                   std::string("malformed queue request: ") + e.what());
        break;
      }
      if (!hub_.exists(call.queue)) {
        reply_text(call.request, Outcome::kError, "unknown queue id " + std::to_string(call.queue));
        break;
      }
      std::optional<Clock::time_point> deadline;
      if (call.timeout_us >= 0)
        deadline = Clock::now() + std::chrono::microseconds(call.timeout_us);
      start_call(call.queue, call.op, requester, std::move(call.item), deadline,
                 [this, comm, source, request = call.request](Outcome outcome, QueueHub::Bytes,
                                                              const std::string& reason) {
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
      break;
    }
    case Kind::kQueuePut: {
      auto put = wire::QueuePut::decode(message);
      hub_.put(put.queue, std::move(put.item));
      break;
    }
    case Kind::kQueueGet:
    case Kind::kQueuePoll: {
      wire::QueueWait wait;
      try {
        wait = wire::QueueWait::decode(message);
      } catch (const std::exception& e) {
        reply_text(message.envelope.id, Outcome::kError,
                   std::string("malformed queue request: ") + e.what());
        break;
      }
      std::optional<Clock::time_point> deadline;
      if (wait.timeout_us >= 0)
        deadline = Clock::now() + std::chrono::microseconds(wait.timeout_us);
      auto done = [this, comm, source, request = wait.request](
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
      if (!hub_.exists(wait.queue)) {
        reply_text(wait.request, Outcome::kError, "unknown queue id " + std::to_string(wait.queue));
      } else if (wait.take) {
        hub_.get(wait.queue, requester, deadline, std::move(done));
      } else {
        hub_.poll(wait.queue, requester, deadline, std::move(done));
      }
      next_deadline_.note(deadline);
      break;
    }
    case Kind::kQueueSize: {
      const auto size = wire::QueueSize::decode(message);
      if (!hub_.exists(size.queue)) {
        reply_text(size.request, Outcome::kError, "unknown queue id " + std::to_string(size.queue));
      } else {
        reply_(comm, source, wire::Reply{size.request, Outcome::kValue, hub_.size(size.queue), {}});
      }
      break;
    }
    case Kind::kQueueClose: {
      const auto close = wire::QueueClose::decode(message);
      if (hub_.exists(close.queue) && requester != UINT64_MAX)
        hub_.close_producer(close.queue, requester, who + " closed its end");
      break;
    }
    default:
      break;
  }
}

void QueueService::expire(Clock::time_point now) {
  if (!next_deadline_.due(now)) return;
  auto lock = engine_.lock();
  const auto next = hub_.expire(now);
  next_deadline_.reset(next);
  engine_.notify_locked();
}

}  // namespace fiber::internal
