// The untyped handle shared by SimpleQueue and Connection: an id of a queue in the master's hub.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fiber/serialization.h"

namespace fiber::detail {

struct QueueResult;

/// Operations on one hub queue from whichever process holds the handle.
class QueueRef {
 public:
  QueueRef() = default;
  explicit QueueRef(uint64_t id) : id_(id) {}
  /// Creates a new queue in the hub (asks the master when called in a worker).
  static QueueRef create(bool pipe_channel);

  uint64_t id() const noexcept { return id_; }
  bool valid() const noexcept { return id_ != 0; }

  void put(std::vector<std::byte> item) const;
  /// Takes the next item; throws TimeoutError when `timeout` passes first and EOFError when no
  /// live process can put into the queue any more. `what` names the caller in those messages.
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
