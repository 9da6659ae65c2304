#include "fiber/manager/manager_stub.h"

#include <algorithm>

#include "fiber/manager/manager_messages.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {

ObjectResult ManagerStub::object_create(detail::ObjectType type, std::vector<std::byte> payload) {
  wire::Reply reply = link_.request(wire::ObjectCreate{0, type, std::move(payload)}.encode());
  if (reply.outcome == Outcome::kValue) return ObjectResult::number(reply.value);
  return ObjectResult::error(static_cast<Failure>(reply.value), reply.text());
}

ObjectResult ManagerStub::object_call(uint64_t object, detail::ObjectOp op,
                                      std::vector<std::byte> args,
                                      std::optional<std::chrono::microseconds> timeout) {
  const int64_t timeout_us = timeout ? std::max<int64_t>(0, timeout->count()) : -1;
  wire::Reply reply = link_.request(
      wire::ObjectCall{0, object, static_cast<uint32_t>(op), timeout_us, std::move(args)}.encode());
  ObjectResult result;
  result.outcome = reply.outcome;
  result.value = reply.value;
  if (reply.outcome == Outcome::kError) {
    result.failure = static_cast<Failure>(reply.value);
    result.reason = reply.text();
  } else {
    result.bytes = std::move(reply.payload);
  }
  return result;
}

}  // namespace fiber::internal
