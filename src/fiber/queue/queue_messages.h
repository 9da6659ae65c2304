// The queue requests a worker sends the master's queue service (SimpleQueue, Queue and Pipe
// operations); each request is answered by a wire::Reply. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/wire/message_codec.h"
#include "fiber/wire/reply.h"

namespace fiber::internal::wire {

/// Worker -> master: make a queue (a pipe channel when `pipe_channel`; a fiber::Queue, which
/// counts task_done and holds at most `maxsize` items, when `joinable`); answered with its id.
struct QueueCreate {
  FIBER_WIRE_MESSAGE(QueueCreate, Kind::kQueueCreate)
  uint64_t request = 0;
  bool pipe_channel = false;
  bool joinable = false;
  uint64_t maxsize = 0;  ///< 0: no limit.

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.bits(self.pipe_channel, self.joinable);
    f.aux(self.maxsize);
  }
};

/// Any process -> master: an item for `queue`. Not answered. Encoding lends `item`; decoding
/// from a non-const message takes its payload.
struct QueuePut {
  FIBER_WIRE_MESSAGE(QueuePut, Kind::kQueuePut)
  uint64_t queue = 0;
  std::vector<std::byte> item;

  static void fields(auto& self, auto& f) {
    f.aux(self.queue);
    f.rest(self.item);
  }
};

/// Worker -> master: take an item (QueueGet) or wait until one is there (QueuePoll), for at
/// most `timeout_us` (-1: no limit).
template <Kind K>
struct QueueWait {
  static_assert(K == Kind::kQueueGet || K == Kind::kQueuePoll);
  FIBER_WIRE_MESSAGE(QueueWait, K)
  uint64_t request = 0;
  uint64_t queue = 0;
  int64_t timeout_us = -1;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
    f.body(self.timeout_us);
  }
};
using QueueGet = QueueWait<Kind::kQueueGet>;
using QueuePoll = QueueWait<Kind::kQueuePoll>;

/// Worker -> master: a fiber::Queue operation that is answered: kItem when done, kTimeout when
/// the queue stayed full (kPut) or items unfinished (kJoin), kEof when a join can never end,
/// kError (Failure::kUsage) for a task_done without an unfinished item.
struct QueueCall {
  FIBER_WIRE_MESSAGE(QueueCall, Kind::kQueueCall)
  uint64_t request = 0;
  uint64_t queue = 0;
  QueueOp op = QueueOp::kPut;
  int64_t timeout_us = -1;  ///< -1: no limit.
  std::vector<std::byte> item;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
    f.flags(self.op);
    f.body(self.timeout_us);
    f.rest(self.item);
  }
  void validate() const;
};

/// Worker -> master: how many items wait in `queue`.
struct QueueSize {
  FIBER_WIRE_MESSAGE(QueueSize, Kind::kQueueSize)
  uint64_t request = 0;
  uint64_t queue = 0;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
  }
};

/// Worker -> master: the process running there stops producing into `queue`.
struct QueueClose {
  FIBER_WIRE_MESSAGE(QueueClose, Kind::kQueueClose)
  uint64_t queue = 0;

  static void fields(auto& self, auto& f) { f.aux(self.queue); }
};

}  // namespace fiber::internal::wire
