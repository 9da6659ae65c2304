// The store behind every SimpleQueue, Queue and Pipe: it lives in the master, holds items as
// bytes and serves gets, polls, puts into bounded queues, task_done/join and timeouts for local
// and remote callers alike.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fiber/process/process_state.h"
#include "fiber/wire/message_kind.h"

namespace fiber::internal {

/// Not thread-safe: the runtime calls it under its own lock.
class QueueHub {
 public:
  using Clock = std::chrono::steady_clock;
  using Bytes = std::vector<std::byte>;
  /// Called once per get/poll with its outcome; for kItem from a get, `item` is the item.
  using Completion = std::function<void(Outcome outcome, Bytes item, const std::string& reason)>;

  /// A new queue. A pipe channel can end (EOF) once the master closes its writing end. A
  /// joinable queue (fiber::Queue) counts unfinished items for task_done/join and holds at most
  /// `maxsize` items (0: no limit).
  uint64_t create(bool pipe_channel, bool joinable = false, uint64_t maxsize = 0);
  bool exists(uint64_t queue) const { return queues_.count(queue) != 0; }

  void put(uint64_t queue, Bytes item);
  /// Takes the oldest item for `requester`, now or when one arrives. `deadline` empty = no limit.
  void get(uint64_t queue, uint64_t requester, std::optional<Clock::time_point> deadline,
           Completion done);
  /// Reports kItem when an item is ready to take (or kEof), kTimeout at the deadline.
  void poll(uint64_t queue, uint64_t requester, std::optional<Clock::time_point> deadline,
            Completion done);
  size_t size(uint64_t queue) const;

  /// Puts into a bounded queue: kItem once the item is in, kTimeout when the queue is still full
  /// at the deadline (a deadline now: put_nowait).
  void put_wait(uint64_t queue, uint64_t requester, Bytes item,
                std::optional<Clock::time_point> deadline, Completion done);
  /// One item taken earlier was processed; returns why that is wrong (no unfinished item) or
  /// nothing.
  std::optional<std::string> task_done(uint64_t queue, uint64_t requester);
  /// kItem once every item put was task_done; kEof when the items still unfinished were taken by
  /// processes that ended without task_done; kTimeout at the deadline.
  void join(uint64_t queue, uint64_t requester, std::optional<Clock::time_point> deadline,
            Completion done);

  /// `process` was given a handle that can put into `queue`.
  void add_producer(uint64_t queue, uint64_t process);
  /// `process` closed its writing end of `queue` (the master closing its own end included).
  void close_producer(uint64_t queue, uint64_t process, const std::string& how);
  /// `process` has ended: its own pending gets and polls are dropped (nobody is left to answer),
  /// and waiters that can now never be served get kEof.
  void process_ended(uint64_t process, const std::string& how);

  /// Completes waiters whose deadline passed; returns the next deadline, if any.
  std::optional<Clock::time_point> expire(Clock::time_point now);

 private:
  struct Waiter {
    uint64_t requester;
    bool take;  ///< get (take the item) rather than poll
    std::optional<Clock::time_point> deadline;
    Completion done;
  };
  struct PutWaiter {
    uint64_t requester;
    Bytes item;
    std::optional<Clock::time_point> deadline;
    Completion done;
  };
  struct Queue {
    std::deque<Bytes> items;
    bool pipe_channel = false;
    bool joinable = false;
    uint64_t maxsize = 0;
    uint64_t unfinished = 0;                       ///< Items put and not yet task_done.
    std::unordered_map<uint64_t, uint64_t> taken;  ///< Per process: items got, not task_done.
    uint64_t orphaned = 0;    ///< Unfinished items taken by processes that ended.
    std::string orphaned_by;  ///< The last of those processes, for join's EOF.
    std::deque<PutWaiter> put_waiters;
    std::deque<Waiter> join_waiters;
    bool master_produces = true;
    bool had_child_producer = false;
    std::string last_ended;  ///< How the last producer went away, for the EOF message.
    std::multiset<uint64_t> producers;
    std::deque<Waiter> waiters;
  };

  Queue& find(uint64_t queue);
  const Queue& find(uint64_t queue) const;
  bool exhausted_for(const Queue& queue, uint64_t requester) const;
  void serve(uint64_t id, Queue& queue);
  bool serve_gets(uint64_t id, Queue& queue);
  void serve_joins(uint64_t id, Queue& queue);
  std::string eof_reason(uint64_t id, const Queue& queue) const;
  void wait(uint64_t queue, Waiter waiter);

  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Queue> queues_;
};

}  // namespace fiber::internal
