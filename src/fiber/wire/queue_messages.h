// The queue requests a worker sends the master's hub (SimpleQueue and Pipe operations) and the
// replies to them. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// Worker -> master: make a queue (a pipe channel when `pipe_channel`; a fiber::Queue, which
/// counts task_done and holds at most `maxsize` items, when `joinable`); answered with its id.
struct QueueCreate {
  uint64_t request = 0;
  bool pipe_channel = false;
  bool joinable = false;
  uint64_t maxsize = 0;  ///< 0: no limit.

  Outgoing encode() const;
  static QueueCreate decode(const bridge::Received& in);
};

/// Any process -> master: an item for `queue`. Not answered.
struct QueuePut {
  uint64_t queue = 0;
  std::vector<std::byte> item;

  Outgoing encode() const;                       ///< Borrows `item`.
  static QueuePut decode(bridge::Received& in);  ///< Takes the payload.
};

/// Worker -> master: take an item (`take`, kQueueGet) or wait until one is there (kQueuePoll),
/// for at most `timeout_us` (-1: no limit).
struct QueueWait {
  uint64_t request = 0;
  uint64_t queue = 0;
  bool take = true;
  int64_t timeout_us = -1;

  Outgoing encode() const;
  static QueueWait decode(const bridge::Received& in);
};

/// Worker -> master: a fiber::Queue operation that is answered: kItem when done, kTimeout when
/// the queue stayed full (kPut) or items unfinished (kJoin), kEof when a join can never end,
/// kError (Failure::kUsage) for a task_done without an unfinished item.
struct QueueCall {
  uint64_t request = 0;
  uint64_t queue = 0;
  QueueOp op = QueueOp::kPut;
  int64_t timeout_us = -1;  ///< -1: no limit.
  std::vector<std::byte> item;

  Outgoing encode() const;
  static QueueCall decode(bridge::Received& in);  ///< Takes the item.
};

/// Worker -> master: how many items wait in `queue`.
struct QueueSize {
  uint64_t request = 0;
  uint64_t queue = 0;

  Outgoing encode() const;
  static QueueSize decode(const bridge::Received& in);
};

/// Worker -> master: the process running there stops producing into `queue`.
struct QueueClose {
  uint64_t queue = 0;

  Outgoing encode() const;
  static QueueClose decode(const bridge::Received& in);
};

/// Master -> worker: the answer to request `request`.
struct Reply {
  uint64_t request = 0;
  Outcome outcome = Outcome::kItem;
  uint64_t value = 0;              ///< kValue: the number.
  std::vector<std::byte> payload;  ///< kItem: the item; kEof and kError: the reason, as text.

  Outgoing encode() const;                    ///< Borrows `payload`.
  static Reply decode(bridge::Received& in);  ///< Takes the payload.
  std::string text() const {
    return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
  }
};

}  // namespace fiber::internal::wire
