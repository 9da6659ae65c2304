// A worker's operations on a Manager's shared objects: requests to the master's manager service
// over the worker's link. Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "fiber/manager/manager_access.h"

namespace fiber::internal {

class MasterLink;

class ManagerStub final : public ManagerAccess {
 public:
  /// Sends through `link`, which must outlive the stub.
  explicit ManagerStub(MasterLink& link) : link_(link) {}

  ObjectResult object_create(detail::ObjectType type, std::vector<std::byte> payload) override;
  ObjectResult object_call(uint64_t object, detail::ObjectOp op, std::vector<std::byte> args,
                           std::optional<std::chrono::microseconds> timeout) override;

 private:
  MasterLink& link_;
};

}  // namespace fiber::internal
