// The requests a worker sends the master's manager service (operations on the shared objects of
// a fiber::Manager); they are answered with wire::Reply. Internal.
#pragma once

#include <cstdint>
#include <vector>

#include "fiber/detail/object_ref.h"
#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// Worker -> master: a new object of `type`; answered with its id (kValue).
struct ObjectCreate {
  uint64_t request = 0;
  detail::ObjectType type = detail::ObjectType::kDict;
  std::vector<std::byte> payload;

  Outgoing encode() const;
  static ObjectCreate decode(bridge::Received& in);  ///< Takes the payload.
};

/// Worker -> master: operation `op` (detail/object_ref.h) on object `object`, waiting at most
/// `timeout_us` (-1: no limit) where it can wait (a lock, an event, a barrier).
struct ObjectCall {
  uint64_t request = 0;
  uint64_t object = 0;
  uint32_t op = 0;
  int64_t timeout_us = -1;
  std::vector<std::byte> payload;  ///< The operation's arguments, encoded.

  Outgoing encode() const;
  static ObjectCall decode(bridge::Received& in);  ///< Takes the payload.
};

}  // namespace fiber::internal::wire
