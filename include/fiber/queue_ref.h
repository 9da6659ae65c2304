// The untyped handle shared by SimpleQueue, Queue and Connection: an id of a queue in the
// master's hub.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fiber/serialization.h"

namespace fiber::internal {
struct QueueResult;
}  // namespace fiber::internal

namespace fiber::detail {

/// Operations on one hub queue from whichever process holds the handle.
class QueueRef {
 public:
  QueueRef() = default;
  explicit QueueRef(uint64_t id) : id_(id) {}
  /// Creates a new queue in the hub (asks the master when called in a worker): a pipe channel,
  /// or a joinable fiber::Queue of at most `maxsize` items (0: no limit), or a SimpleQueue.
  static QueueRef create(bool pipe_channel, bool joinable = false, uint64_t maxsize = 0);

  uint64_t id() const noexcept { return id_; }
  bool valid() const noexcept { return id_ != 0; }

  void put(std::vector<std::byte> item) const;
  /// Puts into a bounded queue, waiting for room at most `timeout` (none: no limit); throws
  /// fiber::Full when it stays full.
  void put_waiting(std::vector<std::byte> item, std::optional<std::chrono::microseconds> timeout,
                   const char* what) const;
  /// fiber::Queue::task_done; throws UsageError when no item is unfinished.
  void task_done() const;
  /// Waits (at most `timeout`) until every item put was task_done: false on timeout; throws
  /// EOFError when the unfinished items were taken by processes that ended.
  bool join(std::optional<std::chrono::microseconds> timeout) const;
  /// Takes the next item; throws fiber::Empty (a TimeoutError) when `timeout` passes first and
  /// EOFError when no live process can put into the queue any more. `what` names the caller in
  /// those messages.
  std::vector<std::byte> get(std::optional<std::chrono::microseconds> timeout,
                             const char* what) const;
  /// True when an item (or EOF) is ready within `timeout`.
  bool poll(std::optional<std::chrono::microseconds> timeout) const;
  size_t size() const;
  /// This process will not put into the queue any more.
  void close_producer() const;

 private:
  uint64_t id_ = 0;
};

}  // namespace fiber::detail
