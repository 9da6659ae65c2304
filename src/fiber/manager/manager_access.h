// The operations behind a fiber::Manager's shared objects: served by the master's manager service
// in the master, requested from it by a worker. Internal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <string>

#include "fiber/manager/manager_messages.h"
#include "fiber/wire/message_kind.h"

namespace fiber::internal {

/// What an operation on a shared object ended with.
struct ObjectResult {
  Outcome outcome = Outcome::kItem;
  uint64_t value = 0;            ///< kValue: the number.
  std::vector<std::byte> bytes;  ///< kItem: the item (empty for operations that return nothing).
  Failure failure = Failure::kProtocol;  ///< kError: which kind of failure.
  std::string reason;                    ///< kError: what went wrong.

  static ObjectResult number(uint64_t value) { return {Outcome::kValue, value, {}, {}, {}}; }
  static ObjectResult item(std::vector<std::byte> bytes = {}) {
    return {Outcome::kItem, 0, std::move(bytes), {}, {}};
  }
  static ObjectResult error(Failure failure, std::string reason) {
    return {Outcome::kError, 0, {}, failure, std::move(reason)};
  }
};

class ManagerAccess {
 public:
  virtual ~ManagerAccess() = default;
  /// A new shared object: kValue with its id, or kError with what creating it threw.
  virtual ObjectResult object_create(detail::ObjectType type, std::vector<std::byte> payload) = 0;
  /// Runs `op` on `object`, waiting at most `timeout` where the operation waits (none: no limit).
  virtual ObjectResult object_call(uint64_t object, detail::ObjectOp op,
                                   std::vector<std::byte> args,
                                   std::optional<std::chrono::microseconds> timeout) = 0;
};

}  // namespace fiber::internal
