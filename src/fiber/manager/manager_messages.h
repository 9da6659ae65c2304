// The requests a worker sends the master's manager service (operations on the shared objects of
// a fiber::Manager); they are answered with wire::Reply. Internal.
#pragma once

#include <cstdint>
#include <vector>

#include "fiber/detail/object_ref.h"
#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Worker -> master: a new object of `type`; answered with its id (kValue). Encoding lends
/// `payload`; decoding from a non-const message takes it.
struct ObjectCreate {
  FIBER_WIRE_MESSAGE(ObjectCreate, Kind::kObjectCreate)
  uint64_t request = 0;
  detail::ObjectType type = detail::ObjectType::kDict;
  std::vector<std::byte> payload;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.flags(self.type);
    f.rest(self.payload);
  }
  void validate() const;
};

/// Worker -> master: operation `op` (detail/object_ref.h) on object `object`, waiting at most
/// `timeout_us` (-1: no limit) where it can wait (a lock, an event, a barrier).
struct ObjectCall {
  FIBER_WIRE_MESSAGE(ObjectCall, Kind::kObjectCall)
  uint64_t request = 0;
  uint64_t object = 0;
  uint32_t op = 0;
  int64_t timeout_us = -1;
  std::vector<std::byte> payload;  ///< The operation's arguments, encoded.

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.object);
    f.flags(self.op);
    f.body(self.timeout_us);
    f.rest(self.payload);
  }
};

}  // namespace fiber::internal::wire
