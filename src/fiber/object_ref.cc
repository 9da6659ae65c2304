#include "fiber/detail/object_ref.h"

#include <string>

#include "fiber/errors.h"
#include "fiber/runtime/runtime.h"

namespace fiber::detail {

namespace {

[[noreturn]] void throw_failure(const internal::ObjectResult& result, const char* what) {
  const std::string prefix = std::string(what) + ": ";
  switch (result.failure) {
    case internal::Failure::kUsage:
      throw UsageError(result.reason);
    case internal::Failure::kBrokenBarrier:
      throw BrokenBarrierError(prefix + result.reason);
    case internal::Failure::kRemote: {
      const auto split = result.reason.find('\0');
      if (split == std::string::npos) throw RemoteError("unknown", result.reason);
      throw RemoteError(result.reason.substr(0, split), result.reason.substr(split + 1));
    }
    default:
      throw ProtocolError(prefix + result.reason);
  }
}

}  // namespace

ObjectRef ObjectRef::create(ObjectType type, std::vector<std::byte> payload) {
  const internal::ObjectResult result =
      internal::Runtime::instance().manager().object_create(type, std::move(payload));
  if (result.outcome != internal::Outcome::kValue) throw_failure(result, "Manager");
  return ObjectRef(result.value);
}

ObjectAnswer ObjectRef::call(ObjectOp op, std::vector<std::byte> args, const char* what,
                             std::optional<std::chrono::microseconds> timeout) const {
  if (id_ == 0) throw UsageError(std::string(what) + ": the handle refers to no shared object");
  internal::ObjectResult result =
      internal::Runtime::instance().manager().object_call(id_, op, std::move(args), timeout);
  ObjectAnswer answer;
  switch (result.outcome) {
    case internal::Outcome::kItem:
      answer.bytes = std::move(result.bytes);
      return answer;
    case internal::Outcome::kValue:
      answer.is_number = true;
      answer.number = result.value;
      return answer;
    case internal::Outcome::kTimeout:
      answer.timed_out = true;
      return answer;
    case internal::Outcome::kError:
      throw_failure(result, what);
    default:
      throw ProtocolError(std::string(what) + ": unexpected answer " +
                          std::to_string(static_cast<uint32_t>(result.outcome)));
  }
}

}  // namespace fiber::detail
