#include "fiber/queue/queue_stub.h"

#include <algorithm>

#include "fiber/errors.h"
#include "fiber/queue/queue_messages.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {
namespace {

int64_t timeout_us_of(std::optional<std::chrono::microseconds> timeout) {
  return timeout ? std::max<int64_t>(0, timeout->count()) : -1;
}

/// The reply to a request that cannot fail but for a bad queue id: Error with its text.
wire::Reply call(MasterLink& link, const Outgoing& message) {
  wire::Reply reply = link.request(message);
  if (reply.outcome == Outcome::kError) throw Error(reply.text());
  return reply;
}

}  // namespace

uint64_t QueueStub::queue_create(bool pipe_channel, bool joinable, uint64_t maxsize) {
  return call(link_, wire::QueueCreate{0, pipe_channel, joinable, maxsize}.encode()).value;
}

void QueueStub::queue_put(uint64_t queue, std::vector<std::byte> item) {
  link_.send(wire::QueuePut{queue, std::move(item)}.encode());
}

QueueResult QueueStub::queue_wait(uint64_t queue, bool take,
                                  std::optional<std::chrono::microseconds> timeout) {
  const int64_t timeout_us = timeout_us_of(timeout);
  wire::Reply reply = call(link_, take ? wire::QueueGet{0, queue, timeout_us}.encode()
                                       : wire::QueuePoll{0, queue, timeout_us}.encode());
  QueueResult result;
  result.outcome = reply.outcome;
  if (result.outcome == Outcome::kItem) {
    result.item = std::move(reply.payload);
  } else {
    result.reason = reply.text();
  }
  return result;
}

size_t QueueStub::queue_size(uint64_t queue) {
  return call(link_, wire::QueueSize{0, queue}.encode()).value;
}

QueueResult QueueStub::queue_call(uint64_t queue, wire::QueueOp op, std::vector<std::byte> item,
                                  std::optional<std::chrono::microseconds> timeout) {
  wire::Reply reply = link_.request(
      wire::QueueCall{0, queue, op, timeout_us_of(timeout), std::move(item)}.encode());
  QueueResult result;
  result.outcome = reply.outcome;
  if (result.outcome != Outcome::kItem) result.reason = reply.text();
  return result;
}

void QueueStub::queue_close(uint64_t queue) { link_.send(wire::QueueClose{queue}.encode()); }

}  // namespace fiber::internal
